// The Sparse DNN Graph Challenge layer, fused, and the row compaction between layers.
//
// Layout (the seed paper's): features are stored feature-major, x(i, img) at x[i * ldx + img], so
// the 32 lanes of a warp, each owning one active image, read one input feature of 32 images as one
// coalesced segment. W is given transposed in ELL form (row j = the input neurons of output j).
//
// A block is 8 warps over one tile of 32 active images (blockIdx.x) and one slice of output neurons
// (blockIdx.y); warp w takes outputs slice_begin + w, + 8, ... of the descriptor's row order (if
// set): outputs that share inputs then run back to back and their feature lines are reused from L1
// (in the challenge networks the 16 outputs with the same residue mod N/16 have the same inputs).
// (The fused and multi-layer paths run width-32 layers through layer_tile_reuse instead: contiguous
// runs per warp, the list's features held in registers.) For each output the warp loads the
// row's 32 (index, weight) pairs with one coalesced load and keeps them in registers; __shfl_sync
// broadcasts them, so weights cost 8 bytes per 32 edges and every feature load is a coalesced line,
// whatever the permutation of the network. The bias, ReLU and clamp are applied in registers and
// the output row written once. A lane that produces a nonzero marks its image alive.
//
// Active rows: activeRows[r] says which column of x holds the r-th active image; output r is
// written compactly at column r of y. *activeCount lives on the device, so a whole network runs
// without a host round trip: the grid is sized for maxActive and surplus tiles leave at once.
#include <algorithm>
#include <atomic>
#include <climits>

#include <cub/device/device_scan.cuh>

#include "core/config.h"
#include "core/cuda_check.h"
#include "sparse/reuse_tile.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

using tile::kWarps;
using tile::kMinSlice;

// Loads of data that an EARLIER layer of the same launch may have written (features, active lists).
// kCoherent = false (one launch per layer): the data is read-only for the kernel's lifetime, so the
// non-coherent path (__ldg, ld.global.nc) and plain loads are fine. kCoherent = true (the multi-layer
// kernel): ld.global.ca, a weak load that takes part in the memory model, so after the grid barrier
// (fence + atomics: release/acquire at GPU scope) it sees the previous layer's stores; .nc loads carry
// no such guarantee (a line cached two layers earlier could be returned stale). Both cache in L1.
template <bool kCoherent>
__device__ __forceinline__ float ld_x(const float* p) {
  if constexpr (kCoherent) return __ldca(p);
  else return __ldg(p);
}
template <bool kCoherent>
__device__ __forceinline__ int ld_list(const int* p) {
  if constexpr (kCoherent) return __ldca(p);
  else return *p;
}

// One output neuron with exactly 32 (input, weight) pairs, one per lane (index my_i < 0: padding,
// weight my_w already 0): acc[q] += sum over the 32 pairs of w * x[image q][i]. Each pair is
// broadcast by __shfl_sync; with one image per lane all 32 feature loads are issued before the
// FMAs (independent addresses), with kIpt images per lane each broadcast serves kIpt loads.
template <bool kCoherent, int kIpt>
__device__ __forceinline__ void dot32(int my_i, float my_w, const float* const (&xs)[kIpt], const bool (&valid)[kIpt],
                                      int64_t ldx, float (&acc)[kIpt]) {
  if constexpr (kIpt == 1) {
    float xv[32];
#pragma unroll
    for (int t = 0; t < 32; ++t) {
      const int i = __shfl_sync(0xffffffffu, my_i, t);
      xv[t] = (valid[0] && i >= 0) ? ld_x<kCoherent>(xs[0] + int64_t(i) * ldx) : 0.f;
    }
#pragma unroll
    for (int t = 0; t < 32; ++t) acc[0] += __shfl_sync(0xffffffffu, my_w, t) * xv[t];
  } else {
#pragma unroll 8
    for (int t = 0; t < 32; ++t) {
      const int i = __shfl_sync(0xffffffffu, my_i, t);
      const float w = __shfl_sync(0xffffffffu, my_w, t);
      const int64_t off = int64_t(i) * ldx;
#pragma unroll
      for (int q = 0; q < kIpt; ++q) acc[q] += w * ((valid[q] && i >= 0) ? ld_x<kCoherent>(xs[q] + off) : 0.f);
    }
  }
}

