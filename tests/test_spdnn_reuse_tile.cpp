// CPU emulation of the fused sparse-DNN layer's width-32 tile (layer_tile_reuse in
// src/sparse/dnn_layer.cu) over a whole layer, in all three modes (JHDNN_SPDNN_TILE = single | block |
// list; list: src/sparse/list_tile.cuh, emulated below as list_mode_run): the
// same shape and warp runs (src/sparse/reuse_tile.h, shared with the kernel), the 32-output groups of
// the row order; single: the prefetch of the next output's pair from lane k + 1 (lane 0 or a lane
// past the group after the last one); block: steps over outputs k .. k + 7 (lanes (k + o) mod 32),
// m = the leading outputs with output k's list, m >= 4 as m chains (8 computed, the rest dropped)
// else output k alone; the per-lane held list and its warp vote, the full-list path (row pointers,
// lanes past the count reading column 0) and the padded-list path, the fma chain t = 0..31, bias /
// ReLU / clamp, the predicated store and the alive flag as a running max of |v|; list: the aligned
// shape, the run's head / list blocks in chunks of <= 32 / tail, the list-step test, the two stages
// (copies land when issued, into the stage the kernel names), the 4 x 4 lane blocks over the padded
// weight rows, the other blocks as block steps with a fresh held list. Checked: every
// (output, active image) written exactly once and bitwise equal to the CPU fma chain; nothing else
// written; the flags are exactly the images with a nonzero output; every row and feature read in
// bounds; and, on generated challenge layers in their reuse order, the list loads, block steps and
// single steps equal the counts of the SASS cost model (scripts/spdnn-crowded-model.py). No GPU
// needed: the GPU test of the kernel itself is test_sparse "fused and multi-layer paths: the
// width-32 reuse tile ...".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "sparse/cta_tile.h"
#include "sparse/reuse_tile.h"
#include "spdnn/spdnn.h"
#include "spdnn_tile_emu.h"

