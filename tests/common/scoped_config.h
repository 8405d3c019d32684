// Scoped changes of the library's configuration (core/config.h) for tests: each sets one setting
// for its scope and restores the value read from the environment after. They use the setters, not
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
  explicit ScopedIgemmTile(const char* tile) {
    if (!core::config::set_igemm_tile(tile)) throw std::invalid_argument(std::string("unknown tile ") + tile);
  }
  ~ScopedIgemmTile() { core::config::set_igemm_tile(nullptr); }
  ScopedIgemmTile(const ScopedIgemmTile&) = delete;
  ScopedIgemmTile& operator=(const ScopedIgemmTile&) = delete;
};

// "per_image", "transpose", or "" (chosen by tile fill), as JHDNN_CONV_GEMM_NCHW.
struct ScopedConvGemmNchw {
  explicit ScopedConvGemmNchw(const std::string& mode) {
    using core::config::NchwStrategy;
    if (mode == "per_image") core::config::set_conv_gemm_nchw(NchwStrategy::kPerImage);
    else if (mode == "transpose") core::config::set_conv_gemm_nchw(NchwStrategy::kTranspose);
    else if (mode.empty()) core::config::set_conv_gemm_nchw(NchwStrategy::kAuto);
    else throw std::invalid_argument("unknown NCHW strategy " + mode);
  }
  ~ScopedConvGemmNchw() { core::config::reset_conv_gemm_nchw(); }
  ScopedConvGemmNchw(const ScopedConvGemmNchw&) = delete;
  ScopedConvGemmNchw& operator=(const ScopedConvGemmNchw&) = delete;
};

struct ScopedConvGemmWsCap {
  explicit ScopedConvGemmWsCap(int64_t bytes) {
    if (bytes <= 0) throw std::invalid_argument("workspace cap must be positive");
    core::config::set_conv_gemm_ws_cap(bytes);
  }
  ~ScopedConvGemmWsCap() { core::config::set_conv_gemm_ws_cap(-1); }
  ScopedConvGemmWsCap(const ScopedConvGemmWsCap&) = delete;
  ScopedConvGemmWsCap& operator=(const ScopedConvGemmWsCap&) = delete;
};

// Images per Winograd chunk (> 0), as JHDNN_WINOGRAD_CHUNK.
struct ScopedWinogradChunk {
  explicit ScopedWinogradChunk(int64_t images) {
    if (images <= 0) throw std::invalid_argument("images per chunk must be positive");
    core::config::set_winograd_chunk(images);
  }
  ~ScopedWinogradChunk() { core::config::set_winograd_chunk(-1); }
  ScopedWinogradChunk(const ScopedWinogradChunk&) = delete;
  ScopedWinogradChunk& operator=(const ScopedWinogradChunk&) = delete;
};

// "auto", "hopper", "wgmma" or "mma", as JHDNN_TC_GEMM.
struct ScopedTcGemmCeiling {
  explicit ScopedTcGemmCeiling(const char* name) {
    if (!core::config::set_tc_gemm_ceiling(name)) throw std::invalid_argument(std::string("unknown kernel ") + name);
  }
  ~ScopedTcGemmCeiling() { core::config::set_tc_gemm_ceiling(nullptr); }
  ScopedTcGemmCeiling(const ScopedTcGemmCeiling&) = delete;
  ScopedTcGemmCeiling& operator=(const ScopedTcGemmCeiling&) = delete;
};

}  // namespace jhdnn::test
