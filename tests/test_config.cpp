// The library's configuration (src/core/config.h), no GPU needed:
//   - the environment is read once: the hidden "[.env]" cases run in their own processes with the
//     variables set by ctest (tests/CMakeLists.txt: config_env_*), and check that the values arrive
//     and that changing the environment afterwards changes nothing;
//   - every setter reaches the code that uses the setting (solver selection, the implicit GEMM
//     tile, the GEMM convolution's plan, the tensor-core GEMM ceiling) and restores the
//     environment's value;
//   - the settings can be changed while other threads select solvers (run under TSan/helgrind to
//     see races; here it checks that every answer is one of the two valid ones).
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "common/host_fakes.h"
#include "common/scoped_config.h"
#include "conv/direct/direct.h"
#include "conv/dispatch.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/implicit_gemm/implicit_gemm.h"
#include "conv/solver.h"
#include "core/config.h"
#include "core/conv_problem.h"
#include "core/env.h"
#include "gemm/tensorcore/gemm_tc.h"

using namespace jhdnn;
using namespace jhdnn::test;
namespace cfg = jhdnn::core::config;
using gemm::tensorcore::TcKernel;

namespace {

TcKernel ceiling() {
  TcKernel k = TcKernel::kMma;
  REQUIRE(gemm::tensorcore::tc_kernel_ceiling(&k).ok());
  return k;
}

// 2 images, 16 -> 8 channels, 9x9, 3x3, pad 1, NCHW FLOAT: im2col of one image is
// 16*9 * 81 floats = 46656 bytes; the transposing strategy adds 81*8 floats = 2592 bytes per image.
core::ConvProblem small_nchw() {
  return core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
}

}  // namespace

// ================================================================ read once from the environment

