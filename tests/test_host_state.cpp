// Host-side state of the library that needs no GPU: the disable list's matching (exact names,
// changes between calls), the gemm_cublas solver refusing a call that brings no jhdnn handle, the GEMM
// convolution's workspace-cap message, and select_solver's message when nothing applies.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include "common/host_fakes.h"
#include "common/scoped_config.h"
#include "conv/dispatch.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/solver.h"
#include "core/conv_problem.h"

using namespace jhdnn;
using jhdnn::test::contains;
using jhdnn::test::fake_h200;
using jhdnn::test::ScopedConvGemmNchw;
using jhdnn::test::ScopedConvGemmWsCap;
using jhdnn::test::ScopedDisabledSolvers;

// Counts this binary's heap allocations, to show that a successful dispatch builds no strings.
namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("the disable list matches whole solver names and takes effect on the next call", "[host]") {
  const conv::ConvSolver& ours = conv::gemm_ours_solver();
  const conv::ConvSolver& cublas = conv::gemm_cublas_solver();
  core::config::set_disabled_solvers("");
  CHECK(conv::solver_enabled(ours));
  {
    ScopedDisabledSolvers off("gemm_ours");
    CHECK_FALSE(conv::solver_enabled(ours));
    CHECK(conv::solver_enabled(cublas));
  }
  core::config::set_disabled_solvers("");
  CHECK(conv::solver_enabled(ours));  // empty again
  {
    ScopedDisabledSolvers off("direct_naive,,gemm_cublas");  // last item, after an empty one
    CHECK(conv::solver_enabled(ours));
    CHECK_FALSE(conv::solver_enabled(cublas));
    core::config::set_disabled_solvers("gemm_cublas,gemm_ours");  // changed between calls: first item
    CHECK_FALSE(conv::solver_enabled(ours));
    CHECK_FALSE(conv::solver_enabled(cublas));
  }
  {
    ScopedDisabledSolvers off("gemm,gemm_our,gemm_ours_x,xgemm_ours, gemm_ours");  // no partial match
    CHECK(conv::solver_enabled(ours));
  }
  {
    ScopedDisabledSolvers off("");
    CHECK(conv::solver_enabled(ours));
  }
  // Too long for the list: refused, nothing changes.
  ScopedDisabledSolvers off("gemm_ours");
  CHECK_FALSE(core::config::set_disabled_solvers(std::string(core::config::kMaxListChars + 1, 'x').c_str()));
  CHECK_FALSE(conv::solver_enabled(ours));
}

