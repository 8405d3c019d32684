#!/usr/bin/env bash
# Session 16 call 5, the final one on main: build everything, the whole ctest (-j4).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096
OUT_DEV=$OUT; OUT=/tmp/c5; mkdir -p $OUT; B=build-gpu
BUDGET_S=330 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step ctest 280 ctest --test-dir $B -j4 --output-on-failure --timeout 250
grep -E "tests passed|Total Test|\(Failed\)" $OUT/ctest.txt
echo "commit $C" > $OUT/commit.txt
step_summary
tar czf $OUT_DEV/c5.tgz -C /tmp c5
