#!/usr/bin/env bash
# Session 22 call 4: main at $C (late4 = b53ed3d's kernels): build everything; the whole ctest (-j4);
# spdnn_infer N = 16384 L = 120,480 (exact, csv); bench_sparse N = 16384 L = 120 / 480 / 1920 with the cuSPARSE
# pipeline in the same process.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c4; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=560 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build_all 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step spdnn_infer 90 $SI --width 16384 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
NETS="16384:120,480,1920"
step bench_spdnn_16384 130 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn_16384.json --benchmark_out_format=json
left=$((560 - ($(date +%s) - step_t0)))
step ctest $((left - 8)) ctest --test-dir $B -j4 --output-on-failure --timeout 200
grep -E "tests passed|Total Test|\(Failed\)|Not Run" $OUT/ctest.txt | head
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/spdnn_infer.txt
grep -E "^SpDNN" $OUT/bench_spdnn_16384.txt | awk '{print $1, $2, $3}'
tar czf $OUT_DEV/c4.tgz -C /tmp c4
