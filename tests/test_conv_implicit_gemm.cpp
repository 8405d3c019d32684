// GPU correctness of IMPLICIT_GEMM and IMPLICIT_PRECOMP_GEMM (FLOAT data, FMA math): both solvers
// through the solver interface, the public API (jhdnnGetConvolutionForwardWorkspaceSize +
// jhdnnConvolutionForward with the algorithm enum) and cuDNN's same algorithm under FMA math, on
// the shared problem set in NCHW and NHWC and on the corners it misses (tile tails with every tile
// shape forced, alpha / beta, CONVOLUTION mode, padded strides, 3-D, tensors of more than 2^31
// elements), plus the refusals and the workspace formula (host only).
//
// How one configuration is checked (as in test_conv_direct.cpp):
//   - inputs uniform in [-1, 1), seeded from test_seed() (printed; JHDNN_TEST_SEED replays);
//   - reference: conv_fwd_reference in float64, once per problem, reused for every layout / path;
//   - y poisoned with NaN (beta = 0) or random (beta != 0) before each run; gap bytes of a
//     strided y and guard bytes after every buffer (workspace included) must come back untouched;
//   - element-wise comparison with conv_tolerance(FLOAT, C/G*T*R*S); cuDNN vs the reference and
//     jhDNN vs cuDNN at twice the tolerance; cuDNN's NOT_SUPPORTED is counted, not failed;
//   - both solvers must run (not be refused) on every configuration: counted and asserted.
//
// Every GPU TEST_CASE starts with JHDNN_REQUIRE_GPU(): without a GPU they are reported as skipped.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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
#include <catch2/reporters/catch_reporter_event_listener.hpp>
#include <catch2/reporters/catch_reporter_registrars.hpp>

#include "common/catch_gpu.h"
#include "common/conv_harness.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/reference.h"
#include "common/scoped_config.h"
#include "common/test_util.h"
#include "conv/implicit_gemm/fast_divmod.h"
#include "conv/implicit_gemm/implicit_gemm.h"
#include "conv/dispatch.h"
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

// Created on first use; destroyed by GpuTeardown when the test run ends, while the process is
// fully alive. A static Gpu would be destroyed during exit(), after the main thread's
// thread_locals (the libraries' per-thread state among them) are gone, which is where the
// last-error use-after-free fixed in src/core/status.cpp struck.
std::unique_ptr<Gpu>& gpu_slot() {
  static std::unique_ptr<Gpu> g;
  return g;
}

Gpu& gpu() {
  std::unique_ptr<Gpu>& g = gpu_slot();
  if (!g) g = std::make_unique<Gpu>("test_conv_implicit_gemm");
  return *g;
}

class GpuTeardown : public Catch::EventListenerBase {
 public:
  using Catch::EventListenerBase::EventListenerBase;
  void testRunEnded(const Catch::TestRunStats&) override {
    std::unique_ptr<Gpu>& g = gpu_slot();
    if (!g) return;
    (void)cudaStreamSynchronize(g->stream.get());
    g.reset();
  }
};
CATCH_REGISTER_LISTENER(GpuTeardown)

// ================================================================ the three paths

// The two algorithms this file tests, and the cuDNN algorithm each is compared with.
constexpr jhdnnConvolutionFwdAlgo_t kAlgos[] = {JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM};

const conv::ConvSolver& solver_of(jhdnnConvolutionFwdAlgo_t algo) {
  return algo == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ? conv::implicit_gemm_solver()
                                                          : conv::implicit_precomp_gemm_solver();
}

// Makes IMPLICIT_PRECOMP_GEMM use its per-reduction-index table (the first design, GPU-verified
// in round 1) for the lifetime of the object, instead of the per-tap table it takes for whole
// channel blocks.
struct ForcePerElementTable {
  ForcePerElementTable() { conv::igemm::set_precomp_per_element_table(true); }
  ~ForcePerElementTable() { conv::igemm::set_precomp_per_element_table(false); }
  ForcePerElementTable(const ForcePerElementTable&) = delete;
  ForcePerElementTable& operator=(const ForcePerElementTable&) = delete;
};

constexpr const char* kPerElementLabel = "implicit_precomp_gemm (per-element table forced)";

// (a) The solver of `algo` through ConvSolver::run on the test stream. Both solvers claim every
// FLOAT problem of this file, so a refusal fails. `label` names the run in messages and counts.
void run_solver_once(jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d, const HostProblem& h, Tolerance tol,
                     Notes& notes, const std::string& label) {
  Gpu& g = gpu();
  const conv::ConvSolver& s = solver_of(algo);
  INFO("solver " << label);
  const conv::Verdict v = s.can_implement(d.p, g.dev);
  if (!v.ok) {
    FAIL_CHECK(s.name() << " refused a problem it must serve: " << v.reason);
    return;
  }
  const size_t ws_bytes = s.workspace_bytes(d.p);
  if (algo == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    CHECK(ws_bytes > 0);  // the offset table lives there
    // Too small a workspace is refused, not overrun.
    DeviceBuffer small(ws_bytes - 1);
    const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta};
    const core::Status st = s.run(d.p, args, small.get(), ws_bytes - 1, g.stream.get());
    CHECK(st.code == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
  } else {
    CHECK(ws_bytes == 0);
  }
  DeviceBuffer ws(ws_bytes);  // poisoned; a valid pointer even for 0 bytes
  d.reset_y();
  const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta};
  const core::Status st = s.run(d.p, args, ws_bytes ? ws.get() : nullptr, ws_bytes, g.stream.get());
  g.stream.sync();
  INFO("run status " << core::status_name(st.code) << ": " << st.message);
  CHECK(st.ok());
  if (!st.ok()) return;
  ++notes.solver_runs;
  ++notes.runs_by_solver[label];
  check_result("solver " + label, d, h, tol, true, &ws);
}

