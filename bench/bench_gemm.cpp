// Google Benchmark suite for the GEMMs: every step of the SGEMM teaching series (by number), the
// library GEMM (jhdnnGemm) and cuBLAS fp32 (cublasSgemm, FMA: no TF32), on 4096^3, 8192^3 and a
// table of skinny and odd shapes; then the GEMM convolution (gemm_ours, gemm_cublas) against
// cuDNN's own GEMM algorithm on the ResNet-50 (batch 32) and VGG-16 (batch 16) layers.
//
// GPU time from CUDA events around each run (manual time), L2 flushed before each run outside the
// timed region. Counters: FLOP/s (2 m n k, or the convolution's), and x_cublas / x_cudnn_gemm: the
// reference's time over this one's, from the same process (> 1: faster than the reference).
// The jhdnn rows also say which library kernel ran: async (1: the cp.async kernel, series step 10;
// 0: the general step-08 kernel), tile_m x tile_n, split (K slices per output tile), and a_4byte
// (1: the cp.async kernel copied an unaligned m-contiguous A 4 bytes at a time).
// Each result is checked once before timing: against cuBLAS's C (GEMM), or every output written
// and finite (convolution; values are checked by test_conv_gemm).
// Names: gemm/<m>x<n>x<k>[_<ops>]/<impl> with impl cublas, jhdnn or series_NN_<name>;
//        conv/<layer>/f32_nchw/<gemm_ours|gemm_cublas|cudnn_gemm>.
// Select with --benchmark_filter, e.g. 'gemm/4096x4096x4096/' or 'series_0[6-9]' or '^conv/'.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"
#include "conv/gemm/conv_gemm.h"
#include "gemm/gemm.h"
#include "gemm/sgemm_series/series.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

using benchutil::Gpu;

Gpu& gpu() { return benchutil::shared_gpu(benchutil::kCudnn | benchutil::kJhdnn | benchutil::kCublas); }

// Ratios collected for the summary printed after the run: "<table> <impl>" -> ratios.
std::map<std::string, std::vector<double>>& ratios() {
  static std::map<std::string, std::vector<double>> r;
  return r;
}

// ================================================================ GEMM

struct Shape {
  int m, n, k;
  bool ta = false, tb = false;  // column-major; op(A) = A^T when ta
  std::string name() const {
    std::string s = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    if (ta || tb) s += std::string("_") + (ta ? "T" : "N") + (tb ? "T" : "N");
    return s;
  }
  double flops() const { return 2.0 * m * n * k; }
};

// Inputs and cuBLAS's result of the current shape (kept while consecutive benchmarks share it).
struct ShapeData {
  Shape s;
  DeviceBuffer a, b, c, ref;
  double cublas_s = 0;  // cuBLAS's mean time, once measured
  std::vector<float> ref_host;
};

std::unique_ptr<ShapeData>& current() {
  static std::unique_ptr<ShapeData> d;
  return d;
}

void cublas_run(const ShapeData& d, float* c) {
  const float one = 1.f, zero = 0.f;
  const Shape& s = d.s;
  const cublasStatus_t st = cublasSgemm(gpu().cublas(), s.ta ? CUBLAS_OP_T : CUBLAS_OP_N, s.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        s.m, s.n, s.k, &one, d.a.as<float>(), s.ta ? s.k : s.m, d.b.as<float>(),
                                        s.tb ? s.n : s.k, &zero, c, s.m);
  if (st != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasSgemm failed");
}

ShapeData& data_for(const Shape& s) {
  std::unique_ptr<ShapeData>& d = current();
  if (d && d->s.name() == s.name()) return *d;
  d.reset();
  d = std::make_unique<ShapeData>();
  d->s = s;
  const size_t na = size_t(s.m) * s.k, nb = size_t(s.k) * s.n, nc = size_t(s.m) * s.n;
  std::vector<float> h(std::max(na, nb));
  SplitMix64 rng(12345);
  d->a = DeviceBuffer(na * 4, 0);
  d->b = DeviceBuffer(nb * 4, 0);
  d->c = DeviceBuffer(nc * 4, 0);
  d->ref = DeviceBuffer(nc * 4, 0);
  for (size_t i = 0; i < na; ++i) h[i] = float(rng.uniform() * 2.0 - 1.0);
  d->a.upload(h.data(), na * 4);
  for (size_t i = 0; i < nb; ++i) h[i] = float(rng.uniform() * 2.0 - 1.0);
  d->b.upload(h.data(), nb * 4);
  cublas_run(*d, d->ref.as<float>());
  gpu().stream.sync();
  d->ref_host.resize(nc);
  d->ref.download(d->ref_host.data(), nc * 4);
  return *d;
}

// max |C - C_cublas| / max |C_cublas|; inf when C has a non-finite element.
double error_vs_cublas(const ShapeData& d) {
  std::vector<float> got(d.ref_host.size());
  d.c.download(got.data(), got.size() * 4);
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    num = std::max(num, double(std::fabs(got[i] - d.ref_host[i])));
    den = std::max(den, double(std::fabs(d.ref_host[i])));
  }
  return den > 0 ? num / den : num;
}

