// Winograd convolution solvers (JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, see README.md in this
// folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// F(2x2, 3x3), non-fused: filter, input and output transforms as separate kernels around 16
// independent GEMMs (the library's batched SGEMM) in the workspace. FLOAT data, 3x3 filters,
// stride 1, dilation 1, groups 1, 2-D, any x / y strides, any padding.
const ConvSolver& winograd_nonfused_2x2_solver();

// F(4x4, 3x3), non-fused: the same structure and limits with 6x6 transforms and 36 GEMMs (4x fewer
// multiplications than direct convolution instead of 2.25x; ~5-8x the rounding error of F(2x2),
// still ~1e-6 relative L2, see README.md).
const ConvSolver& winograd_nonfused_4x4_solver();

}  // namespace jhdnn::conv
