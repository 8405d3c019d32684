// Hopper (sm_90a) tensor-core GEMM: wgmma.mma_async fed by TMA through an mbarrier pipeline,
// warp-specialized (one producer warpgroup, two consumer warpgroups), persistent. See README.md.
//
//   C = alpha * A * B + beta * C, all row-major:
//     A  M x K, element (m, k) at a[m * lda + k]          (K contiguous)
//     B  either given as Bt, N x K, element (n, k) at b[n * ldb + k] (K contiguous: "TN" in BLAS
//        terms; b_kn = false, the layout wgmma reads without transposition), or as B, K x N,
//        element (k, n) at b[k * ldb + n] (N contiguous; b_kn = true, read through the wgmma
//        descriptor's transpose bit)
//     C  M x N, element (m, n) at c[m * ldc + n]
//   A and B are HALF or BFLOAT16 (both the same), accumulation is fp32, C is the input type or
//   FLOAT. alpha / beta are fp32; beta == 0 never reads C (C may hold NaN / garbage).
//
// Internal entry point: the public GEMM dispatches here and falls back to the mma.sync path when
// gemm_wgmma_check() refuses a problem.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "jhdnn/jhdnn.h"

namespace jhdnn::gemm::hopper {

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;  // >= k, multiple of 8 (TMA: 16-byte row strides)
  const void* b = nullptr;
  int64_t ldb = 0;  // >= k (b_kn: >= n), multiple of 8
  bool b_kn = false;  // B is K x N row-major instead of N x K
  void* c = nullptr;
  int64_t ldc = 0;  // >= n
  jhdnnDataType_t ab_type = JHDNN_DATA_HALF;  // HALF or BFLOAT16
  jhdnnDataType_t c_type = JHDNN_DATA_HALF;   // ab_type or FLOAT
  float alpha = 1.0f, beta = 0.0f;
};

// Success when gemm_wgmma can run `args` on the current device; otherwise NOT_SUPPORTED_* / BAD_PARAM
// with the reason (wrong architecture, K == 0, lda / ldb not a multiple of 8, A / B not 16-byte
// aligned, unsupported type pair, dimension >= 2^31, ...). Does not touch the GPU beyond querying
// the current device's attributes.
core::Status gemm_wgmma_check(const GemmArgs& args);

// Checks, then enqueues the GEMM on `stream` (asynchronous; launch errors are returned).
// M == 0 or N == 0 is a successful no-op.
core::Status gemm_wgmma(const GemmArgs& args, cudaStream_t stream);

}  // namespace jhdnn::gemm::hopper
