// CPU emulation of the fused sparse-DNN layer's CTA tile (JHDNN_SPDNN_TILE=cta; src/sparse/cta_tile.cuh)
// over a whole layer, thread by thread, with the kernel's own shape and indexing (src/sparse/cta_tile.h):
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
// block; deliberate indexing bugs fail these checks. No GPU needed: test_sparse runs the kernel
// (ctest spdnn_tile_cta: all of test_sparse with JHDNN_SPDNN_TILE=cta).
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
};


// Deliberate bugs (each must fail the checks): 1 = one accumulator (row u = 1, image i = 2) fed input
// t + 1; 2 = one stage per half (block k + 1 copied over block k's stage before block k is computed);
// 3 = half 1 takes half 0's blocks; 4 = the gathered copies take the column of image lane + 32 m + 1.
Result emulate(const Layer& L, const std::vector<float>& x, int64_t ldx, const std::vector<int>& active_rows,
               int count, int64_t ldy, float bias, float clamp_max, int sm_count, int grid, int mutate = 0) {
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
      std::vector<float> stage[2];
      int stage_block[2] = {-1, -1};
      for (auto& st : stage) st.assign(size_t(tile::kCtaStageFloats), std::numeric_limits<float>::quiet_NaN());
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
        stage_block[s] = b;
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
        if (stage_block[s] != b) ++res.bad_stage;
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
      for (int c0 = 0; c0 < nh; c0 += 32) {
        const int n = std::min(32, nh - c0);
        const int b_first = b0 + (mutate == 3 ? 0 : h) + 2 * c0;
        auto blk = [&](int k) { return b_first + 2 * k; };
        unsigned rest = 0u;
        // The kernel's register pipeline: order entries loaded for blocks k .. k + 2 (ord_*: here the
        // block each holds, -1 = not loaded), the indices fetched for block k + 1 (f_blk), rotated as
        // the kernel rotates them; vote, issue and compute use what those registers hold.
        int ord_k = blk(0), ord_k1 = n > 1 ? blk(1) : -1, ord_k2 = n > 2 ? blk(2) : -1;
        int f_blk = ord_k;
        bool ok_k = vote(f_blk);
        if (ok_k) issue(ord_k, 0);
        if (n > 1) f_blk = ord_k1;
        for (int k = 0; k < n; ++k) {
          const bool ok_k1 = k + 1 < n && vote(f_blk);
          if (ok_k1) {
            if (f_blk != ord_k1) ++res.bad_stage;  // indices and order entries of different blocks
            issue(ord_k1, mutate == 2 ? (k & 1) : ((k + 1) & 1));
          }
          if (k + 2 < n) f_blk = ord_k2;
          const int ord_k3 = k + 3 < n ? blk(k + 3) : -1;
          if (ok_k) compute(ord_k, k & 1);
          else rest |= 1u << k;
          ok_k = ok_k1;
          ord_k = ord_k1;
          ord_k1 = ord_k2;
          ord_k2 = ord_k3;
        }
        for (int k = 0; k < 32; ++k)
          if (rest >> k & 1u)
            for (int w = 0; w < 4; ++w)
              block_steps(r0, w, blk(k) * tile::kListOutputs, (blk(k) + 1) * tile::kListOutputs, alive_lane[w]);
      }
      for (int w = 0; w < 4; ++w) {  // the head (half 0) or the tail (half 1)
        const int lo = h == 0 ? int(j_begin) : std::max(int(j_begin), b1 * tile::kListOutputs);
        const int hi = h == 0 ? std::min(int(j_end), b0 * tile::kListOutputs) : int(j_end);
        block_steps(r0, w, lo, hi, alive_lane[w]);
      }
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

// expect: "list" (some list steps), "contig" (some through 16-byte copies), "gather" (some gathered).
void run_case(const Layer& L, int count, int sm_count, bool identity, uint64_t seed, bool expect_list) {
  Rng g{seed};
  const Inputs in = make_inputs(L, count, identity, g);
  const int grid = 3 * sm_count;  // the CTA kernel's resident grid: 3 blocks per SM
  const Result res = emulate(L, in.x, in.ldx, in.rows, count, in.ldy, kBias, kClamp, sm_count, grid);
  const Check c = check(L, in.x, in.ldx, in.rows, count, in.ldy, kBias, kClamp, res);
  INFO("count " << count << ", SMs " << sm_count << (identity ? ", identity columns" : ", scattered columns")
                << ": CTA items " << res.cta_items << ", other items " << res.other_items << ", list steps "
                << res.list_steps << " (" << res.contig_stages << " contiguous, " << res.gather_stages
                << " gathered), block-step outputs " << res.block_outputs);
  CHECK(res.bad_reads == 0);
  CHECK(res.bad_stage == 0);
  CHECK(c.written_twice == 0);
  CHECK(c.missing == 0);
  CHECK(c.stray == 0);
  CHECK(c.wrong == 0);
  CHECK(c.flag_wrong == 0);
  if ((count + 127) / 128 >= tile::cta_min_tiles(sm_count)) CHECK(res.cta_items > 0);  // 128-image tiles
  else CHECK(res.cta_items == 0);
  if (expect_list) {
    CHECK(res.list_steps > 0);
    if (identity) CHECK(res.contig_stages > 0);
    else CHECK(res.contig_stages == 0);
  } else {  // no CTA items, or no 16-row block with one unpadded list: a list step would be a wrong vote
    CHECK(res.list_steps == 0);
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
  Layer L;
  spdnn::Ell& e = L.e;
  e.rows = e.cols = n;
  e.width = 32;
  e.idx.assign(size_t(n) * 32, -1);
  e.val.assign(size_t(n) * 32, std::numeric_limits<float>::quiet_NaN());
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
}

TEST_CASE("spdnn CTA tile emulation: deliberate indexing bugs are caught", "[sparse][cpu]") {
  Rng g{0xbadc7a};
  const Layer L = challenge(1024);
  for (int mutate : {1, 2, 3, 4}) {
    Rng gi{g.next()};
    const Inputs in = make_inputs(L, 600, mutate != 4, gi);  // 4: a gather bug (scattered columns)
    const Result res = emulate(L, in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, 2, 6, mutate);
    const Check c = check(L, in.x, in.ldx, in.rows, 600, in.ldy, kBias, kClamp, res);
    INFO("mutation " << mutate << ": wrong " << c.wrong << ", twice " << c.written_twice << ", missing " << c.missing
                     << ", bad stage " << res.bad_stage << ", list steps " << res.list_steps);
    CHECK(res.list_steps > 0);
    CHECK_FALSE((c.ok() && res.bad_stage == 0 && res.bad_reads == 0));
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
