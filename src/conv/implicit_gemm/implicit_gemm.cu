// implicit_gemm / implicit_precomp_gemm: convolution as a tiled fp32 GEMM whose A operand (the
// im2col matrix) is gathered from x while it is staged, never materialized.
//
// GEMM view, one group g at a time (grid z):
//   C[m, n] = sum_k A[m, k] * B[k, n]
//   m in [0, M):     output pixel (n, o, p, q),  M = N*O*P*Q          (rows, "pixels")
//   n in [0, K/G):   output channel of the group                      (columns)
//   k in [0, Kgemm): reduction index (c, t, r, s), Kgemm = (C/G)*T*R*S (order: see Mode)
//   A[m, k] = x[n, g*C/G + c, o*sd - pd + t*dd, p*sh - ph + r*dh, q*sw - pw + s*dw]  (0 in padding)
//   B[k, n] = w[g*K/G + n, c, t', r', s']   (t' = T-1-t etc. in CONVOLUTION mode)
//
// One block computes a BM x BN tile of C with 256 threads, each holding a TM x TN register tile;
// the reduction advances BK = 8 at a time through double-buffered shared memory (one barrier per
// step): while the block multiplies step i out of one buffer, each thread already holds step i+1's
// global loads in registers and writes them into the other buffer afterwards.
//
// The two algorithms differ only in how a thread finds the addresses of its A and B elements
// (the kernel's Mode parameter):
//   IMPLICIT_GEMM, C/G a multiple of 8 (kTapBlock): the reduction runs channel-block-outer,
//     tap-inner: for each block of 8 channels, every filter tap (t, r, s). A thread's pixel is
//     fixed, so one bounds check per step covers all of its A elements, and the tap advances by
//     counters (no division in the loop).
//   IMPLICIT_GEMM, other C/G (kFlat): channel blocks would be partly padding (C/G = 3: 5/8 of the
//     work wasted), so the reduction runs over a flat k and each element decodes its k into
//     (c, t, r, s) by division by invariant integers (fast_divmod.h: multiply-high, add, shift).
//   IMPLICIT_PRECOMP_GEMM, other C/G (kTable): flat k; a table in the workspace gives, per k, the
//     x offset and the w offset (relative to the pixel's / channel's base) and the dilated tap
//     offsets (dt, dh, dw) for the bounds check. Each element costs a table read (an L1
//     broadcast: all lanes of a warp read the same few entries) instead of the decode.
//   IMPLICIT_PRECOMP_GEMM, C/G a multiple of 8 (kTapTable): a kernel of its own,
//     precomp_async_kernel: kTapBlock's order, one per-tap table entry per step, the filter
//     re-laid out into the workspace, operands copied by cp.async through a 4-stage ring.
// See README.md for the reasoning and the limits.
#include "conv/implicit_gemm/implicit_gemm.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "conv/direct/direct_common.cuh"
#include "conv/implicit_gemm/fast_divmod.h"
#include "core/config.h"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace igemm {
namespace {

constexpr int kThreads = 256;
constexpr int kBK = 8;  // reduction step; also the padding granule of the PRECOMP table

// Everything a kernel needs; passed by value. Sizes are int32 (can_implement proves they fit),
// memory offsets int64 (a tensor may exceed 2^31 elements).
struct Params {
  int M;                   // N*O*P*Q
  int O, P, Q;
  int D, H, W;
  int T, R, S;
  int cpg, kpg;            // channels per group: input (C/G), output (K/G)
  int kgemm;               // cpg*T*R*S
  int pad_d, pad_h, pad_w;
  int stride_d, stride_h, stride_w;
  int dil_d, dil_h, dil_w;
  int flip;                // 1 in CONVOLUTION mode
  int64_t xs[5], ws[5], ys[5];
  FastDivmod div_cpg, div_S, div_R;  // k -> (tap, c), tap -> (t*R + r, s), t*R + r -> (t, r)
  FastDivmod div_Q, div_P, div_O;    // m -> (n, o, p, q)
};

// Output pixel m -> (n, o, p, q), by multiply-high instead of integer division.
__device__ __forceinline__ void decode_pixel(const Params& p, int m, int* n, int* o, int* pp, int* q) {
  const int npo = p.div_Q.divmod(m, q);
  const int no = p.div_P.divmod(npo, pp);
  *n = p.div_O.divmod(no, o);
}

// Input coordinates of filter tap (0, 0, 0) of the output pixel at (o, pp, q) (they may lie in the
// padding).
__device__ __forceinline__ void tap0_coords(const Params& p, int o, int pp, int q, int* d0, int* h0, int* w0) {
  *d0 = o * p.stride_d - p.pad_d;
  *h0 = pp * p.stride_h - p.pad_h;
  *w0 = q * p.stride_w - p.pad_w;
}

// How a thread finds its elements' addresses along the reduction (see the file comment).
enum Mode {
  kTapBlock = 0,  // implicit_gemm when C/G % 8 == 0: (channel block, tap) counters
  kFlat = 1,      // implicit_gemm otherwise: flat k, decoded per element by fast division
  kTable = 2,     // implicit_precomp_gemm, other C/G (or forced): flat k, offsets per k from the table
  kTapTable = 3,  // implicit_precomp_gemm when C/G % 8 == 0: precomp_async_kernel (tap table + re-laid-out filter)
};

// Block tile BM x BN, thread tile TM x TN. Threads form a TPM x TPN grid; a warp is an 8 x 4 patch
// of it, so per reduction step a warp reads 8 distinct float4 of A and 4 of B from shared memory
// (one wavefront each) instead of 16 and 2. A thread's TM rows are TM/4 runs of 4 rows spaced
// 4*TPM apart (and likewise its columns when TN >= 4), so each run is one float4 read.
template <int BM_, int BN_, int TM_, int TN_, int MinBlocks>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, TM = TM_, TN = TN_;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int TPM = BM / TM, TPN = BN / TN;
  static_assert(TPM * TPN == kThreads, "one output tile per 256 threads");
  static_assert(TPM % 8 == 0 && TPN % 4 == 0, "warps are 8 x 4 thread patches");
  static_assert(TM % 4 == 0 && (TN % 4 == 0 || TN < 4), "float4 runs of A (and of B when TN >= 4)");
  static constexpr int kALoads = BM * kBK / kThreads;      // A elements each thread stages per step
  static constexpr int kThreadsPerPixel = kBK / kALoads;
  static_assert(kALoads * kThreadsPerPixel == kBK, "a pixel's BK elements split evenly");
  static constexpr int kBElems = kBK * BN;
  static constexpr int kBLoads = (kBElems + kThreads - 1) / kThreads;
  // Row pitch of the shared tiles: +4 floats keeps float4 alignment and turns the 2-way bank
  // conflicts of the channel-fast A stores (and of the B stores) into none.
  static constexpr int AS = BM + 4, BS = BN + 4;
};

