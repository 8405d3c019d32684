// A CPU model of the image-major resident path (spdnn_infer --layout image, session 47): every layer a resident call
// from layer 1, slices of consecutive list positions, a slice computing a layer while any of its images is alive,
// the survivors re-formed into new slices at each call boundary. It counts the work of a call schedule and prices it
// with per-slice costs measured in the traces (bench/results/4dd6c65/image-major/, trace_*_f0_b0.txt), so that a
// schedule or a kernel change can be predicted before it is built, and the model checked against measured rows.
//
//   spdnn_slice_model [--width 1024] [--layers 12] [--first 0] [--group 4] [--layer-ns 2050] [--load-ns 4620]
//                     [--write-ns 560] [--call-ns 0] [--ctas 264] [--seed 42]
//
// The images: the first 1200 official images scaled to the width, tiled to 60000 as spdnn_infer tiles them (an image
// survives a layer when its source image does: float64 CPU reference); N = 1024 runs the official network (layers
// <= 120, data/spdnn/neuron1024), other widths tools/spdnn's generated one. The calls: --first layers, then each 4
// times the one before (spdnn::resident_call_layers; 0: all layers in one call where they are <= 192, else 96).
// --group G: images per CTA (4: today's slices); a CTA computes ceil(live / 4) quads per layer, its live images
// packed into the first quads (G = 8 models a CTA of two quads compacting inside the call; G = 4 is today's kernel).
// The price of a call, two ways: model_ms = (quad-layers x layer + CTAs x load x G / 4 + CTAs with survivors x write)
// / ctas + call, every CTA's work spread evenly over the CTAs that run at once (the last wave's tail ignored); and
// greedy_ms = the makespan of the CTAs in list order, each started on the first of the `ctas` places to free up
// (the block scheduler's order for one CTA per slice), + call: the one to read where a call has few slices (the
// late calls: one wave, as long as its longest slice).
// Limit (session 48, bench/results/6fa90e0/): the costs are one CTA per slice's, measured with two CTAs per SM
// sharing it. A schedule that changes what runs beside a slice changes them too: --load-ns 500 --layer-ns 2214
// predicted staging the next slice at ~0.63 ms for N = 1024 layers 1-12; built, it took 0.94-0.99 ms (the load fell
// 4.5 -> 2.0 us, each layer rose 1.70 -> 2.11). Read its predictions for such schedules as bounds, not estimates.
// Survivors keep their list order at a boundary (on the GPU each slice's survivors stay together, the slices in the
// order their CTAs finish).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"
#include "spdnn/spdnn_gpu.h"

