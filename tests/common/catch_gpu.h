// Catch2 glue for GPU tests: every GPU TEST_CASE starts with JHDNN_REQUIRE_GPU(), so on a machine
// without a usable GPU the case is reported as skipped, with the CUDA error that says why, instead
// of failing or silently passing. Where a GPU must be present (scripts/gpu-check.sh sets
// JHDNN_REQUIRE_GPU=1), a missing one fails the case instead, so a broken driver cannot turn the
// GPU run into a run of skips.
#pragma once

#include <cstdlib>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include "common/gpu_util.h"

#define JHDNN_REQUIRE_GPU()                                          \
  do {                                                               \
    std::string jhdnn_gpu_why_;                                      \
    if (!::jhdnn::test::gpu_available(&jhdnn_gpu_why_)) {           \
      if (std::getenv("JHDNN_REQUIRE_GPU") != nullptr)               \
        FAIL("JHDNN_REQUIRE_GPU is set but: " << jhdnn_gpu_why_);    \
      SKIP("no CUDA device: " << jhdnn_gpu_why_);                    \
    }                                                                \
  } while (0)