namespace {

namespace tile = jhdnn::sparse::tile;
using namespace spdnn_emu;

struct Result {
  std::vector<float> y;     // n_out x ldy
  std::vector<int> writes;  // per (output, column) of y
  std::vector<int> flags;   // per active position
  int64_t list_loads = 0, padded_loads = 0, bad_reads = 0, bad_prefetch = 0;
  int64_t block_steps = 0, block_outputs = 0, single_steps = 0;  // block mode (and list mode's other outputs)
  int64_t list_steps = 0, contig_stages = 0, gather_stages = 0;     // list mode: 16-output tiles, their copies
  int64_t bad_stage = 0;  // list mode: a tile computed from a stage that does not hold its block
};


// The kernel's tile, lane by lane, for every item (tile, slice) of the layer's shape.
Result emulate(const Layer& L, const std::vector<float>& x, int64_t ldx, const std::vector<int>& active_rows,
               int count, int64_t ldy, float bias, float clamp_max, int sm_count, int grid, int mode,
               bool arithmetic = true, int mutate = 0, bool unaligned = false) {
  // mode: 0 single, 1 block, 2 list (JHDNN_SPDNN_TILE), 3 cta2's pipelined block steps (deep_steps.cuh:
  // cta_layer_shape; its 128-image items, the CTA tile's in the kernel, are emulated as the fallback it
  // takes without 32-bit strides: the same pipelined block steps, 4 groups x 2 runs). mutate (must fail
  // the checks): list mode 1 = one accumulator (output 4 og + 1, image 4 ig + 2) fed input t + 1's feature;
  // 2 = the pipeline computes block b from the stage of block b + 1 (a single buffer); mode 3: 3 = a new
  // list loaded into xv before the previous step's FMAs; 4 = a step computed from the weight buffer of the
  // step voted in its iteration; 5 = the order window never moves on; 6 = a missed cp.async.wait_group: the
  // vote reads the index rows its buffer held before the step's copies (they land after the vote).
  // mode 4: cta2w (cta2w_layer_shape; its 64-image items: deep_steps.cuh with two images per lane, the
  // kernel's layer_tile_deep2: 8 runs per slice, lane l holds images tile0 + l and tile0 + 32 + l, emulated
  // as 64 image slots s = tile0 + s, passes of 4 outputs; its 128-image items as mode 3). Its mutations
  // (must fail): 7 = the new list loaded after the first pass of a step (before the passes that still need
  // the old one); 8 = image 1's features gathered from image 0's column.
  // unaligned (modes 3 and 4: weight arrays not 16-byte aligned): the kernels' fallback, one output at a
  // time (reuse_range without block steps) in the shape's groups of 32 images (cta2w's 64-image items: 2
  // groups x 4 runs, fused_layer's layer_tile_reuse with groups = ipt).
  const bool block = mode >= 1 && !unaligned;
  const spdnn::Ell& e = L.e;
  const int64_t n_out = e.rows;
  const int* order = L.order.empty() ? nullptr : L.order.data();
  Result res;
  res.y.assign(size_t(n_out) * ldy, kPoison);
  res.writes.assign(size_t(n_out) * ldy, 0);
  res.flags.assign(size_t(count), 0);
  const int align = mode == 2 ? tile::kListOutputs : 1;  // list mode: slices and runs at multiples of 16
  const tile::Shape sh = mode == 4   ? tile::cta2w_layer_shape(count, n_out, sm_count, grid)
                         : mode == 3 ? tile::cta_layer_shape(count, n_out, sm_count, grid)
                                     : tile::layer_shape(count, n_out, sm_count, grid, align);
  const bool two = mode == 4 && sh.ipt == 2 && !unaligned;  // 64-image items: two images per lane
  const int nimg = two ? 64 : 32;             // image slots per warp
  for (int64_t item = 0; item < sh.tiles * sh.slices; ++item) {
    const int tile0 = int(item % sh.tiles) * 32 * sh.ipt;
    const int64_t j_begin = (item / sh.tiles) * sh.slice;
    const int64_t j_end = std::min(n_out, j_begin + sh.slice);
    for (int warp = 0; warp < tile::kWarps; ++warp) {
      // (mode 3: the 128-image shape aligns its slices to 16, warp_run with align 1 as layer_tile_reuse)
      const tile::Run run = two ? tile::warp_run(warp, 1, j_begin, j_end, tile::kCta2wRunAlign)
                                : tile::warp_run(warp, sh.ipt, j_begin, j_end, align);
      bool valid[64];
      unsigned col[64];
      int held[32];
      float xv[64][32], alive[64];  // per image slot l (l < nimg): image tile0 + run.group * 32 + l
      for (int l = 0; l < 64; ++l) {
        const int r = tile0 + run.group * 32 + l;
        valid[l] = l < nimg && r < count;
        col[l] = valid[l] ? unsigned(active_rows[size_t(r)]) : 0u;
        if (l < 32) held[l] = -2;
        alive[l] = 0.f;
        for (float& v : xv[l]) v = 0.f;
      }
      auto pair_of = [&](int j, int l, int* i, float* w) {
        if (j < 0 || j >= n_out) {
          ++res.bad_prefetch;
          *i = -1;
          *w = 0.f;
          return;
        }
        *i = e.idx[size_t(j) * 32 + l];
        *w = e.val[size_t(j) * 32 + l];
      };
      auto load = [&](int64_t i, unsigned c) {
        if (i < 0 || i >= e.cols || c >= uint64_t(ldx)) {
          ++res.bad_reads;
          return std::numeric_limits<float>::quiet_NaN();
        }
        return x[size_t(i * ldx + c)];
      };
      // The list with output j's indices (lane t: slot t): loaded unless every lane holds it.
      auto hold_list = [&](int j) {
        int li[32];
        bool same = true, full = true;
        for (int l = 0; l < 32; ++l) {
          li[l] = j >= 0 && j < n_out ? e.idx[size_t(j) * 32 + l] : -1;
          same = same && li[l] == held[l];
          full = full && li[l] >= 0;
        }
        if (same) return;
        ++res.list_loads;
        if (!full) ++res.padded_loads;
        for (int l = 0; l < 32 && arithmetic; ++l)  // lane l
          for (int t = 0; t < 32; ++t)  // feature t: input li[t] (lane t's), column col[l]
            xv[l][t] = full ? load(li[t], col[l]) : li[t] >= 0 ? load(li[t], col[l]) : 0.f;
        for (int l = 0; l < 32; ++l) held[l] = li[l];
      };
      // Output j (a chain over weights w and the held features) for every lane.
      auto output = [&](int j, const float* w, bool stored) {
        for (int l = 0; l < nimg && arithmetic; ++l) {
          float acc = 0.f;
          for (int t = 0; t < 32; ++t) acc = std::fma(w[t], xv[l][t], acc);
          const float v = std::fmin(std::fmax(acc + bias, 0.f), clamp_max);
          if (!stored) continue;
          if (valid[l]) {
            const size_t at = size_t(j) * size_t(ldy) + size_t(tile0 + run.group * 32 + l);
            res.y[at] = v;
            ++res.writes[at];
          }
          alive[l] = std::fmax(alive[l], std::fabs(v));
        }
      };
      // List mode (the kernel's list_run / list_pipeline / list_issue / list_compute).
      const int r0 = tile0 + run.group * 32;
      const int valid_n = count - r0;
      bool contig = (col[0] & 3u) == 0 && ldx % 4 == 0;
      for (int l = 0; l < 32; ++l) contig = contig && col[l] == col[0] + unsigned(l);
      std::vector<float> stage_buf[2];
      int stage_block[2] = {-1, -1};
      for (auto& sb : stage_buf) sb.assign(size_t(tile::kListStageFloats), std::numeric_limits<float>::quiet_NaN());
      auto pos_out = [&](int t) { return order ? order[t] : t; };
      // Stage block b into stage s: a list step iff its 16 outputs have output 0's list, unpadded.
      auto stage = [&](int b, int s) {
        const int j0 = pos_out(b * tile::kListOutputs);
        bool ok = true;
        for (int o = 0; o < tile::kListOutputs && ok; ++o)
          for (int t = 0; t < 32 && ok; ++t) {
            const int i = e.idx[size_t(pos_out(b * tile::kListOutputs + o)) * 32 + t];
            ok = i >= 0 && i == e.idx[size_t(j0) * 32 + t];
          }
        if (!ok) return false;
        (contig ? res.contig_stages : res.gather_stages) += 1;
        std::vector<float>& sb = stage_buf[s];
        stage_block[s] = b;
        for (int o = 0; o < tile::kListOutputs; ++o)  // padded rows (list_w_index)
          for (int t = 0; t < 32; ++t)
            sb[size_t(tile::list_w_index(o, t))] = e.val[size_t(pos_out(b * tile::kListOutputs + o)) * 32 + t];
        for (int t = 0; t < 32; ++t)
          for (int q = 0; q < 32; ++q)  // image slot q = lane q's column (contiguous: col0 + q)
            sb[size_t(tile::list_f_index(t, q))] = load(e.idx[size_t(j0) * 32 + t], col[q]);
        return true;
      };
      float alive4[32][4];
      auto compute = [&](int b, int s) {
        ++res.list_steps;
        if (stage_block[s] != b) ++res.bad_stage;
        const std::vector<float>& sb = stage_buf[s];
        for (int l = 0; l < 32 && arithmetic; ++l) {
          const int og = l >> 3, ig = l & 7;
          for (int u = 0; u < 4; ++u)
            for (int i = 0; i < 4; ++i) {
              float acc = 0.f;
              for (int t = 0; t < 32; ++t) {
                const int tf = mutate == 1 && u == 1 && i == 2 ? (t + 1) % 32 : t;
                acc = std::fma(sb[size_t(tile::list_w_index(4 * og + u, t))],
                               sb[size_t(tile::list_f_index(tf, 4 * ig + i))], acc);
              }
              const float v = std::fmin(std::fmax(acc + bias, 0.f), clamp_max);
              alive4[l][i] = std::fmax(alive4[l][i], std::fabs(v));
              const int q = 4 * ig + i;
              if (q < valid_n) {
                const size_t at = size_t(pos_out(b * tile::kListOutputs + 4 * og + u)) * size_t(ldy) + size_t(r0 + q);
                res.y[at] = v;
                ++res.writes[at];
              }
            }
        }
      };
      auto list_mode_run = [&](int t_begin, int t_end, auto&& steps) {
        int b0, b1;
        tile::list_blocks(t_begin, t_end, &b0, &b1);
        const int m0 = b0 < b1 ? b0 * tile::kListOutputs : t_end;
        const int m1 = b0 < b1 ? b1 * tile::kListOutputs : t_end;
        steps(t_begin, m0);  // the head
        for (int c0 = b0; c0 < b1; c0 += 32) {
          const int c1 = std::min(b1, c0 + 32);
          for (auto& a : alive4)
            for (float& v : a) v = 0.f;
          unsigned rest = 0u;
          bool list_cur = stage(c0, 0);
          for (int b = c0; b < c1; ++b) {
            const int s = (b - c0) & 1;
            bool list_nxt = false;
            if (b + 1 < c1) list_nxt = stage(b + 1, mutate == 2 ? s : s ^ 1);  // copies land at issue
            if (list_cur) compute(b, s);
            else rest |= 1u << (b - c0);
            list_cur = list_nxt;
          }
          for (int l = 0; l < 32; ++l)
            for (int i = 0; i < 4; ++i) {
              const int q = 4 * (l & 7) + i;
              if (q < valid_n && alive4[l][i] != 0.f) res.flags[size_t(r0 + q)] = 1;
            }
          for (int k = 0; k < 32; ++k)  // the chunk's other blocks as block steps
            if (rest >> k & 1u) steps((c0 + k) * tile::kListOutputs, (c0 + k + 1) * tile::kListOutputs);
        }
        steps(m1, t_end);  // the tail
      };
      // Block / single steps over [lo, hi) with a fresh held list (the kernel's reuse_range).
      auto steps_range = [&](int lo, int hi) {
      for (int l = 0; l < 32; ++l) held[l] = -2;
      for (int g0 = lo, g1; g0 < hi; g0 = g1) {
        g1 = tile::group_end(g0, hi, block);
        const int cnt = g1 - g0;
        int my_j[32];
        for (int l = 0; l < 32; ++l) my_j[l] = l < cnt ? (order ? order[g0 + l] : g0 + l) : 0;
        if (block) {
          for (int k = 0; k < cnt;) {
            // Rows of outputs k .. k + 7 (lane (k + o) mod 32's output), weights zeroed on padding.
            int jo[8];
            float w[8][32];
            unsigned same = 1u;
            for (int o = 0; o < 8; ++o) {
              jo[o] = my_j[(k + o) % 32];
              bool eq = true;
              for (int t = 0; t < 32; ++t) {
                int i;
                pair_of(jo[o], t, &i, &w[o][t]);
                if (i < 0) w[o][t] = 0.f;
                eq = eq && i == e.idx[size_t(jo[0]) * 32 + t];
              }
              if (o > 0 && eq) same |= 1u << o;
            }
            same &= cnt - k >= 8 ? 0xffu : (1u << (cnt - k)) - 1u;
            int m = 0;
            while (m < 8 && (same >> m & 1u)) ++m;
            const int steps = m >= 4 ? m : 1;
            hold_list(jo[0]);
            if (steps > 1) {
              ++res.block_steps;
              res.block_outputs += steps;
              for (int o = 0; o < 8; ++o) output(jo[o], w[o], o < steps);
            } else {
              ++res.single_steps;
              output(jo[0], w[0], true);
            }
            k += steps;
          }
          continue;
        }
        int j = my_j[0];
        int cur_i[32];
        float cur_w[32];
        for (int l = 0; l < 32; ++l) pair_of(j, l, &cur_i[l], &cur_w[l]);
        for (int k = 0; k < cnt; ++k) {
          const int jn = my_j[(k + 1) % 32];  // __shfl_sync(my_j, k + 1): lane k + 1 mod 32
          int nxt_i[32];
          float nxt_w[32];
          for (int l = 0; l < 32; ++l) pair_of(jn, l, &nxt_i[l], &nxt_w[l]);
          float w[32];
          for (int l = 0; l < 32; ++l) w[l] = cur_i[l] >= 0 ? cur_w[l] : 0.f;
          hold_list(j);
          output(j, w, true);
          j = jn;
          std::copy(nxt_i, nxt_i + 32, cur_i);
          std::copy(nxt_w, nxt_w + 32, cur_w);
        }
      }
      };
      // cta2's pipelined block steps over [lo, hi) (the kernel's reuse_range_deep, iteration by iteration):
      // the iteration that computes step s first votes step s + 1 (its index and weight rows copied into
      // buffer bi one iteration earlier; padding weights zeroed in place), issues step s + 2's copies into
      // buffer bi + 1 (mod 3) with its outputs from the order window, computes step s from xv and buffer bc,
      // and loads step s + 1's list into xv if it is new (the kernel: 4 features at a time behind the FMAs
      // that last read those registers; the values are the same).
      auto steps_range_deep = [&](int lo, int hi) {
        for (int l = 0; l < 32; ++l) held[l] = -2;
        const float kNaN = std::numeric_limits<float>::quiet_NaN();
        constexpr int kD = tile::kDeepOutputs;  // outputs per step at most (16)
        static float wbuf[3][kD][32];  // DeepSmem: w, idx, j (stale contents from earlier calls never read)
        static int ibuf[3][kD][32], jbuf[3][kD];
        static int ibuf_old[3][kD][32];  // mutate 6: a buffer's index rows before its latest copies
        for (auto& b : wbuf)
          for (auto& o : b)
            for (float& v : o) v = kNaN;
        for (auto& b : ibuf)
          for (auto& o : b)
            for (int& v : o) v = -7;
        int bc = 0, bi = 1;
        int gA = lo, gB = tile::group_end(lo, hi, true);
        int wA[32], wB[32];
        auto window = [&](int (&w)[32], int g0) {
          for (int l = 0; l < 32; ++l)
            w[l] = g0 < hi ? tile::deep_order_entry(order, g0, tile::group_end(g0, hi, true), l) : 0;
        };
        int pn = lo;
        auto issue = [&](int p, int b) {  // lane l: pieces 4 (l % 8) .. + 3 of outputs l / 8 + 4 h, h = 0..3
          int jn[32];
          for (int l = 0; l < 32; ++l) jn[l] = wA[tile::deep_piece_pos(p, gB, l) - gA];
          for (int o = 0; o < kD; ++o) jbuf[b][o] = jn[o];
          if (mutate == 6) std::copy(&ibuf[b][0][0], &ibuf[b][0][0] + kD * 32, &ibuf_old[b][0][0]);
          for (int l = 0; l < 32; ++l) {
            const int s4 = l & 7, o4 = l >> 3;
            for (int h = 0; h < 4; ++h) {
              const int o = o4 + 4 * h, jo = jn[o];  // __shfl_sync(jn, o)
              for (int c = 0; c < 4; ++c) pair_of(jo, 4 * s4 + c, &ibuf[b][o][4 * s4 + c], &wbuf[b][o][4 * s4 + c]);
            }
          }
        };
        if (lo < hi) {
          window(wA, gA);
          window(wB, gB);
          issue(pn, bi);
        }
        int steps_c = 0;
        bool have_c = false;
        for (;;) {
          const bool have_n = pn < hi;
          bool new_n = false;
          int steps_n = 0, i_new[32] = {};
          if (have_n) {
            const int(&iv)[kD][32] = mutate == 6 ? ibuf_old[bi] : ibuf[bi];  // what the vote reads
            unsigned same = 0xffffu;
            for (int l = 0; l < 32; ++l) {
              const int s4 = l & 7, o4 = l >> 3;
              i_new[l] = iv[0][l];
              for (int h = 0; h < 4; ++h) {
                const int o = o4 + 4 * h;
                bool eq = true;
                for (int c = 0; c < 4; ++c) {
                  const int i = iv[o][4 * s4 + c];
                  if (i < 0) wbuf[bi][o][4 * s4 + c] = 0.f;
                  eq = eq && i == iv[0][4 * s4 + c];
                }
                if (!eq) same &= ~(1u << o);
              }
            }
            const int room = gB - pn;
            same &= room >= kD ? 0xffffu : (1u << room) - 1u;
            int m = 0;
            while (m < kD && (same >> m & 1u)) ++m;
            steps_n = m >= 4 ? m : 1;
            for (int l = 0; l < 32; ++l) new_n = new_n || i_new[l] != held[l];
            if (new_n) std::copy(i_new, i_new + 32, held);
            pn += steps_n;
            if (pn == gB && pn < hi) {
              gA = gB;
              gB = tile::group_end(gA, hi, true);
              if (mutate != 5) std::copy(wB, wB + 32, wA);
              window(wB, gB);
            }
            if (pn < hi) issue(pn, bi == 2 ? 0 : bi + 1);
          }
          // The new list's features (lane l's column), all padding 0.
          auto load_new = [&] {
            bool full = true;
            for (int l = 0; l < 32; ++l) full = full && i_new[l] >= 0;
            ++res.list_loads;
            if (!full) ++res.padded_loads;
            for (int l = 0; l < nimg && arithmetic; ++l)  // mutate 8: image 1 (l >= 32) from image 0's column
              for (int t = 0; t < 32; ++t)
                xv[l][t] = i_new[t] >= 0 ? load(i_new[t], col[mutate == 8 && l >= 32 ? l - 32 : l]) : 0.f;
          };
          if (mutate == 3 && new_n) load_new();  // the new list before the FMAs that still need the old one
          if (have_c) {
            const int b = mutate == 4 ? bi : bc;
            if (steps_c > 1) {
              ++res.block_steps;
              res.block_outputs += steps_c;
              if (two) {  // the kernel's passes of 4 outputs x 2 images while o0 < steps_c (the list loaded in the last)
                for (int o0 = 0; o0 < steps_c; o0 += 4) {
                  for (int o = o0; o < o0 + 4; ++o) output(jbuf[b][o], wbuf[b][o], o < 4 || o < steps_c);
                  if (mutate == 7 && new_n && o0 == 0) load_new();
                }
              } else {  // the kernel's passes: outputs 0..7, and 8..15 when the step has more than 8
                for (int o = 0; o < (steps_c > 8 ? 16 : 8); ++o) output(jbuf[b][o], wbuf[b][o], o < 4 || o < steps_c);
              }
            } else {
              ++res.single_steps;
              output(jbuf[b][0], wbuf[b][0], true);
            }
          }
          if (new_n && mutate != 3 && !(mutate == 7 && two && have_c && steps_c > 1)) load_new();
          if (!have_n) break;
          have_c = true;
          steps_c = steps_n;
          bc = bi;
          bi = bi == 2 ? 0 : bi + 1;
        }
      };
      if (mode >= 3 && !unaligned) {
        steps_range_deep(run.begin, run.end);
      } else if (mode != 2) {
        steps_range(run.begin, run.end);
      } else {
        list_mode_run(run.begin, run.end, steps_range);
      }
      for (int l = 0; l < nimg; ++l)
        if (valid[l] && alive[l] != 0.f) res.flags[size_t(tile0 + run.group * 32 + l)] = 1;
    }
  }
  return res;
}

// (arithmetic = false: the schedule and its list loads only, no features, no outputs.)

// Runs of equal lists of 1 .. max_run rows (a padding entry with probability pad, 3% of lists all
// padding), stored scattered with a row order that lists them run by run when `scattered`.
Layer random_layer(int64_t n, int max_run, bool scattered, double pad, Rng& g) {
  Layer L = blank_layer(n);
  spdnn::Ell& e = L.e;
  std::vector<int> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (scattered)
    for (int64_t p = n - 1; p > 0; --p) std::swap(perm[size_t(p)], perm[g.next() % uint64_t(p + 1)]);
  int list[32];
  int64_t left = 0;
  for (int64_t p = 0; p < n; ++p) {
    if (left == 0) {
      left = 1 + int64_t(g.next() % uint64_t(max_run));
      const bool empty_row = g.uniform() < 0.03;
      for (int& i : list) i = (empty_row || g.uniform() < pad) ? -1 : int(g.next() % uint64_t(n));
    }
    --left;
    const int64_t j = perm[size_t(p)];
    for (int k = 0; k < 32; ++k) {
      e.idx[size_t(j) * 32 + k] = list[k];
      if (list[k] >= 0) e.val[size_t(j) * 32 + k] = float(g.uniform() * 0.05 - 0.01);
    }
  }
  if (scattered) L.order = perm;
  return L;
}

// Aligned blocks of 16 rows (natural order, n need not be a multiple of 16), each one unpadded list
// (60%), one list with a padding entry (20%) or two lists of 8 rows (20%): list mode interleaves list
// steps and block steps inside one pipeline chunk (the kernel's `rest` mask).
// The list loads of a layer whose row order holds the lists as aligned runs of `rows_per_list`
// rows (the generated challenge layers: 16): per warp run [b, e), the lists it touches.
int64_t modelled_list_loads(int count, int64_t n_out, int sm_count, int grid, int rows_per_list) {
  const tile::Shape sh = tile::layer_shape(count, n_out, sm_count, grid);
  int64_t loads = 0;
  for (int64_t s = 0; s < sh.slices; ++s) {
    const int64_t jb = s * sh.slice, je = std::min(n_out, jb + sh.slice);
    for (int warp = 0; warp < tile::kWarps; ++warp) {
      const tile::Run r = tile::warp_run(warp, sh.ipt, jb, je);
      if (r.begin < r.end) loads += (r.end - 1) / rows_per_list - r.begin / rows_per_list + 1;
    }
  }
  return loads * sh.tiles;  // every tile's warps walk the same runs
}

// Block mode on the same layers: per group of a run (ending at multiples of 32), a step at output t covers
// m = min(8, the rest of the group, the rest of t's list) outputs when m >= 4, else one.
void modelled_steps(int count, int64_t n_out, int sm_count, int grid, int rows_per_list, int64_t* block_steps,
                    int64_t* block_outputs, int64_t* single_steps) {
  const tile::Shape sh = tile::layer_shape(count, n_out, sm_count, grid);
  int64_t b = 0, bo = 0, s1 = 0;
  for (int64_t sl = 0; sl < sh.slices; ++sl) {
    const int64_t jb = sl * sh.slice, je = std::min(n_out, jb + sh.slice);
    for (int warp = 0; warp < tile::kWarps; ++warp) {
      const tile::Run r = tile::warp_run(warp, sh.ipt, jb, je);
      for (int g0 = r.begin, g1; g0 < r.end; g0 = g1) {
        g1 = std::min(r.end, (g0 / 32 + 1) * 32);  // groups end at multiples of 32 (group_end)
        const int cnt = g1 - g0;
        for (int k = 0; k < cnt;) {
          const int t = g0 + k;
          const int m = std::min({8, cnt - k, (t / rows_per_list + 1) * rows_per_list - t});
          if (m >= 4) {
            ++b;
            bo += m;
            k += m;
          } else {
            ++s1;
            ++k;
          }
        }
      }
    }
  }
  *block_steps = b * sh.tiles;
  *block_outputs = bo * sh.tiles;
  *single_steps = s1 * sh.tiles;
}

// identity: image r in column r and ldx a multiple of 4 (the list tile's 16-byte feature copies),
// else a random permutation of the columns (its 4-byte gather).
// expect_list: the layer has aligned 16-row lists, so list mode must take list steps (and with
// identity columns and a full first group, some of them through 16-byte copies).
void run_case(const Layer& L, int count, int sm_count, uint64_t seed, bool identity = false, bool expect_list = false) {
  Rng g{seed};
  const int64_t n_in = L.e.cols;
  const int64_t ldx = identity ? (count + 8) / 4 * 4 : count + 7;  // columns: the images, plus unused ones
  std::vector<float> x(size_t(n_in * ldx));
  for (float& v : x) v = float(g.uniform() * 4.0 - 1.0);  // signed: sums below zero, in (0, 32), clamped
  std::vector<int> rows(static_cast<size_t>(ldx));
  std::iota(rows.begin(), rows.end(), 0);
  if (!identity)
    for (int64_t p = ldx - 1; p > 0; --p) std::swap(rows[size_t(p)], rows[g.next() % uint64_t(p + 1)]);
  rows.resize(size_t(count));
  const int64_t ldy = count + 3;
  const float bias = -0.3f, clamp_max = 32.f;
  for (int mode : {0, 1, 2, 3, 4}) {  // JHDNN_SPDNN_TILE = single, block, list; cta2's pipelined block steps; cta2w
    // The resident grid: 3 blocks per SM (list and cta2: 2, their shared memory per block).
    const int grid = (mode >= 2 ? 2 : 3) * sm_count;
    const Result res = emulate(L, x, ldx, rows, count, ldy, bias, clamp_max, sm_count, grid, mode);
    const Check c = check(L, x, ldx, rows, count, ldy, bias, clamp_max, res);
    if (mode == 3 && tile::cta_layer_shape(count, L.e.rows, sm_count, grid).ipt == 1) {
      // cta2's 32-image shape is block mode's, and a step (of up to 16 outputs here, 8 there) covers only
      // outputs with its first output's list: the list loads are block mode's, load for load, and so are
      // the outputs (block-step outputs + single steps); the pipelined steps take >= as many per step.
      const Result rb = emulate(L, x, ldx, rows, count, ldy, bias, clamp_max, sm_count, grid, 1, false);
      INFO("deep vs block steps, count " << count);
      CHECK(res.list_loads == rb.list_loads);
      CHECK(res.padded_loads == rb.padded_loads);
      CHECK(res.block_outputs + res.single_steps == rb.block_outputs + rb.single_steps);
      CHECK(res.block_outputs >= rb.block_outputs);
      CHECK(res.block_steps <= rb.block_steps);
    }
    if (mode == 4 && tile::cta2w_layer_shape(count, L.e.rows, sm_count, grid).ipt == 2) {
      // cta2w's 64-image items: the steps are cta2's (the same votes on the same runs would give the same
      // list loads per warp, but the runs differ: twice the slices), so only the outputs are compared.
      INFO("cta2w, 64-image items, count " << count);
      CHECK(res.block_steps + res.single_steps > 0);
    }
    INFO((mode == 4 ? "deep2" : mode == 3 ? "deep" : mode == 2 ? "list" : mode == 1 ? "block" : "single")
         << " tile, count " << count << ", SMs " << sm_count << (identity ? ", identity columns" : "")
         << ", list loads " << res.list_loads << " (" << res.padded_loads << " padded), block steps "
         << res.block_steps << " (" << res.block_outputs << " outputs), single steps " << res.single_steps
         << ", list steps " << res.list_steps << " (" << res.contig_stages << " contiguous, " << res.gather_stages
         << " gathered)");
    CHECK(res.bad_reads == 0);
    CHECK(res.bad_stage == 0);
    if (mode == 2 && expect_list) {
      CHECK(res.list_steps > 0);
      if (identity && count >= 32) CHECK(res.contig_stages > 0);
      if (!identity) CHECK(res.contig_stages == 0);
    }
    if (mode != 2) CHECK(res.list_steps == 0);
    CHECK(res.bad_prefetch == 0);
    CHECK(c.written_twice == 0);
    CHECK(c.missing == 0);
    CHECK(c.stray == 0);
    CHECK(c.wrong == 0);
    CHECK(c.flag_wrong == 0);
  }
}

}  // namespace

