// tensorcore_wgmma_smallc: small-channel layers (C = 3 first layers) on the wgmma kernel, through a
// "row-packed" copy of x in the workspace (README.md in this folder, "Round 6"). Host-only planning
// and the element mapping of the two packing passes, shared by the CUDA kernels
// (conv_wgmma_smallc.cu) and the CPU test (tests/test_wgmma_smallc.cpp) that checks the transform
// against the float64 reference without a GPU.
//
// The transform. TMA needs 16-byte pixel strides, so x with C = 3 cannot feed the wgmma kernel, and
// padding C to 8 alone would leave 56 of every 64 reduction columns of a stage empty. Instead the S
// filter columns are folded into the channels ("im2col along w only"):
//
//   Cs = round_up(S * C, V)          V = 16 bytes / element size (8 fp16/bf16, 4 fp32)
//   xs[n][h][q][j] = x[n, c, h, q*sw - pw + s*dw]    for j = s*C + c < S*C (0 outside [0, W))
//                  = 0                               for S*C <= j < Cs
//   ws[k][r][0][j] = w[k, c, r', s']                 (r', s') = (r, s), or (R-1-r, S-1-s) in CONVOLUTION mode
//                  = 0                               for j >= S*C
//
// and the original problem equals the cross-correlation of xs (packed NHWC: N x H x Q x Cs) with ws
// (packed KRSC: K x R x 1 x Cs), pad (ph, 0), stride (sh, 1), dilation (dh, 1), same P, Q and y
// (y[n,k,p,q] = sum_r sum_j xs[n][p*sh-ph+r*dh][q][j] * ws[k][r][j]; TMA zero-fills the rows
// outside [0, H) as before). For ResNet-50's conv1 (C 3, 7x7, stride 2) that is Cs = 24: 7 reduction
// blocks of 64 per tile instead of 49, and for VGG-16's conv1_1 (3x3) Cs = 16: 3 blocks instead of 9.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/conv_problem.h"

#if defined(__CUDACC__)
#define JHDNN_SMALLC_FN __host__ __device__ __forceinline__
#else
#define JHDNN_SMALLC_FN inline
#endif

namespace jhdnn::conv::tensorcore {

// What the packing passes need, flat (a kernel parameter).
struct SmallCGeom {
  int64_t N, C, H, W, K, R, S, Q, Cs;
  int pad_w, str_w, dil_w, flip;
  int64_t xs[5];  // x strides (n, c, d, h, w), elements
  int64_t wst[5];  // w strides (k, c, t, r, s), elements
};

// Offset in x of xs[n][h][q][j], or -1 when that element is a zero (past S*C, or w outside [0, W)).
JHDNN_SMALLC_FN int64_t smallc_x_source(const SmallCGeom& g, int64_t n, int64_t h, int64_t q, int64_t j) {
  if (j >= g.S * g.C) return -1;
  const int64_t s = j / g.C, c = j - s * g.C;
  const int64_t w = q * g.str_w - g.pad_w + s * g.dil_w;
  if (w < 0 || w >= g.W) return -1;
  return n * g.xs[0] + c * g.xs[1] + h * g.xs[3] + w * g.xs[4];
}

// Offset in w of ws[k][r][0][j], or -1 when that element is a zero (j >= S*C).
JHDNN_SMALLC_FN int64_t smallc_w_source(const SmallCGeom& g, int64_t k, int64_t r, int64_t j) {
  if (j >= g.S * g.C) return -1;
  const int64_t s = j / g.C, c = j - s * g.C;
  const int64_t rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
  return k * g.wst[0] + c * g.wst[1] + rr * g.wst[3] + ss * g.wst[4];
}

// The packing pass writes xs pixel by pixel, 16 bytes at a time; this cursor walks j = s*C + c
// of one pixel (n, h, q) without divisions. Start: s = c = 0, w = q*sw - pw. xpix = x + n*xs[0] +
// h*xs[3]. Each call fills the next V elements of the pixel (zeros past S*C and outside [0, W)).
// The kernel and the CPU test run this same function; the test also checks it against
// smallc_x_source element by element.
struct SmallCCursor {
  int64_t s = 0, c = 0, w = 0;
};

template <class U, int V>
JHDNN_SMALLC_FN void smallc_next_vector(const SmallCGeom& g, const U* xpix, SmallCCursor& cur, U (&out)[V]) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int e = 0; e < V; ++e) {
    U v = U(0);
    if (cur.s < g.S) {
      if (cur.w >= 0 && cur.w < g.W) v = xpix[cur.c * g.xs[1] + cur.w * g.xs[4]];
      if (++cur.c == g.C) cur.c = 0, ++cur.s, cur.w += g.dil_w;
    }
    out[e] = v;
  }
}

SmallCGeom smallc_geom(const core::ConvProblem& p);

// The packed problem (xs, ws as above, the caller's y strides, math and compute types kept).
core::ConvProblem smallc_problem(const core::ConvProblem& p);

// Why the small-channel path does not take p (nullptr: it does), from the shape alone -- the
// device and math-type checks are the wgmma solver's, applied to smallc_problem(p), and the solver
// also leaves to tensorcore_wgmma what that one takes without a copy:
//   2-D, groups 1, a 16-bit or fp32 data type; S*C fits one reduction block (S*C <= 64 for 16-bit
//   data, 32 for fp32: more would multiply the copy without saving blocks); stride_h <= 8 (TMA
//   traversal stride); the packed x below 2^31 pixels.
const char* smallc_shape_reason(const core::ConvProblem& p);

// Workspace: xs, then ws at a 256-byte boundary, plus 256 bytes so that any caller pointer can be
// aligned up to 256 (TMA needs 16-byte aligned tensors).
constexpr size_t kSmallCAlign = 256;
size_t smallc_x_bytes(const core::ConvProblem& p);
size_t smallc_w_bytes(const core::ConvProblem& p);
size_t smallc_workspace_bytes(const core::ConvProblem& p);

}  // namespace jhdnn::conv::tensorcore

#undef JHDNN_SMALLC_FN
