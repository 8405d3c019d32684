// GPU correctness of the depthwise solver (src/conv/depthwise): the solver through ConvSolver::run,
// the public API with ALGO_IMPLICIT_PRECOMP_GEMM (which must dispatch depthwise problems to it) and
// cuDNN's best dot-product algorithm, on MobileNetV2's depthwise layers (small batch) and on the
// corners of both kernels: odd channel counts (the scalar channel path), 5x5 / 7x7 / 1x7 and a
// filter too large for the shared-memory slice, strides 1-3, dilation 2, padding 0-3, widths that
// are not a multiple of the 4 pixels a thread computes, channel multiplier 2, CONVOLUTION mode,
// alpha / beta, NCHW, NHWC and padded strides, FLOAT / HALF / BFLOAT16.
//
// How one configuration is checked is test_conv_direct.cpp's method (common/conv_harness.h): fresh
// random inputs (seed printed), float64 reference, y poisoned with NaN (beta = 0) or random
// (beta != 0), guard bytes around every buffer, the gaps of a strided y must stay untouched, and
// cuDNN checked against the reference and jhDNN against cuDNN.
//
// Which kernel a layout takes (depthwise.cu, make_plan): NHWC with multiplier 1 -> dw_nhwc_kernel
// (4-channel vectors, 16 bytes of floats / 8 of halves, when C is a multiple of 4, else element loads; the
// register-reuse instances for 3x3 / 5x5 at stride 1 / 2), everything else -> dw_any_kernel.
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/conv_harness.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/test_util.h"
#include "conv/depthwise/depthwise.h"
#include "conv/dispatch.h"
#include "conv/solver.h"
#include "core/conv_problem.h"
#include "core/device_info.h"
#include "core/status.h"

using namespace jhdnn;
using namespace jhdnn::test;
using core::ConvProblem;

namespace {

ConvTestGpu& gpu() {
  static ConvTestGpu g("test_conv_depthwise");
  return g;
}

const conv::ConvSolver& solver() { return conv::depthwise_solver(); }

// (a) The depthwise solver through ConvSolver::run; it must take every problem of this file.
void run_solver(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes) {
  ConvTestGpu& g = gpu();
  const conv::Verdict v = solver().can_implement(d.p, g.dev);
  if (!v.ok) {
    FAIL_CHECK("depthwise refused a depthwise problem: " << v.reason);
    return;
  }
  REQUIRE(solver().workspace_bytes(d.p) == 0);
  d.reset_y();
  const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta};
  const core::Status st = solver().run(d.p, args, nullptr, 0, g.stream.get());
  g.stream.sync();
  INFO("run status " << core::status_name(st.code) << ": " << st.message);
  CHECK(st.ok());
  if (!st.ok()) return;
  ++notes.solver_runs;
  ++notes.runs_by_solver[solver().name()];
  check_result("solver depthwise", d, h, tol);
}

// (a) the solver, (b) jhdnnConvolutionForward with IMPLICIT_PRECOMP_GEMM, (c) cuDNN.
ConvPaths paths() { return {gpu(), JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, run_solver, false}; }

#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

constexpr jhdnnConvolutionMode_t kConv = JHDNN_CONVOLUTION;

// Depthwise 2-D problem (groups = C), FLOAT NCHW base; K = mult * C.
ConvProblem dw(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int pad_h, int pad_w, int stride,
               int dil = 1, int64_t mult = 1, jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
  return core::make_problem_2d(JHDNN_DATA_FLOAT, false, N, C, H, W, mult * C, R, S, pad_h, pad_w, stride, stride, dil,
                               dil, C, mode);
}

