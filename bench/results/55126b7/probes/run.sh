#!/usr/bin/env bash
# Session 22 call 5: late4 TIMING PROBES (out/s22/probe/*.cuh; exact only because every challenge weight is 1/16):
# p1 = no transpose (the FMAs read the weight rows as they are); p2 = p1 + a ring of 4 quads issued 3 ahead;
# p3 = p2 + the block's one weight in a register (no weight loads in the loop). base = the tree (55126b7).
# Each library beside its binary, LD_LIBRARY_PATH (RUNPATH yields to it); md5sums printed.
# Per variant: ncu of launches 40-41 (N = 16384 L = 120), then the A/B at L = 480 twice, in turn.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096
OUT_DEV=$OUT; OUT=/tmp/c5; mkdir -p $OUT; B=build-gpu; V=out/s22/probe
BUDGET_S=330 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
VS="base p1 p2 p3"
for v in $VS; do
  cp $V/$v.cuh src/sparse/late4_tile.cuh
  step build_$v 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j 16 --target spdnn_infer"
  mkdir -p /tmp/bin/$v && cp -P $B/src/libjhdnn.so* /tmp/bin/$v/ && cp $B/examples/spdnn_infer /tmp/bin/$v/
done
cp $V/base.cuh src/sparse/late4_tile.cuh
md5sum /tmp/bin/*/libjhdnn.so.0.1.0 | tee $OUT/md5.txt
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,dram__bytes.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
for v in $VS; do
  LD_LIBRARY_PATH=/tmp/bin/$v JHDNN_SPDNN_TILE=late4 step ncu_$v 30 ncu --clock-control none --metrics "$M" --csv -k regex:dnn_layer_cta_kernel \
    --launch-skip 40 --launch-count 2 /tmp/bin/$v/spdnn_infer --width 16384 --layers 120 --path graph --validate no --no-warmup
done
for rep in 1 2; do
  for v in $VS; do
    LD_LIBRARY_PATH=/tmp/bin/$v step ab_${v}_$rep 30 /tmp/bin/$v/spdnn_infer --width 16384 --layers 480 --path graph --validate no
  done
done
LD_LIBRARY_PATH=/tmp/bin/p3 step exact_p3 40 /tmp/bin/p3/spdnn_infer --width 16384 --layers 120 --path graph --validate yes
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "^ +[0-9]+ +[0-9]+ " $OUT/exact_p3.txt
for f in $OUT/ab_*.txt; do echo "$(basename $f .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' $f | awk '{print $2, $5}' | tr '\n' ' ')"; done
for v in $VS; do
  grep '^"' $OUT/ncu_$v.txt | grep -v '"ID"' | awk -F'","' -v v=$v '{id=$1; gsub(/"/,"",id); x=$NF; gsub(/"/,"",x); print v, id, $(NF-2), x}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
tar czf $OUT_DEV/c5.tgz -C /tmp c5
