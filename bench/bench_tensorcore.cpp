// Tensor Core benchmarks (Google Benchmark):
//   conv/<layer>/<f16|bf16|tf32>_nhwc/{tensorcore_mma,tensorcore_wgmma,wgmma_r1,cudnn_best} ResNet-50 (batch 32)
//        (+ tensorcore_wgmma_smallc on the C = 3 first layers, with its workspace: pack + kernel;
//        smallc_pack = its packing passes alone, counter write_TBps; smallc_F<1|2|3> = the whole
//        path with the fold forced)
//        and VGG-16 (batch 16) layers. Timed EXACTLY as jhdnn-bench times them (its measure.cpp is
//        linked in): the call is captured into a CUDA graph over rotated copies of x / w / y that
//        span >= 2.5x the L2 cache (every launch reads from HBM), the graph is replayed, and the
//        manual time is the median of 20 replays per launch -- the numbers agree with jhdnn-bench's
//        gpu_us column. Counter eager_us: host clock per back-to-back call (launch cost included).
//        tensorcore_wgmma runs the solver's own configuration (label: "bn <tile width> split <CTAs
//        per tile>"); wgmma_r1 forces round 1's 128-wide, unsplit kernel, so the two rows show what
//        the new configurations gain. cuDNN's best by cudnnFind under TENSOR_OP_MATH.
//   gemm/<f16|bf16|tf32>/<n>^3/{tensorcore_mma,tensorcore_wgmma,tensorcore_hopper,cublas} row-major "TN" (K contiguous in
//        both operands), n = 4096 and 8192, cublasGemmEx with fp32 accumulation (TF32 for fp32)
//   eager/<layer>/f16_nhwc/{jhdnn,cudnn}                             host wall-clock per call of 200
//        back-to-back jhdnnConvolutionForward / cudnnConvolutionForward calls (batch 1, 14x14), one
//        sync at the end: the per-call cost a framework's eager mode pays
// Counters: FLOP/s (conv rows also eager_us, copies). Filter e.g. --benchmark_filter='conv/.*f16'.
// Runtime on an H200: not yet measured in this form; estimated 30-45 s (372 conv rows of ~30 ms
// each -- one graph measurement + one eager measurement -- plus one cudnnFind and one set of input
// copies per layer and data type, 18 GEMM and 6 eager benchmarks).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include <cublas_v2.h>

#include "../tools/jhdnn-bench/measure.h"
#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"
#include "conv/tensorcore/smallc.h"
#include "conv/tensorcore/tensorcore.h"
#include "conv/tensorcore/wgmma_plan.h"
#include "gemm/tensorcore/gemm_tc.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

using benchutil::Gpu;
using benchutil::all_finite;
using benchutil::cuda_type;
using benchutil::random_buffer;

Gpu& gpu() { return benchutil::shared_gpu(benchutil::kCudnn | benchutil::kJhdnn | benchutil::kCublas); }

// ---------------------------------------------------------------- convolution

// Rotated copies of x, w and y for one problem: as many as it takes to span 2.5x the L2 cache
// (at most 64, and at most ~8 GiB in all), like jhdnn-bench. Consecutive benchmarks of one layer
// and data type share one set (the last set is kept).
struct Copies {
  std::string key;
  std::vector<DeviceBuffer> x, w, y;
  int n = 0;
};

Copies& copies_for(const core::ConvProblem& p) {
  static Copies c;
  const std::string key = p.key();
  if (c.key == key) return c;
  c = Copies{};
  Gpu& g = gpu();
  const size_t es = dtype_size(p.dtype);
  const double one = double(p.x_span() + p.w_span() + p.y_span()) * double(es);
  const double want = 2.5 * double(g.dev.l2_bytes);
  c.n = int(std::clamp(std::ceil(want / one), 1.0, std::max(1.0, std::min(64.0, std::floor(8e9 / one)))));
  // One host-generated random set; the other copies are device-to-device copies of it (host
  // generation of every copy would cost ~1 s per layer).
  c.x.push_back(random_buffer(p.x_span(), p.dtype, 1));
  c.w.push_back(random_buffer(p.w_span(), p.dtype, 2));
  for (int i = 1; i < c.n; ++i) {
    c.x.emplace_back(size_t(p.x_span()) * es, 0);
    c.w.emplace_back(size_t(p.w_span()) * es, 0);
    CUDA_CHECK(cudaMemcpy(c.x.back().get(), c.x[0].get(), c.x[0].bytes(), cudaMemcpyDeviceToDevice));
    CUDA_CHECK(cudaMemcpy(c.w.back().get(), c.w[0].get(), c.w[0].bytes(), cudaMemcpyDeviceToDevice));
  }
  for (int i = 0; i < c.n; ++i) c.y.emplace_back(size_t(p.y_span()) * es, 0);  // poisoned (NaN)
  CUDA_CHECK(cudaDeviceSynchronize());
  c.key = key;
  return c;
}

