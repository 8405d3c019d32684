// Test-only launcher: the library SGEMM kernels (the general step-08 one and the cp.async one)
// instantiated with the fused epilogue BiasActivation<Relu> (which the library itself does not
// instantiate yet), so the fusion-ready epilogue is compiled and checked on the GPU before a
// fused caller depends on it.
#include "gemm_epilogue_launch.h"

#include <climits>

#include "core/cuda_check.h"
#include "gemm/sgemm_async.cuh"
#include "gemm/sgemm_kernel.cuh"

namespace jhdnn::test {

namespace {

using Epi = gemm::BiasActivation<gemm::Relu>;

core::Status launch_async(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc,
                          const Epi& e, cudaStream_t stream) {
  namespace as = gemm::async;
  constexpr int kWm = 2, kWn = 4;
  auto* kernel = as::sgemm_async_kernel<false, true, kWm, kWn, false, Epi>;
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, as::smem_bytes(kWm, kWn)));
  as::Params p{};
  p.m = m, p.n = n, p.k = k;
  p.tiles_m = (m + as::tile_m(kWm) - 1) / as::tile_m(kWm);
  p.tiles_n = (n + as::tile_n(kWn) - 1) / as::tile_n(kWn);
  p.split = 1, p.k_per_split = 0;
  p.a = a, p.b = b, p.c = c;
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  p.batch_count = 1, p.batch_inner = 1;
  p.c_vec = false;
  const unsigned blocks = unsigned(int64_t(p.tiles_m) * p.tiles_n);
  kernel<<<blocks, as::threads(kWm, kWn), as::smem_bytes(kWm, kWn), stream>>>(p, e);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

}  // namespace

core::Status gemm_bias_relu_residual(int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                                     int ldb, float beta, float* c, int ldc, const float* bias, bool bias_per_row,
                                     const float* residual, int ld_residual, cudaStream_t stream, bool async) {
  Epi e;
  e.alpha = alpha, e.beta = beta, e.bias = bias, e.bias_per_row = bias_per_row;
  e.residual = residual, e.ld_residual = ld_residual;
  if (async) return launch_async(m, n, k, a, lda, b, ldb, c, ldc, e, stream);
  constexpr int kBn = gemm::kernel::kBN;
  gemm::kernel::Params p{};
  p.m = m, p.n = n, p.k = k;
  p.tiles_m = (m + gemm::kernel::kBM - 1) / gemm::kernel::kBM;
  p.tiles_n = (n + kBn - 1) / kBn;
  p.a = a, p.b = b, p.c = c;
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  p.batch_count = 1, p.batch_inner = 1;
  p.c_vec = false;
  const unsigned blocks = unsigned(int64_t(p.tiles_m) * p.tiles_n);
  gemm::kernel::sgemm_kernel<false, true, kBn, Epi><<<blocks, gemm::kernel::threads_for(kBn), 0, stream>>>(p, e);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

}  // namespace jhdnn::test
