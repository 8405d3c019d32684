// GPU correctness of the Winograd convolution (JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
// solvers winograd_nonfused_4x4 and winograd_nonfused_2x2, src/conv/winograd; every GPU case runs
// for both, the one under test forced within its algorithm): through the solver interface, the public API
// (jhdnnConvolutionForward with ALGO_WINOGRAD_NONFUSED) and cuDNN's own WINOGRAD_NONFUSED on the
// same buffers, over the shared problem set's 3x3 / stride 1 / groups 1 shapes and a list of
// ResNet / VGG-like shapes with odd H / W (tiles cut by the edge), in NCHW, NHWC and non-packed
// strides, with alpha / beta (beta = 0 on a NaN y), CONVOLUTION mode, and the refusals.
//
// Tolerance: element-wise against the float64 reference with winograd_tolerance (derived below),
// plus the norm-wise bound jhdnn-bench uses for Winograd (relative L2 error <= 1e-4). cuDNN's
// WINOGRAD_NONFUSED output is checked norm-wise only (its transform size and error are its own).
//
// Every GPU TEST_CASE starts with JHDNN_REQUIRE_GPU(): without a GPU they are reported as skipped.
// The default chunk choice (chunk.h, a pure function) is tested on the CPU ("[cpu]").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "common/catch_gpu.h"
#include "common/conv_harness.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/scoped_config.h"
#include "common/test_util.h"
#include "conv/solver.h"
#include "conv/winograd/chunk.h"
#include "conv/winograd/transforms.h"
#include "conv/winograd/winograd.h"
#include "core/conv_problem.h"
#include "core/status.h"

using namespace jhdnn;
using namespace jhdnn::test;
using core::ConvProblem;

