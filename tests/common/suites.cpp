#include "common/suites.h"

namespace jhdnn::test {
namespace {

// name, batch, C, H(=W), K, filter, stride, pad [, groups, dilation]
NamedProblem layer(const std::string& name, int n, int c, int hw, int k, int f, int stride, int pad, int groups = 1,
                   int dil = 1) {
  return {name, core::make_problem_2d(JHDNN_DATA_FLOAT, false, n, c, hw, hw, k, f, f, pad, pad, stride, stride, dil,
                                      dil, groups)};
}

}  // namespace

std::vector<NamedProblem> resnet50_layers(int n) {
  return {
      layer("rn50_conv1_7x7s2", n, 3, 224, 64, 7, 2, 3),
      layer("rn50_c2_1x1_64_64", n, 64, 56, 64, 1, 1, 0),
      layer("rn50_c2_3x3_64", n, 64, 56, 64, 3, 1, 1),
      layer("rn50_c2_1x1_64_256", n, 64, 56, 256, 1, 1, 0),
      layer("rn50_c2_1x1_256_64", n, 256, 56, 64, 1, 1, 0),
      layer("rn50_c3_1x1_256_128", n, 256, 56, 128, 1, 1, 0),
      layer("rn50_c3_3x3_128s2", n, 128, 56, 128, 3, 2, 1),
      layer("rn50_c3_ds_256_512s2", n, 256, 56, 512, 1, 2, 0),
      layer("rn50_c3_1x1_128_512", n, 128, 28, 512, 1, 1, 0),
      layer("rn50_c3_1x1_512_128", n, 512, 28, 128, 1, 1, 0),
      layer("rn50_c3_3x3_128", n, 128, 28, 128, 3, 1, 1),
      layer("rn50_c4_1x1_512_256", n, 512, 28, 256, 1, 1, 0),
      layer("rn50_c4_3x3_256s2", n, 256, 28, 256, 3, 2, 1),
      layer("rn50_c4_ds_512_1024s2", n, 512, 28, 1024, 1, 2, 0),
      layer("rn50_c4_1x1_256_1024", n, 256, 14, 1024, 1, 1, 0),
      layer("rn50_c4_1x1_1024_256", n, 1024, 14, 256, 1, 1, 0),
      layer("rn50_c4_3x3_256", n, 256, 14, 256, 3, 1, 1),
      layer("rn50_c5_1x1_1024_512", n, 1024, 14, 512, 1, 1, 0),
      layer("rn50_c5_3x3_512s2", n, 512, 14, 512, 3, 2, 1),
      layer("rn50_c5_ds_1024_2048s2", n, 1024, 14, 2048, 1, 2, 0),
      layer("rn50_c5_1x1_512_2048", n, 512, 7, 2048, 1, 1, 0),
      layer("rn50_c5_1x1_2048_512", n, 2048, 7, 512, 1, 1, 0),
      layer("rn50_c5_3x3_512", n, 512, 7, 512, 3, 1, 1),
  };
}

std::vector<NamedProblem> vgg16_layers(int n) {
  return {
      layer("vgg16_conv1_1", n, 3, 224, 64, 3, 1, 1),    layer("vgg16_conv1_2", n, 64, 224, 64, 3, 1, 1),
      layer("vgg16_conv2_1", n, 64, 112, 128, 3, 1, 1),  layer("vgg16_conv2_2", n, 128, 112, 128, 3, 1, 1),
      layer("vgg16_conv3_1", n, 128, 56, 256, 3, 1, 1),  layer("vgg16_conv3_2", n, 256, 56, 256, 3, 1, 1),
      layer("vgg16_conv4_1", n, 256, 28, 512, 3, 1, 1),  layer("vgg16_conv4_2", n, 512, 28, 512, 3, 1, 1),
      layer("vgg16_conv5_1", n, 512, 14, 512, 3, 1, 1),
  };
}

std::vector<NamedProblem> mobilenet_v2_layers(int n) {
  return {
      layer("mnv2_dw32_112", n, 32, 112, 32, 3, 1, 1, 32),
      layer("mnv2_pw32_16_112", n, 32, 112, 16, 1, 1, 0),
      layer("mnv2_pw16_96_112", n, 16, 112, 96, 1, 1, 0),
      layer("mnv2_dw96_112s2", n, 96, 112, 96, 3, 2, 1, 96),
      layer("mnv2_dw144_56", n, 144, 56, 144, 3, 1, 1, 144),
      layer("mnv2_pw144_24_56", n, 144, 56, 24, 1, 1, 0),
      layer("mnv2_dw144_56s2", n, 144, 56, 144, 3, 2, 1, 144),
      layer("mnv2_dw192_28", n, 192, 28, 192, 3, 1, 1, 192),
      layer("mnv2_pw192_32_28", n, 192, 28, 32, 1, 1, 0),
      layer("mnv2_dw384_14", n, 384, 14, 384, 3, 1, 1, 384),
      layer("mnv2_pw384_64_14", n, 384, 14, 64, 1, 1, 0),
      layer("mnv2_dw576_14s2", n, 576, 14, 576, 3, 2, 1, 576),
      layer("mnv2_dw960_7", n, 960, 7, 960, 3, 1, 1, 960),
      layer("mnv2_pw320_1280_7", n, 320, 7, 1280, 1, 1, 0),
  };
}

std::vector<NamedProblem> odd_layers() {
  return {
      layer("odd_prime_c13_k31_17", 8, 13, 17, 31, 3, 1, 1),
      layer("odd_5x5_s3_c61", 8, 61, 31, 64, 5, 3, 2),
      layer("odd_dil2_3x3", 8, 64, 29, 64, 3, 1, 2, 1, 2),
      layer("odd_alexnet_11x11s4", 8, 3, 227, 96, 11, 4, 0),
      layer("odd_groups32_3x3", 8, 256, 28, 256, 3, 1, 1, 32),
  };
}

std::vector<NamedProblem> default_bench_suite() {
  std::vector<NamedProblem> all;
  for (const auto& part : {resnet50_layers(32), vgg16_layers(16), mobilenet_v2_layers(32), odd_layers()})
    all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace jhdnn::test
