#!/usr/bin/env bash
# Session 16, the final call, the final one on main (JHDNN_SPDNN_TILE=auto the default): build; bench_sparse's SpDNN rows
# with the cuSPARSE pipeline; spdnn_infer over the widths (csv for bench/results/sparse.md); the whole ctest
# (-j4) with what is left of a 415 s guard.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
OUT_DEV=$OUT; OUT=/tmp/c3; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=415 source scripts/lib/guarded-step.sh
export BUDGET_S=415
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
NETS="1024:120,480,1920;4096:120,480,1920;16384:120"
step bench_spdnn 70 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn.json --benchmark_out_format=json
step spdnn_infer 100 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
step ctest 300 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test" $OUT/ctest.txt
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "^SpDNN" $OUT/bench_spdnn.txt | awk '{print $1, $2, $3}'
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/spdnn_infer.txt
tar czf $OUT_DEV/c3.tgz -C /tmp c3
