// Google Benchmark suite: each jhDNN solver, each cuDNN algorithm and cuDNN's fastest (by
// cudnnFind) on a layer suite, for people who compare with their own harness. The suite is
// jhdnn-bench's: --suite=default|resnet50|vgg16|mobilenet|odd|<file> (default: default), taken
// off the command line before Google Benchmark sees it; solvers come from conv::all_solvers().
//
// GPU time from CUDA events around each run (manual time), L2 flushed before each run outside the
// timed region. Counters: FLOP/s (2 * multiply-adds) and minimum bytes moved per second (x, w read
// once, y written once). Benchmark names: conv/<layer>/<type>_<layout>/<impl>, impl being a solver
// name, cudnn_<ALGO> or cudnn_best.
// --benchmark_filter selects, e.g. --benchmark_filter='rn50.*f16.*direct_tiled'.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

struct Gpu {
  JhdnnHandle jh;
  CudnnHandle ch;
  CudaStream stream;
  core::DeviceInfo dev;
  std::unique_ptr<DeviceBuffer> flush;
  Gpu() {
    if (!core::query_device(&dev).ok()) throw std::runtime_error("query_device failed");
    flush = std::make_unique<DeviceBuffer>(2 * dev.l2_bytes + (1 << 20), 0);
    CUDNN_CHECK(cudnnSetStream(ch.get(), stream.get()));
  }
};

Gpu& gpu() {
  static Gpu g;
  return g;
}

// Inputs of one configuration, random in [-1, 1].
struct Inputs {
  DeviceBuffer x, w, y;
  explicit Inputs(const core::ConvProblem& p) {
    const size_t es = dtype_size(p.dtype);
    std::vector<double> hx(p.x_span()), hw(p.w_span());
    fill_random(hx, p.dtype, 1);
    fill_random(hw, p.dtype, 2);
    x = DeviceBuffer(hx.size() * es, 0);
    w = DeviceBuffer(hw.size() * es, 0);
    y = DeviceBuffer(size_t(p.y_span()) * es, 0);
    x.upload(to_device_bytes(hx, p.dtype));
    w.upload(to_device_bytes(hw, p.dtype));
  }
};

// The inputs of the last problem: benchmarks of one problem are registered together, so each
// problem's (possibly 400 MB) host fill happens once, not once per algorithm.
Inputs& inputs_for(const core::ConvProblem& p) {
  static std::string key;
  static std::unique_ptr<Inputs> cached;
  if (!cached || key != p.key()) {
    cached.reset();
    cached = std::make_unique<Inputs>(p);
    key = p.key();
  }
  return *cached;
}

