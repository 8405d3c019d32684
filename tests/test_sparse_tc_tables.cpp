// CPU tests of the tensor-core resident kernel's tables (src/sparse/tc_tables.cpp; run in CI): every weight of a
// layer lands in its group's A fragments at the place the kernel multiplies with its input's renamed column, nothing
// else is there, and the layers that do not fit are refused with their reason.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "sparse/tc_tables.h"
#include "spdnn/spdnn.h"

namespace {

using jhdnn::sparse::kTcBlocks;
using jhdnn::sparse::kTcGroupRows;
using jhdnn::sparse::TcLayerTables;

float bf16_value(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f = 0.f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool is_permutation_of_n(const std::vector<int>& p, int64_t n) {
  if (int64_t(p.size()) != n) return false;
  std::vector<char> seen(size_t(n), 0);
  for (int v : p) {
    if (v < 0 || v >= n || seen[size_t(v)]) return false;
    seen[size_t(v)] = 1;
  }
  return true;
}

// The tables decoded as the kernel reads them: for row j (order[16 g + r]) and renamed input column c, the weight its
// MMAs give the pair. Lane (gid, tig)'s register q of a block's fragment holds rows gid + 8 (q & 1), logical columns
// 2 tig + 8 (q >> 1) and + 1; logical column k is physical offset p of the block with tc_kc_of_offset(p) = k.
std::map<std::pair<int, int>, float> decode(const TcLayerTables& t, int64_t rows) {
  int offset_of_kc[16];
  for (int p = 0; p < 16; ++p) offset_of_kc[jhdnn::sparse::tc_kc_of_offset(p)] = p;
  std::map<std::pair<int, int>, float> w;
  for (int64_t g = 0; g < rows / kTcGroupRows; ++g)
    for (int b = 0; b < kTcBlocks; ++b)
      for (int lane = 0; lane < 32; ++lane) {
        const int gid = lane >> 2, tig = lane & 3;
        const uint32_t* f = &t.afrag[size_t(((g * kTcBlocks + b) * 32 + lane) * 4)];
        for (int q = 0; q < 4; ++q)
          for (int h = 0; h < 2; ++h) {
            const uint16_t bits = uint16_t(h == 0 ? f[q] & 0xffffu : f[q] >> 16);
            if (bits == 0) continue;
            const int row = gid + 8 * (q & 1), k = 2 * tig + 8 * (q >> 1) + h;
            const int j = t.order[size_t(g * kTcGroupRows + row)];
            const int c = t.bcol[size_t(g * kTcBlocks + b)] + offset_of_kc[k];
            w[{j, c}] += bf16_value(bits);
          }
      }
  return w;
}

// Builds e's tables and checks them against e entry by entry.
void check_layer(const spdnn::Ell& e) {
  TcLayerTables t;
  const std::string why = jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t);
  INFO(why);
  REQUIRE(why.empty());
  REQUIRE(is_permutation_of_n(t.order, e.rows));
  REQUIRE(is_permutation_of_n(t.label, e.cols));
  for (int c : t.bcol) CHECK(c % 16 == 0);
  std::map<std::pair<int, int>, float> want;
  for (int64_t j = 0; j < e.rows; ++j)
    for (int64_t k = 0; k < e.width; ++k) {
      const int i = e.idx[size_t(j * e.width + k)];
      if (i >= 0 && e.val[size_t(j * e.width + k)] != 0.f)
        want[{int(j), t.label[size_t(i)]}] = e.val[size_t(j * e.width + k)];
    }
  const auto got = decode(t, e.rows);
  CHECK(got.size() == want.size());  // (nothing else in the fragments)
  for (const auto& [key, v] : want) {
    const auto it = got.find(key);
    INFO("row " << key.first << " renamed input " << key.second);
    REQUIRE(it != got.end());
    CHECK(it->second == v);
  }
}

}  // namespace

TEST_CASE("tc tables: the challenge's layers at N = 1024 and 4096 hold every weight where the kernel reads it",
          "[sparse][tc]") {
  for (int64_t n : {int64_t(1024), int64_t(4096)})
    for (int l : {1, 2, 5, 6, 7, 12, 31}) {
      INFO("N = " << n << " layer " << l);
      check_layer(spdnn::generate_layer_ell(n, l, 42));
    }
}

