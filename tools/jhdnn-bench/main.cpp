// jhdnn-bench: every jhDNN solver and every cuDNN algorithm on each problem, verified and timed
// side by side; one row per (problem, data type / layout, algorithm). See README.md here.
//
// Per problem and configuration:
//  1. Inputs: uniform in [-1, 1), rounded to the data type, from a counter-based hash of
//     (JHDNN_TEST_SEED, problem name, element), generated on all host cores; uploaded once and
//     copied on the device into `copies` rotating sets (see measure.h).
//  2. References: cuDNN's heuristic-best dot-product algorithm (IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM,
//     GEMM, DIRECT) over the whole output, and the float64 CPU reference (tests/common/reference.h)
//     over the whole output when y_elems * K <= 2e8, else over 4096 sampled outputs (corners included).
//  3. Each algorithm: run once on poisoned (NaN) outputs and checked against both references
//     (tolerances in verify_tolerance below), then timed (measure.h).
// Exit: 0, 1 (a jhDNN mismatch or a failure), 2 (command line), 77 (no usable GPU).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "common/gpu_util.h"
#include "common/reference.h"
#include "common/test_util.h"
#include "conv/dispatch.h"
#include "core/config.h"
#include "core/problem_string.h"
#include "gpu_compare.h"
#include "verify.h"
#include "measure.h"
#include "options.h"

#ifndef JHDNN_GIT_COMMIT
#define JHDNN_GIT_COMMIT "unknown"
#endif

using namespace jhdnn;
using namespace jhdnn::test;
using namespace jhdnn::bench;

