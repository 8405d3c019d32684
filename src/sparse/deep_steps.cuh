// cta2's block steps, software-pipelined (src/sparse/README.md, "Pipelined block steps (cta2)"). Included
// by dnn_layer.cu only, after its helpers (row_lane, store_if, held_output, kBlockOutputs / kBlockMin) and
// list_tile.cuh (cp.async helpers), into the same anonymous namespace; used by layer_tile_reuse<..., kDeep>,
// which dnn_layer_cta_kernel<3> (cta2, 128 registers) alone instantiates: the block kernel's reuse_range
// (80 registers) is untouched.
//
// Where: the 32-image items of cta2 (layers with fewer than cta_min_tiles 128-image tiles, i.e. every late
// layer), where each warp runs block steps over its run of outputs for 32 images (a lane = an image). The
// block steps of reuse_range are one serial chain per step -- the rows' loads, the vote, maybe the list's
// 32 gathers, then 8 x 32 FMAs -- and 16 warps per SM do not hide it (ncu at N = 4096: top stall L1TEX long
// scoreboard, 0.84 eligible warps per scheduler). Here each step's memory work is issued a step earlier:
//   iteration s: vote step s + 1 (its rows, loaded in iteration s - 1, have had step s - 1's FMAs to
//   arrive); store its weights (padding zeroed) to the weight buffer step s does not use; if its list is
//   new, gather the list's 32 features with 4-byte cp.async into the list buffer step s does not use; issue
//   the row loads of step s + 2 (its position is known now); then step s's FMAs from registers xv and its
//   weight buffer, and its stores; then, if step s + 1 took a new list, wait for the gathers and read them
//   into xv (32 LDS, the lane's own column: no other lane's copies are waited for).
// The steps are reuse_range's block steps exactly: groups ending at multiples of 32 (tile::group_end), m =
// the leading outputs with the step's list (every slot equal, inside the group), m >= kBlockMin as m of
// kBlockOutputs chains else one output, the list voted against the previous step's, a fresh held list per
// call; each output is acc = fma(w_t, x_t, acc), t = 0..31 from 0, padding fma(0, 0, acc), then bias,
// ReLU, clamp: y is bitwise reuse_range's (tests/test_spdnn_reuse_tile.cpp emulates this order, mode 3).
// Order entries come from a window of two groups (wA: the group of the step being voted, wB: the next
// one, loaded when the window moves one group on, so a group's entries are in flight for a whole group).
// Why cp.async for the gathers: a second register list (32 registers) made the kernel spill at 128.
#pragma once

