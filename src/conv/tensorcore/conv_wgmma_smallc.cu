// tensorcore_wgmma_smallc: the C = 3 first layers (and any layer whose S*C fits one 128-byte
// reduction block but which tensorcore_wgmma cannot load directly: C not a multiple of 16 bytes,
// NCHW x, KCRS w) on the wgmma kernel, through a packed copy of x and w in the workspace.
//
// Two small passes, then the GPU-verified wgmma kernel unchanged on the packed problem (smallc.h
// has the transform and why it is exact):
//   1. pack x: one thread per packed pixel (n, h, q) writes its Cs channels as 16-byte vectors
//      (the S filter columns' C channels side by side, zeros past S*C and in the w padding),
//      reading x through its strides (any layout);
//   2. pack w: one thread per packed filter element (k, r, j), reading w through its strides (any
//      layout), mirrored in CONVOLUTION mode, zeros past S*C. The filter is packed on every call:
//      it is tiny (K*R*Cs elements; 21 KiB for ResNet-50's conv1) and the caller may change it
//      between calls, so nothing is cached;
//   3. forward_wgmma on smallc_problem(p) with xs and ws: packed NHWC / KRSC, C = Cs (a multiple of
//      16 bytes), S = 1, stride_w = 1, pad_w = 0, cross-correlation; the caller's y, alpha, beta.
// The workspace (smallc_workspace_bytes) is what the API's workspace query reports; a call with
// less (or none) runs tensorcore_mma instead (ConvSolver::workspace_optional), as before.
#include "conv/tensorcore/tensorcore.h"

#include <cstdint>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/smallc.h"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace tensorcore {
namespace {

constexpr int kPackThreads = 256;

// Pass 1. U is the element's bit pattern (uint16_t for fp16 / bf16, uint32_t for fp32): the pass
// only moves bits, and an all-zero pattern is +0 in all three types. xs is 16-byte aligned (the
// workspace is aligned to 256) and Cs * sizeof(U) is a multiple of 16, so every vector is aligned.
template <class U>
__global__ void __launch_bounds__(kPackThreads) smallc_pack_x(const U* __restrict__ x, uint4* __restrict__ xs,
                                                             const SmallCGeom g, int64_t pixels) {
  constexpr int V = 16 / int(sizeof(U));
  const int64_t pix = int64_t(blockIdx.x) * kPackThreads + threadIdx.x;
  if (pix >= pixels) return;
  const int64_t q = pix % g.Q, nh = pix / g.Q;
  const int64_t h = nh % g.H, n = nh / g.H;
  const U* xpix = x + n * g.xs[0] + h * g.xs[3];
  SmallCCursor cur;
  cur.w = q * g.str_w - g.pad_w;
  uint4* dst = xs + pix * (g.Cs / V);
  for (int64_t v = 0; v < g.Cs / V; ++v) {
    union {
      uint4 u;
      U e[V];
    } out;
    smallc_next_vector<U, V>(g, xpix, cur, out.e);
    dst[v] = out.u;
  }
}

// Pass 2: ws[k][r][0][j], K * R * Cs elements.
template <class U>
__global__ void __launch_bounds__(kPackThreads) smallc_pack_w(const U* __restrict__ w, U* __restrict__ ws,
                                                             const SmallCGeom g, int64_t elems) {
  const int64_t e = int64_t(blockIdx.x) * kPackThreads + threadIdx.x;
  if (e >= elems) return;
  const int64_t j = e % g.Cs, kr = e / g.Cs;
  const int64_t off = smallc_w_source(g, kr / g.R, kr % g.R, j);
  ws[e] = off >= 0 ? w[off] : U(0);
}

int64_t blocks_for(int64_t items) { return (items + kPackThreads - 1) / kPackThreads; }

template <class U>
core::Status pack(const core::ConvProblem& p, const ConvArgs& a, unsigned char* base, cudaStream_t stream) {
  const SmallCGeom g = smallc_geom(p);
  const int64_t pixels = p.N * p.H * p.Q, welems = p.K * p.R * g.Cs;
  if (blocks_for(pixels) >= (int64_t(1) << 31) || blocks_for(welems) >= (int64_t(1) << 31))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma_smallc: packed tensors too large for one grid");
  smallc_pack_x<U><<<unsigned(blocks_for(pixels)), kPackThreads, 0, stream>>>(
      static_cast<const U*>(a.x), reinterpret_cast<uint4*>(base), g, pixels);
  JHDNN_LAUNCH_CHECK();
  smallc_pack_w<U><<<unsigned(blocks_for(welems)), kPackThreads, 0, stream>>>(
      static_cast<const U*>(a.w), reinterpret_cast<U*>(base + smallc_x_bytes(p)), g, welems);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

// Why the solver does not take p on dev (nullptr: it does).
const char* check_smallc(const core::ConvProblem& p, const core::DeviceInfo& dev) {
  const Verdict v1 = tensorcore_mma_solver().can_implement(p, dev);  // math type, compute type, sizes
  if (!v1.ok) return v1.reason;
  if (dev.sm() != 90) return "wgmma and TMA need an sm_90 (Hopper) device";
  if (const char* why = smallc_shape_reason(p)) return why;
  if (tensorcore_wgmma_solver().can_implement(p, dev).ok) return "tensorcore_wgmma takes it without a packed copy";
  const Verdict v2 = tensorcore_wgmma_solver().can_implement(smallc_problem(p), dev);
  if (!v2.ok) return v2.reason;
  return nullptr;
}

}  // namespace

core::Status forward_wgmma_smallc(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, void* ws,
                                  size_t ws_bytes, cudaStream_t stream) {
  const core::DeviceInfo& dev = cached_device_info();
  if (const char* why = check_smallc(p, dev))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma_smallc: %s", why);
  if (!a.x || !a.w || !a.y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorcore_wgmma_smallc: x, w or y is null");
  const size_t need = smallc_workspace_bytes(p);
  if (ws == nullptr || ws_bytes < need)
    return core::fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "tensorcore_wgmma_smallc: workspace of %zu bytes < %zu needed",
                      ws == nullptr ? size_t(0) : ws_bytes, need);
  const core::ConvProblem q = smallc_problem(p);
  if (q.P != p.P || q.Q != p.Q)  // make_problem_2d recomputes P and Q; the transform keeps them
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR, "tensorcore_wgmma_smallc: packed problem has %lldx%lld outputs, not %lldx%lld",
                      (long long)q.P, (long long)q.Q, (long long)p.P, (long long)p.Q);
  const uintptr_t raw = reinterpret_cast<uintptr_t>(ws);
  unsigned char* base = static_cast<unsigned char*>(ws) + ((kSmallCAlign - raw % kSmallCAlign) % kSmallCAlign);
  if (p.dtype == JHDNN_DATA_FLOAT) {
    JHDNN_TRY(pack<uint32_t>(p, a, base, stream));
  } else {
    JHDNN_TRY(pack<uint16_t>(p, a, base, stream));
  }
  ConvArgs packed = a;
  packed.x = base;
  packed.w = base + smallc_x_bytes(p);
  return forward_wgmma(q, packed, cfg, stream);
}