// The A copy roles of thread tid (igemm_kernel and precomp_async_kernel): pixel m of the block
// tile and reduction slots k0 + j * kstep, j < kALoads. Channel-fast when x has channels innermost
// (NHWC: a thread's slots are adjacent channels, neighbouring lanes read the same 32-byte sector),
// pixel-fast otherwise (NCHW: lanes take adjacent pixels, adjacent along W).
struct ARoles {
  int m, k0, kstep;
};
template <class Cfg>
__device__ __forceinline__ ARoles a_roles(int tid, int channel_fast) {
  ARoles r;
  if (channel_fast) {
    r.m = tid / Cfg::kThreadsPerPixel;
    r.k0 = (tid % Cfg::kThreadsPerPixel) * Cfg::kALoads;
    r.kstep = 1;
  } else {
    r.m = tid % Cfg::BM;
    r.k0 = tid / Cfg::BM;
    r.kstep = Cfg::kThreadsPerPixel;
  }
  return r;
}

using Tile128x128 = Tile<128, 128, 8, 8, 2>;  // K/G >= 128: 64 FMAs per 4 shared loads
using Tile128x64 = Tile<128, 64, 8, 4, 2>;    // K/G = 64 (ResNet's narrow layers)
using Tile64x64 = Tile<64, 64, 4, 4, 3>;      // more blocks when the grid would not fill the GPU
using Tile256x8 = Tile<256, 8, 8, 1, 2>;      // K/G < 24, depthwise: few columns, many pixels

// PRECOMP table entry for reduction index k (two 16-byte arrays, kpad = Kgemm rounded up to kBK):
//   off[k] = {x offset of (c, t*dd, r*dh, s*dw) from x[n, g*C/G, d0, h0, w0],
//             w offset of (c, t', r', s') from w[g*K/G + n, 0, 0, 0, 0]}
//   tap[k] = {t*dd, r*dh, s*dw, 1}; entries past Kgemm are {0, 0, 0, 0}: the 0 masks them.
// Per-tap table (kTapTable, `per_tap` != 0): one entry per filter tap (t, r, s), s fastest, for
// the first T*R*S (= kpad here) entries:
//   off[tap] = {x offset of (0, t*dd, r*dh, s*dw), w offset of (0, t', r', s')},  tap[tap] = {t*dd, r*dh, s*dw, 1};
// the kernel adds the channel (c * x stride) itself; the w half is no longer read
// (precomp_async_kernel takes B from the re-laid-out filter).
__device__ __forceinline__ void write_table_entry(const Params& p, int k, longlong2* __restrict__ off,
                                                  int4* __restrict__ tap, int per_tap) {
  if (per_tap) {
    const int s = k % p.S;
    const int rt = k / p.S;
    const int r = rt % p.R;
    const int t = rt / p.R;
    const int tf = p.flip ? p.T - 1 - t : t, rf = p.flip ? p.R - 1 - r : r, sf = p.flip ? p.S - 1 - s : s;
    const int dt = t * p.dil_d, dh = r * p.dil_h, dw = s * p.dil_w;
    off[k] = make_longlong2(dt * p.xs[2] + dh * p.xs[3] + dw * p.xs[4], tf * p.ws[2] + rf * p.ws[3] + sf * p.ws[4]);
    tap[k] = make_int4(dt, dh, dw, 1);
    return;
  }
  if (k >= p.kgemm) {
    off[k] = make_longlong2(0, 0);
    tap[k] = make_int4(0, 0, 0, 0);
    return;
  }
  // Order of the reduction: with whole channel blocks, (channel block, tap, channel in block)
  // like implicit_gemm's counters (consecutive steps share filter and input sectors, see the
  // kernel); otherwise (tap, channel), which wastes no step on padding.
  int c, rest;
  if (p.cpg % kBK == 0) {
    const int taps = p.T * p.R * p.S;
    const int ci = k % kBK;
    const int blk = k / kBK;  // = cb * taps + tap
    c = (blk / taps) * kBK + ci;
    rest = blk % taps;
  } else {
    c = k % p.cpg;
    rest = k / p.cpg;
  }
  const int s = rest % p.S;
  rest /= p.S;
  const int r = rest % p.R;
  const int t = rest / p.R;
  const int tf = p.flip ? p.T - 1 - t : t, rf = p.flip ? p.R - 1 - r : r, sf = p.flip ? p.S - 1 - s : s;
  const int dt = t * p.dil_d, dh = r * p.dil_h, dw = s * p.dil_w;
  off[k] = make_longlong2(c * p.xs[1] + dt * p.xs[2] + dh * p.xs[3] + dw * p.xs[4],
                          c * p.ws[1] + tf * p.ws[2] + rf * p.ws[3] + sf * p.ws[4]);
  tap[k] = make_int4(dt, dh, dw, 1);
}

__global__ void precomp_table_kernel(Params p, int kpad, longlong2* __restrict__ off, int4* __restrict__ tap,
                                     int per_tap) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < kpad) write_table_entry(p, k, off, tap, per_tap);
}

// Setup of the per-tap mode (precomp_async_kernel), one launch: the per-tap table (block 0) and
// the filter re-laid out for the kernel's B copies,
//   wt[((g * (C/G) / 8 + cb) * T*R*S + tap) * 8 + ci][n] = w[g*K/G + n, cb*8 + ci, t', r', s'],
//   n in [0, kpg4), kpg4 = K/G rounded up to 4, zero for n >= K/G,
// i.e. the 8 x K/G B tile of every reduction step (channel block cb, tap) in step order, rows
// contiguous: the kernel's B copies become 16-byte and coalesced, and its B address is one add
// per step. Block (x = g * (C/G) / 8 + cb, y = chunk of 32 columns) of kSetupThreads = 8 x 32
// threads: warp = channel ci of the block, lane = column n; each thread walks the taps of its
// (n, ci). A store writes 32 consecutive n (coalesced); the loads gather along K, but the 32-byte
// sectors they touch hold the neighbouring taps / channels of the same filter row, which the
// next iterations and the block's other warps read from L1. Every thread has only T*R*S
// (independent) loads to make, so the launch is short even for 512 x 512 x 3 x 3 filters.
constexpr int kSetupThreads = 256;
__global__ void __launch_bounds__(kSetupThreads)
    precomp_tap_setup_kernel(Params p, longlong2* __restrict__ off, int4* __restrict__ tap,
                             const float* __restrict__ w, float* __restrict__ wt, int kpg4) {
  static_assert(kSetupThreads == kBK * 32, "one warp per channel of the block");
  const int taps = p.T * p.R * p.S;
  if (blockIdx.x == 0 && blockIdx.y == 0)
    for (int k = threadIdx.x; k < taps; k += blockDim.x) write_table_entry(p, k, off, tap, 1);
  const int ci = threadIdx.x / 32;
  const int n = blockIdx.y * 32 + threadIdx.x % 32;
  if (n >= kpg4) return;
  const int nblk = p.cpg / kBK;
  const int gb = blockIdx.x;  // g * nblk + cb
  const int64_t g = gb / nblk;
  const int cb = gb % nblk;
  const int64_t w_c = (g * p.kpg + n) * p.ws[0] + int64_t(cb * kBK + ci) * p.ws[1];  // w[g*K/G + n, cb*8 + ci]
  float* const out = wt + (int64_t(gb) * taps * kBK + ci) * kpg4 + n;                // step (cb, tap 0), row ci
  int t = 0, r = 0, s = 0;
  for (int tp = 0; tp < taps; ++tp) {
    float v = 0.f;
    if (n < p.kpg) {
      const int tf = p.flip ? p.T - 1 - t : t, rf = p.flip ? p.R - 1 - r : r, sf = p.flip ? p.S - 1 - s : s;
      v = __ldg(w + w_c + tf * p.ws[2] + rf * p.ws[3] + sf * p.ws[4]);
    }
    out[int64_t(tp) * kBK * kpg4] = v;
    if (++s == p.S) {
      s = 0;
      if (++r == p.R) r = 0, ++t;
    }
  }
}

