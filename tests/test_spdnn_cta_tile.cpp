// CPU emulation of the fused sparse-DNN layer's CTA tile (JHDNN_SPDNN_TILE=cta and cta2, 2 and 3 stages per
// half; src/sparse/cta_tile.cuh) over a whole layer, thread by thread, with the kernel's own shape and
// indexing (src/sparse/cta_tile.h):
// cta_layer_shape, the items, the slice's full 16-row list blocks alternating between the two halves,
// chunks of <= 32 blocks per half, the list test as the kernel votes it (each thread's 4 indices of its
// row against row 0's, row 0 unpadded), the copies of every thread (one 16-byte weight piece; 8 x 16-byte
// feature pieces from contiguous columns or 32 x 4-byte gathers) into the stage the pipeline names,
// landing when issued (so a block computed from a stage that a later block overwrote reads the wrong
// data), the 4 rows x 4 images per thread over the stage with the fma chain t = 0..31, bias / ReLU /
// clamp, the stores of the valid images and the alive flags; the blocks that are not list steps, the
// head and the tail, and items of 32-image tiles, as block steps (their arithmetic is the CPU chain
// here: the block steps are the block tile's code, emulated in test_spdnn_reuse_tile). Checked: every
// (output, active image) written exactly once and bitwise the CPU fma chain, nothing else written, the
// flags exactly the images with a nonzero output, every read in bounds, no stage read for the wrong
// block; deliberate indexing bugs fail these checks. The half's stage ring and barriers are checked as
// the GPU may interleave them (Protocol below: which block each stage holds, which copies may still be
// in flight, what a barrier makes visible, reads and writes of a stage in the same barrier window). No
// GPU needed: test_sparse runs the kernels (cta2 is the default tile, so its plain ctest entries; ctest
// spdnn_tile_cta: test_sparse's GPU cases with JHDNN_SPDNN_TILE=cta).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "sparse/cta_tile.h"
#include "spdnn/spdnn.h"
#include "spdnn_tile_emu.h"