// kIpt images per lane (a tile of 32 * kIpt images per block): each (index, weight) pair broadcast by
// __shfl_sync then serves kIpt coalesced loads and FMAs, which matters while many images are alive
// (shuffles and loads compete for the same issue slots). kIpt = 1 once few are left, so that the
// tiles still cover the GPU.
// One work item: the images tile0 .. tile0 + 32 * kIpt - 1 (those below count) of the active list,
// output neurons t_out in [j_begin, j_end) of the row order, warp w taking j_begin + w, + kWarps, ...
// Writes y for every valid image and sets row_nonzero[r] = 1 for each image that has a nonzero
// output among these neurons (benign race: every writer writes 1; the flags were zero).
template <bool kWidth32, int kIpt, bool kCoherent = false>
__device__ __forceinline__ void layer_tile(int lane, int warp, int count, int tile0, int64_t j_begin, int64_t j_end,
                                           int width, const int* __restrict__ wi, const float* __restrict__ wv,
                                           float bias, float clamp_max, const int* __restrict__ active_rows,
                                           const float* __restrict__ x, int64_t ldx, float* __restrict__ y,
                                           int64_t ldy, int* __restrict__ row_nonzero,
                                           const int* __restrict__ order) {
  const float* xs[kIpt];
  bool valid[kIpt], alive[kIpt];
#pragma unroll
  for (int q = 0; q < kIpt; ++q) {
    const int r = tile0 + q * 32 + lane;
    valid[q] = r < count;
    xs[q] = x + (valid[q] ? int64_t(ld_list<kCoherent>(active_rows + r)) : 0);
    alive[q] = false;
  }
  for (int64_t t_out = j_begin + warp; t_out < j_end; t_out += kWarps) {
    const int64_t j = order ? int64_t(order[t_out]) : t_out;  // output neuron (see jhdnnSetSparseMatrixRowOrder)
    const int* rowi = wi + j * width;
    const float* rowv = wv + j * width;
    float acc[kIpt];
#pragma unroll
    for (int q = 0; q < kIpt; ++q) acc[q] = 0.f;
    if constexpr (kWidth32) {
      const int my_i = rowi[lane];
      const float my_w = my_i >= 0 ? rowv[lane] : 0.f;  // padding: its value is never used (may be NaN)
      dot32<kCoherent, kIpt>(my_i, my_w, xs, valid, ldx, acc);
    } else {
      for (int k0 = 0; k0 < width; k0 += 32) {
        const int k = k0 + lane;
        const int my_i = k < width ? rowi[k] : -1;
        const float my_w = k < width ? rowv[k] : 0.f;
        const int cnt = min(32, width - k0);
        for (int t = 0; t < cnt; ++t) {
          const int i = __shfl_sync(0xffffffffu, my_i, t);
          const float w = __shfl_sync(0xffffffffu, my_w, t);
#pragma unroll
          for (int q = 0; q < kIpt; ++q)
            if (valid[q] && i >= 0) acc[q] += w * ld_x<kCoherent>(xs[q] + int64_t(i) * ldx);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kIpt; ++q) {
      const float v = fminf(fmaxf(acc[q] + bias, 0.f), clamp_max);
      if (valid[q]) {
        y[j * ldy + tile0 + q * 32 + lane] = v;
        alive[q] |= v != 0.f;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < kIpt; ++q)
    if (alive[q]) row_nonzero[tile0 + q * 32 + lane] = 1;  // benign race: every writer writes 1 (flags zeroed)
}

// lane_base + j * 32 elements as ONE IMAD.WIDE (nvcc otherwise rebuilds ((j * 32) | lane) * 4 + base:
// eight instructions per address, two addresses per output). j >= 0 and j * 128 fits 64 bits.
template <typename T>
__device__ __forceinline__ const T* row_lane(const T* lane_base, int j) {
  static_assert(sizeof(T) == 4, "rows of 32 four-byte elements");
  const T* p;
  asm("mad.wide.s32 %0, %1, 128, %2;" : "=l"(p) : "r"(j), "l"(lane_base));
  return p;
}

// One output of the held list: acc = fma(w_t, x_t, acc) for t = 0..31 from 0 (the fma chain of dot32
// and the CPU reference), the weights read as 8 16-byte broadcasts of the warp's buffer, then bias,
// ReLU and clamp. Used by the single steps and by a block step that found fewer than kBlockMin
// outputs on the list.
__device__ __forceinline__ float held_output(const float4* w4, const float (&xv)[32], float bias, float clamp_max) {
  float acc = 0.f;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const float4 w = w4[u];  // the same address in every lane: a broadcast
    acc = __fmaf_rn(w.x, xv[4 * u + 0], acc);
    acc = __fmaf_rn(w.y, xv[4 * u + 1], acc);
    acc = __fmaf_rn(w.z, xv[4 * u + 2], acc);
    acc = __fmaf_rn(w.w, xv[4 * u + 3], acc);
  }
  return fminf(fmaxf(acc + bias, 0.f), clamp_max);
}

// *p = v if `pred`, as one predicated store: nvcc turns `if (valid) *p = v` into a branch around the
// address arithmetic (5 more instructions per output). Volatile with a memory clobber: the compiler
// keeps it in program order with every other memory access (the fences and flag stores after it).
__device__ __forceinline__ void store_if(float* p, float v, bool pred) {
  asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %2, 0;\n\t@q st.global.f32 [%0], %1;\n\t}" ::"l"(p), "f"(v),
               "r"(unsigned(pred))
               : "memory");
}

// Block steps of layer_tile_reuse: up to kBlockOutputs outputs that share the held list at once (one
// independent fma chain each), when at least kBlockMin of them do (else one output).
constexpr int kBlockOutputs = 8;
constexpr int kBlockMin = 4;

struct __align__(16) ReuseSmem {
  float w[kBlockOutputs][32];   // w[o][t]: weight t of the step's output o (one-output steps: w[0])
  unsigned long long rows[32];  // row pointers (as integers: read back as ulonglong2 pairs)
};

// The 32 features of an input list (lane t holds index my_i of input t) for this lane's column: a
// full list (no padding) through the row pointers in sm.rows, else the index shuffled per feature
// (padding loads 0: fma(0, 0, acc) as in the CPU chain). Warp-uniform; every lane must have finished
// reading sm.rows of the previous list (a __syncwarp since).
template <bool kCoherent>
__device__ __forceinline__ void load_list(int lane, int my_i, unsigned col, const float* __restrict__ x, int64_t ldx,
                                          ReuseSmem& sm, float (&xv)[32]) {
  if (__all_sync(0xffffffffu, my_i >= 0)) {
    // Full list: lane t computes input t's row pointer; every lane reads them back in pairs.
    sm.rows[lane] = reinterpret_cast<unsigned long long>(x + int64_t(my_i) * ldx);
    __syncwarp();
    const ulonglong2* rows2 = reinterpret_cast<const ulonglong2*>(sm.rows);
#pragma unroll
    for (int t = 0; t < 32; t += 2) {
      const ulonglong2 p = rows2[t / 2];  // the same address in every lane: a broadcast
      xv[t] = ld_x<kCoherent>(reinterpret_cast<const float*>(p.x) + col);
      xv[t + 1] = ld_x<kCoherent>(reinterpret_cast<const float*>(p.y) + col);
    }
  } else {
#pragma unroll
    for (int t = 0; t < 32; ++t) {
      const int i = __shfl_sync(0xffffffffu, my_i, t);
      xv[t] = i >= 0 ? ld_x<kCoherent>(x + int64_t(i) * ldx + col) : 0.f;
    }
  }
}

// The block / single steps over the outputs [t_begin, t_end) of the row order (a warp's run, or a
// piece of it that the list tile does not take), for this lane's image (column col; `valid`: the lane
// stores and flags). The held list (xv, held_i) starts empty, so a piece never reuses a list held
// before it. alive: running max of |v| over this lane's outputs.
template <bool kCoherent>
__device__ __forceinline__ void reuse_range(int lane, bool valid, unsigned col, int t_begin, int t_end,
                                            const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                                            float clamp_max, const float* __restrict__ x, int64_t ldx,
                                            char* const y_lane, const uint64_t ldy_bytes,
                                            const int* __restrict__ order, ReuseSmem& sm, bool block, float& alive) {
  const int* const wi_lane = wi + lane;
  const float* const wv_lane = wv + lane;
  const int* const wi4_lane = wi + 4 * (lane & 7);  // block steps: slots 4 (lane % 8) .. + 3
  const float* const wv4_lane = wv + 4 * (lane & 7);
  float xv[32];
#pragma unroll
  for (int t = 0; t < 32; ++t) xv[t] = 0.f;
  int held_i = -2;    // the input index this lane's xv slot list was loaded for (-2: nothing held yet)
  const float4* const w4 = reinterpret_cast<const float4*>(sm.w[0]);
  for (int g0 = t_begin, g1; g0 < t_end; g0 = g1) {
    g1 = tile::group_end(g0, t_end, block);
    const int cnt = g1 - g0;  // 1 .. 32
    // Lanes past cnt hold output 0 (a valid row): reads past the group's last output hit it, harmlessly.
    const int my_j = lane < cnt ? (order ? __ldg(order + g0 + lane) : g0 + lane) : 0;
    if (block) {
      // Block steps. The rows of outputs k .. k + 7 (past the group: lanes that hold valid rows, see
      // my_j) come in as 16-byte pieces: lane l loads slots s .. s + 3 (s = 4 (l % 8)) of outputs
      // l / 8 and l / 8 + 4, zeroes the weights of padding slots and stores them to the weight
      // buffers; m = how many of these outputs, from k on, have output k's list (every slot equal);
      // the list is loaded unless held. m >= kBlockMin run as m independent chains over the same
      // features (kBlockOutputs chains are computed; those past m are dropped), else output k alone.
      // Each chain is acc = fma(w_t, x_t, acc), t = 0..31 in order.
      for (int k = 0; k < cnt;) {
        __syncwarp();  // every lane has read the previous step's weights and row pointers
        const int i0 = __ldg(row_lane(wi_lane, __shfl_sync(0xffffffffu, my_j, k)));  // lane t: slot t of output k
        const int s4 = lane & 7, o4 = lane >> 3;  // slots 4 s4 .. 4 s4 + 3 of outputs o4 and o4 + 4
        int4 ref;  // output k's slots 4 s4 .. 4 s4 + 3
        ref.x = __shfl_sync(0xffffffffu, i0, 4 * s4 + 0);
        ref.y = __shfl_sync(0xffffffffu, i0, 4 * s4 + 1);
        ref.z = __shfl_sync(0xffffffffu, i0, 4 * s4 + 2);
        ref.w = __shfl_sync(0xffffffffu, i0, 4 * s4 + 3);
        unsigned same = 0xffu;  // bit o: output k + o has output k's list (in this lane's slots)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int o = o4 + 4 * h;
          const int jo = __shfl_sync(0xffffffffu, my_j, k + o);  // lane (k + o) mod 32
          const int4 iv = __ldg(reinterpret_cast<const int4*>(row_lane(wi4_lane, jo)));
          float4 wv4 = __ldg(reinterpret_cast<const float4*>(row_lane(wv4_lane, jo)));
          wv4.x = iv.x >= 0 ? wv4.x : 0.f;  // padding: 0 (its value may be NaN)
          wv4.y = iv.y >= 0 ? wv4.y : 0.f;
          wv4.z = iv.z >= 0 ? wv4.z : 0.f;
          wv4.w = iv.w >= 0 ? wv4.w : 0.f;
          reinterpret_cast<float4*>(sm.w[o])[s4] = wv4;
          if (iv.x != ref.x || iv.y != ref.y || iv.z != ref.z || iv.w != ref.w) same &= ~(1u << o);
        }
        same = __reduce_and_sync(0xffffffffu, same);                      // ... in every slot
        same &= cnt - k >= kBlockOutputs ? 0xffu : (1u << (cnt - k)) - 1u;  // ... and in the group
        const int m = __ffs(~same) - 1;  // leading outputs with output k's list: 1 .. kBlockOutputs
        const int steps = m >= kBlockMin ? m : 1;
        if (!__all_sync(0xffffffffu, i0 == held_i)) {  // a new input list: load its 32 features
          load_list<kCoherent>(lane, i0, col, x, ldx, sm, xv);
          held_i = i0;
        }
        __syncwarp();  // the weight stores are visible to the whole warp
        if (steps > 1) {
          float acc[kBlockOutputs];
#pragma unroll
          for (int o = 0; o < kBlockOutputs; ++o) acc[o] = 0.f;
#pragma unroll
          for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int o = 0; o < kBlockOutputs; ++o) {
              const float4 w = reinterpret_cast<const float4*>(sm.w[o])[u];  // a broadcast
              acc[o] = __fmaf_rn(w.x, xv[4 * u + 0], acc[o]);
              acc[o] = __fmaf_rn(w.y, xv[4 * u + 1], acc[o]);
              acc[o] = __fmaf_rn(w.z, xv[4 * u + 2], acc[o]);
              acc[o] = __fmaf_rn(w.w, xv[4 * u + 3], acc[o]);
            }
#pragma unroll
          for (int o = 0; o < kBlockOutputs; ++o) {
            const bool mine = o < kBlockMin || o < steps;  // steps >= kBlockMin here
            const float v = fminf(fmaxf(acc[o] + bias, 0.f), clamp_max);
            const int jo = __shfl_sync(0xffffffffu, my_j, k + o);
            store_if(reinterpret_cast<float*>(y_lane + uint64_t(unsigned(jo)) * ldy_bytes), v, valid && mine);
            if (mine) alive = fmaxf(alive, fabsf(v));
          }
        } else {
          const float v = held_output(w4, xv, bias, clamp_max);
          const int j0 = __shfl_sync(0xffffffffu, my_j, k);
          store_if(reinterpret_cast<float*>(y_lane + uint64_t(unsigned(j0)) * ldy_bytes), v, valid);
          alive = fmaxf(alive, fabsf(v));
        }
        k += steps;
      }
      continue;
    }
    // One output at a time, the next output's pair fetched one output ahead.
    int j = __shfl_sync(0xffffffffu, my_j, 0);
    int cur_i = __ldg(row_lane(wi_lane, j));
    float cur_w = __ldg(row_lane(wv_lane, j));
    for (int k = 0; k < cnt; ++k) {
      // Prefetch: the next output's pair (lane k + 1, or lane 0 / a lane past cnt after the last one).
      const int jn = __shfl_sync(0xffffffffu, my_j, k + 1);
      const int nxt_i = __ldg(row_lane(wi_lane, jn));
      const float nxt_w = __ldg(row_lane(wv_lane, jn));
      __syncwarp();  // every lane has read the previous output's weights (and row pointers)
      sm.w[0][lane] = cur_i >= 0 ? cur_w : 0.f;  // padding: its value is never used (may be NaN)
      if (!__all_sync(0xffffffffu, cur_i == held_i)) {  // a new input list: load its 32 features
        load_list<kCoherent>(lane, cur_i, col, x, ldx, sm, xv);
        held_i = cur_i;
      }
      __syncwarp();  // the weight stores above are visible to the whole warp
      const float v = held_output(w4, xv, bias, clamp_max);
      store_if(reinterpret_cast<float*>(y_lane + uint64_t(unsigned(j)) * ldy_bytes), v, valid);  // j >= 0
      alive = fmaxf(alive, fabsf(v));
      j = jn;
      cur_i = nxt_i;
      cur_w = nxt_w;
    }
  }
}

}  // namespace
}  // namespace jhdnn::sparse
#include "sparse/list_tile.cuh"  // the list-blocked tile (uses the helpers above)
#include "sparse/deep_steps.cuh"  // cta2's pipelined block steps (uses the helpers above and list_tile's cp.async)
#include "sparse/cta_tile.cuh"   // the CTA-level GEMM tile (uses the helpers above and list_tile's cp.async)
#include "sparse/late4_tile.cuh"  // late4's late layers: a lane of 16 rows x 4 images (uses the above)
namespace jhdnn::sparse {
namespace {

// The fused kernels' tile for ELL width 32, every layer (crowded or not): each warp serves 32 images
// (one per lane) x a CONTIGUOUS run of outputs. The block's tile has `groups` groups of 32 images
// (layer_shape's ipt: 4 while >= 2 x SMs tiles of 128 exist, else 1); the 8 warps are groups x runs
// (4 x 2 or 1 x 8): warp w serves image group w / runs and run w % runs of the slice, so the warps of
// one run read the same weight rows close together (one L2 fetch, the others L1 hits: per full
// N = 1024 layer 469 tiles x 3 slices x 87 KB = 0.12 GB of weights from L2, where 32-image tiles
// would move 1875 x 256 KB = 0.48 GB). Why, per full N = 1024 layer of 60000 images:
// - Feature reuse in registers. In the row order (the descriptor's hint) rows with the same input
//   list are adjacent (16 per list in the challenge), so the warp keeps the 32 feature values of the
//   current list in registers and loads them again only when the next output's 32 indices differ
//   (one __all_sync). ~one load per (32 images, list): 1875 x 64 x 32 x 128 B = 0.49 GB of L2 -> SM
//   traffic per layer (each image's features read twice, once per list an input belongs to; a run
//   boundary inside a list costs one more), near the HBM floor of the layer (0.25 GB in, 0.25 GB out).
// - Weights from shared memory as 16-byte broadcasts. Lane k holds the output's k-th pair (one
//   coalesced load, fetched one output ahead); the weights are stored to a per-warp buffer and read
//   back as 8 ld.shared.v4 that every lane reads at the same address, instead of 32 __shfl_sync.
// - Few instructions per output: the tile is instruction-bound (src/sparse/README.md, "Crowded
//   layers: a SASS count"). Per (warp, output) 84 SASS instructions: 32 FFMA, 8 LDS.128 and 44 others
//   (prefetch, weight store, list vote, bias / ReLU / clamp, store; 113 before this was cut): 32-bit
//   output indices, lane pointers for the weight rows (one mad.wide per address), a predicated
//   store, `alive` as a running max of |v| (one FMNMX), every lane computing (lanes past the count
//   load column 0 of x, in bounds, and neither store nor flag). Per list load of a full list (no
//   padding, the challenge's case) 136 (was 476): each lane computes ITS input's row pointer
//   x + i * ldx, the 32 pointers go through the warp's shared buffer (16 LDS.128 broadcasts), and
//   each feature is a 64-bit add of the lane's column and one load (was a shuffle, two constant
//   loads and 64-bit multiply-adds per feature). A list with padding (index -1) takes the general
//   loop (the index shuffled per feature, padding loads 0).
// - Block steps (`block`: JHDNN_SPDNN_TILE=block, and 16-byte aligned weight arrays): the outputs that
//   share the held list (16 per list in the challenge) run 8 at a time as 8 independent chains over
//   the same registers, so a warp is not one serial chain of 32 dependent FMAs per output; the 8 rows
//   come in as 16-byte pieces and the list check is one __reduce_and_sync. 560 SASS instructions per
//   step of 8 outputs (70 per output; 168 for a one-output step, taken when fewer than 4 outputs
//   from here share the list). Groups then end at multiples of 32 (reuse_tile.h group_end) so that
//   aligned lists are never cut by a group.
// - Per output, the same 32 products are summed in the same order as layer_tile / dot32
//   (acc = fma(w_t, x_t, acc), t = 0..31, padding as fma(0, 0, acc)), so y is bitwise the same.
// sm: this warp's shared buffers (ReuseSmem). w: the step's weights (w[0] for one output), written
// after a __syncwarp (every lane has read the previous step's) and read after another (every lane's
// store is visible). rows: the 32 row pointers of a list load, written after the first of those and
// read after a __syncwarp of its own.
// - List mode (tile_mode 2, kList: the per-layer fused kernel's own instantiation, list_buf = its
//   dynamic shared memory): the run's aligned 16-output blocks that share one unpadded list are
//   16 x 32 tiles from shared memory, staged by double-buffered cp.async (list_tile.cuh: list_run);
//   the rest of the run takes block steps (reuse_range).
template <bool kCoherent, bool kList, bool kDeep = false>
__device__ __forceinline__ void layer_tile_reuse(int lane, int warp, int groups, int count, int tile0,
                                                 int64_t j_begin, int64_t j_end, const int* __restrict__ wi,
                                                 const float* __restrict__ wv, float bias, float clamp_max,
                                                 const int* __restrict__ active_rows, const float* __restrict__ x,
                                                 int64_t ldx, float* __restrict__ y, int64_t ldy,
                                                 int* __restrict__ row_nonzero, const int* __restrict__ order,
                                                 ReuseSmem& sm, int tile_mode, float* list_buf) {
  // outputs [run.begin, run.end); list mode: runs begin at multiples of 16 (fused_layer's shape too)
  const tile::Run run = tile::warp_run(warp, groups, j_begin, j_end, kList && !kCoherent ? tile::kListOutputs : 1);
  const int r = tile0 + run.group * 32 + lane;  // this warp's group of 32 images
  const bool valid = r < count;
  // This lane's column of x. Lanes past the count read column 0 (in bounds: count >= 1) and compute
  // like the others, so that no branch splits the warp; they neither store y nor flag.
  const unsigned col = valid ? unsigned(ld_list<kCoherent>(active_rows + r)) : 0u;
  const int t_begin = run.begin, t_end = run.end;
  // Lane pointers: y_lane + j * ldy is this lane's output of neuron j; lane k of row j holds pair k.
  char* const y_lane = reinterpret_cast<char*>(y + (valid ? r : 0));
  const uint64_t ldy_bytes = uint64_t(ldy) * sizeof(float);
  // Block steps (and the list tile) load rows as 16-byte pieces: only with 16-byte aligned weight arrays.
  const bool aligned = ((reinterpret_cast<uintptr_t>(wi) | reinterpret_cast<uintptr_t>(wv)) & 15u) == 0;
  const bool block = tile_mode >= 1 && aligned;
  float alive = 0.f;  // max |v| over this lane's outputs in block / single steps: nonzero iff one of them is
  if constexpr (kList && !kCoherent) {  // the list tile: the per-layer fused kernel's list instantiation only
    if (tile_mode == 2 && aligned && list_buf != nullptr) {
      const int r0 = tile0 + run.group * 32;
      list_run(lane, warp, valid, col, t_begin, t_end, wi, wv, bias, clamp_max, x, ldx,
               reinterpret_cast<char*>(y + r0), y_lane, ldy_bytes, count - r0,
               (reinterpret_cast<uintptr_t>(y) & 15u) == 0 && (ldy & 3) == 0, order, sm, list_buf, row_nonzero + r0,
               alive);
      if (valid && alive != 0.f) row_nonzero[r] = 1;  // benign race: every writer writes 1 (flags zeroed)
      return;
    }
  }
  if constexpr (kDeep) {  // cta2: the pipelined block steps, their buffers (DeepSmem) in the dynamic memory
    if (block) {
      static_assert(!kCoherent, "the pipelined block steps are the per-layer cta2 kernel's");
      const bool valid1[1] = {valid};
      const unsigned col1[1] = {col};
      float alive1[1] = {alive};
      reuse_range_deep<1>(lane, valid1, col1, t_begin, t_end, wi, wv, bias, clamp_max, x, ldx, y_lane, ldy_bytes,
                          order, *reinterpret_cast<DeepSmem*>(list_buf), alive1);
      if (valid && alive1[0] != 0.f) row_nonzero[r] = 1;  // benign race: every writer writes 1 (flags zeroed)
      return;
    }
  }
  reuse_range<kCoherent>(lane, valid, col, t_begin, t_end, wi, wv, bias, clamp_max, x, ldx, y_lane, ldy_bytes, order,
                         sm, block, alive);
  if (valid && alive != 0.f) row_nonzero[r] = 1;  // benign race: every writer writes 1 (flags zeroed)
}

// cta2w (JHDNN_SPDNN_TILE=cta2w): one warp's share of a 64-image item (cta2w_layer_shape's ipt = 2) by
// the pipelined block steps with two images per lane (deep_steps.cuh, kImages = 2): lane l serves images
// tile0 + l and tile0 + 32 + l over the warp's run of the slice (8 runs per slice, as a 32-image item, here
// aligned to 16-row list blocks: cta_tile.h, cta2w_layer_shape).
// Needs 16-byte aligned weight arrays (fused_layer checks).
__device__ __forceinline__ void layer_tile_deep2(int lane, int warp, int count, int tile0, int64_t j_begin,
                                                 int64_t j_end, const int* __restrict__ wi,
                                                 const float* __restrict__ wv, float bias, float clamp_max,
                                                 const int* __restrict__ active_rows, const float* __restrict__ x,
                                                 int64_t ldx, float* __restrict__ y, int64_t ldy,
                                                 int* __restrict__ row_nonzero, const int* __restrict__ order,
                                                 DeepSmem& sm) {
  const tile::Run run = tile::warp_run(warp, 1, j_begin, j_end, tile::kCta2wRunAlign);  // runs at multiples of 16
  const int r0 = tile0 + lane;
  // Lanes past the count compute on column 0 (in bounds: count >= 1) and neither store nor flag; image 1
  // of a lane is valid only if image 0 is (r0 + 32 > r0).
  const bool valid[2] = {r0 < count, r0 + 32 < count};
  const unsigned col[2] = {valid[0] ? unsigned(active_rows[r0]) : 0u, valid[1] ? unsigned(active_rows[r0 + 32]) : 0u};
  // Image 0's outputs; image 1's are 32 floats on (only stored when valid[1], so r0 + 32 < count).
  char* const y_lane = reinterpret_cast<char*>(y + (valid[0] ? r0 : 0));
  const uint64_t ldy_bytes = uint64_t(ldy) * sizeof(float);
  float alive[2] = {0.f, 0.f};
  reuse_range_deep<2>(lane, valid, col, run.begin, run.end, wi, wv, bias, clamp_max, x, ldx, y_lane, ldy_bytes, order,
                      sm, alive);
  // benign races: every writer writes 1 (flags zeroed)
  if (valid[0] && alive[0] != 0.f) row_nonzero[r0] = 1;
  if (valid[1] && alive[1] != 0.f) row_nonzero[r0 + 32] = 1;
}

// The separate-compaction path (jhdnnSparseDnnLayerForward): grid = (tiles, slices) sized on the host
// from maxActive; tiles past the device count leave at once. The count is clamped to max_active: the
// last tile may reach past max_active, and active_rows, y and row_nonzero hold max_active images.
template <bool kWidth32, int kIpt>
__global__ void __launch_bounds__(kWarps * 32)
dnn_layer_kernel(int64_t n_out, int width, const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                 float clamp_max, const int* __restrict__ active_count, const int* __restrict__ active_rows,
                 const float* __restrict__ x, int64_t ldx, float* __restrict__ y, int64_t ldy,
                 int* __restrict__ row_nonzero, int64_t slice, const int* __restrict__ order, int max_active) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int count = min(*active_count, max_active);  // the buffers hold max_active: never run past them
  const int tile0 = int(blockIdx.x) * 32 * kIpt;
  if (tile0 >= count) return;  // the whole tile is past the survivors
  const int64_t j_begin = int64_t(blockIdx.y) * slice;
  const int64_t j_end = min(n_out, j_begin + slice);
  layer_tile<kWidth32, kIpt>(lane, warp, count, tile0, j_begin, j_end, width, wi, wv, bias, clamp_max, active_rows, x,
                             ldx, y, ldy, row_nonzero, order);
}

// One layer of the multi-layer kernel's table (built by the launcher from the descriptors).
struct MultiLayer {
  const int* wi;
  const float* wv;
  const int* order;  // null: natural order
  int64_t n_out;
  int width;
};
// The table travels as a kernel parameter (no copy, no workspace, nothing between the host's checks
// and the launch): 96 x 40 B fits the classic 4 KB parameter limit; more layers take more launches.
constexpr int kTableLayers = 96;
struct LayerTable {
  MultiLayer layer[kTableLayers];
};
static_assert(sizeof(LayerTable) + 160 <= 4096, "the table and the other kernel parameters must fit 4 KB");

// JHDNN_SPDNN_TILE (core/config.h) as the kernels' tile mode: 0 = one output at a time (single), 1 =
// block steps, 2 = the list-blocked tile, 3 = the CTA tile (cta), 4 = the CTA tile with 3 stages (cta2),
// kAutoMode = per call by the weights' rows (auto, the default: tile::spdnn_auto_tile), 6 = cta2 with
// 64-image late items (cta2w), 7 = cta2 with late4's late layers (late4), 8 = late4 in every layer (late4all),
// 9 = late4 in the crowded layers and cta2w's 64-image items in the late ones (late4crowd).
// Modes 2-4 and 6-9 are the per-layer fused kernel's; the multi-layer kernel runs block steps for all but single.
constexpr int kAutoMode = 5;
constexpr int kCta2wMode = 6;
constexpr int kLate4Mode = 7;
constexpr int kLate4AllMode = 8;
constexpr int kLate4CrowdMode = 9;

// layer_shape (reuse_tile.h): the tiles and slices of a layer for `count` active images.
using tile::layer_shape;
using tile::Shape;

// The fused path (jhdnnSparseDnnLayerForwardCompact): one launch per layer whose shape does not
// depend on the host (a persistent grid of resident blocks), so a whole network can be captured in
// a CUDA graph with no host readback. Every block reads the device count, derives the same Shape,
// and walks the work items (tile, slice) with a grid stride. After an item, the block counts it in
// done[tile]; the block that completes a tile's last slice (threadFenceReduction pattern: a barrier, then
// thread 0 fences and makes one atomic per item) knows that tile's flags are final, so it compacts them:
// the tile's surviving images get one run of slots in the next list from one atomicAdd on *count_out, in
// their order within the tile (the order of the runs is unspecified), and the flags and done[tile] go back to zero.
// One layer of the fused path, run by every block of a persistent grid (see the comment above).
// kCoherent: the multi-layer kernel (the lists and features were written earlier in the same launch).
// kCtaStages (width 32, per-layer kernel, JHDNN_SPDNN_TILE=cta: 2 stages per half, cta2: 3; 0 = not the
// CTA tile; list_buf = its dynamic shared memory): items of 128-image tiles with 16-byte aligned weight
// arrays run cta_item (cta_tile.cuh), on a shape whose slices are aligned to 16-row list blocks;
// 32-image tiles (layer_shape's ipt = 1: the same shape as block mode) and unaligned weights run block
// steps, their per-warp buffers in the dynamic memory.
// kLateImages (cta2 only): 2 = cta2w, whose layers below the CTA tile's run 64-image items of
// layer_tile_deep2 (cta2w_layer_shape) rather than 32-image ones; 4 = late4, whose layers below the CTA tile's
// (tile::late4_late) run 128-image items of late4_item (late4_layer_shape); under late4all (tile_mode
// kLate4AllMode) its crowded layers too, on the CTA tile's shape (128-image tiles, slices of whole 16-row blocks).
// 3 = late4crowd (its own instantiation): the crowded layers run late4_item on the CTA tile's shape and the late
// layers cta2w's 64-image items; no CTA tile in it (compiled out), which with cta2w's kernel (late4_item inlined
// there, session 25's first version) cost ~25 spilled loads and stores per 16-row block of late4's loop and now
// 2 (scripts/sass-loops.py).
// kMasks (late4's kernels only: dnn_layer_cta_kernel<3, 3 / 4, true>): late4_item reads x's piece mask (pm), other
// items ignore it. Its own instantiations, so that the others hold no register for it.
template <bool kWidth32, bool kCoherent, bool kList = false, int kCtaStages = 0, int kLateImages = 1,
          bool kMasks = false>
__device__ __forceinline__ void fused_layer(int* s_sync, ReuseSmem* s_tile, int count, int64_t n_out,
                                            int width, const int* __restrict__ wi, const float* __restrict__ wv,
                                            float bias, float clamp_max, const int* __restrict__ active_rows,
                                            const int* __restrict__ ids_in, const float* __restrict__ x, int64_t ldx,
                                            float* __restrict__ y, int64_t ldy, int* __restrict__ rows_out,
                                            int* __restrict__ ids_out, int* __restrict__ count_out,
                                            int* __restrict__ flags, int* __restrict__ done,
                                            const int* __restrict__ order, int sm_count, int max_active,
                                            int tile_mode, float* list_buf, int64_t x_block = 128,
                                            int64_t y_block = 128, const PieceMasks& pm = PieceMasks{}) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  // List mode: slices and warp runs aligned to the 16-output list blocks (reuse_tile.h).
  constexpr bool kCta = kCtaStages > 0;
  constexpr bool kDeep2 = kLateImages == 2 || kLateImages == 3;  // cta2w's late items (cta2w, late4crowd)
  const bool late_layer = tile::late4_late(count, sm_count);  // fewer than cta_min_tiles 128-image tiles
  const Shape sh = kLateImages == 4 ? tile::late4_layer_shape(count, n_out, sm_count, int64_t(gridDim.x))
                   : kLateImages == 3 ? tile::late4crowd_layer_shape(count, n_out, sm_count, int64_t(gridDim.x))
                   : kDeep2 ? tile::cta2w_layer_shape(count, n_out, sm_count, int64_t(gridDim.x))
                   : kCta           ? tile::cta_layer_shape(count, n_out, sm_count, int64_t(gridDim.x))
                                    : layer_shape(count, n_out, sm_count, int64_t(gridDim.x), kList ? tile::kListOutputs : 1);
  // late4crowd: late4's items wherever its shape has 128-image items (the CTA tile's in a crowded layer, late4's
  // late one from kLate4CrowdLate4Images images on), cta2w's 64-image items elsewhere
  const bool late4 =  // block-uniform
      (kLateImages == 4 && (late_layer || tile_mode == kLate4AllMode)) || (kLateImages == 3 && sh.ipt == 4);
  const int tile_images = 32 * sh.ipt;
  const int64_t items = sh.tiles * sh.slices;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int tile = int(item % sh.tiles);
    const int64_t j_begin = (item / sh.tiles) * sh.slice;
    const int64_t j_end = min(n_out, j_begin + sh.slice);
    const int tile0 = tile * tile_images;
    if constexpr (kCta) {
      static_assert(kWidth32 && !kCoherent && !kList, "the CTA tile is the per-layer width-32 kernel's");
      ReuseSmem& sm = *reinterpret_cast<ReuseSmem*>(reinterpret_cast<char*>(list_buf) +
                                                    tile::cta_reuse_offset_bytes(warp, kCtaStages));
      const bool aligned = ((reinterpret_cast<uintptr_t>(wi) | reinterpret_cast<uintptr_t>(wv)) & 15u) == 0;
      // 32-bit byte strides (cta_tile.cuh: the addresses); x's and y's leading dimensions are the layer's image
      // capacity, so this holds for any network that fits a GPU; otherwise block steps.
      const bool strides = ldx <= int64_t(INT_MAX / 4) && ldy <= int64_t(INT_MAX / 4);
      if (late4 && aligned && strides) {  // late4's items (block-uniform): 128 images, 16 rows x 4 images a lane
        // (late4crowd's kernel takes the neuron-major layout only: its blocks of 128 columns are 128 floats apart at
        // compile time, as they were before the tiled layout; with runtime strides ptxas spilled there)
        late4_item<kMasks>(lane, warp, count, tile0, j_begin, j_end, wi, wv, bias, clamp_max, active_rows, x, ldx,
                           kLateImages == 4 ? x_block : 128, y, ldy, kLateImages == 4 ? y_block : 128, flags, order, pm,
                           *reinterpret_cast<Late4Staged*>(reinterpret_cast<char*>(list_buf) +
                                                           tile::late4_slot_offset_bytes(warp)));
      } else if (kLateImages != 3 && sh.ipt == 4 && !late4 && aligned && strides)  // block-uniform
        cta_item<kCtaStages>(lane, warp, count, tile0, j_begin, j_end, wi, wv, bias, clamp_max, active_rows, x, ldx,
                             y, ldy, flags, order, list_buf, sm);
      else if constexpr (kCtaStages == 3) {  // cta2: pipelined block steps (deep_steps.cuh)
        // The buffer's offset, opaque: computed here, not hoisted out of the item loop into a register held
        // through cta_item (cta2 runs at its 128-register cap).
        int deep_off = tile::cta_deep_offset_bytes(warp);
        asm volatile("" : "+r"(deep_off));
        if (kDeep2 && sh.ipt == 2 && aligned)  // cta2w: 64-image items, two images per lane
          layer_tile_deep2(lane, warp, count, tile0, j_begin, j_end, wi, wv, bias, clamp_max, active_rows, x, ldx, y,
                           ldy, flags, order, *reinterpret_cast<DeepSmem*>(reinterpret_cast<char*>(list_buf) + deep_off));
        else  // (cta2w / late4 with unaligned weights or wide strides: 2 / 4 groups of 32 images, one per lane)
          layer_tile_reuse<false, false, true>(lane, warp, sh.ipt, count, tile0, j_begin, j_end, wi, wv, bias,
                                               clamp_max, active_rows, x, ldx, y, ldy, flags, order, sm, tile_mode,
                                               reinterpret_cast<float*>(reinterpret_cast<char*>(list_buf) + deep_off));
      }
      else
        layer_tile_reuse<false, false>(lane, warp, sh.ipt, count, tile0, j_begin, j_end, wi, wv, bias, clamp_max,
                                       active_rows, x, ldx, y, ldy, flags, order, sm, tile_mode, nullptr);
    } else if constexpr (kWidth32) {  // one image per lane; sh.ipt groups of 32 images per tile
      layer_tile_reuse<kCoherent, kList>(lane, warp, sh.ipt, count, tile0, j_begin, j_end, wi, wv, bias, clamp_max,
                                         active_rows, x, ldx, y, ldy, flags, order, s_tile[warp], tile_mode,
                                         list_buf);
    } else {
      if (sh.ipt == 4)
        layer_tile<false, 4, kCoherent>(lane, warp, count, tile0, j_begin, j_end, width, wi, wv, bias, clamp_max,
                                        active_rows, x, ldx, y, ldy, flags, order);
      else
        layer_tile<false, 1, kCoherent>(lane, warp, count, tile0, j_begin, j_end, width, wi, wv, bias, clamp_max,
                                        active_rows, x, ldx, y, ldy, flags, order);
    }
    // The item is counted by thread 0 alone, as in grid_barrier: __syncthreads orders every thread's flag stores
    // before thread 0's fence (CTA scope), and the fence is cumulative, so they are visible device-wide before the
    // count. Before session 29 every thread fenced (MEMBAR.SC.GPU + CCTL.IVALL per warp and item: ~11% of the stall
    // samples of a late layer with one item per block); with one fence the warps wait at the barrier for the same
    // stores instead, and the loop times did not change (bench/results/ec4fff9/fence, fixed-*).
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();  // release: the block's flag stores, before the count
      const bool last = atomicAdd(done + tile, 1) == int(sh.slices) - 1;
      if (last) __threadfence();  // acquire: the other slices' flag stores, for the block after the barrier
      s_sync[0] = last;
    }
    __syncthreads();
    if (s_sync[0]) {  // block-uniform: every slice of this tile is finished, its stores visible to this block
      // The tile's survivors in one run of the next list: one atomicAdd for the tile (its warps' counts summed in
      // s_sync[1..4], the base in s_sync[5]), so that while nobody dies the next layer's tile of 128 entries is
      // one tile of this layer, 128 consecutive columns of y (one 512-byte piece of a feature row), where one
      // atomic per 32-image group let other tiles' runs fall between a tile's four (session 25).
      const int r = tile0 + int(threadIdx.x);
      // atomicExch reads the flag at L2 (never a stale L1 line) and leaves it zero for the next layer.
      // (tile_images is 32, 64 (cta2w) or 128 <= blockDim.x: whole warps; the block's other warps take no image)
      const bool alive = int(threadIdx.x) < tile_images && r < count && atomicExch(flags + r, 0) != 0;
      const unsigned mask = __ballot_sync(0xffffffffu, alive);
      if (lane == 0 && warp < tile_images / 32) s_sync[1 + warp] = __popc(mask);
      __syncthreads();
      if (threadIdx.x == 0) {
        int total = 0;
        for (int w = 0; w < tile_images / 32; ++w) {
          const int c = s_sync[1 + w];
          s_sync[1 + w] = total;  // the warp's offset in the tile's run
          total += c;
        }
        s_sync[5] = total > 0 ? atomicAdd(count_out, total) : 0;
        done[tile] = 0;  // no other block touches this tile again in this launch
      }
      __syncthreads();
      if (alive) {
        const int pos = s_sync[5] + s_sync[1 + warp] + __popc(mask & ((1u << lane) - 1u));
        // *count_out must be 0 on entry; if it was not, slots outside [0, max_active) are dropped
        // (the count still grows) rather than written past rows_out / ids_out.
        if (unsigned(pos) < unsigned(max_active)) {
          rows_out[pos] = r;
          ids_out[pos] = ld_list<kCoherent>(ids_in + r);
        }
      }
    }
    __syncthreads();  // s_sync is rewritten by the next item
  }
}

