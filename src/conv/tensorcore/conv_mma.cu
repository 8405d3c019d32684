// tensorcore_mma: generation 1 of the Tensor Core convolution -- an implicit GEMM on mma.sync.
//
// The GEMM view of one group g of a forward convolution:
//   rows    m = (n, o, p, q)            M = N*O*P*Q output pixels
//   columns k in [0, K/G)               output channels of the group
//   reduction kk = ((t*R + r)*S + s)*Cg + c   Kred = T*R*S*Cg, c fastest
// A[m][kk] = x[n, g*Cg + c, o*sd - pd + t*dd, p*sh - ph + r*dh, q*sw - pw + s*dw] (0 in padding)
// B[k][kk] = w[g*Kg + k, c, t', r', s']  (t' = T-1-t etc. in CONVOLUTION mode)
// Neither A nor B is ever materialized: the loader computes each 16-byte chunk's address on the
// fly. With c fastest, 8 consecutive reduction indices of a 16-bit type (4 of fp32) are 8
// consecutive channels of one filter tap -- 16 contiguous bytes in NHWC / KRSC -- whenever
// Cg is a multiple of 8 (4): one cp.async per chunk, zero-filled (src-size 0) in padding and past
// the tile edges. Otherwise (NCHW, KCRS, odd Cg, misaligned pointers) a general loader gathers the
// chunk element by element through the strides into registers and stores it to shared memory.
//
// One block computes a kBM x kBN tile of one group; warps own 64x32 sub-tiles (4 x 4 mma tiles of
// 16x8). The reduction advances 64 bytes at a time (32 fp16/bf16 or 16 fp32 values, two mma
// k-steps), through kStages shared-memory stages filled by cp.async kStages-1 tiles ahead.
// See README.md for the shapes, the swizzle and the measured numbers.
#include "conv/tensorcore/tensorcore.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/tensorcore/mma_launch.h"
#include "core/cuda_check.h"
#include "core/env.h"