namespace {

namespace tile = jhdnn::sparse::tile;
using namespace spdnn_emu;

struct Result {
  std::vector<float> y;
  std::vector<int> writes;
  std::vector<int> flags;
  int64_t bad_reads = 0, bad_stage = 0, list_steps = 0, contig_stages = 0, gather_stages = 0, block_outputs = 0;
  int64_t cta_items = 0, other_items = 0;
  int64_t races = 0, unready = 0, max_in_flight = 0;  // Protocol's findings
  int64_t max_pipeline = 0;  // the most list blocks of one pipeline (a chunk of a half)
};

// One half's stage ring and barrier protocol in cta_pipeline / cta_item, as the GPU may interleave it.
// The half's control flow is uniform, so every thread commits the same groups and meets the same
// barriers; between two barriers (a "window") any thread's operations may overlap any other's, and a
// cp.async group may land at any time until its own thread's wait_group covers it. So:
// - a compute of block b from stage s is ready only if the newest copy into s was block b's, every
//   thread waited for it BEFORE the barrier that opened this window (then the barrier made it
//   visible), and no copy into s is still in flight (unready otherwise);
// - a copy into s in a window where some thread reads s, or while an older copy into s is in flight,
//   is a race; so is a block step's use of stage 0 (the aliased ReuseSmem) with a copy in flight or a
//   read of stage 0 in the same window.
struct Protocol {
  struct Group {
    int stage, block;  // stage -1: an empty group
    bool done;
  };
  struct Stage {
    int landed = -1, visible = -1;  // the block whose copies have landed / are visible to the half
    int64_t read_window = -1;
  };
  std::vector<Group> groups;
  std::vector<Stage> st;
  int64_t window = 0;
  Result* res;
  Protocol(int stages, Result* r) : st(size_t(stages)), res(r) {}
  int in_flight(int s) const {  // copies into stage s (all stages: s = -1) not waited for
    int c = 0;
    for (const Group& g : groups) c += !g.done && g.stage >= 0 && (s < 0 || g.stage == s);
    return c;
  }
  void issue(int s, int block) {
    if (st[size_t(s)].read_window == window || in_flight(s) > 0) ++res->races;
    groups.push_back({s, block, false});
    st[size_t(s)].landed = st[size_t(s)].visible = -2;  // being overwritten
    res->max_in_flight = std::max<int64_t>(res->max_in_flight, in_flight(-1));
  }
  void commit_empty() { groups.push_back({-1, -1, false}); }
  void wait(int pending) {  // cp.async.wait_group pending: all but the `pending` newest groups landed
    for (size_t i = 0; i + size_t(pending) < groups.size(); ++i)
      if (!groups[i].done) {
        groups[i].done = true;
        if (groups[i].stage >= 0) st[size_t(groups[i].stage)].landed = groups[i].block;
      }
  }
  void barrier() {
    ++window;
    for (Stage& x : st) x.visible = x.landed;
  }
  void read(int s, int block) {
    Stage& x = st[size_t(s)];
    if (x.visible != block || in_flight(s) > 0) ++res->unready;
    x.read_window = window;
  }
  void scratch() {  // the block steps' buffers in stage 0 (read and written by their warps)
    if (in_flight(-1) > 0 || st[0].read_window == window) ++res->races;
    st[0].read_window = window;
    st[0].landed = st[0].visible = -3;  // clobbered
  }
};


// Deliberate bugs (each must fail the checks): 1 = one accumulator (row u = 1, image i = 2) fed input
// t + 1; 2 = block k + A copied over block k's stage (one stage per half when A = 1); 3 = half 1 takes
// half 0's blocks; 4 = the gathered copies take the column of image lane + 32 m + 1; stage ring and
// protocol (A = cta_ahead(stages)): 5 = block k + A copied into the stage of block k + A - 1 (the ring
// off by one); 6 = the stage index mod stages - 1 (a ring one stage short); 7 = cp.async.wait_group A
// instead of A - 1 (block k's copies not waited for); 8 = block k + A copied before the barrier that
// ends block k - 1's window; 9 = no half barrier at the pipeline's end (block steps in stage 0 while a
// thread may still compute the last block from it).
Result emulate(const Layer& L, const std::vector<float>& x, int64_t ldx, const std::vector<int>& active_rows,
               int count, int64_t ldy, float bias, float clamp_max, int sm_count, int grid, int stages,
               int mutate = 0) {
  const spdnn::Ell& e = L.e;
  const int64_t n_out = e.rows;
  const int* order = L.order.empty() ? nullptr : L.order.data();
  Result res;
  res.y.assign(size_t(n_out * ldy), kPoison);
  res.writes.assign(size_t(n_out * ldy), 0);
  res.flags.assign(size_t(count), 0);
  auto pos_out = [&](int64_t p) -> int64_t {  // the row at position p of the row order
    if (p < 0 || p >= n_out) {
      ++res.bad_reads;
      return 0;
    }
    return order ? order[p] : p;
  };
  auto idx = [&](int64_t j, int t) { return e.idx[size_t(j * 32 + t)]; };
  auto xat = [&](int64_t i, int64_t col) {
    if (i < 0 || i >= e.cols || col < 0 || col >= ldx) {
      ++res.bad_reads;
      return std::numeric_limits<float>::quiet_NaN();
    }
    return x[size_t(i * ldx + col)];
  };
  auto chain = [&](int64_t j, int64_t col) {
    float acc = 0.f;
    for (int t = 0; t < 32; ++t) {
      const int i = idx(j, t);
      acc = std::fma(i >= 0 ? e.val[size_t(j * 32 + t)] : 0.f, i >= 0 ? xat(i, col) : 0.f, acc);
    }
    return std::fmin(std::fmax(acc + bias, 0.f), clamp_max);
  };
  auto store = [&](int64_t j, int r, float v) {
    const size_t at = size_t(j * ldy + r);
    res.y[at] = v;
    ++res.writes[at];
  };
  // Block steps of warp w over positions [lo, hi) for the images r0 + 32 w + lane (the chain).
  std::vector<float> alive(256);
  auto block_steps = [&](int r0, int w_images, int lo, int hi, float* alive_lane) {
    for (int p = lo; p < hi; ++p) {
      const int64_t j = pos_out(p);
      for (int l = 0; l < 32; ++l) {
        const int r = r0 + 32 * w_images + l;
        const float v = chain(j, r < count ? active_rows[size_t(r)] : 0);
        if (r < count) {
          store(j, r, v);
          ++res.block_outputs;
        }
        alive_lane[l] = std::fmax(alive_lane[l], std::fabs(v));
      }
    }
  };
  const tile::Shape sh = tile::cta_layer_shape(count, n_out, sm_count, grid);
  for (int64_t item = 0; item < sh.tiles * sh.slices; ++item) {
    const int tile0 = int(item % sh.tiles) * 32 * sh.ipt;
    const int64_t j_begin = (item / sh.tiles) * sh.slice;
    const int64_t j_end = std::min(n_out, j_begin + sh.slice);
    if (sh.ipt != 4) {  // block steps, block mode's warp runs
      ++res.other_items;
      for (int warp = 0; warp < tile::kWarps; ++warp) {
        const tile::Run run = tile::warp_run(warp, sh.ipt, j_begin, j_end, 1);
        float a[32] = {};
        block_steps(tile0 + 32 * run.group, 0, run.begin, run.end, a);
        for (int l = 0; l < 32; ++l) {
          const int r = tile0 + 32 * run.group + l;
          if (r < count && a[l] != 0.f) res.flags[size_t(r)] = 1;
        }
      }
      continue;
    }
    ++res.cta_items;
    const int r0 = tile0;
    // cta_item: the columns and their contiguity (x's rows 16-byte aligned: vector data).
    unsigned cols[tile::kCtaImages];
    bool contig = (active_rows[size_t(r0)] & 3) == 0 && ldx % 4 == 0;
    for (int q = 0; q < tile::kCtaImages; ++q) {
      cols[q] = r0 + q < count ? unsigned(active_rows[size_t(r0 + q)]) : 0u;
      contig = contig && cols[q] == cols[0] + unsigned(q);
    }
    int b0, b1;
    tile::cta_blocks(j_begin, j_end, &b0, &b1);
    for (int h = 0; h < 2; ++h) {
      auto stage = std::vector<std::vector<float>>(size_t(stages));
      std::vector<int> stage_block(size_t(stages), -1);
      for (auto& st : stage) st.assign(size_t(tile::kCtaStageFloats), std::numeric_limits<float>::quiet_NaN());
      Protocol pr(stages, &res);  // fused_layer's __syncthreads separate the items: a fresh protocol
      float alive4[4][32][4] = {};  // [w][lane][i]
      float alive_lane[4][32] = {};
      // The list test of block b as the half votes it.
      auto vote = [&](int b) {
        bool ok = true;
        for (int w = 0; w < 4; ++w)
          for (int lane = 0; lane < 32; ++lane) {
            const int64_t j0 = pos_out(int64_t(b) * tile::kListOutputs);
            const int i0 = idx(j0, lane);
            const int c = tile::cta_copy_chunk(lane);
            const int64_t jr = pos_out(int64_t(b) * tile::kListOutputs + tile::cta_copy_row(w, lane));
            bool mine = i0 >= 0;
            for (int q = 0; q < 4; ++q) mine = mine && idx(jr, c + q) == idx(j0, c + q);
            ok = ok && mine;
          }
        return ok;
      };
      // cta_issue: every thread's copies of block b into stage s.
      auto issue = [&](int b, int s) {
        std::vector<float>& st = stage[size_t(s)];
        stage_block[size_t(s)] = b;
        (contig ? res.contig_stages : res.gather_stages) += 1;
        const int64_t j0 = pos_out(int64_t(b) * tile::kListOutputs);
        for (int w = 0; w < 4; ++w)
          for (int lane = 0; lane < 32; ++lane) {
            const int row = tile::cta_copy_row(w, lane), c4 = tile::cta_copy_chunk(lane);
            const int64_t jo = pos_out(int64_t(b) * tile::kListOutputs + row);
            for (int q = 0; q < 4; ++q) st[size_t(tile::cta_w_index(row, c4 + q))] = e.val[size_t(jo * 32 + c4 + q)];
            for (int k8 = 0; k8 < 8; ++k8) {
              const int t = tile::cta_copy_input(w, k8);
              const int i = idx(j0, t);
              if (contig) {
                const int img4 = tile::cta_copy_image4(lane);
                for (int q = 0; q < 4; ++q) st[size_t(tile::cta_f_index(t, img4 + q))] = xat(i, cols[0] + img4 + q);
              } else {
                for (int m = 0; m < 4; ++m) {
                  const int img = tile::cta_gather_image(lane, m);
                  const int src = mutate == 4 ? std::min(img + 1, tile::kCtaImages - 1) : img;
                  st[size_t(tile::cta_f_index(t, img))] = xat(i, cols[src]);
                }
              }
            }
          }
      };
      // cta_compute: block b from stage s.
      auto compute = [&](int b, int s) {
        ++res.list_steps;
        if (stage_block[size_t(s)] != b) ++res.bad_stage;
        const std::vector<float>& st = stage[size_t(s)];
        for (int w = 0; w < 4; ++w)
          for (int lane = 0; lane < 32; ++lane)
            for (int u = 0; u < 4; ++u)
              for (int i = 0; i < 4; ++i) {
                const int row = tile::cta_row(lane, u), img = tile::cta_image(w, lane, i);
                float acc = 0.f;
                for (int t = 0; t < 32; ++t) {
                  const int tf = mutate == 1 && u == 1 && i == 2 ? (t + 1) % 32 : t;
                  acc = std::fma(st[size_t(tile::cta_w_index(row, t))], st[size_t(tile::cta_f_index(tf, img))], acc);
                }
                const float v = std::fmin(std::fmax(acc + bias, 0.f), clamp_max);
                alive4[w][lane][i] = std::fmax(alive4[w][lane][i], std::fabs(v));
                if (r0 + img < count) store(pos_out(int64_t(b) * tile::kListOutputs + row), r0 + img, v);
              }
      };
      const int nh = tile::cta_half_blocks(b0, b1, h);
      const int A = tile::cta_ahead(stages);
      auto ring = [&](int k) { return mutate == 6 ? k % (stages - 1) : tile::cta_stage(k, stages); };
      auto issue_stage = [&](int k) {  // the stage block k's copies go to
        return mutate == 5 ? ring(k - 1) : mutate == 2 ? ring(k - A) : ring(k);
      };
      auto copy = [&](int b, int k) {  // cta_issue (+ its commit) of the chunk's block k = list block b
        issue(b, issue_stage(k));
        pr.issue(issue_stage(k), b);
      };
      for (int c0 = 0; c0 < nh; c0 += 32) {
        const int n = std::min(32, nh - c0);
        res.max_pipeline = std::max<int64_t>(res.max_pipeline, n);
        const int b_first = b0 + (mutate == 3 ? 0 : h) + 2 * c0;
        auto blk = [&](int k) { return b_first + 2 * k; };
        unsigned rest = 0u;
        // The kernel's register pipeline: order entries loaded for blocks k .. k + A + 1 (ord[a]: here
        // the block each holds, -1 = not loaded), the indices fetched for block k + A (f_blk), the list
        // tests of blocks k .. k + A - 1 (ok), rotated as the kernel rotates them; vote, issue and
        // compute use what those registers hold.
        std::vector<int> ord(size_t(A + 2));
        std::vector<bool> ok(size_t(A), false);
        for (int a = 0; a < A + 2; ++a) ord[size_t(a)] = a == 0 || a < n ? blk(a) : -1;
        int f_blk = ord[0];
        for (int a = 0; a < A; ++a) {
          pr.barrier();
          ok[size_t(a)] = (a == 0 || a < n) && vote(f_blk);
          if (ok[size_t(a)]) copy(ord[size_t(a)], a);
          else if (stages > 2) pr.commit_empty();
          if (a + 1 < n) f_blk = ord[size_t(a + 1)];
        }
        for (int k = 0; k < n; ++k) {
          pr.wait(mutate == 7 ? A : A - 1);
          if (mutate != 8) pr.barrier();
          const bool ok_next = k + A < n && vote(f_blk);
          if (ok_next) {
            if (f_blk != ord[size_t(A)]) ++res.bad_stage;  // indices and order entries of different blocks
            copy(ord[size_t(A)], k + A);
          } else if (stages > 2) {
            pr.commit_empty();
          }
          if (mutate == 8) pr.barrier();
          if (k + A + 1 < n) f_blk = ord[size_t(A + 1)];
          const int ord_new = k + A + 2 < n ? blk(k + A + 2) : -1;
          if (ok[0]) {
            pr.read(ring(k), ord[0]);
            compute(ord[0], ring(k));
          } else {
            rest |= 1u << k;
          }
          for (int a = 0; a + 1 < A; ++a) ok[size_t(a)] = ok[size_t(a + 1)];
          ok[size_t(A - 1)] = ok_next;
          for (int a = 0; a + 1 < A + 2; ++a) ord[size_t(a)] = ord[size_t(a + 1)];
          ord[size_t(A + 1)] = ord_new;
        }
        if (stages > 2) pr.wait(0);
        if (mutate != 9) pr.barrier();  // the pipeline's last barrier
        if (rest != 0u) {
          pr.scratch();
          for (int k = 0; k < 32; ++k)
            if (rest >> k & 1u)
              for (int w = 0; w < 4; ++w)
                block_steps(r0, w, blk(k) * tile::kListOutputs, (blk(k) + 1) * tile::kListOutputs, alive_lane[w]);
          pr.barrier();  // the drain: block steps done before the next chunk's copies
        }
      }
      {  // the head (half 0) or the tail (half 1)
        const int lo = h == 0 ? int(j_begin) : std::max(int(j_begin), b1 * tile::kListOutputs);
        const int hi = h == 0 ? std::min(int(j_end), b0 * tile::kListOutputs) : int(j_end);
        if (lo < hi) pr.scratch();
        for (int w = 0; w < 4; ++w) block_steps(r0, w, lo, hi, alive_lane[w]);
      }
      if (pr.in_flight(-1) > 0) ++res.races;  // the item ends with copies in flight
      for (int w = 0; w < 4; ++w)
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < 4; ++i) {
            const int r = r0 + tile::cta_image(w, lane, i);
            if (r < count && alive4[w][lane][i] != 0.f) res.flags[size_t(r)] = 1;
          }
          const int r = r0 + 32 * w + lane;
          if (r < count && alive_lane[w][lane] != 0.f) res.flags[size_t(r)] = 1;
        }
    }
  }
  return res;
}

