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
// The tile shape is forced (for every later run of both solvers) by JHDNN_IGEMM_TILE or
// core::config::set_igemm_tile ("128x128", "128x64", "64x64" or "256x8"; see core/config.h).
// The tile shape both solvers run p with on a GPU of sm_count SMs ("128x128", ...): the forced one,
// else the heuristic's. Host only; for tests and logs.
const char* tile_for(const ConvProblem& p, int sm_count);
// IMPLICIT_PRECOMP_GEMM with C/G a multiple of 8 uses a per-tap table (kTapTable); `true` makes
// it use the per-reduction-index table of the other C/G instead (the earlier design, kept so the
// tests cover both). Process-wide and thread-safe; false by default.
void set_precomp_per_element_table(bool on);
}  // namespace igemm

}  // namespace jhdnn::conv