// impl: 0 = cuBLAS, -1 = library (jhdnnGemm), n > 0 = series step n.
void bench_gemm(benchmark::State& st, Shape s, int impl) {
  ShapeData& d = data_for(s);
  Gpu& g = gpu();
  const float one = 1.f, zero = 0.f;
  std::function<void()> run;
  if (impl == 0) {
    run = [&] { cublas_run(d, d.c.as<float>()); };
  } else if (impl < 0) {
    run = [&] {
      JHDNN_CHECK(jhdnnGemm(g.jhdnn(), JHDNN_DATA_FLOAT, JHDNN_ORDER_COL, s.ta ? JHDNN_GEMM_OP_T : JHDNN_GEMM_OP_N,
                            s.tb ? JHDNN_GEMM_OP_T : JHDNN_GEMM_OP_N, s.m, s.n, s.k, &one, d.a.get(), s.ta ? s.k : s.m,
                            d.b.get(), s.tb ? s.n : s.k, &zero, d.c.get(), s.m));
    };
  } else {
    const gemm::series::Step& step = gemm::series::steps().at(size_t(impl - 1));
    gemm::series::Args a;
    a.m = s.m, a.n = s.n, a.k = s.k, a.alpha = 1.f, a.beta = 0.f;
    a.a = d.a.as<float>(), a.lda = s.m, a.b = d.b.as<float>(), a.ldb = s.k, a.c = d.c.as<float>(), a.ldc = s.m;
    const core::Status r = step.run(a, g.stream.get());
    if (!r.ok()) {
      st.SkipWithError(r.message.c_str());
      return;
    }
    run = [&, a, step] {
      const core::Status rr = step.run(a, g.stream.get());
      if (!rr.ok()) throw std::runtime_error(rr.message);
    };
  }
  // Checked once: C starts as NaN; the result must match cuBLAS's to fp32 accumulation accuracy.
  d.c.poison();
  run();
  g.stream.sync();
  if (impl < 0) {  // which library kernel ran (this thread's last sgemm call)
    const gemm::SgemmRun r = gemm::last_sgemm_run();
    st.counters["async"] = r.path == gemm::SgemmPath::kAsync ? 1 : 0;
    st.counters["tile_m"] = r.tile_m;
    st.counters["tile_n"] = r.tile_n;
    st.counters["split"] = r.split;
    st.counters["a_4byte"] = r.a_4byte ? 1 : 0;
  }
  const double err = error_vs_cublas(d);
  if (!(err <= 1e-4)) {
    st.SkipWithError(("result differs from cuBLAS: max rel err " + std::to_string(err)).c_str());
    return;
  }
  const double t = benchutil::timed_loop(st, g, s.flops(), run);
  if (impl == 0) d.cublas_s = t;
  if (d.cublas_s > 0 && t > 0 && impl != 0) {
    st.counters["x_cublas"] = d.cublas_s / t;
    const bool square = s.m == s.n && s.n == s.k && !s.ta && !s.tb && (s.m == 4096 || s.m == 8192);
    ratios()[std::string(square ? "gemm 4096^3 and 8192^3, " : "gemm other shapes, ") +
             (impl < 0 ? "jhdnn" : "series_" + std::to_string(impl)) + " vs cuBLAS"]
        .push_back(d.cublas_s / t);
  }
  st.counters["max_rel_err"] = err;
}

void register_gemm() {
  const std::vector<Shape> big = {{4096, 4096, 4096}, {8192, 8192, 8192}};
  const std::vector<Shape> odd = {
      {4096, 4096, 4096, true, false},  // A transposed (row-major A^T, as a row-major A B^T caller has)
      {4096, 4096, 64},  {64, 4096, 4096}, {4096, 64, 4096}, {1000, 1000, 1000}, {8191, 8191, 8191},
      {1, 4096, 4096},   {4096, 1, 4096},  {12544, 64, 576},   // conv-like: 112x112 image, 64 filters, 64*3*3
      {3136, 256, 64},   {127, 129, 131},  {2048, 2048, 2048},
  };
  auto reg = [](const Shape& s, int impl, const std::string& name, int iters) {
    benchutil::manual_time(benchmark::RegisterBenchmark(("gemm/" + s.name() + "/" + name).c_str(), bench_gemm, s, impl),
                           iters);
  };
  for (const Shape& s : big) {
    reg(s, 0, "cublas", 10);  // first: the others' x_cublas counters need its time
    reg(s, -1, "jhdnn", 10);
    for (const gemm::series::Step& st : gemm::series::steps()) {
      if (st.number <= 4 && s.m > 4096) continue;  // the slow early steps only at 4096
      char name[64];
      std::snprintf(name, sizeof name, "series_%02d_%s", st.number, st.name);
      reg(s, st.number, name, st.number <= 4 ? 3 : 10);
    }
  }
  for (const Shape& s : odd) {
    reg(s, 0, "cublas", 10);
    reg(s, -1, "jhdnn", 10);
  }
}