struct Inputs {
  std::vector<float> x;
  std::vector<int> rows;
  int64_t ldx, ldy;
};

// identity: image r in column r, ldx a multiple of 4 (16-byte copies wherever a tile is full); else a
// random permutation of the columns (gathers).
Inputs make_inputs(const Layer& L, int count, bool identity, Rng& g) {
  Inputs in;
  in.ldx = identity ? (count + 8) / 4 * 4 : count + 7;
  in.ldy = count + 3;
  in.x.resize(size_t(L.e.cols * in.ldx));
  for (float& v : in.x) v = float(g.uniform() * 4.0 - 1.0);  // signed: sums below zero, in (0, 32), clamped
  in.rows.resize(size_t(in.ldx));
  std::iota(in.rows.begin(), in.rows.end(), 0);
  if (!identity)
    for (int64_t p = in.ldx - 1; p > 0; --p) std::swap(in.rows[size_t(p)], in.rows[g.next() % uint64_t(p + 1)]);
  in.rows.resize(size_t(count));
  return in;
}

constexpr float kBias = -0.3f, kClamp = 32.f;

// expect_list: some list steps (through 16-byte copies with identity columns, else gathered). expect_wrap:
// some pipeline longer than the ring (a stage reused within a chunk). Runs both configurations: cta (2
// stages per half, 3 blocks per SM) and cta2 (3 stages, 2 blocks per SM).
void run_case(const Layer& L, int count, int sm_count, bool identity, uint64_t seed, bool expect_list,
              bool expect_wrap = false) {
  for (int stages : {2, 3}) {
    Rng g{seed};
    const Inputs in = make_inputs(L, count, identity, g);
    const int grid = tile::cta_blocks_per_sm(stages) * sm_count;  // the CTA kernel's resident grid
    const Result res = emulate(L, in.x, in.ldx, in.rows, count, in.ldy, kBias, kClamp, sm_count, grid, stages);
    const Check c = check(L, in.x, in.ldx, in.rows, count, in.ldy, kBias, kClamp, res);
    INFO("stages " << stages << ", count " << count << ", SMs " << sm_count
                   << (identity ? ", identity columns" : ", scattered columns") << ": CTA items " << res.cta_items
                   << ", other items " << res.other_items << ", list steps " << res.list_steps << " ("
                   << res.contig_stages << " contiguous, " << res.gather_stages << " gathered), block-step outputs "
                   << res.block_outputs << ", races " << res.races << ", unready reads " << res.unready
                   << ", copies in flight at most " << res.max_in_flight << ", longest pipeline " << res.max_pipeline);
    CHECK(res.bad_reads == 0);
    CHECK(res.bad_stage == 0);
    CHECK(res.races == 0);
    CHECK(res.unready == 0);
    CHECK(res.max_in_flight <= tile::cta_ahead(stages));  // the ring holds the copies in flight + the one computed
    CHECK(c.written_twice == 0);
    CHECK(c.missing == 0);
    CHECK(c.stray == 0);
    CHECK(c.wrong == 0);
    CHECK(c.flag_wrong == 0);
    if ((count + 127) / 128 >= tile::cta_min_tiles(sm_count)) CHECK(res.cta_items > 0);  // 128-image tiles
    else CHECK(res.cta_items == 0);
    if (expect_list) {
      CHECK(res.list_steps > 0);
      CHECK(res.max_in_flight == tile::cta_ahead(stages));  // the copies do run A blocks ahead
      if (identity) CHECK(res.contig_stages > 0);
      else CHECK(res.contig_stages == 0);
    } else {  // no CTA items, or no 16-row block with one unpadded list: a list step would be a wrong vote
      CHECK(res.list_steps == 0);
    }
    if (expect_wrap) CHECK(res.max_pipeline > stages);
  }
}

