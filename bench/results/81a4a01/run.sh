#!/usr/bin/env bash
# Session 16 call 4: trial-s16c (81a4a01 = main 9b65abe + wip-deep-lds) against main 9b65abe (base), both from their
# git archives: scripts/spdnn-deep-ab-gpu.sh (TESTS=0: the whole ctest below covers them), then the trial's whole
# ctest (-j4) and racecheck of the late-layer reuse-tile case under cta2 (the barrier placement changed).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
T0=$(date +%s)
T=/tmp/trial; BASE=/tmp/base; mkdir -p $T $BASE /tmp/c4
tar xzf out/s16/trial16c-src.tar.gz -C $T && tar xzf out/s16/base-src.tar.gz -C $BASE
mkdir -p $T/data $BASE/data && cp -r data/spdnn $T/data/ && cp -r data/spdnn $BASE/data/
cd $T || exit 1
BUDGET_S=200 TESTS=0 bash scripts/spdnn-deep-ab-gpu.sh /tmp/c4/ab $BASE 2>&1 | tail -45
echo "== full build ($(( $(date +%s) - T0 )) s)"
cmake --build build-gpu -j 16 > /tmp/c4/build-full.log 2>&1 || { tail -20 /tmp/c4/build-full.log; echo BUILD FAILED; }
scripts/fetch-spdnn-data.sh > /tmp/c4/data.txt 2>&1
left=$(( 560 - ($(date +%s) - T0) ))
echo "== ctest ($(( $(date +%s) - T0 )) s; ${left} s left)"
timeout $(( left > 30 ? left - 30 : 1 )) ctest --test-dir build-gpu -j4 --output-on-failure --timeout 240 > /tmp/c4/ctest.txt 2>&1
echo "ctest exit $?"; grep -E "tests passed|Total Test|\(Failed\)|Timeout|\*\*\*" /tmp/c4/ctest.txt | head -20
left=$(( 575 - ($(date +%s) - T0) ))
if [ $left -gt 25 ]; then
  JHDNN_SPDNN_TILE=cta2 JHDNN_TEST_SPDNN_TILE=cta2 JHDNN_TEST_REUSE_CASE="late layer" timeout $((left - 5)) \
    compute-sanitizer --tool racecheck --error-exitcode 99 build-gpu/tests/test_sparse \
    "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain" > /tmp/c4/racecheck_late.txt 2>&1
  echo "racecheck exit $?"; grep -E "RACECHECK SUMMARY|All tests|FAILED" /tmp/c4/racecheck_late.txt
fi
echo "total $(( $(date +%s) - T0 )) s"
tar czf $OUT/c4.tgz -C /tmp c4