// kList (width 32 only, JHDNN_SPDNN_TILE=list): launched with tile::kListSmemBytes of dynamic shared
// memory, which allows 2 blocks per SM, so its register cap is that of 2 blocks (128) and the list
// tile's pipeline does not spill; the other instantiations keep 3 blocks (80 registers).
template <bool kWidth32, bool kList = false>
__global__ void __launch_bounds__(kWarps * 32, kList ? 2 : 3)
dnn_layer_compact_kernel(int64_t n_out, int width, const int* __restrict__ wi, const float* __restrict__ wv,
                         float bias, float clamp_max, const int* __restrict__ active_count,
                         const int* __restrict__ active_rows, const int* __restrict__ ids_in,
                         const float* __restrict__ x, int64_t ldx, float* __restrict__ y, int64_t ldy,
                         int* __restrict__ rows_out, int* __restrict__ ids_out, int* __restrict__ count_out,
                         int* __restrict__ flags, int* __restrict__ done, const int* __restrict__ order,
                         int sm_count, int max_active, int tile_mode, int64_t /*x_block*/, int64_t /*y_block*/,
                         const PieceMasks /*pm*/) {
  // (x_block / y_block: the neuron-major layout only comes here, 128; the tiled one runs dnn_layer_cta_kernel<3, 4>.
  // pm: dnn_layer_compact runs late4's masked kernels where it is set. The parameters keep one launch signature for
  // every kernel of dnn_layer_compact.)
  __shared__ int s_sync[6];  // fused_layer: the tile-done flag, the warps' survivor offsets, the tile's base
  __shared__ ReuseSmem s_tile[kWarps];  // the width-32 tile's per-warp buffers (weights, row pointers)
  // List mode only (tile_mode 2, launched with tile::kListSmemBytes): each warp's two list stages.
  extern __shared__ float4 s_list[];
  const int count = min(*active_count, max_active);  // the buffers hold max_active: never run past them
  if (count <= 0) return;  // nothing alive: *count_out stays 0
  fused_layer<kWidth32, false, kList>(s_sync, s_tile, count, n_out, width, wi, wv, bias, clamp_max, active_rows, ids_in,
                                      x, ldx, y, ldy, rows_out, ids_out, count_out, flags, done, order, sm_count,
                                      max_active, tile_mode,
                                      tile_mode == 2 ? reinterpret_cast<float*>(s_list) : nullptr);
}

