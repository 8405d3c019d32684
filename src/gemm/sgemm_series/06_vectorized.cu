// Step 06, vectorized 16-byte accesses: step 05 with float4 global loads, float4 shared reads and
// float4 stores of C.
//
// A's tile is copied m-contiguous, one float4 per thread; B's is read as float4 along k and
// scattered (transposed) into [k][n]. In the inner loop a thread's 8 A and 8 B values arrive in
// 4 LDS.128 instead of 16 LDS.32, which frees issue slots for FMAs. Needs m, n multiples of 128,
// k of 8, lda and ldb multiples of 4 and 16-byte aligned A and B.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256

__global__ void __launch_bounds__(kThreads) vectorized_kernel(Args a, LinearCombination epi) {
  __shared__ __align__(16) float as[kBK][kBM];
  __shared__ __align__(16) float bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int tm = tid % (kBM / kTM), tn = tid / (kBM / kTM);
  const int64_t m0 = int64_t(blockIdx.x) * kBM, n0 = int64_t(blockIdx.y) * kBN;
  // Copy maps: A as 32 float4 along m x 8 k; B as 2 float4 along k x 128 n.
  const int am = (tid % (kBM / 4)) * 4, ak = tid / (kBM / 4);
  const int bk = (tid % (kBK / 4)) * 4, bn = tid / (kBK / 4);
  float acc[kTM][kTN] = {};
  float fa[kTM], fb[kTN];
  for (int k0 = 0; k0 < a.k; k0 += kBK) {
    *reinterpret_cast<float4*>(&as[ak][am]) = *reinterpret_cast<const float4*>(a.a + at(m0 + am, k0 + ak, a.lda));
    const float4 b4 = *reinterpret_cast<const float4*>(a.b + at(k0 + bk, n0 + bn, a.ldb));
    bs[bk + 0][bn] = b4.x;
    bs[bk + 1][bn] = b4.y;
    bs[bk + 2][bn] = b4.z;
    bs[bk + 3][bn] = b4.w;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      *reinterpret_cast<float4*>(fa) = *reinterpret_cast<const float4*>(&as[kk][tm * kTM]);
      *reinterpret_cast<float4*>(fa + 4) = *reinterpret_cast<const float4*>(&as[kk][tm * kTM + 4]);
      *reinterpret_cast<float4*>(fb) = *reinterpret_cast<const float4*>(&bs[kk][tn * kTN]);
      *reinterpret_cast<float4*>(fb + 4) = *reinterpret_cast<const float4*>(&bs[kk][tn * kTN + 4]);
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += fa[i] * fb[j];
    }
    __syncthreads();
  }
  const bool reads_c = epi.reads_c();
#pragma unroll
  for (int j = 0; j < kTN; ++j) {
    const int64_t col = n0 + tn * kTN + j;
#pragma unroll
    for (int h = 0; h < kTM; h += 4) {
      const int64_t row = m0 + tm * kTM + h;
      float* c = a.c + at(row, col, a.ldc);
      if (a.ldc % 4 == 0 && aligned16_device(c)) {
        float4 old = reads_c ? *reinterpret_cast<const float4*>(c) : make_float4(0.f, 0.f, 0.f, 0.f);
        float4 v;
        v.x = epi(row + 0, col, acc[h + 0][j], old.x);
        v.y = epi(row + 1, col, acc[h + 1][j], old.y);
        v.z = epi(row + 2, col, acc[h + 2][j], old.z);
        v.w = epi(row + 3, col, acc[h + 3][j], old.w);
        *reinterpret_cast<float4*>(c) = v;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) c[i] = epi(row + i, col, acc[h + i][j], reads_c ? c[i] : 0.f);
      }
    }
  }
}

}  // namespace

Status run_06_vectorized(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "06"));
  JHDNN_TRY(require(a.m % kBM == 0 && a.n % kBN == 0 && a.k % kBK == 0, "06", "m, n multiples of 128 and k of 8"));
  JHDNN_TRY(require(a.lda % 4 == 0 && a.ldb % 4 == 0 && aligned16(a.a) && aligned16(a.b), "06",
                    "lda, ldb multiples of 4 and A, B 16-byte aligned (float4 loads)"));
  JHDNN_TRY(require(a.n / kBN <= 65535, "06", "n <= 65535 * 128 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  vectorized_kernel<<<dim3(a.m / kBM, a.n / kBN), kThreads, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