TEST_CASE("spdnn reuse tile emulation: every output once, bitwise the fma chain, flags exact", "[sparse][cpu]") {
  Rng g{0x5eed2026};
  SECTION("runs of equal lists (1 .. 40 rows), natural order, padding") {
    const Layer L = random_layer(300, 40, false, 0.1, g);
    for (int count : {1, 31, 33, 200}) run_case(L, count, 2, g.next());
    run_case(L, 1100, 4, g.next());  // >= 2 x 4 SMs x 128 images: 128-image tiles, 4 groups x 2 runs
  }
  SECTION("scattered rows with a row order, no padding") {
    const Layer L = random_layer(257, 20, true, 0.0, g);
    for (int count : {5, 97}) run_case(L, count, 3, g.next());
    run_case(L, 800, 3, g.next());
  }
  SECTION("random ELL (every row its own list), heavy padding") {
    const Layer L = random_layer(130, 1, true, 0.4, g);
    for (int count : {64, 1030}) run_case(L, count, 4, g.next());
  }
  SECTION("one list for every row") {
    Layer L = random_layer(200, 1, false, 0.0, g);
    for (int k = 0; k < 32; ++k) L.e.idx[size_t(k)] = int(g.next() % uint64_t(L.e.cols));  // no padding
    for (int64_t j = 0; j < L.e.rows; ++j)
      for (int k = 0; k < 32; ++k) {  // row 0's list, each row its own weights
        L.e.idx[size_t(j * 32 + k)] = L.e.idx[size_t(k)];
        L.e.val[size_t(j * 32 + k)] = float(g.uniform() * 0.05 - 0.01);
      }
    run_case(L, 40, 4, g.next());  // runs of 9 outputs: no list block fits, list mode runs block steps
    run_case(L, 1030, 4, g.next(), false, true);
    run_case(L, 1030, 4, g.next(), true, true);
  }
  SECTION("aligned 16-row blocks, some padded or split (list steps and block steps in one chunk)") {
    const Layer L = mixed_blocks(1000, g);
    for (int count : {45, 1100}) run_case(L, count, 4, g.next(), false, true);
    run_case(L, 1100, 4, g.next(), true, true);
  }
  SECTION("generated challenge layer N = 4096: runs of 64 list blocks (two pipeline chunks)") {
    Layer L;
    L.e = spdnn::generate_layer_ell(4096, 3, 42);
    L.order = spdnn::reuse_order(L.e);
    run_case(L, 300, 1, g.next(), true, true);
  }
  SECTION("generated challenge layer N = 4096, 950 images on the H200's 132 SMs (a late layer's shape)") {
    // cta2: 30 tiles of 32 images x 8 slices of 512 rows, runs of 64 outputs = 4 steps of 16 per warp.
    Layer L;
    L.e = spdnn::generate_layer_ell(4096, 3, 42);
    L.order = spdnn::reuse_order(L.e);
    REQUIRE(tile::cta_layer_shape(950, 4096, 132, 264).ipt == 1);
    run_case(L, 950, 132, g.next());
    // The schedule alone: every warp-run is 4 steps of 16 outputs, each with a new list (1920 runs).
    std::vector<float> x(size_t(4096) * 960, 0.5f);
    std::vector<int> rows(950);
    std::iota(rows.begin(), rows.end(), 0);
    const Result res = emulate(L, x, 960, rows, 950, 960, -0.3f, 32.f, 132, 264, 3, false);
    CHECK(res.block_steps == 4 * 1920);
    CHECK(res.block_outputs == 64 * 1920);
    CHECK(res.single_steps == 0);
    CHECK(res.list_loads == 4 * 1920);
    CHECK(res.padded_loads == 0);
    // cta2w: 15 tiles of 64 images (the last with 54) x 16 slices of 256 rows, runs of 32 outputs aligned to 16:
    // every warp-run is 2 steps of 16 outputs (4 passes each), each with a new list (1920 runs).
    const tile::Shape w = tile::cta2w_layer_shape(950, 4096, 132, 264);
    REQUIRE(w.ipt == 2);
    REQUIRE(w.tiles == 15);
    REQUIRE(w.slices == 16);
    const Result rw = emulate(L, x, 960, rows, 950, 960, -0.3f, 32.f, 132, 264, 4, false);
    CHECK(rw.block_steps == 2 * 1920);
    CHECK(rw.block_outputs == 32 * 1920);
    CHECK(rw.single_steps == 0);
    CHECK(rw.list_loads == 2 * 1920);
    CHECK(rw.padded_loads == 0);
  }
  SECTION("generated challenge layer N = 1024 in its reuse order") {
    Layer L;
    L.e = spdnn::generate_layer_ell(1024, 3, 42);
    L.order = spdnn::reuse_order(L.e);
    for (int count : {50, 1100}) run_case(L, count, 4, g.next(), false, true);
    for (int count : {37, 1100}) run_case(L, count, 4, g.next(), true, true);  // contiguous columns (16-byte copies)
  }
  SECTION("cta2w's 64-image items on the H200's 132 SMs: scattered mixed lists with padding, partial last tiles") {
    // Below 66 x 128 images every count runs 64-image items under cta2w: 100 (a tile of 36: lanes 4..31
    // without a second image), 161 (33: lane 0 only has two), 1000 (16 tiles, the last with 40).
    const Layer L = random_layer(600, 24, true, 0.1, g);
    for (int count : {100, 161, 1000}) {
      REQUIRE(tile::cta2w_layer_shape(count, L.e.rows, 132, 264).ipt == 2);
      run_case(L, count, 132, g.next());
    }
  }
}

