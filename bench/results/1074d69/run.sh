#!/usr/bin/env bash
# Session 18 call 5: trial-s18c (= main + wip-vals4w, which contains wip-vals4): build everything; the helper's
# scripts/spdnn-vals4w-gpu.sh with RACE=1 (vals4w against valsfan at N = 4096: tests, racecheck, exactness, A/B,
# ncu); then the whole ctest (-j4) with what is left.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c5; mkdir -p $OUT; B=build-gpu
BUDGET_S=570 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/trial && tar xzf out/s18/trial18c-src.tar.gz -C /tmp/trial && mkdir -p /tmp/trial/data && cp -r data/spdnn /tmp/trial/data/
cd /tmp/trial
step build_all 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step vals4w 280 env RACE=1 BUDGET_S=270 BUILD_DIR=$B bash scripts/spdnn-vals4w-gpu.sh $OUT/vals4w
left=$((570 - ($(date +%s) - step_t0)))
step ctest $((left - 10)) ctest --test-dir $B -j4 --output-on-failure --timeout 200
grep -E "tests passed|Total Test|\(Failed\)|Not Run" $OUT/ctest.txt | head
echo "commit $C" > $OUT/commit.txt
step_summary
tar czf $OUT_DEV/c5.tgz -C /tmp c5