namespace {

// ---------------------------------------------------------------- rows

struct Row {
  std::string problem, shape, dt, layout, impl, algo, solver, status, reason;
  double gflop = 0, min_bytes = 0, floor_us = 0;
  double err_ref = NAN, err_cudnn = NAN;
  // ok / FAIL / - (not checked); cudnn_check also "cudnn-off": differs from a cuDNN output that is
  // itself off the float64 reference (not counted as a mismatch; ref_check decides).
  std::string ref_check = "-", cudnn_check = "-";
  Timing t;
  size_t ws_bytes = 0;
  double ratio_same = NAN, ratio_best = NAN;
  std::string cmd;
  bool ran = false;
};

std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string csv_escape(const std::string& s) {  // RFC 4180: quotes doubled inside a quoted field
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

const char* kCsvHeader =
    "problem,shape,dt,layout,impl,algo,solver,status,reason,gflop,min_bytes,floor_us,err_ref,ref_check,err_cudnn,"
    "cudnn_check,gpu_us,gpu_method,gpu_samples,eager_us,eager_samples,tflops,gbs,pct_floor,ratio_same,ratio_best,"
    "ws_bytes,cmd";

std::vector<std::string> row_fields(const Row& r) {
  const double tf = r.t.gpu_us > 0 ? r.gflop * 1e9 / (r.t.gpu_us * 1e-6) * 1e-12 : NAN;
  const double gbs = r.t.gpu_us > 0 ? r.min_bytes / (r.t.gpu_us * 1e-6) * 1e-9 : NAN;
  const double pct = r.t.gpu_us > 0 ? 100.0 * r.floor_us / r.t.gpu_us : NAN;
  return {r.problem, r.shape, r.dt, r.layout, r.impl, r.algo, r.solver, r.status, r.reason, fmt("%.6f", r.gflop),
          fmt("%.0f", r.min_bytes), fmt("%.3f", r.floor_us), fmt("%.3e", r.err_ref), r.ref_check,
          fmt("%.3e", r.err_cudnn), r.cudnn_check, fmt("%.3f", r.t.gpu_us > 0 ? r.t.gpu_us : NAN), r.t.gpu_method,
          std::to_string(r.t.gpu_samples), fmt("%.3f", r.t.eager_us > 0 ? r.t.eager_us : NAN),
          std::to_string(r.t.eager_samples), fmt("%.3f", tf), fmt("%.1f", gbs), fmt("%.1f", pct),
          fmt("%.3f", r.ratio_same), fmt("%.3f", r.ratio_best), std::to_string(r.ws_bytes), r.cmd};
}

void print_row(const Row& r) {
  const auto f = row_fields(r);
  // impl algo/solver status err_ref err_cudnn gpu_us eager_us TFLOP/s GB/s %floor xsame xbest ws
  std::string name = r.impl == "cudnn" ? "cudnn " + r.algo : r.solver;
  std::string status = r.status;
  if (is_mismatch(r.ref_check, r.cudnn_check)) status = "MISMATCH";
  std::printf("  %-28s %-9s %9s %9s %9s %9s %7s %7s %6s %7s %7s %9s  %s\n", name.c_str(), status.c_str(),
              f[12].c_str(), f[14].c_str(), f[16].c_str(), f[19].c_str(), f[21].c_str(), f[22].c_str(), f[23].c_str(),
              f[24].c_str(), f[25].c_str(), fmt("%.1f", r.ran ? double(r.ws_bytes) / 1048576.0 : NAN).c_str(),
              r.ran ? r.cmd.c_str() : (r.reason + "   [" + r.cmd + "]").c_str());
}

// ---------------------------------------------------------------- one problem, one configuration

struct Totals {
  int mismatches = 0, failures = 0, rows = 0, jh_verified = 0;
};

std::string short_status(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0 ? s + std::strlen(prefix) : s;
}

void run_config(const BenchOptions& o, const NamedProblem& np, const Config& cfg, const core::DeviceInfo& dev,
                cudnnHandle_t ch, jhdnnHandle_t jh, const CudaStream& stream, std::vector<Row>* out, Totals* tot) {
  const std::string& dt = cfg.dt;
  const jhdnnDataType_t dtype = dtype_of(dt);
  core::ConvProblem p = with_layout(np.p, dtype, cfg.nhwc);
  p.math_type = dt == "f32" ? JHDNN_FMA_MATH : dt == "f64" ? JHDNN_DEFAULT_MATH : JHDNN_TENSOR_OP_MATH;
  const bool verify = o.mode != "time", timing = o.mode != "verify";
  const size_t es = dtype_size(dtype);
  const size_t xb = size_t(p.x_span()) * es, wb = size_t(p.w_span()) * es, yb = size_t(p.y_span()) * es;
  const double min_bytes = double(xb + wb + yb);
  const double floor_us =
      std::max(p.flops() / (peak_tflops(dt) * 1e12), min_bytes / (peak_gbs() * 1e9)) * 1e6;
  const std::string shape = core::problem_string(p, np.name);
  const std::string layout = cfg.nhwc ? "nhwc" : "nchw";
  const std::string cmd_base = "jhdnn-bench --dt=" + dt + " --layout=" + layout +
                               (p.mode == JHDNN_CONVOLUTION ? " --conv-mode=convolution" : "") + " --mode=" + o.mode;

  std::printf("\n== %s  %s %s  %s  %.3f GFLOP  %.1f MB  floor %.2f us (%s)\n", np.name.c_str(), dt.c_str(),
              layout.c_str(), core::problem_string(p).c_str(), p.flops() * 1e-9, min_bytes / 1e6, floor_us,
              p.flops() / (peak_tflops(dt) * 1e12) >= min_bytes / (peak_gbs() * 1e9) ? "compute" : "memory");
  std::fflush(stdout);

  // Inputs, uploaded once, then copied into the rotation sets.
  const uint64_t seed = mix_seed(test_seed(), hash_string(np.name));
  const std::vector<double> hx = make_input(p.x_span(), seed * 2 + 1, dtype);
  const std::vector<double> hw = make_input(p.w_span(), seed * 2 + 2, dtype);
  const size_t footprint = xb + wb + yb;
  int copies = 1;
  if (timing) {
    const double want = 2.5 * double(dev.l2_bytes) / double(footprint);
    copies = int(std::min(512.0, std::max(1.0, std::ceil(want))));
    while (copies > 1 && double(copies) * double(footprint) > 4.0 * (1ull << 30)) --copies;
  }
  std::vector<DeviceBuffer> X, W, Y;
  X.emplace_back(xb, 0);
  W.emplace_back(wb, 0);
  X[0].upload(to_bytes_parallel(hx, dtype));
  W[0].upload(to_bytes_parallel(hw, dtype));
  for (int c = 0; c < copies; ++c) {
    if (c > 0) {
      X.emplace_back(xb, 0);
      W.emplace_back(wb, 0);
      CUDA_CHECK(cudaMemcpy(X[c].get(), X[0].get(), xb, cudaMemcpyDeviceToDevice));
      CUDA_CHECK(cudaMemcpy(W[c].get(), W[0].get(), wb, cudaMemcpyDeviceToDevice));
    }
    Y.emplace_back(yb, 0);
  }
  // The copies ran on the legacy stream, which our non-blocking stream does not wait for.
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  DeviceBuffer y_ref(yb, 0);

  // References.
  Reference ref;
  if (verify) ref = make_reference(p, hx, hw, seed, 2e8);
  std::unique_ptr<CudnnConvDescs> cd;
  std::string cudnn_desc_error;
  try {
    cd = std::make_unique<CudnnConvDescs>(p);
  } catch (const CudnnError& e) {
    cudnn_desc_error = e.what();
  }
  bool have_cudnn_ref = false;
  DeviceBuffer cudnn_ws;
  if (cd) {
    y_ref.poison();
    const CudnnRun r = cudnn_best_forward(ch, *cd, X[0].get(), W[0].get(), y_ref.get(), 1.0, 0.0,
                                          CudnnPick::kHeuristic, &cudnn_ws, size_t(1) << 32, kCudnnDotProductAlgos);
    stream.sync();
    have_cudnn_ref = r.ok();
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd->conv, cd->math));
  }
  const Tolerance tol = ref_tolerance(p, dt);
  // The float64 reference is the ground truth; cuDNN's output is a second opinion. Where cuDNN's own
  // output is off the float64 reference (seen on the H200: bf16 1x1 layers with C = 512, where
  // cuDNN 9.14's IMPLICIT_PRECOMP_GEMM is off by more than the output rounding on ~10% of the
  // outputs), a jhDNN result that passes the float64 check is not failed for disagreeing with it.
  std::string cudnn_ref_off;
  if (verify && have_cudnn_ref) {
    const RefCheck cr = check_reference(ref, y_ref.download(), p, dt, false);
    if (!cr.ok)
      cudnn_ref_off = "cuDNN's reference output is itself off the float64 reference (" + std::to_string(cr.bad) + "/" +
                      std::to_string(cr.checked) + (ref.full ? "" : " sampled") + " outputs)";
  }