TEST_CASE("spdnn reuse tile emulation: list loads of the challenge layers match the cost model", "[sparse][cpu]") {
  // H200 shapes (132 SMs, grid 396) on generated layers in their reuse order (16 rows per list):
  // the emulated list loads equal the per-run count of scripts/spdnn-crowded-model.py.
  for (int64_t n : {1024, 4096}) {
    Layer L;
    L.e = spdnn::generate_layer_ell(n, 5, 42);
    L.order = spdnn::reuse_order(L.e);
    // The lists really are aligned runs of 16 rows in that order.
    for (int64_t t = 0; t < n; ++t) {
      const int64_t a = L.order[size_t(t)], b = L.order[size_t(t - t % 16)];
      REQUIRE(std::equal(L.e.idx.begin() + a * 32, L.e.idx.begin() + a * 32 + 32, L.e.idx.begin() + b * 32));
    }
    for (int count : {950, 4900, 33800}) {
      const int64_t ldx = count, ldy = count;
      std::vector<float> x(size_t(n * ldx), 0.5f);
      std::vector<int> rows(static_cast<size_t>(count));
      std::iota(rows.begin(), rows.end(), 0);
      const Result res = emulate(L, x, ldx, rows, count, ldy, -0.3f, 32.f, 132, 396, false, false);  // loads only
      INFO("N " << n << ", count " << count);
      CHECK(res.list_loads == modelled_list_loads(count, n, 132, 396, 16));
      CHECK(res.padded_loads == 0);
      const Result rb = emulate(L, x, ldx, rows, count, ldy, -0.3f, 32.f, 132, 396, true, false);
      int64_t bs = 0, bo = 0, s1 = 0;
      modelled_steps(count, n, 132, 396, 16, &bs, &bo, &s1);
      CHECK(rb.list_loads == res.list_loads);
      CHECK(rb.block_steps == bs);
      CHECK(rb.block_outputs == bo);
      CHECK(rb.single_steps == s1);
      // Most outputs of a challenge layer run in block steps (crowded layers: runs of ~171 outputs,
      // nearly all; late layers: runs of ~10, cut lists at both ends).
      CHECK(rb.block_outputs >= (count > 30000 ? 0.95 : 0.75) * double(rb.block_outputs + rb.single_steps));
      // List mode (grid 2 x SMs, slices and runs aligned to 16): every output of these layers is in a
      // 16-output list step, none as block steps; columns in order, so with ldx = count a multiple of 4
      // (4900, 33800) the full groups take 16-byte copies, with 950 every group gathers.
      const Result rl = emulate(L, x, ldx, rows, count, ldy, -0.3f, 32.f, 132, 264, 2, false);
      const tile::Shape sl = tile::layer_shape(count, n, 132, 264, tile::kListOutputs);
      CHECK(rl.block_steps == 0);
      CHECK(rl.single_steps == 0);
      CHECK(rl.list_loads == 0);
      CHECK(rl.list_steps * tile::kListOutputs == sl.tiles * sl.ipt * n);
      CHECK((rl.contig_stages > 0) == (count % 4 == 0));
    }
  }
}