// JHDNN_SPDNN_TILE=cta / cta2, width 32 (cta_tile.cuh; kStages 2 / 3 stages per half): launched with
// tile::cta_smem_bytes(kStages) of dynamic shared memory (cta 73.5 KB, cta2 110 KB), which holds both
// halves' stages and, aliased into each half's stage 0, the per-warp block-step buffers (ReuseSmem is not
// declared statically here: 10 KB more would leave cta 2 blocks per SM). cta: 3 blocks per SM, so the
// same 80-register cap as the block tile; cta2: 2 blocks per SM, 128 registers.
// kLateImages = 2 (kStages = 3 only): cta2w, the late layers' items of 64 images (fused_layer); 3: late4crowd;
// 4: late4.
// kMasks: the piece mask's instantiations of late4 (fused_layer), pm ignored by the others.
template <int kStages, int kLateImages = 1, bool kMasks = false>
__global__ void __launch_bounds__(kWarps * 32, tile::cta_blocks_per_sm(kStages))
dnn_layer_cta_kernel(int64_t n_out, int width, const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                     float clamp_max, const int* __restrict__ active_count, const int* __restrict__ active_rows,
                     const int* __restrict__ ids_in, const float* __restrict__ x, int64_t ldx, float* __restrict__ y,
                     int64_t ldy, int* __restrict__ rows_out, int* __restrict__ ids_out, int* __restrict__ count_out,
                     int* __restrict__ flags, int* __restrict__ done, const int* __restrict__ order, int sm_count,
                     int max_active, int tile_mode, int64_t x_block, int64_t y_block,
                     const __grid_constant__ PieceMasks pm) {
  __shared__ int s_sync[6];  // fused_layer: the tile-done flag, the warps' survivor offsets, the tile's base
  extern __shared__ float4 s_cta[];
  const int count = min(*active_count, max_active);  // the buffers hold max_active: never run past them
  if (count <= 0) return;  // nothing alive: *count_out stays 0
  fused_layer<true, false, false, kStages, kLateImages, kMasks>(
      s_sync, nullptr, count, n_out, width, wi, wv, bias, clamp_max, active_rows, ids_in, x, ldx, y, ldy, rows_out,
      ids_out, count_out, flags, done, order, sm_count, max_active, tile_mode, reinterpret_cast<float*>(s_cta), x_block,
      y_block, pm);
}

