// cta2's block steps, software-pipelined (src/sparse/README.md, "Pipelined block steps (cta2)"). Included
// by dnn_layer.cu only, after its helpers (row_lane, store_if, held_output, kBlockOutputs / kBlockMin) and
// list_tile.cuh (cp.async helpers), into the same anonymous namespace; used by layer_tile_reuse<..., kDeep>,
// which dnn_layer_cta_kernel<3> (cta2, 128 registers) alone instantiates: the block kernel's reuse_range
// (80 registers) is untouched. With kImages = 2 (two images per lane, the 64-image items of cta2w:
// dnn_layer_cta_kernel<3, 2>, through layer_tile_deep2) the same steps serve 64 images (see the function).
//
// Where: the 32-image items of cta2 (layers with fewer than cta_min_tiles 128-image tiles, i.e. every late
// layer), where each warp runs block steps over its run of outputs for 32 images (a lane = an image). The
// block steps of reuse_range are one serial chain per step -- the rows' loads, the vote, maybe the list's
// 32 gathers, then 8 x 32 FMAs -- and 16 warps per SM do not hide it (ncu at N = 4096: top stall L1TEX long
// scoreboard, 0.84 eligible warps per scheduler). Here each step's memory work is issued earlier:
//   iteration s: vote step s + 1 (its rows were copied to shared memory in iteration s - 1, so they have
//   had step s - 1's FMAs to arrive), zero its padding weights; issue the copies of step s + 2's rows (its
//   position is known now); then step s's FMAs from registers xv, and if step s + 1 has a new input list,
//   its 32 feature loads into xv, 4 at a time as the FMAs free those registers (so they run under the
//   rest of the FMAs, the stores and the next vote); then step s's stores.
// Steps of up to kDeepOutputs = 16 outputs (reuse_range: 8), the challenge's rows per list, so that the
// per-step work (vote, copies, loop) is paid once per list: a step of more than 8 outputs runs as two
// passes of 8 independent chains over the same registers (8 accumulators, as reuse_range).
// Otherwise the steps are reuse_range's block steps: groups ending at multiples of 32 (tile::group_end), m =
// the leading outputs with the step's list (every slot equal, inside the group), m >= kBlockMin as a block
// step of m outputs, else one output; the list voted against the previous step's, a fresh held list per
// call; each output is acc = fma(w_t, x_t, acc), t = 0..31 from 0, padding fma(0, 0, acc), then bias,
// ReLU, clamp: y is bitwise reuse_range's (tests/test_spdnn_reuse_tile.cpp emulates this order, mode 3,
// and checks that it loads the same lists as block mode).
// Order entries come from a window of two groups (wA: the group of the step being voted, wB: the next
// one, loaded when the window moves one group on, so a group's entries are in flight for a whole group).
// Registers: the rows go to shared memory (16-byte cp.async, indices and weights) rather than registers,
// and the new list is loaded into xv in place, so the kernel stays at 128 registers without spills.
#pragma once

