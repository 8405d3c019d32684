// CPU-only tests of the sparse DNN path (run in CI): the challenge readers, the generator against
// the official N = 1024 network, and the exact 1200-image x 120-layer validation of the float64
// CPU reference against the official truth. Without the data (scripts/fetch-spdnn-data.sh puts it
// in data/spdnn; JHDNN_SPDNN_DIR overrides) the data tests SKIP, saying so.
#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "spdnn/spdnn.h"

namespace {

std::string layer_path(int l) { return spdnn::data_dir() + "/neuron1024/n1024-l" + std::to_string(l) + ".tsv"; }

#define REQUIRE_SPDNN_DATA()                                                                              \
  do {                                                                                                    \
    if (!spdnn::file_exists(layer_path(120)) ||                                                           \
        !spdnn::file_exists(spdnn::data_dir() + "/sparse-images-1024-first1200.tsv"))                     \
      SKIP("spdnn data not found in " << spdnn::data_dir()                                                \
                                      << " (run scripts/fetch-spdnn-data.sh or set JHDNN_SPDNN_DIR)");    \
  } while (0)

spdnn::Csr load_layer(int l) {
  spdnn::Csr w;
  std::string err;
  const bool ok = spdnn::read_layer_tsv(layer_path(l), 1024, &w, &err);
  INFO(err);
  REQUIRE(ok);
  return w;
}

// Does row i of w have exactly the columns {a, (a - 2^s) mod M} + t M, t = 0..15?
bool radix_row(const spdnn::Csr& w, int64_t i, int64_t m, int s, int64_t a) {
  if (w.ptr[i + 1] - w.ptr[i] != 32) return false;
  std::set<int> cols(w.idx.begin() + w.ptr[i], w.idx.begin() + w.ptr[i + 1]);
  const int64_t b = ((a - (int64_t(1) << s)) % m + m) % m;
  for (int64_t t = 0; t < 16; ++t)
    if (!cols.count(int(a + t * m)) || !cols.count(int(b + t * m))) return false;
  return true;
}

// The residue a of row i, or -1. At the last stage (2^s = M/2) a and a + M/2 give the same columns;
// the smaller one is returned.
int radix_residue(const spdnn::Csr& w, int64_t i, int64_t m, int s) {
  const int64_t first = w.idx[w.ptr[i]] % m;  // a or a - 2^s
  for (int64_t a : {first, (first + (int64_t(1) << s)) % m})
    if (radix_row(w, i, m, s, a)) return int(a);
  return -1;
}

}  // namespace

TEST_CASE("generator: every width has 32 nonzeros per row and per column, all 1/16, deterministic", "[sparse][cpu]") {
  for (int64_t n : {32, 1024, 4096}) {
    for (int layer : {1, 2, 7, 13}) {
      const spdnn::Csr w = spdnn::generate_layer(n, layer, 7);
      REQUIRE(w.nnz() == 32 * n);
      std::vector<int> col_count(n, 0);
      for (int64_t i = 0; i < n; ++i) {
        REQUIRE(w.ptr[i + 1] - w.ptr[i] == 32);
        for (int64_t k = w.ptr[i]; k < w.ptr[i + 1]; ++k) {
          if (k > w.ptr[i]) REQUIRE(w.idx[k] > w.idx[k - 1]);
          ++col_count[w.idx[k]];
        }
      }
      for (int64_t j = 0; j < n; ++j) REQUIRE(col_count[j] == 32);
      for (float v : w.val) REQUIRE(v == 0.0625f);
    }
  }
  // Same seed, same network; another seed changes the permuted cycles but never cycle 0.
  const int64_t n = 1024;  // S = 6: layer 7 is the first of cycle 1
  CHECK(spdnn::generate_layer(n, 7, 1).idx == spdnn::generate_layer(n, 7, 1).idx);
  CHECK(spdnn::generate_layer(n, 7, 1).idx != spdnn::generate_layer(n, 7, 2).idx);
  CHECK(spdnn::generate_layer(n, 3, 1).idx == spdnn::generate_layer(n, 3, 2).idx);
  const std::vector<int> p = spdnn::cycle_permutation(n, 1, 5);
  // reuse_order groups the 16 outputs of each residue (identical input lists) together.
  {
    const spdnn::Ell e = spdnn::generate_layer_ell(1024, 9, 3);
    const std::vector<int> o = spdnn::reuse_order(e);
    REQUIRE(std::set<int>(o.begin(), o.end()).size() == 1024);
    for (size_t t = 0; t < o.size(); t += 16)
      for (size_t u = t; u < t + 16; ++u) REQUIRE(o[u] % 64 == o[t] % 64);
  }
  // The direct ELL of W^T (what the GPU loads) is the transpose of the CSR, entry for entry.
  for (int64_t w : {64, 1024, 4096})
    for (int layer : {1, 4, 9, 20}) {
      INFO("N " << w << " layer " << layer);
      const spdnn::Ell a = spdnn::generate_layer_ell(w, layer, 3);
      const spdnn::Ell b = spdnn::transpose_to_ell(spdnn::generate_layer(w, layer, 3));
      CHECK((a.width == 32 && b.width == 32));
      CHECK(a.idx == b.idx);
      CHECK(a.val == b.val);
    }
  CHECK(std::set<int>(p.begin(), p.end()).size() == size_t(n));
}

