// The late layers' tile of JHDNN_SPDNN_TILE=late4 (src/sparse/README.md, "Late4: a lane of 16 rows x 4
// images"). Included by dnn_layer.cu only, after cta_tile.cuh (cp_async_wait_all) and
// list_tile.cuh (smem_addr, cp_async16, cp_async_commit) and the helpers of dnn_layer.cu (row_lane, store_if), into the same anonymous namespace; run by
// dnn_layer_cta_kernel<3, 4> in the layers below the CTA tile's 128-image items (tile::late4_late), and under
// late4all (auto's tile above 4096 rows since session 24) in the crowded layers too.
//
// Why: at N >= 16384 the late layers (about 1200 images alive, 16384 rows) are most of an L = 480 / 1920 run,
// and cta2w's pipelined block steps spend half their instructions on other work than the FMAs (ncu: 40.5 M
// warp instructions per late layer at N = 16384, 19.7 M of them FFMA). A block step holds a list's features
// in registers and streams the rows: per output it re-votes, re-copies and re-reads weights, and a lane has
// only two images to share that with. Here the roles turn round: a lane HOLDS the accumulators of a whole
// list block -- the 16 rows of one input list (the challenge's rows per list, adjacent in the row order) x
// 4 images, 64 chains -- and streams the 32 inputs: per input one 16-byte feature load (4 images) and
// 4 broadcast LDS.128 of the 16 rows' weights feed 64 FFMA. SASS (ptxas 13.0): the inner loop 594 instructions
// per 512 FFMA (86%); with the epilogue (bias, ReLU, clamp, flag, a 16-byte store per row), the vote, the
// transpose and the copies ~70% FFMA per block, where cta2w has 49%. Measured at N = 16384 (7ab6788, ncu):
// 30.65 M warp instructions per late layer against cta2w's 40.46 M, 86.5-89.1 us against 100.4-103.6, bound by
// the features' L2 latency (long scoreboard 4.5 per issue); since 84e3c59 the 16-byte path stages them in shared
// memory two quads ahead (late4_run_staged): 80.9-82.5 us, long scoreboard 1.5.
//
// The item: a tile of 128 images (lane l: images tile0 + 4 l .. + 3) x the warp's list blocks of the slice: the
// blocks of 16 rows from j_begin + 16 warp, every tile::kLate4Step = 128 rows (late4_warp_begin, cta_tile.h: the
// 8 warps of a CTA take 8 consecutive blocks at a time, so that with spdnn's chain order both reads of an input
// row mostly come while it is in the L2; a slice's last block may be partial). The warp's list blocks go
// through per-warp buffers (Late4Staged): block k + 1's 16 index rows and 16 weight rows are copied (16-byte
// cp.async, 8 per lane) while block k computes, and the order entries of block k + 2 are loaded then too; the
// features come through a ring of quads in shared memory (late4_run_staged). At a block's start the warp votes:
// its 16 rows all hold row 0's 32 indices, none of them padding (else -- rows without a shared list, a padded
// list, the slice's partial last block -- the block runs row by row, 4 chains per lane, the padding as
// fma(0, 0, acc)). A voted block's weights are transposed in shared memory to wt[t][o], so that one LDS.128 gives
// 4 rows' weights of one input; a voted block whose 16 rows also hold bitwise equal weights (the challenge's; session
// 34) skips the transpose and takes each input's weight for all 16 rows from one broadcast of row 0's (w0).
// Features: a lane whose 4 images are 4 consecutive columns from a multiple of 4 (the late layers: the survivors
// of a layer are appended in runs of whole warps; layer 1: every image) copies 16 bytes per input, any other
// lane 4 copies of 4 bytes (kGather: the crowded and middle layers, whose survivors are scattered; session 24,
// before which such a tile ran without the staging, one quad of loads ahead). Lanes past the count compute on
// columns 0..3 (16 bytes: in bounds, ldx a multiple of 4) or column 0, and neither store nor flag.
// Every accumulator is acc = fma(w_t, x_t, acc), t = 0..31 from 0, then bias, ReLU, clamp: bitwise the
// other tiles and the CPU chain.
#pragma once

#include "sparse/cta_tile.h"

