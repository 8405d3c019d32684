#!/usr/bin/env bash
# Session 11 call 1 on trial-next: build, full ctest (+ public-nets verify in background), memcheck/racecheck on new kernels.
export PATH=$PATH:/usr/local/cuda/bin
C=$(git rev-parse --short HEAD 2>/dev/null || echo 1028ce2)
JHDNN_COMMIT=$C BENCH=1 COMPARE_ARGS="--suite=none" COMPARE_TIMEOUT=5 BENCH_CONV=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=230 VERIFY_TIMEOUT=220 \
MEMCHECK_BINS=test_conv_tensorcore MEMCHECK_ARGS='[tma_store],[smallc]' MEMCHECK_TIMEOUT=100 \
RACECHECK_BINS=test_conv_tensorcore RACECHECK_ARGS='[tma_store]' \
timeout 580 scripts/gpu-check.sh $OUT/check
cat $OUT/check/summary.md 2>/dev/null | head -40
grep -E "Failed|\*\*\*|tests passed" $OUT/check/ctest.log | head -20
