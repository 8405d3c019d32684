#!/usr/bin/env bash
# Session 18 call 1: trial-s18 (= main 952f66f + wip-vals-count 1db6620): build everything, the whole ctest (-j4;
# it covers main's bc39a6a / 952f66f GPU pack cases and gains resident_kernel_valsfan), then
# scripts/spdnn-valsfan-gpu.sh (valsfan vs vals at N = 4096: tests, exactness, A/B x2, traces, ncu).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
ROOT=$PWD; OUT_DEV=$OUT; OUT=/tmp/c1; mkdir -p $OUT; B=build-gpu
BUDGET_S=565 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/trial && tar xzf out/s18/trial18-src.tar.gz -C /tmp/trial && mkdir -p /tmp/trial/data && cp -r data/spdnn /tmp/trial/data/
cd /tmp/trial
step build_trial 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step ctest 290 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test|\(Failed\)|Not Run|Skipped" $OUT/ctest.txt | head -20
left=$((565 - ($(date +%s) - step_t0)))
step valsfan $((left - 15)) env BUDGET_S=$((left - 25)) BUILD_DIR=$B bash scripts/spdnn-valsfan-gpu.sh $OUT/valsfan
echo "commit $C" > $OUT/commit.txt
step_summary
tar czf $OUT_DEV/c1.tgz -C /tmp c1