// IMPLICIT_PRECOMP_GEMM runs twice: its default table (per tap when C/G % 8 == 0) and the
// per-element table forced, so a fault in either names itself.
void run_solver(jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d, const HostProblem& h, Tolerance tol,
                Notes& notes) {
  run_solver_once(algo, d, h, tol, notes, solver_of(algo).name());
  if (algo == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    ForcePerElementTable force;
    run_solver_once(algo, d, h, tol, notes, kPerElementLabel);
  }
}

// (b) The public API with `algo`; returns the result (reference strides), empty on failure. The
// workspace comes from jhdnnGetConvolutionForwardWorkspaceSize and is handed to the forward call.
std::vector<double> run_api(jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d, const HostProblem& h, Tolerance tol,
                            Notes& notes) {
  Gpu& g = gpu();
  jhdnnHandle_t handle = g.jh.get();
  JhdnnConvDescs descs(d.p);
  size_t ws_bytes = 0;
  const jhdnnStatus_t wst =
      jhdnnGetConvolutionForwardWorkspaceSize(handle, descs.x, descs.w, descs.conv, descs.y, algo, &ws_bytes);
  INFO("jhdnnGetConvolutionForwardWorkspaceSize(" << jhdnn_algo_name(algo) << "): " << jhdnnGetErrorString(wst) << " "
                                                  << jhdnn_last_error());
  CHECK(wst == JHDNN_STATUS_SUCCESS);
  if (wst != JHDNN_STATUS_SUCCESS) return {};
  // The API runs the first solver of `algo` that takes the problem, which for depthwise problems
  // under IMPLICIT_PRECOMP_GEMM is the depthwise solver (registered before this file's): the
  // workspace must be the one that solver asks for.
  const conv::ConvSolver* chosen = nullptr;
  REQUIRE(conv::select_solver(d.p, g.dev, algo, &chosen).ok());
  REQUIRE(chosen != nullptr);
  INFO("dispatched to " << chosen->name());
  CHECK(ws_bytes == chosen->workspace_bytes(d.p));
  DeviceBuffer ws(ws_bytes);
  const float af = float(h.sc.alpha), bf = float(h.sc.beta);
  if (ws_bytes > 0) {  // a workspace one byte short is refused with SIZE_INSUFFICIENT
    const jhdnnStatus_t st = jhdnnConvolutionForward(handle, &af, descs.x, d.x.get(), descs.w, d.w.get(), descs.conv,
                                                     algo, ws.get(), ws_bytes - 1, &bf, descs.y, d.y.get());
    CHECK(st == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
  }
  d.reset_y();
  const jhdnnStatus_t st = jhdnnConvolutionForward(handle, &af, descs.x, d.x.get(), descs.w, d.w.get(), descs.conv,
                                                   algo, ws_bytes ? ws.get() : nullptr, ws_bytes, &bf, descs.y,
                                                   d.y.get());
  g.stream.sync();
  INFO("jhdnnConvolutionForward(" << jhdnn_algo_name(algo) << "): " << jhdnnGetErrorString(st) << " "
                                  << jhdnn_last_error());
  CHECK(st == JHDNN_STATUS_SUCCESS);
  if (st != JHDNN_STATUS_SUCCESS) return {};
  ++notes.api_runs;
  return check_result(std::string("jhdnnConvolutionForward(") + jhdnn_algo_name(algo) + ")", d, h, tol, true, &ws);
}

// (c) cuDNN's same algorithm (FMA math) on the same buffers: vs the reference, and jhDNN (jh) vs cuDNN.
void run_cudnn(jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d, const HostProblem& h,
               const std::vector<double>& jh, Notes& notes) {
  Gpu& g = gpu();
  const std::string what =
      h.name + " " + dt_name(d.p.dtype) + " " + layout_name(d.p) + " " + jhdnn_algo_name(algo);
  // d.p is FLOAT with FMA math (DeviceProblem's fma_math): fp32 products, the tolerance of conv_tolerance.
  const std::unique_ptr<CudnnConvDescs> cd = cudnn_descs_or_skip(d, what, notes);
  if (!cd) return;
  d.reset_y();
  const CudnnRun r = cudnn_best_forward(g.ch.get(), *cd, d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta, CudnnPick::kHeuristic, &g.cudnn_ws,
                                        size_t(1) << 31, 1u << unsigned(algo));
  g.stream.sync();
  check_cudnn_run(r, what, d, h, jh, notes, int(algo));
}

// Every path of both algorithms on every layout of one host problem. Every DeviceProblem of this
// file has fma_math: the configuration, fp32 data with FMA math. (Under DEFAULT math a TF32
// tensor-core solver registered for the same algorithm could take FLOAT problems before these solvers.)
void run_all_paths(const HostProblem& h, const std::vector<ConvProblem>& layouts, Notes& notes) {
  for_each_layout(h, layouts, notes, /*fma_math=*/true, [&](DeviceProblem& d, Tolerance tol) {
    for (jhdnnConvolutionFwdAlgo_t algo : kAlgos) {
      INFO("algorithm " << jhdnn_algo_name(algo));
      run_solver(algo, d, h, tol, notes);
      const std::vector<double> jh = run_api(algo, d, h, tol, notes);
      run_cudnn(algo, d, h, jh, notes);
    }
  });
}

// Runs `problems` (FLOAT, given as packed NCHW bases) in NCHW and NHWC (see for_each_host_problem).
void run_problem_list(const std::vector<NamedProblem>& problems, Scale sc, Notes& notes) {
  for_each_host_problem(problems, JHDNN_DATA_FLOAT, sc,
                        [&](const HostProblem& h, const std::vector<ConvProblem>& layouts) {
                          run_all_paths(h, layouts, notes);
                        });
}

// Both solvers ran on every configuration (no silent refusal, no fallback).
void check_all_ran(Notes& notes) {
  notes.print();
  CHECK(notes.configs > 0);
  CHECK(notes.runs_by_solver["implicit_gemm"] == notes.configs);
  CHECK(notes.runs_by_solver["implicit_precomp_gemm"] == notes.configs);
  CHECK(notes.runs_by_solver[kPerElementLabel] == notes.configs);
  CHECK(notes.api_runs == 2 * notes.configs);
}

#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")


// ================================================================ extra problems

// Shapes aimed at the kernel's edges: every tile config's column tail (K/G just above and below
// 8, 64, 128), row tails (N*P*Q not a multiple of 64 / 128 / 256), channel counts that are not a
// multiple of the reduction step 8 (IMPLICIT masks part of a channel block), a single channel,
// a reduction shorter than one step, 1x1 with stride, a filter as large as the input.
std::vector<NamedProblem> tail_problems() {
  return {
      {"tail_k130_c19", float_2d(2, 19, 13, 11, 130, 3, 3, 1, 1, 1)},
      {"tail_k129_c8", float_2d(1, 8, 23, 23, 129, 3, 3, 1, 1, 1)},
      {"tail_k65_c17", float_2d(3, 17, 9, 14, 65, 3, 3, 1, 1, 1)},
      {"tail_k63_c33_s2", float_2d(2, 33, 15, 15, 63, 3, 3, 1, 2, 1)},
      {"tail_k9_c5", float_2d(2, 5, 19, 21, 9, 3, 3, 0, 1, 1)},
      {"tail_k7_c1", float_2d(3, 1, 27, 25, 7, 5, 5, 2, 1, 1)},
      {"tail_k1_c3_dil2", float_2d(2, 3, 16, 17, 1, 3, 3, 2, 1, 2)},
      {"tail_k24_c2_r1", float_2d(4, 2, 11, 9, 24, 1, 1, 0, 1, 1)},
      {"tail_1x1_s2_k40_c36", float_2d(2, 36, 14, 14, 40, 1, 1, 0, 2, 1)},
      {"tail_filter_eq_input", float_2d(3, 6, 5, 5, 12, 5, 5, 0, 1, 1)},
      {"tail_grouped_g3_k99", float_2d(2, 12, 10, 10, 99, 3, 3, 1, 1, 1, 3)},
      {"tail_depthwise_c40", float_2d(2, 40, 12, 12, 40, 3, 3, 1, 2, 1, 40)},
      {"tail_q255_k136_c64", float_2d(1, 64, 1, 257, 136, 1, 3, 0, 1, 1)},
  };
}

// Forces one tile shape for the lifetime of the object, through the library's configuration (an
// atomic), not the environment: the library reads JHDNN_IGEMM_TILE once, and setenv while another
// thread may call getenv is a data race.
using ForceTile = ScopedIgemmTile;

constexpr const char* kTiles[] = {"128x128", "128x64", "64x64", "256x8"};

// Problems whose reference takes long on the CPU are fine: each is built once per list.
void run_every_tile(const std::vector<NamedProblem>& problems, Scale sc, Notes& notes) {
  for (const NamedProblem& np : problems) {
    const HostProblem h = make_host_problem(np.name, with_layout(np.p, JHDNN_DATA_FLOAT, false), sc);
    const Tolerance tol = conv_tolerance(JHDNN_DATA_FLOAT, h.base.reduction());
    INFO("problem " << h.name << " [" << h.base.key() << "]");
    for (bool nhwc : {false, true}) {
      DeviceProblem d(h, with_layout(np.p, JHDNN_DATA_FLOAT, nhwc), /*fma_math=*/true);
      INFO("layout " << layout_name(d.p));
      for (const char* tile : kTiles) {
        ForceTile force(tile);
        INFO("tile " << tile);
        ++notes.configs;
        for (jhdnnConvolutionFwdAlgo_t algo : kAlgos) run_solver(algo, d, h, tol, notes);
      }
    }
  }
}

}  // namespace