Layer challenge(int64_t n) {
  Layer L;
  L.e = spdnn::generate_layer_ell(n, 3, 42);
  L.order = spdnn::reuse_order(L.e);
  return L;
}

// Random ELL: every row its own list (list steps impossible: all block steps), some padding.
Layer random_ell(int64_t n, Rng& g) {
  Layer L = blank_layer(n);
  spdnn::Ell& e = L.e;
  for (int64_t j = 0; j < n; ++j)
    for (int k = 0; k < 32; ++k) {
      if (g.uniform() < 0.1) continue;
      e.idx[size_t(j * 32 + k)] = int(g.next() % uint64_t(n));
      e.val[size_t(j * 32 + k)] = float(g.uniform() * 0.05 - 0.01);
    }
  return L;
}

}  // namespace

TEST_CASE("spdnn CTA tile emulation: every output once, bitwise the fma chain, flags exact", "[sparse][cpu]") {
  Rng g{0xc7a71e};
  // sm_count 1 or 2: 128-image tiles (CTA items) from 1 image on (cta_min_tiles = 1); 8 SMs: from 4 tiles.
  SECTION("generated challenge layer N = 1024 in its reuse order") {
    const Layer L = challenge(1024);
    run_case(L, 1100, 2, true, g.next(), true);   // contiguous columns, a partial last tile (1100 % 128 = 76)
    run_case(L, 1100, 2, false, g.next(), true);  // scattered columns: gathers
    run_case(L, 1024, 2, true, g.next(), true);   // full tiles
    run_case(L, 300, 8, true, g.next(), false);   // 3 tiles < 8 / 2: 32-image tiles, block steps only
  }
  SECTION("generated challenge layer N = 4096 (runs of more than 32 blocks per half: two chunks)") {
    const Layer L = challenge(4096);
    run_case(L, 600, 1, true, g.next(), true);   // 2 slices of 2048 rows: 64 blocks per half
    run_case(L, 700, 1, false, g.next(), true);
    run_case(L, 260, 1, true, g.next(), true);
  }
  SECTION("random ELL: every block falls back to block steps") {
    const Layer L = random_ell(200, g);
    run_case(L, 700, 2, false, g.next(), false);
    run_case(L, 700, 2, true, g.next(), false);
    run_case(random_ell(10, g), 300, 2, true, g.next(), false);  // fewer rows than a list block: all tail
  }
  SECTION("aligned 16-row blocks, some padded or split, odd n (a tail)") {
    const Layer L = mixed_blocks(1000, g);
    run_case(L, 600, 2, true, g.next(), true);
    run_case(L, 555, 2, false, g.next(), true);
  }
  SECTION("test_sparse's ring wrap-around cases on the H200's 132 SMs (67 tiles, 4 .. 6 blocks per half)") {
    run_case(challenge(512), 8500, 132, true, g.next(), true, true);  // 16-byte copies, the reuse order
    run_case(mixed_blocks(512, g), 8500, 132, false, g.next(), true, true);  // gathers, block steps in chunks
  }
}