namespace jhdnn::sparse {
namespace {

// A warp's buffers (cta_tile.h: kCtaDeepBytes = 12736 B, at cta_deep_offset_bytes(warp) of cta2's dynamic
// memory). idx[b] / w[b]: the index and weight rows of the step in buffer b (three in rotation: the step
// computed, the step voted, the step in flight), idx[b][o][t] = slot t of the step's output o; rows: the
// row pointers of a new unpadded list; j[b]: the step's outputs (for its stores). Reuse rules: every
// iteration begins with cp.async.wait_group 0 (this lane's copies of the step to vote have landed) and a
// __syncwarp (every lane's have; every lane is done with the buffers this iteration rewrites); a buffer is
// copied into in iteration s (step s + 2), voted on and patched in iteration s + 1, read by the FMAs in
// iteration s + 2, and copied into again only in iteration s + 3; rows is written at the vote and read
// after a second __syncwarp in the same iteration.
using tile::kDeepOutputs;  // 16 outputs per step at most (the challenge's rows per list)
struct __align__(16) DeepSmem {
  int idx[3][kDeepOutputs][32];    // 6 KB
  float w[3][kDeepOutputs][32];    // 6 KB
  unsigned long long rows[32];     // 256 B
  int j[3][kDeepOutputs];          // j[b][o]: the step's output o (o past the group: a valid row)
};

// The block steps over the outputs [t_begin, t_end) of the row order for this lane's image (column col;
// valid: the lane stores), pipelined as above. alive: running max of |v| over this lane's outputs.
// Needs 16-byte aligned weight arrays (block steps) and no cp.async group of this thread pending on entry.
// kImages = 2 (cta2w, "Two images per lane" in src/sparse/README.md): the lane serves images valid[0..1] /
// col[0..1], image 1's outputs 32 floats after image 0's (y_lane: image 0's; valid[1] implies valid[0]); the
// FMAs run as passes of kPassOutputs = 4 outputs x 2 images (8 chains, as the 8 outputs of kImages = 1), so a
// weight broadcast serves 8 FMAs, and the vote, copies, window and loop are paid once for 64 images.
template <int kImages>
__device__ __forceinline__ void reuse_range_deep(int lane, const bool (&valid)[kImages], const unsigned (&col)[kImages],
                                                 int t_begin, int t_end, const int* __restrict__ wi,
                                                 const float* __restrict__ wv, float bias, float clamp_max,
                                                 const float* __restrict__ x, int64_t ldx, char* const y_lane,
                                                 const uint64_t ldy_bytes, const int* __restrict__ order, DeepSmem& sm,
                                                 float (&alive)[kImages]) {
  static_assert(kImages == 1 || kImages == 2, "one or two images per lane");
  constexpr int kPassOutputs = kImages == 1 ? kBlockOutputs : kBlockOutputs / 2;  // 8 chains per pass
  // This lane's pieces: slots 4 s4 .. 4 s4 + 3 of outputs o4 + 4 h, h = 0..3.
  const int s4 = lane & 7, o4 = lane >> 3;
  const int* const wi4_lane = wi + 4 * s4;
  const float* const wv4_lane = wv + 4 * s4;
  auto order_entry = [&](int g0, int g1) {  // tile::deep_order_entry, through __ldg
    return g0 + lane < g1 ? (order ? __ldg(order + g0 + lane) : g0 + lane) : 0;
  };
  // The list of the step being computed: feature t of image m in xv[32 m + t]. (Flat arrays here and for
  // the accumulators: with 2-D ones kImages = 1 compiles to other register numbers and other SASS.)
  float xv[kImages * 32];
#pragma unroll
  for (int t = 0; t < kImages * 32; ++t) xv[t] = 0.f;
  int held_i = -2;  // the list of the last voted step (-2: none yet: the first step loads its list)
  // The window: the group [gA, gB) holds pn, the position of the step to vote; lane l holds the order
  // entry of position gA + l (wA) and of the next group's (wB).
  int gA = t_begin, gB = tile::group_end(t_begin, t_end, true);
  int wA = 0, wB = 0;
  // The step to vote: at position pn, its rows and outputs in buffer bi. The step to compute: steps_c
  // outputs, buffer bc; have_c: there is one.
  int pn = t_begin, bi = 1;
  int steps_c = 0, bc = 0;
  bool have_c = false;
  auto issue = [&](int p, int b) {  // the copies of the step at p (in [gA, gB)) into buffer b
    // this lane's output: position deep_piece_pos(p, gB, lane), i.e. p + lane % 8 clamped into the group
    const int jn = __shfl_sync(0xffffffffu, wA, tile::deep_piece_pos(p, gB, lane) - gA);
    if (lane < kDeepOutputs) sm.j[b][lane] = jn;
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const int o = o4 + 4 * h;
      const int jo = __shfl_sync(0xffffffffu, jn, o);  // output p + o (clamped into the group)
      cp_async16(smem_addr(&sm.idx[b][o][4 * s4]), row_lane(wi4_lane, jo));
      cp_async16(smem_addr(&sm.w[b][o][4 * s4]), row_lane(wv4_lane, jo));
    }
    cp_async_commit();
  };
  if (t_begin < t_end) {
    wA = order_entry(gA, gB);
    wB = gB < t_end ? order_entry(gB, tile::group_end(gB, t_end, true)) : 0;
    issue(pn, bi);
  }
  for (;;) {
    asm volatile("cp.async.wait_group 0;" ::: "memory");  // this lane's copies of the step to vote
    __syncwarp();  // ... and every lane's; every lane is done with what this iteration rewrites
    const bool have_n = pn < t_end;  // warp-uniform, as all the control flow here
    bool new_n = false, full_n = false;  // the voted step has a new list; without padding
    int steps_n = 0, i_new = 0;          // i_new: its list, lane t: input t
    if (have_n) {
      // The vote: m = the outputs from pn on with output pn's list (every slot equal, inside the group).
      const int4* const idx4 = reinterpret_cast<const int4*>(sm.idx[bi][0]);  // [o][s4]: 8 per output
      const int4 ref = idx4[s4];                                             // output pn, slots 4 s4 ..
      i_new = sm.idx[bi][0][lane];
      unsigned same = 0xffffu;  // bit o: output pn + o has output pn's list (in this lane's slots)
      int4 iv[4];               // this lane's own pieces
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int o = o4 + 4 * h;
        iv[h] = idx4[8 * o + s4];
        if (iv[h].x != ref.x || iv[h].y != ref.y || iv[h].z != ref.z || iv[h].w != ref.w) same &= ~(1u << o);
      }
      // Padding weights to 0 (their values may be NaN), read after the next __syncwarp. Rare (a lane
      // whose pieces hold a padding slot), so one test of the sign bits first.
      int any = 0;
#pragma unroll
      for (int h = 0; h < 4; ++h) any |= iv[h].x | iv[h].y | iv[h].z | iv[h].w;
      if (any < 0) {
#pragma unroll
        for (int h = 0; h < 4; ++h) {
          float* const w = &sm.w[bi][o4 + 4 * h][4 * s4];
          if (iv[h].x < 0) w[0] = 0.f;
          if (iv[h].y < 0) w[1] = 0.f;
          if (iv[h].z < 0) w[2] = 0.f;
          if (iv[h].w < 0) w[3] = 0.f;
        }
      }
      same = __reduce_and_sync(0xffffffffu, same);  // ... in every slot
      const int room = gB - pn;                     // 1 .. 32: ... and in the group
      same &= room >= kDeepOutputs ? 0xffffu : (1u << room) - 1u;
      const int m = __ffs(~same) - 1;
      steps_n = m >= kBlockMin ? m : 1;
      new_n = !__all_sync(0xffffffffu, i_new == held_i);
      if (new_n) {
        full_n = __all_sync(0xffffffffu, i_new >= 0);
        if (full_n) sm.rows[lane] = reinterpret_cast<unsigned long long>(x + int64_t(i_new) * ldx);
        held_i = i_new;
      }
      // The step after: its position (moving the window when it starts the next group), its copies.
      pn += steps_n;
      if (pn == gB && pn < t_end) {
        gA = gB;
        gB = tile::group_end(gA, t_end, true);
        wA = wB;
        wB = gB < t_end ? order_entry(gB, tile::group_end(gB, t_end, true)) : 0;
      }
      if (pn < t_end) issue(pn, bi == 2 ? 0 : bi + 1);  // the buffer after the voted step's
    }
    __syncwarp();  // sm.rows (a new unpadded list) and the patched weights are visible to the whole warp
    // Features t0 .. t0 + 3 of the new list into xv (this lane's column): an unpadded list through the
    // row pointers (two 16-byte broadcasts), else the index shuffled per input, padding 0 (fma(0, 0, acc)
    // as in the CPU chain).
    auto gather4 = [&](int t0) {
      if (full_n) {
        const ulonglong2* rows2 = reinterpret_cast<const ulonglong2*>(sm.rows);
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const ulonglong2 p = rows2[t0 / 2 + q];  // the same address in every lane: a broadcast
#pragma unroll
          for (int m = 0; m < kImages; ++m) {
            xv[32 * m + t0 + 2 * q] = __ldg(reinterpret_cast<const float*>(p.x) + col[m]);
            xv[32 * m + t0 + 2 * q + 1] = __ldg(reinterpret_cast<const float*>(p.y) + col[m]);
          }
        }
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int i = __shfl_sync(0xffffffffu, i_new, t0 + q);
#pragma unroll
          for (int m = 0; m < kImages; ++m) xv[32 * m + t0 + q] = i >= 0 ? __ldg(x + int64_t(i) * ldx + col[m]) : 0.f;
        }
      }
    };
    // Outputs o0 .. o0 + kPassOutputs - 1 of the step computed (features in xv, weights in buffer bc) for
    // every image of the lane as 8 independent chains, then their stores; g: the new list's features replace
    // xv[.][4 u .. 4 u + 3] right after the FMAs of group u (the last pass of the step only), so the loads go
    // out while the FMAs run.
    auto fma_group = [&](const float4* w4, int u, float (&acc)[kPassOutputs * kImages]) {
#pragma unroll
      for (int o = 0; o < kPassOutputs; ++o) {
        const float4 w = w4[8 * o + u];  // weights 4 u .. 4 u + 3 of output o0 + o: a broadcast
#pragma unroll
        for (int m = 0; m < kImages; ++m) {
          acc[o * kImages + m] = __fmaf_rn(w.x, xv[32 * m + 4 * u + 0], acc[o * kImages + m]);
          acc[o * kImages + m] = __fmaf_rn(w.y, xv[32 * m + 4 * u + 1], acc[o * kImages + m]);
          acc[o * kImages + m] = __fmaf_rn(w.z, xv[32 * m + 4 * u + 2], acc[o * kImages + m]);
          acc[o * kImages + m] = __fmaf_rn(w.w, xv[32 * m + 4 * u + 3], acc[o * kImages + m]);
        }
      }
    };
    auto pass = [&](int o0, bool g) {
      const float4* const w4 = reinterpret_cast<const float4*>(sm.w[bc][o0]);
      float acc[kPassOutputs * kImages];  // output o0 + o, image m: acc[o * kImages + m]
#pragma unroll
      for (int k = 0; k < kPassOutputs * kImages; ++k) acc[k] = 0.f;
      if (g) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          fma_group(w4, u, acc);
          gather4(4 * u);
        }
      } else {
#pragma unroll
        for (int u = 0; u < 8; ++u) fma_group(w4, u, acc);
      }
