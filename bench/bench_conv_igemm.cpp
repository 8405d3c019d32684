// Google Benchmark: jhDNN's IMPLICIT_GEMM / IMPLICIT_PRECOMP_GEMM solvers against cuDNN's same
// algorithms and cuDNN's fastest FMA-math algorithm, fp32 data, on ResNet-50 (batch 32) and VGG-16
// (batch 16), measured in one process. This is the measurement issue 4's targets are stated in:
//   - each of our algorithms 0, 1 >= 1.0x cuDNN's same algorithm (geometric mean over the layers);
//   - our best of the two per layer >= 0.8x cuDNN's best FMA algorithm (geometric mean).
//
// Every configuration runs with FMA math on the cuDNN side (no TF32): the fixed-algorithm entries
// set CUDNN_FMA_MATH on the descriptor; "cudnn_best_fma" takes cudnnFindConvolutionForwardAlgorithmEx's
// fastest entry whose math type is CUDNN_FMA_MATH (FFT, FFT_TILING and WINOGRAD included: they are
// fp32 algorithms; with a 4 GiB workspace).
//
// Runtime: inputs are filled on the device and shared by the five entries of a configuration, so
// the host does little; 32 layers x 2 layouts x 6 entries take about 30-45 s on an H200.
//
// GPU time from CUDA events around each run (manual time), L2 flushed before each run outside the
// timed region. Names: igemm/<layer>/f32_<layout>/<impl>, impl one of implicit_gemm,
// implicit_precomp_gemm, implicit_precomp_gemm_per_element (PRECOMP with its per-element table
// forced: the round-1 design, for comparison), cudnn_IMPLICIT_GEMM, cudnn_IMPLICIT_PRECOMP_GEMM,
// cudnn_best_fma.
// Example: bench_conv_igemm --benchmark_filter='rn50.*nchw' --benchmark_format=csv
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"
#include "conv/implicit_gemm/implicit_gemm.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

constexpr size_t kFindWorkspace = size_t(4) << 30;  // 4 GiB

using benchutil::Gpu;

Gpu& gpu() { return benchutil::shared_gpu(benchutil::kCudnn); }

// cudnn_best_fma's FindEx workspace, allocated on first use.
DeviceBuffer& find_workspace() {
  static DeviceBuffer ws(kFindWorkspace, 0);
  return ws;
}

// Fills a device buffer with random floats in [-1, 1): a 2^16-value block generated on the host,
// uploaded once, then doubled in place on the device (a few D2D copies instead of a host fill of
// up to 51M values per buffer, which made the whole binary host-bound).
void fill_device_random(DeviceBuffer& b, uint64_t seed) {
  const size_t n = b.bytes() / sizeof(float);
  if (n == 0) return;
  std::vector<float> block(std::min<size_t>(n, size_t(1) << 16));
  SplitMix64 g(seed);
  for (float& v : block) v = float(2.0 * g.uniform() - 1.0);
  b.upload(block.data(), block.size() * sizeof(float), 0);
  benchutil::repeat_block(b, block.size() * sizeof(float));
}

// Inputs of one configuration (FLOAT), random in [-1, 1).
struct Inputs {
  DeviceBuffer x, w, y;
  explicit Inputs(const core::ConvProblem& p) {
    x = DeviceBuffer(size_t(p.x_span()) * sizeof(float), 0);
    w = DeviceBuffer(size_t(p.w_span()) * sizeof(float), 0);
    y = DeviceBuffer(size_t(p.y_span()) * sizeof(float), 0);
    fill_device_random(x, 1);
    fill_device_random(w, 2);
  }
};

// The five entries of one (layer, layout) run back to back (registration order) and share one
// set of inputs: only the most recent configuration's buffers are kept.
Inputs& inputs_for(const core::ConvProblem& p) {
  static benchutil::KeepLast<Inputs> last;
  return last.get(p.key(), [&] { return std::make_unique<Inputs>(p); });
}

// implicit_precomp_gemm with its per-element table forced (the round-1 design) for the lifetime
// of the object: the "implicit_precomp_gemm_per_element" entries, an A/B against the per-tap table.
struct PerElementTable {
  explicit PerElementTable(bool on) : on_(on) {
    if (on_) conv::igemm::set_precomp_per_element_table(true);
  }
  ~PerElementTable() {
    if (on_) conv::igemm::set_precomp_per_element_table(false);
  }
  bool on_;
};

struct Ours {
  const conv::ConvSolver* solver;
  bool per_element;  // implicit_precomp_gemm only
};

