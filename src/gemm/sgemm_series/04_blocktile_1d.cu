// Step 04, 1-D register blocking: each thread computes 8 consecutive rows of one column of C.
//
// Block tile 64 x 64, K tile 8, 512 threads. Per k, a thread loads one B value into a register
// and reuses it for 8 FMAs against 8 A values: 9 shared loads per 8 FMAs instead of 2 per 1.
// The accumulators live in registers. Needs m, n multiples of 64 and k of 8.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
constexpr int kThreads = kBM * kBN / kTM;  // 512

__global__ void __launch_bounds__(kThreads) blocktile_1d_kernel(Args a, LinearCombination epi) {
  __shared__ float as[kBK][kBM];  // [k][m]
  __shared__ float bs[kBN][kBK + 1];  // [n][k]; +1 so a warp's reads of one k hit distinct banks
  const int tid = threadIdx.x;
  const int tm = tid % (kBM / kTM), tn = tid / (kBM / kTM);  // 8 x 64 threads
  const int64_t m0 = int64_t(blockIdx.x) * kBM, n0 = int64_t(blockIdx.y) * kBN;
  float acc[kTM] = {};
  for (int k0 = 0; k0 < a.k; k0 += kBK) {
    as[tid / kBM][tid % kBM] = a.a[at(m0 + tid % kBM, k0 + tid / kBM, a.lda)];  // 64 m x 8 k
    bs[tid / kBK][tid % kBK] = a.b[at(k0 + tid % kBK, n0 + tid / kBK, a.ldb)];  // 8 k x 64 n
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      const float bv = bs[tn][kk];  // one load, 8 uses
#pragma unroll
      for (int i = 0; i < kTM; ++i) acc[i] += as[kk][tm * kTM + i] * bv;
    }
    __syncthreads();
  }
  const int64_t col = n0 + tn;
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int64_t row = m0 + tm * kTM + i;
    float* c = a.c + at(row, col, a.ldc);
    *c = epi(row, col, acc[i], epi.reads_c() ? *c : 0.f);
  }
}

}  // namespace

Status run_04_blocktile_1d(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "04"));
  JHDNN_TRY(require(a.m % kBM == 0 && a.n % kBN == 0 && a.k % kBK == 0, "04", "m, n multiples of 64 and k of 8"));
  JHDNN_TRY(require(a.n / kBN <= 65535, "04", "n <= 65535 * 64 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  blocktile_1d_kernel<<<dim3(a.m / kBM, a.n / kBN), kThreads, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