  const auto base_row = [&](const std::string& impl, int algo) {
    Row r;
    r.problem = np.name, r.shape = core::problem_string(p), r.dt = dt, r.layout = layout, r.impl = impl;
    r.algo = core::algo_name(jhdnnConvolutionFwdAlgo_t(algo));
    r.gflop = p.flops() * 1e-9, r.min_bytes = min_bytes, r.floor_us = floor_us;
    return r;
  };
  // Verification of an output in Y[0] (filled by the run just done).
  const auto check = [&](Row& r, bool normwise) {
    const GpuCompare gc = have_cudnn_ref ? gpu_compare(Y[0].get(), y_ref.get(), p.y_span(), dtype, 2 * tol.atol,
                                                       2 * tol.rtol, stream.get())
                                         : GpuCompare{};
    if (have_cudnn_ref) {
      if (gc.n_nonfinite > 0) r.err_cudnn = INFINITY;
      else if (normwise) r.err_cudnn = gc.sum_ref2 > 0 ? std::sqrt(gc.sum_diff2 / gc.sum_ref2) : std::sqrt(gc.sum_diff2);
      else r.err_cudnn = gc.max_abs_ref > 0 ? gc.max_abs_diff / gc.max_abs_ref : gc.max_abs_diff;
      const bool ok = normwise ? r.err_cudnn <= norm_bound(dt) : gc.n_bad == 0;
      r.cudnn_check = cudnn_verdict(ok, !cudnn_ref_off.empty());
      if (!ok && r.reason.empty())
        r.reason = std::to_string(gc.n_bad) + " outputs differ from cuDNN (" + std::to_string(gc.n_nonfinite) +
                   " not finite), first at element " + std::to_string(gc.first_bad) +
                   (cudnn_ref_off.empty() ? "" : "; not counted: " + cudnn_ref_off);
    }
    if (verify) {
      const RefCheck rc = check_reference(ref, Y[0].download(), p, dt, normwise);
      r.err_ref = rc.err;
      r.ref_check = rc.ok ? "ok" : "FAIL";
      if (!rc.ok && r.reason.find("float64") == std::string::npos)
        r.reason += std::string(r.reason.empty() ? "" : "; ") + std::to_string(rc.bad) + "/" +
                    std::to_string(rc.checked) + (ref.full ? "" : " sampled") + " outputs off the float64 reference";
    }
  };

