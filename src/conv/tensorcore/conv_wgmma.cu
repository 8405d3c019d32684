// tensorcore_wgmma: generation 2 of the Tensor Core convolution (sm_90a) -- the implicit GEMM of
// conv_mma.cu with Hopper's machinery: TMA bulk tensor copies into 128-byte-swizzled shared memory,
// an mbarrier pipeline, one producer and two consumer warpgroups issuing wgmma, and a persistent
// tile scheduler (the same block structure as src/gemm/tensorcore/gemm_wgmma.cu).
//
// The trick that makes TMA an implicit-GEMM loader: a block's 128 output pixels are a
// bw x bh x bn box of (q, p, n) (e.g. 16 x 8 x 1, or 8 x 8 x 2 for 7x7 maps). For filter tap
// (r, s) and a 64-channel (32 for fp32) slice starting at c0, the input pixels those outputs read
// form one box of the 4-D NHWC tensor x (dims C, W, H, N) at
//   (c0, q0*sw - pw + s*dw, p0*sh - ph + r*dh, n0)  with traversal strides (1, sw, sh, 1),
// and TMA zero-fills every element outside the tensor: padding, channel tails and tile tails come
// for free. The box lands as 128 rows (one per output pixel) of 128 bytes -- exactly the K-major,
// 128B-swizzled A tile wgmma reads. The filter slice is a box of the 3-D KRSC tensor w (dims C,
// R*S, K) at (c0, tap, k0). Reduction order: taps outer, channel slices inner.
#include "conv/tensorcore/tensorcore.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/mma_sm80.cuh"
#include "conv/tensorcore/tma_store_box.h"
#include "conv/tensorcore/wgmma_cursor.h"
#include "conv/tensorcore/wgmma_plan.h"
#include "core/sm90/ptx.cuh"
#include "core/sm90/tensor_map.h"
#include "core/sm90/wgmma.cuh"
#include "core/config.h"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace tensorcore {
namespace {

using namespace jhdnn::tc;

constexpr int kBM = kWgmmaTilePixels;    // output pixels per tile (2 consumer warpgroups x 64 rows)
constexpr int kRowBytes = kWgmmaStageRowBytes;  // reduction bytes per stage row (64 fp16/bf16, 32 fp32)
constexpr int kTileBytes = kBM * kRowBytes;  // the A (input) tile of one stage
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kPartStride = 128 + 8;      // floats per row of a split-K partial tile (padded: fewer bank conflicts)

// The three tile widths (output channels per tile):
//   BN =  64: m64n64 per consumer, 4 stages x 24 KiB = 97 KiB and ~70 registers, so TWO CTAs share
//             an SM: one's epilogue overlaps the other's main loop -- layers with K/G <= 64 (where
//             a 128-wide tile would be half empty) have short reductions and many tiles;
//   BN = 128: m64n128, 6 stages x 32 KiB, one CTA per SM -- the GPU-verified round-1 configuration;
//   BN = 256: m64n256, 4 stages x 48 KiB, one CTA per SM -- K/G >= 256: twice the FLOPs per byte
//             loaded of BN = 128 (128 accumulators per consumer thread, 154 registers, no spill).
// and the tile height BM (output pixels per tile):
//   BM = 128: two consumer warpgroups (64 rows each), 384 threads -- every configuration above;
//   BM =  64: one consumer warpgroup, 256 threads, with BN = 128 only: 4 stages x 24 KiB = 97 KiB,
//             so TWO CTAs share an SM -- small-M layers (README.md, "Round 6": ResNet-50's 7x7
//             conv5 layers) get twice as many tiles, each running its whole reduction, instead of
//             split-K with its exchange.
//   BM =  64 deep (kDeep, README.md "Round 9"): the same tile with 8 stages x 24 KiB = 193 KiB, ONE
//             CTA per SM -- for grids of at most #SMs such tiles, which run one CTA per SM anyway:
//             twice the stages, 7 instead of 3 stages of loads in flight (kStages - 1: one is
//             under the tensor core), for a pipeline whose TMA round trip, not its MMAs, may set
//             the pace (the A/B decides: bench_tensorcore wgmma_bm64_deep vs wgmma_bm64).
// TMA-store epilogue (README.md, "TMA store epilogue"; 16-bit outputs, BM 128, BN 128 / 256):
// kTmaBuffers buffers of 16 rows x 64 16-bit channels (2 KiB, 1024-byte aligned) per consumer warp,
// so a warp stages its next chunk while the TMA unit still reads the previous one.
constexpr int kTmaBuffers = 2;
constexpr int kTmaBufBytes = kTmaStoreRows * 128;

template <int BN, int BM = kBM, bool kDeep = false>
struct TileCfg {
  static_assert(BN == 64 || BN == 128 || BN == 256, "tile width");
  static_assert(BM == 128 || (BM == 64 && BN == 128), "64-pixel tiles are 128 channels wide");
  static_assert(!kDeep || (BM == 64 && BN == 128), "the deep pipeline is the 64 x 128 tile's");
  static constexpr int kCons = BM / 64;  // consumer warpgroups, 64 tile rows each
  static constexpr int kThreads = 128 * (1 + kCons);
  static constexpr int kTileBytes = BM * kRowBytes;  // the A (input) tile of one stage
  static constexpr int kStages = kDeep ? 8 : BN == 128 && BM == 128 ? 6 : 4;
  static constexpr int kCtasPerSm = !kDeep && (BN == 64 || BM == 64) ? 2 : 1;
  static constexpr int kStageBytes = kTileBytes + BN * kRowBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes + 1024;
  // Staged epilogue (README.md, "Staged epilogue"): each consumer warp owns a private buffer of
  // 16 rows x kChunkCols fp32 sums (64- or 128-byte rows, XOR-swizzled) behind the stage buffers;
  // the producer keeps prefetching the next tile into the stages meanwhile, so they cannot be reused.
  static constexpr int kChunkCols = BN == 64 ? 16 : 32;
  static constexpr int kChunkRowBytes = kChunkCols * 4;
  static constexpr int kWarpStageBytes = 16 * kChunkRowBytes;
  static constexpr int kStagingBytes = kCons * 4 * kWarpStageBytes;  // 8 KiB (BN 64 or BM 64) or 16 KiB
  static constexpr int smem_bytes(bool staged) { return kSmemBytes + (staged ? kStagingBytes : 0); }
  // TMA-store epilogue: kTmaBuffers x 2 KiB per consumer warp behind the stages (32 KiB for BM 128).
  static constexpr int smem_bytes_tma() { return kSmemBytes + kCons * 4 * kTmaBuffers * kTmaBufBytes; }
};
static_assert(2 * (TileCfg<64>::kSmemBytes + 2048) <= 228 * 1024, "two 64-wide CTAs fit in an SM's shared memory");
static_assert(2 * (TileCfg<64>::smem_bytes(true) + 2048) <= 228 * 1024, "two staged 64-wide CTAs fit in an SM");
static_assert(TileCfg<256>::smem_bytes(true) <= 227 * 1024 && TileCfg<128>::smem_bytes(true) <= 227 * 1024,
              "the staged one-CTA-per-SM configurations fit in a CTA's shared memory");
static_assert(TileCfg<256>::kSmemBytes == TileCfg<128>::kSmemBytes, "193 KiB for the one-CTA-per-SM configurations");
static_assert(TileCfg<128>::smem_bytes_tma() + 1024 <= 227 * 1024 && TileCfg<256>::smem_bytes_tma() + 1024 <= 227 * 1024,
              "the TMA-store configurations (193 + 32 KiB) fit in a CTA's shared memory, static barriers included");
static_assert((TileCfg<128>::kStages * TileCfg<128>::kStageBytes) % 1024 == 0 &&
                  (TileCfg<256>::kStages * TileCfg<256>::kStageBytes) % 1024 == 0 && kTmaBufBytes % 1024 == 0,
              "TMA-store buffers start 1024-byte aligned (the 128-byte swizzle pattern is taken from address bits 7..9)");
static_assert(2 * (TileCfg<128, 64>::smem_bytes(true) + 2048) <= 228 * 1024, "two staged 64 x 128 CTAs fit in an SM");
static_assert(TileCfg<128, 64, true>::kSmemBytes == TileCfg<128>::kSmemBytes &&
                  TileCfg<128, 64, true>::smem_bytes(true) + 1024 <= 227 * 1024,
              "the deep 64 x 128 CTA: 193 KiB of stages like the one-CTA-per-SM configurations (201 KiB staged)");
static_assert(TileCfg<128>::kThreads == kThreads && TileCfg<128>::kTileBytes == kTileBytes, "the split-K kernel's constants");
static_assert(kBM * kPartStride * 4 <= TileCfg<128>::kStages * TileCfg<128>::kStageBytes,
              "the split-K partial tile fits in the (drained) stage buffers");

struct WgParams {
  int N, P, Q, K;
  int bw, bh, bn;                 // pixel box: bw * bh * bn == kBM
  int tiles_q, tiles_p, tiles_img, tiles_k, num_tiles;
  int R, S, cblocks, kblocks;     // kblocks = R * S * cblocks
  int pad_h, pad_w, str_h, str_w, dil_h, dil_w, flip;
  int split;                      // split-K kernel: CTAs per cluster sharing one tile (2, 4 or 8); else 1
  int tile_base;                  // first tile of this launch: the kernels cover tiles [tile_base, num_tiles)
  int64_t ys[4];                  // y element strides: n, k, p, q
  float alpha, beta;
};

// Tile -> (image block, p block, q block, k block); k fastest, so blocks running together read
// the same input box (from L2) for different output channels.
template <int BN>
__device__ __forceinline__ void decode_tile(const WgParams& prm, int tile, int& n0, int& p0, int& q0, int& k0) {
  k0 = (tile % prm.tiles_k) * BN;
  tile /= prm.tiles_k;
  q0 = (tile % prm.tiles_q) * prm.bw;
  tile /= prm.tiles_q;
  p0 = (tile % prm.tiles_p) * prm.bh;
  n0 = (tile / prm.tiles_p) * prm.bn;
}

// Position in the ring of stages: the stage index and the parity of its current use (it flips each
// time the ring wraps). It replaces `it % kStages` and `(it / kStages) & 1` of a running counter:
// the producer thread is the pipeline's pacing element (README.md, "Round 5"), so its loop must not
// spend dependent integer divisions per block.
template <int kStages>
struct Ring {
  uint32_t st = 0, phase = 0;
  __device__ __forceinline__ void advance() {
    if (++st == uint32_t(kStages)) st = 0, phase ^= 1;
  }
};

// Producer (one thread): the TMA loads of reduction blocks [kb0, kb1) of one tile (reduction order
// kb = tap * cblocks + channel slice, taps s fastest, then r); `ring` carries the stage position
// across tiles. full0 / empty0: shared addresses of the barrier arrays (8 bytes per stage). The
// cursor (wgmma_cursor.h) divides once per tile and then only steps: this thread paces the whole
// pipeline (README.md, "Round 5"), so its loop holds no integer division.
template <class T, int BN, int BM = kBM, bool kDeep = false>
__device__ __forceinline__ void produce_tile(const CUtensorMap* map_x, const CUtensorMap* map_w, const WgParams& prm,
                                             uint32_t tiles, uint32_t full0, uint32_t empty0, int tile, int kb0,
                                             int kb1, Ring<TileCfg<BN, BM, kDeep>::kStages>& ring) {
  using Cfg = TileCfg<BN, BM, kDeep>;
  constexpr int kBK = kRowBytes / int(sizeof(T));
  if (kb0 >= kb1) return;
  int n0, p0, q0, k0;
  decode_tile<BN>(prm, tile, n0, p0, q0, k0);
  ReductionCursor cur;
  cur.start(kb0, kBK, prm.cblocks, prm.R, prm.S, q0 * prm.str_w - prm.pad_w, p0 * prm.str_h - prm.pad_h, prm.dil_w,
            prm.dil_h, prm.flip != 0);
  for (int kb = kb0; kb < kb1; ++kb) {
    const uint32_t fb = full0 + 8 * ring.st;
    sm90::mbar_wait_clock(empty0 + 8 * ring.st, ring.phase ^ 1);
    sm90::mbar_arrive_expect_tx(fb, Cfg::kStageBytes);
    const uint32_t sa = tiles + ring.st * Cfg::kStageBytes;
    sm90::tma_load_4d(sa, map_x, fb, cur.c0, cur.xw, cur.xh, n0);
    sm90::tma_load_3d(sa + Cfg::kTileBytes, map_w, fb, cur.c0, cur.wtap, k0);
    ring.advance();
    cur.step();
  }
}

// Consumer warpgroup cg: acc = the reduction blocks [kb0, kb1) of its 64 x BN half of the tile.
// One wgmma group stays in flight; a stage is released (its "empty" barrier) once the group that
// read it has completed. The shared-memory descriptors are built once: stage st and k-step k add
// (st * kStageBytes + k * kStep) >> 4 to the 14-bit start-address field (address >> 4). Every
// shared address is below 2^18 (228 KiB per SM), so the field never carries into the next one and
// the sum is exactly make_desc_k_sw128 of the stepped address.
template <class T, int BN, int BM = kBM, bool kDeep = false>
__device__ __forceinline__ void consume_tile(float (&acc)[BN / 2], uint32_t tiles, uint32_t full0, uint32_t empty0,
                                             int cg, int kb0, int kb1, Ring<TileCfg<BN, BM, kDeep>::kStages>& ring) {
  using Cfg = TileCfg<BN, BM, kDeep>;
  constexpr int kStep = 32;  // reduction bytes per wgmma
  static_assert(Cfg::smem_bytes(true) + 1024 < (1 << 18), "stage addresses stay inside the descriptor's 14-bit field");
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
  // The high word (stride fields, swizzle mode) is the same constant for every address; only the
  // low word (start address field, leading-byte-offset field) steps, in 32-bit adds.
  const uint32_t kDescHi = uint32_t(sm90::make_desc_k_sw128(0) >> 32);  // folded at compile time
  const uint32_t lo_a = uint32_t(sm90::make_desc_k_sw128(tiles + cg * 64 * kRowBytes));
  const uint32_t lo_b = uint32_t(sm90::make_desc_k_sw128(tiles + Cfg::kTileBytes));
  uint32_t prev_empty = 0;
  for (int kb = kb0; kb < kb1; ++kb) {
    sm90::mbar_wait_clock(full0 + 8 * ring.st, ring.phase);
    __syncwarp();  // reconverge after the spin: wgmma instructions are .sync.aligned
    const uint32_t so = ring.st * uint32_t(Cfg::kStageBytes >> 4);
    sm90::wgmma_fence();
#pragma unroll
    for (int k = 0; k < kRowBytes / kStep; ++k)
      sm90::WgmmaN<T, BN>::run(acc, (uint64_t(kDescHi) << 32) | (lo_a + so + uint32_t(k * (kStep >> 4))),
                               (uint64_t(kDescHi) << 32) | (lo_b + so + uint32_t(k * (kStep >> 4))));
    sm90::wgmma_commit();
    sm90::wgmma_wait<1>();
    if (kb > kb0) sm90::mbar_arrive(prev_empty);
    prev_empty = empty0 + 8 * ring.st;
    ring.advance();
  }
  sm90::wgmma_wait<0>();
  if (kb1 > kb0) sm90::mbar_arrive(prev_empty);
}

// Output row m of a tile is pixel (q0 + m % bw, p0 + (m / bw) % bh, n0 + m / (bw*bh)); null when
// that pixel is past the tensor (tile tails).
template <class T>
__device__ __forceinline__ T* out_row(const WgParams& prm, T* y, int n0, int p0, int q0, int m) {
  const int q = q0 + m % prm.bw, p = p0 + (m / prm.bw) % prm.bh, n = n0 + m / (prm.bw * prm.bh);
  if (q >= prm.Q || p >= prm.P || n >= prm.N) return nullptr;
  return y + n * prm.ys[0] + p * prm.ys[2] + q * prm.ys[3];
}

// Stores channels k and k + 1 (k < K; k + 1 may be past K) of one output pixel from their fp32
// sums: v = alpha * sum + beta * y (y read only when beta != 0), one paired store when possible.
template <class T>
__device__ __forceinline__ void store_pair(const WgParams& prm, T* yrow, int k, float a0, float a1) {
  float v0 = prm.alpha * a0, v1 = prm.alpha * a1;
  T* o = yrow + k * prm.ys[1];
  const bool pair = k + 1 < prm.K && prm.ys[1] == 1 && (reinterpret_cast<uintptr_t>(o) % (2 * sizeof(T))) == 0;
  if (pair) {
    auto* pp = reinterpret_cast<typename Pair<T>::type*>(o);
    if (prm.beta != 0.f) {  // beta == 0 never reads y
      const float2 f = Pair<T>::to_f32(*pp);
      v0 += prm.beta * f.x, v1 += prm.beta * f.y;
    }
    *pp = Pair<T>::from_f32(v0, v1);
  } else {
    if (prm.beta != 0.f) v0 += prm.beta * to_f32(o[0]);
    o[0] = from_f32<T>(v0);
    if (k + 1 < prm.K) {
      T* o1 = o + prm.ys[1];
      if (prm.beta != 0.f) v1 += prm.beta * to_f32(*o1);
      *o1 = from_f32<T>(v1);
    }
  }
}

// Byte offset of fp32 column `col` (< kChunkCols) of row r (< 16) in a warp's staging buffer. The
// 16-byte unit index is XOR-ed with g(r) so that both access patterns are free of bank conflicts
// (checked exhaustively by scripts/check_epilogue_banks.py):
//   fragment writes (8 bytes per lane, one half-warp = rows r..r+3, each 32 contiguous bytes):
//     the four rows' unit pairs land on distinct bank groups;
//   16-byte reads (one quarter-warp = 2 rows of 128 bytes, or 4 rows of 64 bytes):
//     rows read at the same time use distinct bank groups.
// 128-byte rows: g = ((r & 3) << 1) | (r & 1); 64-byte rows: g = 3 * ((r >> 1) & 1).
template <int BN>
__device__ __forceinline__ uint32_t stage_off(int r, int col) {
  using Cfg = TileCfg<BN>;
  const int g = Cfg::kChunkRowBytes == 128 ? (((r & 3) << 1) | (r & 1)) : 3 * ((r >> 1) & 1);
  return uint32_t(r * Cfg::kChunkRowBytes + (((col >> 2) ^ g) << 4) + (col & 3) * 4);
}

// 16 bytes of output (8 fp16/bf16 or 4 fp32 values) <-> fp32.
template <class T>
__device__ __forceinline__ uint4 pack16(const float* f) {
  uint32_t w[4];
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __float_as_uint(f[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const typename Pair<T>::type p = Pair<T>::from_f32(f[2 * i], f[2 * i + 1]);
      memcpy(&w[i], &p, 4);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T>
__device__ __forceinline__ void unpack16(uint4 v, float* f) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i) f[i] = __uint_as_float(w[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      typename Pair<T>::type p;
      memcpy(&p, &w[i], 4);
      const float2 q = Pair<T>::to_f32(p);
      f[2 * i] = q.x, f[2 * i + 1] = q.y;
    }
  }
}

// Staged epilogue of one consumer warp: its 16 rows (m_base .. m_base+15) x BN columns leave in
// chunks of kChunkCols columns: fragments -> the warp's swizzled fp32 buffer, __syncwarp, then every
// lane reads whole 16-byte output vectors (8 fp16/bf16 or 4 fp32 consecutive channels of one
// pixel), applies v = alpha * sum + beta * y (y read as the same 16-byte vector, only when beta != 0;
// one rounding, as the direct path) and stores them with one 16-byte st.global each. A warp store
// instruction writes whole 32-byte sectors (each row's piece is >= 32 contiguous, aligned bytes).
// The host takes this path only when y has unit channel stride, every other stride and K are
// multiples of the vector and y is 16-byte aligned (staged_vector_ok), so a vector is either fully
// inside [0, K) or fully past it; pixels past the tensor (tile tails) are skipped per row.
// kBlend: 0 = beta is 0 (y is never read), 1 = beta is not 0, 2 = test prm.beta per vector. The caller
// (store_tile_staged_any) decides once per tile: with the run-time test inside the loop nvcc
// if-converts the blend, so beta == 0 paid for a predicated-off y load, 8 conversions and 8 FFMAs per
// vector -- ~30% of the kernel's instructions on 1x1 layers with a one-block reduction (ncu at
// 5a35705, rn50 1x1 64 -> 256: 8.4 M warp instructions, 0.8 M each of FFMA and HADD2 with beta = 0).
// Which path each kernel takes: store_tile_staged_any.
template <class T, int BN, int kBlend>
__device__ __forceinline__ void store_tile_staged(const WgParams& prm, T* y, const float (&acc)[BN / 2],
                                                  unsigned char* buf, int n0, int p0, int q0, int k0, int m_base,
                                                  int lane) {
  using Cfg = TileCfg<BN>;
  constexpr int kCols = Cfg::kChunkCols;
  constexpr int V = 16 / int(sizeof(T));  // channels per 16-byte vector
  constexpr int kVecPerRow = kCols / V;
  constexpr int kIters = 16 * kVecPerRow / 32;  // vectors per lane per chunk
  static_assert(kIters * 32 == 16 * kVecPerRow, "a chunk is a whole number of warp-wide vector passes");
  T* rows[kIters];
#pragma unroll
  for (int i = 0; i < kIters; ++i) rows[i] = out_row(prm, y, n0, p0, q0, m_base + (i * 32 + lane) / kVecPerRow);
#pragma unroll
  for (int c = 0; c < BN / kCols; ++c) {
    if (k0 + c * kCols >= prm.K) break;  // the rest of the tile is past K (uniform over the warp)
    // 1. Fragments -> shared memory: lane holds rows lane/4 and lane/4 + 8, column pairs j*8 + (lane%4)*2.
#pragma unroll
    for (int jl = 0; jl < kCols / 8; ++jl) {
      const int j = c * (kCols / 8) + jl;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<float2*>(buf + stage_off<BN>(lane / 4 + 8 * h, jl * 8 + (lane % 4) * 2)) =
            make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
    __syncwarp();
    // 2. Shared memory -> 16-byte global stores, kGroup vectors at a time: a lane reads all the
    // group's vectors first (the buffer is valid whatever the row), so their shared-memory loads are
    // in flight together instead of one round trip per vector behind the per-row branch. (One with
    // kBlend 2: those kernels sit at the 168-register cap, and more spills.)
    constexpr int kGroup = kBlend == 2 ? 1 : (kIters < 2 ? kIters : 2);
    static_assert(kIters % kGroup == 0, "whole groups");
#pragma unroll
    for (int i0 = 0; i0 < kIters; i0 += kGroup) {
      float f[kGroup][V];
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const int id = (i0 + g) * 32 + lane, r = id / kVecPerRow, v = id % kVecPerRow;
#pragma unroll
        for (int u = 0; u < V / 4; ++u) {
          const float4 q = *reinterpret_cast<const float4*>(buf + stage_off<BN>(r, v * V + 4 * u));
          f[g][4 * u] = prm.alpha * q.x, f[g][4 * u + 1] = prm.alpha * q.y;
          f[g][4 * u + 2] = prm.alpha * q.z, f[g][4 * u + 3] = prm.alpha * q.w;
        }
      }
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        const int i = i0 + g, v = (i * 32 + lane) % kVecPerRow;
        const int k = k0 + c * kCols + v * V;
        if (rows[i] == nullptr || k >= prm.K) continue;
        uint4* dst = reinterpret_cast<uint4*>(rows[i] + k);
        if (kBlend == 1 || (kBlend == 2 && prm.beta != 0.f)) {  // beta == 0 never reads y
          float old[V];
          unpack16<T>(*dst, old);
#pragma unroll
          for (int e = 0; e < V; ++e) f[g][e] += prm.beta * old[e];
        }
        *dst = pack16<T>(f[g]);
      }
    }
    __syncwarp();  // every lane has read the chunk before the next one overwrites it
  }
}

// Four 8x8 matrices of 16-bit values from the mma accumulator-fragment layout (lane l holds row l/4,
// columns 2*(l%4) and 2*(l%4)+1 of each, as one 32-bit register per matrix) into shared memory: lane
// l gives the address of row l%8 of matrix l/8 (16 contiguous bytes).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}

// Byte offset of the 16-byte unit `chunk` (8 channels) of row r in a 16-bit staging buffer of 128-byte
// rows: the unit index is XOR-ed with s(r) = ((r & 3) << 1) | ((r >> 2) & 1), a permutation of 0..7
// over any 8 consecutive rows from a multiple of 8. So the 8 rows of one stmatrix matrix (same unit,
// rows 8h .. 8h+7) land in 8 different 16-byte bank groups, and a quarter-warp of the reads (rows
// 4q .. 4q+3, units 2i and 2i+1 of each: XOR with an even s shifts the pair, with an odd s swaps
// within it) touches each group once (scripts/check_epilogue_banks.py checks both).
__device__ __forceinline__ uint32_t stage16_off(int r, int chunk) {
  return uint32_t(r * 128 + ((chunk ^ (((r & 3) << 1) | ((r >> 2) & 1))) << 4));
}

// Chunk c (64 channels) of a warp's 16-row accumulator slice, alpha applied and rounded once to T,
// into shared memory with 4 stmatrix.x4 (16 8x8 matrices: column group 2jp + m/2, row half m%2 of
// matrix m of call jp). at(row, unit) is the shared address of 16-byte unit `unit` of staged row
// `row` (the staged epilogue's or the TMA store's swizzle); lane supplies row (m%2)*8 + lane%8 of
// matrix lane/8.
template <class T, int N, class At>
__device__ __forceinline__ void stmatrix_chunk(const float (&acc)[N], int c, float alpha, int lane, At at) {
  const int mat = lane / 8, mrow = (mat % 2) * 8 + lane % 8;
#pragma unroll
  for (int jp = 0; jp < 4; ++jp) {
    uint32_t r[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int j = c * 8 + 2 * jp + m / 2, h = m % 2;
      const typename Pair<T>::type v = Pair<T>::from_f32(alpha * acc[4 * j + 2 * h], alpha * acc[4 * j + 2 * h + 1]);
      memcpy(&r[m], &v, 4);
    }
    stmatrix_x4(at(mrow, 2 * jp + mat / 2), r[0], r[1], r[2], r[3]);
  }
}

// Staged epilogue for 16-bit outputs with beta == 0 (round 7; BN 128 / 256): the sums are scaled by
// alpha and rounded to the output type in registers -- the same single rounding as the fp32 staging
// path, so the result is bitwise the same -- and leave through the warp's 2 KiB buffer in chunks of 64
// channels (one 128-byte row per pixel): per chunk 4 stmatrix.x4 (16 matrices: 8 column groups x 2
// row halves) instead of 16 8-byte stores, then 4 vectors per lane read and stored together. Half the
// shared-memory bytes of the fp32 staging and twice the columns per pass.
template <class T, int BN>
__device__ __forceinline__ void store_tile_staged_h(const WgParams& prm, T* y, const float (&acc)[BN / 2],
                                                    unsigned char* buf, int n0, int p0, int q0, int k0, int m_base,
                                                    int lane) {
  static_assert(sizeof(T) == 2 && BN >= 128, "16-bit outputs, 128-byte staging rows");
  static_assert(TileCfg<BN>::kWarpStageBytes == 16 * 128, "the warp's buffer holds 16 rows of 64 16-bit values");
  constexpr int kCols = 64;
  const uint32_t base = smem_addr(buf);
  // Reads and stores: lane l owns row l / 2 of the warp's 16 and, per chunk, the 16-byte units
  // 2i + l % 2 (i = 0..3): one store instruction writes 16 rows x 32 contiguous bytes (whole sectors),
  // and the lane needs a single row pointer (the 128-accumulator BN 256 kernel has no registers for
  // four).
  const int my_row = lane / 2, my_half = lane % 2;
  T* const yrow = out_row(prm, y, n0, p0, q0, m_base + my_row);
#pragma unroll
  for (int c = 0; c < BN / kCols; ++c) {
    if (k0 + c * kCols >= prm.K) break;  // the rest of the tile is past K (uniform over the warp)
    stmatrix_chunk<T>(acc, c, prm.alpha, lane, [&](int row, int unit) { return base + stage16_off(row, unit); });
    __syncwarp();
    uint4 v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = *reinterpret_cast<const uint4*>(buf + stage16_off(my_row, 2 * i + my_half));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = k0 + c * kCols + (2 * i + my_half) * 8;
      if (yrow != nullptr && k < prm.K) *reinterpret_cast<uint4*>(yrow + k) = v[i];
    }
    __syncwarp();  // every lane has read the chunk before the next one overwrites it
  }
}

