// GPU correctness of the GEMM convolution (CUDNN_CONVOLUTION_FWD_ALGO_GEMM): both GEMM solvers
// (gemm_ours: im2col + our SGEMM; gemm_cublas: im2col + cuBLAS) through the solver interface, the
// public API (jhdnnConvolutionForward with ALGO_GEMM) and cuDNN on the same buffers, over the
// shared problem set in NCHW and NHWC, plus alpha / beta, CONVOLUTION mode, 3-D, the chunked
// (workspace-capped) path and the refusals.
//
// The harness (host problem, device layouts, poisoning, guard bytes, comparisons) is the one of
// test_conv_direct.cpp; see its header for how one configuration is checked. cuDNN runs its own
// GEMM algorithm where it offers it, else its best dot-product algorithm (counted in the notes).
//
// Every TEST_CASE starts with JHDNN_REQUIRE_GPU(): without a GPU they are reported as skipped.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/reference.h"
#include "common/test_util.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/solver.h"
#include "core/conv_problem.h"
#include "core/device_info.h"
#include "core/status.h"

using namespace jhdnn;
using namespace jhdnn::test;
using core::ConvProblem;

namespace {

// ================================================================ process-wide GPU state

// One jhDNN handle, one cuDNN handle (cudnnCreate is slow) and one non-blocking stream that both
// handles and every solver run use; created on first use, after JHDNN_REQUIRE_GPU has passed.
struct Gpu {
  CudaStream stream;
  JhdnnHandle jh;
  CudnnHandle ch;
  core::DeviceInfo dev;
  DeviceBuffer cudnn_ws;  // grown on demand by cudnn_best_forward