// Runs `run` under the benchmark loop with event timing; sets the counters.
template <class F>
void timed_loop(benchmark::State& st, const core::ConvProblem& p, F run) {
  Gpu& g = gpu();
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  run();  // warm-up
  for (auto _ : st) {
    CUDA_CHECK(cudaMemsetAsync(g.flush->get(), 0, g.flush->bytes(), g.stream.get()));
    CUDA_CHECK(cudaEventRecord(a, g.stream.get()));
    run();
    CUDA_CHECK(cudaEventRecord(b, g.stream.get()));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    st.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  const double es = double(dtype_size(p.dtype));
  st.counters["FLOP/s"] = benchmark::Counter(p.flops(), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["B/s"] = benchmark::Counter(es * double(p.x_elems() + p.w_elems() + p.y_elems()),
                                          benchmark::Counter::kIsIterationInvariantRate);
}

void bench_solver(benchmark::State& st, core::ConvProblem p, const conv::ConvSolver* s) {
  Gpu& g = gpu();
  const conv::Verdict v = s->can_implement(p, g.dev);
  if (!v.ok) {
    st.SkipWithError(v.reason);
    return;
  }
  Inputs& in = inputs_for(p);
  DeviceBuffer ws(s->workspace_bytes(p), 0);
  const conv::ConvArgs args{in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0, g.jh.get()};
  // Checked once before timing: y starts as NaN and every output must come back finite. (Values are
  // checked against cuDNN by jhdnn-bench and against the float64 reference by the tests.)
  in.y.poison();
  const core::Status first = conv::run_solver(*s, p, args, ws.get(), ws.bytes(), g.stream.get());
  g.stream.sync();
  if (!first.ok()) {
    st.SkipWithError(first.message.c_str());
    return;
  }
  const auto yb = in.y.download();
  for (double v : from_device_bytes(yb.data(), size_t(p.y_span()), p.dtype))
    if (!std::isfinite(v)) {
      st.SkipWithError("an output was not written (NaN poison left) or is not finite");
      return;
    }
  timed_loop(st, p, [&] {
    const core::Status r = conv::run_solver(*s, p, args, ws.get(), ws.bytes(), g.stream.get());
    if (!r.ok()) throw std::runtime_error(r.message);
  });
}

void bench_cudnn(benchmark::State& st, core::ConvProblem p) {
  Gpu& g = gpu();
  Inputs& in = inputs_for(p);
  CudnnConvDescs cd(p);
  DeviceBuffer ws;
  // cudnnFind picks the algorithm (and its math type); the benchmark then times that one.
  CudnnRun pick = cudnn_best_forward(g.ch.get(), cd, in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0, CudnnPick::kFind, &ws);
  if (!pick.ok()) {
    st.SkipWithError(("cuDNN: " + pick.log).c_str());
    return;
  }
  CUDNN_CHECK(cudnnSetConvolutionMathType(cd.conv, pick.math));
  const float one = 1.0f, zero = 0.0f;
  st.SetLabel(cudnn_algo_name(pick.algo));
  timed_loop(st, p, [&] {
    CUDNN_CHECK(cudnnConvolutionForward(g.ch.get(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, pick.algo,
                                        ws.get(), pick.workspace_bytes, &zero, cd.y, in.y.get()));
  });
}

// One cuDNN algorithm, as cuDNN runs it under the problem's math type.
void bench_cudnn_algo(benchmark::State& st, core::ConvProblem p, cudnnConvolutionFwdAlgo_t algo) {
  Gpu& g = gpu();
  Inputs& in = inputs_for(p);
  CudnnConvDescs cd(p);
  size_t wsb = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(g.ch.get(), cd.x, cd.w, cd.conv, cd.y, algo, &wsb);
  DeviceBuffer ws(s == CUDNN_STATUS_SUCCESS ? wsb : 0, 0);
  const float one = 1.0f, zero = 0.0f;
  const auto run = [&] {
    return cudnnConvolutionForward(g.ch.get(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, algo, ws.get(), wsb,
                                   &zero, cd.y, in.y.get());
  };
  if (s == CUDNN_STATUS_SUCCESS) {
    s = run();
    g.stream.sync();
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    st.SkipWithError((std::string("cuDNN: ") + cudnnGetErrorString(s)).c_str());
    return;
  }
  timed_loop(st, p, [&] { CUDNN_CHECK(run()); });
}

// Removes --suite=X / --suite X from argv (Google Benchmark rejects flags it does not know).
std::string take_suite_flag(int* argc, char** argv) {
  std::string suite = "default";
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--suite=", 0) == 0) suite = a.substr(8);
    else if (a == "--suite" && i + 1 < *argc) suite = argv[++i];
    else argv[out++] = argv[i];
  }
  *argc = out;
  return suite;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<NamedProblem> problems;
  try {
    problems = named_suite(take_suite_flag(&argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_conv: %s\n", e.what());
    return 2;
  }
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "bench_conv: no usable GPU (%s)\n", why.c_str());
    return 1;
  }
  struct Cfg { jhdnnDataType_t dt; bool nhwc; const char* name; };
  const Cfg cfgs[] = {{JHDNN_DATA_FLOAT, false, "f32_nchw"}, {JHDNN_DATA_HALF, true, "f16_nhwc"},
                      {JHDNN_DATA_BFLOAT16, true, "bf16_nhwc"}};
  for (const NamedProblem& np : problems) {
    for (const Cfg& c : cfgs) {
      core::ConvProblem p = with_layout(np.p, c.dt, c.nhwc);
      // fp32 vs fp32 (no TF32 on either side); half types may use tensor cores, as frameworks ask.
      p.math_type = c.dt == JHDNN_DATA_FLOAT ? JHDNN_FMA_MATH : JHDNN_TENSOR_OP_MATH;
      const std::string base = "conv/" + np.name + "/" + c.name + "/";
      for (const conv::ConvSolver* s : conv::all_solvers())
        benchmark::RegisterBenchmark((base + s->name()).c_str(), bench_solver, p, s)
            ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
      for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a)
        benchmark::RegisterBenchmark((base + "cudnn_" + cudnn_algo_name(cudnnConvolutionFwdAlgo_t(a))).c_str(),
                                     bench_cudnn_algo, p, cudnnConvolutionFwdAlgo_t(a))
            ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
      benchmark::RegisterBenchmark((base + "cudnn_best").c_str(), bench_cudnn, p)
          ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
