#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: build everything in BUILD_DIR (default build-gpu) and run the
# whole ctest (-j8, JHDNN_REQUIRE_GPU=1: a skipped GPU test fails), for a commit whose library changed when no other
# script's ctest step covers it.
#   JHDNN_COMMIT=<sha> bash scripts/ctest-gpu.sh $OUT/v   (carry data/spdnn's four files for the data tests)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=560 source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" all
ctest_step "$B"
step_summary
