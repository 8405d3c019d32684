// Step 05, 2-D register blocking: each thread computes an 8 x 8 block of C.
//
// Block tile 128 x 128, K tile 8, 256 threads. Per k a thread loads 8 A and 8 B values into
// registers and does their 64-term outer product: 16 shared loads per 64 FMAs (step 04: 9 per 8).
// This is the step that moves the kernel from memory-bound to compute-bound. Remaining waste:
// scalar global and shared accesses, and the 8-float stride between threads' A fragments makes a
// warp's shared reads collide in 4 banks. Needs m, n multiples of 128 and k of 8.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256

__global__ void __launch_bounds__(kThreads) blocktile_2d_kernel(Args a, LinearCombination epi) {
  __shared__ float as[kBK][kBM];  // [k][m]: A is m-contiguous, so this copy is straight
  __shared__ float bs[kBK][kBN];  // [k][n]: B is k-contiguous, so this copy transposes
  const int tid = threadIdx.x;
  const int tm = tid % (kBM / kTM), tn = tid / (kBM / kTM);  // 16 x 16 threads
  const int64_t m0 = int64_t(blockIdx.x) * kBM, n0 = int64_t(blockIdx.y) * kBN;
  float acc[kTM][kTN] = {};
  float fa[kTM], fb[kTN];
  for (int k0 = 0; k0 < a.k; k0 += kBK) {
#pragma unroll
    for (int l = 0; l < kBM * kBK / kThreads; ++l) {  // 4 elements per thread per operand
      const int e = tid + l * kThreads;
      as[e / kBM][e % kBM] = a.a[at(m0 + e % kBM, k0 + e / kBM, a.lda)];
      bs[e % kBK][e / kBK] = a.b[at(k0 + e % kBK, n0 + e / kBK, a.ldb)];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
#pragma unroll
      for (int i = 0; i < kTM; ++i) fa[i] = as[kk][tm * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) fb[j] = bs[kk][tn * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += fa[i] * fb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int j = 0; j < kTN; ++j) {
    const int64_t col = n0 + tn * kTN + j;
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
      const int64_t row = m0 + tm * kTM + i;
      float* c = a.c + at(row, col, a.ldc);
      *c = epi(row, col, acc[i][j], epi.reads_c() ? *c : 0.f);
    }
  }
}

}  // namespace

Status run_05_blocktile_2d(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "05"));
  JHDNN_TRY(require(a.m % kBM == 0 && a.n % kBN == 0 && a.k % kBK == 0, "05", "m, n multiples of 128 and k of 8"));
  JHDNN_TRY(require(a.n / kBN <= 65535, "05", "n <= 65535 * 128 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  blocktile_2d_kernel<<<dim3(a.m / kBM, a.n / kBN), kThreads, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
