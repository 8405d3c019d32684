// Would a layer that does not sum in the library's fp32 chain order still give the challenge's exact categories?
// (CPU only; session 48, docs/perf-notes.md "Where the head could go next".) A tensor-core layer sums each block of
// products in the hardware's order and may round the features first; every path of the library today is bit for
// bit the fp32 chain (acc = fma(w, x, acc) over a row's entries in stored order). This runs the whole network on
// the first 1200 images with the chain and with models of other orders and roundings, and compares each with the
// chain layer by layer and with the truth (the float64 reference's categories; at N = 1024 L = 120 checked to be the
// official ones):
//   chain    the library's fp32 chain (must give the truth);
//   double   each output's sum exact (double), rounded once to fp32, then + bias in fp32;
//   bf16x3   each feature split into three bf16 pieces (exact for the challenge's values), per block of 16 entries in
//            stored order and per piece the block's products summed exactly and rounded to fp32, added to an fp32
//            accumulator in the order block 0 hi, mid, lo, block 1 hi, ... (spdnn_blockell_probe's MMA order; the
//            hardware's own rounding inside a block is not modelled);
//   tf32     features rounded to TF32 (10 significant bits, nearest) then as bf16x3 with one piece;
//   bf16     features rounded to bf16 (8 significant bits) then one piece.
// Prints, per model: the layer where a feature first differs from the chain's, how many (image, layer) rows differ,
// the survivors after the last layer, and whether their categories are the truth's; and the chain's margins: the
// smallest largest-output of an image that lived on, the largest largest-pre-activation of an image that died (how
// far a sum must move to flip a survivor).
//
//   spdnn_order_model [--width 1024] [--layers 120]
// N = 1024 reads the official network (data/spdnn/neuron1024, layers <= 120); other widths the generator's (seed
// 42). The weights must be bf16 values for the piece models (the challenge's 1/16 is).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

