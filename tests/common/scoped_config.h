// Scoped changes of the library's configuration (core/config.h) for tests: each sets one setting
// for its scope and restores, after, the value in force before it (so scopes nest); the two solver
// lists, which have no getter, are restored to the environment's value instead (do not nest them). They use the setters, not
// setenv: the library reads its environment once, and setenv would race with getenv on other
// threads. A bad value throws (the test fails with it) instead of being silently ignored.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/config.h"

namespace jhdnn::test {

struct ScopedDisabledSolvers {
  explicit ScopedDisabledSolvers(const char* list) {
    if (!core::config::set_disabled_solvers(list)) throw std::invalid_argument("disable list too long");
  }
  ~ScopedDisabledSolvers() { core::config::set_disabled_solvers(nullptr); }
  ScopedDisabledSolvers(const ScopedDisabledSolvers&) = delete;
  ScopedDisabledSolvers& operator=(const ScopedDisabledSolvers&) = delete;
};

struct ScopedForcedSolvers {
  explicit ScopedForcedSolvers(const char* list) {
    if (!core::config::set_forced_solvers(list)) throw std::invalid_argument("force list too long");
  }
  ~ScopedForcedSolvers() { core::config::set_forced_solvers(nullptr); }
  ScopedForcedSolvers(const ScopedForcedSolvers&) = delete;
  ScopedForcedSolvers& operator=(const ScopedForcedSolvers&) = delete;
};

struct ScopedIgemmTile {
  explicit ScopedIgemmTile(const char* tile) : prev(core::config::igemm_tile()) {
    if (!core::config::set_igemm_tile(tile)) throw std::invalid_argument(std::string("unknown tile ") + tile);
  }
  ~ScopedIgemmTile() { core::config::set_igemm_tile(prev < 0 ? "" : core::config::kIgemmTileNames[prev]); }
  const int prev;
  ScopedIgemmTile(const ScopedIgemmTile&) = delete;
  ScopedIgemmTile& operator=(const ScopedIgemmTile&) = delete;
};

// "per_image", "transpose", or "" (chosen by tile fill), as JHDNN_CONV_GEMM_NCHW.
struct ScopedConvGemmNchw {
  explicit ScopedConvGemmNchw(const std::string& mode) : prev(core::config::conv_gemm_nchw()) {
    using core::config::NchwStrategy;
    if (mode == "per_image") core::config::set_conv_gemm_nchw(NchwStrategy::kPerImage);
    else if (mode == "transpose") core::config::set_conv_gemm_nchw(NchwStrategy::kTranspose);
    else if (mode.empty()) core::config::set_conv_gemm_nchw(NchwStrategy::kAuto);
    else throw std::invalid_argument("unknown NCHW strategy " + mode);
  }
  ~ScopedConvGemmNchw() { core::config::set_conv_gemm_nchw(prev); }
  const core::config::NchwStrategy prev;
  ScopedConvGemmNchw(const ScopedConvGemmNchw&) = delete;
  ScopedConvGemmNchw& operator=(const ScopedConvGemmNchw&) = delete;
};

struct ScopedConvGemmWsCap {
  explicit ScopedConvGemmWsCap(int64_t bytes) : prev(core::config::conv_gemm_ws_cap()) {
    if (bytes <= 0) throw std::invalid_argument("workspace cap must be positive");
    core::config::set_conv_gemm_ws_cap(bytes);
  }
  ~ScopedConvGemmWsCap() { core::config::set_conv_gemm_ws_cap(prev); }
  const int64_t prev;  // 0 = not set
  ScopedConvGemmWsCap(const ScopedConvGemmWsCap&) = delete;
  ScopedConvGemmWsCap& operator=(const ScopedConvGemmWsCap&) = delete;
};

// Images per Winograd chunk (> 0), as JHDNN_WINOGRAD_CHUNK.
struct ScopedWinogradChunk {
  explicit ScopedWinogradChunk(int64_t images) : prev(core::config::winograd_chunk()) {
    if (images <= 0) throw std::invalid_argument("images per chunk must be positive");
    core::config::set_winograd_chunk(images);
  }
  ~ScopedWinogradChunk() { core::config::set_winograd_chunk(prev); }
  const int64_t prev;  // 0 = not set
  ScopedWinogradChunk(const ScopedWinogradChunk&) = delete;
  ScopedWinogradChunk& operator=(const ScopedWinogradChunk&) = delete;
};

// "auto", "hopper", "wgmma" or "mma", as JHDNN_TC_GEMM.
struct ScopedTcGemmCeiling {
  explicit ScopedTcGemmCeiling(const char* name) : prev(core::config::tc_gemm_ceiling()) {
    if (!core::config::set_tc_gemm_ceiling(name)) throw std::invalid_argument(std::string("unknown kernel ") + name);
  }
  // An invalid value can only have come from the environment: restoring the environment's is the same.
  ~ScopedTcGemmCeiling() {
    static const char* const names[] = {"auto", "hopper", "wgmma", "mma"};
    core::config::set_tc_gemm_ceiling(prev == core::config::TcGemmCeiling::kInvalid ? nullptr : names[int(prev)]);
  }
  const core::config::TcGemmCeiling prev;
  ScopedTcGemmCeiling(const ScopedTcGemmCeiling&) = delete;
  ScopedTcGemmCeiling& operator=(const ScopedTcGemmCeiling&) = delete;
};

// "auto", "cta2", "block", "single", "list" or "cta", as JHDNN_SPDNN_TILE (the fused sparse-DNN layers' width-32 tile).
struct ScopedSpdnnTile {
  explicit ScopedSpdnnTile(const char* tile) : prev(core::config::spdnn_tile()) {
    if (!core::config::set_spdnn_tile(tile)) throw std::invalid_argument(std::string("unknown tile ") + tile);
  }
  ~ScopedSpdnnTile() {
    using core::config::SpdnnTile;
    core::config::set_spdnn_tile(prev == SpdnnTile::kAuto     ? "auto"
                                 : prev == SpdnnTile::kBlock  ? "block"
                                 : prev == SpdnnTile::kSingle ? "single"
                                 : prev == SpdnnTile::kList   ? "list"
                                 : prev == SpdnnTile::kCta    ? "cta"
                                 : prev == SpdnnTile::kCta2   ? "cta2"
                                 : prev == SpdnnTile::kCta2w  ? "cta2w"
                                 : prev == SpdnnTile::kLate4  ? "late4"
                                 : prev == SpdnnTile::kLate4All ? "late4all"
                                 : prev == SpdnnTile::kLate4Crowd ? "late4crowd"
                                                              : nullptr);
  }
  const core::config::SpdnnTile prev;
  ScopedSpdnnTile(const ScopedSpdnnTile&) = delete;
  ScopedSpdnnTile& operator=(const ScopedSpdnnTile&) = delete;
};

}  // namespace jhdnn::test
