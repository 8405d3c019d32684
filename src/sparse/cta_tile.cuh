// The CTA-level GEMM tile of the fused sparse-DNN layer (JHDNN_SPDNN_TILE=cta; src/sparse/README.md,
// "CTA tile"; layout and thread shares in cta_tile.h). Included by dnn_layer.cu only, after list_tile.cuh
// (cp.async helpers) and its own helpers (row_lane, store_if, ReuseSmem, reuse_range), into the same
// anonymous namespace.
//
// Idea: the list tile (list_tile.cuh) made each WARP stage a 16 x 32 block (16 rows of one input list x
// 32 images); 128 registers, 2 blocks per SM, and from layer 3 on 4-byte gathers with 16 warps per SM to
// hide them. Here the staging is shared by a half of the CTA: for one list block (16 rows with the same
// 32 inputs I[t]) and the item's 128 images, the outputs are a 16 x 128 GEMM block with K = 32. The 128
// threads of a half copy A (32 x 128 features, t-major, 16 KB) and B (16 x 32 weights, 2.3 KB) into one
// of the half's two stages with cp.async -- 8 copies of 16 B per thread when the 128 columns are
// contiguous (layer 1), else 32 of 4 B, plus one 16-byte weight copy -- and each thread computes 4 rows
// x 4 images (16 chains) with, per 4 inputs, 4 LDS.128 of weights and 4 LDS.128 of features for 64 FFMA.
// The two halves (warps 0-3, 4-7) take alternate list blocks of the slice, each with its own stages and
// its own named barrier (bar.sync 1 / 2, 128 threads), so neither waits for the other. Every accumulator
// is acc = fma(w_t, x_t, acc), t = 0..31 in order from 0, then bias / ReLU / clamp: bitwise the block,
// single and list tiles and the CPU chain.
//
// Two instantiations by kStages, the stages per half (cta_tile.h): 2 = `cta` (JHDNN_SPDNN_TILE=cta: a
// double buffer, 3 blocks per SM, 80 registers), 3 = `cta2` (a 3-stage ring, so the copies are two list
// blocks ahead of the compute, and the compute's shared-memory fragments double-buffered in registers;
// 2 blocks per SM, up to 128 registers). Same items, shapes, list test, block steps, epilogue, results.
#pragma once

#include <type_traits>

#include "sparse/cta_tile.h"

namespace jhdnn::sparse {
namespace {

// Named barrier of half h (id h + 1; id 0 is __syncthreads): its 4 warps, 128 threads. Like
// __syncthreads for the participants, it orders their shared-memory accesses before and after it.
// The id is an IMMEDIATE in each of two warp-uniform branches (h = warp / 4): with the id in a register
// ptxas cannot tell which barriers are used and reserves all 16 ("used 16 barriers" in -Xptxas -v),
// and on sm_90 barriers are an occupancy resource (ncu launch__occupancy_limit_barriers): 16 per block
// could cost the 3 blocks per SM this kernel is sized for. With immediates: "used 3 barriers".
__device__ __forceinline__ void cta_bar(int h) {
  if (h == 0) asm volatile("bar.sync 1, 128;" ::: "memory");
  else asm volatile("bar.sync 2, 128;" ::: "memory");
}
// The same barrier with a vote: true iff p holds in all 128 threads of the half.
__device__ __forceinline__ bool cta_bar_and(int h, bool p) {
  unsigned r;
  if (h == 0)
    asm volatile(
        "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbar.red.and.pred q, 1, 128, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
        : "=r"(r)
        : "r"(unsigned(p))
        : "memory");
  else
    asm volatile(
        "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\tbar.red.and.pred q, 2, 128, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
        : "=r"(r)
        : "r"(unsigned(p))
        : "memory");
  return r != 0;
}
// Addresses: a column's base x + 4 col once per block (cta_col), then per copy or store base + i * ld_bytes
// with i and ld_bytes 32-bit, which nvcc emits as ONE IMAD.WIDE (from 64-bit products it rebuilds
// x + (i * ldx + col) * 4 per copy: ~5 instructions). cta_item takes the CTA path only when x's and y's
// row strides in bytes fit an int (ldx, ldy <= INT_MAX / 4).
__device__ __forceinline__ const char* cta_col(const char* row, unsigned col) {  // row + 4 col
  const char* p;
  asm("mad.wide.u32 %0, %1, 4, %2;" : "=l"(p) : "r"(col), "l"(row));
  return p;
}
// cp.async to dst + kOff (an immediate: nvcc otherwise turns the constant offsets of one thread's copies
// into OR / add instructions on its base, two more per copy).
template <int kOff>
__device__ __forceinline__ void cp_async16_at(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0 + %2], [%1], 16;" ::"r"(dst), "l"(src), "n"(kOff) : "memory");
}
template <int kOff>
__device__ __forceinline__ void cp_async4_at(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0 + %2], [%1], 4;" ::"r"(dst), "l"(src), "n"(kOff) : "memory");
}
// Compile-time loops (the offsets must be constant expressions).
template <int kBegin, int kEnd, typename F>
__device__ __forceinline__ void cta_static_for(F&& f) {
  if constexpr (kBegin < kEnd) {
    f(std::integral_constant<int, kBegin>{});
    cta_static_for<kBegin + 1, kEnd>(f);
  }
}
// 16-byte global store (st.global: never a generic ST.E.128, whatever nvcc infers about p).
__device__ __forceinline__ void cta_store4(float* p, float a, float b, float c, float d) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
// Every cp.async group of this thread has landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
// Every cp.async group of this thread but the kPending newest has landed.
template <int kPending>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// The block steps' per-warp buffers are aliased into the half's stage 0 at kCtaReuseBytes apart
// (cta_reuse_offset_bytes): a larger ReuseSmem would overlap the next warp's and race silently.
static_assert(sizeof(ReuseSmem) <= tile::kCtaReuseBytes && alignof(ReuseSmem) <= 16 && tile::kCtaReuseBytes % 16 == 0,
              "ReuseSmem must fit its kCtaReuseBytes slot (cta_tile.h)");
