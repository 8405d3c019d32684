// Pieces shared by the two DIRECT kernels: the flat parameter block a kernel receives instead of a
// ConvProblem, element-type conversions, the alpha/beta epilogue and the checks both solvers make.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/conv_problem.h"
#include "core/cuda_check.h"

namespace jhdnn::conv::direct {

// Everything a kernel needs to address x, w and y; passed by value (kernel parameter space).
// Sizes stay 64-bit: a single spatial dim is small, but products of them (offsets) are not.
struct DirectParams {
  int64_t N, C, K, G, D, H, W, T, R, S, O, P, Q;
  int64_t cpg, kpg;  // input channels per group, output channels per group
  int pad_d, pad_h, pad_w;
  int stride_d, stride_h, stride_w;
  int dil_d, dil_h, dil_w;
  int flip;  // 1 in JHDNN_CONVOLUTION mode: the filter is read mirrored
  int64_t xs[5], ws[5], ys[5];  // element strides: n|k, c, d|t|o, h|r|p, w|s|q
};

inline DirectParams make_params(const core::ConvProblem& p) {
  DirectParams d{};
  d.N = p.N; d.C = p.C; d.K = p.K; d.G = p.G;
  d.D = p.D; d.H = p.H; d.W = p.W;
  d.T = p.T; d.R = p.R; d.S = p.S;
  d.O = p.O; d.P = p.P; d.Q = p.Q;
  d.cpg = p.c_per_group();
  d.kpg = p.k_per_group();
  d.pad_d = p.pad_d; d.pad_h = p.pad_h; d.pad_w = p.pad_w;
  d.stride_d = p.stride_d; d.stride_h = p.stride_h; d.stride_w = p.stride_w;
  d.dil_d = p.dil_d; d.dil_h = p.dil_h; d.dil_w = p.dil_w;
  d.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  for (int i = 0; i < 5; ++i) {
    d.xs[i] = p.x_stride[i];
    d.ws[i] = p.w_stride[i];
    d.ys[i] = p.y_stride[i];
  }
  return d;
}

// Accumulator type: double for DOUBLE data, fp32 for everything narrower.
template <class T> struct AccType { using type = float; };
template <> struct AccType<double> { using type = double; };

// Element -> accumulator and back (round to nearest even on the way down).
template <class A> __device__ __forceinline__ A to_acc(float v) { return A(v); }
template <class A> __device__ __forceinline__ A to_acc(double v) { return A(v); }
template <class A> __device__ __forceinline__ A to_acc(__half v) { return A(__half2float(v)); }
template <class A> __device__ __forceinline__ A to_acc(__nv_bfloat16 v) { return A(__bfloat162float(v)); }

template <class T> __device__ __forceinline__ T from_acc(float v) { return T(v); }
template <> __device__ __forceinline__ double from_acc<double>(float v) { return double(v); }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <class T> __device__ __forceinline__ T from_acc(double v) { return T(v); }

// y = alpha * acc + beta * y. y is read only when beta != 0: with beta == 0 it may hold NaN and
// must not leak into the result (NaN * 0 is NaN).
template <class T, class A>
__device__ __forceinline__ void store_output(T* y, A acc, A alpha, A beta) {
  A v = alpha * acc;
  if (beta != A(0)) v += beta * to_acc<A>(*y);
  *y = from_acc<T>(v);
}

// Checks both solvers make, flat, first failure wins; nullptr when the problem is acceptable.
inline const char* check_common(const core::ConvProblem& p, bool allow_double) {
  switch (p.dtype) {
    case JHDNN_DATA_FLOAT:
      if (p.compute_type != JHDNN_DATA_FLOAT) return "FLOAT data needs FLOAT compute type";
      break;
    case JHDNN_DATA_DOUBLE:
      if (!allow_double) return "DOUBLE data is only served by direct_naive";
      if (p.compute_type != JHDNN_DATA_DOUBLE) return "DOUBLE data needs DOUBLE compute type";
      break;
    case JHDNN_DATA_HALF:
      // HALF compute is accepted and accumulated in fp32: more accurate than asked.
      if (p.compute_type != JHDNN_DATA_FLOAT && p.compute_type != JHDNN_DATA_HALF)
        return "HALF data needs FLOAT or HALF compute type";
      break;
    case JHDNN_DATA_BFLOAT16:
      if (p.compute_type != JHDNN_DATA_FLOAT && p.compute_type != JHDNN_DATA_BFLOAT16)
        return "BFLOAT16 data needs FLOAT or BFLOAT16 compute type";
      break;
    default:
      return "data type not supported by DIRECT (FLOAT, HALF, BFLOAT16, DOUBLE only)";
  }
  if (p.N <= 0 || p.C <= 0 || p.K <= 0 || p.G <= 0) return "N, C, K and groups must be positive";
  if (p.C % p.G != 0 || p.K % p.G != 0) return "groups must divide C and K";
  if (p.D <= 0 || p.H <= 0 || p.W <= 0) return "input spatial sizes must be positive";
  if (p.T <= 0 || p.R <= 0 || p.S <= 0) return "filter spatial sizes must be positive";
  if (p.O <= 0 || p.P <= 0 || p.Q <= 0) return "output spatial sizes must be positive";
  if (p.stride_d <= 0 || p.stride_h <= 0 || p.stride_w <= 0) return "strides must be positive";
  if (p.dil_d <= 0 || p.dil_h <= 0 || p.dil_w <= 0) return "dilations must be positive";
  if (p.pad_d < 0 || p.pad_h < 0 || p.pad_w < 0) return "paddings must be non-negative";
  for (int i = 0; i < 5; ++i)
    if (p.x_stride[i] < 0 || p.w_stride[i] < 0 || p.y_stride[i] < 0)
      return "negative tensor strides are not supported";
  return nullptr;
}

// Loads kernels into the current context (ConvSolver::load_kernels): cudaFuncGetAttributes on each.
template <class... Kernel>
inline core::Status load_kernels(Kernel... kernels) {
  cudaFuncAttributes attr;
  for (const void* k : {reinterpret_cast<const void*>(kernels)...})
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, k));
  return core::Status::success();
}

// Blocks launched for a grid-stride loop over `items` units of work; gridDim.x allows 2^31 - 1.
inline unsigned grid_for(int64_t items, int64_t per_block) {
  constexpr int64_t kMaxBlocks = (int64_t(1) << 31) - 1;
  int64_t b = (items + per_block - 1) / per_block;
  if (b > kMaxBlocks) b = kMaxBlocks;
  if (b < 1) b = 1;
  return unsigned(b);
}

}  // namespace jhdnn::conv::direct
