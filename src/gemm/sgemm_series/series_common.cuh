// Helpers shared by the series kernels (device side) and their launchers (host side).
#pragma once

#include <cstdint>

#include "core/cuda_check.h"
#include "gemm/epilogue.cuh"
#include "gemm/sgemm_series/series.h"

namespace jhdnn::gemm::series {

// Column-major element (row, col) of a matrix with leading dimension ld.
__host__ __device__ inline int64_t at(int64_t row, int64_t col, int64_t ld) { return row + col * ld; }

// Refuses with NOT_SUPPORTED_SHAPE unless `ok`; `why` names the step and the requirement.
inline Status require(bool ok, const char* step, const char* why) {
  if (ok) return Status::success();
  return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sgemm step %s: %s", step, why);
}

inline Status check_args(const Args& a, const char* step) {
  if (const char* why = check_basic(a)) return core::fail(JHDNN_STATUS_BAD_PARAM, "sgemm step %s: %s", step, why);
  return Status::success();
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
__device__ inline bool aligned16_device(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline LinearCombination epilogue(const Args& a) {
  LinearCombination e;
  e.alpha = a.alpha;
  e.beta = a.beta;
  return e;
}

}  // namespace jhdnn::gemm::series