// The staged epilogue's paths, chosen once per tile:
//  - 16-bit outputs, BN 128 / 256, beta == 0: store_tile_staged_h (16-bit staging, stmatrix);
//  - beta != 0 there, and fp32 BN 256 always: store_tile_staged with the run-time beta test (kBlend 2)
//    and one vector at a time -- these kernels sit at the 168-register cap of 384-thread CTAs, and a
//    second copy of the fp32-staging loop spills (8-48 bytes of stack, cuobjdump --dump-resource-usage);
//  - the rest (BN 64, and fp32 BN 128 with either BM): store_tile_staged with beta decided per tile (kBlend 0 / 1).
template <class T, int BN>
__device__ __forceinline__ void store_tile_staged_any(const WgParams& prm, T* y, const float (&acc)[BN / 2],
                                                      unsigned char* buf, int n0, int p0, int q0, int k0, int m_base,
                                                      int lane) {
  if constexpr (sizeof(T) == 2 && BN >= 128) {
    if (prm.beta == 0.f)
      store_tile_staged_h<T, BN>(prm, y, acc, buf, n0, p0, q0, k0, m_base, lane);
    else
      store_tile_staged<T, BN, 2>(prm, y, acc, buf, n0, p0, q0, k0, m_base, lane);
  } else if constexpr (sizeof(T) == 4 && BN == 256) {
    store_tile_staged<T, BN, 2>(prm, y, acc, buf, n0, p0, q0, k0, m_base, lane);
  } else if (prm.beta != 0.f) {
    store_tile_staged<T, BN, 1>(prm, y, acc, buf, n0, p0, q0, k0, m_base, lane);
  } else {
    store_tile_staged<T, BN, 0>(prm, y, acc, buf, n0, p0, q0, k0, m_base, lane);
  }
}