// cta2's pipelined block steps: warp w's DeepSmem at cta_deep_offset_bytes(w), kCtaDeepBytes apart.
static_assert(sizeof(DeepSmem) == tile::kCtaDeepBytes && alignof(DeepSmem) <= 16 && tile::kCtaDeepBytes % 16 == 0,
              "DeepSmem must fill its kCtaDeepBytes slot (cta_tile.h)");

// What a half's pipeline needs about the item and the layer.
struct CtaCtx {
  const int* wi;
  const float* wv;
  const char* x;
  int ldx_bytes;
  const int* order;  // null: natural order
  const unsigned* cols;  // shared: the item's 128 columns (column 0 past the count)
  bool contig;           // the 128 columns are col0 .. col0 + 127, 16-byte aligned rows: 16-byte copies
  float* half_buf;   // this half's stages (tile::cta_half_floats(kStages) floats)
  float bias, clamp_max;
  char* y_q;         // y + r0 + cta_image(w, lane, 0): this thread's first image
  int ldy_bytes;
  int valid_w;       // count - (r0 + 32 w): images of this warp's 32 that exist
  bool vec;          // y's rows 16-byte aligned: 16-byte stores of 4 images
};

// A list block's indices: lane t holds input t of row 0 (i0); lane l holds inputs 4 (l % 8) .. + 3 of
// row cta_copy_row(w, l) (iv). ord: lane l holds the output at position 16 b + l % 16.
struct CtaFetch {
  int i0;
  int4 iv;
};
__device__ __forceinline__ CtaFetch cta_fetch(int lane, int w, int ord, const int* __restrict__ wi) {
  CtaFetch f;
  f.i0 = __ldg(row_lane(wi + lane, __shfl_sync(0xffffffffu, ord, 0)));
  const int jo = __shfl_sync(0xffffffffu, ord, tile::cta_copy_row(w, lane));
  f.iv = __ldg(reinterpret_cast<const int4*>(row_lane(wi + tile::cta_copy_chunk(lane), jo)));
  return f;
}
// This thread's part of the list test: its 4 indices of its row equal row 0's, and row 0 has no
// padding (every slot of row 0 is some lane's i0, in every warp). The half's vote (cta_bar_and) makes
// it the block's test: all 16 rows have row 0's 32 indices, none is padding.
__device__ __forceinline__ bool cta_check(int lane, const CtaFetch& f) {
  const int c = tile::cta_copy_chunk(lane);
  const int rx = __shfl_sync(0xffffffffu, f.i0, c + 0), ry = __shfl_sync(0xffffffffu, f.i0, c + 1);
  const int rz = __shfl_sync(0xffffffffu, f.i0, c + 2), rw = __shfl_sync(0xffffffffu, f.i0, c + 3);
  return f.i0 >= 0 && f.iv.x == rx && f.iv.y == ry && f.iv.z == rz && f.iv.w == rw;
}

