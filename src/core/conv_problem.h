// ConvProblem: one forward convolution, stripped of descriptors. Everything below the API layer
// (dispatch, solvers, kernels, the CPU reference, tests) speaks this type.
//
// 2-D convolutions are 3-D ones with D = T = O = 1 and no depth padding, so every solver and the
// reference handle both with one code path.
//
//   x: N x C x D x H x W       (any strides; NCHW / NHWC are stride patterns)
//   w: K x (C/G) x T x R x S   (KCRS or KRSC in memory, also as strides)
//   y: N x K x O x P x Q
//   y[n,k,o,p,q] = alpha * sum_{c,t,r,s} x[n, g*C/G + c, o*sd - pd + t*dd, ...] * w[k,c,t',r',s']
//                  + beta * y[n,k,o,p,q]
//   with g = k / (K/G), and t' = T-1-t (etc.) in CONVOLUTION mode, t' = t in CROSS_CORRELATION.
#pragma once

#include <cstdint>
#include <string>

#include "jhdnn/jhdnn.h"

namespace jhdnn::core {

// Index of each dimension in the stride arrays below.
enum Dim5 { kN = 0, kC = 1, kD = 2, kH = 3, kW = 4 };  // for w: kN is K, kC is C/G

struct ConvProblem {
  jhdnnDataType_t dtype = JHDNN_DATA_FLOAT;         // x, w and y share it
  jhdnnDataType_t compute_type = JHDNN_DATA_FLOAT;  // accumulation type asked for
  jhdnnMathType_t math_type = JHDNN_DEFAULT_MATH;
  jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION;
  int spatial_dims = 2;  // 2 or 3, as the descriptors said

  int64_t N = 0, C = 0, K = 0, G = 1;  // C, K: all channels (not per group)
  int64_t D = 1, H = 0, W = 0;         // input spatial
  int64_t T = 1, R = 0, S = 0;         // filter spatial
  int64_t O = 1, P = 0, Q = 0;         // output spatial
  int pad_d = 0, pad_h = 0, pad_w = 0;
  int stride_d = 1, stride_h = 1, stride_w = 1;
  int dil_d = 1, dil_h = 1, dil_w = 1;

  int64_t x_stride[5] = {};  // n, c, d, h, w (elements)
  int64_t w_stride[5] = {};  // k, c, t, r, s
  int64_t y_stride[5] = {};  // n, k, o, p, q

  int64_t c_per_group() const { return C / G; }
  int64_t k_per_group() const { return K / G; }
  // Reduction length of one output: (C/G) * T * R * S.
  int64_t reduction() const { return c_per_group() * T * R * S; }
  int64_t x_elems() const { return N * C * D * H * W; }
  int64_t w_elems() const { return K * c_per_group() * T * R * S; }
  int64_t y_elems() const { return N * K * O * P * Q; }
  // 2 * multiply-adds, the usual convolution FLOP count.
  double flops() const { return 2.0 * double(y_elems()) * double(reduction()); }

  // Layout predicates on x and y (packed, no padding between elements).
  bool x_packed_nchw() const;
  bool x_packed_nhwc() const;
  bool y_packed_nchw() const;
  bool y_packed_nhwc() const;
  bool w_packed_kcrs() const;
  bool w_packed_krsc() const;

  // Largest element offset + 1 that x / w / y touch (for 32-bit indexing decisions).
  int64_t x_span() const;
  int64_t w_span() const;
  int64_t y_span() const;

  // benchdnn-style string that names the problem, e.g. "f32 nchw g1mb32ic64ih56iw56oc64oh56ow56kh3kw3ph1pw1".
  std::string key() const;
};

// A packed problem, for tests and tools: NCHW (KCRS) when nhwc is false, NHWC (KRSC) when true.
// Output sizes computed from the convolution formula.
ConvProblem make_problem_2d(jhdnnDataType_t dtype, bool nhwc, int64_t N, int64_t C, int64_t H, int64_t W,
                            int64_t K, int64_t R, int64_t S, int pad_h, int pad_w, int stride_h, int stride_w,
                            int dil_h, int dil_w, int64_t G = 1,
                            jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION);

// Output size of one spatial dimension; <= 0 when the filter does not fit.
inline int64_t conv_out_size(int64_t in, int64_t filt, int pad, int stride, int dil) {
  const int64_t span = (filt - 1) * dil + 1;
  const int64_t padded = in + 2 * int64_t(pad);
  if (padded < span) return 0;
  return (padded - span) / stride + 1;
}

}  // namespace jhdnn::core