// ctest runs this with JHDNN_DISABLE=gemm_ours,direct_naive JHDNN_IGEMM_TILE=64x64
// JHDNN_CONV_GEMM_WS_CAP=50000 JHDNN_CONV_GEMM_NCHW=transpose JHDNN_TC_GEMM=WGMMA
// NVIDIA_TF32_OVERRIDE=0 JHDNN_LOG=0 JHDNN_LOG_FILE=/nonexistent/x JHDNN_WINOGRAD_CHUNK=3
// JHDNN_TC_EPILOGUE=direct JHDNN_TC_TAIL=off.
TEST_CASE("config: every variable is read from the environment, once", "[.env][env_all]") {
  REQUIRE(std::getenv("JHDNN_IGEMM_TILE") != nullptr);  // run by ctest with the variables set
  const core::ConvProblem p = small_nchw();
  // Values as the environment gives them, through the code that uses each.
  CHECK_FALSE(conv::solver_enabled(conv::gemm_ours_solver()));
  CHECK_FALSE(conv::solver_enabled(conv::direct_naive_solver()));
  CHECK(conv::solver_enabled(conv::gemm_cublas_solver()));
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "64x64");
  CHECK(cfg::conv_gemm_ws_cap() == 50000);
  CHECK(cfg::conv_gemm_nchw() == cfg::NchwStrategy::kTranspose);
  // transpose: 46656 + 2592 bytes per image; the 50000-byte cap holds one image per chunk.
  CHECK(conv::gemm_ours_solver().workspace_bytes(p) == 46656 + 2592);
  CHECK(ceiling() == TcKernel::kWgmma);  // any case
  CHECK_FALSE(core::tf32_allowed_by_env());
  CHECK_FALSE(cfg::log_on());
  CHECK(std::string(cfg::log_file()) == "/nonexistent/x");
  CHECK(cfg::winograd_chunk() == 3);
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kDirect);
  CHECK(cfg::tc_tail() == cfg::TcTail::kOff);

  // Changing the environment now changes nothing (this case runs on one thread, so setenv is safe).
  setenv("JHDNN_DISABLE", "gemm_cublas", 1);
  setenv("JHDNN_IGEMM_TILE", "128x128", 1);
  setenv("JHDNN_CONV_GEMM_WS_CAP", "1000000", 1);
  setenv("JHDNN_CONV_GEMM_NCHW", "per_image", 1);
  setenv("JHDNN_TC_GEMM", "mma", 1);
  setenv("NVIDIA_TF32_OVERRIDE", "1", 1);
  setenv("JHDNN_LOG", "1", 1);
  setenv("JHDNN_WINOGRAD_CHUNK", "5", 1);
  setenv("JHDNN_TC_EPILOGUE", "staged", 1);
  setenv("JHDNN_TC_TAIL", "on", 1);
  CHECK(cfg::winograd_chunk() == 3);
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kDirect);
  CHECK(cfg::tc_tail() == cfg::TcTail::kOff);
  CHECK_FALSE(conv::solver_enabled(conv::gemm_ours_solver()));
  CHECK(conv::solver_enabled(conv::gemm_cublas_solver()));
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "64x64");
  CHECK(conv::gemm_ours_solver().workspace_bytes(p) == 46656 + 2592);
  CHECK(ceiling() == TcKernel::kWgmma);
  CHECK_FALSE(core::tf32_allowed_by_env());
  CHECK_FALSE(cfg::log_on());

  // The setters override the environment's values, and nullptr / reset_to_environment() restore them.
  cfg::set_disabled_solvers("");
  cfg::set_igemm_tile("");
  cfg::set_conv_gemm_ws_cap(0);
  cfg::set_conv_gemm_nchw(cfg::NchwStrategy::kPerImage);
  REQUIRE(cfg::set_tc_gemm_ceiling("auto"));
  cfg::set_winograd_chunk(0);
  REQUIRE(cfg::set_tc_epilogue("staged"));
  REQUIRE(cfg::set_tc_tail("on"));
  CHECK(cfg::winograd_chunk() == 0);
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kStaged);
  REQUIRE(cfg::set_tc_epilogue("tma"));
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kTma);
  CHECK(cfg::tc_tail() == cfg::TcTail::kOn);
  CHECK(conv::solver_enabled(conv::gemm_ours_solver()));
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "256x8");  // the heuristic's, for 8 output channels
  CHECK(conv::gemm_ours_solver().workspace_bytes(p) == 2 * 46656);  // per image, both images in one chunk
  CHECK(ceiling() == TcKernel::kAuto);
  cfg::reset_to_environment();
  CHECK_FALSE(conv::solver_enabled(conv::gemm_ours_solver()));
  CHECK_FALSE(conv::solver_enabled(conv::direct_naive_solver()));
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "64x64");
  CHECK(conv::gemm_ours_solver().workspace_bytes(p) == 46656 + 2592);
  CHECK(ceiling() == TcKernel::kWgmma);
  CHECK(cfg::winograd_chunk() == 3);
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kDirect);
  CHECK(cfg::tc_tail() == cfg::TcTail::kOff);
}

// ctest runs this with JHDNN_TC_EPILOGUE=Staged JHDNN_TC_TAIL=yes: unknown values (names are exact,
// case included) are kept as kInvalid with the value, for the solver's BAD_PARAM message (its GPU
// test: tests/test_conv_tensorcore.cpp); the setters accept only the two names and nullptr restores
// the invalid environment value.
TEST_CASE("config: misspelt JHDNN_TC_EPILOGUE / JHDNN_TC_TAIL are kept as invalid with their values", "[.env][env_tc_switch_misspelt]") {
  REQUIRE(std::getenv("JHDNN_TC_TAIL") != nullptr);
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kInvalid);
  CHECK(std::string(cfg::tc_epilogue_bad_value()) == "Staged");
  CHECK(cfg::tc_tail() == cfg::TcTail::kInvalid);
  CHECK(std::string(cfg::tc_tail_bad_value()) == "yes");
  CHECK_FALSE(cfg::set_tc_epilogue("DIRECT"));
  CHECK_FALSE(cfg::set_tc_tail("1"));
  CHECK(cfg::tc_tail() == cfg::TcTail::kInvalid);  // unchanged by a refused value
  REQUIRE(cfg::set_tc_epilogue("direct"));
  REQUIRE(cfg::set_tc_tail("off"));
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kDirect);
  CHECK(cfg::tc_tail() == cfg::TcTail::kOff);
  REQUIRE(cfg::set_tc_epilogue(nullptr));
  REQUIRE(cfg::set_tc_tail(nullptr));
  CHECK(cfg::tc_epilogue() == cfg::TcEpilogue::kInvalid);
  CHECK(cfg::tc_tail() == cfg::TcTail::kInvalid);
}