// TMA-store epilogue of one consumer warp (README.md, "TMA store epilogue"; 16-bit outputs, beta == 0,
// BM 128, BN 128 / 256; the host checks all of it: tma_store_ok): per chunk of 64 channels the warp
// writes alpha * sum, rounded once to T (bitwise what store_tile_staged_h stores), into one of its
// kTmaBuffers 2 KiB buffers with 4 stmatrix.x4 in TMA's 128-byte-swizzled layout (tma_stage_off), and
// lane 0 issues ONE bulk tensor store of the 64-channel x 16-pixel box (tma_store_box.h) and moves on;
// the hardware clips pixels and channels past the tensor. Before a buffer is written again, lane 0
// waits (wait_group.read) until the store that read it -- issued kTmaBuffers chunks earlier -- has
// finished reading; every chunk commits exactly one bulk group (an empty one when the whole box lies
// past the tensor and no store is issued), so "kTmaBuffers - 1 groups may still read" means exactly
// that. `slot` (the warp's next buffer) carries over from tile to tile; the caller drains the groups
// (wait_group 0) before the kernel exits.
template <class T, int BN>
__device__ __forceinline__ void store_tile_tma(const WgParams& prm, const CUtensorMap* map_y, const float (&acc)[BN / 2],
                                               uint32_t buf0, int n0, int p0, int q0, int k0, int m_base, int lane,
                                               int& slot) {
  using Cfg = TileCfg<BN>;
  static_assert(sizeof(T) == 2 && BN >= 128, "16-bit outputs, 64-channel chunks");
  constexpr int kCols = kTmaStoreCols;
  int dq, dp, dn;
  tma_store_origin(prm.bw, prm.bh, m_base, dq, dp, dn);
  const int q = q0 + dq, p = p0 + dp, n = n0 + dn;
  // Every pixel of the box is at or after its origin in q, p and n: an origin past the tensor means
  // nothing of the box is inside (tile tails), and no store is issued.
  const bool inside = q < prm.Q && p < prm.P && n < prm.N;
#pragma unroll
  for (int c = 0; c < BN / kCols; ++c) {
    if (k0 + c * kCols >= prm.K) break;  // the rest of the tile is past K (uniform over the warp)
    const uint32_t buf = buf0 + uint32_t(slot * kTmaBufBytes);
    if (lane == 0) sm90::bulk_wait_group_read<kTmaBuffers - 1>();  // the store that last read buf is done reading
    __syncwarp();
    stmatrix_chunk<T>(acc, c, prm.alpha, lane, [&](int row, int unit) { return buf + tma_stage_off(row, unit); });
    sm90::fence_proxy_async_shared();  // this lane's stmatrix writes, before the TMA unit reads them
    __syncwarp();
    if (lane == 0) {
      if (inside) sm90::tma_store_4d(map_y, buf, k0 + c * kCols, q, p, n);
      sm90::bulk_commit_group();
    }
    slot = slot + 1 == kTmaBuffers ? 0 : slot + 1;
  }
}

// The epilogue of one consumer warp for its 16 rows of a tile, shared by the persistent and the
// multicast kernels: staged through the warp's shared-memory buffer behind the stages
// (store_tile_staged_any), or straight from the registers -- thread (warp, lane) holds rows warp*16 +
// lane/4 (+8) and column pairs j*8 + (lane%4)*2 of its warpgroup's 64 x BN block (the wgmma
// accumulator layout).
template <class T, int BN, bool kStaged, int BM = kBM, bool kDeep = false>
__device__ __forceinline__ void store_tile(const WgParams& prm, T* y, const float (&acc)[BN / 2],
                                           unsigned char* smem_raw, uint32_t tiles, int n0, int p0, int q0, int k0,
                                           int cg, int warp, int lane) {
  using Cfg = TileCfg<BN, BM, kDeep>;  // the staging buffers sit behind this configuration's stages
  if constexpr (kStaged) {
    const uint32_t off = uint32_t(Cfg::kStages * Cfg::kStageBytes + (cg * 4 + warp) * Cfg::kWarpStageBytes);
    unsigned char* buf = smem_raw + (tiles - smem_addr(smem_raw)) + off;
    store_tile_staged_any<T, BN>(prm, y, acc, buf, n0, p0, q0, k0, cg * 64 + warp * 16, lane);
  } else {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      T* yrow = out_row(prm, y, n0, p0, q0, cg * 64 + warp * 16 + lane / 4 + h * 8);
      if (yrow == nullptr) continue;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int k = k0 + j * 8 + (lane % 4) * 2;
        if (k < prm.K) store_pair(prm, yrow, k, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    }
  }
}