TEST_CASE("implicit gemm: problem set, FLOAT, NCHW and NHWC", "[gpu][implicit_gemm][problem_set]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> set = conv_problem_set();
  CHECK(set.size() >= 60);
  Notes notes("implicit gemm: problem set, FLOAT");
  run_problem_list(set, Scale{}, notes);
  check_all_ran(notes);
  CHECK(notes.cudnn_ran > 0);  // a harness that never reaches cuDNN checks nothing against it
}

TEST_CASE("implicit gemm: tile tails, every tile shape forced", "[gpu][implicit_gemm][tiles]") {
  START_GPU_CASE();
  {
    Notes notes("implicit gemm: tail problems, heuristic tiles, all paths");
    run_problem_list(tail_problems(), Scale{}, notes);
    check_all_ran(notes);
  }
  {
    // Every tile shape on the tail problems and on every third problem of the shared set: small
    // problems alone would only ever get the small tiles from the heuristic.
    Notes notes("implicit gemm: every tile shape");
    std::vector<NamedProblem> probs = tail_problems();
    for (const NamedProblem& np : every_nth(conv_problem_set(), 3)) probs.push_back(np);
    run_every_tile(probs, Scale{}, notes);
    run_every_tile(every_nth(tail_problems(), 3), Scale{0.5, 0.75}, notes);
    notes.print();
    CHECK(notes.runs_by_solver["implicit_gemm"] == notes.configs);
    CHECK(notes.runs_by_solver["implicit_precomp_gemm"] == notes.configs);
    CHECK(notes.runs_by_solver[kPerElementLabel] == notes.configs);
  }
}

