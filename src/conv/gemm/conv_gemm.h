// GEMM convolution solvers (CUDNN_CONVOLUTION_FWD_ALGO_GEMM, see README.md in this folder).
#pragma once

#include "conv/solver.h"

namespace jhdnn::conv {

// Explicit im2col into the workspace, then the library's SGEMM (src/gemm).
const ConvSolver& gemm_ours_solver();
// The same im2col, then cuBLAS's SGEMM: the vendor GEMM on our lowering, for comparison.
const ConvSolver& gemm_cublas_solver();

}  // namespace jhdnn::conv
