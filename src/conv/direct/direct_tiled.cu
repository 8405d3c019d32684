// direct_tiled: a direct convolution that reuses data through shared memory and registers.
//
// One block owns an output tile: one image n, one group g, one output depth o, kTileP x kTileQ
// output pixels and kTileK output channels of that group. For each chunk of `cc` input channels
// and each depth tap t it stages into shared memory
//   - the input patch the tile reads: (kTileP-1)*stride+(R-1)*dil+1 rows by the same in columns
//     (the tile plus its halo), zero-filled where it falls into the padding, and
//   - the matching filter slice w[k0..k0+kTileK, c0..c0+cc, t, :, :], stored k-fastest and
//     already mirrored in CONVOLUTION mode,
// then every thread accumulates kRegK x kRegQ outputs in registers: per filter tap it reads kRegK
// filter values (shared by the kRegQ outputs) and kRegQ input values (shared by the kRegK
// channels). Both operands are converted to fp32 while staging, so the inner loop is plain FMAs.
// See README.md for the reasoning behind the tile shapes.
#include "conv/direct/direct.h"

#include <algorithm>
#include <cstdint>

#include "conv/direct/direct_common.cuh"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace direct {
namespace {

// Output tile of one block and register tile of one thread. Threads are laid out
// (kThreadsK, kTileP, kThreadsQ) with q fastest; thread (tk, tp, tq) owns channels
// tk*kRegK + [0, kRegK) and columns tq + j*kThreadsQ, j in [0, kRegQ) of row tp. Interleaving the
// columns (rather than giving each thread kRegQ adjacent ones) makes neighbouring lanes read
// neighbouring shared-memory words at stride 1 and write neighbouring y elements in NCHW.
template <int TileK, int RegK, int TileP, int TileQ, int RegQ, int MinBlocksPerSm>
struct TileConfig {
  static constexpr int kTileK = TileK, kRegK = RegK, kTileP = TileP, kTileQ = TileQ, kRegQ = RegQ;
  // __launch_bounds__ occupancy hint: caps registers at 64K / (kThreads * MinBlocksPerSm).
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kThreadsK = kTileK / kRegK;
  static constexpr int kThreadsQ = kTileQ / kRegQ;
  static constexpr int kThreads = kThreadsK * kTileP * kThreadsQ;
  static_assert(kTileK % kRegK == 0 && kTileQ % kRegQ == 0, "register tile must divide block tile");
  static_assert(kThreads % 32 == 0, "whole warps");
};

// Dense layers (ResNet-style, K/G >= 32): 64 channels x 8x8 pixels, 32 outputs per thread in
// registers (8 k x 4 q), 128 threads. Per filter tap a thread issues 2 x 16-byte filter loads
// (a broadcast: 16 lanes share a channel block) and 4 input loads for 32 FMAs. 8x8 pixels waste
// little on the 56/28/14/7 feature maps of ResNet (7x7 still fills 77% of a tile). 4 blocks/SM
// leaves 128 registers per thread: the 32 accumulators plus operands fit without spilling.
using WideK = TileConfig<64, 8, 8, 8, 4, 4>;
// Few channels per group (depthwise, small groups): one channel per block so no thread idles on
// channels that do not exist. With a single channel there is little arithmetic per staged byte,
// so the block takes a large 16x32 pixel tile (4 outputs per thread) to amortize its two barriers
// and the load latency over more work: 2.5x faster than 8x16 with one output per thread on a
// 28x28 depthwise layer. 6 blocks/SM (<= 80 registers per thread, no spills).
using NarrowK = TileConfig<1, 1, 16, 32, 4, 6>;

// WideK when a group has at least this many output channels (at most half a tile idle).
constexpr int64_t kWideMinK = 32;
// Shared memory: aim at this much per block so several blocks share an SM (the chunk of input
// channels shrinks to fit) ...
constexpr int64_t kSmemTargetBytes = 24 * 1024;
// ... and never ask for more than the 48 KiB a block gets without an opt-in attribute. A problem
// whose single-channel patch + filter slice exceeds this is refused (direct_naive takes it).
constexpr int64_t kSmemMaxBytes = 48 * 1024;

// Per-launch values the host derives from the problem and the tile shape.
struct TiledLaunch {
  int cc;                  // input channels staged per chunk
  int ph, pw;              // input patch (tile + halo) extent in rows, columns
  int64_t tiles_k, tiles_p, tiles_q;
  int64_t total_tiles;     // N * G * O * tiles_p * tiles_q * tiles_k
};

template <class T, class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocksPerSm)
    direct_tiled_kernel(DirectParams prm, TiledLaunch lp, const T* __restrict__ x,
                        const T* __restrict__ w, T* __restrict__ y, float alpha, float beta) {
  constexpr int kTK = Cfg::kTileK, kRK = Cfg::kRegK, kRQ = Cfg::kRegQ;
  constexpr int kTQs = Cfg::kThreadsQ, kTP = Cfg::kTileP, kNT = Cfg::kThreads;

  // float4 element type: the dynamic buffer starts 16-byte aligned for the vector filter loads.
  extern __shared__ float4 smem_f4[];
  const int R = int(prm.R), S = int(prm.S), RS = R * S;
  float* w_s = reinterpret_cast<float*>(smem_f4);  // (cc, R*S, kTK) filter slice, k fastest
  float* x_s = w_s + lp.cc * RS * kTK;              // (cc, ph, pw) input patch

  const int tid = threadIdx.x;
  const int tq = tid % kTQs;
  const int tp = (tid / kTQs) % kTP;
  const int tk = tid / (kTQs * kTP);
  const int sh = prm.stride_h, sw = prm.stride_w, dh = prm.dil_h, dw = prm.dil_w;
  const int patch = lp.ph * lp.pw;
  const int qstep = kTQs * sw;  // patch columns between a thread's consecutive outputs
  // With channels innermost in memory (NHWC), stage channel-fastest so warps read contiguously.
  const bool x_c_inner = prm.xs[1] == 1;

  // Grid-stride over tiles: the grid is capped at gridDim.x's limit. k tiles vary fastest so
  // blocks running together share an input patch in L2.
  for (int64_t tile = blockIdx.x; tile < lp.total_tiles; tile += gridDim.x) {
    int64_t rem = tile;
    const int64_t kt = rem % lp.tiles_k; rem /= lp.tiles_k;
    const int64_t qt = rem % lp.tiles_q; rem /= lp.tiles_q;
    const int64_t pt = rem % lp.tiles_p; rem /= lp.tiles_p;
    const int64_t o = rem % prm.O;       rem /= prm.O;
    const int64_t g = rem % prm.G;
    const int64_t n = rem / prm.G;

    const int64_t k0 = kt * kTK, p0 = pt * kTP, q0 = qt * Cfg::kTileQ;
    const int64_t h0 = p0 * sh - prm.pad_h;  // input row of patch row 0
    const int64_t w0 = q0 * sw - prm.pad_w;  // input column of patch column 0
    const T* xb = x + n * prm.xs[0] + g * prm.cpg * prm.xs[1];  // x[n, g*C/G, 0, 0, 0]
    const T* wb = w + (g * prm.kpg + k0) * prm.ws[0];            // w[g*K/G + k0, 0, 0, 0, 0]

    float acc[kRK][kRQ];
#pragma unroll
    for (int i = 0; i < kRK; ++i)
#pragma unroll
      for (int j = 0; j < kRQ; ++j) acc[i][j] = 0.f;

    for (int64_t c0 = 0; c0 < prm.cpg; c0 += lp.cc) {
      const int cn = int(std::min<int64_t>(lp.cc, prm.cpg - c0));  // channels in this chunk
      for (int64_t t = 0; t < prm.T; ++t) {
        const int64_t d = o * prm.stride_d - prm.pad_d + t * prm.dil_d;
        if (d < 0 || d >= prm.D) continue;  // tap entirely in depth padding (same for all threads)
        const int64_t tf = prm.flip ? prm.T - 1 - t : t;

        __syncthreads();  // everyone is done reading the previous chunk

        // (cn, R*S, kTK) filter slice, k fastest so the stores are conflict-free; channels past
        // K/G are zero so their (discarded) accumulators stay finite.
        const int w_elems = cn * RS * kTK;
        for (int i = tid; i < w_elems; i += kNT) {
          const int k = i % kTK;
          const int rest = i / kTK;
          const int rs = rest % RS;
          const int c = rest / RS;
          const int r = rs / S, s = rs - r * S;
          float v = 0.f;
          if (k0 + k < prm.kpg) {
            const int rf = prm.flip ? R - 1 - r : r;
            const int sf = prm.flip ? S - 1 - s : s;
            v = to_acc<float>(wb[k * prm.ws[0] + (c0 + c) * prm.ws[1] + tf * prm.ws[2] +
                                 rf * prm.ws[3] + sf * prm.ws[4]]);
          }
          w_s[i] = v;  // i == (c * RS + rs) * kTK + k
        }

        // (cn, ph, pw) input patch at depth d, zeros outside the image (padding and the
        // part of an edge tile that lies past H or W).
        const T* xd = xb + c0 * prm.xs[1] + d * prm.xs[2];
        const int x_elems = cn * patch;
        for (int i = tid; i < x_elems; i += kNT) {
          int c, ph, pw;
          if (x_c_inner) {
            c = i % cn;
            const int rest = i / cn;
            pw = rest % lp.pw;
            ph = rest / lp.pw;
          } else {
            pw = i % lp.pw;
            const int rest = i / lp.pw;
            ph = rest % lp.ph;
            c = rest / lp.ph;
          }
          const int64_t h = h0 + ph, wi = w0 + pw;
          float v = 0.f;
          if (h >= 0 && h < prm.H && wi >= 0 && wi < prm.W)
            v = to_acc<float>(xd[c * prm.xs[1] + h * prm.xs[3] + wi * prm.xs[4]]);
          x_s[(c * lp.ph + ph) * lp.pw + pw] = v;
        }

        __syncthreads();  // the chunk is staged

        // Every index below stays inside the patch even for threads whose outputs fall past P
        // or Q: row tp*sh + r*dh <= (kTP-1)*sh + (R-1)*dh < ph, and likewise for columns. Those
        // threads compute on zeros / real data and simply do not store.
        for (int c = 0; c < cn; ++c) {
          for (int r = 0; r < R; ++r) {
            const float* xr = x_s + (c * lp.ph + tp * sh + r * dh) * lp.pw + tq * sw;  // row of patch
            const float* wr = w_s + (c * RS + r * S) * kTK + tk * kRK;  // (S, kTK) slice, own k
            for (int s = 0; s < S; ++s) {
              float wv[kRK];
              if constexpr (kRK % 4 == 0) {
                const float4* w4 = reinterpret_cast<const float4*>(wr + s * kTK);
#pragma unroll
                for (int i = 0; i < kRK / 4; ++i) {
                  const float4 v = w4[i];
                  wv[4 * i + 0] = v.x;
                  wv[4 * i + 1] = v.y;
                  wv[4 * i + 2] = v.z;
                  wv[4 * i + 3] = v.w;
                }
              } else {
#pragma unroll
                for (int i = 0; i < kRK; ++i) wv[i] = wr[s * kTK + i];
              }
              float xv[kRQ];
#pragma unroll
              for (int j = 0; j < kRQ; ++j) xv[j] = xr[s * dw + j * qstep];
#pragma unroll
              for (int i = 0; i < kRK; ++i)
#pragma unroll
                for (int j = 0; j < kRQ; ++j) acc[i][j] = fmaf(wv[i], xv[j], acc[i][j]);
            }
          }
        }
      }
    }

    // Epilogue straight from registers; beta == 0 never reads y.
    const int64_t p = p0 + tp;
    if (p < prm.P) {
#pragma unroll
      for (int i = 0; i < kRK; ++i) {
        const int64_t k = k0 + tk * kRK + i;
        if (k >= prm.kpg) continue;
        T* yk = y + n * prm.ys[0] + (g * prm.kpg + k) * prm.ys[1] + o * prm.ys[2] + p * prm.ys[3];
#pragma unroll
        for (int j = 0; j < kRQ; ++j) {
          const int64_t q = q0 + tq + j * kTQs;
          if (q < prm.Q) store_output(yk + q * prm.ys[4], acc[i][j], alpha, beta);
        }
      }
    }
  }
}