TEST_CASE("spdnn CTA tile emulation: deliberate indexing bugs are caught", "[sparse][cpu]") {
  Rng g{0xbadc7a};
  // The challenge layer (all list steps), and aligned blocks of which every 7th is split (a block step),
  // 3208 rows on 1 SM (cta: 2 slices, 51 blocks per half: chunks of 32 + 19; cta2: 1 slice, 100 per half:
  // 32 + 32 + 32 + 4): the last chunk of half 0 has block steps and ends with a list step in stage 0,
  // whose buffers the block steps then reuse (mutation 9).
  const Layer layers[2] = {challenge(1024), mixed_blocks(3208, g, 7)};
  for (int stages : {2, 3})
    for (int li = 0; li < 2; ++li)
      for (int mutate = 1; mutate <= 9; ++mutate) {
        if (mutate == 9 && li == 0) continue;  // no block steps: nothing shares stage 0 with the last block
        Rng gi{g.next()};
        const int sms = li == 0 ? 2 : 1;
        const Inputs in = make_inputs(layers[li], 600, mutate != 4, gi);  // 4: a gather bug (scattered columns)
        {  // the control: the same inputs unmutated pass every check, so a failure below is the mutation's
          const Result ok = emulate(layers[li], in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, sms,
                                    tile::cta_blocks_per_sm(stages) * sms, stages, 0);
          const Check oc = check(layers[li], in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, ok);
          INFO("control for stages " << stages << ", layer " << li << ", mutation " << mutate);
          REQUIRE((oc.ok() && ok.bad_stage == 0 && ok.bad_reads == 0 && ok.races == 0 && ok.unready == 0));
        }
        const Result res = emulate(layers[li], in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, sms,
                                   tile::cta_blocks_per_sm(stages) * sms, stages, mutate);
        const Check c = check(layers[li], in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, res);
        INFO("stages " << stages << ", layer " << li << ", mutation " << mutate << ": wrong " << c.wrong << ", twice "
                       << c.written_twice << ", missing " << c.missing << ", bad stage " << res.bad_stage
                       << ", races " << res.races << ", unready " << res.unready << ", list steps "
                       << res.list_steps);
        CHECK(res.list_steps > 0);
        CHECK_FALSE((c.ok() && res.bad_stage == 0 && res.bad_reads == 0 && res.races == 0 && res.unready == 0));
        if (mutate >= 5) CHECK(res.races + res.unready > 0);  // the protocol check itself sees the ring's bugs
      }
}

