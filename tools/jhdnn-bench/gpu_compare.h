// Element-wise comparison of two device tensors of the same type and layout, on the GPU (the
// outputs of the default suite are up to 51 M elements: too many to copy and convert per algorithm).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "jhdnn/jhdnn.h"

namespace jhdnn::bench {

struct GpuCompare {
  uint64_t n_bad = 0;        // |got - ref| > atol + rtol |ref|, or either is not finite
  uint64_t n_nonfinite = 0;  // got not finite (a NaN left by the poison: an output never written)
  uint64_t first_bad = UINT64_MAX;
  double max_abs_diff = 0;   // over elements where both are finite
  double max_abs_ref = 0;
  double sum_diff2 = 0, sum_ref2 = 0;  // for the norm-wise error
};

// Compares n elements (FLOAT, HALF, BFLOAT16 or DOUBLE) on stream and waits for the result.
// Throws std::runtime_error on a CUDA error or another data type.
GpuCompare gpu_compare(const void* got, const void* ref, int64_t n, jhdnnDataType_t dt, double atol, double rtol,
                       cudaStream_t stream);

}  // namespace jhdnn::bench