// Times launch(copy) the jhdnn-bench way (graph replay over the rotated copies; see the header).
// write_bytes > 0: also the counter write_TBps (those bytes over the GPU time; the pack rows).
void graph_timed(benchmark::State& st, double flops, int copies, const bench::Launch& launch, double write_bytes = 0) {
  Gpu& g = gpu();
  std::string why;
  const double est = bench::time_once_us(launch, g.stream.get(), &why);
  if (est < 0) return st.SkipWithError(why.c_str());
  for (auto _ : st) {
    const bench::Timing t = bench::measure(launch, launch, copies, est, 20, 400.0, g.stream.get());
    if (!t.error.empty()) {
      st.SkipWithError(t.error.c_str());
      break;
    }
    st.SetIterationTime(t.gpu_us * 1e-6);
    st.counters["eager_us"] = t.eager_us;
    st.counters["copies"] = copies;
    if (write_bytes > 0) st.counters["write_TBps"] = write_bytes / (t.gpu_us * 1e-6) / 1e12;
  }
  benchutil::set_flops(st, flops);
}

// which: 0 = the solver (tensorcore_mma / tensorcore_wgmma, its own configuration; its epilogue
// follows JHDNN_TC_EPILOGUE, unset = tma), 1 = wgmma forced to round 1's configuration
// (128-wide tiles, no split, the direct epilogue), 2 = wgmma forced to the solver's choice without
// the split-K tail (registered only where the solver takes the tail: the A/B of that decision),
// 3 / 4 = wgmma forced to {bn 128, split 1} / {bn 256, split 1} with the default epilogue (fp16
// layers with K >= 256 only: 256-wide tiles load 25% fewer bytes per FLOP, so the pair measures
// whether bytes per FLOP limit the main loop -- README.md, "Round 5"), 5 / 6 = wgmma forced to
// 64-pixel tiles {bm 64, bn 128} / to split-K {bn 128, split 2} (registered where the solver takes
// bm 64: the A/B of round 6's small-M decision against the configuration it replaced), 7 = wgmma
// forced to {bn 64} (with 5: registered on the store-bound 1x1 layers, <= 2 reduction blocks and
// K >= 256, where the solver takes one-CTA-per-SM tiles: do two CTAs per SM, overlapping one's
// epilogue with the other's main loop, store faster? README.md, "Round 6"), 8 = wgmma forced to
// the B-multicast kernel {bn 128, multicast} (fp16 layers: does sharing the filter slice across a
// cluster of two, 24 instead of 32 KiB per block, beat {bn 128} (wgmma_notail / wgmma_bn128)?).
// tensorcore_wgmma_smallc only: 9 = its two packing passes alone (the solver's fold; counter
// write_TBps: the packed x and w bytes written over the GPU time; FLOP/s meaningless there),
// 10 + F = the whole path with the fold forced to F (the A/B of the cost model's pick).
// 20 / 21 = wgmma forced to the solver's configuration with the staged (16-byte vector) / the TMA-store
// epilogue, whatever JHDNN_TC_EPILOGUE says (16-bit layers where the solver's run takes TMA stores:
// the A/B of README.md, "TMA store epilogue").
// 30 / 31 = wgmma forced to 64-pixel tiles split 2 / 4 over clusters (round 7's push-reduction
// split-K kernel; registered with 5 and 6 where the solver takes bm 64: split 2 is the solver's
// choice on the 7x7 conv5 layers, 5 the round-6 configuration it replaced, 31 a second wave of
// clusters -- 448 CTAs for 264 slots -- to show the wave cost), 32 = wgmma forced to 128-pixel tiles
// split 2 through the same push-reduction kernel (WgmmaConfig::push; against 6, the same tiles and
// split through conv_wgmma_splitk_kernel: the A/B of the exchange alone). 33 = wgmma forced to
// 64-pixel tiles in the deep pipeline {bm 64, deep: 8 stages, one CTA per SM} (round 9; registered
// with 5 where the solver takes bm 64, which is now deep there: wgmma_bm64 is the 4-stage two-per-SM
// kernel it replaced, the same tiles and grid of 112 CTAs on the conv5 layers).
void bench_conv_tc(benchmark::State& st, core::ConvProblem p, const conv::ConvSolver* solver, int which) {
  Gpu& g = gpu();
  const conv::ConvSolver& s = *solver;
  const conv::Verdict v = s.can_implement(p, g.dev);
  if (!v.ok) return st.SkipWithError(v.reason);
  Copies& c = copies_for(p);
  const conv::tensorcore::WgmmaConfig kRound1{128, 1, conv::tensorcore::WgmmaEpilogue::kDirect};
  const conv::tensorcore::WgmmaConfig kNoTail{128, 1, conv::tensorcore::WgmmaEpilogue::kDefault};
  const conv::tensorcore::WgmmaConfig kWide{256, 1, conv::tensorcore::WgmmaEpilogue::kDefault};
  const conv::tensorcore::WgmmaConfig kBm64{128, 1, conv::tensorcore::WgmmaEpilogue::kDefault, false, 0, 64};
  const conv::tensorcore::WgmmaConfig kSplit2{128, 2, conv::tensorcore::WgmmaEpilogue::kDefault};
  conv::tensorcore::WgmmaConfig kMulticast{128, 1, conv::tensorcore::WgmmaEpilogue::kDefault};
  kMulticast.multicast = true;
  conv::tensorcore::WgmmaConfig kBm64Deep = kBm64;
  kBm64Deep.deep = true;
  conv::tensorcore::WgmmaConfig kChosen{};
  if (which == 20 || which == 21) {
    kChosen = conv::tensorcore::wgmma_config(p, g.dev.sm_count);
    kChosen.epilogue = which == 20 ? conv::tensorcore::WgmmaEpilogue::kStaged : conv::tensorcore::WgmmaEpilogue::kTma;
  }
  const conv::tensorcore::WgmmaConfig forced = which == 1   ? kRound1
                                               : which == 20 || which == 21 ? kChosen
                                               : which == 4 ? kWide
                                               : which == 5 ? kBm64
                                               : which == 6 ? kSplit2
                                               : which == 7 ? conv::tensorcore::WgmmaConfig{64, 1}
                                               : which == 8 ? kMulticast
                                               : which == 30 ? conv::tensorcore::WgmmaConfig{128, 2, conv::tensorcore::WgmmaEpilogue::kDefault, false, 0, 64}
                                               : which == 31 ? conv::tensorcore::WgmmaConfig{128, 4, conv::tensorcore::WgmmaEpilogue::kDefault, false, 0, 64}
                                               : which == 32 ? conv::tensorcore::WgmmaConfig{128, 2, conv::tensorcore::WgmmaEpilogue::kDefault, false, 0, 0, false, true}
                                               : which == 33 ? kBm64Deep
                                                            : kNoTail;
  // The solver's workspace (tensorcore_wgmma_smallc's packed copy of x and w; 0 for the others),
  // one buffer for every copy: the packing pass writes it and the kernel reads it back inside the
  // timed call, as in a real forward.
  const bool smallc = &s == &conv::tensorcore_wgmma_smallc_solver();
  const int64_t fold = smallc && which >= 10 ? which - 10 : 0;  // 0: the solver's pick
  const size_t ws_bytes = which == 0 ? s.workspace_bytes(p) : smallc ? conv::tensorcore::smallc_workspace_bytes(p, fold) : 0;
  DeviceBuffer ws(ws_bytes, 0);
  auto run = [&](int i) {
    const conv::ConvArgs args{c.x[size_t(i)].get(), c.w[size_t(i)].get(), c.y[size_t(i)].get(), 1.0, 0.0};
    if (smallc && which == 9) return conv::tensorcore::pack_smallc(p, args, ws.get(), ws_bytes, g.stream.get());
    if (smallc && which >= 10)
      return conv::tensorcore::forward_wgmma_smallc(p, args, conv::tensorcore::WgmmaConfig{}, ws.get(), ws_bytes,
                                                    g.stream.get(), fold);
    return which != 0 ? conv::tensorcore::forward_wgmma(p, args, forced, g.stream.get())
                      : s.run(p, args, ws_bytes ? ws.get() : nullptr, ws_bytes, g.stream.get());
  };
  for (int i = 0; i < c.n; ++i) c.y[size_t(i)].poison();
  const core::Status first = run(0);
  g.stream.sync();
  if (!first.ok()) return st.SkipWithError(first.message.c_str());
  if (!(smallc && which == 9) && !all_finite(c.y[0], p.y_span(), p.dtype))
    return st.SkipWithError("an output was not written or is not finite");
  if (&s == &conv::tensorcore_wgmma_solver()) {
    const conv::tensorcore::WgmmaConfig k = which == 0 ? conv::tensorcore::WgmmaConfig{} : forced;
    const conv::tensorcore::WgmmaConfig shape = which == 0 ? conv::tensorcore::wgmma_config(p, g.dev.sm_count) : k;
    const bool staged = conv::tensorcore::wgmma_staged_stores(p, c.y[0].get(), k);
    const bool tma = conv::tensorcore::wgmma_tma_stores(p, c.y[0].get(), 0.0, k);
    st.SetLabel(std::string(shape.multicast ? "multicast " : "") + (shape.push ? "push " : "") + (shape.bm == 64 ? (shape.deep ? "bm 64 deep bn " : "bm 64 bn ") : "bn ") +
                std::to_string(shape.bn) + " split " + std::to_string(shape.split) +
                (shape.tail ? " tail" : "") + " epilogue " + (tma ? "tma" : staged ? "staged" : "direct"));
  }
  double write_bytes = 0;
  if (smallc) {
    const core::ConvProblem q = conv::tensorcore::smallc_problem(p, fold);
    const conv::tensorcore::WgmmaConfig shape = conv::tensorcore::wgmma_config(q, g.dev.sm_count);
    if (which == 9)
      write_bytes = double(conv::tensorcore::smallc_x_bytes(p, fold) + conv::tensorcore::smallc_w_bytes(p, fold));
    st.SetLabel(std::string(which == 9 ? "pack only, " : "") + "fold F " +
                std::to_string(fold > 0 ? fold : conv::tensorcore::smallc_pick_fold(p)) + ", packed C " + std::to_string(q.C) +
                " R " + std::to_string(q.R) + ": bn " + std::to_string(shape.bn) +
                " split " + std::to_string(shape.split) + (shape.tail ? " tail" : "") + ", workspace " +
                std::to_string(ws_bytes >> 20) + " MiB");
  }
  graph_timed(
      st, p.flops(), c.n,
      [&](int i, std::string* why) {
        const core::Status r = run(i);
        if (!r.ok()) *why = r.message;
        return r.ok();
      },
      write_bytes);
}