TEST_CASE("implicit gemm: alpha and beta", "[gpu][implicit_gemm][alpha_beta]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> some = every_nth(conv_problem_set(), 5);
  {
    Notes notes("implicit gemm: alpha 0.5 beta 0.75");  // y pre-filled with random values
    run_problem_list(some, Scale{0.5, 0.75}, notes);
    check_all_ran(notes);
  }
  {
    Notes notes("implicit gemm: alpha 0.5 beta 0 (NaN y)");  // y must be overwritten, never read
    run_problem_list(some, Scale{0.5, 0.0}, notes);
    check_all_ran(notes);
  }
  {
    Notes notes("implicit gemm: alpha -2 beta 1");
    run_problem_list(every_nth(tail_problems(), 4), Scale{-2.0, 1.0}, notes);
    check_all_ran(notes);
  }
}

TEST_CASE("implicit gemm: CONVOLUTION mode (mirrored filter)", "[gpu][implicit_gemm][convmode]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = convmode_problems();
  REQUIRE(!probs.empty());
  Notes notes("implicit gemm: CONVOLUTION mode");
  run_problem_list(probs, Scale{}, notes);
  check_all_ran(notes);
}

TEST_CASE("implicit gemm: 3-D problems", "[gpu][implicit_gemm][3d]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = extra_3d_problems();
  Notes notes("implicit gemm: 3-D");
  run_problem_list(probs, Scale{}, notes);
  run_problem_list(every_nth(probs, 2), Scale{0.5, 0.75}, notes);
  check_all_ran(notes);
  Notes tiles("implicit gemm: 3-D, every tile shape");
  run_every_tile(probs, Scale{}, tiles);
  tiles.print();
  CHECK(tiles.runs_by_solver["implicit_gemm"] == tiles.configs);
  CHECK(tiles.runs_by_solver["implicit_precomp_gemm"] == tiles.configs);
  CHECK(tiles.runs_by_solver[kPerElementLabel] == tiles.configs);
}

