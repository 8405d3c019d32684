// IMPLICIT_GEMM and IMPLICIT_PRECOMP_GEMM convolution solvers, fp32 data with FMA math (see
// README.md in this folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// Algorithm 0: the GEMM view of the convolution with the im2col matrix never formed; every input
// address is derived on the fly from running (c, t, r, s) counters. No workspace.
const ConvSolver& implicit_gemm_solver();
// Algorithm 1: the same tiled GEMM kernel driven by a table of per-reduction-index offsets that a
// small setup kernel writes into the workspace (32 bytes per reduction index).
const ConvSolver& implicit_precomp_gemm_solver();

namespace igemm {
// Forces one tile shape ("128x128", "128x64", "64x64" or "256x8") on every later run of both
// solvers, or restores the heuristic (nullptr or ""); returns false (and changes nothing) for any
// other name. Process-wide and thread-safe (an atomic), so tests can force shapes without
// setenv, which races with getenv on other threads. Takes precedence over JHDNN_IGEMM_TILE.
bool set_forced_tile(const char* tile);
// IMPLICIT_PRECOMP_GEMM with C/G a multiple of 8 uses a per-tap table (kTapTable); `true` makes
// it use the per-reduction-index table of the other C/G instead (the earlier design, kept so the
// tests cover both). Process-wide and thread-safe; false by default.
void set_precomp_per_element_table(bool on);
}  // namespace igemm

}  // namespace jhdnn::conv
