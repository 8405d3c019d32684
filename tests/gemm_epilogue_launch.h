// See gemm_epilogue_launch.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace jhdnn::test {

// C = relu(alpha * A B + beta * C + bias[row or col]) + residual, column-major, A m x k, B k x n.
// async: the cp.async kernel (sgemm_async.cuh, 128 x 128 tile, no split; needs lda % 4 == 0 and
// A 16-byte aligned), else the general step-08 kernel (sgemm_kernel.cuh).
core::Status gemm_bias_relu_residual(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                     int ldb, float beta, float* c, int ldc, const float* bias, bool bias_per_row,
                                     const float* residual, int ld_residual, cudaStream_t stream, bool async = false);

}  // namespace jhdnn::test