TEST_CASE("tc tables: the orderings are the tools' (reuse_order, reader_group_labels)", "[sparse][tc]") {
  const spdnn::Ell e = spdnn::generate_layer_ell(1024, 3, 42);
  TcLayerTables t;
  REQUIRE(jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t).empty());
  CHECK(t.order == spdnn::reuse_order(e));
  CHECK(t.label == spdnn::reader_group_labels(e, spdnn::reuse_order(e)));
}

TEST_CASE("tc tables: random bf16 weights and padding in a challenge structure", "[sparse][tc]") {
  const spdnn::Ell c = spdnn::generate_layer_ell(1024, 4, 42);
  spdnn::Ell e = c;  // width + 1: each row's entries, then a padding entry (-1, its weight never read)
  e.width = c.width + 1;
  e.idx.assign(size_t(e.rows * e.width), -1);
  e.val.assign(e.idx.size(), 0.3f);
  std::mt19937 rng(7);
  for (int64_t j = 0; j < c.rows; ++j)
    for (int64_t k = 0; k < c.width; ++k) {
      e.idx[size_t(j * e.width + k)] = c.idx[size_t(j * c.width + k)];
      e.val[size_t(j * e.width + k)] = float(int(rng() % 511) - 255) / 256.f;  // bf16 values in (-1, 1), some 0
    }
  check_layer(e);
}

TEST_CASE("tc tables: a layer that does not fit is refused with its reason", "[sparse][tc]") {
  TcLayerTables t;
  SECTION("rows not a multiple of 16") {
    const std::vector<int> idx(24, 0);
    const std::vector<float> val(24, 1.f);
    const std::string why = jhdnn::sparse::build_tc_tables(24, 24, 1, idx.data(), val.data(), &t);
    CHECK(why.find("multiple of 16") != std::string::npos);
  }
  SECTION("a row that reads an input twice") {
    spdnn::Ell e = spdnn::generate_layer_ell(1024, 1, 42);
    e.idx[5 * size_t(e.width) + 1] = e.idx[5 * size_t(e.width)];
    const std::string why = jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t);
    CHECK(why.find("row 5 reads input") != std::string::npos);
  }
  SECTION("a weight that is not a bf16 value") {
    spdnn::Ell e = spdnn::generate_layer_ell(1024, 2, 42);
    e.val[77] = 0.1f;
    const std::string why = jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t);
    CHECK(why.find("is not a bf16 value") != std::string::npos);
  }
  SECTION("a group whose inputs span more than two blocks of 16") {
    // 32 rows, each reading 3 inputs of its own (96 inputs): a group of 16 rows reads 48 distinct inputs
    const int64_t rows = 32, cols = 96, width = 3;
    std::vector<int> idx(size_t(rows * width));
    for (int64_t j = 0; j < rows; ++j)
      for (int64_t k = 0; k < width; ++k) idx[size_t(j * width + k)] = int(j * width + k);
    const std::vector<float> val(idx.size(), 1.f);
    const std::string why = jhdnn::sparse::build_tc_tables(rows, cols, width, idx.data(), val.data(), &t);
    CHECK(why.find("more than 2 blocks of 16 inputs") != std::string::npos);
  }
}