// Stage a list block (its order entries ord, its row-0 indices i0) into stage s of the half: one
// 16-byte weight copy, then 8 x 16-byte or 32 x 4-byte feature copies; one cp.async group.
__device__ __forceinline__ void cta_issue(int lane, int w, int ord, int i0, const CtaCtx& c, int s) {
  // Shared addresses as this thread's 32-bit base plus constants (cta_f_index is linear in t and the
  // image), so that every copy's destination is one register + an immediate.
  const unsigned st = smem_addr(c.half_buf + s * tile::kCtaStageFloats);
  const int row = tile::cta_copy_row(w, lane), c4 = tile::cta_copy_chunk(lane);
  const int jo = __shfl_sync(0xffffffffu, ord, row);
  cp_async16(st + 4u * unsigned(tile::cta_w_index(row, c4)), row_lane(c.wv + c4, jo));
  // Input t's feature of a column: x + 4 col + I[t] * ldx_bytes (I[t] >= 0: a list step has no padding).
  // The row offset is one IMAD.WIDE per input (32 x 32 -> 64 bits), shared by the 4 gathered columns.
  auto row_off = [&](int t) { return int64_t(__shfl_sync(0xffffffffu, i0, t)) * c.ldx_bytes; };
  if (c.contig) {  // one loop per kind, so that neither holds the other's registers
    const int img4 = tile::cta_copy_image4(lane);
    const char* const x_col = cta_col(c.x, c.cols[0] + unsigned(img4));  // images col0 + 4 lane .. + 3
    const unsigned dst = st + 4u * unsigned(tile::cta_f_index(tile::cta_copy_input(w, 0), img4));
    // Copy k8 lands at dst + 4 (cta_f_index(cta_copy_input(w, k8), img4) - that of k8 = 0): the index
    // is linear in t and the image, and t - w = 4 k8, so the difference is cta_f_index(4 k8, 0).
    cta_static_for<0, 8>([&](auto k8) {
      constexpr int kK8 = decltype(k8)::value;
      static_assert(tile::cta_copy_input(3, kK8) - tile::cta_copy_input(3, 0) == 4 * kK8,
                    "the immediates assume t = w + 4 k8");
      cp_async16_at<4 * tile::cta_f_index(4 * kK8, 0)>(dst, x_col + row_off(tile::cta_copy_input(w, kK8)));
    });
  } else {
    const char* x_col[4];
#pragma unroll
    for (int m = 0; m < 4; ++m) x_col[m] = cta_col(c.x, c.cols[tile::cta_gather_image(lane, m)]);
    const unsigned dst =
        st + 4u * unsigned(tile::cta_f_index(tile::cta_copy_input(w, 0), tile::cta_gather_image(lane, 0)));
    // (t, image lane + 32 m) lands at dst + 4 cta_f_index(4 k8, 32 m), as above.
    cta_static_for<0, 8>([&](auto k8) {
      constexpr int kK8 = decltype(k8)::value;
      const int64_t off = row_off(tile::cta_copy_input(w, kK8));
      cta_static_for<0, 4>([&](auto m) {
        constexpr int kM = decltype(m)::value;
        static_assert(tile::cta_gather_image(5, kM) - tile::cta_gather_image(5, 0) == tile::cta_gather_image(0, kM),
                      "the immediates assume image = lane + 32 m");
        cp_async4_at<4 * tile::cta_f_index(4 * kK8, tile::cta_gather_image(0, kM))>(dst, x_col[kM] + off);
      });
    });
  }
  cp_async_commit();
}

// One step of the compute: inputs 4 k .. 4 k + 3. The fragments are 4 LDS.128 of weights (inputs
// 4 k .. + 3 of row cta_row(lane, u)) and 4 of features (input 4 k + e of the thread's 4 images).
struct CtaFrag {
  float4 wt4[4], f[4];
};
__device__ __forceinline__ void cta_load_frag(const float* st, int lane, int img0, int k, CtaFrag& g) {
#pragma unroll
  for (int u = 0; u < 4; ++u)  // weights 4 k .. 4 k + 3 of row cta_row(lane, u)
    g.wt4[u] = *reinterpret_cast<const float4*>(st + tile::cta_w_index(tile::cta_row(lane, u), 4 * k));
#pragma unroll
  for (int e = 0; e < 4; ++e)  // input 4 k + e of this thread's 4 images
    g.f[e] = *reinterpret_cast<const float4*>(st + tile::cta_f_index(4 * k + e, img0));
}
__device__ __forceinline__ void cta_fma_frag(const CtaFrag& g, float (&acc)[4][4]) {
#pragma unroll
  for (int e = 0; e < 4; ++e)
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const float wt = e == 0 ? g.wt4[u].x : e == 1 ? g.wt4[u].y : e == 2 ? g.wt4[u].z : g.wt4[u].w;
      acc[u][0] = __fmaf_rn(wt, g.f[e].x, acc[u][0]);
      acc[u][1] = __fmaf_rn(wt, g.f[e].y, acc[u][1]);
      acc[u][2] = __fmaf_rn(wt, g.f[e].z, acc[u][2]);
      acc[u][3] = __fmaf_rn(wt, g.f[e].w, acc[u][3]);
    }
}

