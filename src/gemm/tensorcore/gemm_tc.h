// Tensor Core GEMM (fp16, bf16, TF32) on the generation-1 mma.sync kernel of the convolution: a GEMM
// is a 1x1 convolution over M "pixels" with K input and N output channels. Internal entry point;
// the public jhdnnGemm wires to it. See README.md in this folder.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "jhdnn/jhdnn.h"

namespace jhdnn::gemm::tensorcore {

// C = alpha * op(A) * op(B) + beta * C, all ROW-major, fp32 accumulation, C in the data type.
//   op(A) is M x K: A stored M x K (lda >= K) when !trans_a, K x M (lda >= M) when trans_a.
//   op(B) is K x N: B stored K x N (ldb >= N) when !trans_b, N x K (ldb >= K) when trans_b.
// dtype HALF, BFLOAT16, or FLOAT (computed on TF32 tensor cores). beta == 0 never reads C.
// The fast path (16-byte cp.async) needs K contiguous in both operands -- !trans_a and trans_b
// ("TN" in cuBLAS's column-major terms) -- with lda, ldb and the pointers 16-byte aligned; other
// layouts are computed correctly through the kernel's general (element-gather) loader, slower.
// Picks the generation: gemm_wgmma when it can take the arguments on this device (sm_90, "TN"),
// gemm_mma otherwise.
core::Status gemm(jhdnnDataType_t dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                  cudaStream_t stream);

// Generation 1 (sm_80+): mma.sync + ldmatrix + cp.async, through the convolution's kernel. Any
// transposes, as described above.
core::Status gemm_mma(jhdnnDataType_t dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                      cudaStream_t stream);

// Generation 2 (sm_90a): wgmma + TMA + mbarrier pipeline, warp-specialized, persistent
// (gemm_wgmma.cu). Only the "TN" layout: op(A) = A stored M x K, op(B) = B^T with B stored N x K
// (K contiguous in both); lda and ldb times the element size multiples of 16 bytes, A and B
// 16-byte aligned. NOT_SUPPORTED (with the reason) otherwise, ARCH_MISMATCH off sm_90.
core::Status gemm_wgmma(jhdnnDataType_t dtype, int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                        int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                        cudaStream_t stream);

// Why gemm_wgmma cannot take these ("TN") arguments; nullptr when it can (device aside).
const char* wgmma_unsupported(jhdnnDataType_t dtype, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
                              const void* B, int64_t ldb, const void* C, int64_t ldc);

}  // namespace jhdnn::gemm::tensorcore