// The list tile's schedule and arithmetic, made to fail: an accumulator fed input t + 1's feature, or
// the pipeline computing a block from the stage the next block's copies went to (one buffer instead
// of two). Either must be caught by the checks run_case makes.
TEST_CASE("spdnn reuse tile emulation: the list tile's mutations are caught", "[sparse][cpu]") {
  Rng g{0x115712};
  Layer L;
  L.e = spdnn::generate_layer_ell(1024, 3, 42);
  L.order = spdnn::reuse_order(L.e);
  const int count = 300;
  const int64_t ldx = count + 7, ldy = count + 3;
  std::vector<float> x(size_t(L.e.cols * ldx));
  for (float& v : x) v = float(g.uniform() * 4.0 - 1.0);
  std::vector<int> rows(static_cast<size_t>(count));
  std::iota(rows.begin(), rows.end(), 0);
  for (int mutate : {0, 1, 2}) {
    const Result res = emulate(L, x, ldx, rows, count, ldy, -0.3f, 32.f, 4, 8, 2, true, mutate);
    const Check c = check(L, x, ldx, rows, count, ldy, -0.3f, 32.f, res);
    INFO("mutation " << mutate << ": list steps " << res.list_steps << ", wrong " << c.wrong << ", bad stage "
                     << res.bad_stage);
    CHECK(res.list_steps > 0);
    if (mutate == 0) {
      CHECK(c.wrong == 0);
      CHECK(res.bad_stage == 0);
    } else {
      CHECK(c.wrong > 0);
    }
    if (mutate == 2) CHECK(res.bad_stage > 0);
  }
}

