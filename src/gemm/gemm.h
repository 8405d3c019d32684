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

// ---- Kernel selection (tests and benchmarks; sgemm() picks by itself).
//
// sgemm() runs the cp.async kernel (sgemm_async.cuh, series step 10) when k > 0 and either every
// operand that is contiguous along m / n (A not transposed, B transposed) has ld % 4 == 0, a
// 16-byte aligned start and batch strides % 4 == 0 (16-byte copies), or neither operand is
// transposed (then an unaligned A is copied 4 bytes at a time); otherwise -- B transposed and not
// so aligned, or k == 0 -- the general step-08 kernel (sgemm_kernel.cuh). For few output tiles
// and a long k it splits k over a thread-block cluster.
enum class SgemmPath {
  kAuto,      // what sgemm() does
  kFallback,  // step 08's general kernel (any alignment); never splits k
  kAsync,     // the cp.async kernel; NOT_SUPPORTED_SHAPE when the operands do not allow it
};

// What one call launched.
struct SgemmRun {
  SgemmPath path = SgemmPath::kAuto;  // kFallback or kAsync once a kernel ran
  int tile_m = 0, tile_n = 0;         // block tile
  int split = 0;                      // CTAs per output tile along k (1: no split-K)
  bool a_4byte = false;               // cp.async kernel copying an m-contiguous A 4 bytes at a time
};

// sgemm() with the kernel forced. split (kAsync / kAuto only): 0 lets the library choose;
// 1 forbids split-K; 2, 4 or 8 forces that many K slices (fewer when k is short).
Status sgemm_path(const GemmDesc& d, SgemmPath path, int split, cudaStream_t stream);

// The calling thread's last sgemm() / sgemm_path() launch (path kAuto: none since the thread
// started, or the last call launched nothing: an empty shape or an error).
SgemmRun last_sgemm_run();

}  // namespace jhdnn::gemm