// One-pass kernel, persistent: kCtasPerSm CTAs per SM walk tiles blockIdx.x, +gridDim.x, ...; the
// producer prefetches the next tile while the consumers run the epilogue. kStaged selects the
// epilogue: false = straight from the accumulator registers (paired 4/8-byte stores; the
// GPU-verified one), true = staged through a per-warp shared-memory buffer (16-byte stores).
// kTma (with kStaged, 16-bit T, BN 128 / 256, BM 128; the host launches it only for beta == 0):
// staged in shared memory and stored by TMA bulk tensor stores of map_y (store_tile_tma); map_y is
// unused otherwise. kDeep (BM 64, BN 128, not kTma): the 8-stage, one-CTA-per-SM pipeline (README.md,
// "Round 9"); the same code with a longer ring.
template <class T, int BN, bool kStaged, int BM = kBM, bool kTma = false, bool kDeep = false>
__global__ void __launch_bounds__(TileCfg<BN, BM, kDeep>::kThreads, TileCfg<BN, BM, kDeep>::kCtasPerSm)
    conv_wgmma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                      const __grid_constant__ CUtensorMap map_y, T* __restrict__ y, const WgParams prm) {
#if JHDNN_WGMMA_OK
  static_assert(!(kTma && kDeep), "no TMA-store deep kernel (not instantiated: README.md, \"Round 9\")");
  using Cfg = TileCfg<BN, BM, kDeep>;
  __shared__ __align__(8) uint64_t full[Cfg::kStages], empty[Cfg::kStages];
  extern __shared__ unsigned char smem_raw[];
  const uint32_t tiles = (smem_addr(smem_raw) + 1023) & ~uint32_t(1023);
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty);  // once: not per block in the loops

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      sm90::mbar_init_no_clobber(smem_addr(&full[s]), 1);
      sm90::mbar_init_no_clobber(smem_addr(&empty[s]), Cfg::kCons * 128);
    }
    sm90::mbar_fence_init();
  }
  __syncthreads();

  if (wg == 0) {
    if (t == 0) {
      // The tensor maps into the TMA unit's descriptor cache before the first load needs them (as
      // the Hopper GEMM does).
      sm90::tma_prefetch_desc(&map_x);
      sm90::tma_prefetch_desc(&map_w);
      Ring<Cfg::kStages> ring;
      for (int tile = prm.tile_base + int(blockIdx.x); tile < prm.num_tiles; tile += gridDim.x)
        produce_tile<T, BN, BM, kDeep>(&map_x, &map_w, prm, tiles, full0, empty0, tile, 0, prm.kblocks, ring);
    }
    return;
  }

  const int cg = wg - 1, warp = t / 32, lane = t % 32;
  Ring<Cfg::kStages> ring;
  [[maybe_unused]] int tma_slot = 0;  // store_tile_tma: this warp's next staging buffer
  for (int tile = prm.tile_base + int(blockIdx.x); tile < prm.num_tiles; tile += gridDim.x) {
    int n0, p0, q0, k0;
    decode_tile<BN>(prm, tile, n0, p0, q0, k0);
    float acc[BN / 2];
    consume_tile<T, BN, BM, kDeep>(acc, tiles, full0, empty0, cg, 0, prm.kblocks, ring);
    if constexpr (kTma) {
      static_assert(kStaged && BM == kBM && sizeof(T) == 2 && BN >= 128, "TMA stores: 16-bit, BM 128, BN 128 / 256");
      const uint32_t buf0 =
          tiles + uint32_t(Cfg::kStages * Cfg::kStageBytes + (cg * 4 + warp) * kTmaBuffers * kTmaBufBytes);
      store_tile_tma<T, BN>(prm, &map_y, acc, buf0, n0, p0, q0, k0, cg * 64 + warp * 16, lane, tma_slot);
    } else {
      store_tile<T, BN, kStaged, BM, kDeep>(prm, y, acc, smem_raw, tiles, n0, p0, q0, k0, cg, warp, lane);
    }
  }
  if constexpr (kTma) {
    // Every bulk store of this warp complete (its global writes done, its shared memory read)
    // before the CTA exits and its shared memory is released.
    if (lane == 0) sm90::bulk_wait_group<0>();
  }
#endif
}

// ---------------------------------------------------------------- B multicast (round 6, forced only)
//
// The persistent kernel in clusters of two CTAs (README.md, "Round 6", item 3): the two CTAs of a
// cluster work on two pixel tiles of the SAME channel tile, so their B (filter) slices are equal;
// each CTA loads its own A box, and rank 0 loads B once, multicast into both CTAs' shared memory
// (same offset) with complete_tx on both CTAs' "full" barrier of the stage. Per block and CTA:
// 16 KiB A + 8 KiB of B traffic (half the 16 KiB B) from L2 instead of 32 KiB.
//
// Protocol, per stage s:
//   full[s]  (each CTA, 1 arrival): its producer's arrive.expect_tx(A + B bytes), its own A copy,
//            rank 0's multicast B copy (may land before the expect_tx: the tx-count may go negative
//            inside a phase, and the phase cannot complete before that arrival);
//   empty[s] rank 1: its own 256 consumer threads (before its producer rewrites A);
//            rank 0: its own 256 consumer threads + one remote arrive per consumer warp of rank 1
//            (8: lane 0 after __syncwarp, once every lane's wgmma reads of the stage are done), so rank 0
//            multicasts B into stage s only when BOTH CTAs have finished reading it. Rank 1's
//            full[s] phase for that use has then completed too (its consumers waited on it), so
//            the multicast's complete_tx always counts toward the next phase.
// Both CTAs walk the same pairs (uniform over the cluster), so they consume the same stage
// sequence. An odd pixel-tile count gives rank 1 of the last pair no tile: it loads rank 0's A
// again (real data, never zeros it relies on) and stores nothing. Barriers are initialized and
// fenced before a cluster barrier (no remote arrive or multicast reaches an uninitialized
// barrier), and every thread of both CTAs meets a final cluster barrier (no CTA exits while its
// peer may still multicast into it or arrive on its barriers).

__device__ __forceinline__ void tma_load_3d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0,
                                                      int c1, int c2, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
      : "memory");
}

// One arrival on the mbarrier at shared address `bar` of CTA `rank` of this cluster.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  const uint32_t remote = sm90::mapa_shared(bar, rank);
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// A consumer thread is done reading a stage (its wgmma group completed): one arrival on this CTA's
// "empty" barrier, and in rank 1 one per warp (lane 0, after the whole warp got here) on rank 0's.
__device__ __forceinline__ void release_mc(uint32_t empty_bar, int rank, int lane) {
  sm90::mbar_arrive(empty_bar);
  if (rank == 1) {
    __syncwarp();
    if (lane == 0) mbar_arrive_remote(empty_bar, 0);
  }
}

// Pair pi of a cluster walk: channel tile kt = pi % tiles_k (fastest, as decode_tile), pixel tiles
// 2 * (pi / tiles_k) + rank. *real = false for rank 1's missing tile of an odd count; the tile
// returned then is rank 0's (its A is loaded again and nothing is stored).
__device__ __forceinline__ int mc_tile(const WgParams& prm, int pixel_tiles, int pi, int rank, bool* real) {
  const int kt = pi % prm.tiles_k, pt = 2 * (pi / prm.tiles_k) + rank;
  *real = pt < pixel_tiles;
  return (*real ? pt : pt - 1) * prm.tiles_k + kt;
}

template <class T, bool kStaged>
__global__ void __launch_bounds__(kThreads, 1)
    conv_wgmma_mc_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                         T* __restrict__ y, const WgParams prm) {
#if JHDNN_WGMMA_OK
  constexpr int BN = 128;
  using Cfg = TileCfg<BN>;
  constexpr int kBK = kRowBytes / int(sizeof(T));
  __shared__ __align__(8) uint64_t full[Cfg::kStages], empty[Cfg::kStages];
  extern __shared__ unsigned char smem_raw[];
  const uint32_t tiles = (smem_addr(smem_raw) + 1023) & ~uint32_t(1023);
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty);
  const int rank = int(sm90::cluster_ctarank());
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      sm90::mbar_init_no_clobber(smem_addr(&full[s]), 1);
      sm90::mbar_init_no_clobber(smem_addr(&empty[s]), kConsumers * 128 + (rank == 0 ? kConsumers * 4 : 0));
    }
    sm90::mbar_fence_init();
  }
  sm90::cluster_sync();  // both CTAs' barriers exist before any remote arrive or multicast

  const int pixel_tiles = prm.num_tiles / prm.tiles_k;
  const int num_pairs = prm.tiles_k * ((pixel_tiles + 1) / 2);
  const int cluster = int(sm90::cluster_id_x()), clusters = int(gridDim.x) / 2;

  if (wg == 0) {
    if (t == 0) {
      sm90::tma_prefetch_desc(&map_x);
      sm90::tma_prefetch_desc(&map_w);
      Ring<Cfg::kStages> ring;
      for (int pi = cluster; pi < num_pairs; pi += clusters) {
        bool real = false;
        const int tile = mc_tile(prm, pixel_tiles, pi, rank, &real);
        int n0, p0, q0, k0;
        decode_tile<BN>(prm, tile, n0, p0, q0, k0);
        ReductionCursor cur;
        cur.start(0, kBK, prm.cblocks, prm.R, prm.S, q0 * prm.str_w - prm.pad_w, p0 * prm.str_h - prm.pad_h,
                  prm.dil_w, prm.dil_h, prm.flip != 0);
        for (int kb = 0; kb < prm.kblocks; ++kb) {
          const uint32_t fb = full0 + 8 * ring.st;
          sm90::mbar_wait_clock(empty0 + 8 * ring.st, ring.phase ^ 1);
          sm90::mbar_arrive_expect_tx(fb, Cfg::kStageBytes);
          const uint32_t sa = tiles + ring.st * Cfg::kStageBytes;
          sm90::tma_load_4d(sa, &map_x, fb, cur.c0, cur.xw, cur.xh, n0);
          if (rank == 0) tma_load_3d_multicast(sa + kTileBytes, &map_w, fb, cur.c0, cur.wtap, k0, uint16_t(0x3));
          ring.advance();
          cur.step();
        }
      }
    }
  } else {
    const int cg = wg - 1, warp = t / 32, lane = t % 32;
    constexpr int kStep = 32;
    const uint32_t kDescHi = uint32_t(sm90::make_desc_k_sw128(0) >> 32);
    const uint32_t lo_a = uint32_t(sm90::make_desc_k_sw128(tiles + cg * 64 * kRowBytes));
    const uint32_t lo_b = uint32_t(sm90::make_desc_k_sw128(tiles + kTileBytes));
    Ring<Cfg::kStages> ring;
    for (int pi = cluster; pi < num_pairs; pi += clusters) {
      bool real = false;
      const int tile = mc_tile(prm, pixel_tiles, pi, rank, &real);
      int n0, p0, q0, k0;
      decode_tile<BN>(prm, tile, n0, p0, q0, k0);
      float acc[BN / 2];
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
      uint32_t prev_empty = 0;
      // consume_tile's loop, releasing each stage to this CTA's producer and (rank 1) to rank 0's.
      for (int kb = 0; kb < prm.kblocks; ++kb) {
        sm90::mbar_wait_clock(full0 + 8 * ring.st, ring.phase);
        __syncwarp();
        const uint32_t so = ring.st * uint32_t(Cfg::kStageBytes >> 4);
        sm90::wgmma_fence();
#pragma unroll
        for (int k = 0; k < kRowBytes / kStep; ++k)
          sm90::WgmmaN<T, BN>::run(acc, (uint64_t(kDescHi) << 32) | (lo_a + so + uint32_t(k * (kStep >> 4))),
                                   (uint64_t(kDescHi) << 32) | (lo_b + so + uint32_t(k * (kStep >> 4))));
        sm90::wgmma_commit();
        sm90::wgmma_wait<1>();
        if (kb > 0) release_mc(prev_empty, rank, lane);
        prev_empty = empty0 + 8 * ring.st;
        ring.advance();
      }
      sm90::wgmma_wait<0>();
      if (prm.kblocks > 0) release_mc(prev_empty, rank, lane);
      if (!real) continue;
      store_tile<T, BN, kStaged>(prm, y, acc, smem_raw, tiles, n0, p0, q0, k0, cg, warp, lane);
    }
  }
  sm90::cluster_sync();  // every thread of both CTAs: no CTA leaves while its peer may still reach it
#endif
}

