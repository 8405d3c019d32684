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

}  // namespace jhdnn::conv