  Gpu() {
    JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
    CUDNN_CHECK(cudnnSetStream(ch.get(), stream.get()));
    const core::Status s = core::query_device(&dev);
    if (!s.ok()) throw std::runtime_error("core::query_device: " + s.message);
    std::printf("test_conv_gemm: %s\n", gpu_description().c_str());
    std::printf("test_conv_gemm: seed %" PRIu64 " (rerun with JHDNN_TEST_SEED=%" PRIu64 ")\n", test_seed(),
                test_seed());
    std::fflush(stdout);
  }
};

Gpu& gpu() {
  static Gpu g;
  return g;
}

std::string jhdnn_last_error() {
  char buf[2048] = {};
  jhdnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

const char* dt_name(jhdnnDataType_t dt) { return core::data_type_name(dt); }

const char* layout_name(const ConvProblem& p) {
  if (p.x_packed_nchw() && p.y_packed_nchw()) return p.spatial_dims == 3 ? "NCDHW" : "NCHW";
  if (p.x_packed_nhwc() && p.y_packed_nhwc()) return p.spatial_dims == 3 ? "NDHWC" : "NHWC";
  return "strided";
}

// Packed strides of logical dims (n, c, d, h, w): NCDHW, or NDHWC when channels_last.
void packed(const int64_t d[5], bool channels_last, int64_t s[5]) {
  if (channels_last) {
    s[1] = 1, s[4] = d[1], s[3] = d[4] * s[4], s[2] = d[3] * s[3], s[0] = d[2] * s[2];
  } else {
    s[4] = 1, s[3] = d[4], s[2] = d[3] * s[3], s[1] = d[2] * s[2], s[0] = d[1] * s[1];
  }
}

// ================================================================ host side of one problem

struct Scale {
  double alpha = 1.0, beta = 0.0;
};

// One logical problem in one data type: inputs, initial y and the float64 reference, all in the
// packed NCHW (NCDHW) strides of `base`. Built without any Catch2 assertion, so it may run on a
// worker thread (the next problem is prepared while the GPU checks the current one).
struct HostProblem {
  std::string name;
  ConvProblem base;
  Scale sc;
  std::vector<double> x, w, y0, ref;  // y0 empty when beta == 0
};

HostProblem make_host_problem(const std::string& name, const ConvProblem& base, Scale sc) {
  if (!base.x_packed_nchw() || !base.w_packed_kcrs() || !base.y_packed_nchw())
    throw std::invalid_argument("make_host_problem: base must be packed NCHW / KCRS: " + base.key());
  HostProblem h;
  h.name = name;
  h.base = base;
  h.sc = sc;
  const jhdnnDataType_t dt = base.dtype;
  const uint64_t salt = hash_string(name + "|" + dt_name(dt) + (base.mode == JHDNN_CONVOLUTION ? "|conv" : ""));
  h.x.resize(size_t(base.x_span()));
  h.w.resize(size_t(base.w_span()));
  fill_random(h.x, dt, mix_seed(test_seed(), salt + 1));
  fill_random(h.w, dt, mix_seed(test_seed(), salt + 2));
  h.ref.assign(size_t(base.y_span()), 0.0);
  if (sc.beta != 0.0) {
    h.y0.resize(size_t(base.y_span()));
    fill_random(h.y0, dt, mix_seed(test_seed(), salt + 3));
    h.ref = h.y0;
  }
  conv_fwd_reference(base, h.x.data(), h.w.data(), h.ref.data(), sc.alpha, sc.beta);
  return h;
}

// 1 for each element offset of [0, span) that is a logical element of the strided tensor.
std::vector<uint8_t> logical_mask(const int64_t dims[5], const int64_t strides[5], int64_t span) {
  std::vector<uint8_t> m(size_t(span), 0);
  for_each_index(dims, strides, [&](int64_t off) { m[size_t(off)] = 1; });
  return m;
}

// Device byte image of a tensor whose logical values are `logical` (in src_strides), laid out in
// dst_strides over span elements; every byte between logical elements is 0xFF (NaN), so a kernel
// that reads a gap of x / w produces NaN, and one that writes a gap of y is caught.
std::vector<unsigned char> device_image(const std::vector<double>& logical, const int64_t src_strides[5],
                                        const int64_t dims[5], const int64_t dst_strides[5], int64_t span,
                                        jhdnnDataType_t dt) {
  std::vector<double> v(size_t(span), std::numeric_limits<double>::quiet_NaN());
  copy_tensor(logical.data(), src_strides, v.data(), dst_strides, dims);
  std::vector<unsigned char> bytes = to_device_bytes(v, dt);
  int64_t elems = 1;
  for (int i = 0; i < 5; ++i) elems *= dims[i];
  if (elems != span) {
    const size_t es = dtype_size(dt);
    const std::vector<uint8_t> m = logical_mask(dims, dst_strides, span);
    for (size_t i = 0; i < m.size(); ++i)
      if (!m[i]) std::memset(bytes.data() + i * es, 0xFF, es);
  }
  return bytes;
}

// ================================================================ device side of one layout

// One HostProblem laid out as `layout` (same sizes, any strides) on the device.
struct DeviceProblem {
  ConvProblem p;
  DeviceBuffer x, w, y;
  std::vector<unsigned char> y_init;  // what y holds before each run
  std::vector<uint8_t> y_mask;        // logical elements of y; empty when y has no gaps

  DeviceProblem(const HostProblem& h, const ConvProblem& layout) : p(layout) {
    const jhdnnDataType_t dt = p.dtype;
    const size_t es = dtype_size(dt);
    const auto xd = x_dims(p), wd = w_dims(p), yd = y_dims(p);
    x = DeviceBuffer(size_t(p.x_span()) * es);
    w = DeviceBuffer(size_t(p.w_span()) * es);
    y = DeviceBuffer(size_t(p.y_span()) * es);
    x.upload(device_image(h.x, h.base.x_stride, xd.data(), p.x_stride, p.x_span(), dt));
    w.upload(device_image(h.w, h.base.w_stride, wd.data(), p.w_stride, p.w_span(), dt));
    if (h.sc.beta != 0.0)
      y_init = device_image(h.y0, h.base.y_stride, yd.data(), p.y_stride, p.y_span(), dt);
    else
      y_init.assign(y.bytes(), 0xFF);  // NaN everywhere: beta == 0 must not read it
    if (p.y_span() != p.y_elems()) y_mask = logical_mask(yd.data(), p.y_stride, p.y_span());
  }

  void reset_y() { y.upload(y_init); }
};

// Checks a finished run (the stream has been synchronized): guards of x, w, y (and ws), y's gap
// bytes, and y's logical values against the reference. Returns y re-laid out in the reference's
// strides, for cross-checks.
std::vector<double> check_result(const std::string& who, const DeviceProblem& d, const HostProblem& h,
                                 Tolerance tol, bool check_gaps = true, const DeviceBuffer* ws = nullptr) {
  INFO("result of " << who);
  CHECK(d.x.guard_intact());
  CHECK(d.w.guard_intact());
  CHECK(d.y.guard_intact());
  if (ws != nullptr) CHECK(ws->guard_intact());
  const std::vector<unsigned char> bytes = d.y.download();
  const size_t es = dtype_size(d.p.dtype);
  if (check_gaps && !d.y_mask.empty()) {
    int64_t changed = 0, first = -1;
    for (size_t i = 0; i < d.y_mask.size(); ++i) {
      if (d.y_mask[i]) continue;
      if (std::memcmp(bytes.data() + i * es, d.y_init.data() + i * es, es) != 0) {
        if (first < 0) first = int64_t(i);
        ++changed;
      }
    }
    INFO("elements between y's logical elements written: " << changed << " (first at element offset " << first
                                                           << ")");
    CHECK(changed == 0);
  }
  const std::vector<double> got = from_device_bytes(bytes.data(), size_t(d.p.y_span()), d.p.dtype);
  const auto yd = y_dims(d.p);
  std::vector<double> got_base(h.ref.size());
  copy_tensor(got.data(), d.p.y_stride, got_base.data(), h.base.y_stride, yd.data());
  const CompareResult r = compare_tensor(got_base.data(), h.ref.data(), yd.data(), h.base.y_stride, tol);
  INFO(r.summary());
  CHECK(r.ok);
  return got_base;
}

// ================================================================ notes (counted, printed, not failures)

struct Notes {
  std::string title;
  int64_t configs = 0, solver_runs = 0, api_runs = 0;
  int64_t cudnn_ran = 0, cudnn_not_supported = 0, cudnn_refused = 0;
  int64_t cudnn_gemm_ran = 0;  // of cudnn_ran: with cuDNN's own GEMM algorithm
  std::map<std::string, int64_t> not_applicable;  // "solver: reason" -> count
  std::map<std::string, int64_t> runs_by_solver;  // solver name -> configurations it ran
  std::vector<std::string> cudnn_examples;        // the first few skipped cuDNN configurations

  explicit Notes(std::string t) : title(std::move(t)) {}

  void cudnn_skip(bool not_supported, const std::string& what) {
    (not_supported ? cudnn_not_supported : cudnn_refused) += 1;
    if (cudnn_examples.size() < 6) cudnn_examples.push_back(what);
  }

  void print() const {
    std::printf("[%s] %" PRId64 " configurations: %" PRId64 " solver runs, %" PRId64 " API runs; cuDNN ran %" PRId64
                ", skipped %" PRId64 " (NOT_SUPPORTED) + %" PRId64 " (other refusal)\n",
                title.c_str(), configs, solver_runs, api_runs, cudnn_ran, cudnn_not_supported, cudnn_refused);
    std::printf("[%s]   cuDNN ran its GEMM algorithm on %" PRId64 " of them\n", title.c_str(), cudnn_gemm_ran);
    for (const auto& [why, n] : not_applicable)
      std::printf("[%s]   not applicable x%" PRId64 ": %s\n", title.c_str(), n, why.c_str());
    for (const std::string& e : cudnn_examples) std::printf("[%s]   cuDNN skipped: %s\n", title.c_str(), e.c_str());
    std::fflush(stdout);
    // Every refusal must be NOT_SUPPORTED: a BAD_PARAM from cuDNN means the harness built a wrong
    // descriptor, and skipping it would hide that.
    CHECK(cudnn_refused == 0);
  }
};

// ================================================================ the three paths

std::vector<const conv::ConvSolver*> gemm_solvers() {
  std::vector<const conv::ConvSolver*> v;
  for (const conv::ConvSolver* s : conv::all_solvers())
    if (s->algo() == JHDNN_CONVOLUTION_FWD_ALGO_GEMM) v.push_back(s);
  return v;
}

// (a) Each GEMM solver through ConvSolver::run on the test stream. Both must serve every FLOAT
// problem with packed NCHW / NHWC tensors (the whole shared set); a refusal is a failure.
void run_solvers(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes) {
  Gpu& g = gpu();
  const std::vector<const conv::ConvSolver*> solvers = gemm_solvers();
  REQUIRE(solvers.size() == 2);
  CHECK(std::strcmp(solvers[0]->name(), "gemm_ours") == 0);  // ours first: dispatch takes it
  CHECK(std::strcmp(solvers[1]->name(), "gemm_cublas") == 0);
  for (const conv::ConvSolver* s : solvers) {
    INFO("solver " << s->name());
    const conv::Verdict v = s->can_implement(d.p, g.dev);
    if (!v.ok) {
      FAIL_CHECK(s->name() << " refused a packed FLOAT problem: " << v.reason);
      continue;
    }
    const size_t ws_bytes = s->workspace_bytes(d.p);
    DeviceBuffer ws(ws_bytes);  // poisoned: im2col must write every element the GEMM reads
    d.reset_y();
    const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta, g.jh.get()};
    const core::Status st = s->run(d.p, args, ws_bytes ? ws.get() : nullptr, ws_bytes, g.stream.get());
    g.stream.sync();
    INFO("run status " << core::status_name(st.code) << ": " << st.message);
    CHECK(st.ok());
    if (!st.ok()) continue;
    ++notes.solver_runs;
    ++notes.runs_by_solver[s->name()];
    check_result(std::string("solver ") + s->name(), d, h, tol, true, &ws);
    if (ws_bytes > 0) {  // a too-small workspace is refused, not overrun
      const core::Status small = s->run(d.p, args, ws.get(), ws_bytes - 1, g.stream.get());
      CHECK(small.code == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
    }
  }
}

// (b) The public API with ALGO_GEMM; returns the result (reference strides), empty on failure.
std::vector<double> run_api(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes,
                            jhdnnHandle_t handle = nullptr) {
  Gpu& g = gpu();
  if (handle == nullptr) handle = g.jh.get();
  JhdnnConvDescs descs(d.p);
  {  // the descriptors describe exactly the problem
    const NdDescArrays a = nd_desc_arrays(d.p);
    int out[5] = {};
    CHECK(jhdnnGetConvolutionNdForwardOutputDim(descs.conv, descs.x, descs.w, a.nb_dims, out) ==
          JHDNN_STATUS_SUCCESS);
    for (int i = 0; i < a.nb_dims; ++i) CHECK(out[i] == a.y_dims[i]);
  }
  size_t ws_bytes = 0;
  const jhdnnStatus_t wst = jhdnnGetConvolutionForwardWorkspaceSize(handle, descs.x, descs.w, descs.conv, descs.y,
                                                                     JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &ws_bytes);
  INFO("jhdnnGetConvolutionForwardWorkspaceSize: " << jhdnnGetErrorString(wst) << " " << jhdnn_last_error());
  CHECK(wst == JHDNN_STATUS_SUCCESS);
  if (wst != JHDNN_STATUS_SUCCESS) return {};
  DeviceBuffer ws(ws_bytes);
  d.reset_y();
  const float af = float(h.sc.alpha), bf = float(h.sc.beta);
  const double ad = h.sc.alpha, bd = h.sc.beta;
  const bool dbl = d.p.dtype == JHDNN_DATA_DOUBLE;
  const jhdnnStatus_t st = jhdnnConvolutionForward(
      handle, dbl ? static_cast<const void*>(&ad) : static_cast<const void*>(&af), descs.x, d.x.get(), descs.w,
      d.w.get(), descs.conv, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, ws_bytes ? ws.get() : nullptr, ws_bytes,
      dbl ? static_cast<const void*>(&bd) : static_cast<const void*>(&bf), descs.y, d.y.get());
  g.stream.sync();
  INFO("jhdnnConvolutionForward: " << jhdnnGetErrorString(st) << " " << jhdnn_last_error());
  CHECK(st == JHDNN_STATUS_SUCCESS);
  if (st != JHDNN_STATUS_SUCCESS) return {};
  ++notes.api_runs;
  return check_result("jhdnnConvolutionForward(GEMM)", d, h, tol, true, &ws);
}

// (c) cuDNN's best algorithm on the same buffers: vs the reference, and jhDNN (jh) vs cuDNN.
void run_cudnn(DeviceProblem& d, const HostProblem& h, const std::vector<double>& jh, Notes& notes) {
  Gpu& g = gpu();
  const std::string what = h.name + " " + dt_name(d.p.dtype) + " " + layout_name(d.p);
  std::unique_ptr<CudnnConvDescs> cd;
  // FLOAT: FMA math, so cuDNN computes in fp32 as jhDNN does and the comparison can use the fp32
  // tolerance (under DEFAULT_MATH cuDNN may use TF32 products, whose error hides a wrong tap).
  ConvProblem cp = d.p;
  if (cp.dtype == JHDNN_DATA_FLOAT) cp.math_type = JHDNN_FMA_MATH;
  try {
    cd = std::make_unique<CudnnConvDescs>(cp);
  } catch (const CudnnError& e) {
    notes.cudnn_skip(cudnn_not_supported(e.status), what + ": descriptor refused: " + e.what());
    return;
  }
  d.reset_y();
  // Only cuDNN's dot-product algorithms: their error model is conv_tolerance's (FFT / Winograd
  // errors are norm-wise and larger).
  // cuDNN's GEMM algorithm first (the one this solver mirrors); where cuDNN does not offer it for
  // the configuration, its best dot-product algorithm, so every result is still checked against cuDNN.
  CudnnRun r = cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta,
                                  CudnnPick::kHeuristic, &g.cudnn_ws, size_t(1) << 31,
                                  1u << CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  g.stream.sync();
  if (r.ok()) {
    ++notes.cudnn_gemm_ran;
  } else {
    d.reset_y();
    r = cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta,
                           CudnnPick::kHeuristic, &g.cudnn_ws, size_t(1) << 31, kCudnnDotProductAlgos);
    g.stream.sync();
  }
  if (!r.ok()) {
    notes.cudnn_skip(r.not_supported(), what + ": " + cudnnGetErrorString(r.status) + " [" + r.log + "]");
    return;
  }
  ++notes.cudnn_ran;
  INFO("cuDNN " << cudnn_algo_name(r.algo) << " (" << r.log << ")");
  // cuDNN may use TF32 products for FLOAT data unless the math type is FMA.
  const bool tf32 = d.p.dtype == JHDNN_DATA_FLOAT && r.math != CUDNN_FMA_MATH;
  const Tolerance tc = conv_tolerance(d.p.dtype, d.p.reduction(), tf32);
  const std::vector<double> cu = check_result("cuDNN", d, h, tc, /*check_gaps=*/false);
  if (jh.empty()) return;
  const auto yd = y_dims(d.p);
  const CompareResult c = compare_tensor(jh.data(), cu.data(), yd.data(), h.base.y_stride,
                                         Tolerance{2.0 * tc.atol, 2.0 * tc.rtol});
  INFO("jhDNN vs cuDNN: " << c.summary());
  CHECK(c.ok);
}

// Every path on every layout of one host problem.
void run_all_paths(const HostProblem& h, const std::vector<ConvProblem>& layouts, Notes& notes,
                   bool with_cudnn = true) {
  const Tolerance tol = conv_tolerance(h.base.dtype, h.base.reduction());
  for (const ConvProblem& lp : layouts) {
    INFO("layout " << layout_name(lp) << ": " << lp.key() << " (alpha " << h.sc.alpha << ", beta " << h.sc.beta
                   << ")");
    ++notes.configs;
    DeviceProblem d(h, lp);
    run_solvers(d, h, tol, notes);
    const std::vector<double> jh = run_api(d, h, tol, notes);
    if (with_cudnn) run_cudnn(d, h, jh, notes);
  }
}

// Runs `problems` (any data type, given as packed NCHW bases) in NCHW and NHWC, preparing the next
// problem's reference on a worker thread while the GPU checks the current one.
void run_problem_list(const std::vector<NamedProblem>& problems, jhdnnDataType_t dt, Scale sc, Notes& notes,
                      bool with_cudnn = true) {
  if (problems.empty()) return;
  auto make = [&](size_t i) { return make_host_problem(problems[i].name, with_layout(problems[i].p, dt, false), sc); };
  std::future<HostProblem> next = std::async(std::launch::async, make, size_t(0));
  for (size_t i = 0; i < problems.size(); ++i) {
    const HostProblem h = next.get();
    if (i + 1 < problems.size()) next = std::async(std::launch::async, make, i + 1);
    INFO("problem " << h.name << " [" << h.base.key() << "]");
    run_all_paths(h, {with_layout(problems[i].p, dt, false), with_layout(problems[i].p, dt, true)}, notes,
                  with_cudnn);
  }
}

#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

// ================================================================ extra problems

// A packed NCDHW 3-D problem (with_layout re-lays it for NDHWC).
ConvProblem make_problem_3d(jhdnnDataType_t dt, int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t K,
                            int64_t T, int64_t R, int64_t S, std::array<int, 3> pad, std::array<int, 3> stride,
                            std::array<int, 3> dil, int64_t G = 1,
                            jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
  ConvProblem p = core::make_problem_2d(dt, false, N, C, H, W, K, R, S, pad[1], pad[2], stride[1], stride[2], dil[1],
                                        dil[2], G, mode);
  p.spatial_dims = 3;
  p.D = D, p.T = T;
  p.pad_d = pad[0], p.stride_d = stride[0], p.dil_d = dil[0];
  p.O = core::conv_out_size(D, T, pad[0], stride[0], dil[0]);
  const int64_t xd[5] = {N, C, D, H, W}, wd[5] = {K, C / G, T, R, S}, yd[5] = {N, K, p.O, p.P, p.Q};
  packed(xd, false, p.x_stride);
  packed(wd, false, p.w_stride);
  packed(yd, false, p.y_stride);
  return p;
}

std::vector<NamedProblem> extra_3d_problems() {
  const auto f = JHDNN_DATA_FLOAT;
  return {
      {"c3d_basic_k3p1", make_problem_3d(f, 2, 4, 5, 6, 7, 6, 3, 3, 3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1})},
      {"c3d_grouped_strided_dilated",
       make_problem_3d(f, 1, 6, 7, 9, 8, 4, 2, 3, 2, {0, 1, 1}, {2, 1, 2}, {1, 2, 1}, 2)},
      {"c3d_depthwise_convmode",
       make_problem_3d(f, 2, 8, 6, 6, 6, 8, 3, 3, 3, {1, 1, 1}, {2, 2, 2}, {1, 1, 1}, 8, JHDNN_CONVOLUTION)},
      {"c3d_pointwise", make_problem_3d(f, 2, 16, 3, 5, 5, 24, 1, 1, 1, {0, 0, 0}, {1, 1, 1}, {1, 1, 1})},
  };
}

