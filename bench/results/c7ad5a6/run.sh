#!/usr/bin/env bash
# Session 18 call 4 (main): compute-sanitizer of valsfan, the default at N = 4096 since d95bb4d: memcheck and racecheck
# of the resident vals GPU cases with JHDNN_TEST_VALS_QUICK=1 (duo's default, i.e. valsfan where vals ran; slices 0, 1, 3).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c4; mkdir -p $OUT; B=build-gpu; T=$B/tests
BUDGET_S=400 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse"
JHDNN_TEST_VALS_QUICK=1 step memcheck_valsfan 120 compute-sanitizer --tool memcheck --error-exitcode 99 \
  $T/test_sparse "resident vals*" "~[cpu]"
JHDNN_TEST_VALS_QUICK=1 step racecheck_valsfan 150 compute-sanitizer --tool racecheck --racecheck-report hazard --error-exitcode 99 \
  $T/test_sparse "resident vals: N = 4096 with S = 4 bitwise*"
echo "commit $C" > $OUT/commit.txt
step_summary
for f in $OUT/memcheck_valsfan.txt $OUT/racecheck_valsfan.txt; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|test cases|assertions|All tests" $f | tail -4; done
tar czf $OUT_DEV/c4.tgz -C /tmp c4