// Split-K kernel for grids too small to fill the GPU (batch 1, 14x14 ...): a cluster of
// prm.split CTAs shares ONE 128 x 128 tile (the host launches exactly num_tiles clusters), CTA
// rank r accumulating reduction blocks [r*kblocks/split, (r+1)*kblocks/split). The partial sums
// meet in distributed shared memory, no workspace: each CTA writes its fp32 partial tile into its
// own (drained) stage buffers, the cluster synchronizes, and CTA r reduces rows
// [r*128/split, (r+1)*128/split) over all ranks in rank order (deterministic), applies the
// epilogue and stores them; a second cluster barrier keeps every CTA's shared memory alive until
// all reads are done.
template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    conv_wgmma_splitk_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                             T* __restrict__ y, const WgParams prm) {
#if JHDNN_WGMMA_OK
  constexpr int BN = 128;
  using Cfg = TileCfg<BN>;
  __shared__ __align__(8) uint64_t full[Cfg::kStages], empty[Cfg::kStages];
  extern __shared__ unsigned char smem_raw[];
  const uint32_t tiles = (smem_addr(smem_raw) + 1023) & ~uint32_t(1023);
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty);  // once: not per block in the loops
  float* part = reinterpret_cast<float*>(smem_raw + (tiles - smem_addr(smem_raw)));

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      sm90::mbar_init_no_clobber(smem_addr(&full[s]), 1);
      sm90::mbar_init_no_clobber(smem_addr(&empty[s]), kConsumers * 128);
    }
    sm90::mbar_fence_init();
  }
  __syncthreads();

  // The host launches num_tiles - tile_base clusters: cluster i owns tile tile_base + i.
  const int split = prm.split, rank = int(sm90::cluster_ctarank()), tile = prm.tile_base + int(sm90::cluster_id_x());
  const int kb0 = int(int64_t(rank) * prm.kblocks / split), kb1 = int(int64_t(rank + 1) * prm.kblocks / split);
  int n0, p0, q0, k0;
  decode_tile<BN>(prm, tile, n0, p0, q0, k0);

  // 1. This CTA's share of the reduction (no thread exits: all take part in the cluster barriers).
  float acc[BN / 2];
  Ring<Cfg::kStages> ring;
  if (wg == 0) {
    if (t == 0) {
      sm90::tma_prefetch_desc(&map_x);
      sm90::tma_prefetch_desc(&map_w);
      produce_tile<T, BN>(&map_x, &map_w, prm, tiles, full0, empty0, tile, kb0, kb1, ring);
    }
  } else {
    consume_tile<T, BN>(acc, tiles, full0, empty0, wg - 1, kb0, kb1, ring);
    // Order this thread's async-proxy accesses (wgmma reads, TMA writes it waited for) before its
    // generic writes of the partial tile into the same bytes.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  }
  // Every TMA write has landed (the consumers waited for each stage) and every wgmma has read its
  // operands (wait_group 0): the stage buffers are free to hold the partial tile.
  __syncthreads();
  if (wg != 0) {
    const int cg = wg - 1, warp = t / 32, lane = t % 32;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = cg * 64 + warp * 16 + lane / 4 + h * 8;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
        *reinterpret_cast<float2*>(&part[m * kPartStride + j * 8 + (lane % 4) * 2]) =
            make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
  }
  sm90::cluster_sync();  // 2. every partial tile of the cluster is written

  // 3. This CTA's rows: the sum over ranks 0 .. split-1 (in that order), epilogue, store.
  const int rows = kBM / split;
  for (int e = threadIdx.x; e < rows * (BN / 2); e += kThreads) {
    const int m = rank * rows + e / (BN / 2), col = (e % (BN / 2)) * 2;
    const uint32_t off = tiles + uint32_t((m * kPartStride + col) * 4);
    float s0 = 0.f, s1 = 0.f;
    for (int q = 0; q < split; ++q) {
      const float2 v = sm90::ld_cluster_f2(sm90::mapa_shared(off, uint32_t(q)));
      s0 += v.x, s1 += v.y;
    }
    T* yrow = out_row(prm, y, n0, p0, q0, m);
    if (yrow != nullptr && k0 + col < prm.K) store_pair(prm, yrow, k0 + col, s0, s1);
  }
  sm90::cluster_sync();  // 4. no CTA leaves (freeing its shared memory) while a peer may still read it
#endif
}

// ---------------------------------------------------------------- cluster split-K, push reduction (round 7)
//
// conv_wgmma_csplit_kernel: split-K for small-M layers (README.md, "Round 7: split-K with a push
// reduction"). A cluster of S CTAs (S = 2 or 4, a template parameter) shares ONE BM x 128 tile,
// CTA rank r running reduction blocks [r*kblocks/S, (r+1)*kblocks/S) with BM / 64 consumer
// warpgroups; BM = 64 gives ~97 KiB CTAs, two per SM, so 64-pixel tiles x split 2 put two consumer
// warpgroups (two CTAs) on most SMs. The partial sums are reduced by COLUMNS: rank q owns output
// channels [q*128/S, (q+1)*128/S) of the tile, i.e. the accumulator registers acc[q*C, (q+1)*C)
// (C = 64 / S) of every consumer thread (wgmma fragment j covers columns 8j .. 8j+7, 4 registers).
// So the exchange needs no index arithmetic: consumer thread i of rank r sends its registers of
// chunk q to consumer thread i of rank q, which adds them to its own; the layout in the receiver's
// (drained) stage buffers is "register-native", float4 j of thread i at byte (j * threads + i) * 16
// (conflict-free 16-byte accesses on both sides).
//
// Synchronization, everything through mbarriers and one-sided operations (no gpu-scope fence: the
// old kernel's barrier.cluster.arrive.release compiles to MEMBAR.ALL.GPU + ERRBAR, its
// wait.acquire to CCTL.IVALL, twice, and its DSMEM loads are synchronous round trips):
//   ready (S-1 arrivals): each peer arrives (mbarrier.arrive.release.cluster, remote) once its stage
//                         buffers are drained -- so this CTA may write into every peer;
//   recv  (1 arrival + tx): this CTA's own arrive.expect_tx of (S-1) * C * 4 * threads bytes; the
//                         peers' st.async (.mbarrier::complete_tx) stores complete it.
//   cluster barrier phase 1 (arrive.relaxed right after the mbarrier init, wait only before the
//   first remote operation, so it costs nothing): no remote arrive / store reaches an
//   uninitialized barrier. Phase 2 (arrive.relaxed once this CTA has received everything, wait
//   after its epilogue): no CTA exits while a peer's st.async may still be on its way to it.
// Each owner sums the S partials in rank order (deterministic) and stores its 128/S columns x BM
// rows straight from registers (store_pair; two row pointers per thread, computed once).
__device__ __forceinline__ void st_async_v4(uint32_t remote_addr, float a, float b, float c, float d,
                                            uint32_t remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   remote_addr),
               "f"(a), "f"(b), "f"(c), "f"(d), "r"(remote_bar)
               : "memory");
}

// One relaxed arrival on the mbarrier at shared address `bar` of CTA `rank` of this cluster (no
// release: the .release.cluster form compiles to MEMBAR.ALL.GPU + ERRBAR before the arrive). Used
// for "my stage buffers are free": a write-after-read hazard whose reads (wgmma operands) have
// completed -- wait_group 0 returned -- before the arrive is issued, so nothing needs publishing.
__device__ __forceinline__ void mbar_arrive_remote_relaxed(uint32_t bar, uint32_t rank) {
  const uint32_t remote = sm90::mapa_shared(bar, rank);
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait;\n" ::: "memory"); }

// mbar_wait_clock's loop with cluster-scope acquire: the phase was completed by remote arrives and
// by remote st.async bytes, whose data this thread reads next.
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  const long long start = clock64();
  for (;;) {
    uint32_t done;
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - start > (1LL << 34)) __trap();
  }
}

template <int BM, int S>
struct CsplitCfg {
  static_assert(S == 2 || S == 4, "clusters of 2 or 4 CTAs");
  using Tile = TileCfg<128, BM>;
  static constexpr int kConsThreads = Tile::kCons * 128;
  static constexpr int kChunk = 64 / S;                                 // accumulator registers per owner
  static constexpr int kSlotBytes = kConsThreads * kChunk * 4;          // one peer's partial of my columns
  static constexpr int kRecvBytes = (S - 1) * kSlotBytes;
  static_assert(kChunk % 4 == 0, "whole float4s");
  static_assert(kRecvBytes <= Tile::kStages * Tile::kStageBytes, "the peers' partials fit in the drained stages");
};

template <class T, int BM, int S>
__global__ void __launch_bounds__(TileCfg<128, BM>::kThreads, TileCfg<128, BM>::kCtasPerSm)
    conv_wgmma_csplit_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                             T* __restrict__ y, const WgParams prm) {
#if JHDNN_WGMMA_OK
  constexpr int BN = 128;
  using Cfg = TileCfg<BN, BM>;
  using X = CsplitCfg<BM, S>;
  __shared__ __align__(8) uint64_t full[Cfg::kStages], empty[Cfg::kStages], ready, recv;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t tiles = (smem_addr(smem_raw) + 1023) & ~uint32_t(1023);
  const uint32_t full0 = smem_addr(full), empty0 = smem_addr(empty);
  const uint32_t ready_bar = smem_addr(&ready), recv_bar = smem_addr(&recv);

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      sm90::mbar_init_no_clobber(smem_addr(&full[s]), 1);
      sm90::mbar_init_no_clobber(smem_addr(&empty[s]), X::kConsThreads);
    }
    sm90::mbar_init_no_clobber(ready_bar, S - 1);
    sm90::mbar_init_no_clobber(recv_bar, 1);
    sm90::mbar_fence_init();
  }
  __syncthreads();
  cluster_arrive_relaxed();  // phase 1: this CTA's barriers exist (waited before the first remote operation)

  // The host launches num_tiles - tile_base clusters of S: cluster i owns tile tile_base + i. S is a
  // power of two: the range ends are a multiply and a shift (no division).
  constexpr int kLogS = S == 2 ? 1 : 2;
  const int rank = int(sm90::cluster_ctarank()), tile = prm.tile_base + int(sm90::cluster_id_x());
  const int kb0 = int((int64_t(rank) * prm.kblocks) >> kLogS), kb1 = int((int64_t(rank + 1) * prm.kblocks) >> kLogS);

  if (wg == 0) {  // producer warpgroup: thread 0 loads; all take part in both cluster-barrier phases
    if (t == 0) {
      sm90::tma_prefetch_desc(&map_x);
      sm90::tma_prefetch_desc(&map_w);
      Ring<Cfg::kStages> ring;
      produce_tile<T, BN, BM>(&map_x, &map_w, prm, tiles, full0, empty0, tile, kb0, kb1, ring);
    }
    __syncwarp();  // warp 0 whole again: the cluster-barrier instructions take their converged path
    cluster_wait();
    cluster_arrive_relaxed();
    cluster_wait();
    return;
  }

  const int cg = wg - 1, ct = threadIdx.x - 128, warp = t / 32, lane = t % 32;
  float acc[BN / 2];
  {
    Ring<Cfg::kStages> ring;
    consume_tile<T, BN, BM>(acc, tiles, full0, empty0, cg, kb0, kb1, ring);
  }
  // This thread's wgmma reads (async proxy) are complete (wait_group 0) and ordered before the
  // peers' writes into the same bytes; after the consumers' named barrier every TMA write this CTA
  // waited for has landed and every wgmma read is done: the stage buffers are free.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync 1, %0;\n" ::"r"(X::kConsThreads) : "memory");
  cluster_wait();  // phase 1: every peer's barriers are initialized
  if (ct == 0) {
    sm90::mbar_arrive_expect_tx(recv_bar, uint32_t(X::kRecvBytes));
#pragma unroll
    for (int q = 0; q < S; ++q)
      if (q != rank) mbar_arrive_remote_relaxed(ready_bar, uint32_t(q));  // "my stages are free": q may write into me
  }
  mbar_wait_cluster(ready_bar, 0);  // every peer's stages are free

  // Send: chunk q of my partial to rank q, into its slot for me (slots in sender-rank order, mine
  // skipped). Compile-time register indices (q and j unrolled), run-time rank test.
#pragma unroll
  for (int q = 0; q < S; ++q) {
    if (q == rank) continue;
    const uint32_t slot = uint32_t(rank < q ? rank : rank - 1);
    const uint32_t dst = sm90::mapa_shared(tiles + slot * uint32_t(X::kSlotBytes) + uint32_t(ct) * 16u, uint32_t(q));
    const uint32_t bar = sm90::mapa_shared(recv_bar, uint32_t(q));
#pragma unroll
    for (int j = 0; j < X::kChunk / 4; ++j) {
      const int a = q * X::kChunk + 4 * j;
      st_async_v4(dst + uint32_t(j * X::kConsThreads * 16), acc[a], acc[a + 1], acc[a + 2], acc[a + 3], bar);
    }
  }

  // Receive: every peer's partial of my columns has landed.
  mbar_wait_cluster(recv_bar, 0);
  __syncwarp();              // reconverge after the spin (as before wgmma)
  cluster_arrive_relaxed();  // phase 2: nothing more will arrive here (waited after the epilogue)

  int n0, p0, q0, k0;
  decode_tile<BN>(prm, tile, n0, p0, q0, k0);
  T* const yrow0 = out_row(prm, y, n0, p0, q0, cg * 64 + warp * 16 + lane / 4);
  T* const yrow1 = out_row(prm, y, n0, p0, q0, cg * 64 + warp * 16 + lane / 4 + 8);