// The mutation cases' inputs: features in [-1, 1) (ldx = count + 7 columns), active images 0 .. count - 1 in
// a random order, ldy = count + 3.
namespace {
struct MutationInputs {
  int64_t ldx, ldy;
  std::vector<float> x;
  std::vector<int> rows;
};
MutationInputs mutation_inputs(const Layer& L, int count, Rng& g) {
  MutationInputs in{count + 7, count + 3, std::vector<float>(size_t(L.e.cols * (count + 7))), {}};
  for (float& v : in.x) v = float(g.uniform() * 4.0 - 1.0);
  in.rows.resize(static_cast<size_t>(count));
  std::iota(in.rows.begin(), in.rows.end(), 0);
  for (int p = count - 1; p > 0; --p) std::swap(in.rows[size_t(p)], in.rows[g.next() % uint64_t(p + 1)]);
  return in;
}
}  // namespace

// cta2's pipelined block steps made to fail (emulate's mutate 3-6: the new list read into xv before the
// previous step's FMAs; a step computed from the next step's weight buffer; the order window not moved on;
// the vote reading its buffer before the step's copies have landed, i.e. a missed wait_group):
// each must be caught by the output checks, on a challenge layer in its reuse order (runs of 2 groups) and on
// runs of mixed lists with padding and random weights (the challenge layer's weights are all equal, so there
// only the list and window mutations can show).
TEST_CASE("spdnn reuse tile emulation: the pipelined block steps' mutations are caught", "[sparse][cpu]") {
  Rng g{0xdee9};
  Layer C;
  C.e = spdnn::generate_layer_ell(1024, 3, 42);
  C.order = spdnn::reuse_order(C.e);
  const Layer M = random_layer(300, 12, true, 0.2, g);
  for (const Layer* L : {static_cast<const Layer*>(&C), &M}) {
    const int count = 200;  // 32-image tiles on 8 SMs (grid 16): 7 tiles x 2 slices, runs of 64 (C) or 19 (M)
    const auto [ldx, ldy, x, rows] = mutation_inputs(*L, count, g);
    REQUIRE(tile::cta_layer_shape(count, L->e.rows, 8, 16).ipt == 1);
    for (int mutate : {0, 3, 4, 5, 6}) {
      const Result res = emulate(*L, x, ldx, rows, count, ldy, -0.3f, 32.f, 8, 16, 3, true, mutate);
      const Check c = check(*L, x, ldx, rows, count, ldy, -0.3f, 32.f, res);
      INFO((L == &C ? "challenge layer" : "mixed lists") << ", mutation " << mutate << ": block steps "
           << res.block_steps << ", single steps " << res.single_steps << ", list loads " << res.list_loads
           << ", wrong " << c.wrong << ", missing " << c.missing << ", twice " << c.written_twice);
      CHECK(res.block_steps > 0);
      CHECK(res.list_loads > 0);
      if (L == &M) {
        CHECK(res.single_steps > 0);
        CHECK(res.padded_loads > 0);
      }
      const int64_t bad = c.wrong + c.missing + c.written_twice + c.stray + c.flag_wrong;
      if (mutate == 0)
        CHECK(bad == 0);
      else if (mutate != 4 || L == &M)  // the challenge layer's weights are all equal: a buffer mix-up is invisible
        CHECK(bad > 0);
    }
  }
}