// Grid-wide barrier of the multi-layer kernel (its grid is co-resident: cooperative launch).
// bar[0] counts arrivals, bar[1] is the generation. Thread 0 reads the generation BEFORE arriving
// (it cannot change until this block has arrived), fences (release: the block's stores, ordered
// before it by __syncthreads, become visible at GPU scope), arrives; the last arriver resets the
// count (so the workspace is left as it was found: bar[0] = 0) and bumps the generation; the others
// poll it. The fence after the wait is the acquire side: the ld.global.ca loads that follow see
// every store made before the barrier by any block.
__device__ __forceinline__ void grid_barrier(unsigned* bar) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* gen = bar + 1;
    const unsigned g = *gen;
    __threadfence();
    if (atomicAdd(bar, 1u) == gridDim.x - 1) {
      atomicExch(bar, 0u);
      __threadfence();
      atomicAdd(bar + 1, 1u);
    } else {
      while (*gen == g) __nanosleep(32);
    }
    __threadfence();
  }
  __syncthreads();
}

// The multi-layer path (jhdnnSparseDnnLayersForwardCompact): ONE cooperative launch runs layers
// 0 .. layer_count - 1 of the table, each exactly as the fused kernel runs it (same shape, same
// arithmetic, same compaction), with a grid barrier instead of a kernel boundary between them.
// Layer k reads list / features set k & 1 and writes set (k + 1) & 1; counts[k] -> counts[k + 1].
// What this removes per layer: the launch, the ramp-up of the grid and the drain of its last
// block, the kernel-boundary flush; what remains is the barrier (one atomic per block, one poll).
// Nothing alive after a layer: every block sees count 0 and leaves (no barrier is skipped by some
// blocks only, since every block reads the same final count after the same barrier).
template <bool kAllWidth32>
__global__ void __launch_bounds__(kWarps * 32, 3)
dnn_layers_compact_kernel(const __grid_constant__ LayerTable table, int layer_count, float bias, float clamp_max,
                          int* __restrict__ counts, int* rows0, int* ids0, float* x0, int* rows1, int* ids1,
                          float* x1, int64_t ld, int* __restrict__ flags, int* __restrict__ done,
                          unsigned* __restrict__ bar, int sm_count, int max_active, int block) {
  __shared__ int s_sync[6];  // fused_layer: the tile-done flag, the warps' survivor offsets, the tile's base
  __shared__ ReuseSmem s_tile[kWarps];  // the width-32 tile's per-warp buffers (weights, row pointers)
  for (int k = 0; k < layer_count; ++k) {
    if (k > 0) grid_barrier(bar);
    // L2 read: written by other blocks in the previous layer (atomics), final after the barrier.
    const int count = min(__ldcg(counts + k), max_active);
    if (count <= 0) return;  // every block sees the same value: all leave, no barrier is left waiting
    const MultiLayer L = table.layer[k];
    const bool odd = (k & 1) != 0;
    int* rows_in = odd ? rows1 : rows0;
    int* ids_in = odd ? ids1 : ids0;
    const float* x = odd ? x1 : x0;
    int* rows_out = odd ? rows0 : rows1;
    int* ids_out = odd ? ids0 : ids1;
    float* y = odd ? x0 : x1;
    if (kAllWidth32 || L.width == 32)
      fused_layer<true, true>(s_sync, s_tile, count, L.n_out, 32, L.wi, L.wv, bias, clamp_max, rows_in, ids_in, x, ld, y,
                              ld, rows_out, ids_out, counts + k + 1, flags, done, L.order, sm_count, max_active,
                              block != 0 ? 1 : 0, nullptr);
    else if constexpr (!kAllWidth32)
      fused_layer<false, true>(s_sync, s_tile, count, L.n_out, L.width, L.wi, L.wv, bias, clamp_max, rows_in, ids_in, x,
                               ld, y, ld, rows_out, ids_out, counts + k + 1, flags, done, L.order, sm_count,
                               max_active, 0, nullptr);
  }
}