TEST_CASE("spdnn CTA tile: the layout's constants", "[sparse][cpu]") {
  // Every (t, image) of A and (row, t) of B has its own word, inside the stage; the 4 x 1280-byte
  // block-step buffers of a half fit in its stage 0's A; the shared memory leaves room for 3 blocks.
  std::vector<int> seen(size_t(tile::kCtaStageFloats), 0);
  for (int t = 0; t < 32; ++t) {
    for (int img = 0; img < tile::kCtaImages; ++img) ++seen[size_t(tile::cta_f_index(t, img))];
    for (int o = 0; o < tile::kListOutputs; ++o) ++seen[size_t(tile::cta_w_index(o, t))];
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 32 * (tile::kCtaImages + tile::kListOutputs));
  CHECK(std::count_if(seen.begin(), seen.end(), [](int v) { return v > 1; }) == 0);
  CHECK(tile::cta_stage_offset(1, 1) + tile::kCtaStageFloats <= tile::kCtaColsOffset);
  CHECK(tile::cta_reuse_offset_bytes(7) + tile::kCtaReuseBytes <=
        tile::cta_stage_offset(1, 0) * 4 + tile::kCtaFeatFloats * 4);
  CHECK(tile::cta_reuse_offset_bytes(3) + tile::kCtaReuseBytes <= tile::kCtaFeatFloats * 4);
  CHECK(tile::kCtaSmemBytes % 16 == 0);
  CHECK(tile::cta_smem_bytes(2) == tile::kCtaSmemBytes);  // cta's names are the 2-stage configuration
  // cta2: 3 stages per half, then the columns; the block-step buffers in each half's stage 0; 2 blocks per
  // SM (233472 B per SM, 1 KB reserved and the 16 B of s_last per block); the stage ring: A + 1
  // consecutive blocks in distinct stages (the A in flight and the one computed), and block k + A goes
  // to the stage that block k - 1 was computed from.
  CHECK(tile::cta_stage_offset(1, 2, 3) + tile::kCtaStageFloats <= tile::cta_cols_offset(3));
  CHECK(tile::cta_stage_offset(1, 0, 3) == tile::cta_half_floats(3));
  CHECK(tile::cta_reuse_offset_bytes(4, 3) == tile::cta_stage_offset(1, 0, 3) * 4);
  CHECK(tile::cta_reuse_offset_bytes(7, 3) + tile::kCtaReuseBytes <=
        tile::cta_stage_offset(1, 0, 3) * 4 + tile::kCtaFeatFloats * 4);
  CHECK(tile::cta_smem_bytes(3) % 16 == 0);
  CHECK(tile::cta_smem_bytes(3) == 112640);
  CHECK(2 * (tile::cta_smem_bytes(3) + 16 + 1024) <= 233472);
  CHECK(3 * (tile::cta_smem_bytes(3) + 16 + 1024) > 233472);  // so __launch_bounds__(256, 2), 128 registers
  for (int stages : {2, 3}) {
    const int a = tile::cta_ahead(stages);
    CHECK(a == stages - 1);
    for (int k = 0; k < 32; ++k) {
      CHECK(tile::cta_stage(k, stages) >= 0);
      CHECK(tile::cta_stage(k, stages) < stages);
      for (int d = 1; d <= a; ++d) CHECK(tile::cta_stage(k + d, stages) != tile::cta_stage(k, stages));
      if (k >= 1) CHECK(tile::cta_stage(k + a, stages) == tile::cta_stage(k - 1, stages));
    }
  }
  // The kernel's copies address (t, image) as the thread's first copy plus cta_f_index(t - t0, image -
  // image0) (an immediate): cta_f_index must be linear.
  for (int t = 0; t < 32; t += 3)
    for (int img = 0; img < tile::kCtaImages; img += 5)
      for (int dt = 0; t + dt < 32; dt += 4)
        for (int di = 0; img + di < tile::kCtaImages; di += 32)
          CHECK(tile::cta_f_index(t + dt, img + di) == tile::cta_f_index(t, img) + tile::cta_f_index(dt, di));
  // ... and the thread's copies are its first one plus (4 k8, 32 m): t = w + 4 k8, image = lane + 32 m.
  for (int w = 0; w < 4; ++w)
    for (int k8 = 0; k8 < 8; ++k8) CHECK(tile::cta_copy_input(w, k8) == tile::cta_copy_input(w, 0) + 4 * k8);
  for (int lane = 0; lane < 32; ++lane)
    for (int m = 0; m < 4; ++m)
      CHECK(tile::cta_gather_image(lane, m) == tile::cta_gather_image(lane, 0) + tile::cta_gather_image(0, m));
  // The compute's and the copies' thread shares cover the 16 x 128 block exactly once.
  std::vector<int> outs(16 * 128, 0), feats(32 * 128, 0), wts(16 * 32, 0);
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane) {
      for (int u = 0; u < 4; ++u)
        for (int i = 0; i < 4; ++i) ++outs[size_t(tile::cta_row(lane, u) * 128 + tile::cta_image(w, lane, i))];
      for (int k8 = 0; k8 < 8; ++k8) {
        const int t = tile::cta_copy_input(w, k8);
        for (int q = 0; q < 4; ++q) ++feats[size_t(t * 128 + tile::cta_copy_image4(lane) + q)];
      }
      for (int q = 0; q < 4; ++q) ++wts[size_t(tile::cta_copy_row(w, lane) * 32 + tile::cta_copy_chunk(lane) + q)];
    }
  CHECK(std::count(outs.begin(), outs.end(), 1) == 16 * 128);
  CHECK(std::count(feats.begin(), feats.end(), 1) == 32 * 128);
  CHECK(std::count(wts.begin(), wts.end(), 1) == 16 * 32);
  std::fill(feats.begin(), feats.end(), 0);
  for (int w = 0; w < 4; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int k8 = 0; k8 < 8; ++k8)
        for (int m = 0; m < 4; ++m)
          ++feats[size_t(tile::cta_copy_input(w, k8) * 128 + tile::cta_gather_image(lane, m))];
  CHECK(std::count(feats.begin(), feats.end(), 1) == 32 * 128);
}

