// jhdnn_compare: every jhDNN solver and every cuDNN algorithm on a layer suite, side by side.
//
// For each layer, data type and layout: random inputs in [-1, 1]; cuDNN's heuristic-best algorithm
// gives the reference output; every cuDNN algorithm and every jhDNN solver is checked against it
// (max |diff| / max |ref|) and timed (GPU time by CUDA events, median of --reps runs after a
// warm-up, L2 flushed before each run). One row per (layer, type, layout). Exits 1 when any jhDNN
// solver's error exceeds max_rel_err for its type (a "MISMATCH" line names the row).
//
// Math types: FLOAT problems run with FMA math on both sides (no TF32), so fp32 is compared with
// fp32. HALF / BFLOAT16 problems ask for TENSOR_OP_MATH, as frameworks do (cuDNN 9 on the H200
// does not use tensor cores for them under DEFAULT_MATH); jhDNN's DIRECT solvers ignore it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/gpu_util.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "conv/dispatch.h"
#include "core/descriptors.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

struct Config {
  jhdnnDataType_t dt;
  bool nhwc;
};

struct Options {
  std::string suite = "default";
  std::vector<Config> configs = {{JHDNN_DATA_FLOAT, false}, {JHDNN_DATA_FLOAT, true},   {JHDNN_DATA_HALF, false},
                                 {JHDNN_DATA_HALF, true},   {JHDNN_DATA_BFLOAT16, false}, {JHDNN_DATA_BFLOAT16, true}};
  int reps = 20;
  std::string csv;
  std::string filter;
};

const char* dt_name(jhdnnDataType_t t) {
  return t == JHDNN_DATA_FLOAT ? "f32" : t == JHDNN_DATA_HALF ? "f16" : t == JHDNN_DATA_BFLOAT16 ? "bf16" : "f64";
}

void usage() {
  std::printf(
      "usage: jhdnn_compare [--suite default|resnet50|vgg16|mobilenet|odd] [--reps N] [--filter SUBSTRING]\n"
      "                     [--config f32_nchw,f32_nhwc,f16_nchw,f16_nhwc,bf16_nchw,bf16_nhwc] [--csv FILE]\n"
      "  --config  data type and layout pairs to run (default: all six)\n");
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--suite") o->suite = val();
    else if (a == "--reps") o->reps = std::max(3, std::atoi(val().c_str()));
    else if (a == "--csv") o->csv = val();
    else if (a == "--filter") o->filter = val();
    else if (a == "--config") {
      o->configs.clear();
      const std::string v = val() + ",";
      for (size_t at = 0, comma; (comma = v.find(',', at)) != std::string::npos; at = comma + 1) {
        const std::string c = v.substr(at, comma - at);
        const size_t us = c.find('_');
        const std::string t = c.substr(0, us), l = us == std::string::npos ? "" : c.substr(us + 1);
        const jhdnnDataType_t dt = t == "f32" ? JHDNN_DATA_FLOAT : t == "f16" ? JHDNN_DATA_HALF
                                   : t == "bf16" ? JHDNN_DATA_BFLOAT16 : jhdnnDataType_t(-1);
        if (int(dt) < 0 || (l != "nchw" && l != "nhwc")) {
          std::fprintf(stderr, "bad --config entry '%s'\n", c.c_str());
          return false;
        }
        o->configs.push_back({dt, l == "nhwc"});
      }
    } else {
      usage();
      return a == "--help" || a == "-h" ? false : (std::fprintf(stderr, "unknown option %s\n", a.c_str()), false);
    }
  }
  return !o->configs.empty();
}

std::vector<NamedProblem> suite(const std::string& name) {
  if (name == "resnet50") return resnet50_layers(32);
  if (name == "vgg16") return vgg16_layers(16);
  if (name == "mobilenet") return mobilenet_v2_layers(32);
  if (name == "odd") return odd_layers();
  return default_bench_suite();
}

// Times fn (which enqueues one run on stream): median of reps after one warm-up, with the L2
// flushed (a memset of a buffer larger than L2) before each run, outside the timed region. Slow
// runs (the naive kernel on big layers) get fewer repetitions: about 0.3 s per measurement, at
// least 3.
template <class F>
float time_median(F fn, int reps, cudaStream_t stream, DeviceBuffer& flush) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i <= reps; ++i) {
    CUDA_CHECK(cudaMemsetAsync(flush.get(), i & 0xff, flush.bytes(), stream));
    CUDA_CHECK(cudaEventRecord(a, stream));
    fn();
    CUDA_CHECK(cudaEventRecord(b, stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i > 0) t.push_back(ms);
    if (i == 0) reps = std::max(3, std::min(reps, int(300.0f / std::max(ms, 1e-3f))));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// max |got - ref| / max |ref| over y's logical elements; NaN when got has a non-finite value.
double rel_max_err(const std::vector<double>& got, const std::vector<double>& ref) {
  double diff = 0, mag = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got[i])) return NAN;
    diff = std::max(diff, std::fabs(got[i] - ref[i]));
    mag = std::max(mag, std::fabs(ref[i]));
  }
  return mag > 0 ? diff / mag : diff;
}