// flags -> 0/1 (the API accepts any nonzero int).
__global__ void normalize_flags(int n, const int* __restrict__ flags, int* __restrict__ out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = flags[t] != 0;
}

__global__ void scatter_survivors(int n, const int* __restrict__ f01, const int* __restrict__ scan,
                                  const int* __restrict__ ids_in, int* __restrict__ rows_out, int* __restrict__ ids_out,
                                  int* __restrict__ count_out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  if (f01[t]) {
    rows_out[scan[t]] = t;
    ids_out[scan[t]] = ids_in[t];
  }
  if (t == n - 1) *count_out = scan[t] + f01[t];
}

size_t align256(size_t b) { return (b + 255) & ~size_t(255); }

size_t scan_temp_bytes(int n) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr), n);
  return bytes;
}

}  // namespace

// A kernel's shared-memory attributes (its dynamic bytes, the largest carveout), set once per device
// (done[device] records it): at jhdnnCreate (load_dnn_kernels, never inside a stream capture) and, if
// that device was not seen there, at the kernel's first launch. The list kernel (tile::kListSmemBytes,
// 100 KB: 2 blocks per SM) and the CTA kernels (tile::cta_smem_bytes(kStages): cta 3, cta2 2 blocks per SM).
static constexpr int kAttrDevices = 64;
static std::atomic<bool> g_list_attr[kAttrDevices];
// [kStages - 2], [2]: cta2w, [3]: late4, [4]: late4crowd, [5] / [6]: late4's / late4crowd's with kMasks
static std::atomic<bool> g_cta_attr[7][kAttrDevices];
template <class Kernel>
static Status set_smem_attributes_once(Kernel kernel, int dyn_bytes, std::atomic<bool> (&done)[kAttrDevices]) {
  int device = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&device));
  const bool cached = device >= 0 && device < kAttrDevices;
  if (cached && done[device].load(std::memory_order_acquire)) return Status::success();
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn_bytes));
  JHDNN_CUDA_TRY(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
  if (cached) done[device].store(true, std::memory_order_release);
  return Status::success();
}
static Status set_list_kernel_attributes() {
  return set_smem_attributes_once(dnn_layer_compact_kernel<true, true>, int(tile::kListSmemBytes), g_list_attr);
}
template <int kStages, int kLateImages = 1, bool kMasks = false>
static Status set_cta_kernel_attributes() {
  return set_smem_attributes_once(dnn_layer_cta_kernel<kStages, kLateImages, kMasks>,
                                  int(tile::cta_smem_bytes(kStages)),
                                  g_cta_attr[kMasks ? (kLateImages == 3 ? 6 : 5)
                                             : kLateImages == 3   ? 4
                                             : kLateImages == 4 ? 3
                                             : kLateImages == 2 ? 2
                                                                : kStages - 2]);
}

