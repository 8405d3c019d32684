#!/usr/bin/env bash
# Session 20 call 3: main at $C (call 2's list-pack stride bug fixed): build everything; scripts/spdnn-vals4w-gpu.sh
# (tests, exact, racecheck, valsfan / vals4w A/B, ncu); bench_sparse N = 4096 with the cuSPARSE pipeline in the
# same process; spdnn_infer csv (exact); the whole ctest (-j4).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c3; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=575 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
step build_all 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step vals4w 150 env BUDGET_S=140 BUILD_DIR=$B bash scripts/spdnn-vals4w-gpu.sh $OUT/vals4w
NETS="4096:120,480,1920"
step bench_spdnn 60 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn.json --benchmark_out_format=json
step spdnn_infer 40 $SI --width 4096 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
step memcheck 70 env JHDNN_TEST_VALS_QUICK=vals4w compute-sanitizer --tool memcheck --leak-check full \
  $B/tests/test_sparse "resident vals: N = 4096 with S = 4 bitwise the fma chain*" "resident packed copy: the device pack is the host layout*" "resident vals packed copy: the device pack is the host layout*"
grep -E "ERROR SUMMARY|LEAK SUMMARY|test cases|assertions" $OUT/memcheck.txt | tail -3
left=$((575 - ($(date +%s) - step_t0)))
step ctest $((left - 8)) ctest --test-dir $B -j4 --output-on-failure --timeout 200
grep -E "tests passed|Total Test|\(Failed\)|Not Run" $OUT/ctest.txt | head
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "^SpDNN" $OUT/bench_spdnn.txt | awk '{print $1, $2, $3}'
tar czf $OUT_DEV/c3.tgz -C /tmp c3
