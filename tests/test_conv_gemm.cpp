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
#include "common/conv_harness.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/reference.h"
#include "common/scoped_config.h"
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

// The harness (GPU state, host / device problems, result checks, notes, extra problems) is
// common/conv_harness.h, shared with the other convolution tests.
using Gpu = ConvTestGpu;

Gpu& gpu() {
  static Gpu g("test_conv_gemm");
  return g;
}

// ================================================================ the three paths

std::vector<const conv::ConvSolver*> gemm_solvers() { return solvers_of(JHDNN_CONVOLUTION_FWD_ALGO_GEMM); }

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

// (b) The public API with ALGO_GEMM (see run_api_forward).
std::vector<double> run_api(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes) {
  return run_api_forward(gpu(), JHDNN_CONVOLUTION_FWD_ALGO_GEMM, d, h, tol, notes);
}

// (c) cuDNN's GEMM algorithm (else its best dot-product one): see run_cudnn_forward.
// The three paths together (common/conv_harness.h): run_solvers, the API, cuDNN.
ConvPaths paths() { return {gpu(), JHDNN_CONVOLUTION_FWD_ALGO_GEMM, run_solvers, /*prefer_cudnn_gemm=*/true}; }

// Runs `problems` (any data type, given as packed NCHW bases) in NCHW and NHWC.
void run_problem_list(const std::vector<NamedProblem>& problems, jhdnnDataType_t dt, Scale sc, Notes& notes,
                      bool with_cudnn = true) {
  run_conv_problem_list(paths(), problems, dt, sc, notes, with_cudnn);
}

#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

// ================================================================ the problem set

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
  Notes notes("gemm: problem set, FLOAT", /*report_cudnn_gemm_runs=*/true);
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
    Notes notes("gemm: alpha/beta", /*report_cudnn_gemm_runs=*/true);
    run_problem_list(some, JHDNN_DATA_FLOAT, sc, notes);
    notes.print();
    check_both_solvers_ran(notes);
  }
}

TEST_CASE("conv gemm: CONVOLUTION mode (mirrored filter)", "[gpu][conv_gemm][convmode]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = convmode_problems();
  CHECK(!probs.empty());
  Notes notes("gemm: CONVOLUTION mode", /*report_cudnn_gemm_runs=*/true);
  run_problem_list(probs, JHDNN_DATA_FLOAT, Scale{}, notes);
  notes.print();
  check_both_solvers_ran(notes);
}

TEST_CASE("conv gemm: 3-D convolutions", "[gpu][conv_gemm][3d]") {
  START_GPU_CASE();
  Notes notes("gemm: 3-D", /*report_cudnn_gemm_runs=*/true);
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
    ScopedConvGemmNchw env(mode);
    Notes notes(std::string("gemm: NCHW forced ") + mode, /*report_cudnn_gemm_runs=*/true);
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
  Notes notes("gemm: chunked", /*report_cudnn_gemm_runs=*/true);
  for (const Combo& c : combos) {
    INFO((c.nhwc ? "NHWC" : "NCHW") << " mode '" << c.mode << "'");
    ScopedConvGemmNchw mode(c.mode);
    ScopedConvGemmWsCap cap(c.per_img_bytes * 5 / 2);
    const ConvProblem lp = with_layout(base, JHDNN_DATA_FLOAT, c.nhwc);
    CHECK(conv::gemm_ours_solver().workspace_bytes(lp) == size_t(2 * c.per_img_bytes));
    DeviceProblem d(h, lp);
    ++notes.configs;
    run_solvers(d, h, tol, notes);
    run_api(d, h, tol, notes);
  }
  check_both_solvers_ran(notes);
  {
    ScopedConvGemmNchw mode("per_image");
    ScopedConvGemmWsCap cap(col * 4 - 4);
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
  std::vector<RefusalCase> cases = non_float_cases(base);
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
  for (const RefusalCase& c : cases) {
    INFO(c.what << ": " << c.p.key());
    for (const conv::ConvSolver* s : gemm_solvers()) {
      INFO("solver " << s->name());
      check_refused(s->can_implement(c.p, g.dev), c.reason_part);
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
  ScopedDisabledSolvers off("gemm_ours");
  Notes notes("gemm: JHDNN_DISABLE=gemm_ours", /*report_cudnn_gemm_runs=*/true);
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