// Every few problems of the shared set (for the more expensive variations).
std::vector<NamedProblem> every_nth(const std::vector<NamedProblem>& v, size_t n) {
  std::vector<NamedProblem> out;
  for (size_t i = 0; i < v.size(); i += n) out.push_back(v[i]);
  return out;
}

// The shared set's problems with the filter mirrored (CONVOLUTION mode); filters of 1x1 are
// skipped (mirroring them changes nothing).
std::vector<NamedProblem> convmode_problems() {
  std::vector<NamedProblem> out;
  for (const NamedProblem& np : every_nth(conv_problem_set(), 2)) {
    if (np.p.R * np.p.S * np.p.T == 1 || np.p.mode == JHDNN_CONVOLUTION) continue;
    NamedProblem c = np;
    c.name += "_convmode";
    c.p.mode = JHDNN_CONVOLUTION;
    out.push_back(c);
  }
  return out;
}
// ================================================================ the problem set

// Sets an environment variable for one scope (tests run on one thread).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

void check_both_solvers_ran(Notes& notes) {
  CHECK(notes.runs_by_solver["gemm_ours"] == notes.configs);
  CHECK(notes.runs_by_solver["gemm_cublas"] == notes.configs);
  CHECK(notes.api_runs == notes.configs);
}

}  // namespace