// The 16 x 128 block in stage s (landed and visible: wait + half barrier done): this thread's rows
// cta_row(lane, u) (outputs shfl(ord, row)) x images cta_image(w, lane, i); stores, and sets bit i of
// `alive` when image i has a nonzero output here (one register for the 4 images, not 4 running maxima:
// those were spilled at the 80-register cap).
// kPrefetch (cta2): the fragments double-buffered in registers, step k + 1's 8 LDS.128 issued before
// step k's 64 FFMA, so that their shared-memory latency (the short-scoreboard stall that led cta's
// profile) overlaps the FMA chain instead of waiting for it; 32 more registers. Either way each
// accumulator takes its inputs in the order t = 0..31.
template <bool kPrefetch>
__device__ __forceinline__ void cta_compute(int lane, int w, int ord, const CtaCtx& c, int s, unsigned& alive) {
  const float* const st = c.half_buf + s * tile::kCtaStageFloats;
  const int img0 = tile::cta_image(w, lane, 0);
  float acc[4][4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[u][i] = 0.f;
  if constexpr (kPrefetch) {
    CtaFrag g[2];
    cta_load_frag(st, lane, img0, 0, g[0]);
#pragma unroll
    for (int k = 0; k < 8; ++k) {  // inputs 4 k .. 4 k + 3, in order
      if (k + 1 < 8) cta_load_frag(st, lane, img0, k + 1, g[(k + 1) & 1]);
      cta_fma_frag(g[k & 1], acc);
    }
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) {  // inputs 4 k .. 4 k + 3, in order
      CtaFrag g;
      cta_load_frag(st, lane, img0, k, g);
      cta_fma_frag(g, acc);
    }
  }
  const int q0 = img0 - 32 * w;  // this thread's first image within the warp's 32
  float m[4] = {0.f, 0.f, 0.f, 0.f};  // max |v| per image over the 4 rows
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[i] = fminf(fmaxf(acc[u][i] + c.bias, 0.f), c.clamp_max);
      m[i] = fmaxf(m[i], fabsf(v[i]));
    }
    const int j = __shfl_sync(0xffffffffu, ord, tile::cta_row(lane, u));  // j >= 0
    float* const p = reinterpret_cast<float*>(c.y_q + int64_t(j) * c.ldy_bytes);  // one IMAD.WIDE
    if (c.vec && q0 + 4 <= c.valid_w) {
      cta_store4(p, v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) store_if(p + i, v[i], q0 + i < c.valid_w);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) alive |= m[i] != 0.f ? 1u << i : 0u;  // read only for valid images
}

