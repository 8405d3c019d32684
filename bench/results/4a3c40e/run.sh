#!/usr/bin/env bash
# Session 15 call 1: main 4a3c40e itself: the whole ctest (-j4) and memcheck of the review's new GPU assertions.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
O=/tmp/c1; mkdir -p $O; t0=$(date +%s)
JHDNN_COMMIT=4a3c40e BENCH=0 MEMCHECK=0 CTEST_ARGS=-j4 CTEST_TIMEOUT=420 bash scripts/gpu-check.sh $O/check 2>&1 | tail -30
echo "== gpu-check done at $(( $(date +%s) - t0 )) s"
timeout 100 compute-sanitizer --tool memcheck build-gpu/tests/test_sparse "sparse bounds: counts past*" > $O/memcheck-bounds.txt 2>&1
echo "memcheck exit $?"; tail -5 $O/memcheck-bounds.txt
grep -E "tests passed|Total Test time" $O/check/ctest.log
grep -E "spdnn_tile_(list|cta)" $O/check/ctest.log
echo "== all done at $(( $(date +%s) - t0 )) s"
tar czf $OUT/c1.tgz -C /tmp c1