// cta2w's 64-image items (two images per lane): the pipelined steps' mutations (3-6) and the two-image ones
// (7: the new list loaded after a step's first pass of 4 outputs; 8: image 1 gathered from image 0's column)
// are caught, on the challenge layer in its reuse order and on mixed lists with padding; 200 images = 3 full
// 64-image tiles and one of 8 (lanes 8..31 of its warps without a second image).
TEST_CASE("spdnn reuse tile emulation: cta2w's two-image steps' mutations are caught", "[sparse][cpu]") {
  Rng g{0xdee92};
  Layer C;
  C.e = spdnn::generate_layer_ell(1024, 3, 42);
  C.order = spdnn::reuse_order(C.e);
  const Layer M = random_layer(1100, 12, true, 0.2, g);
  for (const Layer* L : {static_cast<const Layer*>(&C), &M}) {
    const int count = 200;
    const auto [ldx, ldy, x, rows] = mutation_inputs(*L, count, g);
    // grid 12 (8 SMs): 4 tiles x 3 slices of 384 rows, runs of 48 outputs aligned to 16 (over two groups of the
    // row order: the window moves)
    const tile::Shape sh = tile::cta2w_layer_shape(count, L->e.rows, 8, 12);
    REQUIRE(sh.ipt == 2);
    REQUIRE(sh.tiles == 4);
    REQUIRE(sh.slices == 3);
    for (int mutate : {0, 3, 4, 5, 6, 7, 8}) {
      const Result res = emulate(*L, x, ldx, rows, count, ldy, -0.3f, 32.f, 8, 12, 4, true, mutate);
      const Check c = check(*L, x, ldx, rows, count, ldy, -0.3f, 32.f, res);
      INFO((L == &C ? "challenge layer" : "mixed lists") << ", mutation " << mutate << ": block steps "
           << res.block_steps << " (" << res.block_outputs << " outputs), single steps " << res.single_steps
           << ", list loads " << res.list_loads << ", wrong " << c.wrong << ", missing " << c.missing << ", twice "
           << c.written_twice);
      CHECK(res.block_steps > 0);
      CHECK(res.block_outputs > 4 * res.block_steps);  // steps of more than one pass
      CHECK(res.list_loads > 0);
      if (L == &M && mutate == 0) {
        CHECK(res.single_steps > 0);
        CHECK(res.padded_loads > 0);
      }
      CHECK(res.bad_reads == 0);
      const int64_t bad = c.wrong + c.missing + c.written_twice + c.stray + c.flag_wrong;
      if (mutate == 0)
        CHECK(bad == 0);
      else if (mutate != 4 || L == &M)  // the challenge layer's weights are all equal: a buffer mix-up is invisible
        CHECK(bad > 0);
    }
  }
}