#pragma unroll
  for (int q = 0; q < S; ++q) {
    if (q != rank) continue;  // exactly one q: this CTA's columns
    float sum[X::kChunk];
#pragma unroll
    for (int i = 0; i < X::kChunk; ++i) sum[i] = 0.f;
#pragma unroll
    for (int p = 0; p < S; ++p) {  // rank order: the same additions whichever CTA owns the columns
      if (p == rank) {
#pragma unroll
        for (int i = 0; i < X::kChunk; ++i) sum[i] += acc[q * X::kChunk + i];
      } else {
        const unsigned char* src = smem_raw + (tiles - smem_addr(smem_raw)) + (p < rank ? p : p - 1) * X::kSlotBytes;
#pragma unroll
        for (int j = 0; j < X::kChunk / 4; ++j) {
          const float4 v = *reinterpret_cast<const float4*>(src + (j * X::kConsThreads + ct) * 16);
          sum[4 * j] += v.x, sum[4 * j + 1] += v.y, sum[4 * j + 2] += v.z, sum[4 * j + 3] += v.w;
        }
      }
    }
    // Fragments j = q * C/4 .. : column pair jj*8 + (lane % 4) * 2 of the chunk, rows lane/4 (h 0) and lane/4 + 8 (h 1).
#pragma unroll
    for (int jj = 0; jj < X::kChunk / 4; ++jj) {
      const int k = k0 + (q * X::kChunk / 4 + jj) * 8 + (lane % 4) * 2;
      if (k >= prm.K) continue;
      if (yrow0 != nullptr) store_pair(prm, yrow0, k, sum[4 * jj], sum[4 * jj + 1]);
      if (yrow1 != nullptr) store_pair(prm, yrow1, k, sum[4 * jj + 2], sum[4 * jj + 3]);
    }
  }
  __syncwarp();
  cluster_wait();  // phase 2: every CTA of the cluster has received all its bytes; safe to exit
#endif
}

// ---------------------------------------------------------------- host side

int64_t elem_bytes(jhdnnDataType_t dt) { return dt == JHDNN_DATA_FLOAT ? 4 : 2; }

// What gen 2 needs beyond gen 1's checks; nullptr when it can take p (pointers are checked in run).
const char* check_wgmma(const core::ConvProblem& p, const core::DeviceInfo& dev) {
  const Verdict v1 = tensorcore_mma_solver().can_implement(p, dev);
  if (!v1.ok) return v1.reason;
  if (dev.sm() != 90) return "wgmma and TMA need an sm_90 (Hopper) device";
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1) return "2-D convolutions only";
  if (p.G != 1) return "groups are served by tensorcore_mma (a TMA channel box would cross groups)";
  const int64_t es = elem_bytes(p.dtype);
  if (p.x_stride[1] != 1) return "x must have unit channel stride (NHWC)";
  if ((p.x_stride[0] * es) % 16 || (p.x_stride[3] * es) % 16 || (p.x_stride[4] * es) % 16)
    return "x's n, h, w strides must be multiples of 16 bytes (C a multiple of 8 for 16-bit data, 4 for fp32)";
  if (p.x_stride[4] < p.C || p.x_stride[3] < p.W * p.x_stride[4] || p.x_stride[0] < p.H * p.x_stride[3])
    return "x's strides must nest as NHWC's do (a TMA tensor map requirement)";
  if (!p.w_packed_krsc()) return "w must be packed KRSC (NHWC filter format)";
  if ((p.C * es) % 16) return "C must be a multiple of 16 bytes";
  if (p.stride_h > 8 || p.stride_w > 8) return "TMA traversal strides are at most 8";
  if (p.N >= (int64_t(1) << 31) || p.H >= (int64_t(1) << 31) || p.W >= (int64_t(1) << 31)) return "sizes past 2^31";
  return nullptr;
}

// The pixel box (bw, bh, bn) of a bm-pixel tile: wgmma_plan.cpp (pick_pixel_box), shared with the planner.
void pick_box(const core::ConvProblem& p, int bm, WgParams& w) {
  const PixelBox b = pick_pixel_box(p, bm);
  w.bw = b.bw, w.bh = b.bh, w.bn = b.bn;
}

// cuTensorMapEncodeTiled costs microseconds of host time; eager callers pass the same tensors
// again and again, so the encoded maps are kept per thread (no lock) in a small round-robin cache
// keyed on every input of the encode (pointer, dims, strides, box, data type). A different pointer
// or shape is a different key, so a hit always returns exactly the map the encode would produce.
struct MapKey {
  uint64_t v[20];
  bool operator==(const MapKey& o) const { return std::memcmp(v, o.v, sizeof v) == 0; }
};

core::Status encode(CUtensorMap* map, jhdnnDataType_t dt, const void* ptr, cuuint32_t rank, const cuuint64_t* dims,
                    const cuuint64_t* strides_bytes, const cuuint32_t* box, const cuuint32_t* estr) {
  MapKey key{};
  int n = 0;
  key.v[n++] = uint64_t(dt);
  key.v[n++] = reinterpret_cast<uintptr_t>(ptr);
  key.v[n++] = rank;
  for (cuuint32_t i = 0; i < rank; ++i) {
    key.v[n++] = dims[i];
    key.v[n++] = (uint64_t(box[i]) << 32) | estr[i];
    if (i + 1 < rank) key.v[n++] = strides_bytes[i];
  }
  // rank <= 4: 3 + 4 * 3 - 1 = 14 <= 20 entries
  struct Entry {
    MapKey key;
    CUtensorMap map;
    bool used;
  };
  constexpr int kEntries = 12;  // x, w and (TMA-store epilogue) y maps of a few layers
  thread_local Entry cache[kEntries] = {};
  thread_local int next = 0;
  for (const Entry& e : cache)
    if (e.used && e.key == key) {
      *map = e.map;
      return core::Status::success();
    }

  PFN_cuTensorMapEncodeTiled_v12000 fn = sm90::tensor_map_encoder();
  if (fn == nullptr) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: the driver has no cuTensorMapEncodeTiled");
  const CUtensorMapDataType type = dt == JHDNN_DATA_HALF       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : dt == JHDNN_DATA_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = fn(map, type, rank, const_cast<void*>(ptr), dims, strides_bytes, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "tensorcore_wgmma: cuTensorMapEncodeTiled failed (%d)", int(r));
  Entry& e = cache[next];
  next = (next + 1) % kEntries;
  e.key = key, e.map = *map, e.used = true;
  return core::Status::success();
}

// Per device: raise every kernel's dynamic shared-memory limit (once; load_kernels does it at
// handle creation, launch checks the bit in case it did not run) and find how many clusters of
// 2, 4 and 8 split-K CTAs of 193 KiB run at once (cudaOccupancyMaxActiveClusters): the planner
// splits only when a cluster of 8 fits at all, and then never into more clusters than fit in one
// wave (clusters live inside one GPC, so the count can be below #SMs / size).
constexpr int kSmem = TileCfg<128>::kSmemBytes;  // 128- and 256-wide, and the split-K kernel
std::atomic<uint64_t> g_prepared{0}, g_cluster8{0};
std::atomic<int> g_max_clusters[64][3];  // [device][log2(size) - 1], written before g_prepared's bit

template <class T, bool kStaged>
core::Status prepare_epilogue() {
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 64, kStaged>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<64>::smem_bytes(kStaged)));
  // Two 97 (105 staged) KiB CTAs per SM need the largest shared-memory carveout (a hint; the default may pick less).
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 64, kStaged>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      int(cudaSharedmemCarveoutMaxShared)));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 128, kStaged>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<128>::smem_bytes(kStaged)));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 256, kStaged>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<256>::smem_bytes(kStaged)));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_mc_kernel<T, kStaged>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<128>::smem_bytes(kStaged)));
  // 64 x 128 tiles (bm 64): two 97 (105 staged) KiB CTAs per SM, like the 64-wide ones.
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 128, kStaged, 64>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize, TileCfg<128, 64>::smem_bytes(kStaged)));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 128, kStaged, 64>,
                                      cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
  // The deep 64 x 128 kernel (round 9): 193 (201 staged) KiB, one CTA per SM.
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 128, kStaged, 64, false, true>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<128, 64, true>::smem_bytes(kStaged)));
  if constexpr (kStaged && sizeof(T) == 2) {  // the TMA-store kernels: 193 + 32 KiB
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 128, true, kBM, true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, TileCfg<128>::smem_bytes_tma()));
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T, 256, true, kBM, true>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, TileCfg<256>::smem_bytes_tma()));
  }
  return core::Status::success();
}

template <class T, int S>
core::Status prepare_csplit() {
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_csplit_kernel<T, 64, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<128, 64>::kSmemBytes));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_csplit_kernel<T, 64, S>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      int(cudaSharedmemCarveoutMaxShared)));
  // The 128-pixel form (WgmmaConfig::push, forced only): 193 KiB, one CTA per SM.
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_csplit_kernel<T, 128, S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      TileCfg<128>::kSmemBytes));
  return core::Status::success();
}

template <class T>
core::Status prepare_type() {
  JHDNN_TRY((prepare_epilogue<T, false>()));
  JHDNN_TRY((prepare_epilogue<T, true>()));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_splitk_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  // Round 7: 64-pixel tiles split over clusters of 2 or 4 (two ~97 KiB CTAs per SM, like bm 64).
  JHDNN_TRY((prepare_csplit<T, 2>()));
  JHDNN_TRY((prepare_csplit<T, 4>()));
  return core::Status::success();
}

core::Status prepare_device() {
  int dev = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  if (dev < 64 && (g_prepared.load(std::memory_order_acquire) & (uint64_t(1) << dev))) return core::Status::success();
  JHDNN_TRY(prepare_type<__half>());
  JHDNN_TRY(prepare_type<__nv_bfloat16>());
  JHDNN_TRY(prepare_type<float>());
  int clusters = 0;
  for (int i = 0; i < 3; ++i) {
    const unsigned size = 2u << i;  // 2, 4, 8
    cudaLaunchConfig_t cfg{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = size, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    cfg.gridDim = dim3(size), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = kSmem;
    cfg.attrs = attr, cfg.numAttrs = 1;
    clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, conv_wgmma_splitk_kernel<__half>, &cfg) != cudaSuccess) {
      cudaGetLastError();
      clusters = 0;
    }
    if (dev < 64) g_max_clusters[dev][i].store(std::max(clusters, 0), std::memory_order_relaxed);
  }
  if (dev < 64) {
    if (clusters > 0) g_cluster8.fetch_or(uint64_t(1) << dev);  // the last size asked is 8
    g_prepared.fetch_or(uint64_t(1) << dev, std::memory_order_release);
  }
  return core::Status::success();
}

bool cluster8_ok() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return dev < 64 && (g_cluster8.load(std::memory_order_acquire) & (uint64_t(1) << dev));
}

// JHDNN_TC_TAIL=on|off (core::config, read once per process): whether the solver may choose the
// split-K tail (unset: on; off runs those layers as plain 128-wide tiles, for A/B measurements).
// Any other value makes every run of the solver's own choice fail with its name.
bool env_tail(const char** bad) {
  const core::config::TcTail t = core::config::tc_tail();
  *bad = t == core::config::TcTail::kInvalid ? core::config::tc_tail_bad_value() : nullptr;
  return t == core::config::TcTail::kOn;
}

// The configuration the solver runs: plan_wgmma (wgmma_plan.cpp; README.md, "Generation 2" and
// "Wave quantization and the split-K tail"); split-K (all tiles, or only the last partial wave's)
// only when clusters of 8 fit, and only into as many clusters as run at once.
WgmmaConfig choose_config(const core::ConvProblem& p, int sm_count) {
  ClusterLimits limits;
  if (cluster8_ok()) {
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && dev < 64) {
      limits.of2 = g_max_clusters[dev][0].load(std::memory_order_relaxed);
      limits.of4 = g_max_clusters[dev][1].load(std::memory_order_relaxed);
      limits.of8 = g_max_clusters[dev][2].load(std::memory_order_relaxed);
    } else {
      cudaGetLastError();
    }
  }
  WgmmaPlan plan = plan_wgmma(p, sm_count, limits);
  const char* bad = nullptr;
  if (plan.tail && !env_tail(&bad)) plan = WgmmaPlan{128, 1, false};  // JHDNN_TC_TAIL=off
  WgmmaConfig c;
  c.bn = plan.bn, c.split = plan.split, c.tail = plan.tail, c.bm = plan.bm, c.deep = plan.deep;
  return c;
}