// The half's blocks k = 0 .. n - 1 (n <= 32; block k = list block b_first + 2 k) as a pipeline with one
// half barrier per block and the copies A = cta_ahead(kStages) blocks ahead of the compute (cta: 1,
// cta2: 2); block k lives in stage cta_stage(k). Prologue: blocks 0 .. A - 1 voted (a barrier each; the
// first also certifies that the half's previous users of the stages are done) and copied. Iteration k:
// wait until this thread's copies of block k have landed (only blocks k + 1 .. k + A - 1's may still be
// in flight); the barrier (with the vote on block k + A's list test) makes every thread's copies of
// block k visible and certifies that every thread has finished computing block k - 1, whose stage
// (cta_stage(k + A) = cta_stage(k - 1)) block k + A's copies then overwrite; issue block k + A; fetch
// block k + A + 1's indices and load block k + A + 2's order entries; compute block k. So the copies
// have A blocks of FMAs to land in, the indices one, the order entries two. cta2 commits an empty group
// for a block it does not copy, so that "all groups but the A - 1 newest" always means "blocks 0 .. k".
// Returns the blocks that are NOT list steps (bit k), for block steps; ends with a half barrier, after
// which the half's stages are free (no copy in flight, every read done).
template <int kStages>
__device__ __forceinline__ unsigned cta_pipeline(int h, int w, int lane, int b_first, int n, const CtaCtx& c,
                                                 unsigned& alive4) {
  constexpr int kAhead = tile::cta_ahead(kStages);
  auto ord_at = [&](int k) {  // lane l: the output at position 16 (b_first + 2 k) + l % 16
    const int p = (b_first + 2 * k) * tile::kListOutputs + (lane & 15);
    return c.order ? __ldg(c.order + p) : p;
  };
  unsigned rest = 0u;
  int ord[kAhead + 2];  // block k + a's order entries, a = 0 .. A + 1 (0 past n)
  bool ok[kAhead];      // block k + a (a < A) is a list step: its copies are issued
#pragma unroll
  for (int a = 0; a < kAhead + 2; ++a) ord[a] = a == 0 || a < n ? ord_at(a) : 0;  // n >= 1
  CtaFetch f = cta_fetch(lane, w, ord[0], c.wi);
#pragma unroll
  for (int a = 0; a < kAhead; ++a) {  // blocks 0 .. A - 1 into stages 0 .. A - 1
    ok[a] = cta_bar_and(h, (a == 0 || a < n) && cta_check(lane, f));
    if (ok[a]) cta_issue(lane, w, ord[a], f.i0, c, a);
    else if constexpr (kStages > 2) cp_async_commit();  // an empty group: one group per block
    if (a + 1 < n) f = cta_fetch(lane, w, ord[a + 1], c.wi);  // from here on: block k + A's indices
  }
  for (int k = 0; k < n; ++k) {
    cp_async_wait_group<kAhead - 1>();  // block k's copies (this thread's)
    const bool ok_next = cta_bar_and(h, k + kAhead < n && cta_check(lane, f));
    if (ok_next) cta_issue(lane, w, ord[kAhead], f.i0, c, tile::cta_stage(k + kAhead, kStages));
    else if constexpr (kStages > 2) cp_async_commit();
    if (k + kAhead + 1 < n) f = cta_fetch(lane, w, ord[kAhead + 1], c.wi);
    const int ord_new = k + kAhead + 2 < n ? ord_at(k + kAhead + 2) : 0;
    if (ok[0]) cta_compute<(kStages > 2)>(lane, w, ord[0], c, tile::cta_stage(k, kStages), alive4);
    else rest |= 1u << k;
#pragma unroll
    for (int a = 0; a + 1 < kAhead; ++a) ok[a] = ok[a + 1];
    ok[kAhead - 1] = ok_next;
#pragma unroll
    for (int a = 0; a + 1 < kAhead + 2; ++a) ord[a] = ord[a + 1];
    ord[kAhead + 1] = ord_new;
  }
  // cta2: only empty groups can be pending here (blocks n, n + 1); the wait makes "no copy in flight"
  // hold without that argument, at one instruction per chunk.
  if constexpr (kStages > 2) cp_async_wait_all();
  cta_bar(h);  // every thread has read its last stage
  return rest;
}

// cta2: v, opaque to the optimizer from here on, so that the per-chunk and edge values computed from it
// are computed where they are used rather than hoisted out of cta_item's loop and held through the
// pipeline (at the 128-register cap two of them were spilled: 8 B of stack). cta: v (its code as before).
template <int kStages>
__device__ __forceinline__ int cta_late(int v) {
  if constexpr (kStages > 2) asm volatile("" : "+r"(v));
  return v;
}