// cta2w (mode 4) where its shape changes: counts just below, at and above the switch to 128-image items
// (from cta_min_tiles(SMs) tiles of 128 images: 129 images on 4 SMs, 385 on 8, 8321 on the H200's 132 SMs,
// where 8320 are 130 tiles of 64); 64-image tiles whose lanes have no second image (a last tile of <= 32
// images) or neither (count 1, 65: lanes 1..31); layers whose n is not a multiple of 16 or 64, or below 64
// (one slice: runs of 16, 16, 8 and empty ones); and the fallback for weight arrays that are not 16-byte
// aligned (one output at a time in 2 groups of 32 images x 4 runs; emulate's `unaligned`), with cta2's
// (mode 3) alongside. Every output once, bitwise the fma chain, flags exact.
TEST_CASE("spdnn reuse tile emulation: cta2w around the 128-image switch, partial tiles, unaligned weights",
          "[sparse][cpu]") {
  Rng g{0xc7a2};
  const Layer layers[] = {random_layer(300, 40, false, 0.1, g),  // natural order, padding, n % 16 = 12
                          random_layer(257, 20, true, 0.1, g),   // scattered with a row order, n % 16 = 1
                          random_layer(40, 5, true, 0.2, g),     // n < 64: one slice of runs of 16, 16, 8
                          mixed_blocks(200, g)};                 // aligned 16-row lists, some padded or split
  struct Count {
    int count, sm_count, ipt;  // ipt: cta2w_layer_shape's, pinned
  };
  const Count counts[] = {{1, 4, 2},   {31, 4, 2},  {32, 4, 2},  {33, 4, 2},  {63, 4, 2},  {64, 4, 2},
                          {65, 4, 2},  {96, 4, 2},  {127, 4, 2}, {128, 4, 2}, {129, 4, 4}, {256, 4, 4},
                          {383, 8, 2}, {384, 8, 2}, {385, 8, 4}};
  for (const Layer& L : layers)
    for (const Count& k : counts) {
      const int grid = 2 * k.sm_count;  // cta2w: 2 blocks per SM
      REQUIRE(tile::cta2w_layer_shape(k.count, L.e.rows, k.sm_count, grid).ipt == k.ipt);
      const int64_t ldx = k.count + 7, ldy = k.count + 3;
      std::vector<float> x(size_t(L.e.cols * ldx));
      for (float& v : x) v = float(g.uniform() * 4.0 - 1.0);
      std::vector<int> rows(static_cast<size_t>(ldx));
      std::iota(rows.begin(), rows.end(), 0);
      for (int64_t p = ldx - 1; p > 0; --p) std::swap(rows[size_t(p)], rows[g.next() % uint64_t(p + 1)]);
      rows.resize(size_t(k.count));
      for (int mode : {3, 4})
        for (bool unaligned : {false, true}) {
          const Result res =
              emulate(L, x, ldx, rows, k.count, ldy, -0.3f, 32.f, k.sm_count, grid, mode, true, 0, unaligned);
          const Check c = check(L, x, ldx, rows, k.count, ldy, -0.3f, 32.f, res);
          INFO("n " << L.e.rows << ", count " << k.count << ", SMs " << k.sm_count << ", "
                    << (mode == 4 ? "cta2w" : "cta2") << (unaligned ? ", unaligned weights" : "") << ": block steps "
                    << res.block_steps << ", single steps " << res.single_steps << ", wrong " << c.wrong
                    << ", missing " << c.missing << ", twice " << c.written_twice << ", stray " << c.stray
                    << ", flags " << c.flag_wrong);
          CHECK(res.bad_reads == 0);
          CHECK(res.bad_prefetch == 0);
          CHECK(c.ok());
          if (unaligned) CHECK(res.block_steps == 0);
        }
    }
  SECTION("at the switch on the H200's 132 SMs: 8320 images = 130 tiles of 64, 8321 = 66 tiles of 128") {
    const Layer& L = layers[3];
    for (const Count k : {Count{8320, 132, 2}, Count{8321, 132, 4}}) {
      REQUIRE(tile::cta2w_layer_shape(k.count, L.e.rows, 132, 264).ipt == k.ipt);
      const int64_t ldx = k.count + 1, ldy = k.count;
      std::vector<float> x(size_t(L.e.cols * ldx));
      for (float& v : x) v = float(g.uniform() * 4.0 - 1.0);
      std::vector<int> rows(static_cast<size_t>(k.count));
      for (int r = 0; r < k.count; ++r) rows[size_t(r)] = int((int64_t(r) * 7919) % ldx);  // scattered, distinct
      for (bool unaligned : {false, true}) {
        const Result res = emulate(L, x, ldx, rows, k.count, ldy, -0.3f, 32.f, 132, 264, 4, true, 0, unaligned);
        const Check c = check(L, x, ldx, rows, k.count, ldy, -0.3f, 32.f, res);
        INFO("count " << k.count << (unaligned ? ", unaligned weights" : "") << ": wrong " << c.wrong << ", missing "
                      << c.missing << ", twice " << c.written_twice << ", flags " << c.flag_wrong);
        CHECK(res.bad_reads == 0);
        CHECK(c.ok());
      }
    }
  }
}

// Bank model of the list tile's shared-memory accesses (32 banks of 4 bytes; a wavefront serves one
// word per bank, any number of lanes reading that word). For each access of one warp instruction:
// the wavefronts needed (the most distinct words any bank holds) against the ideal (the distinct
// bytes / 128). Conflict-free = ideal, checked for the compute's two LDS.128 and the three cp.async
// writes; and unpadded 128-byte weight rows would be 4-way (the model can fail).
namespace {
struct Wave {
  int need, ideal;
};
// words[l]: the first word lane l accesses, `width` consecutive words.
Wave wavefronts(const int (&word)[32], int width) {
  std::vector<std::vector<int>> per_bank(32);
  std::vector<int> all;
  for (int l = 0; l < 32; ++l)
    for (int k = 0; k < width; ++k) {
      const int w = word[l] + k;
      all.push_back(w);
      std::vector<int>& b = per_bank[size_t(w % 32)];
      if (std::find(b.begin(), b.end(), w) == b.end()) b.push_back(w);
    }
  std::sort(all.begin(), all.end());
  const int distinct = int(std::unique(all.begin(), all.end()) - all.begin());
  int need = 0;
  for (const auto& b : per_bank) need = std::max(need, int(b.size()));
  return {need, (distinct * 4 + 127) / 128};
}
}  // namespace

TEST_CASE("spdnn list tile: shared layout free of bank conflicts (bank model)", "[sparse][cpu]") {
  int word[32];
  for (int k = 0; k < 8; ++k) {
    for (int u = 0; u < 4; ++u) {  // weights 4 k .. 4 k + 3 of output 4 og + u (og = lane / 8)
      for (int l = 0; l < 32; ++l) word[l] = tile::list_w_index(4 * (l >> 3) + u, 4 * k);
      const Wave w = wavefronts(word, 4);
      INFO("weights k " << k << " u " << u);
      CHECK(w.need == w.ideal);
      CHECK(w.ideal == 1);
      // Unpadded rows (o * 32 + t): the 4 outputs' chunks share banks.
      for (int l = 0; l < 32; ++l) word[l] = (4 * (l >> 3) + u) * 32 + 4 * k;
      CHECK(wavefronts(word, 4).need == 4);
    }
    for (int e = 0; e < 4; ++e) {  // input 4 k + e of images 4 ig .. 4 ig + 3 (ig = lane % 8)
      for (int l = 0; l < 32; ++l) word[l] = tile::list_f_index(4 * k + e, 4 * (l & 7));
      const Wave w = wavefronts(word, 4);
      INFO("features k " << k << " e " << e);
      CHECK(w.need == w.ideal);
      CHECK(w.ideal == 1);
    }
  }
  for (int h = 0; h < 4; ++h) {  // weight copies: chunk lane % 8 of output lane / 8 + 4 h
    for (int l = 0; l < 32; ++l) word[l] = tile::list_w_index((l >> 3) + 4 * h, 4 * (l & 7));
    const Wave w = wavefronts(word, 4);
    CHECK(w.need == w.ideal);
  }
  for (int k = 0; k < 8; ++k) {  // contiguous feature copies: chunk lane % 8 of input lane / 8 + 4 k
    for (int l = 0; l < 32; ++l) word[l] = tile::list_f_index((l >> 3) + 4 * k, 4 * (l & 7));
    const Wave w = wavefronts(word, 4);
    CHECK(w.need == w.ideal);
  }
  for (int t = 0; t < 32; ++t) {  // gathered feature copies: lane q -> word (t, q)
    for (int l = 0; l < 32; ++l) word[l] = tile::list_f_index(t, l);
    const Wave w = wavefronts(word, 1);
    CHECK(w.need == w.ideal);
  }
  // Every (output, input) weight and (input, image) feature has its own word inside one stage.
  std::vector<int> seen(size_t(tile::kListStageFloats), 0);
  for (int o = 0; o < tile::kListOutputs; ++o)
    for (int t = 0; t < 32; ++t) ++seen[size_t(tile::list_w_index(o, t))];
  for (int t = 0; t < 32; ++t)
    for (int q = 0; q < 32; ++q) ++seen[size_t(tile::list_f_index(t, q))];
  CHECK(std::count(seen.begin(), seen.end(), 1) == 32 * 32 + tile::kListOutputs * 32);
  CHECK(std::count_if(seen.begin(), seen.end(), [](int v) { return v > 1; }) == 0);
}