  std::vector<Row> rows;
  const double ws_limit = o.ws_limit_gib * double(1ull << 30);
  // Which algorithms the selected jhDNN solvers serve (for --cudnn=same).
  std::vector<int> solver_algos;
  for (const conv::ConvSolver* s : conv::all_solvers())
    if (selects_solver(o, s->name(), s->algo())) solver_algos.push_back(s->algo());

  // cuDNN: every algorithm.
  const float one = 1.0f, zero = 0.0f;
  const double done = 1.0, dzero = 0.0;
  const void* alpha = dtype == JHDNN_DATA_DOUBLE ? static_cast<const void*>(&done) : &one;
  const void* beta = dtype == JHDNN_DATA_DOUBLE ? static_cast<const void*>(&dzero) : &zero;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
    if (!selects_cudnn(o, a, solver_algos)) continue;
    Row r = base_row("cudnn", a);
    r.cmd = cmd_base + " --algo=" + r.algo + " '" + shape + "'";
    if (!cd) {
      r.status = "NOT_SUPPORTED", r.reason = cudnn_desc_error;
      rows.push_back(r);
      continue;
    }
    const auto algo = cudnnConvolutionFwdAlgo_t(a);
    size_t wsb = 0;
    cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize(ch, cd->x, cd->w, cd->conv, cd->y, algo, &wsb);
    if (s == CUDNN_STATUS_SUCCESS && double(wsb) > ws_limit) {
      r.status = "SKIPPED", r.reason = "workspace " + std::to_string(wsb) + " bytes > --ws-limit-gib";
      rows.push_back(r);
      continue;
    }
    if (s == CUDNN_STATUS_SUCCESS && wsb > cudnn_ws.bytes()) cudnn_ws = DeviceBuffer(wsb, 0);
    const auto launch = [&](int c, std::string* why) {
      const cudnnStatus_t st = cudnnConvolutionForward(ch, alpha, cd->x, X[c].get(), cd->w, W[c].get(), cd->conv,
                                                       algo, cudnn_ws.get(), wsb, beta, cd->y, Y[c].get());
      if (st != CUDNN_STATUS_SUCCESS) *why = cudnnGetErrorString(st);
      return st == CUDNN_STATUS_SUCCESS;
    };
    if (s == CUDNN_STATUS_SUCCESS) {
      Y[0].poison();
      s = cudnnConvolutionForward(ch, alpha, cd->x, X[0].get(), cd->w, W[0].get(), cd->conv, algo, cudnn_ws.get(),
                                  wsb, beta, cd->y, Y[0].get());
      stream.sync();
    }
    r.status = short_status(cudnnGetErrorString(s), "CUDNN_STATUS_");
    if (s != CUDNN_STATUS_SUCCESS) {
      char msg[512] = {};
      cudnnGetLastErrorString(msg, sizeof msg);
      r.reason = msg;
      rows.push_back(r);
      continue;
    }
    r.ran = true, r.ws_bytes = wsb;
    check(r, is_normwise(a));
    if (timing) {
      std::string why;
      const double est = time_once_us(launch, stream.get(), &why);
      r.t = est < 0 ? Timing{} : measure(launch, launch, copies, est, o.reps, o.budget_ms, stream.get());
      if (est < 0) r.t.error = why;
      if (!r.t.error.empty()) r.reason = r.t.error;
    }
    rows.push_back(r);
  }

  // jhDNN: every solver, forced (core::config's force list) for the eager (API) timing.
  std::unique_ptr<JhdnnConvDescs> jd;
  std::string jh_desc_error;
  try {
    jd = std::make_unique<JhdnnConvDescs>(p);
  } catch (const std::exception& e) {
    jh_desc_error = e.what();
  }
  for (const conv::ConvSolver* s : conv::all_solvers()) {
    if (!selects_solver(o, s->name(), s->algo())) continue;
    Row r = base_row("jhdnn", s->algo());
    r.solver = s->name();
    r.cmd = cmd_base + " --algo=" + r.solver + " '" + shape + "'";
    if (!conv::solver_enabled(*s)) {
      r.status = "DISABLED", r.reason = "JHDNN_DISABLE";
      rows.push_back(r);
      continue;
    }
    const conv::Verdict v = s->can_implement(p, dev);
    if (!v.ok || !jd) {
      r.status = "NOT_SUPPORTED", r.reason = v.ok ? jh_desc_error : v.reason;
      rows.push_back(r);
      continue;
    }
    r.ws_bytes = s->workspace_bytes(p);
    DeviceBuffer ws(r.ws_bytes, 0);
    const auto graph_launch = [&](int c, std::string* why) {
      const conv::ConvArgs args{X[c].get(), W[c].get(), Y[c].get(), 1.0, 0.0, jh};
      const core::Status st = conv::run_solver(*s, p, args, ws.get(), ws.bytes(), stream.get());
      if (!st.ok()) *why = st.message;
      return st.ok();
    };
    const auto api_launch = [&](int c, std::string* why) {
      const jhdnnStatus_t st =
          jhdnnConvolutionForward(jh, alpha, jd->x, X[c].get(), jd->w, W[c].get(), jd->conv, jhdnnConvolutionFwdAlgo_t(s->algo()),
                                  ws.get(), ws.bytes(), beta, jd->y, Y[c].get());
      if (st != JHDNN_STATUS_SUCCESS) {
        char msg[512] = {};
        jhdnnGetLastErrorString(msg, sizeof msg);
        *why = std::string(jhdnnGetErrorString(st)) + ": " + msg;
      }
      return st == JHDNN_STATUS_SUCCESS;
    };
    // The public API takes the first enabled solver of the algorithm: force this one, which switches
    // the others of its algorithm off. A setter, not setenv: the library reads its environment once,
    // and the forced-solver check in the timed calls is two bits, not a getenv and a parse.
    // Cleared however this iteration ends (an exception included); the user's JHDNN_DISABLE stays.
    struct ForceRestore {
      ~ForceRestore() { core::config::set_forced_solvers(nullptr); }
    } restore;
    core::config::set_forced_solvers(s->name());
    Y[0].poison();
    std::string why;
    const bool ok = api_launch(0, &why);  // the verified run goes through the public API
    stream.sync();
    r.status = ok ? "SUCCESS" : why.substr(0, why.find(':'));
    if (!ok) {
      r.reason = why;
      ++tot->failures;
    } else {
      r.ran = true;
      check(r, is_normwise(s->algo()));
      if (is_mismatch(r.ref_check, r.cudnn_check)) ++tot->mismatches;
      if (verify && r.ref_check == "ok" && r.cudnn_check != "FAIL") ++tot->jh_verified;
      if (timing) {
        const double est = time_once_us(graph_launch, stream.get(), &why);
        r.t = est < 0 ? Timing{} : measure(graph_launch, api_launch, copies, est, o.reps, o.budget_ms, stream.get());
        if (est < 0) r.t.error = why;
        if (!r.t.error.empty()) {
          r.reason += (r.reason.empty() ? "" : "; ") + r.t.error;
          ++tot->failures;
        }
      }
    }
    rows.push_back(r);
  }

  // Ratios (cuDNN time / this time: > 1 means faster than cuDNN).
  std::map<std::string, double> cudnn_us;
  double best = -1;
  for (const Row& r : rows)
    if (r.impl == "cudnn" && r.t.gpu_us > 0) {
      cudnn_us[r.algo] = r.t.gpu_us;
      if (best < 0 || r.t.gpu_us < best) best = r.t.gpu_us;
    }
  std::printf("  %-28s %-9s %9s %9s %9s %9s %7s %7s %6s %7s %7s %9s  %s\n", "algorithm", "status", "err_ref",
              "err_cudnn", "gpu_us", "eager_us", "TFLOP/s", "GB/s", "%floor", "x_same", "x_best", "ws_MB",
              "command / reason");
  for (Row& r : rows) {
    if (r.t.gpu_us > 0) {
      const auto it = cudnn_us.find(r.algo);
      if (it != cudnn_us.end()) r.ratio_same = it->second / r.t.gpu_us;
      if (best > 0) r.ratio_best = best / r.t.gpu_us;
    }
    print_row(r);
    out->push_back(r);
    ++tot->rows;
  }
  std::fflush(stdout);
}