// Largest max|y - y_cudnn| / max|y_cudnn| accepted per data type. Both sides accumulate in fp32;
// the bound covers the accumulation-order difference (fp32) or one rounding of each output to the
// data type on each side (HALF: 2^-10, BFLOAT16: 2^-7), with margin. Measured on the H200 over the
// default suite: 1.4e-6, 7.8e-4, 5.8e-3.
double max_rel_err(jhdnnDataType_t dt) {
  return dt == JHDNN_DATA_FLOAT ? 1e-4 : dt == JHDNN_DATA_HALF ? 2e-3 : 1.6e-2;
}

struct Result {
  std::string impl, algo, status, reason;
  float ms = -1;
  double err = NAN;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) return 2;
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "jhdnn_compare: no usable GPU (%s)\n", why.c_str());
    return 1;
  }
  std::printf("# %s\n# GPU time, median of %d runs (fewer, >= 3, for runs over 15 ms), L2 flushed;"
              " err = max|y - y_cudnn| / max|y_cudnn|, inputs seed %llu (JHDNN_TEST_SEED)\n",
              gpu_description().c_str(), opt.reps, (unsigned long long)test_seed());
  std::printf("# ratio = cuDNN best time / jhDNN best time (> 1: jhDNN faster)\n");

  try {
    JhdnnHandle jh;
    CudnnHandle ch;
    CudaStream stream;
    JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
    CUDNN_CHECK(cudnnSetStream(ch.get(), stream.get()));
    core::DeviceInfo dev;
    if (!core::query_device(&dev).ok()) throw std::runtime_error("query_device failed");
    DeviceBuffer flush(2 * dev.l2_bytes + (1 << 20), 0);
    DeviceBuffer cudnn_ws;

    std::vector<std::string> csv_rows = {"layer,dtype,layout,gflop,impl,algo,status,time_ms,tflops,rel_err,reason"};
    std::printf("%-24s %-4s %-4s %8s | %10s %10s %7s %9s | %10s %-22s | %6s\n", "layer", "type", "lay", "GFLOP",
                "naive ms", "tiled ms", "TFLOP/s", "err", "cuDNN ms", "cuDNN best algo", "ratio");
    uint64_t seed = test_seed();
    int mismatches = 0;
    for (const NamedProblem& np : suite(opt.suite)) {
      if (!opt.filter.empty() && np.name.find(opt.filter) == std::string::npos) continue;
      // One set of random values per layer, in [-1, 1]: every type and layout gets them, rounded to
      // its type (the order in memory differs between layouts, which random data does not mind).
      std::vector<double> hx(np.p.x_span()), hw(np.p.w_span());
      fill_random(hx, JHDNN_DATA_FLOAT, mix_seed(seed, hash_string(np.name) * 3 + 1));
      fill_random(hw, JHDNN_DATA_FLOAT, mix_seed(seed, hash_string(np.name) * 3 + 2));
      for (const Config& cfg : opt.configs) {
        {
          const jhdnnDataType_t dt = cfg.dt;
          const bool nhwc = cfg.nhwc;
          core::ConvProblem p = with_layout(np.p, dt, nhwc);
          p.math_type = dt == JHDNN_DATA_FLOAT ? JHDNN_FMA_MATH : JHDNN_TENSOR_OP_MATH;
          const size_t es = dtype_size(dt);
          DeviceBuffer x(hx.size() * es), w(hw.size() * es), y(size_t(p.y_span()) * es);
          x.upload(to_device_bytes(hx, dt));
          w.upload(to_device_bytes(hw, dt));
          const auto read_y = [&] { auto b = y.download(); return from_device_bytes(b.data(), p.y_span(), dt); };

          CudnnConvDescs cd(p);
          std::vector<Result> results;
          // Reference: cuDNN's heuristic-best algorithm.
          y.poison();
          CudnnRun ref_run = cudnn_best_forward(ch.get(), cd, x.get(), w.get(), y.get(), 1.0, 0.0,
                                                CudnnPick::kHeuristic, &cudnn_ws);
          stream.sync();
          if (!ref_run.ok()) {
            std::printf("%-24s %-4s %-4s cuDNN cannot run this configuration (%s): skipped\n", np.name.c_str(),
                        dt_name(dt), nhwc ? "nhwc" : "nchw", ref_run.log.c_str());
            continue;
          }
          const std::vector<double> ref = read_y();

          // Every cuDNN algorithm.
          const float one = 1.0f, zero = 0.0f;
          Result best_cudnn{"cudnn", "", "", "", -1};
          for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
            const auto algo = cudnnConvolutionFwdAlgo_t(a);
            Result r{"cudnn", cudnn_algo_name(algo), "", "", -1};
            size_t wsb = 0;
            cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(ch.get(), cd.x, cd.w, cd.conv, cd.y, algo, &wsb);
            if (s == CUDNN_STATUS_SUCCESS && wsb > cudnn_ws.bytes()) cudnn_ws = DeviceBuffer(wsb, 0);
            const auto run = [&] {
              return cudnnConvolutionForward(ch.get(), &one, cd.x, x.get(), cd.w, w.get(), cd.conv, algo,
                                             cudnn_ws.get(), wsb, &zero, cd.y, y.get());
            };
            if (s == CUDNN_STATUS_SUCCESS) {
              s = run();
              stream.sync();
            }
            r.status = cudnnGetErrorString(s);
            if (s == CUDNN_STATUS_SUCCESS) {  // timed only: cuDNN's own algorithms are not under test here
              r.ms = time_median([&] { CUDNN_CHECK(run()); }, opt.reps, stream.get(), flush);
              if (best_cudnn.ms < 0 || r.ms < best_cudnn.ms) best_cudnn = r;
            }
            results.push_back(r);
          }

          // Every jhDNN solver, through the solver interface (each one, not only dispatch's pick).
          std::map<std::string, Result> ours;
          Result best_ours{"jhdnn", "", "", "", -1};
          for (const conv::ConvSolver* s : conv::all_solvers()) {
            Result r{"jhdnn", s->name(), "", "", -1};
            const conv::Verdict v = s->can_implement(p, dev);
            if (!v.ok) {
              r.status = "NOT_SUPPORTED";
              r.reason = v.reason;
            } else {
              const conv::ConvArgs args{x.get(), w.get(), y.get(), 1.0, 0.0};
              DeviceBuffer ws(s->workspace_bytes(p), 0);
              const auto run = [&] { return conv::run_solver(*s, p, args, ws.get(), ws.bytes(), stream.get()); };
              y.poison();
              core::Status st = run();
              stream.sync();
              r.status = jhdnnGetErrorString(st.code);
              r.reason = st.message;
              if (st.ok()) {
                r.err = rel_max_err(read_y(), ref);
                r.ms = time_median([&] { if (!run().ok()) throw std::runtime_error("solver failed"); }, opt.reps,
                                   stream.get(), flush);
                if (best_ours.ms < 0 || r.ms < best_ours.ms) best_ours = r;
              }
            }
            ours[r.algo] = r;
            results.push_back(r);
          }

          const double gflop = p.flops() * 1e-9;
          const auto ms_of = [&](const char* n) { auto it = ours.find(n); return it == ours.end() ? -1.f : it->second.ms; };
          double worst_err = 0;
          for (auto& kv : ours)
            if (kv.second.ms >= 0) worst_err = std::max(worst_err, std::isnan(kv.second.err) ? INFINITY : kv.second.err);
          const bool mismatch = worst_err > max_rel_err(dt);
          mismatches += mismatch;
          std::printf("%-24s %-4s %-4s %8.2f | %10.3f %10.3f %7.1f %9.2e | %10.3f %-22s | %6.3f\n", np.name.c_str(),
                      dt_name(dt), nhwc ? "nhwc" : "nchw", gflop, ms_of("direct_naive"), ms_of("direct_tiled"),
                      best_ours.ms > 0 ? gflop / best_ours.ms : 0.0, worst_err, best_cudnn.ms,
                      best_cudnn.algo.c_str(), best_ours.ms > 0 ? best_cudnn.ms / best_ours.ms : 0.0);
          if (mismatch) std::printf("  MISMATCH: error %.3e above the %.1e allowed for %s\n", worst_err, max_rel_err(dt), dt_name(dt));
          std::fflush(stdout);
          for (const Result& r : results) {
            std::string reason = r.reason;
            std::replace(reason.begin(), reason.end(), ',', ';');
            char line[1024];
            std::snprintf(line, sizeof line, "%s,%s,%s,%.4f,%s,%s,%s,%.5f,%.3f,%.3e,\"%s\"", np.name.c_str(),
                          dt_name(dt), nhwc ? "nhwc" : "nchw", gflop, r.impl.c_str(), r.algo.c_str(),
                          r.status.c_str(), r.ms, r.ms > 0 ? gflop / r.ms : 0.0, r.err, reason.c_str());
            csv_rows.push_back(line);
          }
        }
      }
    }
    if (!opt.csv.empty()) {
      std::ofstream f(opt.csv);
      for (const auto& l : csv_rows) f << l << "\n";
    }
    std::printf("# %d configuration(s) where a jhDNN solver disagreed with cuDNN beyond the bound\n", mismatches);
    if (mismatches > 0) return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jhdnn_compare: %s\n", e.what());
    return 1;
  }
  return 0;
}