// MobileNetV2's depthwise layers (tests/common/suites.cpp, "mobilenet"), batch 1-2.
std::vector<NamedProblem> mobilenet_layers() {
  return {
      {"mnv2_dw32_112", dw(1, 32, 112, 112, 3, 3, 1, 1, 1)},
      {"mnv2_dw96_112s2", dw(1, 96, 112, 112, 3, 3, 1, 1, 2)},
      {"mnv2_dw144_56", dw(2, 144, 56, 56, 3, 3, 1, 1, 1)},
      {"mnv2_dw144_56s2", dw(2, 144, 56, 56, 3, 3, 1, 1, 2)},
      {"mnv2_dw192_28", dw(2, 192, 28, 28, 3, 3, 1, 1, 1)},
      {"mnv2_dw384_14", dw(2, 384, 14, 14, 3, 3, 1, 1, 1)},
      {"mnv2_dw576_14s2", dw(2, 576, 14, 14, 3, 3, 1, 1, 2)},
      {"mnv2_dw960_7", dw(2, 960, 7, 7, 3, 3, 1, 1, 1)},
  };
}

// The corners. Widths 13, 11, 9, 17, ... are not multiples of the 4 pixels per thread.
std::vector<NamedProblem> corner_problems() {
  return {
      {"c2_3x3_h13", dw(2, 2, 13, 13, 3, 3, 1, 1, 1)},
      {"c3_3x3_s2_h15", dw(2, 3, 15, 15, 3, 3, 1, 1, 2)},
      {"c13_3x3_h11", dw(2, 13, 11, 11, 3, 3, 1, 1, 1)},
      {"c37_3x3_p0_h10w13", dw(1, 37, 10, 13, 3, 3, 0, 0, 1)},
      {"c12_3x3_h9", dw(2, 12, 9, 9, 3, 3, 1, 1, 1)},  // 3 channel vectors: a block of 3 x 85 = 255 threads
      // 5 vectors (255 threads); in HALF / BFLOAT16 a pixel is 40 bytes: 8-byte, not 16-byte, aligned
      {"c20_3x3_s2_h13", dw(2, 20, 13, 13, 3, 3, 1, 1, 2)},
      {"c40_5x5_p2_h17", dw(1, 40, 17, 17, 5, 5, 2, 2, 1)},
      {"c40_5x5_p2_s2_h17", dw(1, 40, 17, 17, 5, 5, 2, 2, 2)},
      {"c24_5x5_p1_s3_h19", dw(1, 24, 19, 19, 5, 5, 1, 1, 3)},
      {"c16_7x7_p3_h15", dw(1, 16, 15, 15, 7, 7, 3, 3, 1)},
      {"c13_7x7_p3_h19", dw(1, 13, 19, 19, 7, 7, 3, 3, 1)},
      {"c16_1x7_p03_h9w21", dw(2, 16, 9, 21, 1, 7, 0, 3, 1)},
      {"c32_3x3_s3_p0_h23", dw(1, 32, 23, 23, 3, 3, 0, 0, 3)},
      {"c16_3x3_d2_p2_h14", dw(1, 16, 14, 14, 3, 3, 2, 2, 1, 2)},
      {"c8_3x3_d2_s2_p2_h23", dw(1, 8, 23, 23, 3, 3, 2, 2, 2, 2)},
      {"c8_3x3_p3_h9", dw(1, 8, 9, 9, 3, 3, 3, 3, 1)},  // outputs whose window is all padding
      {"c24_3x3_p2_s2_h10w7", dw(2, 24, 10, 7, 3, 3, 2, 2, 2)},
      {"c16_mult2_3x3_h10", dw(2, 16, 10, 10, 3, 3, 1, 1, 1, 1, 2)},
      {"c3_mult2_5x5_s2_h11", dw(1, 3, 11, 11, 5, 5, 2, 2, 2, 1, 2)},
      // 41 x 41 taps: one 4-channel vector's filter slice is 1681 x 4 fp32 taps = 26.9 KiB, so
      // NHWC stays on dw_nhwc_kernel with one vector per block (its run-time loops).
      {"c8_41x41_h45", dw(1, 8, 45, 45, 41, 41, 0, 0, 1)},
      // 57 x 57 = 3249 taps: one channel vector's slice (50.8 KiB) exceeds the 48 KiB of shared
      // memory, so NHWC falls back to dw_any_kernel (every type: 4 channels per vector).
      {"c4_57x57_h60", dw(1, 4, 60, 60, 57, 57, 0, 0, 1)},
  };
}