// ---- epilogue (both kernels): C tile -> y, y = alpha * C + beta * y; beta == 0 never reads y.
// `epi`: kThreads / 32 per-warp transpose buffers in shared memory (null for the 256 x 8 tile);
// the caller makes sure no warp still reads what they alias.
constexpr int kEpiPitch = 17;  // odd: the column reads (lane = row) hit 32 different banks
using EpiBuffer = float[kThreads / 32][32][kEpiPitch];

template <class Cfg>
__device__ __forceinline__ void store_tile(const Params& p, float* __restrict__ y, float (&acc)[Cfg::TM][Cfg::TN],
                                           int m0, int n0, int g, int warp, int lane, int tm, int tn, float alpha,
                                           float beta, EpiBuffer* epi) {
  constexpr int TM = Cfg::TM, TN = Cfg::TN, TPM = Cfg::TPM;
  if constexpr (TN % 4 == 0) {
    // Through shared memory, one warp at a time: a warp holds, per (row run ic, column run jc),
    // a 32 x 16 block of C (each lane a 4 x 4 piece). Transposed through a per-warp buffer, lane
    // l then owns row (pixel) l of the block and writes its 16 channels: in NCHW the 32 lanes
    // store 32 adjacent pixels of one channel (whole 128-byte lines instead of 4-byte pieces of
    // 16-byte strides), and only TM/4 pixel decodes per thread are needed instead of TM.
    float(*e)[kEpiPitch] = (*epi)[warp];
    const int wr = (warp % (TPM / 8)) * 32;  // the warp's first row within a row run
    const int wc = (warp / (TPM / 8)) * 16;  // the warp's first column within a column run
#pragma unroll
    for (int ic = 0; ic < TM / 4; ++ic) {
      const int m = m0 + ic * 4 * TPM + wr + lane;  // the row this lane writes out
      const bool m_ok = m < p.M;
      float* yp = y;
      if (m_ok) {
        int n, o, pp, q;
        decode_pixel(p, m, &n, &o, &pp, &q);
        yp = y + n * p.ys[0] + o * p.ys[2] + pp * p.ys[3] + q * p.ys[4] + int64_t(g) * p.kpg * p.ys[1];
      }
#pragma unroll
      for (int jc = 0; jc < TN / 4; ++jc) {
        __syncwarp();  // the previous block's reads are done
#pragma unroll
        for (int r4 = 0; r4 < 4; ++r4)
#pragma unroll
          for (int c4 = 0; c4 < 4; ++c4) e[(lane % 8) * 4 + r4][(lane / 8) * 4 + c4] = acc[ic * 4 + r4][jc * 4 + c4];
        __syncwarp();
        if (m_ok) {
#pragma unroll 4
          for (int col = 0; col < 16; ++col) {
            const int nn = n0 + jc * 4 * Cfg::TPN + wc + col;
            if (nn < p.kpg) direct::store_output(yp + nn * p.ys[1], e[lane][col], alpha, beta);
          }
        }
      }
    }
  } else {
    // One column per thread (the 256 x 8 tile): straight from registers.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + (i / 4) * 4 * TPM + tm * 4 + i % 4;
      if (m >= p.M) continue;
      int n, o, pp, q;
      decode_pixel(p, m, &n, &o, &pp, &q);
      float* yp = y + n * p.ys[0] + o * p.ys[2] + pp * p.ys[3] + q * p.ys[4] + int64_t(g) * p.kpg * p.ys[1];
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int nn = n0 + j * Cfg::TPN + tn;
        if (nn < p.kpg) direct::store_output(yp + nn * p.ys[1], acc[i][j], alpha, beta);
      }
    }
  }
}

