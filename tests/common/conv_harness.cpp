// The convolution tests' shared harness (see conv_harness.h).
#include "common/conv_harness.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <stdexcept>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/reference.h"
#include "core/status.h"

namespace jhdnn::test {

using core::ConvProblem;

// ================================================================ process-wide GPU state

ConvTestGpu::ConvTestGpu(const char* test_name, bool one_line_banner) {
  JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
  CUDNN_CHECK(cudnnSetStream(ch.get(), stream.get()));
  const core::Status s = core::query_device(&dev);
  if (!s.ok()) throw std::runtime_error("core::query_device: " + s.message);
  if (one_line_banner) {
    std::printf("%s: %s; seed %" PRIu64 " (rerun with JHDNN_TEST_SEED=%" PRIu64 ")\n", test_name,
                gpu_description().c_str(), test_seed(), test_seed());
  } else {
    std::printf("%s: %s\n", test_name, gpu_description().c_str());
    std::printf("%s: seed %" PRIu64 " (rerun with JHDNN_TEST_SEED=%" PRIu64 ")\n", test_name, test_seed(),
                test_seed());
  }
  std::fflush(stdout);
}

std::vector<const conv::ConvSolver*> solvers_of(jhdnnConvolutionFwdAlgo_t algo) {
  std::vector<const conv::ConvSolver*> v;
  for (const conv::ConvSolver* s : conv::all_solvers())
    if (s->algo() == algo) v.push_back(s);
  return v;
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

void packed(const int64_t d[5], bool channels_last, int64_t s[5]) {
  if (channels_last) {
    s[1] = 1, s[4] = d[1], s[3] = d[4] * s[4], s[2] = d[3] * s[3], s[0] = d[2] * s[2];
  } else {
    s[4] = 1, s[3] = d[4], s[2] = d[3] * s[3], s[1] = d[2] * s[2], s[0] = d[1] * s[1];
  }
}

// ================================================================ host side of one problem

void fill_conv_inputs(const ConvProblem& base, uint64_t salt, double alpha, double beta, std::vector<double>& x,
                      std::vector<double>& w, std::vector<double>& y0, std::vector<double>& ref) {
  const jhdnnDataType_t dt = base.dtype;
  x.resize(size_t(base.x_span()));
  w.resize(size_t(base.w_span()));
  fill_random(x, dt, mix_seed(test_seed(), salt + 1));
  fill_random(w, dt, mix_seed(test_seed(), salt + 2));
  ref.assign(size_t(base.y_span()), 0.0);
  if (beta != 0.0) {
    y0.resize(size_t(base.y_span()));
    fill_random(y0, dt, mix_seed(test_seed(), salt + 3));
    ref = y0;
  }
  conv_fwd_reference(base, x.data(), w.data(), ref.data(), alpha, beta);
}

HostProblem make_host_problem(const std::string& name, const ConvProblem& base, Scale sc) {
  if (!base.x_packed_nchw() || !base.w_packed_kcrs() || !base.y_packed_nchw())
    throw std::invalid_argument("make_host_problem: base must be packed NCHW / KCRS: " + base.key());
  HostProblem h;
  h.name = name;
  h.base = base;
  h.sc = sc;
  const jhdnnDataType_t dt = base.dtype;
  const uint64_t salt = hash_string(name + "|" + dt_name(dt) + (base.mode == JHDNN_CONVOLUTION ? "|conv" : ""));
  fill_conv_inputs(base, salt, sc.alpha, sc.beta, h.x, h.w, h.y0, h.ref);
  return h;
}

std::vector<uint8_t> logical_mask(const int64_t dims[5], const int64_t strides[5], int64_t span) {
  std::vector<uint8_t> m(size_t(span), 0);
  for_each_index(dims, strides, [&](int64_t off) { m[size_t(off)] = 1; });
  return m;
}

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

DeviceProblem::DeviceProblem(const HostProblem& h, const ConvProblem& layout, bool fma_math) : p(layout) {
  if (fma_math) p.math_type = JHDNN_FMA_MATH;
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

std::vector<double> check_result(const std::string& who, const DeviceProblem& d, const HostProblem& h,
                                 Tolerance tol, bool check_gaps, const DeviceBuffer* ws) {
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

void Notes::cudnn_skip(bool not_supported, const std::string& what) {
  (not_supported ? cudnn_not_supported : cudnn_refused) += 1;
  if (cudnn_examples.size() < 6) cudnn_examples.push_back(what);
}

void Notes::print() const {
  std::printf("[%s] %" PRId64 " configurations: %" PRId64 " solver runs, %" PRId64 " API runs; cuDNN ran %" PRId64
              ", skipped %" PRId64 " (NOT_SUPPORTED) + %" PRId64 " (other refusal)\n",
              title.c_str(), configs, solver_runs, api_runs, cudnn_ran, cudnn_not_supported, cudnn_refused);
  if (report_cudnn_gemm)
    std::printf("[%s]   cuDNN ran its GEMM algorithm on %" PRId64 " of them\n", title.c_str(), cudnn_gemm_ran);
  for (const auto& [why, n] : not_applicable)
    std::printf("[%s]   not applicable x%" PRId64 ": %s\n", title.c_str(), n, why.c_str());
  for (const std::string& e : cudnn_examples) std::printf("[%s]   cuDNN skipped: %s\n", title.c_str(), e.c_str());
  std::fflush(stdout);
  // Every refusal must be NOT_SUPPORTED: a BAD_PARAM from cuDNN means the harness built a wrong
  // descriptor, and skipping it would hide that.
  CHECK(cudnn_refused == 0);
}

// ================================================================ extra problems

ConvProblem make_problem_3d(jhdnnDataType_t dt, int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t K,
                            int64_t T, int64_t R, int64_t S, std::array<int, 3> pad, std::array<int, 3> stride,
                            std::array<int, 3> dil, int64_t G, jhdnnConvolutionMode_t mode) {
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

std::vector<NamedProblem> every_nth(const std::vector<NamedProblem>& v, size_t n) {
  std::vector<NamedProblem> out;
  for (size_t i = 0; i < v.size(); i += n) out.push_back(v[i]);
  return out;
}

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

// ================================================================ refusals

std::vector<RefusalCase> non_float_cases(const ConvProblem& base) {
  return {{"HALF data", with_layout(base, JHDNN_DATA_HALF, false), "FLOAT"},
          {"DOUBLE data", with_layout(base, JHDNN_DATA_DOUBLE, false), "FLOAT"}};
}

void check_refused(const conv::Verdict& v, const char* reason_part) {
  CHECK_FALSE(v.ok);
  if (!v.ok) {
    INFO("reason: " << v.reason);
    CHECK(std::string(v.reason).find(reason_part) != std::string::npos);
  }
}

std::vector<std::pair<std::string, ConvProblem>> strided_layouts(const ConvProblem& base) {
  std::vector<std::pair<std::string, ConvProblem>> out;
  auto set = [](int64_t* s, int64_t n, int64_t c, int64_t h, int64_t w) {
    s[0] = n, s[1] = c, s[3] = h, s[4] = w;
    s[2] = s[3];  // depth: size 1, never multiplied
  };
  {  // NCHW with padded rows (+2), padded planes (+1 row) and padded images (+5)
    ConvProblem p = base;
    int64_t hs = base.W + 2, cs = hs * (base.H + 1);
    set(p.x_stride, cs * base.C + 5, cs, hs, 1);
    hs = base.Q + 2, cs = hs * (base.P + 1);
    set(p.y_stride, cs * base.K + 5, cs, hs, 1);
    out.emplace_back("padded NCHW", p);
  }
  {  // NHWC with padded pixels (+3 channels), padded rows (+1 pixel) and padded images (+7)
    ConvProblem p = with_layout(base, base.dtype, true);  // KRSC filter
    int64_t ws = base.C + 3, hs = ws * (base.W + 1);
    set(p.x_stride, hs * base.H + 7, 1, hs, ws);
    ws = base.K + 3, hs = ws * (base.Q + 1);
    set(p.y_stride, hs * base.P + 7, 1, hs, ws);
    out.emplace_back("padded NHWC", p);
  }
  {  // CHWN: the batch innermost (packed, but neither NCHW nor NHWC)
    ConvProblem p = base;
    set(p.x_stride, 1, base.H * base.W * base.N, base.W * base.N, base.N);
    set(p.y_stride, 1, base.P * base.Q * base.N, base.Q * base.N, base.N);
    out.emplace_back("CHWN", p);
  }
  return out;
}

std::vector<StridedShape> strided_shapes() {
  return {
      {"strided_k3p1", 2, 5, 11, 13, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      {"strided_grouped_s2d2", 3, 8, 15, 12, 12, 3, 3, 2, 1, 2, 2, 2, 1, 4},
      {"strided_wide_k40", 2, 24, 9, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1},
  };
}

void for_each_strided_config(const std::vector<StridedShape>& shapes, jhdnnDataType_t dt,
                             const std::function<void(const HostProblem&, const ConvProblem&)>& run) {
  for (const StridedShape& s : shapes) {
    const ConvProblem base = core::make_problem_2d(dt, false, s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.pad_h, s.pad_w,
                                                   s.stride_h, s.stride_w, s.dil_h, s.dil_w, s.G);
    for (Scale sc : {Scale{}, Scale{0.5, 0.75}}) {
      const HostProblem h = make_host_problem(s.name, base, sc);
      INFO("problem " << s.name << " [" << base.key() << "]");
      for (const auto& [label, lp] : strided_layouts(base)) {
        INFO("strides: " << label);
        CHECK(std::string(layout_name(lp)) == "strided");
        run(h, lp);
      }
    }
  }
}

// ================================================================ running a list of problems

void for_each_host_problem(const std::vector<NamedProblem>& problems, jhdnnDataType_t dt, Scale sc,
                           const std::function<void(const HostProblem&, const std::vector<ConvProblem>&)>& run) {
  if (problems.empty()) return;
  auto make = [&](size_t i) { return make_host_problem(problems[i].name, with_layout(problems[i].p, dt, false), sc); };
  std::future<HostProblem> next = std::async(std::launch::async, make, size_t(0));
  for (size_t i = 0; i < problems.size(); ++i) {
    const HostProblem h = next.get();
    if (i + 1 < problems.size()) next = std::async(std::launch::async, make, i + 1);
    INFO("problem " << h.name << " [" << h.base.key() << "]");
    run(h, {with_layout(problems[i].p, dt, false), with_layout(problems[i].p, dt, true)});
  }
}

void for_each_layout(const HostProblem& h, const std::vector<ConvProblem>& layouts, Notes& notes, bool fma_math,
                     const std::function<void(DeviceProblem&, Tolerance)>& run) {
  const Tolerance tol = conv_tolerance(h.base.dtype, h.base.reduction());
  for (const ConvProblem& lp : layouts) {
    INFO("layout " << layout_name(lp) << ": " << lp.key() << " (alpha " << h.sc.alpha << ", beta " << h.sc.beta
                   << ")");
    ++notes.configs;
    DeviceProblem d(h, lp, fma_math);
    run(d, tol);
  }
}

// ================================================================ the public API and cuDNN

std::vector<double> run_api_forward(ConvTestGpu& g, jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d,
                                    const HostProblem& h, Tolerance tol, Notes& notes, jhdnnHandle_t handle) {
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
  const jhdnnStatus_t wst =
      jhdnnGetConvolutionForwardWorkspaceSize(handle, descs.x, descs.w, descs.conv, descs.y, algo, &ws_bytes);
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
      d.w.get(), descs.conv, algo, ws_bytes ? ws.get() : nullptr, ws_bytes,
      dbl ? static_cast<const void*>(&bd) : static_cast<const void*>(&bf), descs.y, d.y.get());
  g.stream.sync();
  INFO("jhdnnConvolutionForward: " << jhdnnGetErrorString(st) << " " << jhdnn_last_error());
  CHECK(st == JHDNN_STATUS_SUCCESS);
  if (st != JHDNN_STATUS_SUCCESS) return {};
  ++notes.api_runs;
  return check_result(std::string("jhdnnConvolutionForward(") + jhdnn_algo_name(algo) + ")", d, h, tol, true, &ws);
}

std::unique_ptr<CudnnConvDescs> cudnn_descs_or_skip(const DeviceProblem& d, const std::string& what, Notes& notes) {
  // FLOAT: FMA math, so cuDNN computes in fp32 as jhDNN does and the comparison can use the fp32
  // tolerance (under DEFAULT_MATH cuDNN may use TF32 products, whose error hides a wrong tap).
  ConvProblem cp = d.p;
  if (cp.dtype == JHDNN_DATA_FLOAT) cp.math_type = JHDNN_FMA_MATH;
  try {
    return std::make_unique<CudnnConvDescs>(cp);
  } catch (const CudnnError& e) {
    notes.cudnn_skip(cudnn_not_supported(e.status), what + ": descriptor refused: " + e.what());
    return nullptr;
  }
}

void check_cudnn_run(const CudnnRun& r, const std::string& what, const DeviceProblem& d, const HostProblem& h,
                     const std::vector<double>& jh, Notes& notes, int expected_algo) {
  if (!r.ok()) {
    notes.cudnn_skip(r.not_supported(), what + ": " + cudnnGetErrorString(r.status) + " [" + r.log + "]");
    return;
  }
  ++notes.cudnn_ran;
  INFO("cuDNN " << cudnn_algo_name(r.algo) << " (" << r.log << ")");
  if (expected_algo >= 0) CHECK(int(r.algo) == expected_algo);
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

void run_cudnn_forward(ConvTestGpu& g, DeviceProblem& d, const HostProblem& h, const std::vector<double>& jh,
                       Notes& notes, bool prefer_gemm) {
  const std::string what = h.name + " " + dt_name(d.p.dtype) + " " + layout_name(d.p);
  const std::unique_ptr<CudnnConvDescs> cd = cudnn_descs_or_skip(d, what, notes);
  if (!cd) return;
  d.reset_y();
  // Only cuDNN's dot-product algorithms: their error model is conv_tolerance's (FFT / Winograd
  // errors are norm-wise and larger).
  CudnnRun r;
  bool ran = false;
  if (prefer_gemm) {
    // cuDNN's GEMM algorithm first (the one this solver mirrors); where cuDNN does not offer it for
    // the configuration, its best dot-product algorithm, so every result is still checked against cuDNN.
    r = cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta,
                           CudnnPick::kHeuristic, &g.cudnn_ws, size_t(1) << 31, 1u << CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
    g.stream.sync();
    if (r.ok()) {
      ++notes.cudnn_gemm_ran;
      ran = true;
    } else {
      d.reset_y();
    }
  }
  if (!ran) {
    r = cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta,
                           CudnnPick::kHeuristic, &g.cudnn_ws, size_t(1) << 31, kCudnnDotProductAlgos);
    g.stream.sync();
  }
  check_cudnn_run(r, what, d, h, jh, notes);
}

// ================================================================ the paths of one algorithm

void run_conv_paths(const ConvPaths& paths, const HostProblem& h, const std::vector<ConvProblem>& layouts,
                    Notes& notes, bool with_cudnn) {
  for_each_layout(h, layouts, notes, /*fma_math=*/false, [&](DeviceProblem& d, Tolerance tol) {
    paths.run_solvers(d, h, tol, notes);
    const std::vector<double> jh = run_api_forward(paths.g, paths.algo, d, h, tol, notes);
    if (with_cudnn) run_cudnn_forward(paths.g, d, h, jh, notes, paths.prefer_cudnn_gemm);
  });
}

void run_conv_problem_list(const ConvPaths& paths, const std::vector<NamedProblem>& problems, jhdnnDataType_t dt,
                           Scale sc, Notes& notes, bool with_cudnn) {
  for_each_host_problem(problems, dt, sc, [&](const HostProblem& h, const std::vector<ConvProblem>& layouts) {
    run_conv_paths(paths, h, layouts, notes, with_cudnn);
  });
}

}  // namespace jhdnn::test