// The cluster split (build_tc_cluster_slots) of the challenge's first layers at N = 4096 and 16384 (4 and 16 CTAs),
// checked as the kernel uses it: each CTA's slots and classes are inverse maps; every group's blocks, read at its
// CTA's rows, hold the weights of the inputs those rows' classes name; and every output of layer l goes
// (tc_cluster_destinations) to exactly the CTAs whose groups read it in layer l + 1, at the row that names it.
TEST_CASE("tc cluster slots: each CTA reads its groups' inputs where the previous layer wrote them", "[sparse][tc]") {
  using jhdnn::sparse::TcClusterSlots;
  for (int64_t n : {int64_t(4096), int64_t(16384)}) {
    const int ctas = int(n / 1024), classes = int(n / 16), per = int(n / 16) / ctas;
    std::vector<int> prev_pos;  // layer l - 1's: row j at position prev_pos[j] of its order (its group: / 16)
    int64_t remote = 0, reads = 0;
    for (int l = 1; l <= 6; ++l) {
      INFO("N = " << n << " layer " << l);
      const spdnn::Ell e = spdnn::generate_layer_ell(n, l, 42);
      TcLayerTables t;
      REQUIRE(jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t).empty());
      TcClusterSlots cs;
      const std::string why = jhdnn::sparse::build_tc_cluster_slots(e.cols, ctas, t, &cs);
      INFO(why);
      REQUIRE(why.empty());
      REQUIRE(cs.slot.size() == size_t(ctas) * size_t(classes));
      REQUIRE(cs.cls.size() == size_t(ctas) * size_t(cs.max_slots));
      for (int r = 0; r < ctas; ++r) {
        int set = 0;
        for (int c = 0; c < classes; ++c) {
          const int slot = cs.slot[size_t(r * classes + c)];
          if (slot < 0) continue;
          ++set;
          REQUIRE(slot < cs.max_slots);
          CHECK(cs.cls[size_t(r * cs.max_slots + slot)] == c);
        }
        for (int k = 0; k < cs.max_slots; ++k) CHECK((cs.cls[size_t(r * cs.max_slots + k)] >= 0) == (k < set));
      }
      // The weights through the CTA-local block rows, translated back to renamed columns, are the layer's.
      std::vector<int> pos(static_cast<size_t>(n));
      for (int64_t q = 0; q < n; ++q) pos[size_t(t.order[size_t(q)])] = int(q);
      TcLayerTables local = t;
      local.bcol = cs.bcol;
      std::map<std::pair<int, int>, float> translated;
      for (const auto& [key, v] : decode(local, e.rows)) {
        const int r = pos[size_t(key.first)] / 16 / per, c = key.second;
        translated[{key.first, 16 * cs.cls[size_t(r * cs.max_slots + c / 16)] + c % 16}] += v;
      }
      CHECK(translated == decode(t, e.rows));
      // Layer l - 1's outputs: the CTAs that read output j's class, from the unsplit tables, against its destinations.
      if (l > 1) {
        for (int64_t j = 0; j < n; ++j) {
          const int lab = t.label[size_t(j)];
          std::vector<int> want;
          for (int g = 0; g < int(n / 16); ++g)
            for (int b = 0; b < kTcBlocks; ++b)
              if (t.bcol[size_t(g * kTcBlocks + b)] / 16 == lab / 16 &&
                  std::find(want.begin(), want.end(), g / per) == want.end())
                want.push_back(g / per);
          std::sort(want.begin(), want.end());
          int ranks[2], rows[2];
          const int to = jhdnn::sparse::tc_cluster_destinations(lab, ctas, classes, cs.slot.data(), ranks, rows);
          REQUIRE(to == int(want.size()));
          const int producer = prev_pos[size_t(j)] / 16 / per;
          for (int d = 0; d < to; ++d) {
            CHECK(ranks[d] == want[size_t(d)]);
            CHECK(16 * cs.cls[size_t(ranks[d] * cs.max_slots + rows[d] / 16)] + rows[d] % 16 == lab);
            remote += ranks[d] != producer;
            ++reads;
          }
        }
      }
      prev_pos = pos;
    }
    // (the cluster model's shares, tools/spdnn/spdnn_cluster_model: ~1.6% of layer 2's reads crossing CTAs, doubling
    // a layer, so at most a quarter through layer 6)
    CHECK(remote * 4 < reads);
  }
}

TEST_CASE("tc cluster slots: a split that does not fit is refused with its reason", "[sparse][tc]") {
  TcLayerTables t;
  jhdnn::sparse::TcClusterSlots cs;
  const spdnn::Ell e = spdnn::generate_layer_ell(4096, 1, 42);
  REQUIRE(jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t).empty());
  SECTION("groups that do not divide among the CTAs") {
    CHECK(jhdnn::sparse::build_tc_cluster_slots(e.cols, 3, t, &cs).find("do not split over 3 CTAs") !=
          std::string::npos);
  }
  SECTION("a CTA reading more than 128 blocks") {  // (one CTA: all 256 of them)
    CHECK(jhdnn::sparse::build_tc_cluster_slots(e.cols, 1, t, &cs).find("read 256 blocks") != std::string::npos);
  }
  SECTION("a class read by three CTAs") {  // 48 rows, every one reading inputs 0..15: three groups, one class
    const int64_t rows = 48, width = 16;
    std::vector<int> idx(size_t(rows * width));
    for (int64_t j = 0; j < rows; ++j)
      for (int k = 0; k < width; ++k) idx[size_t(j * width + k)] = k;
    const std::vector<float> val(idx.size(), 1.f);
    TcLayerTables t3;
    REQUIRE(jhdnn::sparse::build_tc_tables(rows, rows, width, idx.data(), val.data(), &t3).empty());
    CHECK(jhdnn::sparse::build_tc_cluster_slots(rows, 3, t3, &cs).find("read by groups of 3 CTAs") !=
          std::string::npos);
  }
}