TEST_CASE("implicit gemm: non-packed (4dEx-style) x and y strides", "[gpu][implicit_gemm][strided]") {
  START_GPU_CASE();
  std::vector<StridedShape> shapes = strided_shapes();
  shapes.push_back({"strided_k136_c16", 2, 16, 9, 10, 136, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  Notes notes("implicit gemm: strided x/y");
  for_each_strided_config(shapes, JHDNN_DATA_FLOAT,
                          [&](const HostProblem& h, const ConvProblem& lp) { run_all_paths(h, {lp}, notes); });
  check_all_ran(notes);
}

// IMPLICIT_PRECOMP_GEMM with whole channel blocks runs precomp_async_kernel: a ring of 4 cp.async
// stages, 3 steps in flight (a step = 8 channels of one filter tap). These shapes put the step
// count below, at and just above the ring (1, 2, 3, 4, 5 steps), on many ring turns (49 taps),
// on groups (the x / w group offsets), on taps that lie wholly in the padding (pad 4 around a 3x3
// filter), on dilation and stride, and on a single output pixel with a 130-channel column tail.
std::vector<NamedProblem> precomp_ring_problems() {
  return {
      {"ring_1step_1x1_c8_k8", float_2d(3, 8, 7, 9, 8, 1, 1, 0, 1, 1)},
      {"ring_2steps_1x1_c16_k70", float_2d(2, 16, 11, 13, 70, 1, 1, 0, 1, 1)},
      {"ring_3steps_3x1_c8_k33", float_2d(2, 8, 10, 9, 33, 3, 1, 1, 1, 1)},
      {"ring_4steps_2x2_c8_k20", float_2d(2, 8, 9, 10, 20, 2, 2, 0, 1, 1)},
      {"ring_5steps_1x5_c8_k17", float_2d(1, 8, 6, 21, 17, 1, 5, 2, 1, 1)},
      {"ring_49taps_7x7s2_c8_k72", float_2d(2, 8, 23, 19, 72, 7, 7, 3, 2, 1)},
      {"ring_grouped_g2_c32_k48", float_2d(2, 32, 9, 9, 48, 3, 3, 1, 1, 1, 2)},
      {"ring_grouped_g3_c24_k9_s2", float_2d(2, 24, 8, 8, 9, 3, 3, 1, 2, 1, 3)},
      {"ring_dil2_c16_k65", float_2d(2, 16, 17, 15, 65, 3, 3, 2, 1, 2)},
      {"ring_pad4_c8_k12", float_2d(1, 8, 5, 6, 12, 3, 3, 4, 1, 1)},
      {"ring_one_pixel_c64_k130", float_2d(1, 64, 1, 1, 130, 1, 1, 0, 1, 1)},
  };
}

TEST_CASE("implicit gemm: PRECOMP cp.async ring edges, every tile shape forced", "[gpu][implicit_gemm][ring]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = precomp_ring_problems();
  for (const NamedProblem& np : probs) REQUIRE(np.p.c_per_group() % 8 == 0);  // the per-tap path
  Notes notes("implicit gemm: PRECOMP ring edges, every tile shape");
  run_every_tile(probs, Scale{}, notes);
  run_every_tile(every_nth(probs, 2), Scale{0.5, 0.75}, notes);
  notes.print();
  CHECK(notes.runs_by_solver["implicit_gemm"] == notes.configs);
  CHECK(notes.runs_by_solver["implicit_precomp_gemm"] == notes.configs);
  CHECK(notes.runs_by_solver[kPerElementLabel] == notes.configs);
  Notes heur("implicit gemm: PRECOMP ring edges, heuristic tiles, all paths");
  run_problem_list(probs, Scale{-2.0, 1.0}, heur);
  check_all_ran(heur);
}

// No GPU needed: the division-free decode of implicit_gemm's flat reduction (the device half
// differs only in using __umulhi, the same multiply-high).
TEST_CASE("implicit gemm: FastDivmod equals integer division", "[implicit_gemm][fast_divmod]") {
  SplitMix64 rng(mix_seed(test_seed(), hash_string("fast_divmod")));
  int64_t bad = 0, checked = 0;
  std::string first;
  auto check = [&](int32_t d, int32_t n) {
    const conv::igemm::FastDivmod f(d);
    int32_t r = -1;
    const int32_t q = f.divmod(n, &r);
    ++checked;
    if ((q != n / d || r != n % d) && bad++ == 0)
      first = std::to_string(n) + " / " + std::to_string(d) + " gave " + std::to_string(q) + " rem " + std::to_string(r);
  };
  constexpr int32_t kMaxN = INT32_MAX;
  for (int32_t d = 1; d <= 4096; ++d) {
    for (int32_t n = 0; n < 1024; ++n) check(d, n);
    for (int i = 0; i < 64; ++i) check(d, int32_t(rng.next() % uint64_t(kMaxN)));
    check(d, kMaxN);
    check(d, kMaxN - 1);
  }
  for (int sh = 0; sh < 31; ++sh)
    for (int64_t d : {(int64_t(1) << sh) - 1, int64_t(1) << sh, (int64_t(1) << sh) + 1}) {
      if (d < 1 || d > kMaxN) continue;
      check(int32_t(d), kMaxN);
      check(int32_t(d), int32_t(d));
      check(int32_t(d), int32_t(d - 1));
      for (int i = 0; i < 256; ++i) check(int32_t(d), int32_t(rng.next() % uint64_t(kMaxN)));
    }
  for (int i = 0; i < 200000; ++i) check(int32_t(rng.next() % uint64_t(kMaxN)) + 1, int32_t(rng.next() % uint64_t(kMaxN)));
  INFO(bad << " of " << checked << " wrong; first " << first);
  CHECK(bad == 0);
}

// No GPU needed: the refusals and the workspace formula are host logic.
TEST_CASE("implicit gemm: refusals name their reason; workspace formula", "[implicit_gemm][refuse]") {
  core::DeviceInfo dev;  // unused by these solvers' checks
  const ConvProblem ok = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1);
  for (jhdnnConvolutionFwdAlgo_t algo : kAlgos) {
    const conv::ConvSolver& s = solver_of(algo);
    INFO("solver " << s.name());
    CHECK(s.algo() == algo);
    CHECK(s.deterministic());
    CHECK(s.can_implement(ok, dev).ok);
    CHECK(s.can_implement(with_layout(ok, JHDNN_DATA_FLOAT, true), dev).ok);
    auto refused = [&](ConvProblem p, const char* needle) {
      const conv::Verdict v = s.can_implement(p, dev);
      INFO("problem " << p.key() << " reason: " << v.reason);
      CHECK_FALSE(v.ok);
      CHECK(std::string(v.reason).find(needle) != std::string::npos);
      // run() refuses the same way, before touching any pointer.
      const core::Status st = s.run(p, conv::ConvArgs{}, nullptr, 0, nullptr);
      CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
      CHECK(st.message.find(needle) != std::string::npos);
    };
    for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
      ConvProblem p = with_layout(ok, dt, false);
      p.compute_type = dt == JHDNN_DATA_DOUBLE ? JHDNN_DATA_DOUBLE : JHDNN_DATA_FLOAT;
      refused(p, "FLOAT data only");
    }
    {
      ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 70000, 3, 3, 70000, 1, 1, 0, 0, 1, 1, 1, 1,
                                            70000);
      refused(p, "65535 groups");
    }
    {
      ConvProblem p = ok;
      p.N = int64_t(1) << 31;  // 2^31 * 81 GEMM rows
      refused(p, "GEMM rows");
    }
    {
      ConvProblem p = ok;
      p.C = int64_t(1) << 28;  // (C/G) * 9 > 2^31
      refused(p, "GEMM reduction");
    }
    {
      ConvProblem p = ok;
      p.dil_h = 1 << 30;
      refused(p, "32-bit coordinates");
    }
    {
      ConvProblem p = ok;
      p.K = 600000;  // 75000 blocks of 8 channels > grid y
      refused(p, "grid y");
    }
    // A null pointer on an acceptable problem is a BAD_PARAM, not a crash.
    const size_t ws = s.workspace_bytes(ok);
    const core::Status st = s.run(ok, conv::ConvArgs{}, nullptr, ws, nullptr);
    CHECK(st.code == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
  }
  // The tile override used by the tests: known names only; "" = the heuristic, nullptr = the
  // environment's JHDNN_IGEMM_TILE.
  CHECK_FALSE(core::config::set_igemm_tile("128x32"));
  for (const char* t : {"128x128", "128x64", "64x64", "256x8", ""}) CHECK(core::config::set_igemm_tile(t));
  CHECK(core::config::set_igemm_tile(nullptr));
  CHECK(conv::implicit_gemm_solver().workspace_bytes(ok) == 0);
  // 32 bytes per reduction index (rounded up to 8 indices) + 16 bytes of alignment slack; with
  // C/G % 8 == 0 also the re-laid-out filter: G * (C/G)*T*R*S rows of K/G rounded up to 4 floats.
  CHECK(conv::implicit_precomp_gemm_solver().workspace_bytes(ok) == size_t(16 * 9) * 32 + 16 + size_t(16 * 9) * 32 * 4);
  const ConvProblem odd = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 3, 9, 9, 8, 7, 7, 3, 3, 2, 2, 1, 1);
  CHECK(conv::implicit_precomp_gemm_solver().workspace_bytes(odd) == size_t(152) * 32 + 16);  // 147 -> 152
  const ConvProblem grouped =
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 16, 9, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2);  // C/G 8, K/G 5
  CHECK(conv::implicit_precomp_gemm_solver().workspace_bytes(grouped) == size_t(72) * 32 + 16 + size_t(2 * 72 * 8) * 4);
}