namespace {

class TensorCoreWgmmaSmallCSolver final : public ConvSolver {
 public:
  const char* name() const override { return "tensorcore_wgmma_smallc"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const override {
    if (const char* why = check_smallc(p, dev)) return Verdict::no(why);
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem& p) const override {
    return smallc_shape_reason(p) == nullptr ? smallc_workspace_bytes(p) : 0;
  }

  // Less workspace than workspace_bytes (or none): the call runs on tensorcore_mma, which needs
  // none, exactly as it did before this solver existed -- callers that never ask for a workspace
  // keep working.
  bool workspace_optional() const override { return true; }

  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    if (ws == nullptr || ws_bytes < smallc_workspace_bytes(p)) return tensorcore_mma_solver().run(p, a, ws, ws_bytes, stream);
    return forward_wgmma_smallc(p, a, WgmmaConfig{}, ws, ws_bytes, stream);
  }

  // The wgmma kernels are tensorcore_wgmma's (its load_kernels raises their limits); the packing
  // kernels need nothing beyond the default module load, done here so no forward call pays for it.
  Status load_kernels() const override {
    if (cached_device_info().sm() != 90) return core::Status::success();
    cudaFuncAttributes attr{};
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_x<uint16_t>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_x<uint32_t>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_w<uint16_t>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_w<uint32_t>));
    return tensorcore_wgmma_solver().load_kernels();
  }
};

}  // namespace
}  // namespace tensorcore

const ConvSolver& tensorcore_wgmma_smallc_solver() {
  static const auto& s = *new tensorcore::TensorCoreWgmmaSmallCSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
