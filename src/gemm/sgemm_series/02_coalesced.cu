// Step 02, coalesced: the same arithmetic as step 01, with threadIdx.x along m instead of n.
//
// Now a warp reads 32 consecutive A(m, kk) (128 bytes, one request), all its threads read the same
// B(kk, n) (a broadcast), and C is written 128 contiguous bytes at a time. Only the mapping of
// threads to outputs changed. Any shape.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

__global__ void coalesced_kernel(Args a, LinearCombination epi) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;  // m: neighbours are neighbours in memory
  const int col = blockIdx.y * blockDim.y + threadIdx.y;  // n
  if (row >= a.m || col >= a.n) return;
  float acc = 0.f;
  for (int kk = 0; kk < a.k; ++kk) acc += a.a[at(row, kk, a.lda)] * a.b[at(kk, col, a.ldb)];
  float* c = a.c + at(row, col, a.ldc);
  *c = epi(row, col, acc, epi.reads_c() ? *c : 0.f);
}

}  // namespace

Status run_02_coalesced(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "02"));
  JHDNN_TRY(require(a.n <= 65535 * 8, "02", "n <= 524280 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  const dim3 block(32, 8);
  const dim3 grid((a.m + 31) / 32, (a.n + 7) / 8);
  coalesced_kernel<<<grid, block, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