// x of more than 2^31 elements and y of more than 2^32: the 64-bit offsets (the GEMM row index,
// N*P*Q, stays below 2^31 as can_implement requires). C = 2, K = 5, 3x3 pad 1; filter k has one
// non-zero tap, (channel, r, s, value) from kTaps, so y[k,p,q] = value * x[c, p-1+r, q-1+s]
// (0 in the padding) is exact in fp32. x repeats a random chunk whose length is not a power of
// two, so every row differs.
TEST_CASE("implicit gemm: FLOAT tensors of more than 2^31 elements (64-bit offsets)", "[gpu][implicit_gemm][large]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  const int64_t HW = 32769, C = 2, K = 5;
  const ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, C, HW, HW, K, 3, 3, 1, 1, 1, 1, 1, 1);
  REQUIRE(p.x_span() > (int64_t(1) << 31));
  REQUIRE(p.y_span() > (int64_t(1) << 32));
  const size_t x_bytes = size_t(p.x_span()) * 4, y_bytes = size_t(p.y_span()) * 4;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < x_bytes + y_bytes + (size_t(1) << 30))
    SKIP("needs " << (x_bytes + y_bytes) / (1 << 20) << " MiB of device memory, " << free_b / (1 << 20) << " free");

  constexpr int64_t kChunk = (int64_t(1) << 24) + 3;
  std::vector<float> chunk(static_cast<size_t>(kChunk));
  SplitMix64 rng(mix_seed(test_seed(), hash_string("igemm_large_x")));
  for (float& v : chunk) v = float(int(rng.next() % 2049) - 1024) / 1024.0f;  // exact, in [-1, 1]
  DeviceBuffer dx(x_bytes), dw(size_t(p.w_span()) * 4), dy(y_bytes);
  for (int64_t i = 0; i < p.x_span(); i += kChunk) {
    const int64_t n = std::min(kChunk, p.x_span() - i);
    dx.upload(chunk.data(), size_t(n) * 4, size_t(i) * 4);
  }
  struct Tap {
    int c, r, s;
    float v;
  };
  const Tap kTaps[K] = {{0, 1, 1, 0.5f}, {1, 0, 0, -2.0f}, {0, 2, 2, 1.0f}, {1, 1, 2, 0.25f}, {0, 2, 0, -1.0f}};
  std::vector<float> wh(size_t(p.w_span()), 0.0f);
  for (int k = 0; k < K; ++k) wh[size_t(k * 18 + kTaps[k].c * 9 + kTaps[k].r * 3 + kTaps[k].s)] = kTaps[k].v;
  dw.upload(wh.data(), wh.size() * 4);
  auto xval = [&](int64_t c, int64_t h, int64_t w) -> double {
    if (h < 0 || w < 0 || h >= HW || w >= HW) return 0.0;
    return chunk[size_t(((c * HW + h) * HW + w) % kChunk)];
  };
  for (jhdnnConvolutionFwdAlgo_t algo : kAlgos) {
    const conv::ConvSolver& s = solver_of(algo);
    INFO("solver " << s.name());
    const conv::Verdict v = s.can_implement(p, g.dev);
    INFO("verdict: " << v.reason);
    REQUIRE(v.ok);
    DeviceBuffer ws(s.workspace_bytes(p));
    dy.poison();
    const core::Status st = s.run(p, conv::ConvArgs{dx.get(), dw.get(), dy.get(), 1.0, 0.0},
                                  ws.bytes() ? ws.get() : nullptr, ws.bytes(), g.stream.get());
    g.stream.sync();
    INFO("run status " << core::status_name(st.code) << ": " << st.message);
    REQUIRE(st.ok());
    CHECK(dx.guard_intact());
    CHECK(dy.guard_intact());
    // Sampled outputs: random ones plus the last rows and columns (largest offsets).
    int64_t bad = 0, checked = 0;
    std::string first;
    SplitMix64 pick(mix_seed(test_seed(), hash_string("igemm_large_pick")));
    for (int i = 0; i < 10000; ++i) {
      const int k = i % int(K);
      int64_t pp, qq;
      if (i < 6000) {
        pp = int64_t(pick.next() % uint64_t(HW)), qq = int64_t(pick.next() % uint64_t(HW));
      } else {
        pp = HW - 1 - int64_t(pick.next() % 3), qq = int64_t(pick.next() % uint64_t(HW));
        if (i % 4 >= 2) std::swap(pp, qq);
      }
      const Tap& t = kTaps[k];
      const double want = double(t.v) * xval(t.c, pp - 1 + t.r, qq - 1 + t.s);
      float got = 0.f;
      dy.download(&got, 4, size_t(k * p.y_stride[1] + pp * p.y_stride[3] + qq) * 4);
      ++checked;
      if (!(double(got) == want) && bad++ == 0)
        first = "(k,p,q)=(" + std::to_string(k) + "," + std::to_string(pp) + "," + std::to_string(qq) + "): got " +
                std::to_string(got) + " want " + std::to_string(want);
    }
    INFO(bad << " of " << checked << " sampled outputs wrong; first " << first);
    CHECK(bad == 0);
  }
}