// ctest runs this with JHDNN_TC_GEMM=hoper: a misspelt ceiling is an error naming the value on
// every tensor-core GEMM call, not a silent "auto"; a setter can still replace it.
TEST_CASE("config: a misspelt JHDNN_TC_GEMM fails every tensor-core GEMM with its value", "[.env][env_tc_gemm_misspelt]") {
  REQUIRE(std::getenv("JHDNN_TC_GEMM") != nullptr);
  CHECK(cfg::tc_gemm_ceiling() == cfg::TcGemmCeiling::kInvalid);
  TcKernel k;
  for (int i = 0; i < 2; ++i) {
    const core::Status st = gemm::tensorcore::tc_kernel_ceiling(&k);
    INFO(st.message);
    CHECK(st.code == JHDNN_STATUS_BAD_PARAM);
    CHECK(contains(st.message, "JHDNN_TC_GEMM=\"hoper\""));
  }
  {
    ScopedTcGemmCeiling fixed("hopper");
    CHECK(ceiling() == TcKernel::kHopper);
  }
  CHECK(gemm::tensorcore::tc_kernel_ceiling(&k).code == JHDNN_STATUS_BAD_PARAM);  // restored
}

// ctest runs this with JHDNN_DISABLE of more than kMaxListChars characters: the list is cut at
// the last whole item that fits, never inside a name.
TEST_CASE("config: an overlong JHDNN_DISABLE keeps its whole leading items", "[.env][env_long_list]") {
  const char* v = std::getenv("JHDNN_DISABLE");
  REQUIRE(v != nullptr);
  REQUIRE(std::strlen(v) > cfg::kMaxListChars);
  CHECK_FALSE(conv::solver_enabled(conv::gemm_ours_solver()));   // the first item
  CHECK(conv::solver_enabled(conv::gemm_cublas_solver()));       // the last item, past the limit
}

// ================================================================ setters reach the code

TEST_CASE("config: the disable list makes select_solver refuse a solver, with the reason", "[config]") {
  const core::DeviceInfo dev = fake_h200();
  const core::ConvProblem p = small_nchw();
  const conv::ConvSolver* s = nullptr;
  ScopedDisabledSolvers off("gemm_ours,gemm_cublas");
  const core::Status st = conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s);
  INFO(st.message);
  CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
  CHECK(contains(st.message, "gemm_ours: disabled by JHDNN_DISABLE; gemm_cublas: disabled by JHDNN_DISABLE"));
  CHECK(std::string(conv::solver_disabled_reason(conv::gemm_ours_solver())) == "disabled by JHDNN_DISABLE");
}