namespace jhdnn::sparse {
namespace {

// 16-byte load through the read-only path.
__device__ __forceinline__ float4 late4_ld4(const char* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
// base + i * stride as ONE IMAD.WIDE.U32 (from the 64-bit product nvcc emits an IMAD.WIDE.U32, a MOV and an IADD3).
__device__ __forceinline__ const char* late4_row(const char* base, int i, unsigned stride) {
  const char* p;
  asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(p) : "r"(i), "r"(stride), "l"(base));
  return p;
}
// 16-byte store if pred (one predicated st.global.v4).
__device__ __forceinline__ void late4_store4_if(char* p, float a, float b, float c, float d, bool pred) {
  asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %5, 0;\n\t@q st.global.v4.f32 [%0], {%1, %2, %3, %4};\n\t}" ::"l"(p),
               "f"(a), "f"(b), "f"(c), "f"(d), "r"(unsigned(pred))
               : "memory");
}

// The features of input row i (i >= 0) for the lane's 4 images (Late4Ctx::xb): kVec, one 16-byte load at xb's
// row; else 4 loads at the float offsets cb from it. ldx_bytes = ldx * 4 fits 32 bits (the caller checks).
template <bool kVec>
__device__ __forceinline__ float4 late4_features(int i, unsigned ldx_bytes, const char* xb, const uint4& cb) {
  const char* const row = late4_row(xb, i, ldx_bytes);
  if constexpr (kVec) {
    return late4_ld4(row);
  } else {
    float4 f;
    f.x = __ldg(reinterpret_cast<const float*>(late4_row(row, int(cb.x), 4u)));
    f.y = __ldg(reinterpret_cast<const float*>(late4_row(row, int(cb.y), 4u)));
    f.z = __ldg(reinterpret_cast<const float*>(late4_row(row, int(cb.z), 4u)));
    f.w = __ldg(reinterpret_cast<const float*>(late4_row(row, int(cb.w), 4u)));
    return f;
  }
}

// What a warp's list blocks need about the item and the layer.
struct Late4Ctx {
  const int* wi;
  const float* wv;
  const int* order;  // null: natural order
  // lane16: the lane's 4 columns are consecutive from a multiple of 4 and x's rows 16-byte aligned; then xb is x +
  // the first column's offset and the lane's 16 bytes of an input row are at xb's row, else xb is x and its 4
  // features at the float offsets Late4Staged::cols[lane] from x's row (in shared memory: 4 pointers held through
  // the 64 chains made ptxas spill). Offsets are late4_col_offset's (the feature layout).
  const char* xb;
  unsigned ldx_bytes;
  bool lane16;
  char* y_lane;       // y at column tile0 + 4 lane's offset (y when the lane has no image)
  unsigned ldy_bytes;
  bool valid[4];
  float bias, clamp_max;
};

// Bias, ReLU, clamp of one output row j for the lane's 4 images; the stores; the running max for the flags.
// kSt4: every lane of the warp has 4 images or none, and y's rows are 16-byte aligned: one predicated 16-byte
// store per row; else 4 predicated 4-byte ones (the last tile of a count that is not a multiple of 4).
template <bool kSt4>
__device__ __forceinline__ void late4_store(const Late4Ctx& c, int j, const float (&acc)[4], float (&alive)[4]) {
  float v[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    v[m] = fminf(fmaxf(acc[m] + c.bias, 0.f), c.clamp_max);
    alive[m] = fmaxf(alive[m], fabsf(v[m]));
  }
  char* const yo = const_cast<char*>(late4_row(c.y_lane, j, c.ldy_bytes));
  if constexpr (kSt4) {
    late4_store4_if(yo, v[0], v[1], v[2], v[3], c.valid[0]);
  } else {
#pragma unroll
    for (int m = 0; m < 4; ++m) store_if(reinterpret_cast<float*>(yo) + m, v[m], c.valid[m]);
  }
}