// The workspace path of the public API: the query reports PRECOMP's table size, Get_v7 / Find /
// FindEx list both algorithms runnable with that memory, FindEx without a workspace marks PRECOMP
// SIZE_INSUFFICIENT (and still runs IMPLICIT_GEMM), and FindEx's output (the last timed run) is
// right.
TEST_CASE("implicit gemm: workspace through Get_v7 / Find / FindEx", "[gpu][implicit_gemm][find]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  const std::vector<NamedProblem> set = conv_problem_set();
  for (size_t idx : {size_t(0), set.size() / 2}) {
    const NamedProblem& np = set[idx];
    const HostProblem h = make_host_problem(np.name, with_layout(np.p, JHDNN_DATA_FLOAT, false), Scale{});
    for (bool nhwc : {false, true}) {
      DeviceProblem d(h, with_layout(np.p, JHDNN_DATA_FLOAT, nhwc), /*fma_math=*/true);
      INFO("problem " << np.name << " [" << d.p.key() << "]");
      JhdnnConvDescs descs(d.p);
      const size_t need = conv::implicit_precomp_gemm_solver().workspace_bytes(d.p);
      REQUIRE(need > 0);
      size_t ws_bytes = 0;
      REQUIRE(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                      JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                      &ws_bytes) == JHDNN_STATUS_SUCCESS);
      CHECK(ws_bytes == need);
      REQUIRE(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                      JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                                      &ws_bytes) == JHDNN_STATUS_SUCCESS);
      CHECK(ws_bytes == 0);

      jhdnnConvolutionFwdAlgoPerf_t perf[JHDNN_CONVOLUTION_FWD_ALGO_COUNT];
      auto entry = [&](int returned, jhdnnConvolutionFwdAlgo_t algo) -> const jhdnnConvolutionFwdAlgoPerf_t* {
        for (int i = 0; i < returned; ++i)
          if (perf[i].algo == algo) return &perf[i];
        return nullptr;
      };
      auto check_entries = [&](int returned, bool timed, bool precomp_fits) {
        for (jhdnnConvolutionFwdAlgo_t algo : kAlgos) {
          const jhdnnConvolutionFwdAlgoPerf_t* e = entry(returned, algo);
          INFO("algorithm " << jhdnn_algo_name(algo));
          REQUIRE(e != nullptr);
          const bool precomp = algo == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
          if (precomp && !precomp_fits) {
            CHECK(e->status == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
            continue;
          }
          CHECK(e->status == JHDNN_STATUS_SUCCESS);
          CHECK(e->memory == (precomp ? need : 0));
          CHECK(e->determinism == JHDNN_DETERMINISTIC);
          if (timed) CHECK(e->time > 0.0f);
        }
      };
      int returned = -1;
      REQUIRE(jhdnnGetConvolutionForwardAlgorithm_v7(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                     JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                     perf) == JHDNN_STATUS_SUCCESS);
      check_entries(returned, false, true);
      REQUIRE(jhdnnFindConvolutionForwardAlgorithm(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                   JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                   perf) == JHDNN_STATUS_SUCCESS);
      check_entries(returned, true, true);
      {
        d.reset_y();
        REQUIRE(jhdnnFindConvolutionForwardAlgorithmEx(g.jh.get(), descs.x, d.x.get(), descs.w, d.w.get(), descs.conv,
                                                       descs.y, d.y.get(), JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                       perf, nullptr, 0) == JHDNN_STATUS_SUCCESS);
        g.stream.sync();
        check_entries(returned, true, false);
      }
      {
        DeviceBuffer ws(need);
        d.reset_y();
        REQUIRE(jhdnnFindConvolutionForwardAlgorithmEx(g.jh.get(), descs.x, d.x.get(), descs.w, d.w.get(), descs.conv,
                                                       descs.y, d.y.get(), JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                       perf, ws.get(), need) == JHDNN_STATUS_SUCCESS);
        g.stream.sync();
        check_entries(returned, true, true);
        CHECK(ws.guard_intact());
        // y holds the last timed algorithm's result (beta = 0). When every runnable algorithm is
        // a dot product (DIRECT, IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM) it is within the fp32
        // tolerance; an FFT / Winograd solver merged later gets a norm-wise bound.
        bool dot_only = true;
        for (int i = 0; i < returned; ++i)
          if (perf[i].status == JHDNN_STATUS_SUCCESS && perf[i].algo != JHDNN_CONVOLUTION_FWD_ALGO_DIRECT &&
              perf[i].algo != JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM &&
              perf[i].algo != JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
            dot_only = false;
        if (dot_only) {
          check_result("FindEx output", d, h, conv_tolerance(JHDNN_DATA_FLOAT, h.base.reduction()), true, &ws);
        } else {
          const std::vector<double> got = from_device_bytes(d.y.download().data(), size_t(d.p.y_span()), d.p.dtype);
          std::vector<double> got_base(h.ref.size());
          const auto yd = y_dims(d.p);
          copy_tensor(got.data(), d.p.y_stride, got_base.data(), h.base.y_stride, yd.data());
          const double rel = relative_l2_error(got_base.data(), h.ref.data(), yd.data(), h.base.y_stride);
          INFO("FindEx output relative L2 error " << rel);
          CHECK(rel < 1e-3);
        }
      }
    }
  }
}