TEST_CASE("config: a forced solver is the only one of its algorithm; other algorithms are untouched", "[config]") {
  const core::DeviceInfo dev = fake_h200();
  const core::ConvProblem p = small_nchw();
  const conv::ConvSolver* s = nullptr;
  REQUIRE(conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
  CHECK(s == &conv::gemm_ours_solver());  // first in the registry
  {
    ScopedForcedSolvers force("gemm_cublas");
    REQUIRE(conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
    CHECK(s == &conv::gemm_cublas_solver());
    CHECK(std::string(conv::solver_disabled_reason(conv::gemm_ours_solver())) ==
          "another solver of this algorithm is forced");
    CHECK(conv::solver_enabled(conv::direct_tiled_solver()));  // DIRECT: nothing forced there
    CHECK(conv::solver_enabled(conv::direct_naive_solver()));
    // Disabling wins over forcing: the algorithm then has no solver left, and the message says why.
    ScopedDisabledSolvers off("gemm_cublas");
    const core::Status st = conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s);
    INFO(st.message);
    CHECK(st.code == JHDNN_STATUS_NOT_SUPPORTED);
    CHECK(contains(st.message, "gemm_ours: another solver of this algorithm is forced"));
    CHECK(contains(st.message, "gemm_cublas: disabled by JHDNN_DISABLE"));
  }
  {
    ScopedForcedSolvers force("direct_naive,gemm_cublas");  // one per algorithm
    REQUIRE(conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
    CHECK(s == &conv::gemm_cublas_solver());
    REQUIRE(conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s).ok());
    CHECK(s == &conv::direct_naive_solver());
  }
  REQUIRE(conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok());
  CHECK(s == &conv::gemm_ours_solver());  // restored
}

TEST_CASE("config: the implicit GEMM tile override reaches the tile choice", "[config]") {
  const core::ConvProblem p = small_nchw();  // K = 8: the heuristic takes 256x8
  ScopedIgemmTile none("");
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "256x8");
  for (const char* t : cfg::kIgemmTileNames) {
    ScopedIgemmTile tile(t);
    CHECK(std::string(conv::igemm::tile_for(p, 132)) == t);
  }
  CHECK_FALSE(cfg::set_igemm_tile("128x32"));  // unknown: refused, nothing changes
  CHECK(std::string(conv::igemm::tile_for(p, 132)) == "256x8");
}

TEST_CASE("config: scoped settings nest (each restores the value before it)", "[config]") {
  {
    ScopedIgemmTile outer("64x64");
    {
      ScopedIgemmTile inner("128x128");
      CHECK(cfg::igemm_tile() == 0);
    }
    CHECK(cfg::igemm_tile() == 2);  // 64x64 again, not the environment's value
  }
  {
    ScopedWinogradChunk outer(5);
    {
      ScopedWinogradChunk inner(2);
      CHECK(cfg::winograd_chunk() == 2);
    }
    CHECK(cfg::winograd_chunk() == 5);
  }
  CHECK(cfg::winograd_chunk() == 0);
  {
    ScopedTcGemmCeiling outer("mma");
    {
      ScopedTcGemmCeiling inner("hopper");
      CHECK(cfg::tc_gemm_ceiling() == cfg::TcGemmCeiling::kHopper);
    }
    CHECK(cfg::tc_gemm_ceiling() == cfg::TcGemmCeiling::kMma);
  }
  {
    ScopedConvGemmWsCap outer(1000);
    {
      ScopedConvGemmWsCap inner(2000);
      CHECK(cfg::conv_gemm_ws_cap() == 2000);
    }
    CHECK(cfg::conv_gemm_ws_cap() == 1000);
    ScopedConvGemmNchw mode("transpose");
    {
      ScopedConvGemmNchw inner("per_image");
      CHECK(cfg::conv_gemm_nchw() == cfg::NchwStrategy::kPerImage);
    }
    CHECK(cfg::conv_gemm_nchw() == cfg::NchwStrategy::kTranspose);
  }
}

TEST_CASE("config: the GEMM convolution's workspace cap and NCHW strategy reach its plan", "[config]") {
  const core::ConvProblem p = small_nchw();
  const conv::ConvSolver& s = conv::gemm_ours_solver();
  {
    ScopedConvGemmNchw mode("per_image");
    ScopedConvGemmWsCap none(int64_t(1) << 40);  // above the 1 GiB default: the default holds
    CHECK(s.workspace_bytes(p) == 2 * 46656);
    ScopedConvGemmWsCap cap(46656 + 100);  // one image per chunk
    CHECK(s.workspace_bytes(p) == 46656);
  }
  {
    ScopedConvGemmNchw mode("transpose");  // adds the transposition buffer
    CHECK(s.workspace_bytes(p) == 2 * (46656 + 2592));
    ScopedConvGemmWsCap cap(46656);  // smaller than one image's col + tmp: refused, naming the cap
    const conv::Verdict v = s.can_implement(p, fake_h200());
    CHECK_FALSE(v.ok);
    CHECK(contains(v.reason, "JHDNN_CONV_GEMM_WS_CAP"));
  }
}