// A block that did not vote (rows without one shared list, padding, a partial block of `rows` < 16): row by
// row, 4 chains per lane, each row's own indices and weights from idx / wr, its features loaded (not staged);
// padding (index -1) as fma(0, 0, acc) (its weight may be anything, NaN included).
// cols: the lanes' feature offsets (Late4Staged::cols; !kVec only).
template <bool kVec, bool kSt4>
__device__ __forceinline__ void late4_rows(const Late4Ctx& c, const int (*idx)[tile::kLate4Row],
                                           const float (*wr)[tile::kLate4Row], const int* j, int rows,
                                           const uint4* cols, float (&alive)[4]) {
  const uint4 cb = kVec ? make_uint4(0u, 0u, 0u, 0u) : cols[threadIdx.x & 31];
  for (int o = 0; o < rows; ++o) {
    const int4* const i4 = reinterpret_cast<const int4*>(idx[o]);
    const float4* const w4 = reinterpret_cast<const float4*>(wr[o]);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 2
    for (int u = 0; u < 8; ++u) {
      const int4 iv = i4[u];
      const float4 wv = w4[u];
      const int is[4] = {iv.x, iv.y, iv.z, iv.w};
      const float ws[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const bool pad = is[k] < 0;
        const float4 f = pad ? make_float4(0.f, 0.f, 0.f, 0.f) : late4_features<kVec>(is[k], c.ldx_bytes, c.xb, cb);
        const float w = pad ? 0.f : ws[k];
        acc[0] = __fmaf_rn(w, f.x, acc[0]);
        acc[1] = __fmaf_rn(w, f.y, acc[1]);
        acc[2] = __fmaf_rn(w, f.z, acc[2]);
        acc[3] = __fmaf_rn(w, f.w, acc[3]);
      }
    }
    late4_store<kSt4>(c, j[o], acc, alive);
  }
}

// The 16-byte path's buffers (session 21, after 7ab6788: the features staged in shared memory), in the warp's
// tile::kLate4SlotBytes slot: f, a ring of 3 quads of features (4 inputs x the lane's own 16 bytes, so that no
// lane reads another's copy and no warp sync is needed for them); idx / w, ONE stage of a block's 16 index and
// weight rows (the next block's while this one computes: its vote needs only row 0's copy, i0, and the
// transposed weights, wt, once it has run); j, the blocks' output rows (two, the next one's written at its copy).
struct __align__(16) Late4Staged {
  float4 f[3][4][32];
  int idx[tile::kListOutputs][tile::kLate4Row];
  float w[tile::kListOutputs][tile::kLate4Row];
  float wt[tile::kLate4WtFloats];
  float w0[32];     // a block whose 16 rows share their weights too: row 0's, for input t at w0[t]
  float zeros[16];  // +0.0f, read volatile as the starts of such a block's rows' chains (late4_run_staged)
  int i0[32];
  int j[2][tile::kListOutputs];
  uint4 cols[32];  // lane l's 4 feature offsets in floats from its xb (Late4Ctx): {0, 1, 2, 3} for a lane16 lane
  // late4_run_staged's kSkip (session 36), all warp-uniform: x's mask column word of the warp's 128 columns (xw, set
  // by late4_item); the next block's mask words (mw: lane t's word of input t, copied at quad 4); nz[b]: bit t set
  // where input t of the block of parity b has a nonzero feature in the tile (its word != 0); live: the block's nz, or
  // all ones where skipping is not exact (a quad of inputs whose 4 bits are 0 is not multiplied). In shared memory, so
  // that the loop holds no register for them (at 128 registers ptxas spilled every mask value held across quads;
  // bench/results/77cc800).
  unsigned mw[32];
  unsigned nz[2];
  unsigned live;
  int xw;
};
static_assert(sizeof(Late4Staged) <= tile::kLate4SlotBytes, "late4's staged buffers must fit a warp's slot (cta_tile.h)");