void bench_conv_cudnn(benchmark::State& st, core::ConvProblem p) {
  Gpu& g = gpu();
  Copies& c = copies_for(p);
  CudnnConvDescs cd(p);
  DeviceBuffer ws;
  const CudnnRun pick =
      cudnn_best_forward(g.cudnn(), cd, c.x[0].get(), c.w[0].get(), c.y[0].get(), 1.0, 0.0, CudnnPick::kFind, &ws);
  if (!pick.ok()) return st.SkipWithError(("cuDNN: " + pick.log).c_str());
  CUDNN_CHECK(cudnnSetConvolutionMathType(cd.conv, pick.math));
  st.SetLabel(cudnn_algo_name(pick.algo));
  const float one = 1.f, zero = 0.f;
  graph_timed(st, p.flops(), c.n, [&](int i, std::string* why) {
    const cudnnStatus_t r =
        cudnnConvolutionForward(g.cudnn(), &one, cd.x, c.x[size_t(i)].get(), cd.w, c.w[size_t(i)].get(), cd.conv,
                                pick.algo, ws.get(), pick.workspace_bytes, &zero, cd.y, c.y[size_t(i)].get());
    if (r != CUDNN_STATUS_SUCCESS) *why = cudnnGetErrorString(r);
    return r == CUDNN_STATUS_SUCCESS;
  });
}