// The staged epilogue's 16-byte vectors apply: y has unit channel stride, its n, h, w strides and
// K are multiples of the vector (8 fp16/bf16, 4 fp32 channels) and y is 16-byte aligned, so every
// vector is aligned and lies wholly inside or wholly past [0, K). Otherwise (odd K, NCHW y, an
// offset pointer) the kernel with the direct epilogue runs, whatever was asked.
bool staged_vector_ok(const core::ConvProblem& p, const void* y) {
  const int64_t v = 16 / elem_bytes(p.dtype);
  return p.y_stride[1] == 1 && p.y_stride[0] % v == 0 && p.y_stride[3] % v == 0 && p.y_stride[4] % v == 0 &&
         p.K % v == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
}

// JHDNN_TC_EPILOGUE=tma|staged|direct (core::config, read once per process): the epilogue of
// WgmmaEpilogue::kDefault (unset: tma). Any other value makes every default-epilogue run fail
// with its name.
WgmmaEpilogue env_epilogue(const char** bad) {
  const core::config::TcEpilogue e = core::config::tc_epilogue();
  *bad = e == core::config::TcEpilogue::kInvalid ? core::config::tc_epilogue_bad_value() : nullptr;
  return e == core::config::TcEpilogue::kDirect   ? WgmmaEpilogue::kDirect
         : e == core::config::TcEpilogue::kStaged ? WgmmaEpilogue::kStaged
                                                  : WgmmaEpilogue::kTma;
}

// How a run with configuration cfg (bn != 0) divides its tiles between the two kernels: tiles
// [0, unsplit_end) go to the persistent unsplit kernel over `grid` CTAs, tiles [unsplit_end,
// num_tiles) to the split-K kernel, one cluster of `split` CTAs per tile (none when split == 1).
//   split 1:            everything unsplit;
//   split > 1, no tail: everything split-K (unsplit_end = 0);
//   split > 1, tail:    the whole waves of the persistent grid unsplit, the last partial wave's
//                       tiles split-K (wgmma_tail_division).
// A forced split is capped by the reduction blocks (each CTA needs one) and by 8 (the portable
// cluster size; 4 with bm 64: conv_wgmma_csplit_kernel's clusters); capped to 1, the run is unsplit.
// bm: 64 (bn 128, no tail: run_wgmma refuses other combinations) or 128. The persistent grid
// (grid 0) is one wave: #SMs CTAs, twice that where two CTAs fit an SM (bn 64, and bm 64 unless
// deep: the deep 64 x 128 CTA takes an SM's shared memory alone).
struct Division {
  int bn = 128, split = 1, bm = 128;
  int64_t num_tiles = 0, unsplit_end = 0, grid = 0;
};

Division divide(const core::ConvProblem& p, WgmmaConfig cfg, int sm_count) {
  Division d;
  d.bn = cfg.split > 1 ? 128 : cfg.bn;
  d.bm = cfg.bm == 64 ? 64 : 128;
  d.num_tiles = wgmma_pixel_tiles(p, pick_pixel_box(p, d.bm)) * ((p.K + d.bn - 1) / d.bn);
  const int64_t kblocks = wgmma_reduction_blocks(p);
  const int max_split = d.bm == 64 || cfg.push ? 4 : 8;  // conv_wgmma_csplit_kernel: clusters of 2 or 4
  while (d.split * 2 <= cfg.split && d.split * 2 <= kblocks && d.split < max_split) d.split *= 2;
  d.grid = cfg.grid > 0 ? cfg.grid : int64_t(sm_count) * (d.bn == 64 || (d.bm == 64 && !cfg.deep) ? 2 : 1);
  if (d.split == 1)
    d.unsplit_end = d.num_tiles;
  else if (cfg.tail)
    d.unsplit_end = wgmma_tail_division(d.num_tiles, d.grid).dp_tiles;
  else
    d.unsplit_end = 0;
  return d;
}

// Whether a run with cfg (bn != 0) stores through the staged epilogue's vectors: asked for (or the
// default), some tiles run in the unsplit kernel (the split-K kernel already stores from shared
// memory, 128 contiguous bytes per warp instruction), and staged_vector_ok.
bool staged_taken(const core::ConvProblem& p, const void* y, WgmmaConfig cfg, int sm_count) {
  const char* bad = nullptr;
  const WgmmaEpilogue e = cfg.epilogue == WgmmaEpilogue::kDefault ? env_epilogue(&bad) : cfg.epilogue;
  return (e == WgmmaEpilogue::kStaged || e == WgmmaEpilogue::kTma) && divide(p, cfg, sm_count).unsplit_end > 0 &&
         staged_vector_ok(p, y);
}

// The TMA-store epilogue (README.md, "TMA store epilogue") applies to a run's unsplit kernel: asked
// for (kTma), the staged vectors apply (unit channel stride, n / h / w strides and K multiples of 8
// channels, so every y stride is a multiple of 16 bytes as a tensor map needs, and y 16-byte
// aligned), 16-bit data, beta == 0 (the bulk store overwrites; a blend with y stays on the vector
// path), 128-pixel tiles 128 or 256 channels wide (bm 64 CTAs run two per SM and have no room for
// the 2 x 2 KiB buffers per warp -- the deep one-per-SM bm 64 kernel would, but is not instantiated
// with them: README.md, "Round 9"; bn 64 stages 64-byte rows), not the multicast kernel, and strides
// below 2^40 bytes (the tensor map's limit).
bool tma_store_ok(const core::ConvProblem& p, const void* y, double beta, WgmmaEpilogue e, int bn, int bm, bool multicast) {
  if (e != WgmmaEpilogue::kTma || beta != 0.0 || p.dtype == JHDNN_DATA_FLOAT || !staged_vector_ok(p, y)) return false;
  if (bm == 64 || (bn != 128 && bn != 256) || multicast) return false;
  const int64_t limit = int64_t(1) << 39;  // elements of 2 bytes: strides below 2^40 bytes
  return p.y_stride[0] < limit && p.y_stride[3] < limit && p.y_stride[4] < limit;
}

bool tma_taken(const core::ConvProblem& p, const void* y, double beta, WgmmaConfig cfg, int sm_count) {
  const char* bad = nullptr;
  const WgmmaEpilogue e = cfg.epilogue == WgmmaEpilogue::kDefault ? env_epilogue(&bad) : cfg.epilogue;
  const Division d = divide(p, cfg, sm_count);
  return d.unsplit_end > 0 && tma_store_ok(p, y, beta, e, d.bn, d.bm, cfg.multicast);
}

// tma: the TMA-store kernel (tma_store_ok; then my is y's tensor map), only instantiated for 16-bit
// T, BN 128 / 256, BM 128. The other kernels ignore my (the caller passes any valid map). kDeep:
// the 8-stage 64 x 128 kernel (BM 64, BN 128; staged or direct epilogue only).
template <class T, int BN, int BM = kBM, bool kDeep = false>
void launch_unsplit(bool staged, bool tma, unsigned grid, cudaStream_t stream, const CUtensorMap& mx,
                    const CUtensorMap& mw, const CUtensorMap& my, T* y, const WgParams& w) {
  using Cfg = TileCfg<BN, BM, kDeep>;
  if constexpr (sizeof(T) == 2 && BN >= 128 && BM == kBM && !kDeep) {
    if (tma) {
      conv_wgmma_kernel<T, BN, true, BM, true><<<grid, Cfg::kThreads, Cfg::smem_bytes_tma(), stream>>>(mx, mw, my, y, w);
      return;
    }
  }
  if (staged)
    conv_wgmma_kernel<T, BN, true, BM, false, kDeep><<<grid, Cfg::kThreads, Cfg::smem_bytes(true), stream>>>(mx, mw, my, y, w);
  else
    conv_wgmma_kernel<T, BN, false, BM, false, kDeep><<<grid, Cfg::kThreads, Cfg::smem_bytes(false), stream>>>(mx, mw, my, y, w);
}

