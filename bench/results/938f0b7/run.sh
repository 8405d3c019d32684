#!/usr/bin/env bash
# Session 20 call 6: the whole ctest (-j4) at the final main ($C).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
B=build-gpu
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
(cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16) > $OUT/build.txt 2>&1 || { tail -30 $OUT/build.txt; exit 1; }
timeout 330 ctest --test-dir $B -j4 --output-on-failure --timeout 200 > $OUT/ctest.txt 2>&1
echo "ctest rc=$?"
grep -E "tests passed|Total Test|\(Failed\)|Not Run" $OUT/ctest.txt | head
echo "commit $C" > $OUT/commit.txt