namespace jhdnn::sparse {
namespace {

// A warp's buffers (cta_tile.h: kCtaDeepBytes, at cta_deep_offset_bytes(warp) of cta2's dynamic memory).
// w[b]: the weights of the step in weight buffer b (steps alternate); xs[b][t][lane]: feature t of the
// lane's image of the list in list buffer b (new lists alternate); rows: the gather's row pointers.
// Reuse rules (one __syncwarp at the top of every iteration): a weight buffer is written in iteration s
// (the step s + 1) and read in iteration s + 1 (after that __syncwarp), rewritten in iteration s + 2 (after
// the next one); a list buffer is written by one new list's cp.async, read (by each lane, its own column)
// after cp.async.wait_all, and rewritten only by the new list after the next, iterations later; rows is
// written and read inside one gather (its own __syncwarp) and rewritten only in a later iteration.
struct __align__(16) DeepSmem {
  float w[3][kBlockOutputs][32];  // 3 KB
  float xs[2][32][32];            // 8 KB
  unsigned long long rows[32];    // 256 B
};

// Gathers the list whose input t is lane t's my_i for this lane's column `col` into xs[t][lane], one
// cp.async commit group: a full list (no padding) through row pointers in sm.rows (as load_list), else the
// index shuffled per input, padding stored as 0 (fma(0, 0, acc) as in the CPU chain).
__device__ __forceinline__ void deep_gather(int lane, int my_i, unsigned col, const float* __restrict__ x,
                                            int64_t ldx, DeepSmem& sm, float (&xs)[32][32]) {
  const unsigned dst = smem_addr(&xs[0][lane]);  // + 128 t: feature t
  if (__all_sync(0xffffffffu, my_i >= 0)) {
    sm.rows[lane] = reinterpret_cast<unsigned long long>(x + int64_t(my_i) * ldx);
    __syncwarp();
    const ulonglong2* rows2 = reinterpret_cast<const ulonglong2*>(sm.rows);
#pragma unroll
    for (int t = 0; t < 32; t += 2) {
      const ulonglong2 p = rows2[t / 2];  // the same address in every lane: a broadcast
      cp_async4(dst + 128u * unsigned(t), reinterpret_cast<const float*>(p.x) + col);
      cp_async4(dst + 128u * unsigned(t + 1), reinterpret_cast<const float*>(p.y) + col);
    }
  } else {
#pragma unroll
    for (int t = 0; t < 32; ++t) {
      const int i = __shfl_sync(0xffffffffu, my_i, t);  // warp-uniform
      if (i >= 0)
        cp_async4(dst + 128u * unsigned(t), x + int64_t(i) * ldx + col);
      else
        xs[t][lane] = 0.f;
    }
  }
  cp_async_commit();
}

// The block steps over the outputs [t_begin, t_end) of the row order for this lane's image (column col;
// valid: the lane stores), pipelined as above. alive: running max of |v| over this lane's outputs.
// Needs 16-byte aligned weight arrays (block steps) and no cp.async group of this thread pending on entry.
__device__ __forceinline__ void reuse_range_deep(int lane, bool valid, unsigned col, int t_begin, int t_end,
                                                 const int* __restrict__ wi, const float* __restrict__ wv,
                                                 float bias, float clamp_max, const float* __restrict__ x,
                                                 int64_t ldx, char* const y_lane, const uint64_t ldy_bytes,
                                                 const int* __restrict__ order, DeepSmem& sm, float& alive) {
  const int* const wi_lane = wi + lane;
  const int s4 = lane & 7, o4 = lane >> 3;  // this lane's pieces: slots 4 s4 .. 4 s4 + 3 of outputs o4, o4 + 4
  const int* const wi4_lane = wi + 4 * s4;
  const float* const wv4_lane = wv + 4 * s4;
  auto order_entry = [&](int g0, int g1) {  // tile::deep_order_entry, through __ldg
    return g0 + lane < g1 ? (order ? __ldg(order + g0 + lane) : g0 + lane) : 0;
  };
  float xv[32];  // the list of the step being computed
#pragma unroll
  for (int t = 0; t < 32; ++t) xv[t] = 0.f;
  int held_i = -2;  // the list of the last voted step (-2: none yet: the first step gathers its list)
  int bl = 0;       // the list buffer the next new list goes to
  // The window: the group [gA, gB) holds pn, the position of the step to vote; lane l holds the order
  // entry of position gA + l (wA) and of the next group's (wB).
  int gA = t_begin, gB = tile::group_end(t_begin, t_end, true);
  int wA = 0, wB = 0;
  // The step to vote: jn = this lane's output (position deep_piece_pos(pn, gB, lane)); its rows in flight:
  // i0 (lane t: slot t of output pn), iv / wq (slots 4 s4 .. + 3 of outputs pn + o4, pn + o4 + 4).
  int pn = t_begin, jn = 0, i0 = 0;
  // The weights go straight to weight buffer bi by 16-byte cp.async (one commit group per step, empty when
  // there is no step): buffers rotate over three steps (computed, voted, in flight).
  int4 iv[2];
  int bc = 0, bi = 1;  // the weight buffers of the step to compute and of the step to vote
  auto issue = [&](int p, int b) {  // p in [gA, gB); b: its weight buffer
    jn = __shfl_sync(0xffffffffu, wA, tile::deep_piece_pos(p, gB, lane) - gA);
    i0 = __ldg(row_lane(wi_lane, __shfl_sync(0xffffffffu, jn, 0)));
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int jo = __shfl_sync(0xffffffffu, jn, o4 + 4 * h);
      iv[h] = __ldg(reinterpret_cast<const int4*>(row_lane(wi4_lane, jo)));
      cp_async16(smem_addr(&sm.w[b][o4 + 4 * h][4 * s4]), row_lane(wv4_lane, jo));
    }
  };
  if (t_begin < t_end) {
    wA = order_entry(gA, gB);
    wB = gB < t_end ? order_entry(gB, tile::group_end(gB, t_end, true)) : 0;
    issue(pn, bi);
  }
  cp_async_commit();
  // The step to compute: its outputs (jc: as jn), how many; have_c: there is one.
  int jc = 0, steps_c = 0;
  bool have_c = false;
  for (;;) {
    __syncwarp();  // every lane is done with the buffers this iteration rewrites (see DeepSmem)
    const bool have_n = pn < t_end;  // warp-uniform, as all the control flow here
    bool new_n = false;
    int steps_n = 0;
    const int jn_voted = jn;
    if (have_n) {
      // The vote: m = the outputs from pn on with output pn's list (every slot equal, inside the group).
      int4 ref;  // output pn's slots 4 s4 .. 4 s4 + 3
      ref.x = __shfl_sync(0xffffffffu, i0, 4 * s4 + 0);
      ref.y = __shfl_sync(0xffffffffu, i0, 4 * s4 + 1);
      ref.z = __shfl_sync(0xffffffffu, i0, 4 * s4 + 2);
      ref.w = __shfl_sync(0xffffffffu, i0, 4 * s4 + 3);
      unsigned same = 0xffu;  // bit o: output pn + o has output pn's list (in this lane's slots)
      // This lane's weight copies have landed (the only group pending here: see the wait after the FMAs);
      // it zeroes its pieces' padding slots (their values may be NaN) in place.
      asm volatile("cp.async.wait_group 0;" ::: "memory");
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int o = o4 + 4 * h;
        float* const w = &sm.w[bi][o][4 * s4];
        if (iv[h].x < 0) w[0] = 0.f;
        if (iv[h].y < 0) w[1] = 0.f;
        if (iv[h].z < 0) w[2] = 0.f;
        if (iv[h].w < 0) w[3] = 0.f;
        if (iv[h].x != ref.x || iv[h].y != ref.y || iv[h].z != ref.z || iv[h].w != ref.w) same &= ~(1u << o);
      }
      same = __reduce_and_sync(0xffffffffu, same);  // ... in every slot
      const int room = gB - pn;                     // 1 .. 32: ... and in the group
      same &= room >= kBlockOutputs ? 0xffu : (1u << room) - 1u;
      const int m = __ffs(~same) - 1;
      steps_n = m >= kBlockMin ? m : 1;
      new_n = !__all_sync(0xffffffffu, i0 == held_i);
      if (new_n) {  // its gathers overlap the computed step's FMAs
        deep_gather(lane, i0, col, x, ldx, sm, sm.xs[bl]);
        held_i = i0;
      }
      // The step after: its position (moving the window when it starts the next group), its loads.
      pn += steps_n;
      if (pn == gB && pn < t_end) {
        gA = gB;
        gB = tile::group_end(gA, t_end, true);
        wA = wB;
        wB = gB < t_end ? order_entry(gB, tile::group_end(gB, t_end, true)) : 0;
      }
      if (pn < t_end) issue(pn, bi == 2 ? 0 : bi + 1);  // the buffer after the voted step's
    }
    cp_async_commit();  // the issued step's weights (an empty group if none): the newest group
    if (have_c) {  // features in xv, weights in buffer bc
      const float4* const w4 = reinterpret_cast<const float4*>(sm.w[bc][0]);
      if (steps_c > 1) {
        float acc[kBlockOutputs];
#pragma unroll
        for (int o = 0; o < kBlockOutputs; ++o) acc[o] = 0.f;
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
          for (int o = 0; o < kBlockOutputs; ++o) {
            const float4 w = w4[8 * o + u];  // weights 4 u .. 4 u + 3 of output o: a broadcast
            acc[o] = __fmaf_rn(w.x, xv[4 * u + 0], acc[o]);
            acc[o] = __fmaf_rn(w.y, xv[4 * u + 1], acc[o]);
            acc[o] = __fmaf_rn(w.z, xv[4 * u + 2], acc[o]);
            acc[o] = __fmaf_rn(w.w, xv[4 * u + 3], acc[o]);
          }
#pragma unroll
        for (int o = 0; o < kBlockOutputs; ++o) {
          const bool mine = o < kBlockMin || o < steps_c;  // steps_c >= kBlockMin here
          const float v = fminf(fmaxf(acc[o] + bias, 0.f), clamp_max);
          const int jo = __shfl_sync(0xffffffffu, jc, o);
          store_if(reinterpret_cast<float*>(y_lane + uint64_t(unsigned(jo)) * ldy_bytes), v, valid && mine);
          if (mine) alive = fmaxf(alive, fabsf(v));
        }
      } else {
        const float v = held_output(w4, xv, bias, clamp_max);
        const int j0 = __shfl_sync(0xffffffffu, jc, 0);
        store_if(reinterpret_cast<float*>(y_lane + uint64_t(unsigned(j0)) * ldy_bytes), v, valid);
        alive = fmaxf(alive, fabsf(v));
      }
    }
    if (!have_n) break;
    if (new_n) {  // the voted step's list: this lane's own column of the list buffer
      asm volatile("cp.async.wait_group 1;" ::: "memory");  // all but the newest group: the gathers have landed
#pragma unroll
      for (int t = 0; t < 32; ++t) xv[t] = sm.xs[bl][t][lane];
      bl ^= 1;
    }
    have_c = true;  // the voted step is computed in the next iteration, from the buffer it was copied to
    jc = jn_voted;
    steps_c = steps_n;
    bc = bi;
    bi = bi == 2 ? 0 : bi + 1;
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");  // nothing left in flight (the groups are empty here)
}

}  // namespace
}  // namespace jhdnn::sparse
