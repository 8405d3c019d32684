// Depthwise convolution solver (see README.md in this folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// groups == C (channel multiplier K/C >= 1), 2-D, FLOAT / HALF / BFLOAT16 data with fp32
// accumulation on CUDA cores. Registered as IMPLICIT_PRECOMP_GEMM, the algorithm cuDNN reports for
// its own depthwise kernel; refuses every other problem with its reason.
const ConvSolver& depthwise_solver();

}  // namespace jhdnn::conv