// ---------------------------------------------------------------- GEMM

// impl: 0 = gemm_mma (generation 1), 1 = gemm_wgmma (generation 2, 128x128), 2 = cublasGemmEx,
// 3 = gemm_hopper (128x256, src/gemm/hopper).
void bench_gemm(benchmark::State& st, jhdnnDataType_t dt, int64_t n, int impl) {
  const bool use_cublas = impl == 2;
  Gpu& g = gpu();
  DeviceBuffer A = random_buffer(n * n, dt, 3), B = random_buffer(n * n, dt, 4);
  DeviceBuffer C(size_t(n * n) * dtype_size(dt), 0);
  const float one = 1.f, zero = 0.f;
  auto run = [&] {
    if (use_cublas) {
      // Row-major C = A * B^T (B stored n x k) is column-major C^T = op_T(B) * A.
      const cublasStatus_t s = cublasGemmEx(g.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(n), int(n), &one, B.get(),
                                            cuda_type(dt), int(n), A.get(), cuda_type(dt), int(n), &zero, C.get(),
                                            cuda_type(dt), int(n),
                                            dt == JHDNN_DATA_FLOAT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT);
      if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasGemmEx failed");
    } else {
      const core::Status s =
          impl == 0   ? gemm::tensorcore::gemm_mma(dt, false, true, n, n, n, 1.f, A.get(), n, B.get(), n, 0.f, C.get(),
                                                   n, g.stream.get())
          : impl == 3 ? gemm::tensorcore::gemm_hopper(dt, dt, true, n, n, n, 1.f, A.get(), n, B.get(), n, 0.f, C.get(),
                                                      n, g.stream.get())
                      : gemm::tensorcore::gemm_wgmma(dt, n, n, n, 1.f, A.get(), n, B.get(), n, 0.f, C.get(), n,
                                                     g.stream.get());
      if (!s.ok()) throw std::runtime_error(s.message);
    }
  };
  try {
    run();
  } catch (const std::exception& e) {
    return st.SkipWithError(e.what());
  }
  g.stream.sync();
  if (!all_finite(C, n * n, dt)) return st.SkipWithError("an output was not written or is not finite");
  benchutil::timed_loop(st, g, 2.0 * double(n) * double(n) * double(n), run);
}

