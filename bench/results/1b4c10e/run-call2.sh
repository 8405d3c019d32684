#!/usr/bin/env bash
# Session 22 call 2: late4 variants of src/sparse/late4_tile.cuh (out/s22/variants/*.cuh), tree = v7:
#   base  = b53ed3d; v1 = row copies in whole 32-byte sectors; v1ca = v1 + features by cp.async.ca (L1) instead of .cg;
#   v7 = v1 + quad q's feature loads before quad q + 2's copies; v7ca = v7 + .ca.
# 1. build test_sparse + spdnn_infer at the tree (v7); ctest spdnn_tile_late4; racecheck late4 cases (v7);
# 2. per variant: rebuild spdnn_infer with its late4_tile.cuh, keep the binary;
# 3. per variant ncu of launch 40 (N = 16384 L = 120: late layer); v1ca and base also SourceCounters;
# 4. A/B N = 16384 L = 480 graph, the 5 variants in turn, twice; v7 exact at L = 120,480 (validate yes).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096
OUT_DEV=$OUT; OUT=/tmp/c2; mkdir -p $OUT /tmp/bin; B=build-gpu; T=$B/tests; V=out/s22/variants
BUDGET_S=570 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
cmp -s $V/v7.cuh src/sparse/late4_tile.cuh || { echo "tree is not v7"; exit 1; }
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse spdnn_infer"
step ctest_late4_v7 80 ctest --test-dir $B -R '^spdnn_tile_late4$' --output-on-failure
JHDNN_SPDNN_TILE=late4 JHDNN_TEST_SPDNN_TILE=late4 JHDNN_TEST_REUSE_CASE="late4:" step racecheck_v7 100 \
  compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*"
cp $B/examples/spdnn_infer /tmp/bin/si_v7
for v in base v1 v1ca v7ca; do
  cp $V/$v.cuh src/sparse/late4_tile.cuh
  step build_$v 60 cmake --build $B -j 16 --target spdnn_infer && cp $B/examples/spdnn_infer /tmp/bin/si_$v
done
cp $V/v7.cuh src/sparse/late4_tile.cuh
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,dram__bytes.sum,l1tex__t_sector_hit_rate.pct,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
for v in base v1 v1ca v7 v7ca; do
  JHDNN_SPDNN_TILE=late4 step ncu_$v 30 ncu --clock-control none --metrics "$M" --csv -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 2 \
    /tmp/bin/si_$v --width 16384 --layers 120 --path graph --validate no --no-warmup
done
for v in v1ca v7; do
  JHDNN_SPDNN_TILE=late4 step ncusrc_$v 40 ncu --clock-control none --section SourceCounters --page source --csv --print-source sass \
    -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 1 /tmp/bin/si_$v --width 16384 --layers 120 --path graph --validate no --no-warmup
  [ -f $OUT/ncusrc_$v.txt ] && gzip -f $OUT/ncusrc_$v.txt
done
for rep in 1 2; do
  for v in base v1 v1ca v7 v7ca; do
    step ab_${v}_$rep 30 /tmp/bin/si_$v --width 16384 --layers 480 --path graph --validate no
  done
done
step exact_v7 90 /tmp/bin/si_v7 --width 16384 --layers 120,480 --path graph --validate yes
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "tests passed|Failed" $OUT/ctest_late4_v7.txt | tail -2
grep -E "RACECHECK SUMMARY|passed" $OUT/racecheck_v7.txt | tail -2
for f in $OUT/ab_*.txt $OUT/exact_v7.txt; do echo "$(basename $f .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' $f | awk '{print $2, $5, $10, $11}' | tr '\n' ' ')"; done
for v in base v1 v1ca v7 v7ca; do
  grep '^"' $OUT/ncu_$v.txt | grep -v '"ID"' | awk -F'","' -v v=$v '{id=$1; gsub(/"/,"",id); x=$NF; gsub(/"/,"",x); print v, id, $(NF-2), x}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
tar czf $OUT_DEV/c2.tgz -C /tmp c2
