#!/usr/bin/env bash
# Session 17 call 4, the final one on main (auto = cta2 <= 4096 rows, cta2w <= 16384, block above; SpMM deep4):
# build; the whole ctest (-j4); spdnn_infer over the widths (csv for bench/results/sparse.md); bench_sparse's
# N = 16384 rows with the cuSPARSE pipeline (the graph path now cta2w); cta2w against cta2 at N = 4096 (graph path)
# and against block at N = 65536 (neither measured before).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c4; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=565 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step ctest 280 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test|\(Failed\)" $OUT/ctest.txt
step spdnn_infer 90 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
# memcheck of the cta2w cases the review added (auto's rows above 4096; the 128-image switch)
step memcheck_cta2w 60 env JHDNN_SPDNN_TILE=cta2w JHDNN_TEST_SPDNN_TILE=cta2w JHDNN_TEST_REUSE_CASE="auto rows" \
  compute-sanitizer --tool memcheck --error-exitcode 99 $B/tests/test_sparse "fused and multi-layer paths*"
NETS="16384:120,480,1920"
step bench_spdnn_16384 100 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn_16384.json --benchmark_out_format=json
for t in cta2w cta2; do step g4096_$t 25 env JHDNN_SPDNN_TILE=$t $SI --width 4096 --layers 120,480 --path graph --validate no; done
for t in cta2w block; do step g65536_$t 40 env JHDNN_SPDNN_TILE=$t $SI --width 65536 --layers 120 --path graph --validate no; done
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/spdnn_infer.txt
grep -E "^SpDNN" $OUT/bench_spdnn_16384.txt | awk '{print $1, $2, $3}'
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/g4096_*.txt $OUT/g65536_*.txt
tar czf $OUT_DEV/c4.tgz -C /tmp c4