// 16 bytes global -> shared, asynchronous, not cached in L1 (each feature piece is read once, by its lane).
__device__ __forceinline__ void late4_cp16_cg(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
// The same copy reading src_bytes of src (16 or 0) and zero-filling the rest: with 0, global memory is not read.
__device__ __forceinline__ void late4_cp16_cg_n(unsigned dst, const void* src, unsigned src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// The warp's list blocks [p, min(p + 16, end)) of the row order, p = begin, begin + kLate4Step, ... (begin a
// multiple of 16; end the slice's end), for the lane's 4 images, with staged features. Every voted block
// is 8 quads of 4 inputs; quad q + 2's copies go out before quad q computes, into the slot quad q - 1 was read
// from (so 2 quads are in flight while one computes), and quads 6 and 7 issue the NEXT block's quads 0 and 1
// (from its row 0, which the copy issued at this block's start has brought: waited for at quad 6). Each lane's
// cp.async groups, in order: per block its rows' group (R, issued after its vote: the next block's rows, or an
// empty group for the last block), then (quads 0 and 1 not issued by the block before: P0, P1) one group per
// quad q = 0..7 (G_q). Waits: at a block's start all but the 2 newest groups (its prefetched quads) or all; at
// quad q all but the 2 newest (G_q, G_q-1: quad q came with G_q-2, P_q or the block before); at quad 6, before
// reading the next block's row 0, all but the 6 newest (G_0..G_5), i.e. R has landed, then a __syncwarp. A block
// that does not vote waits for everything, runs row by row from idx / w and only then copies the next block's rows.
// The vote, the transpose and the FMAs of a quad are written out here, not shared helpers: as helpers (when a
// second, unstaged path shared them, up to session 23) ptxas allocated the kernel's registers otherwise and
// spilled (40 bytes; checked at 911d39d), and a spill in this loop cost 16% in 8c412c0.
// kGather: some lane's 4 columns are not consecutive from a multiple of 4 (Late4Ctx::lane16): that lane copies
// each input's 4 features with 4 cp.async of 4 bytes (.ca: the only form of that size) into the same 16 bytes.
// kSkip (session 36; not with kGather; late4_item<true>, with x's piece mask pm and every lane's 4 columns in one
// aligned 128-column word, sm.xw): an input whose features are +0.0f in all 128 images of the tile (its mask word 0)
// is not read -- its copies zero-fill the ring, uniformly, so the ring holds its values either way -- and where that
// is exact a quad of 4 such inputs is not multiplied either: fma(w, 0, acc) is acc but for the sign of a zero acc,
// which the bias absorbs when it is not -0.0f (checked at the block's start), when w is finite (checked per block:
// an Inf or NaN times 0 is NaN). Per quad, not per input: per input the tests' own stalls cost what the skip saved
// (bench/results/98cfb5b/stall).
// The words: this block's loaded at its start where its quads 0 and 1 were not prefetched (one wait), else copied
// (cp.async, a group M of its own) at the block before's quad 4 once this block's row 0 has landed (so the wait for R
// moves there from quad 6), waited for at quad 6 before quads 0 and 1 go out; reduced by a ballot to one word of
// nonzero inputs (sm.nz). Everything is kept in shared memory, none of it in registers through the loop.
template <bool kSt4, bool kGather, bool kSkip = false>
__device__ __forceinline__ void late4_run_staged(int lane, int begin, int end, const Late4Ctx& c, Late4Staged& sm,
                                                 float (&alive)[4], const PieceMasks* pm = nullptr) {
  const int o_l = lane & 15, h_l = lane >> 4;  // this lane's piece of a block: row o_l, inputs 16 h_l .. + 15
  auto entry = [&](int p) {  // the order entry of position p + o_l, clamped into the slice
    const int q = p + o_l < end ? p + o_l : end - 1;
    return c.order ? __ldg(c.order + q) : q;
  };
  auto issue_rows = [&](int j, int b) {  // row j's index and weight pieces into idx / w, its row into j[b]
    if (lane < tile::kListOutputs) sm.j[b][lane] = j;
    const int* const wi_src = row_lane(c.wi + 16 * h_l, j);
    const float* const wv_src = row_lane(c.wv + 16 * h_l, j);
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      cp_async16(smem_addr(&sm.idx[o_l][16 * h_l + 4 * m]), wi_src + 4 * m);
      cp_async16(smem_addr(&sm.w[o_l][16 * h_l + 4 * m]), wv_src + 4 * m);
    }
    cp_async_commit();
  };
  // inputs iq's 16 bytes of this lane into f[slot]; one group. unvoted: the next block's row 0, which may hold
  // padding (that block will not vote): read row 0 for it, in bounds, never used.
  // (nzb: kSkip's nonzero-input word of the quad's block, sm.nz[its parity]; t0 the quad's first input)
  auto issue_quad = [&](int4 iq, int slot, bool unvoted, const unsigned* nzb, int t0) {
    const int ii[4] = {iq.x, iq.y, iq.z, iq.w};
    const unsigned nzq = kSkip ? *nzb >> t0 : 0u;  // (warp-uniform)
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = unvoted && ii[u] < 0 ? 0 : ii[u];
      const unsigned dst = smem_addr(&sm.f[slot][u][lane]);
      const char* const row = late4_row(c.xb, i, c.ldx_bytes);
      if constexpr (kSkip) {  // 16 bytes, or none (zeros) for an input zero in the whole tile
        late4_cp16_cg_n(dst, row, (nzq >> u) & 1u ? 16u : 0u);
      } else if (!kGather || c.lane16) {
        late4_cp16_cg(dst, row);
      } else {
        const uint4 cb = sm.cols[lane];
        cp_async4(dst, late4_row(row, int(cb.x), 4u));
        cp_async4(dst + 4u, late4_row(row, int(cb.y), 4u));
        cp_async4(dst + 8u, late4_row(row, int(cb.z), 4u));
        cp_async4(dst + 12u, late4_row(row, int(cb.w), 4u));
      }
    }
    cp_async_commit();
  };
  if (lane < 16) sm.zeros[lane] = 0.f;  // (read after the first block's __syncwarp)
  // kSkip: x's mask word of input row i (i >= 0) for the warp's columns
  auto mask_word = [&](int i) -> const unsigned* { return pm->x + int64_t(i) * pm->x_ld + unsigned(sm.xw); };
  const int4* const i0q = reinterpret_cast<const int4*>(sm.i0);
  const int4* const nxq = reinterpret_cast<const int4*>(sm.idx[0]);  // the next block's row 0 (after quad 6's wait)
  issue_rows(entry(begin), 0);
  int j_next = begin + tile::kLate4Step < end ? entry(begin + tile::kLate4Step) : 0;
  bool pre = false;  // this block's quads 0 and 1 were issued by the block before
  int slot0 = 0;     // the slot of this block's quad 0; quad q is in (slot0 + q) % 3
  int b = 0;
  for (int p = begin; p < end; p += tile::kLate4Step, b ^= 1) {
    if (pre) cp_async_wait_group<2>();
    else cp_async_wait_all();
    __syncwarp();  // every lane's rows of this block landed; every lane is done with the block before
    const int rows = end - p < tile::kListOutputs ? end - p : tile::kListOutputs;
    const int4* const mine = reinterpret_cast<const int4*>(&sm.idx[o_l][16 * h_l]);
    const int4* const ref = reinterpret_cast<const int4*>(&sm.idx[0][16 * h_l]);
    bool ok = rows == tile::kListOutputs, same_w = true, finite = true;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
      const int4 a = mine[m], z = ref[m];
      ok = ok && a.x == z.x && a.y == z.y && a.z == z.z && a.w == z.w && (z.x | z.y | z.z | z.w) >= 0;
      // the row's weights bit for bit row 0's (as ints: -0.0f is not 0.0f here, a NaN equals itself)
      const int4 wa = reinterpret_cast<const int4*>(&sm.w[o_l][16 * h_l])[m];
      const int4 wz = reinterpret_cast<const int4*>(&sm.w[0][16 * h_l])[m];
      same_w = same_w && wa.x == wz.x && wa.y == wz.y && wa.z == wz.z && wa.w == wz.w;
      if constexpr (kSkip)  // no Inf or NaN (their products with 0 are NaN): exponent bits not all ones
        finite = finite && (wa.x & 0x7f800000) != 0x7f800000 && (wa.y & 0x7f800000) != 0x7f800000 &&
                 (wa.z & 0x7f800000) != 0x7f800000 && (wa.w & 0x7f800000) != 0x7f800000;
    }
    const bool voted = __all_sync(0xffffffffu, ok);
    // A voted block whose 16 rows also hold row 0's weights (the challenge's: the list's 16 rows are equal) takes
    // each input's weight from one broadcast: a quad's weights in 1 ld.shared.v4 instead of 16, 2 shared wavefronts
    // instead of 32 (the crowded layer 1 at N = 1024: 8.8 M of its 29.4 M, bench/results/e96c40b/head-profile/),
    // and no transpose. Its rows' chains start from zeros read volatile (sm.zeros), so ptxas cannot see that the
    // 16 rows are equal and computes each, as for any rows (with 0.f it computes one: the equal-row reduction,
    // docs/sparse.md, not the default's). Every chain is still fma(w_t, x_t, acc), t = 0..31 from +0.
    const bool one_w = voted && __all_sync(0xffffffffu, same_w);
    const bool more = p + tile::kLate4Step < end;
    if (!voted) {
      cp_async_wait_all();  // the (unused) quads prefetched for it
      late4_rows<!kGather, kSt4>(c, sm.idx, sm.w, sm.j[b], rows, sm.cols, alive);
      __syncwarp();  // every lane is done with idx / w
      if (more) {
        issue_rows(j_next, b ^ 1);
        j_next = p + 2 * tile::kLate4Step < end ? entry(p + 2 * tile::kLate4Step) : 0;
      }
      pre = false;
      continue;
    }
    if (one_w) {  // row 0's weights to w0 and its indices to i0
      sm.w0[lane] = sm.w[0][lane];
      sm.i0[lane] = sm.idx[0][lane];
    } else {  // the transpose (row o_l's inputs 16 h_l .. + 15 to wt[t][o_l]) and row 0's indices to i0
      const float4* const wr = reinterpret_cast<const float4*>(&sm.w[o_l][16 * h_l]);
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        const float4 v = wr[m];
        const int t = 16 * h_l + 4 * m;
        sm.wt[tile::late4_wt_index(t + 0, o_l)] = v.x;
        sm.wt[tile::late4_wt_index(t + 1, o_l)] = v.y;
        sm.wt[tile::late4_wt_index(t + 2, o_l)] = v.z;
        sm.wt[tile::late4_wt_index(t + 3, o_l)] = v.w;
      }
      sm.i0[lane] = sm.idx[0][lane];
    }
    if constexpr (kSkip) {  // this block's nonzero inputs, and the inputs it computes
      // lane t's mask word of input t: copied by the block before (M, landed: waited for above), else loaded now
      // (voted: no padding in row 0)
      const unsigned wd = pre ? sm.mw[lane] : __ldg(mask_word(sm.idx[0][lane]));
      const unsigned nzw = __ballot_sync(0xffffffffu, wd != 0u);
      const bool exact = __all_sync(0xffffffffu, finite) && __float_as_uint(c.bias) != 0x80000000u;
      if (lane == 0) {
        sm.nz[b] = nzw;
        sm.live = exact ? nzw : ~0u;
      }
    }
    __syncwarp();  // wt and i0 (kSkip: nz and live) are visible; idx / w are free for the next block's rows
    if (more) {
      issue_rows(j_next, b ^ 1);
      j_next = p + 2 * tile::kLate4Step < end ? entry(p + 2 * tile::kLate4Step) : 0;
    } else {
      cp_async_commit();  // an empty group in R's place: the same counts for the last block
    }
    if (!pre) {
      issue_quad(i0q[0], slot0, false, &sm.nz[b], 0);
      issue_quad(i0q[1], slot0 == 2 ? 0 : slot0 + 1, false, &sm.nz[b], 4);
    }
    float acc[tile::kListOutputs][4];
