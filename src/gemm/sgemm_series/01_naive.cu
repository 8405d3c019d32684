// Step 01, naive: one thread per element of C, every operand read straight from global memory.
//
// threadIdx.x runs along n (C's columns). In column-major storage neighbouring threads then touch
// addresses ld apart: B(kk, n) and C(m, n) are read and written one 32-byte sector per thread, so
// the memory system moves 8x the useful bytes. Any shape.
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {
namespace {

__global__ void naive_kernel(Args a, LinearCombination epi) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // n: the uncoalesced choice
  const int row = blockIdx.y * blockDim.y + threadIdx.y;  // m
  if (row >= a.m || col >= a.n) return;
  float acc = 0.f;
  for (int kk = 0; kk < a.k; ++kk) acc += a.a[at(row, kk, a.lda)] * a.b[at(kk, col, a.ldb)];
  float* c = a.c + at(row, col, a.ldc);
  *c = epi(row, col, acc, epi.reads_c() ? *c : 0.f);
}

}  // namespace

Status run_01_naive(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "01"));
  JHDNN_TRY(require(a.m <= 65535 * 16, "01", "m <= 1048560 (grid y)"));
  if (a.m == 0 || a.n == 0) return Status::success();
  const dim3 block(16, 16);
  const dim3 grid((a.n + 15) / 16, (a.m + 15) / 16);
  naive_kernel<<<grid, block, 0, stream>>>(a, epilogue(a));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::gemm::series
