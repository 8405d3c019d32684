// From descriptors to a running solver: the one path every convolution API call takes.
#pragma once

#include "conv/solver.h"
#include "core/descriptors.h"

namespace jhdnn::conv {

// Builds a fully validated ConvProblem from the four descriptors: shapes agree, y has exactly the
// output dims, data and compute types are a supported combination, y's strides do not overlap.
Status make_problem(const jhdnnTensorStruct& x, const jhdnnFilterStruct& w, const jhdnnConvolutionStruct& conv,
                    const jhdnnTensorStruct& y, ConvProblem* out);

// The first enabled solver for algo that can implement p (registry order). NOT_SUPPORTED, with a
// message naming each solver's reason, when none can; BAD_PARAM for an algo outside the enum.
Status select_solver(const ConvProblem& p, const DeviceInfo& dev, jhdnnConvolutionFwdAlgo_t algo,
                     const ConvSolver** out);

// Runs solver s with the user's workspace, after checking the workspace is large enough.
Status run_solver(const ConvSolver& s, const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes,
                  cudaStream_t stream);

// JHDNN_LOG: writes `call`'s replay command for p (see core/log.h), then, for each solver of algo,
// "disabled", "rejected: <reason>" or "chose"; `outcome` (the status of the selection) ends it when
// it failed. No-op when logging is off.
void log_dispatch(const char* call, const ConvProblem& p, const DeviceInfo& dev, jhdnnConvolutionFwdAlgo_t algo,
                  const ConvSolver* chosen, const Status& outcome);

}  // namespace jhdnn::conv