void bench_ours(benchmark::State& st, core::ConvProblem p, Ours which) {
  Gpu& g = gpu();
  const conv::ConvSolver* s = which.solver;
  const PerElementTable force(which.per_element);
  const conv::Verdict v = s->can_implement(p, g.dev);
  if (!v.ok) {
    st.SkipWithError(v.reason);
    return;
  }
  Inputs& in = inputs_for(p);
  DeviceBuffer ws(s->workspace_bytes(p), 0);
  const conv::ConvArgs args{in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0};
  if (!benchutil::first_run_ok(st, *s, p, args, in.y, ws, g)) return;
  benchutil::timed_loop(st, g, p.flops(), [&] { benchutil::run_solver_or_throw(*s, p, args, ws, g); });
}

// cuDNN with a fixed algorithm (algo >= 0) or cudnnFind's fastest FMA-math one (algo < 0).
void bench_cudnn(benchmark::State& st, core::ConvProblem p, int algo) {
  Gpu& g = gpu();
  Inputs& in = inputs_for(p);
  CudnnConvDescs cd(p);
  CUDNN_CHECK(cudnnSetConvolutionMathType(cd.conv, CUDNN_FMA_MATH));
  cudnnConvolutionFwdAlgo_t a = cudnnConvolutionFwdAlgo_t(algo);
  if (algo < 0) {
    int max_count = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(g.cudnn(), &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
    int returned = 0;
    // FindEx on our buffers with one cached workspace: cudnnFind would allocate (and free) its
    // own x, w, y and workspaces on every layer. Algorithms needing more than kFindWorkspace are
    // left out of the choice.
    DeviceBuffer& find_ws = find_workspace();
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(g.cudnn(), cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, cd.y,
                                                       in.y.get(), int(perf.size()), &returned, perf.data(),
                                                       find_ws.get(), find_ws.bytes()));
    bool found = false;
    for (int i = 0; i < returned && !found; ++i)
      if (perf[size_t(i)].status == CUDNN_STATUS_SUCCESS && perf[size_t(i)].mathType == CUDNN_FMA_MATH)
        a = perf[size_t(i)].algo, found = true;
    if (!found) {
      st.SkipWithError("cuDNN: no FMA-math algorithm succeeded in cudnnFind");
      return;
    }
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd.conv, CUDNN_FMA_MATH));
  }
  size_t ws_bytes = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(g.cudnn(), cd.x, cd.w, cd.conv, cd.y, a, &ws_bytes);
  if (s != CUDNN_STATUS_SUCCESS) {
    st.SkipWithError((std::string("cuDNN workspace query: ") + cudnnGetErrorString(s)).c_str());
    return;
  }
  DeviceBuffer ws(ws_bytes, 0);
  const float one = 1.0f, zero = 0.0f;
  in.y.poison();
  s = cudnnConvolutionForward(g.cudnn(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, a, ws.get(), ws_bytes,
                              &zero, cd.y, in.y.get());
  g.stream.sync();
  if (s != CUDNN_STATUS_SUCCESS) {
    st.SkipWithError((std::string("cuDNN: ") + cudnnGetErrorString(s)).c_str());
    return;
  }
  if (!benchutil::all_finite(in.y, p.y_span(), p.dtype)) {
    st.SkipWithError("cuDNN left a non-finite output");
    return;
  }
  st.SetLabel(cudnn_algo_name(a));
  benchutil::timed_loop(st, g, p.flops(), [&] {
    CUDNN_CHECK(cudnnConvolutionForward(g.cudnn(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, a, ws.get(),
                                        ws_bytes, &zero, cd.y, in.y.get()));
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (!benchutil::usable_gpu("bench_conv_igemm")) return 1;
  std::vector<NamedProblem> layers = resnet50_layers(32);
  for (const NamedProblem& np : vgg16_layers(16)) layers.push_back(np);
  const conv::ConvSolver* ours[] = {&conv::implicit_gemm_solver(), &conv::implicit_precomp_gemm_solver()};
  for (const NamedProblem& np : layers) {
    for (bool nhwc : {false, true}) {
      core::ConvProblem p = with_layout(np.p, JHDNN_DATA_FLOAT, nhwc);
      p.math_type = JHDNN_FMA_MATH;
      const std::string base = "igemm/" + np.name + (nhwc ? "/f32_nhwc/" : "/f32_nchw/");
      auto reg = [&](const std::string& name, auto fn, auto arg) {
        benchutil::manual_time(benchmark::RegisterBenchmark((base + name).c_str(), fn, p, arg), 20);
      };
      for (const conv::ConvSolver* s : ours) reg(s->name(), bench_ours, Ours{s, false});
      reg("implicit_precomp_gemm_per_element", bench_ours, Ours{&conv::implicit_precomp_gemm_solver(), true});
      reg("cudnn_IMPLICIT_GEMM", bench_cudnn, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM));
      reg("cudnn_IMPLICIT_PRECOMP_GEMM", bench_cudnn, int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
      reg("cudnn_best_fma", bench_cudnn, -1);
    }
  }
  benchutil::run_benchmarks(&argc, argv);
  return 0;
}
