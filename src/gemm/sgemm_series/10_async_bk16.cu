// Step 10, the library's fast kernel (gemm/sgemm_async.cuh): step 09 with a 16-deep K tile,
// 16-byte copies for every m/n-contiguous operand, hoisted addressing, and predication that
// makes it general.
//
// What changes from step 09, and why each should pay (the inner loop is the same 8 x 8 outer
// product from float4 fragments, 64 FFMA per 4 LDS.128):
//   - K tile 8 -> 16: the per-tile fixed cost (cp.async issue and addressing, wait_group,
//     __syncthreads, stage index) is spread over 1024 FFMA per thread instead of 512. Step 09
//     spends roughly 25-30 non-FFMA instructions per tile; halving their share is ~2-3% of issue
//     slots on an FFMA-bound kernel. 4 stages of 16 keep 48 k in flight (step 09: 24).
//   - addresses advance by a constant per tile instead of being recomputed with 64-bit
//     multiplies per copy (step 09's at(row, col, ld) per cp.async): ~1-2% more.
//   - dynamic shared memory (67.6 KiB per CTA, 2 CTAs per SM), 124-127 registers, no spills.
// Together: 3-7% over step 09, i.e. 46-48 TFLOP/s (0.91-0.95 x cuBLAS) predicted at 4096^3.
//
// This step runs the library kernel directly (NN column-major: A by 16-byte copies, B -- k
// contiguous -- transposed by 4-byte copies). The library additionally picks 128 x 64 / 64 x 128
// tiles for narrow shapes and splits k over a thread-block cluster when there are few tiles.
// Needs lda a multiple of 4 and A 16-byte aligned; any m, n, k.
#include "gemm/gemm.h"
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {

Status run_10_async_bk16(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "10"));
  JHDNN_TRY(require(a.lda % 4 == 0 && aligned16(a.a), "10", "lda a multiple of 4 and A 16-byte aligned (16-byte cp.async)"));
  GemmDesc d;
  d.m = a.m;
  d.n = a.n;
  d.k = a.k;
  d.a = a.a;
  d.lda = a.lda;
  d.b = a.b;
  d.ldb = a.ldb;
  d.c = a.c;
  d.ldc = a.ldc;
  d.alpha = a.alpha;
  d.beta = a.beta;
  return sgemm_path(d, SgemmPath::kAsync, 1, stream);  // no split-K: the bare kernel
}

}  // namespace jhdnn::gemm::series
