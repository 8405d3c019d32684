// The solver contract: one stateless object per way of computing a convolution. Several solvers may
// serve one public algorithm (e.g. a naive and a tiled DIRECT kernel); dispatch takes the first
// applicable one in registry order unless JHDNN_DISABLE (or a forced solver) switches it off.
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/conv_problem.h"
#include "core/device_info.h"
#include "core/status.h"

namespace jhdnn::conv {

using core::ConvProblem;
using core::DeviceInfo;
using core::Status;

// Why a solver cannot take a problem. reason is a string literal or points to static storage.
struct Verdict {
  bool ok;
  const char* reason;
  static Verdict yes() { return {true, ""}; }
  static Verdict no(const char* why) { return {false, why}; }
};

// Device pointers and scaling factors of one call. alpha/beta arrive as float (or double for DOUBLE
// data) from the user; they are widened to double here and narrowed by each kernel.
struct ConvArgs {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  double alpha = 1.0;
  double beta = 0.0;
  // The calling jhdnn handle: per-handle library state (gemm_cublas takes its cuBLAS handle from it).
  // The API fills it; code that calls a solver directly passes its own jhdnnCreate'd handle.
  jhdnnHandle_t handle = nullptr;
};

class ConvSolver {
 public:
  virtual ~ConvSolver() = default;
  // Stable id used in logs, JHDNN_DISABLE and benchmark names, e.g. "direct_tiled".
  virtual const char* name() const = 0;
  virtual jhdnnConvolutionFwdAlgo_t algo() const = 0;
  // A flat list of early returns, each with its reason.
  virtual Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const = 0;
  virtual size_t workspace_bytes(const ConvProblem&) const { return 0; }
  // True when run() also accepts less than workspace_bytes (or none) and then computes the result
  // another way (tensorcore_wgmma_smallc: on tensorcore_mma): run_solver passes such calls through
  // instead of refusing them with SIZE_INSUFFICIENT.
  virtual bool workspace_optional() const { return false; }
  // Enqueues the convolution on stream. Re-checks ws_bytes; never synchronizes.
  virtual Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes,
                     cudaStream_t stream) const = 0;
  // Deterministic: the same inputs give bitwise the same outputs.
  virtual bool deterministic() const { return true; }
  // Loads every kernel the solver may launch into the current context. CUDA loads modules lazily
  // by default, and a first launch that loads one can wait for the whole device -- including
  // streams the caller holds back. jhdnnCreate calls this once per device so no forward call pays
  // for, or synchronizes on, module loading.
  virtual Status load_kernels() const { return Status::success(); }
};

// Every solver in preference order (fastest expected first within an algorithm).
const std::vector<const ConvSolver*>& all_solvers();

// load_kernels() of every solver, once per device per process.
Status load_all_kernels(int device);

// Whether dispatch may take s: not named by JHDNN_DISABLE (core::config's disable list), and no
// other solver of its algorithm named by the force list (config::set_forced_solvers, for tools that
// time one solver through the public API). Reads the lists once per change, per thread; allocates
// nothing.
bool solver_enabled(const ConvSolver& s);
// nullptr when enabled, else why not ("disabled by JHDNN_DISABLE" or "another solver of this
// algorithm is forced"; string literals).
const char* solver_disabled_reason(const ConvSolver& s);

}  // namespace jhdnn::conv