// Shared-memory floats one staged input channel needs under tile config Cfg.
template <class Cfg>
int64_t floats_per_channel(const ConvProblem& p, int64_t* ph, int64_t* pw) {
  *ph = int64_t(Cfg::kTileP - 1) * p.stride_h + (p.R - 1) * int64_t(p.dil_h) + 1;
  *pw = int64_t(Cfg::kTileQ - 1) * p.stride_w + (p.S - 1) * int64_t(p.dil_w) + 1;
  return *ph * *pw + p.R * p.S * Cfg::kTileK;
}

template <class Cfg>
bool fits(const ConvProblem& p) {
  // Each factor is bounded before any product is formed: with strides, dilations and filter
  // sizes up to 2^31 the products below would overflow int64 and wrap to a small "fit".
  constexpr int64_t kMaxFloats = kSmemMaxBytes / int64_t(sizeof(float));
  if (p.R > kMaxFloats || p.S > kMaxFloats || p.R * p.S > kMaxFloats) return false;
  if (p.stride_h > kMaxFloats || p.stride_w > kMaxFloats || p.dil_h > kMaxFloats || p.dil_w > kMaxFloats)
    return false;
  int64_t ph, pw;
  const int64_t floats = floats_per_channel<Cfg>(p, &ph, &pw);  // now at most a few 10^9 per factor
  return ph <= kMaxFloats && pw <= kMaxFloats && floats <= kMaxFloats;
}

