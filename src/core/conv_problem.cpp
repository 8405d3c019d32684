#include "core/conv_problem.h"

#include <cstdio>

#include "core/status.h"

namespace jhdnn::core {
namespace {

// Strides of a packed tensor with logical dims d[5] = {n, c, d, h, w}: channels outermost after n
// (NCDHW) or innermost (NDHWC).
void packed(const int64_t d[5], bool channels_last, int64_t s[5]) {
  if (channels_last) {
    s[kC] = 1;
    s[kW] = d[kC];
    s[kH] = d[kW] * s[kW];
    s[kD] = d[kH] * s[kH];
    s[kN] = d[kD] * s[kD];
  } else {
    s[kW] = 1;
    s[kH] = d[kW];
    s[kD] = d[kH] * s[kH];
    s[kC] = d[kD] * s[kD];
    s[kN] = d[kC] * s[kC];
  }
}

bool is_packed(const int64_t d[5], const int64_t s[5], bool channels_last) {
  int64_t want[5];
  packed(d, channels_last, want);
  for (int i = 0; i < 5; ++i)
    if (d[i] > 1 && s[i] != want[i]) return false;  // a size-1 dim's stride never matters
  return true;
}

int64_t span(const int64_t d[5], const int64_t s[5]) {
  int64_t last = 0;
  for (int i = 0; i < 5; ++i) last += (d[i] - 1) * s[i];
  return last + 1;
}

}  // namespace

#define DIMS_X const int64_t dx[5] = {N, C, D, H, W}
#define DIMS_W const int64_t dw[5] = {K, C / G, T, R, S}
#define DIMS_Y const int64_t dy[5] = {N, K, O, P, Q}

bool ConvProblem::x_packed_nchw() const { DIMS_X; return is_packed(dx, x_stride, false); }
bool ConvProblem::x_packed_nhwc() const { DIMS_X; return is_packed(dx, x_stride, true); }
bool ConvProblem::y_packed_nchw() const { DIMS_Y; return is_packed(dy, y_stride, false); }
bool ConvProblem::y_packed_nhwc() const { DIMS_Y; return is_packed(dy, y_stride, true); }
bool ConvProblem::w_packed_kcrs() const { DIMS_W; return is_packed(dw, w_stride, false); }
bool ConvProblem::w_packed_krsc() const { DIMS_W; return is_packed(dw, w_stride, true); }
int64_t ConvProblem::x_span() const { DIMS_X; return span(dx, x_stride); }
int64_t ConvProblem::w_span() const { DIMS_W; return span(dw, w_stride); }
int64_t ConvProblem::y_span() const { DIMS_Y; return span(dy, y_stride); }

std::string ConvProblem::key() const {
  const char* dt = dtype == JHDNN_DATA_FLOAT    ? "f32"
                   : dtype == JHDNN_DATA_HALF   ? "f16"
                   : dtype == JHDNN_DATA_BFLOAT16 ? "bf16"
                   : dtype == JHDNN_DATA_DOUBLE ? "f64"
                                                : "unknown";
  const char* layout = x_packed_nhwc() && !x_packed_nchw() ? "nhwc" : x_packed_nchw() ? "nchw" : "strided";
  char buf[512];
  if (spatial_dims == 3) {
    std::snprintf(buf, sizeof buf,
                  "%s %s g%lldmb%lldic%lldid%lldih%lldiw%lldoc%lldod%lldoh%lldow%lldkd%lldkh%lldkw%lld"
                  "sd%dsh%dsw%dpd%dph%dpw%ddd%ddh%ddw%d%s",
                  dt, layout, (long long)G, (long long)N, (long long)C, (long long)D, (long long)H,
                  (long long)W, (long long)K, (long long)O, (long long)P, (long long)Q, (long long)T,
                  (long long)R, (long long)S, stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h,
                  dil_w, mode == JHDNN_CONVOLUTION ? " conv" : "");
  } else {
    // benchdnn spells dilation as (d - 1); we print the cuDNN value to avoid that trap.
    std::snprintf(buf, sizeof buf,
                  "%s %s g%lldmb%lldic%lldih%lldiw%lldoc%lldoh%lldow%lldkh%lldkw%lldsh%dsw%dph%dpw%ddh%ddw%d%s",
                  dt, layout, (long long)G, (long long)N, (long long)C, (long long)H, (long long)W,
                  (long long)K, (long long)P, (long long)Q, (long long)R, (long long)S, stride_h, stride_w,
                  pad_h, pad_w, dil_h, dil_w, mode == JHDNN_CONVOLUTION ? " conv" : "");
  }
  return buf;
}

ConvProblem make_problem_2d(jhdnnDataType_t dtype, bool nhwc, int64_t N, int64_t C, int64_t H, int64_t W,
                            int64_t K, int64_t R, int64_t S, int pad_h, int pad_w, int stride_h, int stride_w,
                            int dil_h, int dil_w, int64_t G, jhdnnConvolutionMode_t mode) {
  ConvProblem p;
  p.dtype = dtype;
  p.compute_type = dtype == JHDNN_DATA_DOUBLE ? JHDNN_DATA_DOUBLE : JHDNN_DATA_FLOAT;
  p.mode = mode;
  p.spatial_dims = 2;
  p.N = N, p.C = C, p.K = K, p.G = G;
  p.H = H, p.W = W, p.R = R, p.S = S;
  p.pad_h = pad_h, p.pad_w = pad_w;
  p.stride_h = stride_h, p.stride_w = stride_w;
  p.dil_h = dil_h, p.dil_w = dil_w;
  p.P = conv_out_size(H, R, pad_h, stride_h, dil_h);
  p.Q = conv_out_size(W, S, pad_w, stride_w, dil_w);
  const int64_t dx[5] = {N, C, 1, H, W};
  const int64_t dw[5] = {K, G > 0 ? C / G : 0, 1, R, S};
  const int64_t dy[5] = {N, K, 1, p.P, p.Q};
  packed(dx, nhwc, p.x_stride);
  packed(dw, nhwc, p.w_stride);
  packed(dy, nhwc, p.y_stride);
  return p;
}

}  // namespace jhdnn::core
