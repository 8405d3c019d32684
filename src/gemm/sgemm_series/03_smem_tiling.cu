// Step 03, shared-memory tiling: a 32 x 32 block of C is computed by 32 x 32 threads that first
// copy a 32 x 32 tile of A and of B into shared memory, then each reads 32 + 32 values from there.
//
// Each global element is now loaded once per block instead of once per thread: global traffic
// drops 32x. The inner loop is still one shared load per FMA (two loads, one broadcast), which
// caps it well below the FMA peak; the next steps raise the FMAs per load. Needs m, n, k
// multiples of 32 (no bounds checks, to keep the idea bare).
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile) smem_kernel(Args a, LinearCombination epi) {
  __shared__ float as[kTile][kTile + 1];  // [k][m]; +1: the column reads below hit 32 banks
  __shared__ float bs[kTile][kTile + 1];  // [n][k]
  const int tm = threadIdx.x, tn = threadIdx.y;
  const int row = blockIdx.x * kTile + tm, col = blockIdx.y * kTile + tn;
  float acc = 0.f;
  for (int k0 = 0; k0 < a.k; k0 += kTile) {
    as[tn][tm] = a.a[at(row, k0 + tn, a.lda)];                       // A(m, k0 + tn): coalesced in m
    bs[tn][tm] = a.b[at(k0 + tm, int64_t(blockIdx.y) * kTile + tn, a.ldb)];  // B(k0 + tm, n): coalesced in k
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) acc += as[kk][tm] * bs[tn][kk];
    __syncthreads();
  }
  float* c = a.c + at(row, col, a.ldc);
  *c = epi(row, col, acc, epi.reads_c() ? *c : 0.f);
}

}  // namespace

Status run_03_smem_tiling(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "03"));
  JHDNN_TRY(require(a.m % kTile == 0 && a.n % kTile == 0 && a.k % kTile == 0, "03", "m, n, k multiples of 32"));
  JHDNN_TRY(require(a.n / kTile <= 65535, "03", "n <= 65535 * 32 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  smem_kernel<<<dim3(a.m / kTile, a.n / kTile), dim3(kTile, kTile), 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