template <class Cfg, int kMode>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks)
    igemm_kernel(Params p, const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                 const longlong2* __restrict__ toff, const int4* __restrict__ ttap, float alpha, float beta,
                 int a_channel_fast, int a_vec4) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, TM = Cfg::TM, TN = Cfg::TN, TPM = Cfg::TPM;
  constexpr int AS = Cfg::AS, BS = Cfg::BS;
  constexpr int kALoads = Cfg::kALoads, kBLoads = Cfg::kBLoads;
  __shared__ __align__(16) float As[2][kBK][AS];  // (k, pixel) slices of A
  __shared__ __align__(16) float Bs[2][kBK][BS];  // (k, channel) slices of B

  const int tid = threadIdx.x;
  const int g = blockIdx.z;
  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;

  // ---- staging roles. A: one pixel, kALoads reduction slots (a_roles).
  const ARoles ar = a_roles<Cfg>(tid, a_channel_fast);
  const int a_m = ar.m, a_k0 = ar.k0, a_kstep = ar.kstep;
  const int am = m0 + a_m;
  const bool a_pixel = am < p.M;
  int64_t x_base;  // x[n, g*C/G, 0, 0, 0]
  int d0, h0, w0;  // input coordinates of tap (0, 0, 0)
  {
    int n, o, pp, q;
    decode_pixel(p, a_pixel ? am : 0, &n, &o, &pp, &q);
    x_base = n * p.xs[0] + int64_t(g) * p.cpg * p.xs[1];
    tap0_coords(p, o, pp, q, &d0, &h0, &w0);
  }
  // x[n, g*C/G, d0, h0, w0] (may lie in the padding: only offsets from it that pass the bounds
  // check are dereferenced). The PRECOMP table offsets are relative to it.
  const int64_t x_pix = x_base + d0 * p.xs[2] + h0 * p.xs[3] + w0 * p.xs[4];
  // B: reduction slot b_k, channels b_n + j * (kThreads / kBK).
  constexpr int kBRowStep = kThreads / kBK;
  const int b_k = tid % kBK;
  const int b_n = tid / kBK;
  const int64_t w_base = (int64_t(g) * p.kpg + n0 + b_n) * p.ws[0];  // w[g*K/G + n0 + b_n, 0, 0, 0, 0]
  const int64_t w_step = kBRowStep * p.ws[0];

  // ---- compute roles: warp = 8 x 4 patch of the TPM x TPN thread grid.
  const int warp = tid / 32, lane = tid % 32;
  const int tm = (warp % (TPM / 8)) * 8 + lane % 8;
  const int tn = (warp / (TPM / 8)) * 4 + lane / 8;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  float a_reg[kALoads], b_reg[kBLoads];
  // The A slots of one (pixel, tap) for the channel-block modes: x[x_off + channel], zero when the tap
  // falls outside the input (ok false) or past C/G. With NHWC, C/G % 8 == 0 and 16-byte aligned
  // pixels (host-checked, a_vec4), the thread's kALoads slots are adjacent channels inside one
  // channel block, so always < C/G: one float4 per 4.
  const auto stage_a_channels = [&](bool ok, int64_t x_off, int c0) {
    if (kALoads % 4 == 0 && a_vec4) {
#pragma unroll
      for (int v = 0; v < kALoads / 4; ++v) {
        const float4 f = ok ? __ldg(reinterpret_cast<const float4*>(x + x_off + c0 + a_k0 + 4 * v))
                            : make_float4(0.f, 0.f, 0.f, 0.f);
        a_reg[4 * v + 0] = f.x, a_reg[4 * v + 1] = f.y, a_reg[4 * v + 2] = f.z, a_reg[4 * v + 3] = f.w;
      }
    } else {
#pragma unroll
      for (int j = 0; j < kALoads; ++j) {
        const int c = c0 + a_k0 + j * a_kstep;
        a_reg[j] = (ok && c < p.cpg) ? __ldg(x + x_off + c * p.xs[1]) : 0.f;
      }
    }
  };

  // kTapBlock state: channel block c0 of tap (t, r, s).
  int c0 = 0, t = 0, r = 0, s = 0;
  const int taps = p.T * p.R * p.S;
  // kFlat / kTable state: reduction index of the step.
  int k0 = 0;
  static_assert(kMode != kTapTable, "the per-tap PRECOMP mode runs precomp_async_kernel");
  constexpr bool kBlocked = kMode == kTapBlock;  // (channel block, tap) steps
  const int steps = kBlocked ? taps * ((p.cpg + kBK - 1) / kBK) : (p.kgemm + kBK - 1) / kBK;

  // kFlat: reduction index k -> (c, t, r, s), no division instruction.
  auto decode = [&](int k, int* c, int* tt, int* rr, int* ss) {
    const int tap = p.div_cpg.divmod(k, c);
    const int rt = p.div_S.divmod(tap, ss);
    *tt = p.div_R.divmod(rt, rr);
  };

  // Global -> registers for the current step.
  auto load = [&]() {
    if constexpr (kMode == kTable) {
#pragma unroll
      for (int j = 0; j < kALoads; ++j) {
        const int k = k0 + a_k0 + j * a_kstep;
        const int4 tp = __ldg(ttap + k);
        const int d = d0 + tp.x, h = h0 + tp.y, wi = w0 + tp.z;
        const bool ok = a_pixel && tp.w != 0 && unsigned(d) < unsigned(p.D) && unsigned(h) < unsigned(p.H) &&
                        unsigned(wi) < unsigned(p.W);
        a_reg[j] = ok ? __ldg(x + x_pix + __ldg(&toff[k].x)) : 0.f;
      }
      const int k = k0 + b_k;
      const bool k_ok = __ldg(&ttap[k].w) != 0;
      const int64_t w_off = __ldg(&toff[k].y);
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const bool in = Cfg::kBElems >= kThreads || tid + j * kThreads < Cfg::kBElems;
        const int n = n0 + b_n + j * kBRowStep;
        b_reg[j] = (in && k_ok && n < p.kpg) ? __ldg(w + w_base + j * w_step + w_off) : 0.f;
      }
    } else if constexpr (kMode == kFlat) {
#pragma unroll
      for (int j = 0; j < kALoads; ++j) {
        const int k = k0 + a_k0 + j * a_kstep;
        float v = 0.f;
        if (a_pixel && k < p.kgemm) {
          int c, tt, rr, ss;
          decode(k, &c, &tt, &rr, &ss);
          const int d = d0 + tt * p.dil_d, h = h0 + rr * p.dil_h, wi = w0 + ss * p.dil_w;
          if (unsigned(d) < unsigned(p.D) && unsigned(h) < unsigned(p.H) && unsigned(wi) < unsigned(p.W))
            v = __ldg(x + x_base + c * p.xs[1] + d * p.xs[2] + h * p.xs[3] + wi * p.xs[4]);
        }
        a_reg[j] = v;
      }
      const int k = k0 + b_k;
      const bool k_ok = k < p.kgemm;
      int64_t w_off = 0;
      if (k_ok) {
        int c, tt, rr, ss;
        decode(k, &c, &tt, &rr, &ss);
        if (p.flip) tt = p.T - 1 - tt, rr = p.R - 1 - rr, ss = p.S - 1 - ss;
        w_off = c * p.ws[1] + tt * p.ws[2] + rr * p.ws[3] + ss * p.ws[4];
      }
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const bool in = Cfg::kBElems >= kThreads || tid + j * kThreads < Cfg::kBElems;
        const int n = n0 + b_n + j * kBRowStep;
        b_reg[j] = (in && k_ok && n < p.kpg) ? __ldg(w + w_base + j * w_step + w_off) : 0.f;
      }
    } else {
      const int d = d0 + t * p.dil_d, h = h0 + r * p.dil_h, wi = w0 + s * p.dil_w;
      const bool ok =
          a_pixel && unsigned(d) < unsigned(p.D) && unsigned(h) < unsigned(p.H) && unsigned(wi) < unsigned(p.W);
      const int64_t x_off = x_base + d * p.xs[2] + h * p.xs[3] + wi * p.xs[4];  // x[n, g*C/G, d, h, wi]
      stage_a_channels(ok, x_off, c0);
      const int tf = p.flip ? p.T - 1 - t : t, rf = p.flip ? p.R - 1 - r : r, sf = p.flip ? p.S - 1 - s : s;
      const int c = c0 + b_k;
      const int64_t w_off = c * p.ws[1] + tf * p.ws[2] + rf * p.ws[3] + sf * p.ws[4];
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const bool in = Cfg::kBElems >= kThreads || tid + j * kThreads < Cfg::kBElems;
        const int n = n0 + b_n + j * kBRowStep;
        b_reg[j] = (in && c < p.cpg && n < p.kpg) ? __ldg(w + w_base + j * w_step + w_off) : 0.f;
      }
    }
  };
  auto advance = [&]() {
    if constexpr (kMode != kTapBlock) {
      k0 += kBK;
    } else {
      // Channel block outer, tap inner: consecutive steps read the same 32-byte sectors of a
      // KCRS filter (taps adjacent) and of NCHW x rows (shifted by one tap), so they hit L1;
      // tap-outer order would come back to them only after C/G/8 steps.
      if (++s == p.S) {
        s = 0;
        if (++r == p.R) {
          r = 0;
          if (++t == p.T) {
            t = 0;
            c0 += kBK;
          }
        }
      }
    }
  };
  // Registers -> shared buffer b.
  auto store = [&](int b) {
#pragma unroll
    for (int j = 0; j < kALoads; ++j) As[b][a_k0 + j * a_kstep][a_m] = a_reg[j];
#pragma unroll
    for (int j = 0; j < kBLoads; ++j)
      if (Cfg::kBElems >= kThreads || tid + j * kThreads < Cfg::kBElems) Bs[b][b_k][b_n + j * kBRowStep] = b_reg[j];
  };

  load();
  store(0);
  __syncthreads();
  int buf = 0;
  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    if (more) {
      advance();
      load();  // in flight while the FMAs below run
    }
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buf][kk][i * 4 * TPM + tm * 4]);
        a[4 * i + 0] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
      }
      if constexpr (TN % 4 == 0) {
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
          const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][kk][j * 4 * Cfg::TPN + tn * 4]);
          b[4 * j + 0] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
      } else {
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = Bs[buf][kk][j * Cfg::TPN + tn];
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) store(buf ^ 1);  // buf ^ 1 was last read before the previous barrier
    __syncthreads();
    buf ^= 1;
  }

  // ---- epilogue; beta == 0 never reads y.
  if constexpr (TN % 4 == 0) {
    __shared__ EpiBuffer epi;
    store_tile<Cfg>(p, y, acc, m0, n0, g, warp, lane, tm, tn, alpha, beta, &epi);
  } else {
    store_tile<Cfg>(p, y, acc, m0, n0, g, warp, lane, tm, tn, alpha, beta, nullptr);
  }
}