TEST_CASE("config: the tensor-core GEMM ceiling setter", "[config]") {
  {
    ScopedTcGemmCeiling c("mma");
    CHECK(ceiling() == TcKernel::kMma);
    CHECK(cfg::set_tc_gemm_ceiling("WgMmA"));  // any case
    CHECK(ceiling() == TcKernel::kWgmma);
    CHECK_FALSE(cfg::set_tc_gemm_ceiling("hoper"));  // unknown: refused, nothing changes
    CHECK(ceiling() == TcKernel::kWgmma);
    CHECK(cfg::set_tc_gemm_ceiling("hopper"));
    CHECK(ceiling() == TcKernel::kHopper);
  }
  if (std::getenv("JHDNN_TC_GEMM") == nullptr) CHECK(ceiling() == TcKernel::kAuto);  // restored
}

TEST_CASE("config: the sparse-DNN tile setter (JHDNN_SPDNN_TILE)", "[config]") {
  using cfg::SpdnnTile;
  const SpdnnTile before = cfg::spdnn_tile();
  {
    jhdnn::test::ScopedSpdnnTile t("single");
    CHECK(cfg::spdnn_tile() == SpdnnTile::kSingle);
    CHECK_FALSE(cfg::set_spdnn_tile("Single"));  // exact case: refused, nothing changes
    CHECK(cfg::spdnn_tile() == SpdnnTile::kSingle);
    {
      jhdnn::test::ScopedSpdnnTile inner("block");
      CHECK(cfg::spdnn_tile() == SpdnnTile::kBlock);
    }
    CHECK(cfg::spdnn_tile() == SpdnnTile::kSingle);  // nested scope restored
    {
      jhdnn::test::ScopedSpdnnTile inner("list");
      CHECK(cfg::spdnn_tile() == SpdnnTile::kList);
      CHECK_FALSE(cfg::set_spdnn_tile("lists"));  // refused, nothing changes
      CHECK(cfg::spdnn_tile() == SpdnnTile::kList);
      {
        jhdnn::test::ScopedSpdnnTile innermost("block");
        CHECK(cfg::spdnn_tile() == SpdnnTile::kBlock);
      }
      CHECK(cfg::spdnn_tile() == SpdnnTile::kList);  // a list scope is restored as list
    }
    {
      jhdnn::test::ScopedSpdnnTile inner("cta");
      CHECK(cfg::spdnn_tile() == SpdnnTile::kCta);
      CHECK_FALSE(cfg::set_spdnn_tile("CTA"));  // exact case: refused, nothing changes
      CHECK(cfg::spdnn_tile() == SpdnnTile::kCta);
      {
        jhdnn::test::ScopedSpdnnTile innermost("list");
        CHECK(cfg::spdnn_tile() == SpdnnTile::kList);
      }
      CHECK(cfg::spdnn_tile() == SpdnnTile::kCta);  // a cta scope is restored as cta
      {
        jhdnn::test::ScopedSpdnnTile cta2("cta2");  // the 3-stage CTA tile: a value of its own
        CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2);
        CHECK_FALSE(cfg::set_spdnn_tile("cta3"));
        CHECK_FALSE(cfg::set_spdnn_tile("cta2 "));
        CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2);
        {
          jhdnn::test::ScopedSpdnnTile a("auto");  // the default's name can be set too
          CHECK(cfg::spdnn_tile() == SpdnnTile::kAuto);
          CHECK_FALSE(cfg::set_spdnn_tile("Auto"));
          CHECK(cfg::spdnn_tile() == SpdnnTile::kAuto);
        }
        CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2);  // restored as cta2, not as auto
        {
          jhdnn::test::ScopedSpdnnTile w("cta2w");  // cta2 with 64-image late items: a value of its own
          CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2w);
          CHECK_FALSE(cfg::set_spdnn_tile("cta2W"));  // exact case
          CHECK_FALSE(cfg::set_spdnn_tile("cta2w "));
          CHECK_FALSE(cfg::set_spdnn_tile("cta2ww"));
          CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2w);
          {
            jhdnn::test::ScopedSpdnnTile c("cta2");
            CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2);
          }
          CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2w);  // restored as cta2w, not as cta2
          {
            jhdnn::test::ScopedSpdnnTile l("late4");  // cta2 with late4's late layers
            CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4);
            CHECK_FALSE(cfg::set_spdnn_tile("Late4"));
            CHECK_FALSE(cfg::set_spdnn_tile("late"));
            CHECK_FALSE(cfg::set_spdnn_tile("late4al"));
            CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4);
            {
              jhdnn::test::ScopedSpdnnTile a("late4all");  // late4 in the crowded layers too
              CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4All);
              {
                jhdnn::test::ScopedSpdnnTile c("late4crowd");  // late4 in the crowded layers only
                CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4Crowd);
                CHECK_FALSE(cfg::set_spdnn_tile("late4crow"));
                CHECK_FALSE(cfg::set_spdnn_tile("late4crowded"));
                CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4Crowd);
              }
              CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4All);  // restored as late4all
            }
            CHECK(cfg::spdnn_tile() == SpdnnTile::kLate4);  // restored as late4
          }
          CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2w);  // restored as cta2w, not as late4
        }
        CHECK(cfg::spdnn_tile() == SpdnnTile::kCta2);  // restored as cta2, not as cta2w
      }
      CHECK(cfg::spdnn_tile() == SpdnnTile::kCta);  // restored as cta, not as cta2
    }
    CHECK(cfg::spdnn_tile() == SpdnnTile::kSingle);
  }
  CHECK(cfg::spdnn_tile() == before);
  if (std::getenv("JHDNN_SPDNN_TILE") == nullptr) CHECK(before == SpdnnTile::kAuto);  // the default
}