#pragma unroll
      for (int o = 0; o < kPassOutputs; ++o) {
        const bool mine = o0 + o < kBlockMin || o0 + o < steps_c;  // steps_c >= kBlockMin here
        float v[kImages];
#pragma unroll
        for (int m = 0; m < kImages; ++m) v[m] = fminf(fmaxf(acc[o * kImages + m] + bias, 0.f), clamp_max);
        const int jo = sm.j[bc][o0 + o];  // a broadcast
        float* const yo = reinterpret_cast<float*>(y_lane + uint64_t(unsigned(jo)) * ldy_bytes);
#pragma unroll
        for (int m = 0; m < kImages; ++m) {
          store_if(yo + 32 * m, v[m], valid[m] && mine);
          if (mine) alive[m] = fmaxf(alive[m], fabsf(v[m]));
        }
      }
    };
    if (have_c && steps_c > 1) {  // a block step
      if constexpr (kImages == 1) {  // outputs 0 .. 7, then 8 .. 15 if it has more than 8
        const bool two = steps_c > kBlockOutputs;
        pass(0, new_n && !two);
        if (two) pass(kBlockOutputs, new_n);
      } else {  // passes of 4 outputs (steps_c >= kBlockMin = 4), the new list's loads behind the last
        for (int o0 = 0; o0 < steps_c; o0 += kPassOutputs) pass(o0, new_n && o0 + kPassOutputs >= steps_c);
      }
    } else {
      if (have_c) {  // one output
        float v[kImages];
#pragma unroll
        for (int m = 0; m < kImages; ++m)
          v[m] = held_output(reinterpret_cast<const float4*>(sm.w[bc][0]),
                             *reinterpret_cast<const float(*)[32]>(&xv[32 * m]), bias, clamp_max);
        const int j0 = sm.j[bc][0];
        float* const y0 = reinterpret_cast<float*>(y_lane + uint64_t(unsigned(j0)) * ldy_bytes);
#pragma unroll
        for (int m = 0; m < kImages; ++m) {
          store_if(y0 + 32 * m, v[m], valid[m]);
          alive[m] = fmaxf(alive[m], fabsf(v[m]));
        }
      }
      if (new_n) {
#pragma unroll
        for (int u = 0; u < 8; ++u) gather4(4 * u);
      }
    }
    if (!have_n) break;
    have_c = true;  // the voted step is computed in the next iteration, from its buffer
    steps_c = steps_n;
    bc = bi;
    bi = bi == 2 ? 0 : bi + 1;
  }
}

}  // namespace
}  // namespace jhdnn::sparse