// ---------------------------------------------------------------- eager per-call time

constexpr int kEagerCalls = 200;

void bench_eager(benchmark::State& st, core::ConvProblem p, bool use_cudnn) {
  Gpu& g = gpu();
  DeviceBuffer x = random_buffer(p.x_span(), p.dtype, 1), w = random_buffer(p.w_span(), p.dtype, 2);
  DeviceBuffer y(size_t(p.y_span()) * dtype_size(p.dtype), 0);
  const float one = 1.f, zero = 0.f;
  std::unique_ptr<CudnnConvDescs> cd;
  std::unique_ptr<JhdnnConvDescs> jd;
  DeviceBuffer ws;
  CudnnRun pick;
  if (use_cudnn) {
    cd = std::make_unique<CudnnConvDescs>(p);
    pick = cudnn_best_forward(g.cudnn(), *cd, x.get(), w.get(), y.get(), 1.0, 0.0, CudnnPick::kFind, &ws);
    if (!pick.ok()) return st.SkipWithError(("cuDNN: " + pick.log).c_str());
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd->conv, pick.math));
    st.SetLabel(cudnn_algo_name(pick.algo));
  } else {
    jd = std::make_unique<JhdnnConvDescs>(p);
    const conv::tensorcore::WgmmaConfig k = conv::tensorcore::wgmma_config(p, g.dev.sm_count);
    const bool staged = conv::tensorcore::wgmma_staged_stores(p, y.get(), conv::tensorcore::WgmmaConfig{});
    const bool tma = conv::tensorcore::wgmma_tma_stores(p, y.get(), 0.0, conv::tensorcore::WgmmaConfig{});
    st.SetLabel("wgmma bn " + std::to_string(k.bn) + " split " + std::to_string(k.split) + " epilogue " +
                (tma ? "tma" : staged ? "staged" : "direct"));
  }
  auto call = [&] {
    if (use_cudnn)
      CUDNN_CHECK(cudnnConvolutionForward(g.cudnn(), &one, cd->x, x.get(), cd->w, w.get(), cd->conv, pick.algo,
                                          ws.get(), pick.workspace_bytes, &zero, cd->y, y.get()));
    else
      JHDNN_CHECK(jhdnnConvolutionForward(g.jhdnn(), &one, jd->x, x.get(), jd->w, w.get(), jd->conv,
                                          JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, nullptr, 0, &zero, jd->y,
                                          y.get()));
  };
  call();
  g.stream.sync();
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kEagerCalls; ++i) call();
    g.stream.sync();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    st.SetIterationTime(s / kEagerCalls);  // wall clock per call, GPU included
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!benchutil::usable_gpu("bench_tensorcore")) return 1;
  struct Cfg { jhdnnDataType_t dt; const char* name; };
  const Cfg cfgs[] = {{JHDNN_DATA_HALF, "f16_nhwc"}, {JHDNN_DATA_BFLOAT16, "bf16_nhwc"}, {JHDNN_DATA_FLOAT, "tf32_nhwc"}};
  std::vector<NamedProblem> layers = resnet50_layers(32);
  for (const NamedProblem& np : vgg16_layers(16)) layers.push_back(np);
  for (const NamedProblem& np : layers)
    for (const Cfg& c : cfgs) {
      core::ConvProblem p = with_layout(np.p, c.dt, true);
      p.math_type = JHDNN_TENSOR_OP_MATH;
      const std::string base = "conv/" + np.name + "/" + c.name + "/";
      // One iteration = one jhdnn-bench measurement (the median of 20 graph replays).
      for (const conv::ConvSolver* s : {&conv::tensorcore_mma_solver(), &conv::tensorcore_wgmma_solver()})
        benchutil::manual_time(benchmark::RegisterBenchmark((base + s->name()).c_str(), bench_conv_tc, p, s, 0), 1);
      if (conv::tensorcore_wgmma_smallc_solver().can_implement(p, gpu().dev).ok) {  // the C = 3 first layers
        const conv::ConvSolver* sc = &conv::tensorcore_wgmma_smallc_solver();
        benchutil::manual_time(
            benchmark::RegisterBenchmark((base + "tensorcore_wgmma_smallc").c_str(), bench_conv_tc, p, sc, 0), 1);
        benchutil::manual_time(benchmark::RegisterBenchmark((base + "smallc_pack").c_str(), bench_conv_tc, p, sc, 9), 1);
        for (int64_t F = 1; F <= std::min<int64_t>(p.R, 3); ++F)  // the cost model's candidates that matter here
          if (conv::tensorcore::smallc_fold_reason(p, F) == nullptr)
            benchutil::manual_time(benchmark::RegisterBenchmark((base + "smallc_F" + std::to_string(F)).c_str(),
                                                                bench_conv_tc, p, sc, int(10 + F)),
                                   1);
      }
      benchutil::manual_time(
          benchmark::RegisterBenchmark((base + "wgmma_r1").c_str(), bench_conv_tc, p, &conv::tensorcore_wgmma_solver(), 1),
          1);
      if (conv::tensorcore_wgmma_solver().can_implement(p, gpu().dev).ok &&
          conv::tensorcore::wgmma_config(p, gpu().dev.sm_count).tail)
        benchutil::manual_time(benchmark::RegisterBenchmark((base + "wgmma_notail").c_str(), bench_conv_tc, p,
                                                            &conv::tensorcore_wgmma_solver(), 2),
                               1);
      if (conv::tensorcore_wgmma_solver().can_implement(p, gpu().dev).ok) {
        const bool small_m = conv::tensorcore::wgmma_config(p, gpu().dev.sm_count).bm == 64;
        const bool store_bound = conv::tensorcore::wgmma_reduction_blocks(p) <= 2 && p.K >= 256;
        const std::pair<int, const char*> rows[] = {{5, "wgmma_bm64"},         {6, "wgmma_split2"},
                                                    {7, "wgmma_bn64"},         {30, "wgmma_bm64_split2"},
                                                    {31, "wgmma_bm64_split4"}, {32, "wgmma_push_split2"},
                                                    {33, "wgmma_bm64_deep"}};
        for (const auto& [w, label] : rows)
          if ((small_m && w != 7) || (store_bound && (w == 5 || w == 7)))
            benchutil::manual_time(
                benchmark::RegisterBenchmark((base + label).c_str(), bench_conv_tc, p, &conv::tensorcore_wgmma_solver(), w),
                1);
        if (c.dt == JHDNN_DATA_HALF)
          benchutil::manual_time(benchmark::RegisterBenchmark((base + "wgmma_multicast").c_str(), bench_conv_tc, p,
                                                              &conv::tensorcore_wgmma_solver(), 8),
                                 1);
      }
      if (c.dt != JHDNN_DATA_FLOAT && conv::tensorcore_wgmma_solver().can_implement(p, gpu().dev).ok) {
        conv::tensorcore::WgmmaConfig tma_cfg;  // the solver's choice, TMA stores asked for
        tma_cfg.epilogue = conv::tensorcore::WgmmaEpilogue::kTma;
        if (conv::tensorcore::wgmma_tma_stores(p, nullptr, 0.0, tma_cfg))  // packed NHWC y: alignment holds
          for (int w : {20, 21})
            benchutil::manual_time(benchmark::RegisterBenchmark((base + (w == 20 ? "wgmma_staged" : "wgmma_tma")).c_str(),
                                                                bench_conv_tc, p, &conv::tensorcore_wgmma_solver(), w),
                                   1);
      }
      if (c.dt == JHDNN_DATA_HALF && p.K >= 256 && conv::tensorcore_wgmma_solver().can_implement(p, gpu().dev).ok)
        for (int w : {3, 4})
          benchutil::manual_time(benchmark::RegisterBenchmark((base + (w == 3 ? "wgmma_bn128" : "wgmma_bn256")).c_str(),
                                                              bench_conv_tc, p, &conv::tensorcore_wgmma_solver(), w),
                                 1);
      benchutil::manual_time(benchmark::RegisterBenchmark((base + "cudnn_best").c_str(), bench_conv_cudnn, p), 1);
    }
  const char* gnames[] = {"f16", "bf16", "tf32"};
  for (int i = 0; i < 3; ++i)
    for (int64_t n : {4096, 8192})
      for (int impl : {0, 1, 3, 2}) {
        const char* impl_name = impl == 2   ? "cublas"
                                : impl == 3 ? "tensorcore_hopper"
                                : impl == 1 ? "tensorcore_wgmma"
                                            : "tensorcore_mma";
        const std::string name = "gemm/" + std::string(gnames[i]) + "/" + std::to_string(n) + "^3/" + impl_name;
        benchutil::manual_time(benchmark::RegisterBenchmark(name.c_str(), bench_gemm, cfgs[i].dt, n, impl), 10);
      }
  // Batch-1 14x14 layers (ResNet-50 conv4_x shapes).
  const std::pair<const char*, core::ConvProblem> eager[] = {
      {"b1_14x14_c256_k256_3x3", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"b1_14x14_c1024_k256_1x1", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 1024, 14, 14, 256, 1, 1, 0, 0, 1, 1, 1, 1)},
      {"b1_14x14_c256_k1024_1x1", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 256, 14, 14, 1024, 1, 1, 0, 0, 1, 1, 1, 1)},
  };
  for (const auto& [name, p0] : eager) {
    core::ConvProblem p = with_layout(p0, JHDNN_DATA_HALF, true);
    p.math_type = JHDNN_TENSOR_OP_MATH;
    for (bool cu : {false, true})
      benchutil::manual_time(
          benchmark::RegisterBenchmark((std::string("eager/") + name + "/f16_nhwc/" + (cu ? "cudnn" : "jhdnn")).c_str(),
                                       bench_eager, p, cu),
          5, benchmark::kMicrosecond);
  }
  benchutil::run_benchmarks(&argc, argv);
  return 0;
}
