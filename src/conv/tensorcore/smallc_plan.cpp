// Host-only planning of tensorcore_wgmma_smallc (see smallc.h and README.md, "Round 6").
#include "conv/tensorcore/smallc.h"

namespace jhdnn::conv::tensorcore {

namespace {

int64_t elem_size(jhdnnDataType_t dt) { return dt == JHDNN_DATA_FLOAT ? 4 : 2; }
int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
// Channels of the packed x: S*C rounded up to a 16-byte pixel.
int64_t packed_channels(const core::ConvProblem& p) { return round_up(p.S * p.C, 16 / elem_size(p.dtype)); }

}  // namespace

SmallCGeom smallc_geom(const core::ConvProblem& p) {
  SmallCGeom g{};
  g.N = p.N, g.C = p.C, g.H = p.H, g.W = p.W, g.K = p.K, g.R = p.R, g.S = p.S, g.Q = p.Q;
  g.Cs = packed_channels(p);
  g.pad_w = p.pad_w, g.str_w = p.stride_w, g.dil_w = p.dil_w, g.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  for (int i = 0; i < 5; ++i) g.xs[i] = p.x_stride[i], g.wst[i] = p.w_stride[i];
  return g;
}

core::ConvProblem smallc_problem(const core::ConvProblem& p) {
  core::ConvProblem q = core::make_problem_2d(p.dtype, /*nhwc=*/true, p.N, packed_channels(p), p.H, p.Q, p.K, p.R,
                                              /*S=*/1, p.pad_h, /*pad_w=*/0, p.stride_h, /*stride_w=*/1, p.dil_h,
                                              /*dil_w=*/1, /*G=*/1, JHDNN_CROSS_CORRELATION);
  q.compute_type = p.compute_type;
  q.math_type = p.math_type;
  for (int i = 0; i < 5; ++i) q.y_stride[i] = p.y_stride[i];
  return q;
}

const char* smallc_shape_reason(const core::ConvProblem& p) {
  if (p.dtype != JHDNN_DATA_HALF && p.dtype != JHDNN_DATA_BFLOAT16 && p.dtype != JHDNN_DATA_FLOAT)
    return "HALF, BFLOAT16 or FLOAT data only";
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1) return "2-D convolutions only";
  if (p.G != 1) return "groups are served by tensorcore_mma";
  if (p.N < 1 || p.C < 1 || p.H < 1 || p.W < 1 || p.K < 1 || p.R < 1 || p.S < 1 || p.P < 1 || p.Q < 1)
    return "empty problem";
  if (p.S * p.C * elem_size(p.dtype) > 128)
    return "S*C is more than one 128-byte reduction block (the packed copy would not save blocks)";
  if (p.stride_h > 8) return "TMA traversal strides are at most 8";
  if (p.N * p.H * p.Q >= (int64_t(1) << 31)) return "the packed x has 2^31 pixels or more";
  return nullptr;
}

size_t smallc_x_bytes(const core::ConvProblem& p) {
  return size_t(round_up(p.N * p.H * p.Q * packed_channels(p) * elem_size(p.dtype), int64_t(kSmallCAlign)));
}

size_t smallc_w_bytes(const core::ConvProblem& p) {
  return size_t(round_up(p.K * p.R * packed_channels(p) * elem_size(p.dtype), int64_t(kSmallCAlign)));
}

size_t smallc_workspace_bytes(const core::ConvProblem& p) { return smallc_x_bytes(p) + smallc_w_bytes(p) + kSmallCAlign; }

}  // namespace jhdnn::conv::tensorcore