#pragma unroll
    for (int o = 0; o < tile::kListOutputs; ++o) {
      const float z = one_w ? static_cast<const volatile float*>(sm.zeros)[o] : 0.f;
#pragma unroll
      for (int m = 0; m < 4; ++m) acc[o][m] = z;
    }
    int slot_q = slot0;
#pragma unroll 1
    for (int q = 0; q < 8; ++q) {
      const int slot_n = slot_q == 0 ? 2 : slot_q - 1;  // (slot_q + 2) % 3: the slot quad q - 1 was read from
      // kSkip (warp-uniform): the next block's mask words, a group M of their own copied at quad 4 (before G_6), so
      // the waits below count one more group there: M has landed at quad 6 (the 2 newest then: G_6, G_7)
      if (kSkip && more && q == 4) {
        cp_async_wait_group<4>();  // R has landed in this lane (the 4 newest groups: G_2 .. G_5) ...
        __syncwarp();              // ... and in every lane
        const int i = sm.idx[0][lane];  // the next block's row 0 (padding there: it will not vote; read row 0's)
        cp_async4(smem_addr(&sm.mw[lane]), mask_word(i < 0 ? 0 : i));
        cp_async_commit();
      }
      if (q < 6) {
        issue_quad(i0q[q + 2], slot_n, false, &sm.nz[b], 4 * (q + 2));
      } else {
        if (q == 6) {
          if constexpr (kSkip) {
            if (more) {
              cp_async_wait_group<2>();  // M (the next block's mask words) has landed in this lane
              const unsigned nzn = __ballot_sync(0xffffffffu, sm.mw[lane] != 0u);
              if (lane == 0) sm.nz[b ^ 1] = nzn;
              __syncwarp();  // nz of the next block is visible
            }
          } else {
            cp_async_wait_group<6>();  // R (the next block's rows) has landed in this lane ...
            __syncwarp();              // ... and in every lane
          }
        }
        if (more) issue_quad(nxq[q - 6], slot_n, true, &sm.nz[b ^ 1], 4 * (q - 6));
        else cp_async_commit();
      }
      cp_async_wait_group<2>();  // quad q's features (this lane's own copies)
      // kSkip: a quad whose 4 inputs are zero in the whole tile is skipped where that is exact (sm.live: one test and
      // branch a quad; per input, the tests' own stalls cost what the skip saved, bench/results/98cfb5b/stall). A
      // quad that is computed takes its zero inputs' zero-filled features, which add nothing either.
      if (kSkip && ((sm.live >> (4 * q)) & 0xfu) == 0u) {  // (warp-uniform)
        slot_q = slot_q == 2 ? 0 : slot_q + 1;
        continue;
      }
      float4 f[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) f[u] = sm.f[slot_q][u][lane];
      if (one_w) {  // warp-uniform
        const float4 w4 = *reinterpret_cast<const float4*>(sm.w0 + 4 * q);  // inputs 4 q .. 4 q + 3: a broadcast
        const float wq[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int u = 0; u < 4; ++u) {
#pragma unroll
          for (int o = 0; o < tile::kListOutputs; ++o) {
            acc[o][0] = __fmaf_rn(wq[u], f[u].x, acc[o][0]);
            acc[o][1] = __fmaf_rn(wq[u], f[u].y, acc[o][1]);
            acc[o][2] = __fmaf_rn(wq[u], f[u].z, acc[o][2]);
            acc[o][3] = __fmaf_rn(wq[u], f[u].w, acc[o][3]);
          }
        }
        slot_q = slot_q == 2 ? 0 : slot_q + 1;
        continue;
      }
      const float* const wt4 = sm.wt + tile::late4_wt_index(4 * q, 0);  // inputs 4 q .. 4 q + 3: 16 floats apart
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int g = 0; g < 4; ++g) {
          const float4 w = *reinterpret_cast<const float4*>(wt4 + 16 * u + 4 * g);  // rows 4 g .. + 3: a broadcast
          const float wq[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            float (&a)[4] = acc[4 * g + v];
            a[0] = __fmaf_rn(wq[v], f[u].x, a[0]);
            a[1] = __fmaf_rn(wq[v], f[u].y, a[1]);
            a[2] = __fmaf_rn(wq[v], f[u].z, a[2]);
            a[3] = __fmaf_rn(wq[v], f[u].w, a[3]);
          }
        }
      }
      slot_q = slot_q == 2 ? 0 : slot_q + 1;
    }