// One item in CTA mode (a tile of 128 images r0 = tile0 .., outputs [j_begin, j_end) of the row order;
// 16-byte aligned weight arrays; ldx, ldy <= INT_MAX / 4; called by all 256 threads). The item's columns
// go to shared memory (one __syncthreads, which also votes on their contiguity). Then each half runs its list blocks
// through cta_pipeline in chunks of up to 32, the chunk's blocks that are not list steps as block
// steps (reuse_range: warp w for images r0 + 32 w .. + 31, its buffers `sm` in the half's stage 0,
// free then; a half barrier before the next chunk's copies), and at the end its piece of the slice
// outside the full list blocks (half 0 the head, half 1 the tail) as block steps. One call site of
// reuse_range. Sets the flags of the images with a nonzero output here.
template <int kStages>
__device__ __forceinline__ void cta_item(int lane, int warp, int count, int tile0, int64_t j_begin, int64_t j_end,
                                         const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                                         float clamp_max, const int* __restrict__ active_rows,
                                         const float* __restrict__ x, int64_t ldx, float* __restrict__ y,
                                         int64_t ldy, int* __restrict__ flags, const int* __restrict__ order,
                                         float* dyn, ReuseSmem& sm) {
  const int h = warp >> 2, w = warp & 3;
  const int r0 = tile0;
  unsigned* const s_cols = reinterpret_cast<unsigned*>(dyn + tile::cta_cols_offset(kStages));
  // Columns; positions past the count read column 0 (in bounds: count >= 1) and neither store nor flag.
  // The previous item's readers of s_cols are done (fused_layer's __syncthreads after every item).
  const unsigned col0 = unsigned(__ldg(active_rows + r0));  // r0 < count
  bool contig = (col0 & 3u) == 0 && (ldx & 3) == 0 && (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  if (threadIdx.x < tile::kCtaImages) {
    const int r = r0 + int(threadIdx.x);
    const unsigned col = r < count ? unsigned(__ldg(active_rows + r)) : 0u;
    s_cols[threadIdx.x] = col;
    contig = contig && col == col0 + threadIdx.x;
  }
  CtaCtx c;
  c.contig = __syncthreads_and(contig) != 0;  // block-uniform; s_cols is visible from here on
  c.wi = wi;
  c.wv = wv;
  c.x = reinterpret_cast<const char*>(x);
  c.ldx_bytes = int(ldx) * 4;
  c.order = order;
  c.cols = s_cols;
  c.half_buf = dyn + tile::cta_stage_offset(h, 0, kStages);
  c.bias = bias;
  c.clamp_max = clamp_max;
  c.y_q = reinterpret_cast<char*>(y + r0 + tile::cta_image(w, lane, 0));
  c.ldy_bytes = int(ldy) * 4;
  c.valid_w = count - (r0 + 32 * w);
  c.vec = (reinterpret_cast<uintptr_t>(y) & 15u) == 0 && (ldy & 3) == 0;
  unsigned alive4 = 0u;  // list steps: bit i = image cta_image(w, lane, i) has a nonzero output
  float alive = 0.f;                       // block steps: this lane's image r0 + 32 w + lane
  int b0, b1;
  tile::cta_blocks(j_begin, j_end, &b0, &b1);
  const int nh = tile::cta_half_blocks(b0, b1, h);
  // The pieces for block steps, in turn: per chunk its blocks that are not list steps, then the edge.
  int c0 = 0, b_rest = 0;
  unsigned rest = 0u;
  bool drain = false, edge = true;
  for (;;) {  // half-uniform control flow throughout (rest comes from the half's votes)
    int lo, hi;
    if (rest != 0u) {
      lo = (b_rest + 2 * (__ffs(int(rest)) - 1)) * tile::kListOutputs;
      hi = lo + tile::kListOutputs;
      rest &= rest - 1u;
    } else {
      if (drain) {
        drain = false;
        cta_bar(h);  // every warp's block steps are done with the stage-0 buffers before the next copies
      }
      if (c0 < nh) {
        b_rest = b0 + cta_late<kStages>(h) + 2 * c0;
        rest = cta_pipeline<kStages>(h, w, lane, b_rest, min(32, nh - c0), c, alive4);
        drain = rest != 0u;
        c0 += 32;
        continue;
      }
      if (!edge) break;
      edge = false;
      const int jb = cta_late<kStages>(int(j_begin));
      lo = h == 0 ? jb : max(jb, b1 * tile::kListOutputs);  // the head / the tail
      hi = h == 0 ? min(int(j_end), b0 * tile::kListOutputs) : int(j_end);
    }
    if (lo < hi) {
      const int r = r0 + 32 * w + lane;
      const bool valid = r < count;
      reuse_range<false>(lane, valid, s_cols[32 * w + lane], lo, hi, wi, wv, bias, clamp_max, x, ldx,
                         reinterpret_cast<char*>(y + (valid ? r : 0)), uint64_t(ldy) * 4u, order, sm, true, alive);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + tile::cta_image(w, lane, i);
    if (r < count && (alive4 >> i & 1u)) flags[r] = 1;  // benign race: every writer writes 1 (flags zeroed)
  }
  const int r_own = r0 + 32 * w + lane;
  if (r_own < count && alive != 0.f) flags[r_own] = 1;
}

}  // namespace
}  // namespace jhdnn::sparse
