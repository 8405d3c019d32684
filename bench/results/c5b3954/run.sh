#!/usr/bin/env bash
# Session 18 call 2, the final one: trial-s18b (= main + wip-vals4, the helper's N = 4096 cut behind its switch):
# build everything; the whole ctest (-j4); the helper's GPU script (its kernel against valsfan: tests, exactness,
# A/B, ncu); bench_sparse's N = 1024 / 4096 rows with the cuSPARSE pipeline in the same process (valsfan the
# default at N = 4096 now); spdnn_infer csv at N = 4096 (exact) for sparse.md.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c2; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=570 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/trial && tar xzf out/s18/trial18b-src.tar.gz -C /tmp/trial && mkdir -p /tmp/trial/data && cp -r data/spdnn /tmp/trial/data/
cd /tmp/trial
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step ctest 280 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test|\(Failed\)" $OUT/ctest.txt
NETS="1024:120,480,1920;4096:120,480,1920"
step bench_spdnn 70 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn.json --benchmark_out_format=json
step spdnn_infer 40 $SI --width 4096 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
left=$((570 - ($(date +%s) - step_t0)))
GS=${GS:-scripts/spdnn-vals4-gpu.sh}
[ -f "$GS" ] && step helper $((left - 10)) env BUDGET_S=$((left - 20)) BUILD_DIR=$B bash $GS $OUT/helper
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "^SpDNN" $OUT/bench_spdnn.txt | awk '{print $1, $2, $3}'
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/spdnn_infer.txt
tar czf $OUT_DEV/c2.tgz -C /tmp c2