// ================================================================ last-error storage at thread exit

namespace {

// A thread_local whose destructor calls the API after the library's own thread_locals of the same
// thread are gone: it is constructed before the thread's first jhDNN call, so it is destroyed
// after them (reverse order). This is what the GPU cases' static Gpu does on the main thread at
// exit: thread_locals are destroyed before static objects, and ~Gpu calls jhdnnDestroy. With the
// last error in a thread_local std::string, that call wrote '\0' into the string's freed heap
// buffer (the "malloc(): unsorted double linked list corrupted" aborts after "All tests passed").
struct LateApiCaller {
  jhdnnTensorDescriptor_t desc = nullptr;
  size_t probe_bytes = 0;
  std::atomic<int>* verdict = nullptr;  // 1: the call succeeded and freed memory was not written
  ~LateApiCaller() {
    if (verdict == nullptr) return;
    // A heap buffer freed by a destroyed thread_local string is the most recent free of its size
    // on this thread, so glibc's per-thread cache hands that very chunk back here: a write into it
    // shows up in the probe. (Under AddressSanitizer the write itself is reported.)
    auto* probe = static_cast<unsigned char*>(std::malloc(probe_bytes));
    if (probe == nullptr) return;
    std::memset(probe, 0x5A, probe_bytes);
    const jhdnnStatus_t s = jhdnnDestroyTensorDescriptor(desc);  // succeeds: clears the last error
    char msg[64] = {'?'};
    jhdnnGetLastErrorString(msg, sizeof msg);
    const bool intact = std::all_of(probe, probe + probe_bytes, [](unsigned char b) { return b == 0x5A; });
    std::free(probe);
    verdict->store(s == JHDNN_STATUS_SUCCESS && intact && msg[0] == '\0' ? 1 : 0);
  }
};
thread_local LateApiCaller t_late_api_caller;

}  // namespace

// No GPU needed: descriptors are host objects.
TEST_CASE("implicit gemm: an API call during thread-exit teardown writes no freed memory",
          "[implicit_gemm][last_error]") {
  for (int round = 0; round < 8; ++round) {
    std::atomic<int> verdict{-1};
    std::string message;
    std::thread th([&] {
      LateApiCaller& late = t_late_api_caller;  // constructed before the library's thread_locals
      if (jhdnnCreateTensorDescriptor(&late.desc) != JHDNN_STATUS_SUCCESS) return;
      // A failing call leaves a long message (heap-allocated in a std::string).
      const jhdnnStatus_t s = jhdnnSetTensor4dDescriptor(late.desc, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 1, 2,
                                                         -3 - round, 4);
      if (s == JHDNN_STATUS_SUCCESS) return;
      char buf[256] = {};
      jhdnnGetLastErrorString(buf, sizeof buf);
      message = buf;
      // libstdc++ gives a string growing from its 15-character local buffer a capacity of
      // max(length, 30) and allocates one more byte.
      late.probe_bytes = std::max<size_t>(message.size(), 30) + 1;
      late.verdict = &verdict;
    });
    th.join();
    INFO("round " << round << ", message of the failing call: '" << message << "'");
    REQUIRE(message.size() > 15);  // longer than any small-string buffer: it lived on the heap
    CHECK(verdict.load() == 1);
  }
}
