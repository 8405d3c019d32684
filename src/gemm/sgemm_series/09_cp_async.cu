// Step 09, multi-stage cp.async pipeline: step 07's tiles, but global -> shared copies go
// through the asynchronous copy engine (cp.async, sm_80+) into a ring of kStages buffers.
//
// Register double buffering (step 08) holds the next tile in registers, and the copy to shared
// memory still costs the thread instructions. cp.async writes shared memory directly, without
// registers, so several tiles can be in flight at once (kStages - 1 ahead) for free: more memory
// latency hidden at the same register count. A's tile is m-contiguous and goes in as 16-byte
// copies; B's must be transposed into [k][n], which only 4-byte copies can do (8 consecutive
// threads take 8 consecutive k of one column, and the padded row puts them in 32 banks).
// Needs m, n multiples of 128, k of 8, lda a multiple of 4 and A 16-byte aligned.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kBM = 128, kBN = 128, kBK = 8, kStages = 4;
constexpr int kThreads = 256;
constexpr int kLd = kBN + 4;

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending)); }

__global__ void __launch_bounds__(kThreads, 2) cp_async_kernel(Args a, LinearCombination epi) {
  __shared__ __align__(16) float as[kStages][kBK][kBM];  // 4 x 4 KiB
  __shared__ __align__(16) float bs[kStages][kBK][kLd];  // 4 x 4.1 KiB
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int frag_m = (warp % 2) * 64 + (lane % 8) * 4;
  const int frag_n = (warp / 2) * 32 + (lane / 8) * 4;
  const int64_t m0 = int64_t(blockIdx.x) * kBM, n0 = int64_t(blockIdx.y) * kBN;
  const int am = (tid % (kBM / 4)) * 4, ak = tid / (kBM / 4);  // one 16-byte copy of A
  const int bk = tid % kBK, bn = tid / kBK;                     // four 4-byte copies of B, n + 32 l
  const int k_tiles = a.k / kBK;

  auto issue = [&](int kt) {  // tile kt into stage kt % kStages
    const int st = kt % kStages, k0 = kt * kBK;
    cp_async16(&as[st][ak][am], a.a + at(m0 + am, k0 + ak, a.lda));
#pragma unroll
    for (int l = 0; l < 4; ++l) cp_async4(&bs[st][bk][bn + 32 * l], a.b + at(k0 + bk, n0 + bn + 32 * l, a.ldb));
  };

  // Prologue: kStages - 1 tiles in flight. Every thread commits a group per tile, empty or not,
  // so wait_group counts line up.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) issue(s);
    cp_async_commit();
  }
  float acc[8][8] = {};
  float fa[8], fb[8];
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kStages - 2>();  // this thread's copies of tile kt are done...
    __syncthreads();               // ...and everyone's; also, stage (kt-1) % kStages is free again
    if (kt + kStages - 1 < k_tiles) issue(kt + kStages - 1);
    cp_async_commit();
    const int st = kt % kStages;
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      *reinterpret_cast<float4*>(fa) = *reinterpret_cast<const float4*>(&as[st][kk][frag_m]);
      *reinterpret_cast<float4*>(fa + 4) = *reinterpret_cast<const float4*>(&as[st][kk][frag_m + 32]);
      *reinterpret_cast<float4*>(fb) = *reinterpret_cast<const float4*>(&bs[st][kk][frag_n]);
      *reinterpret_cast<float4*>(fb + 4) = *reinterpret_cast<const float4*>(&bs[st][kk][frag_n + 16]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
    }
  }
  cp_async_wait<0>();
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

Status run_09_cp_async(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "09"));
  JHDNN_TRY(require(a.m % kBM == 0 && a.n % kBN == 0 && a.k % kBK == 0, "09", "m, n multiples of 128 and k of 8"));
  JHDNN_TRY(require(a.lda % 4 == 0 && aligned16(a.a), "09", "lda a multiple of 4 and A 16-byte aligned (16-byte cp.async)"));
  JHDNN_TRY(require(a.n / kBN <= 65535, "09", "n <= 65535 * 128 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  cp_async_kernel<<<dim3(a.m / kBM, a.n / kBN), kThreads, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