Status load_dnn_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<true, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<true, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<false, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<false, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_compact_kernel<true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_compact_kernel<true, true>));
  JHDNN_TRY(set_list_kernel_attributes());
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<2>));
  JHDNN_TRY(set_cta_kernel_attributes<2>());
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3>));
  JHDNN_TRY(set_cta_kernel_attributes<3>());
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3, 2>));
  JHDNN_TRY((set_cta_kernel_attributes<3, 2>()));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3, 3>));
  JHDNN_TRY((set_cta_kernel_attributes<3, 3>()));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3, 4>));
  JHDNN_TRY((set_cta_kernel_attributes<3, 4>()));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3, 3, true>));
  JHDNN_TRY((set_cta_kernel_attributes<3, 3, true>()));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_cta_kernel<3, 4, true>));
  JHDNN_TRY((set_cta_kernel_attributes<3, 4, true>()));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_compact_kernel<false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layers_compact_kernel<true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layers_compact_kernel<false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, normalize_flags));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, scatter_survivors));
  return Status::success();
}

Status dnn_layer(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct& wt, float bias, float clamp_max,
                 int max_active, const int* active_count, const int* active_rows, const float* x, int64_t ldx,
                 float* y, int64_t ldy, int* row_nonzero) {
  if (max_active == 0) return Status::success();
  JHDNN_CUDA_TRY(cudaMemsetAsync(row_nonzero, 0, size_t(max_active) * sizeof(int), s));
  const int64_t n_out = wt.rows;
  // Four images per lane while there are enough 128-image tiles for two waves, else one.
  const int ipt = (int64_t(max_active) + 127) / 128 >= 2 * int64_t(sm_count) ? 4 : 1;
  const int64_t tiles = (int64_t(max_active) + 32 * ipt - 1) / (32 * ipt);
  // Enough blocks for ~4 waves even when few images are left: split the outputs into slices.
  int64_t slices = std::max<int64_t>(1, (4 * int64_t(sm_count) + tiles - 1) / tiles);
  slices = std::min<int64_t>(slices, std::max<int64_t>(1, n_out / kMinSlice));
  slices = std::min<int64_t>(slices, 65535);
  const int64_t slice = (n_out + slices - 1) / slices;
  slices = (n_out + slice - 1) / slice;
  const dim3 grid{unsigned(tiles), unsigned(slices), 1u};
  const int width = int(wt.width);
  auto launch = [&](auto kernel) {
    kernel<<<grid, kWarps * 32, 0, s>>>(n_out, width, wt.col_ind, wt.values, bias, clamp_max, active_count,
                                        active_rows, x, ldx, y, ldy, row_nonzero, slice, wt.row_order, max_active);
  };
  if (width == 32)
    ipt == 4 ? launch(dnn_layer_kernel<true, 4>) : launch(dnn_layer_kernel<true, 1>);
  else
    ipt == 4 ? launch(dnn_layer_kernel<false, 4>) : launch(dnn_layer_kernel<false, 1>);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

static_assert(tile::spdnn_auto_tile(1) == kLate4CrowdMode && tile::spdnn_auto_tile(16384) == kLate4AllMode &&
                  tile::spdnn_auto_tile(65536) == kLate4AllMode,
              "auto's late4crowd is mode 9, its late4all mode 8");
static Status spdnn_tile_mode(int* mode) {
  using core::config::SpdnnTile;
  const SpdnnTile t = core::config::spdnn_tile();
  if (t == SpdnnTile::kInvalid)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "JHDNN_SPDNN_TILE=%s: expected auto, cta2, block, single, list, cta, cta2w, late4, late4all or late4crowd",
                      core::config::spdnn_tile_bad_value());
  *mode = t == SpdnnTile::kAuto         ? kAutoMode
          : t == SpdnnTile::kLate4Crowd ? kLate4CrowdMode
          : t == SpdnnTile::kLate4All ? kLate4AllMode
          : t == SpdnnTile::kLate4    ? kLate4Mode
          : t == SpdnnTile::kCta2w ? kCta2wMode
          : t == SpdnnTile::kCta2  ? 4
          : t == SpdnnTile::kCta   ? 3
          : t == SpdnnTile::kList  ? 2
          : t == SpdnnTile::kBlock ? 1
                                   : 0;
  return Status::success();
}

// Workspace of the fused layer: flags for maxActive images, then one done counter per 32-image tile
// (the most tiles any launch shape has). Zeroed by the caller once; every launch leaves it zeroed.
size_t fused_workspace(int max_active) {
  const size_t n = size_t(std::max(max_active, 1));
  return align256(n * sizeof(int)) + align256((n + 31) / 32 * sizeof(int));
}