// ================================================================ threads

// Readers select solvers while a writer flips the disable list: every answer must be one of the two
// valid ones (run under -fsanitize=thread to check for races; the design has none: atomics, and a
// mutex around the lists).
TEST_CASE("config: changing settings while other threads select solvers", "[config][threads]") {
  const core::DeviceInfo dev = fake_h200();
  const core::ConvProblem p = small_nchw();
  std::atomic<bool> stop{false};
  std::atomic<long> bad{0}, calls{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const conv::ConvSolver* s = nullptr;
        const bool ok = conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s).ok();
        if (!ok || (s != &conv::gemm_ours_solver() && s != &conv::gemm_cublas_solver())) bad.fetch_add(1);
        const int tile = cfg::igemm_tile();
        if (tile < -1 || tile >= cfg::kIgemmTileCount) bad.fetch_add(1);
        calls.fetch_add(1);
      }
    });
  for (int i = 0; i < 2000; ++i) {
    cfg::set_disabled_solvers(i % 2 ? "gemm_ours" : "");
    cfg::set_igemm_tile(cfg::kIgemmTileNames[i % cfg::kIgemmTileCount]);
  }
  while (calls.load() < 1000) std::this_thread::yield();
  stop.store(true);
  for (std::thread& t : readers) t.join();
  cfg::reset_to_environment();
  CHECK(bad.load() == 0);
  // After the writer stopped, every thread sees the final state.
  const conv::ConvSolver* s = nullptr;
  cfg::set_disabled_solvers("gemm_ours");
  std::thread([&] { (void)conv::select_solver(p, dev, JHDNN_CONVOLUTION_FWD_ALGO_GEMM, &s); }).join();
  CHECK(s == &conv::gemm_cublas_solver());
  cfg::reset_to_environment();
}