namespace {

using Gpu = ConvTestGpu;

Gpu& gpu() {
  static Gpu g("test_conv_winograd");
  return g;
}

// The solver under test: F(m x m, 3x3), E = (m + 2)^2 transform elements (GEMMs).
struct Variant {
  const conv::ConvSolver* solver;
  int m;
  int64_t elems() const { return int64_t(m + 2) * (m + 2); }
};
const Variant& variant(int i) {
  static const Variant v[2] = {{&conv::winograd_nonfused_4x4_solver(), 4}, {&conv::winograd_nonfused_2x2_solver(), 2}};
  return v[i];
}
const Variant* g_variant = nullptr;  // set by UseVariant; tests run on one thread
const Variant& cur() { return *g_variant; }
const conv::ConvSolver& solver() { return *cur().solver; }

// Selects variant i for the scope and forces its solver within WINOGRAD_NONFUSED, so the public
// API (which dispatches to the first applicable solver of the algorithm) runs the same one.
struct UseVariant {
  explicit UseVariant(int i) : force((g_variant = &variant(i))->solver->name()) {}
  ~UseVariant() { g_variant = nullptr; }
  ScopedForcedSolvers force;
};

// The norm-wise bound jhdnn-bench applies to Winograd / FFT results (tools/jhdnn-bench/verify.cpp).
constexpr double kNormBound = 1e-4;

// Element-wise error bound of F(2x2, 3x3) in fp32 for one output, inputs |x|, |w| <= 1 (the
// harness draws them uniform in [-1, 1]), C input channels. Same model and constant (c = 4, random
// walk of rounding errors of random sign) as conv_tolerance (common/test_util.cpp), u = 2^-24:
//  - transform magnitudes: V = B^T d B sums 4 inputs of +-1 coefficients, |V| <= 4; U = G g G^T
//    has row sums of |G| <= 3/2, so |U| <= 9/4; each GEMM product |U V| <= 9 (direct conv: 1).
//  - (a) the GEMM M[e] = sum_c U V accumulates C products of magnitude <= 9: conv_tolerance's
//    absolute term with K = C, scaled by 9:  4 u C * 9 = 36 u C.
//  - (b) transform rounding: a V element takes 3 adds of partial sums <= 4 (|dV| <= 12 u), a U
//    element 4 adds of partial sums <= 9/4 (the halvings are exact; |dU| <= 9 u); each product
//    then carries <= 9u * 4 + 9/4 * 12u = 63 u, a random walk over C: 4 * 63 u sqrt(C) = 252 u sqrt(C).
//  - one output is a +-1 combination of 9 M[e] (A^T m A); their errors, from different U / V,
//    add like a random walk: 3 * ((a) + (b)) = 108 u C + 756 u sqrt(C).
//  - (c) the output transform's 8 adds round partial sums of ~3 |M|, |M| ~ 9 sqrt(C) (random
//    walk of products <= 9): 4 u sqrt(8) * 3 * 9 sqrt(C) ~= 306 u sqrt(C).
//  - the float64 reference (u = 2^-53) is negligible; alpha scales everything, beta * y0 adds one
//    rounding (rtol 2u), as in conv_tolerance.
// atol = max(1, |alpha|) * u * (108 C + 1062 sqrt(C)); rtol = 3 * conv_tolerance's rtol at K = 9C.
// C = 64: 9.2e-4 (direct conv: 1.4e-4); C = 512: 4.7e-3 (direct: 1.1e-3). A wrong or missing tap
// is an error of |x w| ~ 0.1..1 per affected output, still ~100x above the bound.
//
// F(4x4, 3x3) (m = 4): its transforms hold entries up to 8 (A^T) and 5 (B^T) and 16/15 (G), so the
// same worst-case reasoning gives a bound ~100x looser, too loose to catch a wrong tap at large C.
// It uses the same atol instead, as a statistical bound: tests/sim/sim_winograd.py transliterates
// the kernels in fp32 (sequential GEMM sums) and measures F(4x4) max errors of C = 16: 1.5e-5,
// 64: 5.7e-5, 256: 2.8e-4, 512: 3.6e-4 over 2048-4096 outputs each, 9.5-23x below this atol (F(2x2):
// 74-109x; README.md has the table); a wrong or missing tap is still >= 100x above it.
Tolerance winograd_tolerance(int64_t C, double alpha) {
  const double u = std::ldexp(1.0, -24), c = double(C);
  Tolerance t;
  t.atol = std::max(1.0, std::fabs(alpha)) * u * (108.0 * c + 1062.0 * std::sqrt(c));
  t.rtol = 3.0 * conv_tolerance(JHDNN_DATA_FLOAT, 9 * C).rtol;
  return t;
}

// What the solver must accept, written independently of its code: FLOAT 2-D, 3x3, stride 1,
// dilation 1, groups 1 (the sizes here are all far below the workspace cap).
bool expect_accepted(const ConvProblem& p) {
  return p.dtype == JHDNN_DATA_FLOAT && p.spatial_dims == 2 && p.G == 1 && p.R == 3 && p.S == 3 && p.stride_h == 1 &&
         p.stride_w == 1 && p.dil_h == 1 && p.dil_w == 1;
}

double rel_l2(const std::vector<double>& got, const HostProblem& h) {
  const auto yd = y_dims(h.base);
  return relative_l2_error(got.data(), h.ref.data(), yd.data(), h.base.y_stride);
}

// Workspace bytes the README's layout gives: U [E][K][C], V [E][C][T], M [E][K][T], T = chunk *
// ceil(P/m) * ceil(Q/m) (chunk: images per chunk, conv::winograd::chunk_images, itself tested on the
// CPU below; the test problems are far below the 4 GiB cap), each section rounded up to 64 floats.
int64_t chunk_images(const ConvProblem& p) {
  return conv::winograd::chunk_images(p.N, p.N, core::config::winograd_chunk());
}
size_t expected_workspace(const ConvProblem& p) {
  auto up = [](int64_t v) { return (v + 63) / 64 * 64; };
  const int64_t m = cur().m, E = cur().elems();
  const int64_t T = chunk_images(p) * ((p.P + m - 1) / m) * ((p.Q + m - 1) / m);
  return size_t(up(E * p.K * p.C) + up(E * p.C * T) + up(E * p.K * T)) * sizeof(float);
}

// (a) The solver through ConvSolver::run on the test stream; every accepted problem must run.
// Returns its result (reference strides), empty when it did not run.
std::vector<double> run_solver(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes) {
  Gpu& g = gpu();
  const conv::Verdict v = solver().can_implement(d.p, g.dev);
  if (!v.ok) {
    FAIL_CHECK(solver().name() << " refused an accepted problem: " << v.reason);
    return {};
  }
  const size_t ws_bytes = solver().workspace_bytes(d.p);
  CHECK(ws_bytes == expected_workspace(d.p));
  DeviceBuffer ws(ws_bytes);  // poisoned: each transform must write every element the next step reads
  d.reset_y();
  const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta, g.jh.get()};
  const core::Status st = solver().run(d.p, args, ws.get(), ws_bytes, g.stream.get());
  g.stream.sync();
  INFO("run status " << core::status_name(st.code) << ": " << st.message);
  CHECK(st.ok());
  if (!st.ok()) return {};
  ++notes.solver_runs;
  ++notes.runs_by_solver[solver().name()];
  std::vector<double> got = check_result(std::string("solver ") + solver().name(), d, h, tol, true, &ws);
  const double e = rel_l2(got, h);
  INFO("relative L2 error " << e);
  CHECK(e <= kNormBound);
  // A too-small workspace is refused, not overrun.
  const core::Status small = solver().run(d.p, args, ws.get(), ws_bytes - 1, g.stream.get());
  CHECK(small.code == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
  return got;
}

// (c) cuDNN's WINOGRAD_NONFUSED on d's buffers (FMA math): norm-wise against the reference, and
// ours against it. Skipped (counted) where cuDNN does not offer it.
void run_cudnn(DeviceProblem& d, const HostProblem& h, const std::vector<double>& jh, Notes& notes) {
  Gpu& g = gpu();
  const std::string what = h.name + " " + layout_name(d.p);
  const std::unique_ptr<CudnnConvDescs> cd = cudnn_descs_or_skip(d, what, notes);
  if (!cd) return;
  d.reset_y();
  const CudnnRun r =
      cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta,
                         CudnnPick::kHeuristic, &g.cudnn_ws, size_t(1) << 31,
                         1u << CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
  g.stream.sync();
  if (!r.ok()) {
    notes.cudnn_skip(r.not_supported(), what + ": " + cudnnGetErrorString(r.status) + " [" + r.log + "]");
    return;
  }
  ++notes.cudnn_ran;
  INFO("cuDNN " << cudnn_algo_name(r.algo) << " (" << r.log << ")");
  CHECK(r.algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
  // Element-wise only for NaN / garbage (cuDNN's transform size is its own); the real check is norm-wise.
  const std::vector<double> cu = check_result("cuDNN WINOGRAD_NONFUSED", d, h, Tolerance{1.0, 0.0}, false);
  const double e_cu = rel_l2(cu, h);
  INFO("cuDNN relative L2 error " << e_cu << " (math type " << int(r.math) << ")");
  if (r.math == CUDNN_FMA_MATH) CHECK(e_cu <= kNormBound);
  if (!jh.empty()) {
    const auto yd = y_dims(h.base);
    const double e = relative_l2_error(jh.data(), cu.data(), yd.data(), h.base.y_stride);
    INFO("jhDNN vs cuDNN relative L2 difference " << e);
    if (r.math == CUDNN_FMA_MATH) CHECK(e <= 2 * kNormBound);
  }
}

// All three paths on one device problem.
void run_paths(DeviceProblem& d, const HostProblem& h, Notes& notes, bool with_cudnn) {
  const Tolerance tol = winograd_tolerance(h.base.C, h.sc.alpha);
  INFO("winograd tolerance atol " << tol.atol << " rtol " << tol.rtol);
  const std::vector<double> jh = run_solver(d, h, tol, notes);
  const std::vector<double> api = run_api_forward(gpu(), JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, d, h, tol, notes);
  if (!api.empty() && !jh.empty()) CHECK(api == jh);  // the API runs the same solver: bitwise the same
  if (with_cudnn) run_cudnn(d, h, jh, notes);
}

// Runs the accepted problems of `problems` in NCHW and NHWC; CHECKs that the solver refuses the
// others (counted in notes.not_applicable by reason). Returns the number of accepted problems.
int64_t run_list(const std::vector<NamedProblem>& problems, Scale sc, Notes& notes, bool with_cudnn = true) {
  std::vector<NamedProblem> accepted;
  for (const NamedProblem& np : problems) {
    const ConvProblem p = with_layout(np.p, JHDNN_DATA_FLOAT, false);
    const conv::Verdict v = solver().can_implement(p, gpu().dev);
    INFO("problem " << np.name << " [" << p.key() << "]" << (v.ok ? "" : " refused: ") << v.reason);
    CHECK(v.ok == expect_accepted(p));
    if (v.ok) {
      accepted.push_back(np);
    } else {
      CHECK(std::strlen(v.reason) > 0);
      ++notes.not_applicable[std::string(solver().name()) + ": " + v.reason];
    }
  }
  const int64_t configs0 = notes.configs;
  for_each_host_problem(accepted, JHDNN_DATA_FLOAT, sc,
                        [&](const HostProblem& h, const std::vector<ConvProblem>& layouts) {
                          for_each_layout(h, layouts, notes, /*fma_math=*/true,
                                          [&](DeviceProblem& d, Tolerance) { run_paths(d, h, notes, with_cudnn); });
                        });
  CHECK(notes.configs - configs0 == int64_t(2 * accepted.size()));
  return int64_t(accepted.size());
}

void check_all_ran(Notes& notes) {
  CHECK(notes.runs_by_solver[solver().name()] == notes.configs);
  CHECK(notes.api_runs == notes.configs);
}

// Every scale and strided layout of `shapes` (for_each_strided_config) through the paths, fma math,
// counted in notes; then prints the notes and CHECKs that every configuration ran.
void run_strided(const std::vector<StridedShape>& shapes, Notes& notes, bool with_cudnn) {
  for_each_strided_config(shapes, JHDNN_DATA_FLOAT, [&](const HostProblem& h, const ConvProblem& lp) {
    ++notes.configs;
    DeviceProblem d(h, lp, /*fma_math=*/true);
    run_paths(d, h, notes, with_cudnn);
  });
  notes.print();
  check_all_ran(notes);
}

// ResNet / VGG-like shapes (channels kept, spatial reduced so the float64 reference stays fast),
// with odd H / W so the last tile row / column is cut by the edge, and corner cases: P or Q of 1,
// no padding, asymmetric and large padding, K and C that are not multiples of any tile size.
std::vector<NamedProblem> winograd_shapes(jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
  struct S {
    const char* name;
    int64_t N, C, H, W, K;
    int ph, pw;
  };
  const S shapes[] = {
      {"resnet_conv2_3x3_s15", 2, 64, 15, 15, 64, 1, 1},
      {"resnet_conv3_3x3_s13", 2, 128, 13, 11, 128, 1, 1},
      {"resnet_conv4_3x3_s7", 2, 256, 7, 7, 256, 1, 1},
      {"resnet_conv5_3x3_s5", 1, 512, 5, 7, 512, 1, 1},
      {"vgg_conv1_2_s17", 1, 64, 17, 19, 64, 1, 1},
      {"vgg_conv1_1_s21", 2, 3, 21, 23, 64, 1, 1},
      {"odd_c5_k70_nopad", 3, 5, 9, 11, 70, 0, 0},
      {"out_1x1", 3, 16, 3, 3, 8, 0, 0},
      {"in_1x1_pad1", 2, 8, 1, 1, 9, 1, 1},
      {"asym_pad_h0_w2", 2, 7, 8, 9, 6, 0, 2},
      {"big_pad3", 1, 4, 5, 6, 5, 3, 3},
      {"one_channel", 4, 1, 10, 7, 1, 1, 1},
  };
  std::vector<NamedProblem> out;
  for (const S& s : shapes) {
    NamedProblem np{s.name, core::make_problem_2d(JHDNN_DATA_FLOAT, false, s.N, s.C, s.H, s.W, s.K, 3, 3, s.ph, s.pw,
                                                  1, 1, 1, 1, 1, mode)};
    if (mode == JHDNN_CONVOLUTION) np.name += "_convmode";
    out.push_back(np);
  }
  return out;
}

// Runs the rest of the case once per solver (Catch2 generator), that solver forced.
#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  UseVariant use_variant(GENERATE(0, 1));                                   \
  INFO("solver " << solver().name());                                       \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

}  // namespace

TEST_CASE("conv winograd: problem set (3x3 stride 1 groups 1 run, the rest refused), NCHW and NHWC",
          "[gpu][conv_winograd][problem_set]") {
  START_GPU_CASE();
  Notes notes("winograd: problem set, FLOAT");
  const int64_t accepted = run_list(conv_problem_set(), Scale{}, notes);
  notes.print();
  CHECK(accepted >= 5);  // the set has many 3x3 stride-1 layers
  CHECK(notes.cudnn_ran > 0);
  check_all_ran(notes);
}

TEST_CASE("conv winograd: ResNet / VGG-like shapes with odd sizes, NCHW and NHWC", "[gpu][conv_winograd][shapes]") {
  START_GPU_CASE();
  Notes notes("winograd: odd shapes");
  const std::vector<NamedProblem> shapes = winograd_shapes();
  CHECK(run_list(shapes, Scale{}, notes) == int64_t(shapes.size()));
  notes.print();
  CHECK(notes.cudnn_ran > 0);
  check_all_ran(notes);
}

TEST_CASE("conv winograd: alpha and beta (beta 0 never reads the NaN y)", "[gpu][conv_winograd][alpha_beta]") {
  START_GPU_CASE();
  std::vector<NamedProblem> some = every_nth(winograd_shapes(), 2);
  for (Scale sc : {Scale{0.75, -0.5}, Scale{-1.25, 0.0}, Scale{1.0, 1.0}, Scale{0.0, 0.5}}) {
    INFO("alpha " << sc.alpha << " beta " << sc.beta);
    Notes notes("winograd: alpha/beta");
    CHECK(run_list(some, sc, notes) == int64_t(some.size()));
    notes.print();
    check_all_ran(notes);
  }
}

TEST_CASE("conv winograd: CONVOLUTION mode (mirrored filter)", "[gpu][conv_winograd][convmode]") {
  START_GPU_CASE();
  Notes notes("winograd: CONVOLUTION mode");
  std::vector<NamedProblem> probs = winograd_shapes(JHDNN_CONVOLUTION);
  for (const NamedProblem& np : convmode_problems()) probs.push_back(np);
  run_list(probs, Scale{0.5, 0.25}, notes);
  notes.print();
  CHECK(notes.configs >= int64_t(2 * winograd_shapes().size()));
  check_all_ran(notes);
}

TEST_CASE("conv winograd: non-packed x and y strides", "[gpu][conv_winograd][strided]") {
  START_GPU_CASE();
  std::vector<StridedShape> shapes;
  for (const StridedShape& s : strided_shapes())
    if (s.R == 3 && s.S == 3 && s.stride_h == 1 && s.stride_w == 1 && s.dil_h == 1 && s.dil_w == 1 && s.G == 1)
      shapes.push_back(s);
  shapes.push_back({"strided_odd_k3p1", 3, 9, 13, 7, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  shapes.push_back({"strided_nopad", 2, 6, 8, 11, 5, 3, 3, 0, 0, 1, 1, 1, 1, 1});
  CHECK(shapes.size() >= 3);
  Notes notes("winograd: strided layouts");
  run_strided(shapes, notes, /*with_cudnn=*/true);
}

TEST_CASE("conv winograd: chunks of images (JHDNN_WINOGRAD_CHUNK)", "[gpu][conv_winograd][chunked]") {
  START_GPU_CASE();
  // 5 images in chunks of 2 (2 + 2 + 1) and of 3 (3 + 2), NCHW, NHWC and strided, alpha / beta.
  for (const char* chunk : {"2", "3"}) {
    INFO("JHDNN_WINOGRAD_CHUNK=" << chunk);
    ScopedWinogradChunk scoped(std::atoll(chunk));
    const std::vector<NamedProblem> probs = {
        {"chunked_n5_odd", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 5, 6, 9, 7, 10, 3, 3, 1, 1, 1, 1, 1, 1)},
        {"chunked_n5_c64", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 5, 64, 11, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1)}};
    for (const NamedProblem& np : probs) {
      const int64_t m = cur().m, E = cur().elems();
      const int64_t T = std::atoll(chunk) * ((np.p.P + m - 1) / m) * ((np.p.Q + m - 1) / m);
      const size_t want = size_t((E * np.p.K * np.p.C + 63) / 64 * 64 + (E * np.p.C * T + 63) / 64 * 64 +
                                 (E * np.p.K * T + 63) / 64 * 64) * 4;
      CHECK(solver().workspace_bytes(np.p) == want);
    }
    Notes notes(std::string("winograd: chunks of ") + chunk);
    CHECK(run_list(probs, Scale{0.5, -1.0}, notes) == 2);
    run_strided({{"strided_chunked", 5, 7, 9, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1}}, notes, /*with_cudnn=*/false);
  }
}

TEST_CASE("conv winograd: workspace size through the API; Get_v7 and Find list the algorithm", "[gpu][conv_winograd][workspace]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  // N 2, 64 -> 32 channels, 13 x 13 pad 1: 13 x 13 outputs; F(2x2): 7 x 7 tiles, T = 98, E = 16;
  // F(4x4): 4 x 4 tiles, T = 32, E = 36.
  const ConvProblem base = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 64, 13, 13, 32, 3, 3, 1, 1, 1, 1, 1, 1);
  const size_t want =
      cur().m == 2 ? size_t(16 * 32 * 64 + (16 * 64 * 98 + 63) / 64 * 64 + (16 * 32 * 98 + 63) / 64 * 64) * 4
                   : size_t(36 * 32 * 64 + (36 * 64 * 32 + 63) / 64 * 64 + (36 * 32 * 32 + 63) / 64 * 64) * 4;
  for (bool nhwc : {false, true}) {
    const ConvProblem p = with_layout(base, JHDNN_DATA_FLOAT, nhwc);
    CHECK(solver().workspace_bytes(p) == want);
    JhdnnConvDescs descs(p);
    size_t bytes = 1;
    JHDNN_CHECK(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                         JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, &bytes));
    CHECK(bytes == want);
  }
  // Get_v7 and Find list the algorithm (the API ranks every registered algorithm).
  JhdnnConvDescs descs(base);
  jhdnnConvolutionFwdAlgoPerf_t perf[JHDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  JHDNN_CHECK(jhdnnGetConvolutionForwardAlgorithm_v7(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                      JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  bool listed = false;
  for (int i = 0; i < returned; ++i)
    if (perf[i].algo == JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED) {
      listed = true;
      CHECK(perf[i].status == JHDNN_STATUS_SUCCESS);
      CHECK(perf[i].memory == want);
    }
  CHECK(listed);
  // Find times it (on buffers it allocates) and lists it with a time.
  returned = 0;
  JHDNN_CHECK(jhdnnFindConvolutionForwardAlgorithm(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                   JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  listed = false;
  for (int i = 0; i < returned; ++i)
    if (perf[i].algo == JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED) {
      listed = true;
      CHECK(perf[i].status == JHDNN_STATUS_SUCCESS);
      CHECK(perf[i].time >= 0.f);
      CHECK(perf[i].memory == want);
    }
  CHECK(listed);
}

TEST_CASE("conv winograd: refusals name the reason", "[gpu][conv_winograd][refusals]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  const ConvProblem base = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  REQUIRE(solver().can_implement(base, g.dev).ok);
  std::vector<RefusalCase> cases = non_float_cases(base);
  cases.push_back({"stride 2", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 3, 3, 1, 1, 2, 2, 1, 1),
                   "stride 1"});
  cases.push_back({"dilation 2", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 3, 3, 2, 2, 1, 1, 2, 2),
                   "dilation 1"});
  cases.push_back({"groups 2", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2),
                   "groups"});
  cases.push_back({"5x5", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 5, 5, 2, 2, 1, 1, 1, 1),
                   "3x3"});
  cases.push_back({"1x3", core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 9, 9, 8, 1, 3, 0, 1, 1, 1, 1, 1),
                   "3x3"});
  cases.push_back({"3-D", make_problem_3d(JHDNN_DATA_FLOAT, 2, 8, 5, 9, 9, 8, 3, 3, 3, {1, 1, 1}, {1, 1, 1},
                                          {1, 1, 1}), "2-D"});
  // One image of 1024 x 1024 at 1024 -> 1024 channels: its V alone is 16 * 1024 * 512^2 floats (16 GiB).
  cases.push_back({"one image over the workspace cap",
                   core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 1024, 1024, 1024, 1024, 3, 3, 1, 1, 1, 1, 1, 1),
                   "4 GiB"});
  // Tile counts whose products overflow int64 must be refused, not wrapped.
  cases.push_back({"overflowing sizes",
                   core::make_problem_2d(JHDNN_DATA_FLOAT, false, int64_t(1) << 30, 1 << 20, 1 << 20, 1 << 20,
                                         1 << 20, 3, 3, 1, 1, 1, 1, 1, 1),
                   "4 GiB"});
  for (const RefusalCase& c : cases) {
    INFO(c.what << ": " << c.p.key());
    check_refused(solver().can_implement(c.p, g.dev), c.reason_part);
    CHECK(solver().workspace_bytes(c.p) == 0);
    const core::Status st = solver().run(c.p, conv::ConvArgs{}, nullptr, 0, g.stream.get());
    CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
  }
  {  // A batch over the cap is not refused but chunked: 1024 images of 256 x 256, 256 -> 256 channels
     // need 537 MB (F(2x2): 16 * 512 * 128^2 floats) or 302 MB (F(4x4): 36 * 512 * 64^2) of V and M
     // per image, so 7 or 14 images per chunk fit the 4 GiB.
    const ConvProblem big =
        core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1024, 256, 256, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1);
    CHECK(solver().can_implement(big, g.dev).ok);
    const size_t bytes = solver().workspace_bytes(big);
    CHECK(bytes <= (size_t(1) << 32));
    const int64_t tiles = (256 / cur().m) * (256 / cur().m);
    const size_t per_img = size_t(cur().elems()) * (256 + 256) * tiles * 4;
    const size_t fit = cur().m == 2 ? 7 : 14;
    CHECK(bytes >= fit * per_img);
    CHECK(bytes < (fit + 1) * per_img);
  }
  {  // through the API: NOT_SUPPORTED with the reason
    const ConvProblem p = cases[2].p;  // stride 2
    JhdnnConvDescs descs(p);
    size_t bytes = 0;
    const jhdnnStatus_t st = jhdnnGetConvolutionForwardWorkspaceSize(
        g.jh.get(), descs.x, descs.w, descs.conv, descs.y, JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, &bytes);
    CHECK(st == JHDNN_STATUS_NOT_SUPPORTED);
    CHECK(jhdnn_last_error().find("stride 1") != std::string::npos);
  }
}