Status dnn_layer_compact(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct& wt, float bias,
                         float clamp_max, int max_active, const int* active_count, const int* active_rows,
                         const int* ids_in, jhdnnSparseDnnFeatureLayout_t layout, const float* x, int64_t ldx,
                         float* y, int64_t ldy, int* rows_out, int* ids_out, int* count_out, void* ws,
                         const PieceMasks& masks) {
  if (max_active == 0) return Status::success();
  int tile_mode = 0;
  JHDNN_TRY(spdnn_tile_mode(&tile_mode));
  // The tiled layout (session 26) is read and written by late4's items only: late4all's kernel, in every layer.
  // The API checked its requirements (width 32, 16-byte aligned weights, a tile that is auto or late4all).
  const bool tiled = layout == JHDNN_SPARSE_DNN_FEATURES_TILED128;
  int64_t x_block = 128, y_block = 128;
  if (tiled) {
    tile_mode = kLate4AllMode;
    x_block = wt.cols * 128;
    y_block = wt.rows * 128;
    ldx = ldy = 128;  // the row stride inside a block
  }
  int* flags = static_cast<int*>(ws);
  int* done = reinterpret_cast<int*>(static_cast<char*>(ws) + align256(size_t(max_active) * sizeof(int)));
  const int width = int(wt.width);
  // x's piece mask: late4's kernels with kMasks read it (late4crowd, late4, late4all); the others need not (a reader
  // may ignore it: the features under it are what the mask says)
  const bool masked = masks.x != nullptr;
  // Grid: as many blocks as are resident on the GPU at once; the kernel loops over the work items
  // (blocks without an item leave at once: ~1k empty blocks cost a microsecond or two).
  // List mode (width 32 only): 100 KB of dynamic shared memory per block (8 warps x 2 stages of 6.25 KB),
  // so 2 blocks per SM instead of 3; the grid (and so layer_shape's target) follows the occupancy.
  if (tile_mode == kAutoMode) tile_mode = tile::spdnn_auto_tile(wt.rows);
  const int mode = width == 32 ? tile_mode : std::min(tile_mode, 1);
  // CTA mode (width 32 only): tile::cta_smem_bytes(stages): both halves' stages; cta (mode 3) 73.5 KB, 3 blocks
  // per SM; cta2 (mode 4) 110 KB, 2 blocks per SM.
  const size_t dyn = mode == 2   ? size_t(tile::kListSmemBytes)
                     : mode == 3 ? size_t(tile::cta_smem_bytes(2))
                     : mode == 4 || mode >= kCta2wMode ? size_t(tile::cta_smem_bytes(3))
                                                       : 0;
  auto launch = [&](auto kernel) -> Status {
    if (mode == 2) JHDNN_TRY(set_list_kernel_attributes());  // normally done at jhdnnCreate
    if (mode == 3) JHDNN_TRY(set_cta_kernel_attributes<2>());
    if (mode == 4) JHDNN_TRY(set_cta_kernel_attributes<3>());
    if (mode == kCta2wMode) JHDNN_TRY((set_cta_kernel_attributes<3, 2>()));
    if (mode == kLate4CrowdMode) JHDNN_TRY((set_cta_kernel_attributes<3, 3>()));
    if (mode == kLate4Mode || mode == kLate4AllMode) JHDNN_TRY((set_cta_kernel_attributes<3, 4>()));
    if (masked && mode == kLate4CrowdMode) JHDNN_TRY((set_cta_kernel_attributes<3, 3, true>()));
    if (masked && (mode == kLate4Mode || mode == kLate4AllMode)) JHDNN_TRY((set_cta_kernel_attributes<3, 4, true>()));
    int per_sm = 0;
    JHDNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, dyn));
    const unsigned grid = unsigned(std::max(per_sm, 1) * std::max(sm_count, 1));
    kernel<<<grid, kWarps * 32, dyn, s>>>(wt.rows, width, wt.col_ind, wt.values, bias, clamp_max, active_count,
                                          active_rows, ids_in, x, ldx, y, ldy, rows_out, ids_out, count_out, flags,
                                          done, wt.row_order, sm_count, max_active, mode, x_block, y_block, masks);
    JHDNN_LAUNCH_CHECK();
    return Status::success();
  };
  if (masked && mode == kLate4CrowdMode) return launch(dnn_layer_cta_kernel<3, 3, true>);
  if (masked && (mode == kLate4Mode || mode == kLate4AllMode)) return launch(dnn_layer_cta_kernel<3, 4, true>);
  if (width != 32) return launch(dnn_layer_compact_kernel<false>);
  if (mode == 3) return launch(dnn_layer_cta_kernel<2>);
  if (mode == 4) return launch(dnn_layer_cta_kernel<3>);
  if (mode == kCta2wMode) return launch(dnn_layer_cta_kernel<3, 2>);
  if (mode == kLate4CrowdMode) return launch(dnn_layer_cta_kernel<3, 3>);
  if (mode == kLate4Mode || mode == kLate4AllMode) return launch(dnn_layer_cta_kernel<3, 4>);
  return mode == 2 ? launch(dnn_layer_compact_kernel<true, true>) : launch(dnn_layer_compact_kernel<true>);
}

// Workspace of the multi-layer kernel: the fused workspace (flags, done counters: zeroed once by the
// caller, left zeroed), then the barrier (2 counters, zeroed by the launcher before every launch, so
// a workspace whose barrier bytes are not zero can neither release a barrier early nor hang it).
size_t multi_workspace(int max_active) { return fused_workspace(max_active) + 256; }

namespace {
// Per device, queried once: cooperative-launch support (1 / 2 = no / yes) and the resident blocks
// per SM (+ 1) of the two multi-layer instantiations (0 = not queried yet). This path exists to cut
// per-layer host and launch costs, so a call does not repeat three driver queries. Concurrent first
// calls store the same values (benign).
constexpr int kMaxDevices = 64;
std::atomic<int> g_coop[kMaxDevices];
std::atomic<int> g_per_sm[kMaxDevices][2];

Status multi_launch_shape(bool all32, int* per_sm) {
  int device = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&device));
  const bool cached = device >= 0 && device < kMaxDevices;
  int coop = cached ? g_coop[device].load(std::memory_order_relaxed) - 1 : -1;
  if (coop < 0) {
    JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
    coop = coop != 0;
    if (cached) g_coop[device].store(coop + 1, std::memory_order_relaxed);
  }
  if (!coop) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "the device does not support cooperative launches");
  *per_sm = cached ? g_per_sm[device][all32].load(std::memory_order_relaxed) - 1 : -1;
  if (*per_sm < 0) {
    auto kernel = all32 ? dnn_layers_compact_kernel<true> : dnn_layers_compact_kernel<false>;
    JHDNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, kernel, kWarps * 32, 0));
    if (cached) g_per_sm[device][all32].store(*per_sm + 1, std::memory_order_relaxed);
  }
  if (*per_sm < 1) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "the multi-layer kernel does not fit on an SM");
  return Status::success();
}
}  // namespace

Status dnn_layers_compact(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct* const* wts, int layer_count,
                          float bias, float clamp_max, int max_active, int* counts, int* rows0, int* ids0, float* x0,
                          int* rows1, int* ids1, float* x1, int64_t ld, void* ws) {
  if (max_active == 0 || layer_count == 0) return Status::success();
  int tile_mode = 0;
  JHDNN_TRY(spdnn_tile_mode(&tile_mode));
  int block = tile_mode >= 1;  // list mode: block steps (the list tile is the per-layer kernel's)
  char* base = static_cast<char*>(ws);
  int* flags = reinterpret_cast<int*>(base);
  int* done = reinterpret_cast<int*>(base + align256(size_t(max_active) * sizeof(int)));
  unsigned* bar = reinterpret_cast<unsigned*>(base + fused_workspace(max_active));
  bool all32 = true;
  for (int k = 0; k < layer_count; ++k) all32 = all32 && wts[k]->width == 32;
  auto kernel = all32 ? dnn_layers_compact_kernel<true> : dnn_layers_compact_kernel<false>;
  int per_sm = 0;
  JHDNN_TRY(multi_launch_shape(all32, &per_sm));
  // Exactly the resident grid: a cooperative launch guarantees every block runs at once (the grid
  // barrier would deadlock otherwise) and fails cleanly if they cannot.
  const dim3 grid{unsigned(per_sm * std::max(sm_count, 1)), 1u, 1u};
  // Chunks of kTableLayers layers, one launch each. kTableLayers is even, so every chunk starts on
  // an even layer and reads set 0 (rows0, ids0, x0), as layer 0 does.
  static_assert(kTableLayers % 2 == 0, "a chunk must start on an even layer to read set 0");
  for (int c0 = 0; c0 < layer_count; c0 += kTableLayers) {
    LayerTable table{};
    int count = std::min(kTableLayers, layer_count - c0);
    for (int k = 0; k < count; ++k) {
      const jhdnnSparseMatrixStruct& w = *wts[c0 + k];
      table.layer[k] = MultiLayer{w.col_ind, w.values, w.row_order, w.rows, int(w.width)};
    }
    int* c = counts + c0;
    void* args[] = {&table, &count, &bias, &clamp_max, &c,    &rows0, &ids0,     &x0,        &rows1,
                    &ids1,  &x1,    &ld,   &flags,     &done, &bar,   &sm_count, &max_active, &block};
    // The barrier's counter and generation start at 0 in every launch (8 bytes, stream-ordered, and
    // capturable in a graph), whatever the workspace held.
    JHDNN_CUDA_TRY(cudaMemsetAsync(bar, 0, 2 * sizeof(unsigned), s));
    JHDNN_CUDA_TRY(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), grid,
                                               dim3{kWarps * 32, 1u, 1u}, args, 0, s));
  }
  return Status::success();
}

size_t compact_workspace(int max_active) {
  const size_t n = size_t(std::max(max_active, 1));
  return 2 * align256(n * sizeof(int)) + scan_temp_bytes(int(n));
}

Status compact(cudaStream_t s, int max_active, const int* flags, const int* ids_in, int* rows_out, int* ids_out,
               int* count_out, void* ws, size_t ws_size) {
  if (max_active == 0) {
    JHDNN_CUDA_TRY(cudaMemsetAsync(count_out, 0, sizeof(int), s));
    return Status::success();
  }
  const size_t slot = align256(size_t(max_active) * sizeof(int));
  int* f01 = static_cast<int*>(ws);
  int* scan = reinterpret_cast<int*>(static_cast<char*>(ws) + slot);
  void* temp = static_cast<char*>(ws) + 2 * slot;
  size_t temp_bytes = ws_size - 2 * slot;
  const unsigned grid = unsigned((max_active + 255) / 256);
  normalize_flags<<<grid, 256, 0, s>>>(max_active, flags, f01);
  JHDNN_LAUNCH_CHECK();
  JHDNN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, f01, scan, max_active, s));
  scatter_survivors<<<grid, 256, 0, s>>>(max_active, f01, scan, ids_in, rows_out, ids_out, count_out);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::sparse
