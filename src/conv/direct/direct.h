// DIRECT convolution solvers (see README.md in this folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// One thread per output element: the teaching baseline. Any dtype (incl. DOUBLE), any strides.
const ConvSolver& direct_naive_solver();
// Shared-memory tiled direct kernel. FLOAT, HALF, BFLOAT16 data, fp32 accumulation.
const ConvSolver& direct_tiled_solver();

}  // namespace jhdnn::conv