namespace jhdnn::conv {
namespace tensorcore {

// ---------------------------------------------------------------- math-type rules

bool uses_tensor_cores(const core::ConvProblem& p, const core::DeviceInfo& dev, const char** why) {
  const char* no = nullptr;
  if (dev.sm() < 80) {
    no = "tensor-core kernels need compute capability 8.0 or later";
  } else if (p.math_type == JHDNN_FMA_MATH) {
    no = "FMA_MATH never uses tensor cores";
  } else if (p.math_type != JHDNN_DEFAULT_MATH && p.math_type != JHDNN_TENSOR_OP_MATH &&
             p.math_type != JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
    no = "unknown math type";
  } else if (p.dtype == JHDNN_DATA_HALF || p.dtype == JHDNN_DATA_BFLOAT16) {
    // DEFAULT, TENSOR_OP and ALLOW_CONVERSION all permit tensor cores for 16-bit data.
  } else if (p.dtype == JHDNN_DATA_FLOAT) {
    // TF32 under DEFAULT, TENSOR_OP and ALLOW_CONVERSION, unless switched off by the environment.
    if (!core::tf32_allowed_by_env()) no = "NVIDIA_TF32_OVERRIDE=0 forbids TF32 tensor cores for FLOAT data";
  } else {
    no = "tensor cores serve HALF, BFLOAT16 and FLOAT (as TF32) data only";
  }
  if (why != nullptr) *why = no ? no : "";
  return no == nullptr;
}

namespace {

// ---------------------------------------------------------------- host side

// The checks of can_implement and run, flat; nullptr when the problem is acceptable.
const char* check_problem(const core::ConvProblem& p, const core::DeviceInfo& dev) {
  const char* why = nullptr;
  if (!uses_tensor_cores(p, dev, &why)) return why;
  switch (p.dtype) {
    case JHDNN_DATA_FLOAT:
      if (p.compute_type != JHDNN_DATA_FLOAT) return "FLOAT data needs FLOAT compute type";
      break;
    case JHDNN_DATA_HALF:  // HALF compute is accepted and accumulated in fp32 (more accurate than asked)
      if (p.compute_type != JHDNN_DATA_FLOAT && p.compute_type != JHDNN_DATA_HALF)
        return "HALF data needs FLOAT or HALF compute type";
      break;
    case JHDNN_DATA_BFLOAT16:
      if (p.compute_type != JHDNN_DATA_FLOAT && p.compute_type != JHDNN_DATA_BFLOAT16)
        return "BFLOAT16 data needs FLOAT or BFLOAT16 compute type";
      break;
    default:
      return "data type not supported";
  }
  if (p.N <= 0 || p.C <= 0 || p.K <= 0 || p.G <= 0) return "N, C, K and groups must be positive";
  if (p.C % p.G != 0 || p.K % p.G != 0) return "groups must divide C and K";
  if (p.D <= 0 || p.H <= 0 || p.W <= 0 || p.T <= 0 || p.R <= 0 || p.S <= 0 || p.O <= 0 || p.P <= 0 || p.Q <= 0)
    return "spatial sizes must be positive";
  if (p.stride_d <= 0 || p.stride_h <= 0 || p.stride_w <= 0) return "strides must be positive";
  if (p.dil_d <= 0 || p.dil_h <= 0 || p.dil_w <= 0) return "dilations must be positive";
  if (p.pad_d < 0 || p.pad_h < 0 || p.pad_w < 0) return "paddings must be non-negative";
  for (int i = 0; i < 5; ++i)
    if (p.x_stride[i] < 0 || p.w_stride[i] < 0 || p.y_stride[i] < 0) return "negative tensor strides";
  // The kernel keeps per-dimension coordinates in 32-bit ints (offsets are 64-bit). Bound every
  // input coordinate it can form: out*stride - pad + (filt-1)*dil, and the reduction length.
  constexpr int64_t kLim = int64_t(1) << 30;
  auto coord_ok = [&](int64_t in, int64_t out, int64_t filt, int64_t pad, int64_t stride, int64_t dil) {
    return in < kLim && out < kLim && filt < kLim && pad < kLim && stride < kLim && dil < kLim &&
           (out - 1) * stride + (filt - 1) * dil < kLim;
  };
  if (!coord_ok(p.D, p.O, p.T, p.pad_d, p.stride_d, p.dil_d) || !coord_ok(p.H, p.P, p.R, p.pad_h, p.stride_h, p.dil_h) ||
      !coord_ok(p.W, p.Q, p.S, p.pad_w, p.stride_w, p.dil_w))
    return "a spatial coordinate would exceed 2^30";
  if (p.reduction() >= kLim || p.c_per_group() >= kLim) return "reduction length C/G*T*R*S must be below 2^30";
  if (p.k_per_group() > int64_t(65535) * 64) return "K/G above 65535*64 (gridDim.y limit of 64-wide tiles)";
  if (p.G > 65535) return "more than 65535 groups (gridDim.z limit)";
  if (p.N * p.O * p.P * p.Q > (int64_t(1) << 31) * 64) return "N*O*P*Q exceeds 2^37 output pixels";
  return nullptr;
}

TcParams make_params(const core::ConvProblem& p, const Epilogue& ep) {
  TcParams t{};
  t.M = p.N * p.O * p.P * p.Q;
  t.Kg = int(p.k_per_group());
  t.Cg = int(p.c_per_group());
  t.Kred = int(p.reduction());
  t.D = int(p.D), t.H = int(p.H), t.W = int(p.W);
  t.T = int(p.T), t.R = int(p.R), t.S = int(p.S);
  t.O = int(p.O), t.P = int(p.P), t.Q = int(p.Q);
  t.pad_d = p.pad_d, t.pad_h = p.pad_h, t.pad_w = p.pad_w;
  t.str_d = p.stride_d, t.str_h = p.stride_h, t.str_w = p.stride_w;
  t.dil_d = p.dil_d, t.dil_h = p.dil_h, t.dil_w = p.dil_w;
  t.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  for (int i = 0; i < 5; ++i) t.xs[i] = p.x_stride[i], t.ws[i] = p.w_stride[i], t.ys[i] = p.y_stride[i];
  t.alpha = ep.alpha, t.beta = ep.beta, t.alpha2 = ep.alpha2;
  t.bias = ep.bias, t.z = ep.z, t.relu = ep.relu ? 1 : 0;
  return t;
}

class TensorCoreMmaSolver final : public ConvSolver {
 public:
  const char* name() const override { return "tensorcore_mma"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const override {
    if (const char* why = check_problem(p, dev)) return Verdict::no(why);
    return Verdict::yes();
  }

  Status run(const ConvProblem& p, const ConvArgs& a, void*, size_t, cudaStream_t stream) const override {
    Epilogue ep;
    ep.alpha = float(a.alpha);
    ep.beta = float(a.beta);
    return forward_mma(p, a.x, a.w, a.y, ep, stream);
  }

  Status load_kernels() const override { return load_mma_kernels(); }
};

}  // namespace

Status forward_mma(const core::ConvProblem& p, const void* x, const void* w, void* y, const Epilogue& ep,
                   cudaStream_t stream) {
  const core::DeviceInfo& dev = cached_device_info();
  if (const char* why = check_problem(p, dev)) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_mma: %s", why);
  if (!x || !w || !y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorcore_mma: x, w or y is null");
  return launch_mma(p.dtype, make_params(p, ep), int(p.G), x, w, y, dev.sm_count, stream);
}

}  // namespace tensorcore

const ConvSolver& tensorcore_mma_solver() {
  static const auto& s = *new tensorcore::TensorCoreMmaSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