// ---- implicit_precomp_gemm with whole channel blocks (C/G % 8 == 0): the per-tap table mode.
//
// The same block / thread tiles, reduction order (channel block outer, tap inner) and epilogue
// as igemm_kernel, but the operands travel global -> shared by cp.async through a ring of
// kAsyncStages shared buffers (kAsyncStages - 1 steps in flight, no registers held for them, no
// shared stores), and the per-step address work is what the table leaves: one broadcast read of
// the step's tap entry, three adds and compares for the padding test of the thread's pixel, and
// one pointer add per copy. A copy that falls in the padding (or past the last pixel / channel)
// is a zero-fill (cp.async src-size 0), so no predicate reaches the FMA loop.
constexpr int kAsyncStages = 4;

__device__ __forceinline__ void cp_async4_zfill(unsigned dst, const float* src, bool ok) {
  // src-size 0 writes four zero bytes and reads nothing; `src` is still a valid address.
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_async16(unsigned dst, const float* src) {  // L2 only: B is read once per block
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Shared memory of precomp_async_kernel: the ring, reused by the epilogue's transpose buffers
// once every warp has left the main loop.
template <class Cfg>
struct AsyncSmem {
  static constexpr int kAStage = kBK * Cfg::AS, kBStage = kBK * Cfg::BS;  // floats per stage
  static constexpr int kRing = kAsyncStages * (kAStage + kBStage);
  static constexpr int kEpi = int(sizeof(EpiBuffer) / sizeof(float));
  static constexpr int kFloats = kRing > kEpi ? kRing : kEpi;
};

template <class Cfg>
__global__ void __launch_bounds__(kThreads, Cfg::kMinBlocks)
    precomp_async_kernel(Params p, const float* __restrict__ x, const float* __restrict__ wt, float* __restrict__ y,
                         const longlong2* __restrict__ toff, const int4* __restrict__ ttap, int kpg4, float alpha,
                         float beta, int a_channel_fast) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, TM = Cfg::TM, TN = Cfg::TN, TPM = Cfg::TPM;
  constexpr int AS = Cfg::AS, BS = Cfg::BS;
  constexpr int kALoads = Cfg::kALoads;
  using Sm = AsyncSmem<Cfg>;
  __shared__ __align__(16) float smem[Sm::kFloats];
  float* const as = smem;                                 // [kAsyncStages][kBK][AS]: (k, pixel)
  float* const bs = smem + kAsyncStages * Sm::kAStage;    // [kAsyncStages][kBK][BS]: (k, channel)

  const int tid = threadIdx.x;
  const int g = blockIdx.z;
  const int m0 = blockIdx.x * BM;
  const int n0 = blockIdx.y * BN;

  // ---- copy roles (igemm_kernel's, a_roles). A: pixel a_m, slots a_k0 + j * a_kstep of the
  // step's 8 channels.
  const ARoles ar = a_roles<Cfg>(tid, a_channel_fast);
  const int a_m = ar.m, a_k0 = ar.k0, a_kstep = ar.kstep;
  const bool a_pixel = m0 + a_m < p.M;
  // x[n, g*C/G + c0 + a_k0, d0, h0, w0] for the channel block c0 being issued (maybe in the padding:
  // only offsets that pass the test are read).
  int64_t x_pix;
  int d0, h0, w0;  // input coordinates of tap (0, 0, 0)
  {
    int n, o, pp, q;
    decode_pixel(p, a_pixel ? m0 + a_m : 0, &n, &o, &pp, &q);
    tap0_coords(p, o, pp, q, &d0, &h0, &w0);
    x_pix = n * p.xs[0] + (int64_t(g) * p.cpg + a_k0) * p.xs[1] + d0 * p.xs[2] + h0 * p.xs[3] + w0 * p.xs[4];
  }
  const int64_t a_jstep = int64_t(a_kstep) * p.xs[1];  // between a thread's A slots
  const int64_t x_safe = int64_t(a_k0) * p.xs[1];     // x[0, a_k0, 0, 0, 0]
  // B: the step's 8 x BN tile of the re-laid-out filter (setup kernel: step-major, row = channel
  // in block, K/G padded to kpg4 with zeros) is 8 contiguous row pieces: float4 copies, vector
  // b_v = tid + j * kThreads of kBVecs, row b_v / (BN / 4), columns 4 * (b_v % (BN / 4)) + 0..3.
  // kpg4 % 4 == 0, so a vector is wholly inside the padded row or wholly past it (tail blocks);
  // the latter are never copied and their slots are zeroed below.
  constexpr int kBVecs = kBK * BN / 4;
  constexpr int kBCopies = (kBVecs + kThreads - 1) / kThreads;
  const int b_row = tid / (BN / 4), b_col = 4 * (tid % (BN / 4));  // of copy 0; copy j adds j * kThreads vectors
  constexpr int kBRowsPerRound = kThreads / (BN / 4) > 0 ? kThreads / (BN / 4) : 1;
  static_assert(kBCopies == 1 || (BN / 4) * kBRowsPerRound == kThreads, "copy rounds tile whole rows");
  const bool b_col_ok = n0 + b_col < kpg4;  // the same column in every copy round
  unsigned b_ok = 0;                        // bit j: copy j exists and names a real (padded) column
#pragma unroll
  for (int j = 0; j < kBCopies; ++j)
    if ((kBVecs % kThreads == 0 || tid + j * kThreads < kBVecs) && b_col_ok) b_ok |= 1u << j;
  // wt + this thread's first element of the step being issued (group g, step 0).
  const float* wb = wt + (int64_t(g) * p.cpg * (p.T * p.R * p.S) + b_row) * kpg4 + n0 + b_col;
  const int64_t wb_step = int64_t(kBK) * kpg4;                  // between steps
  const int64_t wb_jstep = int64_t(kBRowsPerRound) * kpg4;      // between copy rounds

  // Shared byte addresses of this thread's copy destinations in stage 0.
  const unsigned a_dst = unsigned(__cvta_generic_to_shared(as)) + 4u * unsigned(a_k0 * AS + a_m);
  const unsigned b_dst = unsigned(__cvta_generic_to_shared(bs)) + 4u * unsigned(b_row * BS + b_col);
  // The B slots of columns past the padded K/G (tail blocks) are never copied: zero them in every
  // stage once (visible to all threads after the main loop's first barrier).
#pragma unroll
  for (int j = 0; j < kBCopies; ++j) {
    const bool in = kBVecs % kThreads == 0 || tid + j * kThreads < kBVecs;
    if (in && !((b_ok >> j) & 1u))
#pragma unroll
      for (int st = 0; st < kAsyncStages; ++st)
        *reinterpret_cast<float4*>(bs + st * Sm::kBStage + (b_row + j * kBRowsPerRound) * BS + b_col) =
            make_float4(0.f, 0.f, 0.f, 0.f);
  }

  // ---- issue side: the next step to fetch is tap i_tap of the channel block that x_pix has been
  // advanced to; wb points into its B tile.
  const int taps = p.T * p.R * p.S;
  const int steps = taps * (p.cpg / kBK);
  int i_tap = 0;
  // The entry of tap i_tap, loaded one issue ahead so that its latency is not on the issue path.
  int4 tp = __ldg(ttap);  // {t*dd, r*dh, s*dw, 1}: the same entry in every thread
  int64_t x_tap = __ldg(&toff[0].x);
  const auto issue = [&](int stage) {
    const bool ok = a_pixel && unsigned(d0 + tp.x) < unsigned(p.D) && unsigned(h0 + tp.y) < unsigned(p.H) &&
                    unsigned(w0 + tp.z) < unsigned(p.W);
    // In the padding the copies read nothing (src-size 0) but still name real elements: channels
    // a_k0 + j * a_kstep < 8 <= C/G of x's first pixel (x_safe).
    const float* xa = x + (ok ? x_pix + x_tap : x_safe);
    const unsigned sa = a_dst + unsigned(stage * Sm::kAStage * 4);
#pragma unroll
    for (int j = 0; j < kALoads; ++j) cp_async4_zfill(sa + unsigned(j * a_kstep * AS * 4), xa + j * a_jstep, ok);
    const unsigned sb = b_dst + unsigned(stage * Sm::kBStage * 4);
#pragma unroll
    for (int j = 0; j < kBCopies; ++j)
      if ((b_ok >> j) & 1u) cp_async16(sb + unsigned(j * kBRowsPerRound * BS * 4), wb + j * wb_jstep);
    wb += wb_step;
    if (++i_tap == taps) {  // channel block outer, tap inner (see igemm_kernel's kTapBlock)
      i_tap = 0;
      x_pix += kBK * p.xs[1];
    }
    tp = __ldg(ttap + i_tap);
    x_tap = __ldg(&toff[i_tap].x);
  };

  // ---- compute roles: warp = 8 x 4 patch of the TPM x TPN thread grid.
  const int warp = tid / 32, lane = tid % 32;
  const int tm = (warp % (TPM / 8)) * 8 + lane % 8;
  const int tn = (warp / (TPM / 8)) * 4 + lane / 8;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  // Prologue: kAsyncStages - 1 steps in flight. Every thread commits one group per step slot,
  // empty or not, so that wait_group's count always refers to the step about to be used.
#pragma unroll
  for (int st = 0; st < kAsyncStages - 1; ++st) {
    if (st < steps) issue(st);
    cp_async_commit();
  }
  int rd = 0;  // stage of step `step`; the issue below fills the one before it (read in step - 1)
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<kAsyncStages - 2>();  // this thread's copies of step `step` have landed...
    __syncthreads();                    // ...and everyone's; the stage read in step - 1 is free
    if (step + kAsyncStages - 1 < steps) issue(rd == 0 ? kAsyncStages - 1 : rd - 1);
    cp_async_commit();
    const float* sa = as + rd * Sm::kAStage;
    const float* sb = bs + rd * Sm::kBStage;
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; ++i) {
        const float4 v = *reinterpret_cast<const float4*>(sa + kk * AS + i * 4 * TPM + tm * 4);
        a[4 * i + 0] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
      }
      if constexpr (TN % 4 == 0) {
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
          const float4 v = *reinterpret_cast<const float4*>(sb + kk * BS + j * 4 * Cfg::TPN + tn * 4);
          b[4 * j + 0] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
      } else {
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = sb[kk * BS + j * Cfg::TPN + tn];
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    rd = rd == kAsyncStages - 1 ? 0 : rd + 1;
  }
  cp_async_wait<0>();  // only empty groups can be pending; keep the invariant explicit
  __syncthreads();     // every warp is done with the ring: the epilogue reuses it

  store_tile<Cfg>(p, y, acc, m0, n0, g, warp, lane, tm, tn, alpha, beta,
                  TN % 4 == 0 ? reinterpret_cast<EpiBuffer*>(smem) : nullptr);
}

