// Tensor Core GEMM (fp16, bf16, TF32): three kernel generations behind one selection function.
// Internal entry points; the public jhdnnGemm / jhdnnGemmEx (src/api/api_gemm.cpp) wire to gemm_ex.
// See README.md in this folder.
#pragma once

#include <cstdint>
#include <string>

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
// Picks the kernel with gemm_ex's rules (C in the data type), under the JHDNN_TC_GEMM ceiling.
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

// ---------------------------------------------------------------- selection

// The kernels, fastest first. A "ceiling" names the first one the selection may try: kHopper tries
// hopper, then wgmma, then mma; kWgmma skips hopper; kMma runs only gemm_mma. kAuto == kHopper.
enum class TcKernel { kAuto = 0, kHopper, kWgmma, kMma };
const char* tc_kernel_name(TcKernel k);  // "auto", "hopper", "wgmma", "mma"

// The ceiling in force: the environment variable JHDNN_TC_GEMM (auto | hopper | wgmma | mma, any
// case; unset or empty = auto), read once by core::config, so a broken kernel can be bypassed
// without a rebuild; config::set_tc_gemm_ceiling changes it at run time (tests, benchmarks timing
// each kernel through the public API). BAD_PARAM naming the value when the environment's is unknown.
core::Status tc_kernel_ceiling(TcKernel* kernel);

// C = alpha * op(A) * op(B) + beta * C, row-major, as gemm() above, with
//   ab_type  HALF, BFLOAT16 or FLOAT (TF32 tensor cores) for A and B,
//   c_type   ab_type, or FLOAT for HALF / BFLOAT16 inputs (then only the 128x256 kernel applies:
//            NOT_SUPPORTED with its reason where it cannot run),
//   ceiling  the first kernel to try (see TcKernel); `used` (optional) receives the kernel that ran.
// The order, for the arguments each kernel takes (on sm_90):
//   hopper  gemm_hopper: op(A) K-contiguous (!trans_a); B either way for 16-bit types, N x K
//           (trans_b) for TF32; lda, ldb multiples of 16 bytes; A, B 16-byte aligned.
//   wgmma   gemm_wgmma: !trans_a && trans_b, same alignment, c_type == ab_type.
//   mma     gemm_mma: everything else (any transposes, any alignment), c_type == ab_type, sm_80+.
// M, N, K must be positive (the public API handles empty problems and K == 0 itself).
core::Status gemm_ex(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_a, bool trans_b, int64_t M, int64_t N,
                     int64_t K, float alpha, const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C,
                     int64_t ldc, TcKernel ceiling, cudaStream_t stream, TcKernel* used = nullptr);

// Generation 3 (sm_90a): the 128x256-tile wgmma kernel of src/gemm/hopper (2 consumer warpgroups
// of m64n256, 4 stages), through the same row-major arguments: op(A) = A stored M x K (no
// transpose), op(B) = B stored N x K (trans_b) or K x N (!trans_b, 16-bit types only).
core::Status gemm_hopper(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_b, int64_t M, int64_t N,
                         int64_t K, float alpha, const void* A, int64_t lda, const void* B, int64_t ldb, float beta,
                         void* C, int64_t ldc, cudaStream_t stream);

// Why gemm_hopper cannot take these arguments on the current device; empty when it can.
std::string hopper_unsupported(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_b, int64_t M, int64_t N,
                               int64_t K, const void* A, int64_t lda, const void* B, int64_t ldb, const void* C,
                               int64_t ldc);

// C = beta * C for a row-major M x N C of dtype (HALF, BFLOAT16, FLOAT) with leading dimension
// ldc: the K == 0 GEMM. beta == 0 writes zeros without reading C (NaN in C does not survive).
core::Status scale_c(jhdnnDataType_t dtype, int64_t M, int64_t N, float beta, void* C, int64_t ldc,
                     cudaStream_t stream);

}  // namespace jhdnn::gemm::tensorcore
