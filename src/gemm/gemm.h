// The library's fp32 GEMM (see README.md in this folder): the fastest kernel of the numbered
// series, generalized to every shape, transpose, order, alpha/beta and strided batch.
//
// Internally everything is column-major: a row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, i.e. with A and B (and m and n) swapped.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace jhdnn::gemm {

using core::Status;

// The library kernel's block tile (sgemm_kernel.cuh), for callers that shape work around it.
constexpr int kTileM = 128, kTileN = 128;

// One column-major GEMM, possibly batched over two nested levels (outer x inner); batch b is
// (b / batch_inner, b % batch_inner) and operand X of batch (o, i) starts at X + o*x_outer + i*x_inner.
// Two levels let the GEMM convolution run every (image, group) pair in one launch.
struct GemmDesc {
  bool trans_a = false, trans_b = false;  // op(A) = A^T, op(B) = B^T
  int64_t m = 0, n = 0, k = 0;            // C is m x n, the reduction is k long
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  int64_t batch_outer = 1, batch_inner = 1;
  int64_t a_outer = 0, a_inner = 0, b_outer = 0, b_inner = 0, c_outer = 0, c_inner = 0;
  float alpha = 1.f, beta = 0.f;
};

// Checks d (sizes, leading dimensions, 64-bit offsets) and enqueues it on stream. Never
// synchronizes. BAD_PARAM / NOT_SUPPORTED with a message for anything it cannot do.
Status sgemm(const GemmDesc& d, cudaStream_t stream);

// Loads every library GEMM kernel into the current context (see ConvSolver::load_kernels).
Status load_kernels();

}  // namespace jhdnn::gemm