// ---------------------------------------------------------------- host side

// True when every coordinate the kernel forms along one dimension fits comfortably in int32:
// out * stride + pad and (filt - 1) * dil + in stay below 2^30. Each factor is bounded first so
// the products cannot overflow int64.
bool coords_fit(int64_t in, int64_t out, int64_t filt, int stride, int pad, int dil) {
  constexpr int64_t kLim = int64_t(1) << 30;
  if (in >= kLim || out >= kLim || filt >= kLim || stride >= kLim || pad >= kLim || dil >= kLim) return false;
  return out * stride + pad < kLim && (filt - 1) * dil + in + pad < kLim;
}

const char* check_problem(const ConvProblem& p) {
  if (p.dtype != JHDNN_DATA_FLOAT)
    return "FLOAT data only (the FMA implicit GEMM; HALF / BFLOAT16 / DOUBLE are not instantiated)";
  if (const char* why = direct::check_common(p, /*allow_double=*/false)) return why;
  // Any math type is served: full fp32 FMA is at least as accurate as TF32 would be.
  constexpr int64_t kMaxRows = int64_t(INT_MAX) - 1024;  // m0 + BM stays in int32
  if (p.N > kMaxRows || p.O > kMaxRows || p.P > kMaxRows || p.Q > kMaxRows ||
      p.N * p.O > kMaxRows || p.N * p.O * p.P > kMaxRows || p.N * p.O * p.P * p.Q > kMaxRows)
    return "N*O*P*Q (GEMM rows) must be below 2^31 - 1024 (32-bit pixel index)";
  if (p.C > kMaxRows || p.K > kMaxRows || p.T > kMaxRows || p.R > kMaxRows || p.S > kMaxRows ||
      p.c_per_group() * p.T > kMaxRows || p.c_per_group() * p.T * p.R > kMaxRows ||
      p.reduction() > kMaxRows)
    return "(C/G)*T*R*S (GEMM reduction) must be below 2^31 - 1024 (32-bit reduction index)";
  // Both factors are below 2^31 here. Bounds the PRECOMP workspace (the re-laid-out filter,
  // K/G padded to 4 per group: at most 4x this) far from size_t overflow; no real filter is near.
  if (p.K * p.reduction() >= (int64_t(1) << 40)) return "K*(C/G)*T*R*S (filter elements) must be below 2^40";
  if (!coords_fit(p.D, p.O, p.T, p.stride_d, p.pad_d, p.dil_d) ||
      !coords_fit(p.H, p.P, p.R, p.stride_h, p.pad_h, p.dil_h) ||
      !coords_fit(p.W, p.Q, p.S, p.stride_w, p.pad_w, p.dil_w))
    return "a spatial coordinate (size, stride * output size, pad or dilated filter extent) reaches 2^30 "
           "(32-bit coordinates)";
  if (p.G > 65535) return "more than 65535 groups (grid z)";
  if (p.k_per_group() > 65535 * 8) return "K/G above 524280 (grid y of the narrowest tile)";
  return nullptr;
}