namespace {

enum class Model { kChain, kDouble, kBf16x3, kTf32, kBf16 };
constexpr Model kModels[] = {Model::kChain, Model::kDouble, Model::kBf16x3, Model::kTf32, Model::kBf16};
const char* name(Model m) {
  switch (m) {
    case Model::kChain: return "chain";
    case Model::kDouble: return "double";
    case Model::kBf16x3: return "bf16x3";
    case Model::kTf32: return "tf32";
    case Model::kBf16: return "bf16";
  }
  return "?";
}

// x rounded to nearest even keeping `bits` significant bits (bf16: 8, tf32: 11 with the implicit one; finite x).
float round_bits(float x, int bits) {
  uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  const int drop = 24 - bits;
  const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u = (u + half - 1 + lsb) & ~((1u << drop) - 1);
  float r = 0.f;
  std::memcpy(&r, &u, 4);
  return r;
}

// Output j of the ELL row under a model, from the dense fp32 input x.
float output(Model m, const spdnn::Ell& e, int64_t j, const std::vector<float>& x, float bias, float* pre) {
  const int* idx = &e.idx[size_t(j * e.width)];
  const float* val = &e.val[size_t(j * e.width)];
  float acc = 0.f;
  if (m == Model::kChain) {
    for (int64_t k = 0; k < e.width; ++k) acc = std::fma(val[k], idx[k] >= 0 ? x[size_t(idx[k])] : 0.f, acc);
  } else if (m == Model::kDouble) {
    double s = 0.0;
    for (int64_t k = 0; k < e.width; ++k) s += double(val[k]) * (idx[k] >= 0 ? double(x[size_t(idx[k])]) : 0.0);
    acc = float(s);
  } else {
    const int pieces = m == Model::kBf16x3 ? 3 : 1;
    for (int64_t b0 = 0; b0 < e.width; b0 += 16) {
      double part[3] = {0.0, 0.0, 0.0};
      for (int64_t k = b0; k < std::min<int64_t>(b0 + 16, e.width); ++k) {
        const float v = idx[k] >= 0 ? x[size_t(idx[k])] : 0.f;
        float p[3] = {0.f, 0.f, 0.f};
        if (m == Model::kBf16x3) {
          p[0] = round_bits(v, 8);
          p[1] = round_bits(v - p[0], 8);
          p[2] = round_bits(v - p[0] - p[1], 8);
        } else {
          p[0] = round_bits(v, m == Model::kTf32 ? 11 : 8);
        }
        for (int q = 0; q < pieces; ++q) part[q] += double(val[k]) * double(p[q]);
      }
      for (int q = 0; q < pieces; ++q) acc = acc + float(part[q]);
    }
  }
  *pre = acc + bias;  // before the ReLU
  return std::fmin(std::fmax(acc + bias, 0.f), 32.f);
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const int64_t n = arg_int(argc, argv, "--width", 1024);
  const int layers = arg_int(argc, argv, "--layers", 120);
  bool challenge = false;
  const float bias = spdnn::challenge_bias(n, &challenge);
  if (!challenge || layers < 1 || (n == 1024 && layers > 120)) {
    std::fprintf(stderr, "usage: spdnn_order_model [--width 1024 | 4096 | 16384 | 65536] [--layers 120 (<= 120 at "
                         "1024)]\n");
    return 2;
  }
  spdnn::Csr img;
  if (!spdnn::cli::read_first_images("spdnn_order_model", &img)) return 1;
  const spdnn::Csr src = n == 1024 ? img : spdnn::scale_images(img, n);
  std::vector<spdnn::Ell> net;
  spdnn::CpuInference ref(src);  // the float64 reference: the truth where no official categories apply
  for (int l = 1; l <= layers; ++l) {
    spdnn::Csr w;
    if (n == 1024) {
      std::string err;
      if (!spdnn::read_layer_tsv(spdnn::data_dir() + "/neuron1024/n1024-l" + std::to_string(l) + ".tsv", n, &w,
                                 &err)) {
        std::fprintf(stderr, "spdnn_order_model: %s\n", err.c_str());
        return 1;
      }
    } else {
      w = spdnn::generate_layer(n, l, 42);
    }
    ref.layer(w, bias);
    net.push_back(spdnn::transpose_to_ell(w));
    for (const float v : net.back().val)
      if (round_bits(v, 8) != v) {
        std::fprintf(stderr, "spdnn_order_model: layer %d has a weight (%g) that is not a bf16 value\n", l, double(v));
        return 2;
      }
  }
  std::vector<int> truth = ref.categories();
  bool official = false;
  if (n == 1024 && layers == 120) {  // and the official categories, which the reference must give
    std::vector<int> cats;
    std::string err;
    if (!spdnn::read_categories(spdnn::data_dir() + "/neuron1024-l120-categories-first1200.tsv", 1200, &cats, &err)) {
      std::fprintf(stderr, "spdnn_order_model: %s\n", err.c_str());
      return 1;
    }
    if (cats != truth) {
      std::fprintf(stderr, "spdnn_order_model: the float64 reference does not give the official categories\n");
      return 1;
    }
    official = true;
  }
  const int64_t images = src.rows;
  // Every model's features, layer by layer (dense rows; a dead image stays dead), against the chain's.
  std::vector<std::vector<std::vector<float>>> feat(std::size(kModels));
  for (auto& f : feat) {
    f.assign(size_t(images), std::vector<float>(size_t(n), 0.f));
    for (int64_t s = 0; s < images; ++s)
      for (int64_t p = src.ptr[size_t(s)]; p < src.ptr[size_t(s) + 1]; ++p)
        f[size_t(s)][size_t(src.idx[size_t(p)])] = src.val[size_t(p)];
  }
  std::vector<std::vector<char>> live(std::size(kModels), std::vector<char>(size_t(images), 1));
  std::vector<int> first_diff(std::size(kModels), 0);
  std::vector<long long> rows_diff(std::size(kModels), 0), flips(std::size(kModels), 0);
  std::vector<float> out(static_cast<size_t>(n));
  // Over every layer and image the chain computed: the smallest largest-output of an image that lived on, and the
  // largest largest-pre-activation of an image that died there (how far a perturbation must move a sum to flip it).
  float closest_keep = INFINITY, closest_end = -INFINITY;
  for (int l = 1; l <= layers; ++l) {
    const spdnn::Ell& e = net[size_t(l - 1)];
    for (size_t mi = 0; mi < std::size(kModels); ++mi)
      for (int64_t s = 0; s < images; ++s) {
        if (!live[mi][size_t(s)]) continue;
        bool any = false;
        float top = -INFINITY;  // the image's largest pre-activation: > 0 keeps it, <= 0 everywhere ends it
        for (int64_t j = 0; j < n; ++j) {
          float pre = 0.f;
          out[size_t(j)] = output(kModels[mi], e, j, feat[mi][size_t(s)], bias, &pre);
          any = any || out[size_t(j)] != 0.f;
          top = std::fmax(top, pre);
        }
        if (mi == 0) {  // the chain: how near an image came to the other side of the ReLU
          if (any) closest_keep = std::fmin(closest_keep, top);
          else closest_end = std::fmax(closest_end, top);
        }
        feat[mi][size_t(s)].swap(out);
        live[mi][size_t(s)] = any ? 1 : 0;
      }
    for (size_t mi = 1; mi < std::size(kModels); ++mi)
      for (int64_t s = 0; s < images; ++s)
        if (live[mi][size_t(s)] != live[0][size_t(s)] ||
            (live[0][size_t(s)] && feat[mi][size_t(s)] != feat[0][size_t(s)])) {
          flips[mi] += live[mi][size_t(s)] != live[0][size_t(s)];
          ++rows_diff[mi];
          if (first_diff[mi] == 0) first_diff[mi] = l;
        }
  }
  std::printf("# N %lld, %lld images, %d layers, truth: the float64 reference's %zu categories%s\n", (long long)n,
              (long long)images, layers, truth.size(), official ? " (= the official ones)" : "");
  std::printf("# margins of the chain: an image lived on with its largest output %.6g (the smallest such), an image "
              "died with its largest pre-activation %.6g (the largest such)\n",
              double(closest_keep), double(closest_end));
  std::printf("# model  first_layer_differing  image_layer_rows_differing  of_which_alive_differs  survivors  "
              "categories\n");
  for (size_t mi = 0; mi < std::size(kModels); ++mi) {
    std::vector<int> cats;
    for (int64_t s = 0; s < images; ++s)
      if (live[mi][size_t(s)]) cats.push_back(int(s));
    std::printf("%-7s %3d %8lld %5lld %5zu %s\n", name(kModels[mi]), first_diff[mi], rows_diff[mi], flips[mi],
                cats.size(),
                cats == truth ? "exact" : "DIFFER");
  }
  return 0;
}
