#!/usr/bin/env bash
# Session 21 call 5: main at $C: bench_sparse N = 65536 L = 1920 (graph path, auto = cta2w there) with the cuSPARSE
# pipeline in the same process (the table's missing row), then N = 65536 L = 120 / 480 again if the time allows.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c5; mkdir -p $OUT; B=build-gpu; BS=$B/bench/bench_sparse
BUDGET_S=480 source scripts/lib/guarded-step.sh
nvidia-smi --query-gpu=name,memory.total --format=csv > $OUT/gpu.txt 2>&1
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target bench_sparse"
NETS="65536:1920"
step bench_spdnn_65536_1920 400 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn_65536_1920.json --benchmark_out_format=json
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "^SpDNN|rror|memory" $OUT/bench_spdnn_65536_1920.txt | cut -c1-220
tar czf $OUT_DEV/c5.tgz -C /tmp c5
