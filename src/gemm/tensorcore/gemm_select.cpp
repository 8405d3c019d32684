// Kernel selection of the tensor-core GEMM (gemm_tc.h): the 128x256 Hopper kernel where it applies,
// else the GPU-verified 128x128 wgmma kernel, else the mma.sync kernel; JHDNN_TC_GEMM (core::config) sets a
// ceiling so a broken kernel can be bypassed. Host code only.
#include <string>

#include "conv/tensorcore/mma_launch.h"
#include "core/config.h"
#include "gemm/hopper/gemm_wgmma.h"
#include "gemm/tensorcore/gemm_tc.h"

namespace jhdnn::gemm::tensorcore {

using core::fail;

const char* tc_kernel_name(TcKernel k) {
  switch (k) {
    case TcKernel::kAuto: return "auto";
    case TcKernel::kHopper: return "hopper";
    case TcKernel::kWgmma: return "wgmma";
    case TcKernel::kMma: return "mma";
  }
  return "?";
}

static_assert(int(TcKernel::kAuto) == int(core::config::TcGemmCeiling::kAuto) &&
                  int(TcKernel::kHopper) == int(core::config::TcGemmCeiling::kHopper) &&
                  int(TcKernel::kWgmma) == int(core::config::TcGemmCeiling::kWgmma) &&
                  int(TcKernel::kMma) == int(core::config::TcGemmCeiling::kMma),
              "TcKernel and config::TcGemmCeiling share their values");

core::Status tc_kernel_ceiling(TcKernel* kernel) {
  const core::config::TcGemmCeiling c = core::config::tc_gemm_ceiling();
  *kernel = TcKernel::kAuto;
  if (c == core::config::TcGemmCeiling::kInvalid)
    return fail(JHDNN_STATUS_BAD_PARAM,
                "environment variable JHDNN_TC_GEMM=\"%s\" is not one of auto, hopper, wgmma, mma",
                core::config::tc_gemm_bad_value());
  *kernel = TcKernel(int(c));
  return core::Status::success();
}

namespace {

hopper::GemmArgs hopper_args(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_b, int64_t M, int64_t N,
                             int64_t K, float alpha, const void* A, int64_t lda, const void* B, int64_t ldb, float beta,
                             void* C, int64_t ldc) {
  hopper::GemmArgs g;
  g.m = M, g.n = N, g.k = K;
  g.a = A, g.lda = lda;
  g.b = B, g.ldb = ldb, g.b_kn = !trans_b;  // trans_b: B stored N x K, the kernel's default
  g.c = C, g.ldc = ldc;
  g.ab_type = ab_type, g.c_type = c_type;
  g.alpha = alpha, g.beta = beta;
  return g;
}

}  // namespace

std::string hopper_unsupported(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_b, int64_t M, int64_t N,
                               int64_t K, const void* A, int64_t lda, const void* B, int64_t ldb, const void* C,
                               int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return "M, N, K must be positive";
  const core::Status s = hopper::gemm_wgmma_check(hopper_args(ab_type, c_type, trans_b, M, N, K, 1.f, A, lda, B, ldb,
                                                              0.f, const_cast<void*>(C), ldc));
  return s.ok() ? std::string() : s.message;
}

core::Status gemm_hopper(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_b, int64_t M, int64_t N,
                         int64_t K, float alpha, const void* A, int64_t lda, const void* B, int64_t ldb, float beta,
                         void* C, int64_t ldc, cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "gemm_hopper: M, N, K must be positive");
  return hopper::gemm_wgmma(hopper_args(ab_type, c_type, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
                            stream);
}

core::Status gemm_ex(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool trans_a, bool trans_b, int64_t M, int64_t N,
                     int64_t K, float alpha, const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C,
                     int64_t ldc, TcKernel ceiling, cudaStream_t stream, TcKernel* used) {
  if (ab_type != JHDNN_DATA_HALF && ab_type != JHDNN_DATA_BFLOAT16 && ab_type != JHDNN_DATA_FLOAT)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                "tensor-core gemm: A/B data type %s (HALF, BFLOAT16, FLOAT (TF32) only)", core::data_type_name(ab_type));
  if (c_type != ab_type && !(c_type == JHDNN_DATA_FLOAT && ab_type != JHDNN_DATA_FLOAT))
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensor-core gemm: C type %s with A/B %s (C must be %s or FLOAT)",
                core::data_type_name(c_type), core::data_type_name(ab_type), core::data_type_name(ab_type));
  const bool on_sm90 = conv::tensorcore::cached_device_info().sm() == 90;
  const bool try_hopper = ceiling == TcKernel::kAuto || ceiling == TcKernel::kHopper;
  const bool try_wgmma = try_hopper || ceiling == TcKernel::kWgmma;

  // 1) the 128x256 kernel: any B layout (16-bit), FLOAT C for 16-bit inputs. Why it was passed over
  // is a literal, or the kernel's own check's message when it refused: no string is built when it
  // runs or is not tried.
  const char* hopper_no = nullptr;
  std::string hopper_why;
  if (try_hopper) {
    if (!on_sm90) hopper_no = "it needs an sm_90 device";
    else if (trans_a) hopper_no = "it needs op(A) with K contiguous (A not transposed in row-major terms)";
    else hopper_why = hopper_unsupported(ab_type, c_type, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    if (hopper_no == nullptr && hopper_why.empty()) {
      if (used) *used = TcKernel::kHopper;
      return gemm_hopper(ab_type, c_type, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    }
  }
  if (c_type != ab_type)
    return fail(JHDNN_STATUS_NOT_SUPPORTED,
                "tensor-core gemm: %s output of %s inputs runs only on the sm_90 128x256 kernel, and %s%s",
                core::data_type_name(c_type), core::data_type_name(ab_type),
                try_hopper ? "that kernel refused: " : "JHDNN_TC_GEMM excludes that kernel",
                !try_hopper ? "" : hopper_no != nullptr ? hopper_no : hopper_why.c_str());

  // 2) the GPU-verified 128x128 kernel: "TN" only.
  if (try_wgmma && on_sm90 && !trans_a && trans_b &&
      wgmma_unsupported(ab_type, M, N, K, A, lda, B, ldb, C, ldc) == nullptr) {
    if (used) *used = TcKernel::kWgmma;
    return gemm_wgmma(ab_type, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
  }

  // 3) mma.sync: every layout.
  if (used) *used = TcKernel::kMma;
  return gemm_mma(ab_type, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

core::Status gemm(jhdnnDataType_t dtype, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const void* A, int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                  cudaStream_t stream) {
  TcKernel ceiling;
  JHDNN_TRY(tc_kernel_ceiling(&ceiling));
  return gemm_ex(dtype, dtype, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ceiling, stream);
}

}  // namespace jhdnn::gemm::tensorcore
