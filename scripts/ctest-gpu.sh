#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: build everything in BUILD_DIR (default build-gpu) and run the
# whole ctest (-j8, JHDNN_REQUIRE_GPU=1: a skipped GPU test fails), for a commit whose library changed when no other
# script's ctest step covers it.
#   JHDNN_COMMIT=<sha> bash scripts/ctest-gpu.sh $OUT/v   (carry data/spdnn's four files for the data tests)
# SANITIZE_LATE4="late4 late4crowd" (tiles) adds, after the ctest, compute-sanitizer racecheck and memcheck of the
# reuse-tile case's "late4:" cases under each tile named (for a change to late4's shared memory or flag stores).
# RACECHECK_CASES="SPEC|SPEC" adds racecheck of those test_sparse test cases, a step each (e.g. [resident] cases).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" all
ctest_step "$B"
# shellcheck disable=SC2086  # a list of tiles
late4_sanitize_steps ${SANITIZE_LATE4:-}
[ -n "${RACECHECK_CASES:-}" ] && racecheck_steps "$RACECHECK_CASES"
step_summary