TEST_CASE("conv gemm: problem set, FLOAT, NCHW and NHWC", "[gpu][conv_gemm][problem_set]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> set = conv_problem_set();
  CHECK(set.size() >= 60);
  Notes notes("gemm: problem set, FLOAT");
  run_problem_list(set, JHDNN_DATA_FLOAT, Scale{}, notes);
  notes.print();
  CHECK(notes.cudnn_ran > 0);
  check_both_solvers_ran(notes);
}

TEST_CASE("conv gemm: alpha and beta", "[gpu][conv_gemm][alpha_beta]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> some = every_nth(conv_problem_set(), 5);
  for (Scale sc : {Scale{0.75, -0.5}, Scale{-1.25, 0.0}, Scale{1.0, 1.0}, Scale{0.0, 0.5}}) {
    INFO("alpha " << sc.alpha << " beta " << sc.beta);
    Notes notes("gemm: alpha/beta");
    run_problem_list(some, JHDNN_DATA_FLOAT, sc, notes);
    notes.print();
    check_both_solvers_ran(notes);
  }
}

TEST_CASE("conv gemm: CONVOLUTION mode (mirrored filter)", "[gpu][conv_gemm][convmode]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = convmode_problems();
  CHECK(!probs.empty());
  Notes notes("gemm: CONVOLUTION mode");
  run_problem_list(probs, JHDNN_DATA_FLOAT, Scale{}, notes);
  notes.print();
  check_both_solvers_ran(notes);
}