std::vector<NamedProblem> convmode_problems_dw() {
  return {
      {"convmode_c32_3x3_h14", dw(2, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, kConv)},
      {"convmode_c40_5x5_s2_h17", dw(1, 40, 17, 17, 5, 5, 2, 2, 2, 1, 1, kConv)},
      {"convmode_c13_1x7_h9", dw(1, 13, 9, 21, 1, 7, 0, 3, 1, 1, 1, kConv)},
      {"convmode_c16_7x7_d2_h19", dw(1, 16, 19, 19, 7, 7, 6, 6, 1, 2, 1, kConv)},
      {"convmode_c8_mult2_3x3_h9", dw(1, 8, 9, 9, 3, 3, 1, 1, 1, 1, 2, kConv)},
  };
}

const jhdnnDataType_t kTypes[] = {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16};

void run_list(const std::string& title, const std::vector<NamedProblem>& probs, jhdnnDataType_t dt, Scale sc) {
  Notes notes(title + ", " + dt_name(dt));
  run_conv_problem_list(paths(), probs, dt, sc, notes);
  notes.print();
  CHECK(notes.configs == int64_t(2 * probs.size()));  // NCHW and NHWC of each
  CHECK(notes.runs_by_solver["depthwise"] == notes.configs);
  CHECK(notes.api_runs == notes.configs);
  CHECK(notes.cudnn_ran > 0);  // a harness that never reaches cuDNN checks nothing against it
}

}  // namespace

TEST_CASE("depthwise: MobileNetV2 layers, NCHW and NHWC", "[gpu][depthwise][mobilenet]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    run_list("MobileNetV2 depthwise", mobilenet_layers(), dt, Scale{});
  }
}

namespace {
// dw_nhwc_kernel's grid holds only as many blocks as the GPU runs at once (nhwc_grid_x), so at
// batch 8 each thread computes several row segments (the grid-stride loop; HALF on an H200: work
// for 784 blocks on 528 resident ones at 3x3 stride 1, 628 on 396 at stride 2). The small-batch
// layers above fit in one pass.
std::vector<NamedProblem> batch8_layers() {
  return {
      {"mnv2_dw32_112_n8", dw(8, 32, 112, 112, 3, 3, 1, 1, 1)},
      {"mnv2_dw96_112s2_n8", dw(8, 96, 112, 112, 3, 3, 1, 1, 2)},
  };
}
}  // namespace

TEST_CASE("depthwise: batch 8, several row segments per thread", "[gpu][depthwise][mobilenet]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    run_list("MobileNetV2 depthwise, batch 8", batch8_layers(), dt, Scale{});
  }
}

TEST_CASE("depthwise: odd channels, filters, strides, dilation, padding", "[gpu][depthwise][corners]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    run_list("corners", corner_problems(), dt, Scale{});
  }
}

TEST_CASE("depthwise: alpha and beta", "[gpu][depthwise][alpha_beta]") {
  START_GPU_CASE();
  std::vector<NamedProblem> some = every_nth(corner_problems(), 3);
  some.push_back(mobilenet_layers()[4]);
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    run_list("alpha 0.5 beta 0.75", some, dt, Scale{0.5, 0.75});  // y pre-filled with random values
    run_list("alpha 0.5 beta 0 (NaN y)", some, dt, Scale{0.5, 0.0});  // y must never be read
  }
}

TEST_CASE("depthwise: CONVOLUTION mode (mirrored filter)", "[gpu][depthwise][convmode]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    run_list("CONVOLUTION mode", convmode_problems_dw(), dt, Scale{});
  }
}

