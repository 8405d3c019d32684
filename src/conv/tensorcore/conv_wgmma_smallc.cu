// tensorcore_wgmma_smallc: the C = 3 first layers (and any layer whose S*C fits one 128-byte
// reduction block but which tensorcore_wgmma cannot load directly: C not a multiple of 16 bytes,
// NCHW x, KCRS w) on the wgmma kernel, through a packed copy of x and w in the workspace.
//
// Two small passes, then the GPU-verified wgmma kernel unchanged on the packed problem (smallc.h
// has the transform, F filter rows and the S filter columns folded into whole 128-byte pixel rows,
// and why it is exact):
//   1. pack x (smallc_pack_x_rows, the default: k consecutive packed rows per block built from one
//      staged window of x rows in shared memory -- smallc.h; below, the direct pass for rows too
//      wide for it): each thread owns one 16-byte OUTPUT vector position of a pixel and writes it for
//      kSmallCPackIters pixels; consecutive threads write consecutive vectors of one packed row (n, u),
//      so a warp writes 512 contiguous bytes. Each element's (t, s, c) comes from a tap table built
//      on the host (smallc_taps, a __grid_constant__ parameter; the thread's V taps sit in
//      registers): no division per element. x is read through its strides (any layout);
//   2. pack w: one thread per packed filter element (k, r', j), reading w through its strides (any
//      layout), mirrored in CONVOLUTION mode, zeros past F*S*C and past filter row R. The filter is
//      packed on every call: it is tiny (K*R'*Cs elements; 24 KiB for ResNet-50's conv1) and the
//      caller may change it between calls, so nothing is cached;
//   3. forward_wgmma on smallc_problem(p, F) with xs and ws: packed NHWC / KRSC, C = Cs (whole
//      128-byte rows), S = 1, pad 0, stride (sh, 1), dilation (F*dh, 1), cross-correlation; the
//      caller's y, alpha, beta.
// The workspace (smallc_workspace_bytes) is what the API's workspace query reports; a call with
// less (or none) runs tensorcore_mma instead (ConvSolver::workspace_optional), as before.
#include "conv/tensorcore/tensorcore.h"