Params make_params(const ConvProblem& p) {
  Params k{};
  k.M = int(p.N * p.O * p.P * p.Q);
  k.O = int(p.O), k.P = int(p.P), k.Q = int(p.Q);
  k.D = int(p.D), k.H = int(p.H), k.W = int(p.W);
  k.T = int(p.T), k.R = int(p.R), k.S = int(p.S);
  k.cpg = int(p.c_per_group()), k.kpg = int(p.k_per_group());
  k.kgemm = int(p.reduction());
  k.pad_d = p.pad_d, k.pad_h = p.pad_h, k.pad_w = p.pad_w;
  k.stride_d = p.stride_d, k.stride_h = p.stride_h, k.stride_w = p.stride_w;
  k.dil_d = p.dil_d, k.dil_h = p.dil_h, k.dil_w = p.dil_w;
  k.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  for (int i = 0; i < 5; ++i) k.xs[i] = p.x_stride[i], k.ws[i] = p.w_stride[i], k.ys[i] = p.y_stride[i];
  k.div_cpg = FastDivmod(k.cpg);
  k.div_S = FastDivmod(k.S);
  k.div_R = FastDivmod(k.R);
  k.div_Q = FastDivmod(k.Q);
  k.div_P = FastDivmod(k.P);
  k.div_O = FastDivmod(k.O);
  return k;
}

enum class Pick { k128x128, k128x64, k64x64, k256x8 };

template <class Cfg>
int64_t blocks_of(const ConvProblem& p) {
  const int64_t M = p.N * p.O * p.P * p.Q;
  return ((M + Cfg::BM - 1) / Cfg::BM) * ((p.k_per_group() + Cfg::BN - 1) / Cfg::BN) * p.G;
}

// set_precomp_per_element_table: PRECOMP takes the per-reduction-index table even for whole
// channel blocks.
std::atomic<bool> g_precomp_per_element{false};

// A forced tile shape: JHDNN_IGEMM_TILE=128x128|128x64|64x64|256x8, read once by core::config
// (benchmarks and experiments), or config::set_igemm_tile (tests, which run every shape on small
// problems that would otherwise always get the small tiles). Any shape is correct for any problem;
// only the speed differs. config's tile names are in Pick's order.
static_assert(core::config::kIgemmTileCount == 4 && int(Pick::k256x8) == 3, "config tile names follow Pick");
bool forced_tile(Pick* out) {
  const int f = core::config::igemm_tile();
  if (f < 0) return false;
  *out = Pick(f);
  return true;
}

// Widest tile the channel count fills; stepped down while the grid would leave SMs idle (a
// 128 x 128 tile on ResNet's 7x7 layers makes 52 blocks for 132 SMs).
Pick pick_tile(const ConvProblem& p, int sm_count) {
  Pick forced;
  if (forced_tile(&forced)) return forced;
  const int64_t kpg = p.k_per_group();
  if (kpg < 24) return Pick::k256x8;
  if (kpg >= 96 && blocks_of<Tile128x128>(p) >= sm_count) return Pick::k128x128;
  if (blocks_of<Tile128x64>(p) >= sm_count) return Pick::k128x64;
  return Pick::k64x64;
}

int current_sm_count() {
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 132;  // only steers the tile choice
  }
  return n;
}

// PRECOMP workspace: the table, kpad entries of 32 bytes, plus 16 bytes to align a user pointer
// up; with whole channel blocks (the per-tap mode) also the re-laid-out filter after it,
// G * (C/G) * T*R*S rows of kpg4 floats (precomp_tap_setup_kernel).
int64_t table_entries(const ConvProblem& p) { return (p.reduction() + kBK - 1) / kBK * kBK; }
int64_t padded_kpg(const ConvProblem& p) { return (p.k_per_group() + 3) / 4 * 4; }
bool whole_channel_blocks(const ConvProblem& p) { return p.c_per_group() % kBK == 0; }
size_t workspace_of(const ConvProblem& p) {
  size_t bytes = size_t(table_entries(p)) * (sizeof(longlong2) + sizeof(int4)) + 16;
  if (whole_channel_blocks(p)) bytes += size_t(p.G * p.reduction() * padded_kpg(p)) * sizeof(float);
  return bytes;
}

template <class Cfg, int kMode>
Status launch_tile(const ConvProblem& p, const Params& k, const ConvArgs& a, const longlong2* off, const int4* tap,
                   const float* wt, int kpg4, cudaStream_t stream) {
  const dim3 grid(unsigned((k.M + Cfg::BM - 1) / Cfg::BM), unsigned((k.kpg + Cfg::BN - 1) / Cfg::BN), unsigned(p.G));
  if (grid.y > 65535) {  // only reachable with a forced wide-K tile shape on a huge K/G
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "implicit gemm: K/G too large for grid y with this tile shape");
  }
  const int channel_fast = p.x_stride[1] == 1 && p.C > 1 ? 1 : 0;
  if constexpr (kMode == kTapTable) {
    precomp_async_kernel<Cfg><<<grid, kThreads, 0, stream>>>(k, static_cast<const float*>(a.x), wt,
                                                              static_cast<float*>(a.y), off, tap, kpg4,
                                                              float(a.alpha), float(a.beta), channel_fast);
    JHDNN_LAUNCH_CHECK();
    return Status::success();
  } else {
    // float4 staging of A (kTapBlock only): channels innermost and every pixel's channel run
    // 16-byte aligned: x aligned, the other strides and C/G multiples of 4 (blocks start at
    // c0 % 8 == 0).
    const bool vec4 = kMode == kTapBlock && channel_fast && p.c_per_group() % kBK == 0 &&
                      reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && p.x_stride[0] % 4 == 0 &&
                      p.x_stride[2] % 4 == 0 && p.x_stride[3] % 4 == 0 && p.x_stride[4] % 4 == 0;
    igemm_kernel<Cfg, kMode><<<grid, kThreads, 0, stream>>>(
        k, static_cast<const float*>(a.x), static_cast<const float*>(a.w), static_cast<float*>(a.y), off, tap,
        float(a.alpha), float(a.beta), channel_fast, vec4 ? 1 : 0);
    JHDNN_LAUNCH_CHECK();
    return Status::success();
  }
}

