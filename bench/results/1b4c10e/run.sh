#!/usr/bin/env bash
# Session 22 call 3: the A/B of call 2 done right. spdnn_infer links the SHARED libjhdnn (RUNPATH build-gpu/src), so
# call 2's copied binaries all ran the last-built library (v7ca). Here each variant's library is copied beside its
# binary and run with LD_LIBRARY_PATH (RUNPATH yields to it); md5sums printed. Variants (out/s22/variants/*.cuh):
# base (b53ed3d), v1 (row copies in whole sectors), v1ca (v1 + features by cp.async.ca), v7 (v1 + loads before copies).
# Per variant: ncu of launches 40-41 (N = 16384 L = 120), then the A/B at L = 480 twice, in turn.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096
OUT_DEV=$OUT; OUT=/tmp/c3; mkdir -p $OUT; B=build-gpu; V=out/s22/variants
BUDGET_S=400 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
VS="base v1 v1ca v7 v1pf"
for v in $VS; do
  cp $V/$v.cuh src/sparse/late4_tile.cuh
  step build_$v 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j 16 --target spdnn_infer"
  mkdir -p /tmp/bin/$v && cp -P $B/src/libjhdnn.so* /tmp/bin/$v/ && cp $B/examples/spdnn_infer /tmp/bin/$v/
done
git checkout -- src/sparse/late4_tile.cuh 2>/dev/null || cp $V/v7.cuh src/sparse/late4_tile.cuh
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
echo "commit $C" > $OUT/commit.txt
step_summary
for f in $OUT/ab_*.txt; do echo "$(basename $f .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' $f | awk '{print $2, $5}' | tr '\n' ' ')"; done
for v in $VS; do
  grep '^"' $OUT/ncu_$v.txt | grep -v '"ID"' | awk -F'","' -v v=$v '{id=$1; gsub(/"/,"",id); x=$NF; gsub(/"/,"",x); print v, id, $(NF-2), x}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
tar czf $OUT_DEV/c3.tgz -C /tmp c3