namespace {

// The groups of equal input lists of e in the order o: every group's rows contiguous, and each group's inputs.
void check_groups_contiguous(const spdnn::Ell& e, const std::vector<int>& o,
                             std::vector<std::set<int>>* group_inputs) {
  REQUIRE(o.size() == size_t(e.rows));
  REQUIRE(std::set<int>(o.begin(), o.end()).size() == size_t(e.rows));
  REQUIRE(*std::min_element(o.begin(), o.end()) == 0);
  REQUIRE(*std::max_element(o.begin(), o.end()) == int(e.rows - 1));
  auto list = [&](int row) {
    return std::vector<int>(e.idx.begin() + int64_t(row) * e.width, e.idx.begin() + int64_t(row + 1) * e.width);
  };
  std::set<std::vector<int>> seen;
  for (size_t t = 0; t < o.size(); ++t) {
    if (t > 0 && list(o[t]) == list(o[t - 1])) continue;
    INFO("row " << o[t] << " at position " << t);
    REQUIRE(seen.insert(list(o[t])).second);  // a list seen before: its group is split
    std::set<int> in;
    for (int i : list(o[t]))
      if (i >= 0) in.insert(i);
    group_inputs->push_back(in);
  }
}

}  // namespace

TEST_CASE("chain_order: equal lists together, consecutive lists sharing inputs along the residue chains",
          "[sparse][cpu]") {
  // The challenge layers of N = 1024 (M = 64): stage s = (l - 1) % 6, chains of 64 / 2^s residues. Greedy chaining
  // visits each chain in one piece, so the consecutive groups that share inputs number groups - components
  // (components: the groups linked by a shared input, counted here by union-find).
  for (int layer : {1, 3, 4, 6, 9, 13}) {
    INFO("layer " << layer);
    const spdnn::Ell e = spdnn::generate_layer_ell(1024, layer, 3);
    const std::vector<int> o = spdnn::chain_order(e);
    std::vector<std::set<int>> in;
    check_groups_contiguous(e, o, &in);
    const size_t g = in.size();
    std::vector<size_t> parent(g);
    for (size_t a = 0; a < g; ++a) parent[a] = a;
    std::function<size_t(size_t)> root = [&](size_t a) { return parent[a] == a ? a : parent[a] = root(parent[a]); };
    auto shares = [&](size_t a, size_t b) {
      for (int i : in[a])
        if (in[b].count(i)) return true;
      return false;
    };
    for (size_t a = 0; a < g; ++a)
      for (size_t b = a + 1; b < g; ++b)
        if (shares(a, b)) parent[root(a)] = root(b);
    size_t components = 0, linked = 0;
    for (size_t a = 0; a < g; ++a) components += root(a) == a;
    for (size_t a = 1; a < g; ++a) linked += shares(a - 1, a);
    const int stage = (layer - 1) % 6;
    CHECK(components == (stage == 5 ? g : size_t(1) << stage));  // at s = 5 residues r and r + 32 share a list
    CHECK(linked == g - components);
    if (stage < 5) CHECK(g == 64);
  }
  // Any ELL, padding included: a permutation with each group of equal lists contiguous.
  spdnn::Ell r;
  r.rows = 300;
  r.cols = 50;
  r.width = 6;
  uint64_t state = 12345;
  auto next = [&]() { return int((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33); };
  for (int64_t j = 0; j < r.rows; ++j) {
    const int64_t source = j % 7 == 0 && j > 0 ? j - 7 : j;  // every 7th row repeats an earlier row's list
    for (int64_t k = 0; k < r.width; ++k) {
      const int v = source == j ? (next() % 8 == 0 ? -1 : next() % int(r.cols)) : r.idx[source * r.width + k];
      r.idx.push_back(v);
      r.val.push_back(1.f);
    }
  }
  std::vector<std::set<int>> in;
  check_groups_contiguous(r, spdnn::chain_order(r), &in);
  CHECK(in.size() < size_t(r.rows));
}

TEST_CASE("chain_order: an input in every list (read by more than 64 groups) is not what the chain follows",
          "[sparse][cpu]") {
  // 211 distinct lists {0, 1 + 7j mod 211, 1 + (7j + 7) mod 211}: input 0 is in all of them (left out of the counts:
  // more than 64 readers), the other inputs in two each, so the lists form one ring j -> j + 1 whose neighbours share
  // one input. reuse_order sorts them by their second entry, where neighbours share nothing (7 apart); the chain
  // must follow the ring: every consecutive pair shares an input besides 0.
  constexpr int kC = 211;
  spdnn::Ell e;
  e.rows = kC;
  e.cols = kC + 1;
  e.width = 3;
  for (int j = 0; j < kC; ++j)
    for (int v : {0, 1 + (7 * j) % kC, 1 + (7 * j + 7) % kC}) {
      e.idx.push_back(v);
      e.val.push_back(1.f);
    }
  // consecutive groups of an order that share an input other than 0
  auto linked = [&](const std::vector<int>& order) {
    std::vector<std::set<int>> in;
    check_groups_contiguous(e, order, &in);
    REQUIRE(in.size() == size_t(kC));
    size_t pairs = 0;
    for (size_t a = 1; a < in.size(); ++a)
      pairs += std::any_of(in[a].begin(), in[a].end(), [&](int i) { return i != 0 && in[a - 1].count(i) > 0; });
    return pairs;
  };
  CHECK(linked(spdnn::chain_order(e)) == size_t(kC - 1));
  CHECK(linked(spdnn::reuse_order(e)) < size_t(kC / 4));  // the sorted order links few: the check above means something
}

TEST_CASE("generator: cycle-0 layers 1..6 equal the official N = 1024 network exactly", "[sparse][cpu][data]") {
  REQUIRE_SPDNN_DATA();
  for (int l = 1; l <= 6; ++l) {
    INFO("layer " << l);
    const spdnn::Csr off = load_layer(l);
    const spdnn::Csr gen = spdnn::generate_layer(1024, l, 1);
    REQUIRE(off.ptr == gen.ptr);
    REQUIRE(off.idx == gen.idx);
    REQUIRE(off.val == gen.val);
  }
}

TEST_CASE("generator spec: every official layer is RadiX-Net shaped (residue per row, 16 rows per residue)",
          "[sparse][cpu][data]") {
  REQUIRE_SPDNN_DATA();
  const int64_t n = 1024, m = 64;
  const int stages = 6;
  for (int l = 1; l <= 120; l += 1) {
    INFO("layer " << l);
    const spdnn::Csr w = load_layer(l);
    const int s = (l - 1) % stages;
    std::vector<int> per_residue(m, 0);
    for (int64_t i = 0; i < n; ++i) {
      INFO("row " << i);
      if (l <= stages) REQUIRE(radix_row(w, i, m, s, i % m));  // cycle 0: r(i) = i mod M
      const int a = radix_residue(w, i, m, s);
      REQUIRE(a >= 0);
      ++per_residue[s == stages - 1 ? a % (m / 2) : a];
    }
    // 16 rows per residue (32 per residue pair {a, a + M/2} at the last stage, where they coincide).
    for (int64_t a = 0; a < m; ++a) REQUIRE(per_residue[a] == (s == stages - 1 ? (a < m / 2 ? 32 : 0) : 16));
  }
}

TEST_CASE("CPU reference: 1200 images x 120 layers give exactly the official 19 categories", "[sparse][cpu][data]") {
  REQUIRE_SPDNN_DATA();
  const std::string dir = spdnn::data_dir();
  spdnn::Csr images;
  std::string err;
  REQUIRE(spdnn::read_images_tsv(dir + "/sparse-images-1024-first1200.tsv", 1024, 1200, &images, &err));
  REQUIRE(images.rows == 1200);
  REQUIRE(images.nnz() == 122713);
  std::vector<int> truth;
  REQUIRE(spdnn::read_categories(dir + "/neuron1024-l120-categories-first1200.tsv", &truth, &err));
  const std::vector<int> readme = {287, 295, 386, 427, 428, 529, 571, 666, 757, 943,
                                   945, 1031, 1097, 1098, 1177, 1184, 1190, 1194, 1200};
  std::vector<int> readme0;
  for (int c : readme) readme0.push_back(c - 1);
  REQUIRE(truth == readme0);

  spdnn::CpuInference cpu(images);
  for (int l = 1; l <= 120; ++l) cpu.layer(load_layer(l), -0.3);
  CHECK(cpu.categories() == truth);
}

TEST_CASE("inputs: nearest-neighbour scaling and tiling", "[sparse][cpu]") {
  spdnn::Csr img;
  img.rows = 2;
  img.cols = 1024;
  img.ptr = {0, 2, 3};
  img.idx = {0, 33, 1023};  // (0,0), (1,1); (31,31)
  img.val = {1.f, 1.f, 1.f};
  const spdnn::Csr big = spdnn::scale_images(img, 4096);  // 64 x 64, f = 2
  REQUIRE(big.nnz() == 12);
  CHECK(std::vector<int>(big.idx.begin(), big.idx.begin() + 8) ==
        std::vector<int>{0, 1, 64, 65, 2 * 64 + 2, 2 * 64 + 3, 3 * 64 + 2, 3 * 64 + 3});
  CHECK(std::vector<int>(big.idx.begin() + 8, big.idx.end()) ==
        std::vector<int>{62 * 64 + 62, 62 * 64 + 63, 63 * 64 + 62, 63 * 64 + 63});
  const spdnn::Csr t = spdnn::tile_rows(img, 5);
  REQUIRE(t.rows == 5);
  CHECK(t.ptr == std::vector<int64_t>{0, 2, 3, 5, 6, 8});
  CHECK(t.idx[5] == 1023);
}
