#include "common/suites.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/problem_string.h"

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

std::vector<NamedProblem> parse_suite_text(const std::string& text, const std::string& origin) {
  std::string stem = origin.substr(origin.find_last_of('/') + 1);
  stem = stem.substr(0, stem.find('.'));
  std::vector<NamedProblem> out;
  std::istringstream in(text);
  std::string line;
  for (int lineno = 1; std::getline(in, line); ++lineno) {
    line = line.substr(0, line.find('#'));
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    line = line.substr(a, line.find_last_not_of(" \t\r") + 1 - a);
    NamedProblem np;
    const core::Status st = core::parse_problem_string(line, &np.p, &np.name);
    if (!st.ok()) throw std::runtime_error(origin + ":" + std::to_string(lineno) + ": " + st.message);
    if (np.name.empty()) np.name = stem + "_l" + std::to_string(lineno);
    out.push_back(np);
  }
  return out;
}

std::vector<NamedProblem> load_suite_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open suite file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_suite_text(ss.str(), path);
}

std::vector<NamedProblem> named_suite(const std::string& name, int mb) {
  if (name == "default" || name == "resnet50" || name == "vgg16" || name == "mobilenet" || name == "odd") {
    if (name == "resnet50") return resnet50_layers(mb > 0 ? mb : 32);
    if (name == "vgg16") return vgg16_layers(mb > 0 ? mb : 16);
    if (name == "mobilenet") return mobilenet_v2_layers(mb > 0 ? mb : 32);
    if (name == "odd") return odd_layers();
    return default_bench_suite();
  }
  if (name.find('/') == std::string::npos && name.find('.') == std::string::npos)
    throw std::runtime_error("unknown suite '" + name +
                             "' (default, resnet50, vgg16, mobilenet, odd, or a path such as bench/suites/public-nets.txt)");
  return load_suite_file(name);
}

}  // namespace jhdnn::test