void write_outputs(const BenchOptions& o, const std::vector<Row>& rows, const std::string& gpu, double seconds) {
  const std::string commit = std::getenv("JHDNN_COMMIT") ? std::getenv("JHDNN_COMMIT") : JHDNN_GIT_COMMIT;
  if (!o.csv.empty()) {
    std::ofstream f(o.csv);
    f << "# gpu: " << gpu << "\n# commit: " << commit << "\n# seed: " << test_seed() << "\n# seconds: " << seconds
      << "\n# peak_gbs: " << peak_gbs() << "\n";
    f << kCsvHeader << "\n";
    for (const Row& r : rows) {
      const auto fs = row_fields(r);
      for (size_t i = 0; i < fs.size(); ++i) {
        const bool quote = i == 8 || i == fs.size() - 1 || i == 1 || i == 0;
        f << (i ? "," : "") << (quote ? csv_escape(fs[i]) : fs[i]);
      }
      f << "\n";
    }
    if (!f) std::fprintf(stderr, "jhdnn-bench: writing %s failed\n", o.csv.c_str());
  }
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    std::vector<std::string> keys;
    std::stringstream hs(kCsvHeader);
    for (std::string k; std::getline(hs, k, ',');) keys.push_back(k);
    f << "{\"gpu\": \"" << json_escape(gpu) << "\", \"commit\": \"" << commit << "\", \"seed\": " << test_seed()
      << ", \"seconds\": " << seconds << ", \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto fs = row_fields(rows[i]);
      f << "  {";
      for (size_t k = 0; k < fs.size(); ++k) f << (k ? ", " : "") << "\"" << keys[k] << "\": \"" << json_escape(fs[k]) << "\"";
      f << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    f << "]}\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions o;
  std::string err;
  if (!parse_bench_args(argc, argv, &o, &err)) {
    std::fprintf(stderr, "jhdnn-bench: %s\n(jhdnn-bench --help lists the options)\n", err.c_str());
    return 2;
  }
  if (o.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (o.dir != "fwd") {
    std::fprintf(stderr, "jhdnn-bench: --dir=%s: backward convolution is not implemented in jhDNN yet\n", o.dir.c_str());
    return 2;
  }
  for (const std::string& a : o.algos) {
    bool known = false;
    BenchOptions one;
    one.algos = {a};
    for (int i = 0; i < JHDNN_CONVOLUTION_FWD_ALGO_COUNT; ++i) known = known || selects_solver(one, "", i);
    for (const conv::ConvSolver* s : conv::all_solvers()) known = known || a == s->name();
    if (!known) {
      std::string names;
      for (const conv::ConvSolver* s : conv::all_solvers()) names += std::string(names.empty() ? "" : ", ") + s->name();
      std::fprintf(stderr, "jhdnn-bench: --algo: '%s' is neither an algorithm (IMPLICIT_GEMM ... WINOGRAD_NONFUSED, 0-7) nor a solver (%s)\n",
                   a.c_str(), names.c_str());
      return 2;
    }
  }
  std::vector<NamedProblem> problems;
  try {
    problems = resolve_problems(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jhdnn-bench: %s\n", e.what());
    return 2;
  }
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "jhdnn-bench: no usable GPU (%s); nothing was run\n", why.c_str());
    return 77;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  Totals tot;
  const std::string gpu = gpu_description();
  try {
    JhdnnHandle jh;
    CudnnHandle ch;
    CudaStream stream;
    JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
    CUDNN_CHECK(cudnnSetStream(ch.get(), stream.get()));
    core::DeviceInfo dev;
    if (!core::query_device(&dev).ok()) throw std::runtime_error("query_device failed");
    std::printf("# jhdnn-bench: %zu problem(s) x %zu configuration(s), mode %s; %s; commit %s\n", problems.size(),
                o.configs.size(), o.mode.c_str(), gpu.c_str(),
                std::getenv("JHDNN_COMMIT") ? std::getenv("JHDNN_COMMIT") : JHDNN_GIT_COMMIT);
    std::printf("# inputs seed %llu (JHDNN_TEST_SEED replays them). gpu_us: CUDA-graph replay, inputs rotated over >= 2.5x L2,"
                " median; eager_us: host clock per back-to-back API call. err_*: max|d|/max|ref| (Winograd/FFT: relative L2)."
                " x_same / x_best: cuDNN same-algorithm / best time over this time (> 1: faster than cuDNN)."
                " %%floor: max(FLOP/peak, bytes/BW) / time.\n",
                (unsigned long long)test_seed());
    for (const NamedProblem& np : problems)
      for (const Config& cfg : o.configs) {
        try {
          run_config(o, np, cfg, dev, ch.get(), jh.get(), stream, &rows, &tot);
        } catch (const CudaError& e) {
          std::fprintf(stderr, "jhdnn-bench: %s %s: %s\n", np.name.c_str(), cfg.name().c_str(), e.what());
          ++tot.failures;
          if (cudaDeviceSynchronize() != cudaSuccess) throw;  // sticky error: the context is gone
        } catch (const std::exception& e) {
          std::fprintf(stderr, "jhdnn-bench: %s %s: %s\n", np.name.c_str(), cfg.name().c_str(), e.what());
          ++tot.failures;
        }
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jhdnn-bench: %s\n", e.what());
    ++tot.failures;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_outputs(o, rows, gpu, seconds);
  std::printf("\n# %d rows in %.1f s; %d jhDNN results verified; %d mismatches; %d failures\n", tot.rows, seconds,
              tot.jh_verified, tot.mismatches, tot.failures);
  for (const Row& r : rows)
    if (r.impl == "jhdnn" && is_mismatch(r.ref_check, r.cudnn_check))
      std::printf("MISMATCH %s %s %s %s: %s\n  repro: %s\n", r.problem.c_str(), r.dt.c_str(), r.layout.c_str(),
                  r.solver.c_str(), r.reason.c_str(), r.cmd.c_str());
  return tot.mismatches > 0 || tot.failures > 0 ? 1 : 0;
}
