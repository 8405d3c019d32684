// Tensor Core implicit-GEMM forward convolution (see README.md in this folder).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "conv/solver.h"

namespace jhdnn::conv {

// Generation 1: mma.sync + ldmatrix + a 4-stage cp.async pipeline (sm_80 and later). HALF and
// BFLOAT16 data (fp32 accumulation, output in the data type), FLOAT data on TF32 tensor cores.
// Reports JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, as cuDNN does for its tensor-core kernels.
const ConvSolver& tensorcore_mma_solver();
// Generation 2 (sm_90a): wgmma fed by TMA (the input box of each filter tap is one 4-D TMA copy)
// through an mbarrier pipeline, warp-specialized, persistent. 2-D, groups 1, NHWC x with C a
// multiple of 16 bytes, KRSC w, strides <= 8; anything else is tensorcore_mma's.
const ConvSolver& tensorcore_wgmma_solver();
// Generation 2 for small-channel layers (the C = 3 first layers): x and w packed into the workspace
// with the S filter columns folded into the channels (smallc.h), then tensorcore_wgmma's kernel on
// the packed problem. Takes what tensorcore_wgmma refuses when S*C fits one 128-byte reduction block;
// with less workspace than it reports it runs tensorcore_mma (workspace_optional).
const ConvSolver& tensorcore_wgmma_smallc_solver();

namespace tensorcore {

// cuDNN 9's math-type rules, in one place (README.md, "Math-type rules"): true when a problem with
// this data type and math type may run on tensor cores on a device of this compute capability.
// FMA_MATH never does; DEFAULT_MATH, TENSOR_OP_MATH and TENSOR_OP_MATH_ALLOW_CONVERSION do for HALF
// and BFLOAT16, and for FLOAT (as TF32) unless NVIDIA_TF32_OVERRIDE=0 was set when the process first
// asked. DOUBLE and the integer types never do. *why (optional) names the rule that said no.
bool uses_tensor_cores(const core::ConvProblem& p, const core::DeviceInfo& dev, const char** why = nullptr);

// The epilogue every tensor-core kernel applies to each output before storing it:
//   v = alpha * acc + beta * y + alpha2 * z + bias[k];  y = relu ? max(v, 0) : v
// y is read only when beta != 0 (it may hold NaN otherwise); z (a tensor with y's strides and data
// type) only when it is not null; bias (K elements of the data type) only when it is not null.
struct Epilogue {
  float alpha = 1.f, beta = 0.f, alpha2 = 1.f;
  const void* bias = nullptr;
  const void* z = nullptr;
  bool relu = false;
};

// Runs the generation-1 kernel with a full epilogue (the fusion entry point; the solver calls it
// with alpha / beta only). The problem must pass tensorcore_mma_solver().can_implement.
core::Status forward_mma(const core::ConvProblem& p, const void* x, const void* w, void* y, const Epilogue& ep,
                         cudaStream_t stream);

// Generation 2's kernel configurations (conv_wgmma.cu, README.md): bn = output channels per tile
// (64, 128 or 256; 0 = let the solver choose by shape); split = CTAs of a cluster sharing one
// 128 x 128 tile's reduction (1 = no split-K; 2, 4, 8; forced values are capped by the number of
// reduction blocks). The solver's choice for a problem, and a run with a forced configuration (for
// tests and benchmarks: every configuration must give the right answer on every problem it takes).
//
// epilogue: how an unsplit kernel stores its tile (README.md, "Staged epilogue"): kDirect = from
// the accumulator registers (paired 4/8-byte stores; the round-2, GPU-verified epilogue), kStaged =
// through a per-warp shared-memory buffer as 16-byte stores, kTma = staged in shared memory and
// written by TMA bulk tensor stores (README.md, "TMA store epilogue": fp16 / bf16, beta == 0, bm 128,
// bn 128 / 256, unsplit tiles; elsewhere exactly kStaged; wgmma_tma_stores says when), kDefault =
// JHDNN_TC_EPILOGUE (tma|staged|direct, read once per process; unset = tma). kStaged falls back to
// kDirect where its vectors do not apply (wgmma_staged_stores says when); the split-K kernel ignores
// the field.
//
// tail (with split > 1): split only the tiles of the last, partial wave -- the whole waves of
// 128-wide tiles run unsplit in the persistent kernel (one launch), the remaining tiles split-K
// (a second launch); README.md, "Wave quantization and the split-K tail". grid: CTAs of the
// persistent kernel (0 = one wave: #SMs, twice that for bn 64); forcing a small grid makes tests
// exercise several tiles per CTA and the whole-waves / tail boundary on small problems.
enum class WgmmaEpilogue { kDefault = 0, kDirect = 1, kStaged = 2, kTma = 3 };
//
// bm: output pixels per tile, 128 (0 = 128: two consumer warpgroups) or 64 (one consumer warpgroup,
// two CTAs per SM; with bn 128 and no tail only, BAD_PARAM otherwise): README.md, "Round 6". With
// split 2 or 4 (larger values capped to 4) each 64-pixel tile's reduction is split over a cluster
// and reduced by the push exchange of README.md, "Round 7" (always the direct epilogue).
// multicast: the persistent kernel in clusters of two CTAs on two pixel tiles of one channel tile,
// the filter slice loaded once and multicast to both (bn 128, bm 128, split 1 only; forced only,
// the solver never chooses it yet): README.md, "Round 6", item 3.
//
// push (round 7, forced only): with bm 128 and split > 1 (no tail), run the split through the push-
// reduction kernel of the 64-pixel split (README.md, "Round 7") instead of conv_wgmma_splitk_kernel;
// split capped to 4. With bm 64 the push kernel is the only split-K kernel, so the flag changes nothing.
//
// deep (round 9): with bm 64 and split 1 only (BAD_PARAM otherwise), the 64 x 128 tiles run in the
// 8-stage pipeline (8 x 24 KiB = 193 KiB, ONE CTA per SM; grid 0 = #SMs CTAs) instead of the 4-stage,
// two-CTAs-per-SM one: twice the stages for grids that put one CTA on an SM anyway (README.md,
// "Round 9"). The solver chooses it when the 64 x 128 tiles number at most #SMs. Staged or direct
// epilogue (a kTma request stores through the staged vectors, as for bm 64).
struct WgmmaConfig {
  int bn = 0;
  int split = 1;
  WgmmaEpilogue epilogue = WgmmaEpilogue::kDefault;
  bool tail = false;
  int grid = 0;
  int bm = 0;
  bool multicast = false;
  bool push = false;
  bool deep = false;
};
WgmmaConfig wgmma_config(const core::ConvProblem& p, int sm_count);
core::Status forward_wgmma(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, cudaStream_t stream);
// Whether a run with cfg (bn == 0: the solver's choice) on output pointer y stores through the
// staged epilogue's 16-byte vectors (false: the direct epilogue runs). For tests and benchmarks.
bool wgmma_staged_stores(const core::ConvProblem& p, const void* y, WgmmaConfig cfg);
// Whether a run with cfg (bn == 0: the solver's choice) on output pointer y with this beta stores
// (some of) its tiles through TMA bulk tensor stores (kTma; implies wgmma_staged_stores).
bool wgmma_tma_stores(const core::ConvProblem& p, const void* y, double beta, WgmmaConfig cfg);
const char* wgmma_epilogue_name(WgmmaEpilogue e);

// tensorcore_wgmma_smallc with a forced configuration of the wgmma kernel on the packed problem
// (cfg as for forward_wgmma, applied to smallc_problem(p, fold)) and a forced fold (the filter
// rows folded into the packed channels, smallc.h; 0: the solver's choice, smallc_pick_fold).
// Needs ws_bytes >= smallc_workspace_bytes(p, fold) (SIZE_INSUFFICIENT otherwise: a forced run
// never falls back); the problem must pass tensorcore_wgmma_smallc_solver().can_implement and the
// fold smallc_fold_reason (NOT_SUPPORTED otherwise).
core::Status forward_wgmma_smallc(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, void* ws,
                                  size_t ws_bytes, cudaStream_t stream, int64_t fold = 0);
// Its two packing passes alone (x and w into the workspace; same checks and statuses), for the
// benchmarks that time the copy on its own.
core::Status pack_smallc(const core::ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream,
                         int64_t fold = 0);

}  // namespace tensorcore
}  // namespace jhdnn::conv
