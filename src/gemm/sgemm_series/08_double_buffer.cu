// Step 08, double buffering, and the library kernel (gemm/sgemm_kernel.cuh).
//
// Step 07 waits for each K tile's global loads before it can compute: two barriers per tile and
// the load latency exposed. Step 08 keeps two shared buffers and fetches tile kt+1 into registers
// while tile kt is computed, then stores it into the other buffer: one barrier per tile, the
// latency hidden behind 512 FMAs per thread. It also makes the kernel general -- predicated,
// zero-filled loads and guarded stores, either operand transposed, any ld and alignment, strided
// batches -- which is why it is the library's general GEMM kernel (the fallback for operands the
// cp.async kernel of step 10 cannot copy) and this step calls gemm::sgemm with that kernel forced.
#include "gemm/gemm.h"
#include "gemm/sgemm_series/series_common.cuh"

namespace jhdnn::gemm::series {

Status run_08_double_buffer(const Args& a, cudaStream_t stream) {
  JHDNN_TRY(check_args(a, "08"));
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
  return sgemm_path(d, SgemmPath::kFallback, 1, stream);
}

}  // namespace jhdnn::gemm::series