#include <array>
#include <cstdint>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/smallc.h"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace tensorcore {
namespace {

constexpr int kPackThreads = 256;

// Pass 1. U is the element's bit pattern (uint16_t for fp16 / bf16, uint32_t for fp32): the pass
// only moves bits, and an all-zero pattern is +0 in all three types. The work split is
// smallc_pack_slot's (smallc.h): each thread writes one 16-byte vector position v of up to
// kSmallCPackIters pixels of one packed row, its V taps held in registers (read once from the
// __grid_constant__ table), consecutive threads on consecutive vectors. xs is 16-byte aligned (the
// workspace is aligned to 256) and Cs * sizeof(U) is a multiple of 128, so every vector is aligned.
template <class U>
__global__ void __launch_bounds__(kSmallCPackThreads) smallc_pack_x(const U* __restrict__ x, uint4* __restrict__ xs,
                                                                   const SmallCGeom g,
                                                                   const __grid_constant__ SmallCTaps taps,
                                                                   uint32_t chunks) {
  constexpr int V = 16 / int(sizeof(U));
  const SmallCPackSlot sl = smallc_pack_slot(g, V, chunks, blockIdx.x, threadIdx.x);
  if (!sl.active) return;
  SmallCTap tv[V];
#pragma unroll
  for (int e = 0; e < V; ++e) tv[e] = taps.tap[sl.v * V + e];
  uint4* dst = xs + int64_t(sl.row) * g.Q * sl.vp + sl.v;
#pragma unroll 1
  for (int k = 0; k < kSmallCPackIters; ++k) {
    const uint32_t q = sl.q0 + k * sl.ppi;
    if (q >= uint32_t(g.Q)) break;
    union {
      uint4 u;
      U e[V];
    } out;
    smallc_x_vector<U, V>(g, tv, x, sl.n, sl.u, q, out.e);
    dst[int64_t(q) * sl.vp] = out.u;
  }
}

// Pass 1, row-staged (the default when smallc_rows_per_block > 0; smallc.h has the design): block =
// k consecutive packed rows u0 .. u0+rows-1 of image n (smallc_row_block). Phase 1 stages the
// window of rows + (F-1)*dh x rows they read, stage[r][w][c] = x row u0 - ph + r at a row pitch of
// `pitch` elements (smallc_stage_pitch: the bank model's pick; zeros for rows outside the image):
// 16-byte loads when `vec` (smallc_stage_vectorized and x 16-byte aligned), else element by element.
// Phase 2 writes the block's rows*Q pixels -- consecutive in xs; rows*Q <= Hp*Q < 2^31 by the shape
// rules -- with the thread split of smallc_pack_x (thread: vector v of pixel slot; pixels slot,
// slot + ppi, ...), every element a shared-memory read at smallc_row_pixel / smallc_row_at. Six blocks
// per SM (40 / 38 registers for 16-bit / fp32 data, no spill; an earlier version took 47 unbounded,
// five blocks): more blocks in phase 2 while others wait on their staging loads. Eight (32
// registers) spills 20 bytes.
template <class U>
__global__ void __launch_bounds__(kSmallCPackThreads, 6) smallc_pack_x_rows(const U* __restrict__ x, uint4* __restrict__ xs,
                                                                        const SmallCGeom g,
                                                                        const __grid_constant__ SmallCRowTaps taps,
                                                                        uint32_t k, uint32_t chunks, uint32_t pitch,
                                                                        bool vec) {
  constexpr int V = 16 / int(sizeof(U));
  extern __shared__ __align__(16) unsigned char smallc_rows_raw[];
  U* stage = reinterpret_cast<U*>(smallc_rows_raw);
  const SmallCRowBlock b = smallc_row_block(g, k, chunks, blockIdx.x);
  const uint32_t wc = uint32_t(g.W * g.C), nst = smallc_stage_rows(g, b.rows);
  if (vec) {
    // Whole rows, 16 bytes per load. A thread issues up to kStageBatch loads before it stores any
    // (a store between them would keep the next load behind the loop's exit branch): conv1 / VGG
    // stage 504 / 336 vectors, 1-2 per thread, so the window arrives in one load latency.
    constexpr int kStageBatch = 4;
    const uint32_t rowvec = wc / V, total = nst * rowvec, pitchvec = pitch / V;
    uint4* st = reinterpret_cast<uint4*>(stage);
    for (uint32_t m0 = threadIdx.x; m0 < total; m0 += kStageBatch * kSmallCPackThreads) {
      uint4 val[kStageBatch];
      uint32_t at[kStageBatch];
#pragma unroll
      for (int u = 0; u < kStageBatch; ++u) {
        const uint32_t m = m0 + uint32_t(u) * kSmallCPackThreads;
        uint32_t r = 0, col = 0;
        const int64_t src = m < total ? smallc_stage_vector(g, V, rowvec, b.n, b.u0, m, r, col) : -1;
        at[u] = r * pitchvec + col;
        val[u] = src >= 0 ? __ldg(reinterpret_cast<const uint4*>(x + src)) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kStageBatch; ++u)
        if (m0 + uint32_t(u) * kSmallCPackThreads < total) st[at[u]] = val[u];
    }
  } else {
    const bool contiguous = g.xs[1] == 1 && g.xs[4] == g.C;  // an NHWC-like row: W*C elements in a run
    for (uint32_t r = 0; r < nst; ++r) {
      const int64_t h = int64_t(b.u0) - g.pad_h + int64_t(r);
      U* dst = stage + r * pitch;
      if (h < 0 || h >= g.H) {
        for (uint32_t i = threadIdx.x; i < wc; i += kSmallCPackThreads) dst[i] = U(0);
      } else if (contiguous) {
        const U* src = x + int64_t(b.n) * g.xs[0] + h * g.xs[3];
#pragma unroll 4
        for (uint32_t i = threadIdx.x; i < wc; i += kSmallCPackThreads) dst[i] = src[i];
      } else {
        for (uint32_t i = threadIdx.x; i < wc; i += kSmallCPackThreads)
          dst[i] = x[smallc_stage_source(g, b.n, b.u0, r, i)];
      }
    }
  }
  __syncthreads();
  const uint32_t vp = uint32_t(g.Cs) / uint32_t(V), ppi = kSmallCPackThreads / vp;
  const uint32_t slot = threadIdx.x / vp, v = threadIdx.x - slot * vp;
  if (slot >= ppi) return;  // vp = 24: the 16 threads left over
  // soff and the pixel base are scaled to bytes (exact modulo 2^32 like the elements: a true index
  // times sizeof(U) < 48 KiB), so an element's shared address is one three-operand add.
  uint32_t soff[V];
  int32_t dw[V];
#pragma unroll
  for (int e = 0; e < V; ++e) soff[e] = taps.soff[v * V + e] * uint32_t(sizeof(U)), dw[e] = taps.dw[v * V + e];
  // The block's pixels are consecutive in xs: row (n, u0) onwards.
  uint4* dst = xs + (int64_t(b.n) * g.Hp + b.u0) * g.Q * vp + v;
  const uint32_t npix = b.rows * uint32_t(g.Q);
  for (SmallCRowCursor c = smallc_row_cursor(g, slot); c.p < npix; smallc_row_advance(g, ppi, c)) {
    union {
      uint4 u;
      U e[V];
    } out;
    SmallCRowPixel px = smallc_row_pixel(g, pitch, c.i, c.q);  // per element: one add, one compare
    px.base *= uint32_t(sizeof(U));
    asm("" : "+r"(px.base));  // keep base in a register: NVVM otherwise recomputes it under every element's branch
#pragma unroll
    for (int e = 0; e < V; ++e)
      out.e[e] = smallc_row_in(g, px, dw[e]) ? *reinterpret_cast<const U*>(smallc_rows_raw + smallc_row_at(px, soff[e])) : U(0);
    dst[int64_t(c.p) * vp] = out.u;
  }
}

// Pass 2: ws[k][r'][0][j], K * R' * Cs elements.
template <class U>
__global__ void __launch_bounds__(kPackThreads) smallc_pack_w(const U* __restrict__ w, U* __restrict__ ws,
                                                             const SmallCGeom g, int64_t elems) {
  const int64_t e = int64_t(blockIdx.x) * kPackThreads + threadIdx.x;
  if (e >= elems) return;
  const int64_t j = e % g.Cs, kr = e / g.Cs;
  const int64_t off = smallc_w_source(g, kr / g.Rf, kr % g.Rf, j);
  ws[e] = off >= 0 ? w[off] : U(0);
}

int64_t blocks_for(int64_t items) { return (items + kPackThreads - 1) / kPackThreads; }

// smallc_stage_pitch costs ~16 us of host time (its bank model, measured here); eager callers repeat
// the same layer, so the last answer is kept per host thread, keyed on everything the model reads.
int64_t stage_pitch_cached(const SmallCGeom& g, int64_t elem_bytes) {
  using Key = std::array<int64_t, 12>;
  const Key key{g.W, g.C, g.S, g.F, g.Q, g.Cs, g.str_w, g.pad_w, g.dil_w, g.dil_h, elem_bytes, 1};
  thread_local Key last{};  // last[11] == 0: empty
  thread_local int64_t last_pitch = 0;
  if (key != last) last_pitch = smallc_stage_pitch(g, elem_bytes), last = key;
  return last_pitch;
}

template <class U>
core::Status pack(const core::ConvProblem& p, int64_t F, const ConvArgs& a, unsigned char* base, cudaStream_t stream) {
  constexpr int64_t V = 16 / int64_t(sizeof(U));
  const SmallCGeom g = smallc_geom(p, F);
  const int64_t rows = g.N * g.Hp, chunks = smallc_pack_chunks(g, int(V)), welems = g.K * g.Rf * g.Cs;
  if (rows * chunks >= (int64_t(1) << 31) || blocks_for(welems) >= (int64_t(1) << 31))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma_smallc: packed tensors too large for one grid");
  const bool row_fits = g.W * g.C * int64_t(sizeof(U)) <= kSmallCRowBytes;  // else no pitch model: the direct pass
  const int64_t pitch = row_fits ? stage_pitch_cached(g, int64_t(sizeof(U))) : 0;
  if (const int64_t k = row_fits ? smallc_rows_per_block(g, int64_t(sizeof(U)), pitch) : 0) {  // the window fits
    const uint32_t rchunks = smallc_row_chunks(g, uint32_t(k));
    const bool vec = smallc_stage_vectorized(g, int(V)) && reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
    const size_t smem = size_t(k + (g.F - 1) * g.dil_h) * size_t(pitch) * sizeof(U);  // <= kSmallCRowBytes
    smallc_pack_x_rows<U><<<unsigned(g.N * rchunks), kSmallCPackThreads, smem, stream>>>(
        static_cast<const U*>(a.x), reinterpret_cast<uint4*>(base), g, smallc_row_taps(g, pitch), uint32_t(k), rchunks,
        uint32_t(pitch), vec);
  } else {
    smallc_pack_x<U><<<unsigned(rows * chunks), kSmallCPackThreads, 0, stream>>>(
        static_cast<const U*>(a.x), reinterpret_cast<uint4*>(base), g, smallc_taps(g), uint32_t(chunks));
  }
  JHDNN_LAUNCH_CHECK();
  smallc_pack_w<U><<<unsigned(blocks_for(welems)), kPackThreads, 0, stream>>>(
      static_cast<const U*>(a.w), reinterpret_cast<U*>(base + smallc_x_bytes(p, F)), g, welems);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

// Why the solver does not take p on dev with fold F (0: smallc_pick_fold; nullptr: it does).
const char* check_smallc(const core::ConvProblem& p, const core::DeviceInfo& dev, int64_t fold) {
  const Verdict v1 = tensorcore_mma_solver().can_implement(p, dev);  // math type, compute type, sizes
  if (!v1.ok) return v1.reason;
  if (dev.sm() != 90) return "wgmma and TMA need an sm_90 (Hopper) device";
  if (const char* why = smallc_shape_reason(p)) return why;
  if (tensorcore_wgmma_solver().can_implement(p, dev).ok) return "tensorcore_wgmma takes it without a packed copy";
  const int64_t F = fold > 0 ? fold : smallc_pick_fold(p);
  if (const char* why = smallc_fold_reason(p, F)) return why;
  const Verdict v2 = tensorcore_wgmma_solver().can_implement(smallc_problem(p, F), dev);
  if (!v2.ok) return v2.reason;
  return nullptr;
}

}  // namespace

namespace {

// The 256-byte aligned start of the packed tensors in the caller's workspace.
unsigned char* aligned_base(void* ws) {
  const uintptr_t raw = reinterpret_cast<uintptr_t>(ws);
  return static_cast<unsigned char*>(ws) + ((kSmallCAlign - raw % kSmallCAlign) % kSmallCAlign);
}

}  // namespace

core::Status pack_smallc(const core::ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream,
                         int64_t fold) {
  const core::DeviceInfo& dev = cached_device_info();
  if (fold < 0) return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma_smallc: fold %lld < 0", (long long)fold);
  if (const char* why = check_smallc(p, dev, fold))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma_smallc: %s", why);
  if (!a.x || !a.w || !a.y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorcore_wgmma_smallc: x, w or y is null");
  const int64_t F = fold > 0 ? fold : smallc_pick_fold(p);
  const size_t need = smallc_workspace_bytes(p, F);
  if (ws == nullptr || ws_bytes < need)
    return core::fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "tensorcore_wgmma_smallc: workspace of %zu bytes < %zu needed",
                      ws == nullptr ? size_t(0) : ws_bytes, need);
  const core::ConvProblem q = smallc_problem(p, F);
  if (q.P != p.P || q.Q != p.Q)  // make_problem_2d recomputes P and Q; the transform keeps them
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR, "tensorcore_wgmma_smallc: packed problem has %lldx%lld outputs, not %lldx%lld",
                      (long long)q.P, (long long)q.Q, (long long)p.P, (long long)p.Q);
  if (p.dtype == JHDNN_DATA_FLOAT) return pack<uint32_t>(p, F, a, aligned_base(ws), stream);
  return pack<uint16_t>(p, F, a, aligned_base(ws), stream);
}

core::Status forward_wgmma_smallc(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, void* ws,
                                  size_t ws_bytes, cudaStream_t stream, int64_t fold) {
  JHDNN_TRY(pack_smallc(p, a, ws, ws_bytes, stream, fold));  // every check is there
  const int64_t F = fold > 0 ? fold : smallc_pick_fold(p);
  unsigned char* base = aligned_base(ws);
  ConvArgs packed = a;
  packed.x = base;
  packed.w = base + smallc_x_bytes(p, F);
  return forward_wgmma(smallc_problem(p, F), packed, cfg, stream);
}

namespace {

class TensorCoreWgmmaSmallCSolver final : public ConvSolver {
 public:
  const char* name() const override { return "tensorcore_wgmma_smallc"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const override {
    if (const char* why = check_smallc(p, dev, 0)) return Verdict::no(why);
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
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_x_rows<uint16_t>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, smallc_pack_x_rows<uint32_t>));
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