TEST_CASE("depthwise: non-packed (4dEx-style) x and y strides", "[gpu][depthwise][strided]") {
  START_GPU_CASE();
  const std::vector<StridedShape> shapes = {
      {"strided_dw_c16_3x3", 2, 16, 11, 13, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16},
      {"strided_dw_c5_5x5_s2", 2, 5, 12, 9, 5, 5, 5, 2, 2, 2, 2, 1, 1, 5},
      // N = 2: with one image the CHWN strides would be a packed NCHW tensor, not a strided one.
      {"strided_dw_c8_mult2_d2", 2, 8, 14, 14, 16, 3, 3, 2, 2, 1, 1, 2, 2, 8},
  };
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    Notes notes(std::string("strided x/y, ") + dt_name(dt));
    for_each_strided_config(shapes, dt,
                            [&](const HostProblem& h, const ConvProblem& lp) { run_conv_paths(paths(), h, {lp}, notes); });
    notes.print();
    CHECK(notes.configs > 0);
    CHECK(notes.runs_by_solver["depthwise"] == notes.configs);
  }
}

// Padded NHWC whose pixel, row and image strides stay multiples of 8 elements: the 16-byte vector
// loads and stores run on a strided tensor, and the padding channels between pixels (poisoned)
// must neither leak into the result nor be overwritten.
TEST_CASE("depthwise: padded NHWC with 16-byte-aligned pixels (vector path, gaps kept)", "[gpu][depthwise][strided]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : kTypes) {
    INFO("data type " << dt_name(dt));
    Notes notes(std::string("padded NHWC, vector path, ") + dt_name(dt));
    for (const NamedProblem& np : {NamedProblem{"c16_3x3_h9w11", dw(2, 16, 9, 11, 3, 3, 1, 1, 1)},
                                   NamedProblem{"c24_5x5_s2_h12w10", dw(1, 24, 12, 10, 5, 5, 2, 2, 2)}}) {
      for (Scale sc : {Scale{}, Scale{0.5, 0.75}}) {
        const HostProblem h = make_host_problem(np.name, with_layout(np.p, dt, false), sc);
        ConvProblem lp = with_layout(np.p, dt, true);
        auto set = [](int64_t* st, int64_t c, int64_t rows, int64_t cols) {
          st[core::kC] = 1;
          st[core::kW] = c + 8;                       // 8 padding channels per pixel
          st[core::kH] = st[core::kW] * (cols + 1);   // one padding pixel per row
          st[core::kD] = st[core::kH];                // depth: size 1
          st[core::kN] = st[core::kH] * rows + 8;     // 8 padding elements per image
        };
        set(lp.x_stride, lp.C, lp.H, lp.W);
        set(lp.y_stride, lp.K, lp.P, lp.Q);
        INFO("problem " << np.name << " [" << lp.key() << "] alpha " << sc.alpha << " beta " << sc.beta);
        run_conv_paths(paths(), h, {lp}, notes);
      }
    }
    notes.print();
    CHECK(notes.configs == 4);
    CHECK(notes.runs_by_solver["depthwise"] == notes.configs);
  }
}

TEST_CASE("depthwise: IMPLICIT_PRECOMP_GEMM dispatches depthwise problems to it", "[gpu][depthwise][dispatch]") {
  START_GPU_CASE();
  ConvTestGpu& g = gpu();
  struct Case {
    const char* what;
    ConvProblem p;
  };
  std::vector<Case> cases;
  for (jhdnnDataType_t dt : kTypes)
    for (bool nhwc : {false, true})
      for (jhdnnMathType_t math : {JHDNN_DEFAULT_MATH, JHDNN_TENSOR_OP_MATH, JHDNN_FMA_MATH}) {
        ConvProblem p = with_layout(dw(2, 32, 28, 28, 3, 3, 1, 1, 1), dt, nhwc);
        p.math_type = math;
        cases.push_back({"dw32_28", p});
      }
  for (const Case& c : cases) {
    INFO(c.what << " [" << c.p.key() << "] math type " << int(c.p.math_type));
    const conv::ConvSolver* chosen = nullptr;
    const core::Status st =
        conv::select_solver(c.p, g.dev, JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &chosen);
    INFO(core::status_name(st.code) << ": " << st.message);
    REQUIRE(st.ok());
    REQUIRE(chosen != nullptr);
    CHECK(std::string(chosen->name()) == "depthwise");
  }
  // A dense problem still goes to the tensor-core / implicit-GEMM solvers.
  const ConvProblem dense = with_layout(float_2d(2, 32, 14, 14, 32, 3, 3, 1, 1, 1), JHDNN_DATA_HALF, true);
  const conv::ConvSolver* chosen = nullptr;
  REQUIRE(conv::select_solver(dense, g.dev, JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &chosen).ok());
  REQUIRE(chosen != nullptr);
  CHECK(std::string(chosen->name()) != "depthwise");
}