TEST_CASE("select_solver names every solver's reason only when none applies", "[host]") {
  const core::DeviceInfo dev = fake_h200();
  // GEMM refuses a non-packed y in both solvers; DOUBLE data in both too.
  const core::ConvProblem p = core::make_problem_2d(JHDNN_DATA_DOUBLE, false, 1, 3, 5, 5, 2, 3, 3, 0, 0, 1, 1, 1, 1);
  const conv::ConvSolver* s = nullptr;
  const core::Status st = conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s);
  CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
  INFO(st.message);
  CHECK(contains(st.message, "gemm_ours: "));
  CHECK(contains(st.message, "; gemm_cublas: "));
  {
    ScopedDisabledSolvers off("gemm_ours");
    const core::Status st2 = conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s);
    INFO(st2.message);
    CHECK(contains(st2.message, "gemm_ours: disabled by JHDNN_DISABLE; gemm_cublas: "));
  }
  const core::ConvProblem f = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  s = nullptr;
  REQUIRE(conv::select_solver(f, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
  CHECK(s == &conv::gemm_ours_solver());
  ScopedDisabledSolvers off("gemm_ours");
  REQUIRE(conv::select_solver(f, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
  CHECK(s == &conv::gemm_cublas_solver());
}

TEST_CASE("gemm_cublas refuses a call without a jhdnn handle (its cuBLAS handle is per handle)", "[host]") {
  const core::ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  const conv::ConvSolver& s = conv::gemm_cublas_solver();
  REQUIRE(s.can_implement(p, fake_h200()).ok);
  // Never dereferenced: the handle check comes before any device work.
  static float fake[4];
  const conv::ConvArgs args{fake, fake, fake, 1.0, 0.0};
  const core::Status st = s.run(p, args, fake, s.workspace_bytes(p), nullptr);
  INFO(st.message);
  CHECK(st.code == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
  CHECK(contains(st.message, "gemm_cublas: no jhdnn handle came with the call"));
}

TEST_CASE("the GEMM convolution's workspace-cap refusal names the cap in force", "[host]") {
  const core::DeviceInfo dev = fake_h200();
  const conv::ConvSolver& s = conv::gemm_ours_solver();
  // im2col of one image: C*R*S * P*Q floats = 16*9 * 81 * 4 = 46656 bytes.
  const core::ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  static float fake[4];
  const conv::ConvArgs args{fake, fake, fake, 1.0, 0.0};
  {
    ScopedConvGemmNchw mode("per_image");
    ScopedConvGemmWsCap ws(4096);
    const conv::Verdict v = s.can_implement(p, dev);
    CHECK_FALSE(v.ok);
    CHECK(contains(v.reason, "workspace cap set by JHDNN_CONV_GEMM_WS_CAP"));
    CHECK_FALSE(contains(v.reason, "1 GiB"));
    const core::Status st = s.run(p, args, fake, 1 << 20, nullptr);
    INFO(st.message);
    CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
    CHECK(contains(st.message, "(one image: 46656 bytes, cap: 4096 bytes)"));
  }
  // Without a cap set: 1 GiB. C*R*S * P*Q * 4 = 64*9 * 768*768 * 4 > 1 GiB.
  const core::ConvProblem big = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 64, 768, 768, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  const conv::Verdict v = s.can_implement(big, dev);
  CHECK_FALSE(v.ok);
  CHECK(contains(v.reason, "workspace cap (1 GiB)"));
}

TEST_CASE("a successful select_solver allocates nothing, JHDNN_DISABLE set or not", "[host]") {
  const core::DeviceInfo dev = fake_h200();
  // FLOAT with FMA_MATH under IMPLICIT_PRECOMP_GEMM: both tensor-core solvers come first and refuse.
  core::ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, true, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  p.math_type = JHDNN_FMA_MATH;
  const jhdnnConvolutionFwdAlgo_t algo = JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  const conv::ConvSolver* first = nullptr;
  REQUIRE(conv::select_solver(p, dev, algo, &first).ok());  // warms any first-use state
  const conv::ConvSolver* s = nullptr;
  long before = g_allocations.load();
  const bool ok = conv::select_solver(p, dev, algo, &s).ok();
  long allocated = g_allocations.load() - before;
  CHECK(ok);
  CHECK(s == first);
  CHECK(allocated == 0);
  {
    ScopedDisabledSolvers off("direct_naive,gemm_cublas");
    REQUIRE(conv::select_solver(p, dev, algo, &s).ok());  // the first call after a change reads the lists
    before = g_allocations.load();
    const bool ok2 = conv::select_solver(p, dev, algo, &s).ok();
    allocated = g_allocations.load() - before;
    CHECK(ok2);
    CHECK(s == first);
    CHECK(allocated == 0);
  }
  // Even the first call after a change (the lists are re-read into the per-thread masks) allocates
  // nothing; so does a forced solver.
  REQUIRE(core::config::set_forced_solvers(first->name()));
  before = g_allocations.load();
  const bool ok3 = conv::select_solver(p, dev, algo, &s).ok();
  allocated = g_allocations.load() - before;
  core::config::set_forced_solvers(nullptr);
  CHECK(ok3);
  CHECK(s == first);
  CHECK(allocated == 0);
}