enum class Pick { kNone, kWide, kNarrow };

// The config that suits the channel count, else the other one if only it fits in shared memory
// (NarrowK's larger pixel tile has the larger halo; WideK's 64-channel filter slice is the larger
// one for big filters). Correct either way, only the speed differs.
Pick pick_config(const ConvProblem& p) {
  const bool wide_first = p.k_per_group() >= kWideMinK;
  const Pick first = wide_first ? Pick::kWide : Pick::kNarrow;
  const Pick second = wide_first ? Pick::kNarrow : Pick::kWide;
  auto ok = [&](Pick c) { return c == Pick::kWide ? fits<WideK>(p) : fits<NarrowK>(p); };
  if (ok(first)) return first;
  if (ok(second)) return second;
  return Pick::kNone;
}

const char* check_tiled(const ConvProblem& p) {
  if (const char* why = check_common(p, /*allow_double=*/false)) return why;
  if (pick_config(p) == Pick::kNone)
    return "one input channel's patch (tile + halo) and filter slice exceed 48 KiB of shared "
           "memory (filter, stride or dilation too large)";
  return nullptr;
}

template <class T, class Cfg>
Status launch(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream) {
  int64_t ph, pw;
  const int64_t per_channel = floats_per_channel<Cfg>(p, &ph, &pw);
  const int64_t target = kSmemTargetBytes / int64_t(sizeof(float));
  const int64_t cc = std::max<int64_t>(1, std::min<int64_t>(p.c_per_group(), target / per_channel));

  TiledLaunch lp;
  lp.cc = int(cc);
  lp.ph = int(ph);
  lp.pw = int(pw);
  lp.tiles_k = (p.k_per_group() + Cfg::kTileK - 1) / Cfg::kTileK;
  lp.tiles_p = (p.P + Cfg::kTileP - 1) / Cfg::kTileP;
  lp.tiles_q = (p.Q + Cfg::kTileQ - 1) / Cfg::kTileQ;
  lp.total_tiles = p.N * p.G * p.O * lp.tiles_p * lp.tiles_q * lp.tiles_k;
  const size_t smem = size_t(cc * per_channel) * sizeof(float);  // <= kSmemMaxBytes by fits()

  direct_tiled_kernel<T, Cfg><<<grid_for(lp.total_tiles, 1), Cfg::kThreads, smem, stream>>>(
      make_params(p), lp, static_cast<const T*>(a.x), static_cast<const T*>(a.w),
      static_cast<T*>(a.y), float(a.alpha), float(a.beta));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

template <class T>
Status launch(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream) {
  return pick_config(p) == Pick::kWide ? launch<T, WideK>(p, a, stream)
                                       : launch<T, NarrowK>(p, a, stream);
}

class DirectTiledSolver final : public ConvSolver {
 public:
  const char* name() const override { return "direct_tiled"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_DIRECT; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    if (const char* why = check_tiled(p)) return Verdict::no(why);
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem&) const override { return 0; }

  Status run(const ConvProblem& p, const ConvArgs& a, void*, size_t, cudaStream_t stream) const override {
    // Workspace: none needed, so any ws / ws_bytes is fine.
    if (const char* why = check_tiled(p))
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "direct_tiled: %s", why);
    if (!a.x || !a.w || !a.y)
      return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "direct_tiled: x, w or y is null");
    switch (p.dtype) {
      case JHDNN_DATA_FLOAT: return launch<float>(p, a, stream);
      case JHDNN_DATA_HALF: return launch<__half>(p, a, stream);
      case JHDNN_DATA_BFLOAT16: return launch<__nv_bfloat16>(p, a, stream);
      default: break;
    }
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "direct_tiled: unsupported data type");
  }

  Status load_kernels() const override {
    return direct::load_kernels(direct_tiled_kernel<float, WideK>, direct_tiled_kernel<float, NarrowK>,
                                direct_tiled_kernel<__half, WideK>, direct_tiled_kernel<__half, NarrowK>,
                                direct_tiled_kernel<__nv_bfloat16, WideK>, direct_tiled_kernel<__nv_bfloat16, NarrowK>);
  }
};

}  // namespace
}  // namespace direct

const ConvSolver& direct_tiled_solver() {
  static const auto& s = *new direct::DirectTiledSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