// CPU only: what the solver refuses, each with its reason; and what it accepts without a GPU.
TEST_CASE("depthwise: refusals and acceptances", "[depthwise][refuse]") {
  const core::DeviceInfo dev;  // the solver asks nothing of the device
  CHECK(solver().algo() == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  CHECK(std::string(solver().name()) == "depthwise");
  const ConvProblem good = with_layout(dw(2, 32, 14, 14, 3, 3, 1, 1, 1), JHDNN_DATA_HALF, true);
  CHECK(solver().can_implement(good, dev).ok);
  CHECK(solver().workspace_bytes(good) == 0);
  // Every math type: the solver uses no tensor cores, which each math type permits (README.md).
  for (jhdnnMathType_t m : {JHDNN_DEFAULT_MATH, JHDNN_TENSOR_OP_MATH, JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
                            JHDNN_FMA_MATH}) {
    ConvProblem p = good;
    p.math_type = m;
    CHECK(solver().can_implement(p, dev).ok);
  }
  for (jhdnnDataType_t dt : kTypes) {
    CHECK(solver().can_implement(with_layout(dw(1, 37, 9, 9, 5, 5, 2, 2, 1, 1, 2, kConv), dt, false), dev).ok);
    CHECK(solver().can_implement(with_layout(dw(1, 2, 9, 9, 3, 3, 1, 1, 1), dt, true), dev).ok);
    // C = groups = 1 (any K) is an ordinary convolution: the dense solvers keep it.
    check_refused(solver().can_implement(with_layout(dw(1, 1, 9, 9, 3, 3, 1, 1, 1), dt, true), dev), "groups 1");
    check_refused(solver().can_implement(with_layout(dw(1, 1, 9, 9, 3, 3, 1, 1, 1, 1, 7), dt, false), dev),
                  "groups 1");
  }

  check_refused(solver().can_implement(with_layout(float_2d(2, 32, 14, 14, 32, 3, 3, 1, 1, 1), JHDNN_DATA_FLOAT, true), dev),
                "not depthwise");
  check_refused(solver().can_implement(float_2d(2, 32, 14, 14, 32, 3, 3, 1, 1, 1, 2), dev), "not depthwise");
  check_refused(solver().can_implement(float_2d(2, 32, 14, 14, 64, 3, 3, 1, 1, 1, 16), dev), "not depthwise");
  check_refused(solver().can_implement(with_layout(good, JHDNN_DATA_DOUBLE, true), dev), "DOUBLE");
  check_refused(solver().can_implement(make_problem_3d(JHDNN_DATA_FLOAT, 1, 8, 4, 6, 6, 8, 3, 3, 3, {1, 1, 1},
                                                       {1, 1, 1}, {1, 1, 1}, 8),
                                       dev),
                "2-D");
  ConvProblem int8 = good;
  int8.dtype = JHDNN_DATA_INT8;
  check_refused(solver().can_implement(int8, dev), "data type");
  ConvProblem bad_compute = good;
  bad_compute.dtype = JHDNN_DATA_FLOAT;
  bad_compute.compute_type = JHDNN_DATA_HALF;
  check_refused(solver().can_implement(bad_compute, dev), "compute type");

  // run() re-checks: a refused problem is NOT_SUPPORTED with the reason, never a launch.
  const core::Status st = solver().run(with_layout(float_2d(1, 8, 6, 6, 8, 3, 3, 1, 1, 1), JHDNN_DATA_FLOAT, true),
                                       conv::ConvArgs{}, nullptr, 0, nullptr);
  CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
  CHECK(st.message.find("not depthwise") != std::string::npos);
  // Null pointers on an accepted problem.
  const core::Status st2 = solver().run(good, conv::ConvArgs{}, nullptr, 0, nullptr);
  CHECK(st2.code == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
}