TEST_CASE("conv winograd: default images per chunk (chunk_images, CPU)", "[cpu][conv_winograd][chunk]") {
  using conv::winograd::chunk_images;
  // (N, images the 4 GiB cap allows, JHDNN_WINOGRAD_CHUNK) -> images per chunk.
  CHECK(chunk_images(32, 32, 0) == 32);      // the whole batch by default (L2-sized chunks measured slower)
  CHECK(chunk_images(1024, 7, 0) == 7);      // at most what the workspace cap allows
  CHECK(chunk_images(32, 32, 3) == 3);       // the override
  CHECK(chunk_images(4, 4, 9) == 4);         // never above the batch
  CHECK(chunk_images(32, 2, 9) == 2);        // nor above the cap
  CHECK(chunk_images(1, 1, 0) == 1);
  CHECK(chunk_images(5, 0, 0) == 1);         // at least one image (the caller refuses a single image over the cap)
}

namespace {
// One tile through the library's own transforms (transforms.h, compiled for the host):
// A^T [(G g G^T) * (B^T d B)] A against the direct 3x3 correlation of the a x a tile d, in float64.
// Returns the largest error over `trials` random tiles and filters in [-1, 1].
template <class F>
double transform_error(int trials) {
  constexpr int m = F::m, a = m + 2;
  std::mt19937 rng(1234 + m);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  double worst = 0;
  for (int trial = 0; trial < trials; ++trial) {
    float d[a][a], g[3][3], u[a][a], v[a][a], prod[a][a], y[m][m];
    for (auto& row : d)
      for (float& e : row) e = uni(rng);
    for (auto& row : g)
      for (float& e : row) e = uni(rng);
    conv::winograd::sandwich<typename F::G>(g, u);
    conv::winograd::sandwich<typename F::BT>(d, v);
    for (int i = 0; i < a; ++i)
      for (int j = 0; j < a; ++j) prod[i][j] = u[i][j] * v[i][j];
    conv::winograd::sandwich<typename F::AT>(prod, y);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        double ref = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) ref += double(d[i + r][j + s]) * double(g[r][s]);
        worst = std::max(worst, std::fabs(double(y[i][j]) - ref));
      }
  }
  return worst;
}
}  // namespace

TEST_CASE("conv winograd: the transform matrices compute a 3x3 correlation (host, CPU)", "[cpu][conv_winograd][transforms]") {
  // One tile with one channel: fp32 rounding of the transforms alone (~1e-7 for F(2x2), ~1e-6 for
  // F(4x4), from magnitudes up to ~100); any wrong matrix entry errs by >= ~1e-2.
  const double e2 = transform_error<conv::winograd::F2>(2000);
  const double e4 = transform_error<conv::winograd::F4>(2000);
  INFO("F(2x2) max error " << e2 << ", F(4x4) max error " << e4);
  CHECK(e2 < 1e-5);
  CHECK(e4 < 1e-4);
  CHECK(e2 > 0.0);  // the comparison runs at all (fp32 transforms of random inputs are never all exact)
}
