// Catch2 glue for GPU tests: every GPU TEST_CASE starts with JHDNN_REQUIRE_GPU(), so on a machine
// without a usable GPU the case is reported as skipped, with the CUDA error that says why, instead
// of failing or silently passing.
#pragma once

#include <string>

#include <catch2/catch_test_macros.hpp>

#include "common/gpu_util.h"

#define JHDNN_REQUIRE_GPU()                                      \
  do {                                                           \
    std::string jhdnn_gpu_why_;                                  \
    if (!::jhdnn::test::gpu_available(&jhdnn_gpu_why_)) {       \
      SKIP("no CUDA device: " << jhdnn_gpu_why_);                \
    }                                                            \
  } while (0)
