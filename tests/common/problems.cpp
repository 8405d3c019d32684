// The shared named problem set. See problems.h.
#include "common/problems.h"

#include <stdexcept>

namespace jhdnn::test {
namespace {

// Packed strides for logical dims {n, c, d, h, w}: channels second (NCDHW) or last (NDHWC).
void packed_strides(const int64_t d[5], bool channels_last, int64_t s[5]) {
  if (channels_last) {
    s[core::kC] = 1;
    s[core::kW] = d[core::kC];
    s[core::kH] = d[core::kW] * s[core::kW];
    s[core::kD] = d[core::kH] * s[core::kH];
    s[core::kN] = d[core::kD] * s[core::kD];
  } else {
    s[core::kW] = 1;
    s[core::kH] = d[core::kW];
    s[core::kD] = d[core::kH] * s[core::kH];
    s[core::kC] = d[core::kD] * s[core::kD];
    s[core::kN] = d[core::kC] * s[core::kC];
  }
}

// A 2-D entry: FLOAT, NCHW / KCRS. Arguments in the order of core::make_problem_2d.
struct Builder {
  std::vector<NamedProblem>& out;

  void add2d(const char* name, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S,
             int pad_h, int pad_w, int stride_h, int stride_w, int dil_h, int dil_w, int64_t G = 1,
             jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
    out.push_back({name, core::make_problem_2d(JHDNN_DATA_FLOAT, false, N, C, H, W, K, R, S, pad_h, pad_w,
                                               stride_h, stride_w, dil_h, dil_w, G, mode)});
  }
  // Square filter, same pad / stride / dilation in both dims.
  void sq(const char* name, int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t RS, int pad,
          int stride = 1, int dil = 1, int64_t G = 1, jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
    add2d(name, N, C, H, W, K, RS, RS, pad, pad, stride, stride, dil, dil, G, mode);
  }
  // A 3-D entry, written out field by field (make_problem_2d only does 2-D).
  void add3d(const char* name, int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t K, int64_t T,
             int64_t R, int64_t S, int pad_d, int pad_h, int pad_w, int stride_d, int stride_h, int stride_w,
             int dil_d, int dil_h, int dil_w, int64_t G = 1,
             jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
    core::ConvProblem p;
    p.dtype = JHDNN_DATA_FLOAT;
    p.compute_type = JHDNN_DATA_FLOAT;
    p.mode = mode;
    p.spatial_dims = 3;
    p.N = N, p.C = C, p.K = K, p.G = G;
    p.D = D, p.H = H, p.W = W;
    p.T = T, p.R = R, p.S = S;
    p.pad_d = pad_d, p.pad_h = pad_h, p.pad_w = pad_w;
    p.stride_d = stride_d, p.stride_h = stride_h, p.stride_w = stride_w;
    p.dil_d = dil_d, p.dil_h = dil_h, p.dil_w = dil_w;
    p.O = core::conv_out_size(D, T, pad_d, stride_d, dil_d);
    p.P = core::conv_out_size(H, R, pad_h, stride_h, dil_h);
    p.Q = core::conv_out_size(W, S, pad_w, stride_w, dil_w);
    out.push_back({name, with_layout(p, JHDNN_DATA_FLOAT, false)});
  }
};

constexpr jhdnnConvolutionMode_t kConv = JHDNN_CONVOLUTION;

}  // namespace

core::ConvProblem with_layout(const core::ConvProblem& p, jhdnnDataType_t dt, bool nhwc) {
  core::ConvProblem q = p;
  q.dtype = dt;
  q.compute_type = dt == JHDNN_DATA_DOUBLE ? JHDNN_DATA_DOUBLE : JHDNN_DATA_FLOAT;
  const int64_t dx[5] = {p.N, p.C, p.D, p.H, p.W};
  const int64_t dw[5] = {p.K, p.G > 0 ? p.C / p.G : 0, p.T, p.R, p.S};
  const int64_t dy[5] = {p.N, p.K, p.O, p.P, p.Q};
  packed_strides(dx, nhwc, q.x_stride);
  packed_strides(dw, nhwc, q.w_stride);
  packed_strides(dy, nhwc, q.y_stride);
  return q;
}

std::vector<NamedProblem> conv_problem_set() {
  std::vector<NamedProblem> v;
  Builder b{v};
  //   name                                   N     C    H    W     K  RS pad str dil  G

  // ResNet-50 v1.5 (stride on the 3x3), batch 2. Full-size 3x3 layers are ~0.46 GFLOP: reduced.
  b.sq("resnet50_conv1_7x7s2_s112",            2,    3, 112, 112,   64, 7, 3, 2);
  b.sq("resnet50_conv2_1x1_64_64",             2,   64,  56,  56,   64, 1, 0);
  b.sq("resnet50_conv2_3x3_s28",               2,   64,  28,  28,   64, 3, 1);
  b.sq("resnet50_conv2_1x1_64_256",            2,   64,  56,  56,  256, 1, 0);
  b.sq("resnet50_conv2_1x1_256_64",            2,  256,  56,  56,   64, 1, 0);
  b.sq("resnet50_conv3_1x1_256_128_s28",       2,  256,  28,  28,  128, 1, 0);
  b.sq("resnet50_conv3_3x3s2_s28",             2,  128,  28,  28,  128, 3, 1, 2);
  b.sq("resnet50_conv3_3x3_s14",               2,  128,  14,  14,  128, 3, 1);
  b.sq("resnet50_conv3_1x1_128_512",           2,  128,  28,  28,  512, 1, 0);
  b.sq("resnet50_conv3_downsample_1x1s2_s28",  2,  256,  28,  28,  512, 1, 0, 2);
  b.sq("resnet50_conv4_1x1_512_256",           2,  512,  14,  14,  256, 1, 0);
  b.sq("resnet50_conv4_3x3_s7",                2,  256,   7,   7,  256, 3, 1);
  b.sq("resnet50_conv4_1x1_256_1024",          2,  256,  14,  14, 1024, 1, 0);
  b.sq("resnet50_conv4_1x1_1024_256",          2, 1024,  14,  14,  256, 1, 0);
  b.sq("resnet50_conv5_3x3_s4",                2,  512,   4,   4,  512, 3, 1);
  b.sq("resnet50_conv5_1x1_512_2048",          2,  512,   7,   7, 2048, 1, 0);
  b.sq("resnet50_conv5_1x1_2048_512",          2, 2048,   7,   7,  512, 1, 0);
  b.sq("resnet50_conv5_downsample_1x1s2_s8",   2, 1024,   8,   8, 2048, 1, 0, 2);

  // VGG-16, batch 1, spatial reduced (full layers are 1.8-3.7 GFLOP each).
  b.sq("vgg16_conv1_1_s112",                   1,    3, 112, 112,   64, 3, 1);
  b.sq("vgg16_conv1_2_s28",                    1,   64,  28,  28,   64, 3, 1);
  b.sq("vgg16_conv2_1_s28",                    1,   64,  28,  28,  128, 3, 1);
  b.sq("vgg16_conv3_1_s14",                    1,  128,  14,  14,  256, 3, 1);
  b.sq("vgg16_conv3_2_s14",                    1,  256,  14,  14,  256, 3, 1);
  b.sq("vgg16_conv4_1_s7",                     1,  256,   7,   7,  512, 3, 1);
  b.sq("vgg16_conv5_1_s7",                     1,  512,   7,   7,  512, 3, 1);

  // MobileNetV2 (and V1's widest pointwise), batch 2: depthwise 3x3 s1 / s2 and pointwise 1x1.
  b.sq("mobilenetv2_dw3x3_s1_c32_112",         2,   32, 112, 112,   32, 3, 1, 1, 1,  32);
  b.sq("mobilenetv2_dw3x3_s2_c96_112",         2,   96, 112, 112,   96, 3, 1, 2, 1,  96);
  b.sq("mobilenetv2_dw3x3_s1_c144_56",         2,  144,  56,  56,  144, 3, 1, 1, 1, 144);
  b.sq("mobilenetv2_dw3x3_s2_c144_56",         2,  144,  56,  56,  144, 3, 1, 2, 1, 144);
  b.sq("mobilenetv2_dw3x3_s1_c960_7",          2,  960,   7,   7,  960, 3, 1, 1, 1, 960);
  b.sq("mobilenetv2_pw_32_16_112",             2,   32, 112, 112,   16, 1, 0);
  b.sq("mobilenetv2_pw_16_96_112",             2,   16, 112, 112,   96, 1, 0);
  b.sq("mobilenetv2_pw_144_24_56",             2,  144,  56,  56,   24, 1, 0);
  b.sq("mobilenetv2_pw_960_160_7",             2,  960,   7,   7,  160, 1, 0);
  b.sq("mobilenetv1_pw_1024_1024_7",           2, 1024,   7,   7, 1024, 1, 0);

  // AlexNet conv1 (torchvision: 224, pad 2, 64 filters; original: 227, no pad, 96) and conv2.
  b.sq("alexnet_conv1_11x11s4_p2",             1,    3, 224, 224,   64, 11, 2, 4);
  b.sq("alexnet_conv1_11x11s4_227",            1,    3, 227, 227,   96, 11, 0, 4);
  b.sq("alexnet_conv2_5x5_s13",                1,   64,  13,  13,  192, 5, 2);

  // Tiny and odd spatial sizes, batch 1 and odd batches.
  b.sq("tiny_h1w1_3x3_p1",                     1,   16,   1,   1,   16, 3, 1);
  b.sq("tiny_h2w2_3x3_p1_c4_k6",               1,    4,   2,   2,    6, 3, 1);
  b.sq("odd_h3w3_3x3_p0_fc_like",              1,    8,   3,   3,    4, 3, 0);
  b.sq("odd_h5w5_3x3_p1_c7_k5",                1,    7,   5,   5,    5, 3, 1);
  b.sq("odd_h7w7_3x3_p1_c13_k31",              3,   13,   7,   7,   31, 3, 1);
  b.sq("fc_like_7x7_h7_c64_k64",               2,   64,   7,   7,   64, 7, 0);
  b.sq("prime_h13_3x3_p1_c3_k5_n3",            3,    3,  13,  13,    5, 3, 1);
  b.sq("prime_h17_3x3_p1_c31_k61",             1,   31,  17,  17,   61, 3, 1);
  b.sq("prime_h31_5x5_p2_c61_k13",             1,   61,  31,  31,   13, 5, 2);
  b.add2d("prime_h13w17_1x1_c5_k7",            5,    5,  13,  17,    7, 1, 1, 0, 0, 1, 1, 1, 1);
  b.sq("prime_h31_3x3_p1_c7_k3_n5",            5,    7,  31,  31,    3, 3, 1);

  // Strides 2, 3, 4 (including filters smaller than the stride, which skip input pixels).
  b.sq("stride2_3x3_p1_h15_c16_k32",           2,   16,  15,  15,   32, 3, 1, 2);
  b.sq("stride2_3x3_p0_h14_c8_k8",             1,    8,  14,  14,    8, 3, 0, 2);
  b.sq("stride3_3x3_p0_h17_c8_k8",             2,    8,  17,  17,    8, 3, 0, 3);
  b.add2d("stride3_5x5_p2_h20w23_c6_k10",      1,    6,  20,  23,   10, 5, 5, 2, 2, 3, 3, 1, 1);
  b.sq("stride4_4x4_p0_h16_c3_k16_patchify",   2,    3,  16,  16,   16, 4, 0, 4);
  b.sq("stride4_3x3_p1_h21_c5_k7",             1,    5,  21,  21,    7, 3, 1, 4);
  b.add2d("stride_h1w2_3x3_p1_h12w16",         1,    8,  12,  16,   12, 3, 3, 1, 1, 1, 2, 1, 1);

  // Dilation 2 and 3 (alone, with stride, per-dim different).
  b.sq("dil2_3x3_p2_h28_c32_k32",              2,   32,  28,  28,   32, 3, 2, 1, 2);
  b.sq("dil3_3x3_p3_h19_c16_k16",              1,   16,  19,  19,   16, 3, 3, 1, 3);
  b.sq("dil2_s2_3x3_p2_h29_c8_k12",            2,    8,  29,  29,   12, 3, 2, 2, 2);
  b.add2d("dil2_5x5_p0_h24w20_c4_k8",          1,    4,  24,  20,    8, 5, 5, 0, 0, 1, 1, 2, 2);
  b.add2d("dil_h2w3_3x3_p2_3_h15w16",          1,   12,  15,  16,   10, 3, 3, 2, 3, 1, 1, 2, 3);

  // Groups: 2, 3 (prime channels per group), 4, 32 (ResNeXt), depthwise, depth multiplier 2.
  b.sq("groups2_3x3_c64_k128_h14",             2,   64,  14,  14,  128, 3, 1, 1, 1,   2);
  b.sq("groups3_3x3_c21_k15_h11",              1,   21,  11,  11,   15, 3, 1, 1, 1,   3);
  b.sq("groups4_1x1_c32_k64_h9",               2,   32,   9,   9,   64, 1, 0, 1, 1,   4);
  b.sq("groups32_resnext_3x3_c256_h14",        2,  256,  14,  14,  256, 3, 1, 1, 1,  32);
  b.sq("groups32_resnext_3x3s2_c256_h28",      1,  256,  28,  28,  256, 3, 1, 2, 1,  32);
  b.sq("depthwise_5x5_p2_c24_h17",             2,   24,  17,  17,   24, 5, 2, 1, 1,  24);
  b.sq("depthwise_7x7_p3_c13_h19",             1,   13,  19,  19,   13, 7, 3, 1, 1,  13);
  b.sq("depthwise_mult2_3x3_c16_k32_h10",      2,   16,  10,  10,   32, 3, 1, 1, 1,  16);
  b.sq("depthwise_3x3_dil2_s2_c8_h23",         1,    8,  23,  23,    8, 3, 2, 2, 2,   8);

  // Filter sizes 5x5, 7x7, 11x11 and non-square filters (Inception 1x7 / 7x1, 3x5).
  b.sq("filt5x5_p2_h27_c32_k64",               1,   32,  27,  27,   64, 5, 2);
  b.sq("filt7x7_p3_h23_c16_k32",               2,   16,  23,  23,   32, 7, 3);
  b.sq("filt11x11_p5_h20_c4_k8",               1,    4,  20,  20,    8, 11, 5);
  b.add2d("inception_1x7_p0_3_h17_c32_k48",    2,   32,  17,  17,   48, 1, 7, 0, 3, 1, 1, 1, 1);
  b.add2d("inception_7x1_p3_0_h17_c48_k32",    2,   48,  17,  17,   32, 7, 1, 3, 0, 1, 1, 1, 1);
  b.add2d("filt3x5_p1_2_h12w20_c16_k24",       1,   16,  12,  20,   24, 3, 5, 1, 2, 1, 1, 1, 1);

  // Non-square images.
  b.add2d("nonsquare_h9w33_3x3_p1_c8_k8",      2,    8,   9,  33,    8, 3, 3, 1, 1, 1, 1, 1, 1);
  b.add2d("nonsquare_h40w6_3x3_p1_c6_k10",     1,    6,  40,   6,   10, 3, 3, 1, 1, 1, 1, 1, 1);

  // Padding larger than the filter needs (outputs that see only padding).
  b.sq("pad3_3x3_h8_c8_k8",                    1,    8,   8,   8,    8, 3, 3);
  b.sq("pad2_1x1_h6_c5_k4",                    2,    5,   6,   6,    4, 1, 2);
  b.add2d("pad4_5x5_s2_h9w7_c4_k6",            1,    4,   9,   7,    6, 5, 5, 4, 4, 2, 2, 1, 1);

  // Channel extremes and tile edges (sizes that are not multiples of any tile).
  b.sq("c1_k1_3x3_p1_h16",                     2,    1,  16,  16,    1, 3, 1);
  b.sq("c3_k256_3x3_p1_h14",                   1,    3,  14,  14,  256, 3, 1);
  b.sq("c512_k3_1x1_h8",                       2,  512,   8,   8,    3, 1, 0);
  b.sq("tile_edge_3x3_p1_h30_c32_k32",         2,   32,  30,  30,   32, 3, 1);
  b.sq("tile_edge_3x3_p1_h58_c16_k16",         1,   16,  58,  58,   16, 3, 1);
  b.sq("batch8_3x3_p1_h8_c16_k16",             8,   16,   8,   8,   16, 3, 1);
  b.sq("batch5_3x3_p0_h9_c12_k20",             5,   12,   9,   9,   20, 3, 0);

  // CONVOLUTION mode (filter flipped): plain, non-square filter with stride, dilation + groups,
  // depthwise.
  b.add2d("convmode_3x3_p1_h10w12_c6_k5",      2,    6,  10,  12,    5, 3, 3, 1, 1, 1, 1, 1, 1, 1, kConv);
  b.add2d("convmode_5x3_p2_1_s2_h15w11_c4_k6", 1,    4,  15,  11,    6, 5, 3, 2, 1, 2, 2, 1, 1, 1, kConv);
  b.add2d("convmode_dil2_g2_3x3_h13_c8_k8",    1,    8,  13,  13,    8, 3, 3, 2, 2, 1, 1, 2, 2, 2, kConv);
  b.add2d("convmode_depthwise_3x3_c16_h14",    2,   16,  14,  14,   16, 3, 3, 1, 1, 1, 1, 1, 1, 16, kConv);

  // 3-D (NCDHW / KCTRS).
  //        name                               N  C  D  H   W   K  T  R  S  pad     stride   dil
  b.add3d("conv3d_c3d_3x3x3_p1_d8_h14",        1, 3, 8, 14, 14, 16, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
  b.add3d("conv3d_s2_1_2_dil2_1_1_d9_h11w10",  2, 8, 9, 11, 10, 12, 3, 3, 3, 2, 1, 1, 2, 1, 2, 2, 1, 1);
  b.add3d("conv3d_convmode_g2_2x3x3_d5_h6w7",  1, 8, 5,  6,  7,  8, 2, 3, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2,
          kConv);
  b.add3d("conv3d_t1_1x3x3_d4_h9",             2, 6, 4,  9,  9,  6, 1, 3, 3, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  return v;
}

NamedProblem find_problem(const std::string& name) {
  for (auto& np : conv_problem_set())
    if (np.name == name) return np;
  throw std::out_of_range("no problem named " + name + " in conv_problem_set()");
}

core::ConvProblem float_2d(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int pad,
                           int stride, int dil, int64_t G, jhdnnConvolutionMode_t mode) {
  return core::make_problem_2d(JHDNN_DATA_FLOAT, false, N, C, H, W, K, R, S, pad, pad, stride, stride, dil, dil, G,
                               mode);
}

}  // namespace jhdnn::test
