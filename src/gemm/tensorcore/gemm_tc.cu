// The tensor-core GEMM as a 1x1 convolution on the shared mma.sync kernel (gemm_tc.h), the
// argument check of the 128x128 wgmma kernel, and the K == 0 GEMM (C = beta * C).
#include "gemm/tensorcore/gemm_tc.h"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/tensorcore/mma_launch.h"
#include "core/cuda_check.h"

namespace jhdnn::gemm::tensorcore {

const char* wgmma_unsupported(jhdnnDataType_t dtype, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
                              const void* B, int64_t ldb, const void* C, int64_t ldc) {
  if (dtype != JHDNN_DATA_HALF && dtype != JHDNN_DATA_BFLOAT16 && dtype != JHDNN_DATA_FLOAT)
    return "data type must be HALF, BFLOAT16 or FLOAT";
  if (M <= 0 || N <= 0 || K <= 0) return "M, N, K must be positive";
  if (M >= (int64_t(1) << 31) || N >= (int64_t(1) << 31) || K >= (int64_t(1) << 31)) return "M, N or K past 2^31";
  if ((M / 128 + 1) * (N / 128 + 1) >= (int64_t(1) << 31)) return "too many output tiles";
  if (lda < K || ldb < K || ldc < N) return "a leading dimension is smaller than its row";
  const int64_t es = dtype == JHDNN_DATA_FLOAT ? 4 : 2;
  if ((lda * es) % 16 != 0 || (ldb * es) % 16 != 0) return "TMA needs lda and ldb to be multiples of 16 bytes";
  if ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B)) % 16 != 0)
    return "TMA needs A and B 16-byte aligned";
  if (A == nullptr || B == nullptr || C == nullptr) return "A, B or C is null";
  return nullptr;
}

core::Status gemm_mma(jhdnnDataType_t dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                      cudaStream_t stream) {
  using core::fail;
  if (dtype != JHDNN_DATA_HALF && dtype != JHDNN_DATA_BFLOAT16 && dtype != JHDNN_DATA_FLOAT)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor-core gemm: data type %s (HALF, BFLOAT16, FLOAT only)",
                core::data_type_name(dtype));
  if (M <= 0 || N <= 0 || K <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "gemm: M, N, K must be positive");
  constexpr int64_t kLim = int64_t(1) << 30;
  if (M >= (int64_t(1) << 37) || K >= kLim || N > int64_t(65535) * 64)
    return fail(JHDNN_STATUS_NOT_SUPPORTED, "gemm: M %lld, N %lld or K %lld past the kernel's index limits",
                (long long)M, (long long)N, (long long)K);
  if (lda < (trans_a ? M : K) || ldb < (trans_b ? K : N) || ldc < N)
    return fail(JHDNN_STATUS_BAD_PARAM, "gemm: a leading dimension is smaller than its row");
  if (!A || !B || !C) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "gemm: A, B or C is null");
  const core::DeviceInfo& dev = conv::tensorcore::cached_device_info();
  if (dev.sm() < 80) return fail(JHDNN_STATUS_ARCH_MISMATCH, "tensor-core gemm needs compute capability 8.0+");

  // op(A) row m, reduction k -> x[n = m, c = k]; op(B)[k][n] -> w[k_out = n, c = k]; C -> y[n = m, k = n].
  conv::tensorcore::TcParams p{};
  p.M = M;
  p.Kg = int(N);
  p.Cg = int(K);
  p.Kred = int(K);
  p.D = p.H = p.W = p.T = p.R = p.S = p.O = p.P = p.Q = 1;
  p.str_d = p.str_h = p.str_w = p.dil_d = p.dil_h = p.dil_w = 1;
  p.xs[0] = trans_a ? 1 : lda;
  p.xs[1] = trans_a ? lda : 1;
  p.ws[0] = trans_b ? ldb : 1;
  p.ws[1] = trans_b ? 1 : ldb;
  p.ys[0] = ldc;
  p.ys[1] = 1;
  p.alpha = alpha;
  p.beta = beta;
  p.alpha2 = 1.f;
  return conv::tensorcore::launch_mma(dtype, p, 1, A, B, C, dev.sm_count, stream);
}

namespace {

__device__ __forceinline__ float load_f(const float* p) { return *p; }
__device__ __forceinline__ float load_f(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ void store_f(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_f(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// Grid-stride over the M x N logical elements; beta == 0 never reads C.
template <class T>
__global__ void scale_c_kernel(T* c, int64_t M, int64_t N, int64_t ldc, float beta) {
  const int64_t total = M * N;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    T* p = c + (i / N) * ldc + i % N;
    store_f(p, beta == 0.f ? 0.f : beta * load_f(p));
  }
}

template <class T>
core::Status launch_scale(int64_t M, int64_t N, float beta, void* C, int64_t ldc, cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>((M * N + 255) / 256, 4096);
  scale_c_kernel<T><<<unsigned(blocks), 256, 0, stream>>>(static_cast<T*>(C), M, N, ldc, beta);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

}  // namespace

core::Status scale_c(jhdnnDataType_t dtype, int64_t M, int64_t N, float beta, void* C, int64_t ldc,
                     cudaStream_t stream) {
  using core::fail;
  if (M <= 0 || N <= 0) return core::Status::success();
  if (ldc < N) return fail(JHDNN_STATUS_BAD_PARAM, "scale_c: ldc (%lld) < N (%lld)", (long long)ldc, (long long)N);
  if (C == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "scale_c: C is null");
  switch (dtype) {
    case JHDNN_DATA_HALF: return launch_scale<__half>(M, N, beta, C, ldc, stream);
    case JHDNN_DATA_BFLOAT16: return launch_scale<__nv_bfloat16>(M, N, beta, C, ldc, stream);
    case JHDNN_DATA_FLOAT: return launch_scale<float>(M, N, beta, C, ldc, stream);
    default:
      return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "scale_c: data type %s", core::data_type_name(dtype));
  }
}

}  // namespace jhdnn::gemm::tensorcore
