#!/usr/bin/env bash
# Session 17 call 1: trial-s17 (= main f693993 + wip-spmm-powerlaw-review 45bb6d7 + wip-resident-two-row-block 8024411):
# build everything, the whole ctest (-j4); the SpMM power-law bench + ncu (deep / deep4 vs classic vs cuSPARSE);
# an A/B of the resident path (main's bench_sparse vs the trial's, alternating, twice) for the two-row block.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
ROOT=$PWD; OUT_DEV=$OUT; OUT=/tmp/c1; mkdir -p $OUT; B=build-gpu
BUDGET_S=560 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/trial && tar xzf out/s17/trial17-src.tar.gz -C /tmp/trial && mkdir -p /tmp/trial/data && cp -r data/spdnn /tmp/trial/data/
cd /tmp/trial
step build_trial 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
# main's bench_sparse, built while the ctest runs (the ctest's GPU cases are serialised; the CPU is mostly idle)
( cd $ROOT && cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j 8 --target bench_sparse ) > $OUT/build_main.txt 2>&1 &
BM=$!
step ctest 290 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test|\(Failed\)|Not Run|Skipped" $OUT/ctest.txt | head -20
wait $BM; echo "main bench_sparse build: $?"; tail -2 $OUT/build_main.txt
# SpMM power law (tests already in the ctest: spmm_pairs_deep / _deep4 / _env_misspelt)
left=$((560 - ($(date +%s) - step_t0)))
step spmm 200 env TESTS=0 BUDGET_S=$((left > 200 ? 200 : left - 90)) BUILD_DIR=$B bash scripts/spmm-powerlaw-gpu.sh $OUT/spmm
# resident A/B: main (M) vs trial (T), alternating
NETS="1024:120,480;4096:120,480"
for r in 1 2; do
  step ab_main_$r 40 $ROOT/$B/bench/bench_sparse --spdnn "$NETS" --benchmark_filter='SpDNN/resident/'
  step ab_trial_$r 40 $B/bench/bench_sparse --spdnn "$NETS" --benchmark_filter='SpDNN/resident/'
done
echo "commit $C" > $OUT/commit.txt
step_summary
for f in $OUT/ab_*.txt; do echo "== $f"; grep -E "^SpDNN" $f | awk '{print $1, $2, $3}'; done
tar czf $OUT_DEV/c1.tgz -C /tmp c1