// dnn_resident_tc.cu's write_tile_survivors splits its items e = j x cnt + k (row j, the k-th of cnt live images,
// cnt 1..16, e < n x cnt <= 16384) with a float product instead of an integer division: j = (int)((e + 0.5f) x
// (1.f / cnt)), rounded to nearest as __fmul_rn and the host's float multiply both do. The comment there argues the
// floor is exact (the half keeps every quotient at least 1 / 32 from an integer); this checks every case it covers.
// (Without the half the products happen to floor right too in this range, 1 / cnt rounding up or exact for
// cnt <= 16; the half is the margin the argument needs, not a fix for a case seen here.)
TEST_CASE("tc survivors' write-out: the float division of items by the live count is exact", "[sparse][tc]") {
  int wrong = 0;
  for (int cnt = 1; cnt <= 16; ++cnt) {
    const float inv = 1.f / float(cnt);
    for (int e = 0; e < 1024 * cnt; ++e) {
      volatile float prod = (float(e) + 0.5f) * inv;  // (volatile: one rounding, no contraction or wider registers)
      wrong += int(prod) != e / cnt;
    }
  }
  CHECK(wrong == 0);
}

// The planes kernels' compaction rule (dnn_resident_tc_planes.cu, session 59): the passes a compaction point serves,
// and whether its gather pays, on the live counts the H200 runs saw (bench/results/4191a144/ timelines).
TEST_CASE("tc planes: a compaction's passes and whether its gather pays", "[sparse][tc]") {
  using jhdnn::sparse::tc_planes_gap;
  using jhdnn::sparse::tc_planes_gather_pays;
  constexpr int kStages = 16;
  // L = 120 from layer 1: after call layers 1, 2, 4, .., 64 the passes before the next point, and to the end (the
  // last layer twice) after 64
  CHECK(tc_planes_gap(1, 0, 120, kStages) == 1);
  CHECK(tc_planes_gap(2, 1, 120, kStages) == 2);
  CHECK(tc_planes_gap(4, 2, 120, kStages) == 4);
  CHECK(tc_planes_gap(32, 5, 120, kStages) == 32);
  CHECK(tc_planes_gap(64, 6, 120, kStages) == 120 - 64 + 1);
  CHECK(tc_planes_gap(2, 1, 3, kStages) == 2);  // (layers 3 and the last's second pass)
  CHECK(tc_planes_gap(4, 2, 8, kStages) == 5);  // (2 done = 8 = the end: layers 5-8 and the second pass)
  // the last point a call has: its span to the end
  CHECK(tc_planes_gap(1, 0, 11, 2) == 11);
  CHECK(tc_planes_gap(1 << 14, 14, 20000, kStages) == 20000 - (1 << 14) + 1);
  // N = 65536 from layer 1: 60000 -> 50850 after layer 1 (one pass before the next point) does not pay, 60000 ->
  // 32600 after layer 2 (two) does, as does 32600 -> 13600 after layer 4
  CHECK_FALSE(tc_planes_gather_pays(60000, 50850, 1));
  CHECK(tc_planes_gather_pays(60000, 32600, 2));
  CHECK(tc_planes_gather_pays(32600, 13600, 4));
  // nothing died: no gather; everything died: the gather to an empty span
  CHECK_FALSE(tc_planes_gather_pays(5000, 5000, 100));
  CHECK(tc_planes_gather_pays(5000, 0, 1));
  // late: a sixteenth died, 32 passes left
  CHECK(tc_planes_gather_pays(1600, 1500, 32));
  CHECK_FALSE(tc_planes_gather_pays(1600, 1590, 32));
  // no int overflow on the product
  CHECK(tc_planes_gather_pays(2000000000, 0, 2000000000) == true);
}