TEST_CASE("conv gemm: 3-D convolutions", "[gpu][conv_gemm][3d]") {
  START_GPU_CASE();
  Notes notes("gemm: 3-D");
  run_problem_list(extra_3d_problems(), JHDNN_DATA_FLOAT, Scale{0.5, 0.25}, notes);
  notes.print();
  check_both_solvers_ran(notes);
}

TEST_CASE("conv gemm: problem set, NCHW forced through each GEMM strategy", "[gpu][conv_gemm][nchw_modes]") {
  START_GPU_CASE();
  // y NCHW normally picks per-image GEMMs or the all-images GEMM + transpose by tile fill; force
  // each so both are covered on every kind of problem.
  for (const char* mode : {"per_image", "transpose"}) {
    INFO("JHDNN_CONV_GEMM_NCHW=" << mode);
    ScopedEnv env("JHDNN_CONV_GEMM_NCHW", mode);
    Notes notes(std::string("gemm: NCHW forced ") + mode);
    run_problem_list(every_nth(conv_problem_set(), 2), JHDNN_DATA_FLOAT, Scale{0.5, -1.0}, notes);
    notes.print();
    check_both_solvers_ran(notes);
  }
}

TEST_CASE("conv gemm: chunked im2col under a small workspace cap", "[gpu][conv_gemm][chunked]") {
  START_GPU_CASE();
  // N = 5 images; a cap of 2.5 images' workspace gives chunks of 2, 2, 1.
  const ConvProblem base =
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 5, 6, 9, 7, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2);
  const HostProblem h = make_host_problem("chunked_n5_g2", base, Scale{0.5, -1.0});
  const Tolerance tol = conv_tolerance(JHDNN_DATA_FLOAT, base.reduction());
  const int64_t col = base.P * base.Q * base.C * base.R * base.S;  // im2col floats per image
  const int64_t tmp = base.P * base.Q * base.K;                    // transposition buffer per image
  struct Combo { bool nhwc; const char* mode; int64_t per_img_bytes; };
  const Combo combos[] = {{false, "per_image", col * 4}, {false, "transpose", (col + tmp) * 4}, {true, "", col * 4}};
  Notes notes("gemm: chunked");
  for (const Combo& c : combos) {
    INFO((c.nhwc ? "NHWC" : "NCHW") << " mode '" << c.mode << "'");
    ScopedEnv mode("JHDNN_CONV_GEMM_NCHW", c.mode);
    ScopedEnv cap("JHDNN_CONV_GEMM_WS_CAP", std::to_string(c.per_img_bytes * 5 / 2));
    const ConvProblem lp = with_layout(base, JHDNN_DATA_FLOAT, c.nhwc);
    CHECK(conv::gemm_ours_solver().workspace_bytes(lp) == size_t(2 * c.per_img_bytes));
    DeviceProblem d(h, lp);
    ++notes.configs;
    run_solvers(d, h, tol, notes);
    run_api(d, h, tol, notes);
  }
  check_both_solvers_ran(notes);
  {
    ScopedEnv mode("JHDNN_CONV_GEMM_NCHW", "per_image");
    ScopedEnv cap("JHDNN_CONV_GEMM_WS_CAP", std::to_string(col * 4 - 4));
    const conv::Verdict v = conv::gemm_ours_solver().can_implement(base, gpu().dev);
    CHECK_FALSE(v.ok);
    CHECK(std::string(v.reason).find("workspace cap") != std::string::npos);
  }
}

