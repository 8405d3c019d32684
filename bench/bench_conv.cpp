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

#include <cstdio>
#include <string>

#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

using benchutil::Gpu;

Gpu& gpu() { return benchutil::shared_gpu(benchutil::kCudnn | benchutil::kJhdnn); }

// Runs `run` under the benchmark loop with event timing; sets the counters.
template <class F>
void timed_loop(benchmark::State& st, const core::ConvProblem& p, F run) {
  benchutil::timed_loop(st, gpu(), p.flops(), run);
  const double es = double(dtype_size(p.dtype));
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
  benchutil::ConvInputs& in = benchutil::conv_inputs(p, p.key());
  DeviceBuffer ws(s->workspace_bytes(p), 0);
  const conv::ConvArgs args{in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0, g.jhdnn()};
  if (!benchutil::first_run_ok(st, *s, p, args, in.y, ws, g)) return;
  timed_loop(st, p, [&] { benchutil::run_solver_or_throw(*s, p, args, ws, g); });
}

void bench_cudnn(benchmark::State& st, core::ConvProblem p) {
  Gpu& g = gpu();
  benchutil::ConvInputs& in = benchutil::conv_inputs(p, p.key());
  CudnnConvDescs cd(p);
  DeviceBuffer ws;
  // cudnnFind picks the algorithm (and its math type); the benchmark then times that one.
  CudnnRun pick = cudnn_best_forward(g.cudnn(), cd, in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0, CudnnPick::kFind, &ws);
  if (!pick.ok()) {
    st.SkipWithError(("cuDNN: " + pick.log).c_str());
    return;
  }
  CUDNN_CHECK(cudnnSetConvolutionMathType(cd.conv, pick.math));
  const float one = 1.0f, zero = 0.0f;
  st.SetLabel(cudnn_algo_name(pick.algo));
  timed_loop(st, p, [&] {
    CUDNN_CHECK(cudnnConvolutionForward(g.cudnn(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, pick.algo,
                                        ws.get(), pick.workspace_bytes, &zero, cd.y, in.y.get()));
  });
}

// One cuDNN algorithm, as cuDNN runs it under the problem's math type.
void bench_cudnn_algo(benchmark::State& st, core::ConvProblem p, cudnnConvolutionFwdAlgo_t algo) {
  Gpu& g = gpu();
  benchutil::ConvInputs& in = benchutil::conv_inputs(p, p.key());
  CudnnConvDescs cd(p);
  size_t wsb = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(g.cudnn(), cd.x, cd.w, cd.conv, cd.y, algo, &wsb);
  DeviceBuffer ws(s == CUDNN_STATUS_SUCCESS ? wsb : 0, 0);
  const float one = 1.0f, zero = 0.0f;
  const auto run = [&] {
    return cudnnConvolutionForward(g.cudnn(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv, algo, ws.get(), wsb,
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
  if (!benchutil::usable_gpu("bench_conv")) return 1;
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
        benchutil::manual_time(benchmark::RegisterBenchmark((base + s->name()).c_str(), bench_solver, p, s), 10);
      for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a)
        benchutil::manual_time(
            benchmark::RegisterBenchmark((base + "cudnn_" + cudnn_algo_name(cudnnConvolutionFwdAlgo_t(a))).c_str(),
                                         bench_cudnn_algo, p, cudnnConvolutionFwdAlgo_t(a)),
            10);
      benchutil::manual_time(benchmark::RegisterBenchmark((base + "cudnn_best").c_str(), bench_cudnn, p), 10);
    }
  }
  benchutil::run_benchmarks(&argc, argv);
  return 0;
}