// ================================================================ GEMM convolution vs cuDNN's GEMM

std::map<std::string, double>& cudnn_gemm_times() {
  static std::map<std::string, double> t;
  return t;
}

void bench_cudnn_gemm(benchmark::State& st, core::ConvProblem p, std::string key) {
  Gpu& g = gpu();
  benchutil::ConvInputs& in = benchutil::conv_inputs(p, key);
  CudnnConvDescs cd(p);  // FMA math (set by the caller's problem)
  size_t ws_bytes = 0;
  const cudnnStatus_t q = cudnnGetConvolutionForwardWorkspaceSize(g.cudnn(), cd.x, cd.w, cd.conv, cd.y,
                                                                  CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &ws_bytes);
  if (q != CUDNN_STATUS_SUCCESS) {
    st.SkipWithError((std::string("cuDNN GEMM: ") + cudnnGetErrorString(q)).c_str());
    return;
  }
  DeviceBuffer ws(ws_bytes, 0);
  const float one = 1.f, zero = 0.f;
  auto run = [&] {
    CUDNN_CHECK(cudnnConvolutionForward(g.cudnn(), &one, cd.x, in.x.get(), cd.w, in.w.get(), cd.conv,
                                        CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws.get(), ws_bytes, &zero, cd.y, in.y.get()));
  };
  in.y.poison();
  run();
  g.stream.sync();
  if (!benchutil::all_finite(in.y, p.y_span(), p.dtype)) {
    st.SkipWithError("cuDNN GEMM left an output unwritten or non-finite");
    return;
  }
  cudnn_gemm_times()[key] = benchutil::timed_loop(st, g, p.flops(), run);
}

void bench_conv_solver(benchmark::State& st, core::ConvProblem p, const conv::ConvSolver* s, std::string key) {
  Gpu& g = gpu();
  const conv::Verdict v = s->can_implement(p, g.dev);
  if (!v.ok) {
    st.SkipWithError(v.reason);
    return;
  }
  benchutil::ConvInputs& in = benchutil::conv_inputs(p, key);
  DeviceBuffer ws(s->workspace_bytes(p), 0);
  const conv::ConvArgs args{in.x.get(), in.w.get(), in.y.get(), 1.0, 0.0, g.jhdnn()};
  auto run = [&] { benchutil::run_solver_or_throw(*s, p, args, ws, g); };
  in.y.poison();
  run();
  g.stream.sync();
  if (!benchutil::all_finite(in.y, p.y_span(), p.dtype)) {
    st.SkipWithError("an output was not written (NaN poison left) or is not finite");
    return;
  }
  const double t = benchutil::timed_loop(st, g, p.flops(), run);
  const auto it = cudnn_gemm_times().find(key);
  if (it != cudnn_gemm_times().end() && t > 0) {
    st.counters["x_cudnn_gemm"] = it->second / t;
    ratios()[std::string("conv ResNet-50 b32 + VGG-16 b16 f32 NCHW, ") + s->name() + " vs cuDNN GEMM"].push_back(
        it->second / t);
  }
  st.counters["ws_MiB"] = double(ws.bytes()) / (1 << 20);
}

void register_conv() {
  std::vector<NamedProblem> layers = resnet50_layers(32);
  for (const NamedProblem& np : vgg16_layers(16)) layers.push_back(np);
  for (const NamedProblem& np : layers) {
    core::ConvProblem p = with_layout(np.p, JHDNN_DATA_FLOAT, false);
    p.math_type = JHDNN_FMA_MATH;  // fp32 FMA on both sides
    const std::string base = "conv/" + np.name + "/f32_nchw/";
    benchutil::manual_time(benchmark::RegisterBenchmark((base + "cudnn_gemm").c_str(), bench_cudnn_gemm, p, np.name), 10);
    for (const conv::ConvSolver* s : {&conv::gemm_ours_solver(), &conv::gemm_cublas_solver()})
      benchutil::manual_time(benchmark::RegisterBenchmark((base + s->name()).c_str(), bench_conv_solver, p, s, np.name),
                             10);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!benchutil::usable_gpu("bench_gemm")) return 1;
  register_gemm();
  register_conv();
  benchutil::run_benchmarks(&argc, argv);
  // Geometric means of the ratios (> 1: faster than the reference), over what this run measured.
  for (const auto& [what, v] : ratios()) {
    double log_sum = 0, lo = v.empty() ? 0 : v[0], hi = lo;
    for (double r : v) log_sum += std::log(r), lo = std::min(lo, r), hi = std::max(hi, r);
    std::printf("summary: %s: geomean %.3f over %zu (min %.3f, max %.3f)\n", what.c_str(),
                v.empty() ? 0.0 : std::exp(log_sum / double(v.size())), v.size(), lo, hi);
  }
  return 0;
}
