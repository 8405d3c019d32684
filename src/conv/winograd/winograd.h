// Winograd convolution solvers (JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, see README.md in this
// folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// F(2x2, 3x3), non-fused: filter, input and output transforms as separate kernels around 16
// independent GEMMs (the library's batched SGEMM) in the workspace. FLOAT data, 3x3 filters,
// stride 1, dilation 1, groups 1, 2-D, any x / y strides, any padding.
const ConvSolver& winograd_nonfused_2x2_solver();

}  // namespace jhdnn::conv
