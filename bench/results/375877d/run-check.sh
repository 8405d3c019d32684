#!/usr/bin/env bash
# Session 11 call A on main 375877d: build, full ctest + public-nets verify (background), memcheck/racecheck on depthwise corners.
export PATH=$PATH:/usr/local/cuda/bin
JHDNN_COMMIT=375877d BENCH=1 COMPARE_ARGS="--suite=none" COMPARE_TIMEOUT=5 BENCH_CONV=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=240 VERIFY_TIMEOUT=230 \
MEMCHECK_BINS=test_conv_depthwise MEMCHECK_ARGS='[corners]' MEMCHECK_TIMEOUT=100 \
RACECHECK_BINS=test_conv_depthwise RACECHECK_ARGS='[corners]' \
timeout 570 scripts/gpu-check.sh /tmp/checkA
grep -E "Failed|\*\*\*|tests passed" /tmp/checkA/ctest.log | head -20
head -12 /tmp/checkA/summary.md
tar czf $OUT/checkA.tgz -C /tmp checkA