TEST_CASE("conv gemm: 1x1 convolutions need no workspace; 3x3 ones report theirs", "[gpu][conv_gemm][workspace]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  // 16 x 16 outputs fill two 128-row tiles exactly, so NCHW takes the per-image GEMMs (in place).
  const ConvProblem pw = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 16, 16, 8, 1, 1, 0, 0, 1, 1, 1, 1);
  const ConvProblem k3 = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 16, 16, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  for (bool nhwc : {false, true}) {
    for (const ConvProblem& base : {pw, k3}) {
      const ConvProblem p = with_layout(base, JHDNN_DATA_FLOAT, nhwc);
      JhdnnConvDescs descs(p);
      size_t bytes = 1;
      JHDNN_CHECK(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                           JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &bytes));
      const size_t want = base.R == 1 ? 0 : size_t(p.N * p.P * p.Q * p.C * p.R * p.S) * sizeof(float);
      CHECK(bytes == want);
      CHECK(conv::gemm_ours_solver().workspace_bytes(p) == want);
    }
  }
}

TEST_CASE("conv gemm: refusals name the reason", "[gpu][conv_gemm][refusals]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  const ConvProblem base = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  struct Case {
    const char* what;
    ConvProblem p;
    const char* reason_part;
  };
  std::vector<Case> cases;
  cases.push_back({"HALF data", with_layout(base, JHDNN_DATA_HALF, false), "FLOAT"});
  cases.push_back({"DOUBLE data", with_layout(base, JHDNN_DATA_DOUBLE, false), "FLOAT"});
  {
    ConvProblem p = base;  // y with a gap between images: not packed
    p.y_stride[0] += 5;
    cases.push_back({"strided y", p, "y must be packed"});
  }
  {
    ConvProblem p = base;  // w with a gap between output channels
    p.w_stride[0] += 3;
    cases.push_back({"strided w", p, "w must be packed"});
  }
  for (const Case& c : cases) {
    INFO(c.what << ": " << c.p.key());
    for (const conv::ConvSolver* s : gemm_solvers()) {
      const conv::Verdict v = s->can_implement(c.p, g.dev);
      CHECK_FALSE(v.ok);
      if (!v.ok) CHECK(std::string(v.reason).find(c.reason_part) != std::string::npos);
    }
    if (c.p.y_packed_nchw() && c.p.w_packed_kcrs()) {  // expressible by descriptors: the API says why
      JhdnnConvDescs descs(c.p);
      size_t bytes = 0;
      const jhdnnStatus_t st = jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv,
                                                                        descs.y, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &bytes);
      CHECK(st == JHDNN_STATUS_NOT_SUPPORTED);
      CHECK(jhdnn_last_error().find(c.reason_part) != std::string::npos);
    }
  }
}

TEST_CASE("conv gemm: the API falls back to gemm_cublas when gemm_ours is disabled", "[gpu][conv_gemm][disable]") {
  START_GPU_CASE();
  ScopedEnv off("JHDNN_DISABLE", "gemm_ours");
  Notes notes("gemm: JHDNN_DISABLE=gemm_ours");
  const std::vector<NamedProblem> some = every_nth(conv_problem_set(), 9);
  for (const NamedProblem& np : some) {
    const HostProblem h = make_host_problem(np.name, with_layout(np.p, JHDNN_DATA_FLOAT, false), Scale{});
    for (bool nhwc : {false, true}) {
      DeviceProblem d(h, with_layout(np.p, JHDNN_DATA_FLOAT, nhwc));
      run_api(d, h, conv_tolerance(JHDNN_DATA_FLOAT, h.base.reduction()), notes);
    }
  }
  CHECK(notes.api_runs == int64_t(2 * some.size()));
}