#pragma unroll
    for (int o = 0; o < tile::kListOutputs; ++o) late4_store<kSt4>(c, sm.j[b][o], acc[o], alive);
    pre = more;
    slot0 = slot_q;  // (slot0 + 8) % 3
  }
}

// Where column c of a feature buffer starts, in floats from the buffer (its row 0): the columns come in blocks of
// 128, `block` floats apart. The neuron-major layout (x[i * ld + c]) is block = 128, where this is c; the tiled
// layout (JHDNN_SPARSE_DNN_FEATURES_TILED128: x[(c / 128) * n * 128 + i * 128 + c % 128]) is block = n * 128 with a
// row stride of 128 (session 26: a tile's 128 images of consecutive rows are then one contiguous piece).
__device__ __forceinline__ int64_t late4_col_offset(unsigned c, int64_t block) {
  return int64_t(c >> 7) * block + int64_t(c & 127u);
}

// One warp's share of a late4 item: the tile of 128 images from tile0 (count images exist in all) x the warp's
// list blocks of the slice [j_begin, j_end) (j_begin a multiple of 16). Needs 16-byte aligned weight arrays and
// ldx, ldy <= INT_MAX / 4 (fused_layer checks both); ldx / ldy are the row strides and x_block / y_block the
// column blocks' (late4_col_offset), and every column offset of x fits 32 bits (the host checks it for the tiled
// layout; the neuron-major one has offsets < ldx). kMasks: x's piece mask pm.x is used (fused_layer's kMasks).
template <bool kMasks = false>
__device__ __forceinline__ void late4_item(int lane, int warp, int count, int tile0, int64_t j_begin, int64_t j_end,
                                           const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                                           float clamp_max, const int* __restrict__ active_rows,
                                           const float* __restrict__ x, int64_t ldx, int64_t x_block,
                                           float* __restrict__ y, int64_t ldy, int64_t y_block,
                                           int* __restrict__ row_nonzero, const int* __restrict__ order,
                                           const PieceMasks& pm, Late4Staged& sm) {
  const int begin = tile::late4_warp_begin(warp, j_begin), end = int(j_end);
  if (begin >= end) return;  // warp-uniform
  const int r0 = tile0 + 4 * lane;
  Late4Ctx c;
  c.wi = wi;
  c.wv = wv;
  c.order = order;
  c.bias = bias;
  c.clamp_max = clamp_max;
  c.ldx_bytes = unsigned(ldx) * 4u;
  c.ldy_bytes = unsigned(ldy) * 4u;
  // The lane's columns; an image past the count takes the column after its predecessor's (col[0] + m, or
  // m when the lane has none), so that a lane whose existing images are consecutive from a multiple of 4 still
  // reads one 16-byte piece (in bounds: ldx is a multiple of 4 then); its values are never stored.
  unsigned col[4];
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    c.valid[m] = r0 + m < count;  // a prefix of the lane's 4
    col[m] = c.valid[m] ? unsigned(__ldg(active_rows + r0 + m)) : (m == 0 ? 0u : col[0] + unsigned(m));
  }
  // 16-byte feature copies for a lane whose 4 columns are consecutive from a multiple of 4, x's rows 16-byte
  // aligned (vec: every lane's); 16-byte stores when every lane has 4 images or none, y's rows 16-byte aligned.
  const bool x16 = (reinterpret_cast<uintptr_t>(x) & 15u) == 0 && (ldx & 3) == 0 && (x_block & 3) == 0;
  c.lane16 = x16 && (col[0] & 3u) == 0u && col[1] == col[0] + 1u && col[2] == col[0] + 2u && col[3] == col[0] + 3u;
  const bool vec = __all_sync(0xffffffffu, c.lane16);
  const bool y16 = (reinterpret_cast<uintptr_t>(y) & 15u) == 0 && (ldy & 3) == 0 && (y_block & 3) == 0;
  const bool st4 = __all_sync(0xffffffffu, c.valid[3] || !c.valid[0]) && y16;
  // 4-byte copies (not lane16): an image past the count reads column 0 (in bounds; col[0] + m might not be).
  // (a lane16 lane's 4 columns are in one block of 128: consecutive from a multiple of 4)
  c.xb = reinterpret_cast<const char*>(x + (c.lane16 ? late4_col_offset(col[0], x_block) : 0));
  if (!vec) {  // (read by this lane only)
    auto off = [&](int m) { return c.valid[m] ? unsigned(late4_col_offset(col[m], x_block)) : 0u; };
    sm.cols[lane] = c.lane16 ? make_uint4(0u, 1u, 2u, 3u) : make_uint4(off(0), off(1), off(2), off(3));
  }
  // (r0 = tile0 + 4 lane, tile0 a multiple of 128: the lane's 4 outputs are consecutive in one block)
  c.y_lane = reinterpret_cast<char*>(y + (c.valid[0] ? late4_col_offset(unsigned(r0), y_block) : 0));
  float alive[4] = {0.f, 0.f, 0.f, 0.f};
  // kMasks: late4_run_staged's kSkip where x's mask describes the warp's images: 128 consecutive columns from a
  // multiple of 128 (layer 1; a widened layer), one mask word per input row. Lanes past the count may read anything
  // (their values are not stored), so only the lanes with images are checked (lane 0 has one: tile0 < count).
  // (columns, not addresses: the same in either layout)
  bool skip = false;
  if constexpr (kMasks) {
    const unsigned c0 = __shfl_sync(0xffffffffu, col[0], 0);
    skip = vec && pm.x != nullptr && (c0 & 127u) == 0u &&
           __all_sync(0xffffffffu, !c.valid[0] || col[0] == c0 + 4u * unsigned(lane));
    if (skip && lane == 0) sm.xw = int(c0 >> 7);  // (read after late4_run_staged's first __syncwarp)
  }
  if (kMasks && skip && st4) late4_run_staged<true, false, kMasks>(lane, begin, end, c, sm, alive, &pm);
  else if (kMasks && skip) late4_run_staged<false, false, kMasks>(lane, begin, end, c, sm, alive, &pm);
  else if (vec && st4) late4_run_staged<true, false>(lane, begin, end, c, sm, alive);
  else if (vec) late4_run_staged<false, false>(lane, begin, end, c, sm, alive);
  else if (st4) late4_run_staged<true, true>(lane, begin, end, c, sm, alive);
  else late4_run_staged<false, true>(lane, begin, end, c, sm, alive);
  // benign races: every writer writes 1 (flags zeroed)
#pragma unroll
  for (int m = 0; m < 4; ++m)
    if (c.valid[m] && alive[m] != 0.f) row_nonzero[r0 + m] = 1;
}

}  // namespace
}  // namespace jhdnn::sparse
