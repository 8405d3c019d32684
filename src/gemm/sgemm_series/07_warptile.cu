// Step 07, warp tiling and conflict-free shared memory: step 06 with the thread-to-output map
// rearranged around warps.
//
// The 256 threads form 8 warps of 2 (m) x 4 (n); each warp owns a 64 x 32 piece of the 128 x 128
// tile, and each lane an 8 x 8 block split into 2 x 2 groups of 4 x 4 spread 32 (m) and 16 (n)
// apart. Per k a warp's A reads are then 8 distinct, contiguous float4 (128 bytes, one shared
// wavefront, the rest broadcasts) and its B reads 4 -- step 06's 8-float stride between threads
// is gone. Rows of the transposed B tile are padded by 4 floats so the scattered stores of the
// copy land in 32 different banks. A warp's C stores cover 4 columns x 128 contiguous bytes.
// Same shape limits as step 06.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8;
constexpr int kThreads = 256;
constexpr int kLd = kBN + 4;  // padded row of the [k][n] tile

__global__ void __launch_bounds__(kThreads, 2) warptile_kernel(Args a, LinearCombination epi) {
  __shared__ __align__(16) float as[kBK][kBM];
  __shared__ __align__(16) float bs[kBK][kLd];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int frag_m = (warp % 2) * 64 + (lane % 8) * 4;  // + {0, 32}
  const int frag_n = (warp / 2) * 32 + (lane / 8) * 4;  // + {0, 16}
  const int64_t m0 = int64_t(blockIdx.x) * kBM, n0 = int64_t(blockIdx.y) * kBN;
  const int am = (tid % (kBM / 4)) * 4, ak = tid / (kBM / 4);
  // B: one float4 along k per thread (k = (tid % 2) * 4, n = tid / 2), scattered into [k][n];
  // with the padded row a warp's 32 stores fall in 32 banks (4 * k + n mod 32 all differ).
  const int bk = (tid % (kBK / 4)) * 4, bn = tid / (kBK / 4);
  float acc[8][8] = {};
  float fa[8], fb[8];
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
      *reinterpret_cast<float4*>(fa) = *reinterpret_cast<const float4*>(&as[kk][frag_m]);
      *reinterpret_cast<float4*>(fa + 4) = *reinterpret_cast<const float4*>(&as[kk][frag_m + 32]);
      *reinterpret_cast<float4*>(fb) = *reinterpret_cast<const float4*>(&bs[kk][frag_n]);
      *reinterpret_cast<float4*>(fb + 4) = *reinterpret_cast<const float4*>(&bs[kk][frag_n + 16]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  const bool reads_c = epi.reads_c();
  const bool vec = a.ldc % 4 == 0 && aligned16_device(a.c);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int64_t col = n0 + frag_n + (j < 4 ? j : 12 + j);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = m0 + frag_m + h * 32;
      float* c = a.c + at(row, col, a.ldc);
      if (vec) {
        float4 old = reads_c ? *reinterpret_cast<const float4*>(c) : make_float4(0.f, 0.f, 0.f, 0.f);
        float4 v;
        v.x = epi(row + 0, col, acc[h * 4 + 0][j], old.x);
        v.y = epi(row + 1, col, acc[h * 4 + 1][j], old.y);
        v.z = epi(row + 2, col, acc[h * 4 + 2][j], old.z);
        v.w = epi(row + 3, col, acc[h * 4 + 3][j], old.w);
        *reinterpret_cast<float4*>(c) = v;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) c[i] = epi(row + i, col, acc[h * 4 + i][j], reads_c ? c[i] : 0.f);
      }
    }
  }
}

}  // namespace

Status run_07_warptile(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "07"));
  JHDNN_TRY(require(a.m % kBM == 0 && a.n % kBN == 0 && a.k % kBK == 0, "07", "m, n multiples of 128 and k of 8"));
  JHDNN_TRY(require(a.lda % 4 == 0 && a.ldb % 4 == 0 && aligned16(a.a) && aligned16(a.b), "07",
                    "lda, ldb multiples of 4 and A, B 16-byte aligned (float4 loads)"));
  JHDNN_TRY(require(a.n / kBN <= 65535, "07", "n <= 65535 * 128 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  warptile_kernel<<<dim3(a.m / kBM, a.n / kBN), kThreads, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