template <class T>
core::Status launch(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, bool fallback, int sm_count,
                    cudaStream_t stream) {
  JHDNN_TRY(prepare_device());
  const int64_t es = int64_t(sizeof(T));
  const int kBK = kRowBytes / int(sizeof(T));
  const int BN = cfg.split > 1 ? 128 : cfg.bn;
  const int BM = cfg.bm == 64 ? 64 : 128;  // run_wgmma: bm 64 only with bn 128, no tail
  WgParams w{};
  w.N = int(p.N), w.P = int(p.P), w.Q = int(p.Q), w.K = int(p.K);
  pick_box(p, BM, w);
  w.tiles_q = int((p.Q + w.bw - 1) / w.bw);
  w.tiles_p = int((p.P + w.bh - 1) / w.bh);
  w.tiles_img = int((p.N + w.bn - 1) / w.bn);
  w.tiles_k = int((p.K + BN - 1) / BN);
  const int64_t num_tiles = int64_t(w.tiles_q) * w.tiles_p * w.tiles_img * w.tiles_k;
  if (num_tiles * std::max(cfg.split, 1) >= (int64_t(1) << 31))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: too many tiles");
  w.num_tiles = int(num_tiles);
  w.R = int(p.R), w.S = int(p.S);
  w.cblocks = int((p.C + kBK - 1) / kBK);
  w.kblocks = w.R * w.S * w.cblocks;
  w.pad_h = p.pad_h, w.pad_w = p.pad_w, w.str_h = p.stride_h, w.str_w = p.stride_w;
  w.dil_h = p.dil_h, w.dil_w = p.dil_w, w.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  w.split = 1;
  w.ys[0] = p.y_stride[0], w.ys[1] = p.y_stride[1], w.ys[2] = p.y_stride[3], w.ys[3] = p.y_stride[4];
  w.alpha = float(a.alpha), w.beta = float(a.beta);

  CUtensorMap mx, mw;
  {
    const cuuint64_t dims[4] = {cuuint64_t(p.C), cuuint64_t(p.W), cuuint64_t(p.H), cuuint64_t(p.N)};
    const cuuint64_t strides[3] = {cuuint64_t(p.x_stride[4] * es), cuuint64_t(p.x_stride[3] * es),
                                   cuuint64_t(p.x_stride[0] * es)};
    const cuuint32_t box[4] = {cuuint32_t(kBK), cuuint32_t(w.bw * p.stride_w), cuuint32_t(w.bh * p.stride_h),
                               cuuint32_t(w.bn)};
    const cuuint32_t estr[4] = {1, cuuint32_t(p.stride_w), cuuint32_t(p.stride_h), 1};
    JHDNN_TRY(encode(&mx, p.dtype, a.x, 4, dims, strides, box, estr));
  }
  {
    const cuuint64_t dims[3] = {cuuint64_t(p.C), cuuint64_t(p.R * p.S), cuuint64_t(p.K)};
    const cuuint64_t strides[2] = {cuuint64_t(p.C * es), cuuint64_t(p.R * p.S * p.C * es)};
    const cuuint32_t box[3] = {cuuint32_t(kBK), 1, cuuint32_t(BN)};
    const cuuint32_t estr[3] = {1, 1, 1};
    JHDNN_TRY(encode(&mw, p.dtype, a.w, 3, dims, strides, box, estr));
  }
  T* y = static_cast<T*>(a.y);
  const Division d = divide(p, cfg, sm_count);
  if (d.num_tiles != num_tiles || d.grid < 1 || d.grid >= (int64_t(1) << 31))
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR, "tensorcore_wgmma: tile division disagrees (%lld vs %lld tiles, grid %lld)",
                      (long long)d.num_tiles, (long long)num_tiles, (long long)d.grid);
  // An unsplit launch (all tiles, the whole waves before a split-K tail, or a refused cluster
  // launch's fallback) takes the staged epilogue when asked and staged_vector_ok; the split-K
  // kernel has its own shared-memory epilogue.
  const bool staged =
      (cfg.epilogue == WgmmaEpilogue::kStaged || cfg.epilogue == WgmmaEpilogue::kTma) && staged_vector_ok(p, a.y);
  // The TMA-store kernel: y as the 4-D tensor (K, Q, P, N), stored in boxes of 64 channels x one
  // warp's 16 pixels (tma_store_box.h), 128-byte swizzled like the staging buffers. Encoded (or found
  // in the per-thread cache) only when this path runs; mx stands in for it otherwise.
  const bool tma = d.unsplit_end > 0 && tma_store_ok(p, a.y, a.beta, cfg.epilogue, BN, BM, cfg.multicast);
  CUtensorMap my = mx;
  if (tma) {
    const TmaStoreBox b = tma_store_box(w.bw, w.bh);
    const cuuint64_t dims[4] = {cuuint64_t(p.K), cuuint64_t(p.Q), cuuint64_t(p.P), cuuint64_t(p.N)};
    const cuuint64_t strides[3] = {cuuint64_t(p.y_stride[4] * es), cuuint64_t(p.y_stride[3] * es),
                                   cuuint64_t(p.y_stride[0] * es)};
    const cuuint32_t box[4] = {cuuint32_t(kTmaStoreCols), cuuint32_t(b.w), cuuint32_t(b.h), cuuint32_t(b.n)};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    JHDNN_TRY(encode(&my, p.dtype, a.y, 4, dims, strides, box, estr));
  }
  auto run_unsplit = [&](int64_t first, int64_t end) {
    WgParams u = w;
    u.split = 1, u.tile_base = int(first), u.num_tiles = int(end);
    const unsigned grid = unsigned(std::min<int64_t>(end - first, d.grid));
    if (BM == 64) {
      if (cfg.deep)  // round 9: 8 stages, one CTA per SM (run_wgmma: split 1 only, so never a split-K fallback)
        launch_unsplit<T, 128, 64, true>(staged, false, grid, stream, mx, mw, my, y, u);
      else
        launch_unsplit<T, 128, 64>(staged, false, grid, stream, mx, mw, my, y, u);
      return;
    }
    switch (BN) {
      case 64: launch_unsplit<T, 64>(staged, false, grid, stream, mx, mw, my, y, u); break;
      case 256: launch_unsplit<T, 256>(staged, tma, grid, stream, mx, mw, my, y, u); break;
      default: launch_unsplit<T, 128>(staged, tma, grid, stream, mx, mw, my, y, u); break;
    }
  };
  if (cfg.multicast) {  // run_wgmma: bn 128, bm 128, split 1, no tail -- every tile unsplit
    // Clusters of two CTAs on pairs of pixel tiles of one channel tile (conv_wgmma_mc_kernel).
    const int64_t pixel_tiles = num_tiles / w.tiles_k, pairs = w.tiles_k * ((pixel_tiles + 1) / 2);
    const int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(pairs, d.grid / 2));
    WgParams u = w;
    u.split = 1, u.tile_base = 0, u.num_tiles = int(num_tiles);
    cudaLaunchConfig_t lc{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    lc.gridDim = dim3(unsigned(2 * clusters)), lc.blockDim = dim3(kThreads);
    lc.dynamicSmemBytes = TileCfg<128>::smem_bytes(staged), lc.stream = stream, lc.attrs = attr, lc.numAttrs = 1;
    const cudaError_t e = staged ? cudaLaunchKernelEx(&lc, conv_wgmma_mc_kernel<T, true>, mx, mw, y, u)
                                 : cudaLaunchKernelEx(&lc, conv_wgmma_mc_kernel<T, false>, mx, mw, y, u);
    if (e != cudaSuccess) {
      cudaGetLastError();
      return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "tensorcore_wgmma: multicast cluster launch failed: %s",
                        cudaGetErrorString(e));
    }
    return core::Status::success();
  }
  if (d.unsplit_end > 0) {
    run_unsplit(0, d.unsplit_end);
    JHDNN_LAUNCH_CHECK();
  }
  if (d.unsplit_end == num_tiles) return core::Status::success();

  // Tiles [unsplit_end, num_tiles): one cluster of d.split CTAs per tile; each CTA needs at least
  // one reduction block (divide caps the split).
  w.split = d.split, w.tile_base = int(d.unsplit_end);
  if (BM == 64 || cfg.push) {
    // Round 7: one cluster of 2 or 4 CTAs per tile, push reduction (conv_wgmma_csplit_kernel):
    // 64-pixel tiles (~97 KiB CTAs, two per SM), or 128-pixel ones with WgmmaConfig::push (193 KiB);
    // unsplit_end is 0 (no tail with either: run_wgmma).
    cudaLaunchConfig_t lc{};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = unsigned(d.split), attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
    lc.gridDim = dim3(unsigned((num_tiles - d.unsplit_end) * d.split));
    lc.blockDim = dim3(BM == 64 ? TileCfg<128, 64>::kThreads : TileCfg<128>::kThreads);
    lc.dynamicSmemBytes = BM == 64 ? TileCfg<128, 64>::kSmemBytes : TileCfg<128>::kSmemBytes;
    lc.stream = stream, lc.attrs = attr, lc.numAttrs = 1;
    cudaError_t e;
    if (BM == 64)
      e = d.split == 2 ? cudaLaunchKernelEx(&lc, conv_wgmma_csplit_kernel<T, 64, 2>, mx, mw, y, w)
                       : cudaLaunchKernelEx(&lc, conv_wgmma_csplit_kernel<T, 64, 4>, mx, mw, y, w);
    else
      e = d.split == 2 ? cudaLaunchKernelEx(&lc, conv_wgmma_csplit_kernel<T, 128, 2>, mx, mw, y, w)
                       : cudaLaunchKernelEx(&lc, conv_wgmma_csplit_kernel<T, 128, 4>, mx, mw, y, w);
    if (e == cudaSuccess) return core::Status::success();
    cudaGetLastError();  // refused (not sticky): the solver's choice runs the unsplit 64-pixel kernel, same tiles and maps
    if (!fallback)
      return core::fail(JHDNN_STATUS_EXECUTION_FAILED,
                        "tensorcore_wgmma: push split-K cluster launch (bm %d, %d CTAs per tile) failed: %s", BM, d.split,
                        cudaGetErrorString(e));
    run_unsplit(d.unsplit_end, num_tiles);
    JHDNN_LAUNCH_CHECK();
    return core::Status::success();
  }
  cudaLaunchConfig_t lc{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(d.split), attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  lc.gridDim = dim3(unsigned((num_tiles - d.unsplit_end) * d.split)), lc.blockDim = dim3(kThreads);
  lc.dynamicSmemBytes = kSmem, lc.stream = stream, lc.attrs = attr, lc.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&lc, conv_wgmma_splitk_kernel<T>, mx, mw, y, w);
  if (e == cudaSuccess) return core::Status::success();
  // A refused cluster launch (a configuration error, reported at launch, not sticky): the solver's
  // own choice falls back to the unsplit 128-wide kernel for the same tiles (same tile width and
  // tensor maps); a forced configuration reports the error.
  cudaGetLastError();
  if (!fallback)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "tensorcore_wgmma: split-K cluster launch (%d CTAs per tile) failed: %s",
                      d.split, cudaGetErrorString(e));
  run_unsplit(d.unsplit_end, num_tiles);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

// Everything run() checks, then the launch with configuration cfg.
core::Status run_wgmma(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, void* ws, size_t ws_bytes,
                       cudaStream_t stream) {
  const core::DeviceInfo& dev = cached_device_info();
  if (const char* why = check_wgmma(p, dev)) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: %s", why);
  if (!a.x || !a.w || !a.y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorcore_wgmma: x, w or y is null");
  // TMA needs 16-byte aligned tensors; a merely element-aligned one runs on generation 1.
  if ((reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.w)) % 16 != 0)
    return tensorcore_mma_solver().run(p, a, ws, ws_bytes, stream);
  if (cfg.epilogue == WgmmaEpilogue::kDefault) {
    const char* bad = nullptr;
    cfg.epilogue = env_epilogue(&bad);
    if (bad != nullptr)
      return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: JHDNN_TC_EPILOGUE=%s is not 'tma', 'staged' or 'direct'", bad);
  }
  const bool chosen = cfg.bn == 0;
  if (chosen) {
    const char* bad = nullptr;
    (void)env_tail(&bad);
    if (bad != nullptr)
      return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: JHDNN_TC_TAIL=%s is not 'on' or 'off'", bad);
    JHDNN_TRY(prepare_device());  // choose_config asks whether clusters of 8 fit
    const WgmmaEpilogue e = cfg.epilogue;
    cfg = choose_config(p, dev.sm_count);
    cfg.epilogue = e;
  }
  if (cfg.bn != 64 && cfg.bn != 128 && cfg.bn != 256)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: tile width %d is not 64, 128 or 256", cfg.bn);
  if (cfg.grid < 0) return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: grid %d is negative", cfg.grid);
  if (cfg.bm != 0 && cfg.bm != 64 && cfg.bm != 128)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: tile height %d is not 64 or 128", cfg.bm);
  if (cfg.push && cfg.tail)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: the push split-K kernel runs no tail (whole tiles only)");
  if (cfg.multicast && (cfg.bn != 128 || cfg.bm == 64 || cfg.split > 1 || cfg.tail))
    return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: B multicast runs with bn 128, bm 128, split 1 only");
  if (cfg.bm == 64 && (cfg.bn != 128 || cfg.tail))
    return core::fail(JHDNN_STATUS_BAD_PARAM, "tensorcore_wgmma: 64-pixel tiles run with bn 128 and no split-K tail only (asked bn %d%s)",
                      cfg.bn, cfg.tail ? " tail" : "");
  if (cfg.deep && (cfg.bm != 64 || cfg.split > 1))
    return core::fail(JHDNN_STATUS_BAD_PARAM,
                      "tensorcore_wgmma: the deep pipeline runs 64-pixel tiles unsplit only (asked bm %d split %d)",
                      cfg.bm == 64 ? 64 : 128, cfg.split);
  switch (p.dtype) {
    case JHDNN_DATA_HALF: return launch<__half>(p, a, cfg, chosen, dev.sm_count, stream);
    case JHDNN_DATA_BFLOAT16: return launch<__nv_bfloat16>(p, a, cfg, chosen, dev.sm_count, stream);
    default: return launch<float>(p, a, cfg, chosen, dev.sm_count, stream);
  }
}

class TensorCoreWgmmaSolver final : public ConvSolver {
 public:
  const char* name() const override { return "tensorcore_wgmma"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const override {
    if (const char* why = check_wgmma(p, dev)) return Verdict::no(why);
    return Verdict::yes();
  }

  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    return run_wgmma(p, a, WgmmaConfig{}, ws, ws_bytes, stream);
  }

  // Raises the kernels' shared-memory limit at handle creation (nothing to do off Hopper: the
  // solver refuses there, and the 193 KiB limit does not exist).
  Status load_kernels() const override {
    if (cached_device_info().sm() != 90) return core::Status::success();
    return prepare_device();
  }
};

}  // namespace

WgmmaConfig wgmma_config(const core::ConvProblem& p, int sm_count) {
  (void)prepare_device();  // whether clusters of 8 fit is learned here; without it, no split
  return choose_config(p, sm_count);
}

core::Status forward_wgmma(const core::ConvProblem& p, const ConvArgs& a, WgmmaConfig cfg, cudaStream_t stream) {
  return run_wgmma(p, a, cfg, nullptr, 0, stream);
}

bool wgmma_staged_stores(const core::ConvProblem& p, const void* y, WgmmaConfig cfg) {
  if (cfg.bn == 0) {
    const WgmmaEpilogue e = cfg.epilogue;
    cfg = wgmma_config(p, cached_device_info().sm_count);
    cfg.epilogue = e;
  }
  return staged_taken(p, y, cfg, cached_device_info().sm_count);
}

bool wgmma_tma_stores(const core::ConvProblem& p, const void* y, double beta, WgmmaConfig cfg) {
  if (cfg.bn == 0) {
    const WgmmaEpilogue e = cfg.epilogue;
    cfg = wgmma_config(p, cached_device_info().sm_count);
    cfg.epilogue = e;
  }
  return tma_taken(p, y, beta, cfg, cached_device_info().sm_count);
}

const char* wgmma_epilogue_name(WgmmaEpilogue e) {
  switch (e) {
    case WgmmaEpilogue::kDirect: return "direct";
    case WgmmaEpilogue::kStaged: return "staged";
    case WgmmaEpilogue::kTma: return "tma";
    default: return "default";
  }
}

}  // namespace tensorcore

const ConvSolver& tensorcore_wgmma_solver() {
  static const auto& s = *new tensorcore::TensorCoreWgmmaSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