// wt, kpg4: the re-laid-out filter of the per-tap PRECOMP mode (kTapTable only).
template <int kMode>
Status launch(const ConvProblem& p, const ConvArgs& a, const longlong2* off, const int4* tap, cudaStream_t stream,
              const float* wt = nullptr, int kpg4 = 0) {
  const Params k = make_params(p);
  switch (pick_tile(p, current_sm_count())) {
    case Pick::k128x128: return launch_tile<Tile128x128, kMode>(p, k, a, off, tap, wt, kpg4, stream);
    case Pick::k128x64: return launch_tile<Tile128x64, kMode>(p, k, a, off, tap, wt, kpg4, stream);
    case Pick::k64x64: return launch_tile<Tile64x64, kMode>(p, k, a, off, tap, wt, kpg4, stream);
    case Pick::k256x8: break;
  }
  return launch_tile<Tile256x8, kMode>(p, k, a, off, tap, wt, kpg4, stream);
}

template <int kMode>
Status load_all() {
  if constexpr (kMode == kTapTable) {
    return direct::load_kernels(precomp_async_kernel<Tile128x128>, precomp_async_kernel<Tile128x64>,
                                precomp_async_kernel<Tile64x64>, precomp_async_kernel<Tile256x8>);
  } else {
    return direct::load_kernels(igemm_kernel<Tile128x128, kMode>, igemm_kernel<Tile128x64, kMode>,
                                igemm_kernel<Tile64x64, kMode>, igemm_kernel<Tile256x8, kMode>);
  }
}

class ImplicitGemmSolver final : public ConvSolver {
 public:
  const char* name() const override { return "implicit_gemm"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM; }
  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    if (const char* why = check_problem(p)) return Verdict::no(why);
    return Verdict::yes();
  }
  size_t workspace_bytes(const ConvProblem&) const override { return 0; }
  Status run(const ConvProblem& p, const ConvArgs& a, void*, size_t, cudaStream_t stream) const override {
    if (const char* why = check_problem(p)) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "implicit_gemm: %s", why);
    if (!a.x || !a.w || !a.y)
      return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "implicit_gemm: x, w or y is null");
    // Whole channel blocks: counters, one bounds check per step. Otherwise a block would be
    // partly padding (C/G = 3: 5/8 wasted), so the flat reduction with fast division instead.
    if (p.c_per_group() % kBK == 0) return launch<kTapBlock>(p, a, nullptr, nullptr, stream);
    return launch<kFlat>(p, a, nullptr, nullptr, stream);
  }
  Status load_kernels() const override {
    JHDNN_TRY(load_all<kTapBlock>());
    return load_all<kFlat>();
  }
};

class ImplicitPrecompGemmSolver final : public ConvSolver {
 public:
  const char* name() const override { return "implicit_precomp_gemm"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }
  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    if (const char* why = check_problem(p)) return Verdict::no(why);
    return Verdict::yes();
  }
  size_t workspace_bytes(const ConvProblem& p) const override { return check_problem(p) ? 0 : workspace_of(p); }
  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    if (const char* why = check_problem(p))
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "implicit_precomp_gemm: %s", why);
    if (!a.x || !a.w || !a.y)
      return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "implicit_precomp_gemm: x, w or y is null");
    const size_t need = workspace_of(p);
    if (ws == nullptr || ws_bytes < need)
      return core::fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT,
                        "implicit_precomp_gemm: workspace of %zu bytes < %zu needed for the offset table%s", ws_bytes,
                        need, whole_channel_blocks(p) ? " and the re-laid-out filter" : "");
    // The table: off[kpad] then tap[kpad], from the first 16-byte boundary of ws.
    const uintptr_t base = (reinterpret_cast<uintptr_t>(ws) + 15) & ~uintptr_t(15);
    const int64_t kpad = table_entries(p);
    auto* off = reinterpret_cast<longlong2*>(base);
    auto* tap = reinterpret_cast<int4*>(off + kpad);
    const Params k = make_params(p);
    // Whole channel blocks: a per-tap table (T*R*S entries <= kpad), the filter re-laid out
    // after the table, and precomp_async_kernel (kTapBlock's reduction order). Otherwise (or when
    // forced, for the tests) one entry per reduction index and igemm_kernel.
    const bool per_tap = whole_channel_blocks(p) && !g_precomp_per_element.load(std::memory_order_relaxed);
    if (per_tap) {
      auto* wt = reinterpret_cast<float*>(tap + kpad);  // 16-byte aligned: kpad * 32 bytes in
      const int kpg4 = int(padded_kpg(p));
      const dim3 grid(unsigned(p.G * (p.c_per_group() / kBK)), unsigned((kpg4 + 31) / 32));  // y <= 16384
      precomp_tap_setup_kernel<<<grid, kSetupThreads, 0, stream>>>(k, off, tap, static_cast<const float*>(a.w), wt,
                                                                   kpg4);
      JHDNN_LAUNCH_CHECK();
      return launch<kTapTable>(p, a, off, tap, stream, wt, kpg4);
    }
    precomp_table_kernel<<<unsigned((kpad + kSetupThreads - 1) / kSetupThreads), kSetupThreads, 0, stream>>>(
        k, int(kpad), off, tap, 0);
    JHDNN_LAUNCH_CHECK();
    return launch<kTable>(p, a, off, tap, stream);
  }
  Status load_kernels() const override {
    JHDNN_TRY(direct::load_kernels(precomp_table_kernel, precomp_tap_setup_kernel));
    JHDNN_TRY(load_all<kTapTable>());
    return load_all<kTable>();
  }
};

}  // namespace

void set_precomp_per_element_table(bool on) { g_precomp_per_element.store(on); }

const char* tile_for(const ConvProblem& p, int sm_count) {
  return core::config::kIgemmTileNames[int(pick_tile(p, sm_count))];
}

}  // namespace igemm

const ConvSolver& implicit_gemm_solver() {
  static const auto& s = *new igemm::ImplicitGemmSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

const ConvSolver& implicit_precomp_gemm_solver() {
  static const auto& s = *new igemm::ImplicitPrecompGemmSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