TEST_CASE("spdnn CTA tile: the shapes of the N = 1024 head on the H200 (cta: grid 396, cta2: 264)", "[sparse][cpu]") {
  // The table of src/sparse/README.md "CTA tile, 2 blocks per SM (cta2)": layer inputs of the challenge's
  // first layers at N = 1024 (60000 images), cta_layer_shape with target = the kernel's resident grid.
  struct Row {
    int64_t count;
    int64_t slices[2], slice[2];  // [cta, cta2]
  };
  const Row rows[] = {{60000, {3, 2}, {352, 512}},
                      {54900, {3, 2}, {352, 512}},
                      {39300, {5, 3}, {224, 352}},
                      {20750, {2, 6}, {512, 192}},
                      {9750, {5, 3}, {224, 352}}};
  for (const Row& r : rows)
    for (int c = 0; c < 2; ++c) {
      const int stages = 2 + c;
      const tile::Shape sh = tile::cta_layer_shape(r.count, 1024, 132, tile::cta_blocks_per_sm(stages) * 132);
      INFO("count " << r.count << ", stages " << stages << ": " << sh.tiles << " tiles x " << sh.slices << " slices of "
                    << sh.slice);
      CHECK(sh.ipt == 4);  // 128-image items throughout the head (>= SMs / 2 tiles)
      CHECK(sh.tiles == (r.count + 127) / 128);
      CHECK(sh.slices == r.slices[c]);
      CHECK(sh.slice == r.slice[c]);
      CHECK(sh.slice % (2 * tile::kListOutputs) == 0);  // every slice starts a list block in each half
    }
  // From SMs / 2 = 66 tiles on (8321 images): cta2's 264 items, one per block.
  CHECK(tile::cta_layer_shape(8321, 1024, 132, 264).ipt == 4);
  CHECK(tile::cta_layer_shape(8320, 1024, 132, 264).ipt == 1);
  CHECK(tile::cta_layer_shape(8321, 1024, 132, 264).slices * 66 == 264);
}