namespace {

constexpr int kImages = 60000, kDistinct = 1200, kQuad = 4;

struct Work {
  double quad_layers = 0, ctas = 0, writes = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const int64_t n = arg_int(argc, argv, "--width", 1024);
  const int layers = arg_int(argc, argv, "--layers", 12);
  const int first = arg_int(argc, argv, "--first", 0);
  const int group = arg_int(argc, argv, "--group", 4);
  const int layer_ns = arg_int(argc, argv, "--layer-ns", 2050), load_ns = arg_int(argc, argv, "--load-ns", 4620);
  const int write_ns = arg_int(argc, argv, "--write-ns", 560), call_ns = arg_int(argc, argv, "--call-ns", 0);
  const int ctas = arg_int(argc, argv, "--ctas", 264);
  const int seed = arg_int(argc, argv, "--seed", 42);
  bool challenge = false;
  spdnn::challenge_bias(n, &challenge);
  if (!challenge || layers < 1 || first < 0 || group < 1 || group % kQuad != 0 || layer_ns < 0 || load_ns < 0 ||
      write_ns < 0 || call_ns < 0 || ctas < 1 || seed < 0 || (n == 1024 && layers > 120)) {
    std::fprintf(stderr, "usage: spdnn_slice_model [--width 1024 (1024, 4096, 16384 or 65536)] [--layers 12 (<= 120 "
                         "at 1024)] [--first 0] [--group 4 (a multiple of 4)] [--layer-ns 2050] [--load-ns 4620] "
                         "[--write-ns 560] [--call-ns 0] [--ctas 264] [--seed 42]\n");
    return 2;
  }
  spdnn::Csr img;
  if (!spdnn::cli::read_first_images("spdnn_slice_model", &img)) return 1;
  std::string err;
  spdnn::CpuInference ref(n == 1024 ? img : spdnn::scale_images(img, n));
  const double bias = spdnn::challenge_bias(n);
  // alive[l][s]: source image s has a nonzero output after layer l (l = 0: every image)
  std::vector<std::vector<char>> alive(size_t(layers) + 1, std::vector<char>(kDistinct, 1));
  for (int l = 1; l <= layers; ++l) {
    spdnn::Csr w;
    if (n == 1024) {
      if (!spdnn::read_layer_tsv(spdnn::data_dir() + "/neuron1024/n1024-l" + std::to_string(l) + ".tsv", n, &w, &err)) {
        std::fprintf(stderr, "spdnn_slice_model: %s\n", err.c_str());
        return 1;
      }
    } else {
      w = spdnn::generate_layer(n, l, uint64_t(seed));
    }
    ref.layer(w, bias);
    for (int s = 0; s < kDistinct; ++s) alive[size_t(l)][size_t(s)] = !ref.rows()[size_t(s)].empty();
  }
  const std::vector<int> calls =
      spdnn::resident_call_layers(layers, first, JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS);
  std::printf("# N %lld L %d, 60000 images, %s network; calls", (long long)n, layers,
              n == 1024 ? "official" : "generated");
  for (int c : calls) std::printf(" %d", c);
  std::printf("; %d images per CTA; per quad-layer %d ns, per CTA load %d ns x group / 4, write %d ns, call %d ns, "
              "%d CTAs at once\n# call  first_layer  layers  entering  ctas  quad_layers  live_image_layers  "
              "slot_use  model_ms  greedy_ms\n",
              group, layer_ns, load_ns, write_ns, call_ns, ctas);
  std::vector<int> list(kImages);  // the entering list: source images, in list order
  for (int t = 0; t < kImages; ++t) list[size_t(t)] = t % kDistinct;
  double total_ms = 0, total_greedy_ms = 0, live_total = 0, quads_total = 0;
  int a = 1;  // the call's first layer
  for (size_t c = 0; c < calls.size(); ++c) {
    const int b = a + calls[c];  // layers a .. b - 1
    Work wk;
    double live_layers = 0;
    std::vector<int> next;
    // greedy: the places' free times (ns), the earliest on top
    std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
    for (int p = 0; p < ctas; ++p) free_at.push(0.0);
    double makespan = 0;
    for (size_t g0 = 0; g0 < list.size(); g0 += size_t(group)) {
      const size_t g1 = std::min(list.size(), g0 + size_t(group));
      wk.ctas += 1;
      double cta_quads = 0;
      for (int k = a; k < b; ++k) {  // layer k runs on the images alive entering it
        int live = 0;
        for (size_t t = g0; t < g1; ++t) live += alive[size_t(k - 1)][size_t(list[t])];
        if (live == 0) break;
        cta_quads += (live + kQuad - 1) / kQuad;
        live_layers += live;
      }
      wk.quad_layers += cta_quads;
      bool any = false;
      for (size_t t = g0; t < g1; ++t)
        if (alive[size_t(b - 1)][size_t(list[t])]) {
          next.push_back(list[t]);
          any = true;
        }
      wk.writes += any;
      const double start = free_at.top(), end = start + cta_quads * layer_ns + double(load_ns) * group / kQuad +
                                                 (any ? write_ns : 0);
      free_at.pop();
      free_at.push(end);
      makespan = std::max(makespan, end);
    }
    const double greedy_ms = makespan * 1e-6 + call_ns * 1e-6;
    const double ms = (wk.quad_layers * layer_ns + wk.ctas * load_ns * group / kQuad + wk.writes * write_ns) /
                          double(ctas) * 1e-6 +
                      call_ns * 1e-6;
    std::printf("%6zu %12d %7d %9zu %5.0f %12.0f %18.0f %9.3f %9.3f %10.3f\n", c, a, calls[c], list.size(), wk.ctas,
                wk.quad_layers, live_layers, wk.quad_layers > 0 ? live_layers / (kQuad * wk.quad_layers) : 0.0, ms,
                greedy_ms);
    total_ms += ms;
    total_greedy_ms += greedy_ms;
    live_total += live_layers;
    quads_total += wk.quad_layers;
    list.swap(next);
    a = b;
  }
  std::printf("# total %.3f ms (greedy %.3f); quad-layers %.0f, live image-layers %.0f (slot use %.3f)\n", total_ms,
              total_greedy_ms, quads_total, live_total, quads_total > 0 ? live_total / (kQuad * quads_total) : 0.0);
  return 0;
}