TEST_CASE("spdnn tile late4: the late layers' shape", "[sparse][cpu]") {
  // JHDNN_SPDNN_TILE=late4 (late4_tile.cuh): from cta_min_tiles 128-image tiles on, cta2's shape (the CTA tile);
  // below, 128-image tiles x slices of a multiple of 16 x 8 rows, about one item per block of the grid, so that
  // the 8 warps' strided list blocks (late4_warp_begin, every kLate4Step rows; late4_run's loop, emulated here)
  // start at multiples of 16 and cover every row of the slice once.
  CHECK_FALSE(tile::late4_late(8321, 132));
  CHECK(tile::late4_late(8320, 132));
  const tile::Shape crowded = tile::late4_layer_shape(8321, 1024, 132, 264);
  const tile::Shape cta = tile::cta_layer_shape(8321, 1024, 132, 264);
  CHECK((crowded.ipt == cta.ipt && crowded.tiles == cta.tiles && crowded.slices == cta.slices && crowded.slice == cta.slice));
  // late4crowd (cta2w's kernel) runs late4_item wherever late4_late is false, on cta2w's shape: that must be the
  // CTA tile's 128-image shape at every such count, and a late count must get cta2w's 64-image items.
  for (const int64_t count : {int64_t(1), int64_t(900), int64_t(8320), int64_t(8321), int64_t(8448), int64_t(8449),
                              int64_t(16896), int64_t(60000)}) {
    INFO("count " << count);
    for (const int sms : {132, 114, 78}) {
      const tile::Shape w = tile::cta2w_layer_shape(count, 4096, sms, 2 * sms);
      const tile::Shape c = tile::cta_layer_shape(count, 4096, sms, 2 * sms);
      if (!tile::late4_late(count, sms)) {
        CHECK((w.ipt == 4 && w.ipt == c.ipt && w.tiles == c.tiles && w.slices == c.slices && w.slice == c.slice));
      } else {
        CHECK(w.ipt == 2);
      }
    }
  }
  // late4crowd's late layers from kLate4CrowdLate4Images images on with more than 2048 rows (session 29): late4's
  // items on late4's late shape (dnn_layer.cu fused_layer), cta2w's below; N = 1024's and N = 4096's graph-path
  // late layers (950 images) keep cta2w's.
  CHECK(tile::kLate4CrowdLate4Images == 3072);
  CHECK(tile::late4crowd_late4_items(3072, 4096));
  CHECK(tile::late4crowd_late4_items(6550, 4096));
  CHECK(tile::late4crowd_late4_items(3500, 2049));
  CHECK_FALSE(tile::late4crowd_late4_items(3071, 4096));
  CHECK_FALSE(tile::late4crowd_late4_items(950, 4096));
  CHECK_FALSE(tile::late4crowd_late4_items(4900, 1024));
  CHECK_FALSE(tile::late4crowd_late4_items(8000, 2048));
  CHECK(tile::late4_layer_shape(3500, 4096, 132, 264).ipt == 4);
  CHECK(tile::late4_late(3500, 132));
  struct Case {
    int64_t count, rows;
  };
  // N = 16384 / 65536 / 4096 late layers (1200 / 1550 / 950 images), a partial tile, tiny and odd widths
  for (const Case cs : {Case{1200, 16384}, Case{1550, 65536}, Case{950, 4096}, Case{97, 5001}, Case{8320, 256},
                        Case{1, 64}, Case{40, 16385}, Case{700, 4100}}) {
    INFO("count " << cs.count << " rows " << cs.rows);
    const tile::Shape sh = tile::late4_layer_shape(cs.count, cs.rows, 132, 264);
    CHECK(sh.ipt == 4);
    CHECK(sh.tiles == (cs.count + 127) / 128);
    CHECK(sh.slice % (tile::kListOutputs * tile::kWarps) == 0);
    CHECK(sh.slices == (cs.rows + sh.slice - 1) / sh.slice);
    CHECK(sh.tiles * sh.slices <= std::max<int64_t>(264, sh.tiles));  // one round of items (a tile at least)
    std::vector<int> covered(size_t(cs.rows), 0);
    for (int64_t sl = 0; sl < sh.slices; ++sl) {
      const int64_t j0 = sl * sh.slice, j1 = std::min(cs.rows, j0 + sh.slice);
      REQUIRE(j0 % tile::kLate4Step == 0);  // late4_warp_begin's premise
      for (int w = 0; w < tile::kWarps; ++w)
        for (int p = tile::late4_warp_begin(w, j0); p < j1; p += tile::kLate4Step) {
          CHECK(p % tile::kListOutputs == 0);  // the blocks start at multiples of 16 (the lists' alignment)
          const int rows = j1 - p < tile::kListOutputs ? int(j1 - p) : tile::kListOutputs;
          for (int j = p; j < p + rows; ++j) ++covered[size_t(j)];
        }
    }
    CHECK(std::all_of(covered.begin(), covered.end(), [](int k) { return k == 1; }));  // every row once
  }
  // The transposed weights: rows of 16 floats, inputs 16..31 16 words further on (bank spread), 16-byte aligned quads.
  CHECK(tile::late4_wt_index(0, 0) == 0);
  CHECK(tile::late4_wt_index(15, 15) == 255);
  CHECK(tile::late4_wt_index(16, 0) == 272);
  CHECK(tile::kLate4WtFloats == 528);
  for (int t = 0; t < 32; ++t)
    for (int o = 0; o < 16; o += 4) CHECK(tile::late4_wt_index(t, o) % 4 == 0);
}

TEST_CASE("spdnn tile auto: late4crowd up to 4096 rows, late4all above", "[sparse][cpu]") {
  // JHDNN_SPDNN_TILE=auto (the default) picks the per-layer fused kernel's mode from the weights' rows:
  // since session 17 6 = cta2w (src/sparse/cta_tile.h: at least as fast as cta2 and block at N = 1024, 4096,
  // 16384 and 65536 on the H200); since session 21 7 = late4 for 4096 < rows <= 16384 (faster at N = 16384,
  // slower at 65536); since session 23 late4 for every width above 4096 (with its strided warps and the chain
  // order it is faster at 65536 too); since session 24 8 = late4all (late4 in the crowded layers too) above 4096;
  // since session 25 9 = late4crowd (late4 in the crowded layers, cta2w in the late ones) up to 4096.
  CHECK(tile::spdnn_auto_tile(1) == 9);
  CHECK(tile::spdnn_auto_tile(1024) == 9);
  CHECK(tile::spdnn_auto_tile(4096) == 9);
  CHECK(tile::spdnn_auto_tile(4097) == 8);
  CHECK(tile::spdnn_auto_tile(16384) == 8);
  CHECK(tile::spdnn_auto_tile(16385) == 8);
  CHECK(tile::spdnn_auto_tile(65536) == 8);
}
