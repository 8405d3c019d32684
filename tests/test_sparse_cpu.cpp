// CPU-only tests of the sparse DNN path (run in CI): the challenge readers, the generator against
// the official N = 1024 network, and the exact 1200-image x 120-layer validation of the float64
// CPU reference against the official truth. Without the data (scripts/fetch-spdnn-data.sh puts it
// in data/spdnn; JHDNN_SPDNN_DIR overrides) the data tests SKIP, saying so.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <catch2/catch_test_macros.hpp>

#include "common/catch_spdnn.h"
#include "spdnn/spdnn.h"
#include "sparse/resident_banks.h"

namespace {

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
  JHDNN_REQUIRE_SPDNN_DATA();
  for (int l = 1; l <= 6; ++l) {
    INFO("layer " << l);
    const spdnn::Csr off = jhdnn::test::official_layer(l);
    const spdnn::Csr gen = spdnn::generate_layer(1024, l, 1);
    REQUIRE(off.ptr == gen.ptr);
    REQUIRE(off.idx == gen.idx);
    REQUIRE(off.val == gen.val);
  }
}

TEST_CASE("generator spec: every official layer is RadiX-Net shaped (residue per row, 16 rows per residue)",
          "[sparse][cpu][data]") {
  JHDNN_REQUIRE_SPDNN_DATA();
  const int64_t n = 1024, m = 64;
  const int stages = 6;
  for (int l = 1; l <= 120; l += 1) {
    INFO("layer " << l);
    const spdnn::Csr w = jhdnn::test::official_layer(l);
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
  JHDNN_REQUIRE_SPDNN_DATA();
  const spdnn::Csr images = jhdnn::test::official_images();
  REQUIRE(images.rows == 1200);
  REQUIRE(images.nnz() == 122713);
  const std::vector<int> truth = jhdnn::test::official_categories();
  const std::vector<int> readme = {287, 295, 386, 427, 428, 529, 571, 666, 757, 943,
                                   945, 1031, 1097, 1098, 1177, 1184, 1190, 1194, 1200};
  std::vector<int> readme0;
  for (int c : readme) readme0.push_back(c - 1);
  REQUIRE(truth == readme0);

  spdnn::CpuInference cpu(images);
  for (int l = 1; l <= 120; ++l) cpu.layer(jhdnn::test::official_layer(l), -0.3);
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

TEST_CASE("inputs: scaling, tiling and the generator refuse what they cannot make", "[sparse][cpu]") {
  spdnn::Csr img;
  img.rows = 1;
  img.cols = 1024;
  img.ptr = {0, 1};
  img.idx = {5};
  img.val = {1.f};
  CHECK_NOTHROW(spdnn::scale_images(img, 16384));
  CHECK_THROWS_AS(spdnn::scale_images(img, 2048), std::invalid_argument);  // not 1024 f^2
  spdnn::Csr wide = img;
  wide.cols = 2048;
  CHECK_THROWS_AS(spdnn::scale_images(wide, 4096), std::invalid_argument);  // not 32 x 32 images
  CHECK_NOTHROW(spdnn::tile_rows(spdnn::Csr{}, 0));
  CHECK_THROWS_AS(spdnn::tile_rows(spdnn::Csr{}, 5), std::invalid_argument);  // (was a division by zero)
  CHECK_THROWS_AS(spdnn::tile_rows(img, -1), std::invalid_argument);
  CHECK_NOTHROW(spdnn::generate_layer(1024, 1, 0));
  for (const auto& [n, layer] : {std::pair<int64_t, int>{16, 1}, {1000, 1}, {1040, 1}, {1024, 0}, {1024, -6}}) {
    INFO("n " << n << " layer " << layer);
    CHECK_THROWS_AS(spdnn::generate_layer(n, layer, 0), std::invalid_argument);
    CHECK_THROWS_AS(spdnn::generate_layer_ell(n, layer, 0), std::invalid_argument);
  }
}

namespace {

// A file under the system's temporary directory with the given text, removed with the object.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    static int serial = 0;
    path = std::filesystem::temp_directory_path() /
           ("jhdnn-spdnn-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + ".tsv");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

// The readers take exactly "integer TAB integer TAB value" a line and say which line broke the rule; before session
// 32 they read a missing value as 1.0, "2x" as 2, "2.7" as 2, ignored trailing text and extra fields, split lines
// longer than 255 characters into two entries, grew the image count to whatever the file named (3e8 rows, or
// std::length_error), and read categories up to the first non-number. Each malformed file has a well-formed twin
// that reads (the controls), so a refusal is the malformation's.
TEST_CASE("readers: malformed challenge files are refused, naming the line", "[sparse][cpu]") {
  const std::string pad(300, ' ');
  struct Case {
    const char* name;
    std::string text;
    int line;  // the line the message must name (0: no line, a whole-file reason)
  };
  // Each case in a file read by `read` (path, &err -> ok): refused, without an exception, the message naming the
  // file (and the line where the case has one).
  using Reader = std::function<bool(const std::string&, std::string*)>;
  auto refused = [](const char* what, const Case& c, const Reader& read) {
    INFO(what << ": " << c.name);
    const TempFile f(c.text);
    std::string err;
    bool ok = true;
    CHECK_NOTHROW(ok = read(f.path, &err));
    CHECK_FALSE(ok);
    CHECK(err.find(f.path) != std::string::npos);
    if (c.line > 0) CHECK(err.find(f.path + ":" + std::to_string(c.line) + ":") != std::string::npos);
  };
  spdnn::Csr m;
  std::vector<int> cats;
  const Case bad_layer[] = {
      {"two fields", "1\t2\t0.5\n1\t2\n", 2},
      {"a value that is not a number", "1\t2\tabc\n", 1},
      {"text after an integer", "1\t2x\t0.5\n", 1},
      {"a fractional index", "1\t2.7\t0.5\n", 1},
      {"trailing text", "1\t2\t0.5xyz\n", 1},
      {"extra fields", "1\t2\t0.5\t7\t8\n", 1},
      {"an overflowing value", "1\t2\t1e40\n", 1},
      {"nan", "1\t2\tnan\n", 1},
      {"inf", "1\t2\tinf\n", 1},
      {"two entries on one long line", "1\t2\t0.5" + pad + "3\t4\t0.25\n", 1},
      {"a neuron above n", "1\t2\t0.5\n1\t1025\t0.5\n", 2},
      {"a neuron 0", "0\t2\t0.5\n", 1},
      {"an index past 64 bits", "99999999999999999999\t2\t0.5\n", 1},
      {"the same entry twice", "1\t2\t0.5\n3\t4\t0.5\n1\t2\t0.25\n", 0},
      {"no entries", "\n  \n", 0},
  };
  for (const Case& c : bad_layer)
    refused("layer file", c,
            [&](const std::string& p, std::string* err) { return spdnn::read_layer_tsv(p, 1024, &m, err); });
  {  // the control: blanks, CRLF, blank lines, a long line of trailing blanks, no final newline
    const TempFile f("1\t2\t0.5\r\n\n3 4  0.25" + pad + "\n5\t6\t1e-50\n1024\t1024\t-1e-3");
    spdnn::Csr w;
    std::string err;
    INFO(err);
    REQUIRE(spdnn::read_layer_tsv(f.path, 1024, &w, &err));
    CHECK(w.nnz() == 4);
    CHECK(w.idx == std::vector<int>{1, 3, 5, 1023});
    CHECK(w.val == std::vector<float>{0.5f, 0.25f, 0.f, -1e-3f});  // 1e-50 underflows to 0, kept
  }
  const Case bad_images[] = {
      {"an image above the count", "1\t5\t1\n1201\t5\t1\n", 2},
      {"a huge image number", "300000000\t5\t1\n", 1},
      {"an image number past 63 bits", "9223372036854775807\t5\t1\n", 1},
      {"a neuron above n", "1\t1025\t1\n", 1},
      {"the same pixel twice", "1\t5\t1\n1\t5\t1\n", 0},
      {"a missing value", "1\t5\n", 1},
  };
  for (const Case& c : bad_images)
    refused("image file", c,
            [&](const std::string& p, std::string* err) { return spdnn::read_images_tsv(p, 1024, 1200, &m, err); });
  {
    const TempFile f("1\t5\t1\n1200\t1024\t1\n1\t6\t1\n");
    spdnn::Csr y;
    std::string err;
    REQUIRE(spdnn::read_images_tsv(f.path, 1024, 1200, &y, &err));
    CHECK(y.rows == 1200);
    CHECK(y.nnz() == 3);
  }
  const Case bad_categories[] = {
      {"a word", "1\n2\nabc\n3\n", 3},
      {"a fraction", "1\n2.5\n3\n", 2},
      {"image 0", "0\n5\n", 1},
      {"a negative image", "5\n-4\n", 2},
      {"an image past the count", "4294967297\n", 1},
      {"an image above the count", "1201\n", 1},
      {"two numbers on a line", "1 2\n", 1},
      {"the same image twice", "2\n2\n", 0},
  };
  for (const Case& c : bad_categories)
    refused("categories file", c,
            [&](const std::string& p, std::string* err) { return spdnn::read_categories(p, 1200, &cats, err); });
  {
    const TempFile f("7\r\n\n3\n1200");
    std::string err;
    REQUIRE(spdnn::read_categories(f.path, 1200, &cats, &err));
    CHECK(cats == std::vector<int>{2, 6, 1199});
  }
  std::string err;
  spdnn::Csr w;
  CHECK_FALSE(spdnn::read_layer_tsv("/nonexistent-dir/n1024-l1.tsv", 1024, &w, &err));
  CHECK(err.find("cannot open") != std::string::npos);
}

namespace {

// A small deterministic generator for the relabelling tests (the LCG of the chain_order test, as a type).
struct Lcg {
  uint64_t state;
  int next() { return int((state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33); }
  int below(int n) { return next() % n; }
};

bool is_permutation_of(const std::vector<int>& p, int64_t n) {
  if (int64_t(p.size()) != n) return false;
  std::vector<char> seen(size_t(n), 0);
  for (int v : p) {
    if (v < 0 || v >= n || seen[v]) return false;
    seen[v] = 1;
  }
  return true;
}

// reader_group_labels by its definition, the slow way (sets and a map): the groups are the columns with equal
// reader sets, placed at their first use scanning `order` then all rows, unread columns last.
std::vector<int> reference_group_labels(const spdnn::Ell& e, const std::vector<int>& order) {
  std::vector<std::set<int>> readers(size_t(e.cols));
  for (int64_t r = 0; r < e.rows; ++r)
    for (int64_t k = 0; k < e.width; ++k)
      if (e.idx[r * e.width + k] >= 0) readers[e.idx[r * e.width + k]].insert(int(r));
  std::map<std::set<int>, std::vector<int>> members;  // reader set -> its columns, ascending
  for (int64_t i = 0; i < e.cols; ++i)
    if (!readers[i].empty()) members[readers[i]].push_back(int(i));
  std::vector<int> label(size_t(e.cols), -1), scan = order;
  int next = 0;
  for (int64_t r = 0; r < e.rows; ++r) scan.push_back(int(r));
  for (int r : scan)
    for (int64_t k = 0; k < e.width; ++k) {
      const int i = e.idx[r * e.width + k];
      if (i < 0 || label[i] >= 0) continue;
      for (int m : members[readers[i]]) label[m] = next++;
    }
  for (int64_t i = 0; i < e.cols; ++i)
    if (label[i] < 0) label[i] = next++;
  return label;
}

// A random ELL with groups: input i belongs to class i % classes (inputs >= classes * per_class: read by no row);
// each row reads a few whole classes, entries shuffled, padding (-1) scattered among them, and row 5 reads one
// input twice. Values: multiples of 1/16, so the float64 reference's sums are exact in any order.
spdnn::Ell random_class_ell(int64_t rows, int64_t cols, int classes, int per_class, uint64_t seed) {
  Lcg rng{seed};
  spdnn::Ell e;
  e.rows = rows;
  e.cols = cols;
  e.width = 3 * per_class + 4;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int> list;
    std::set<int> chosen;
    for (int t = 0, count = 1 + rng.below(3); t < count; ++t) chosen.insert(rng.below(classes));
    for (int c : chosen)
      for (int m = 0; m < per_class; ++m) list.push_back(c + m * classes);
    if (r == 5) list.push_back(list.front());
    while (int64_t(list.size()) < e.width) list.push_back(-1);
    for (size_t t = list.size() - 1; t > 0; --t) std::swap(list[t], list[size_t(rng.below(int(t + 1)))]);
    for (int i : list) {
      e.idx.push_back(i);
      e.val.push_back(i < 0 ? 0.f : float(2 + rng.below(8)) / 16.f);
    }
  }
  return e;
}

// The challenge's residue class of input i of layer l (N = 1024, M = 64): i mod M in cycle 0, perm_c(i) mod M after.
std::vector<int> residue_classes(int layer, uint64_t seed) {
  const int cycle = (layer - 1) / 6;
  const std::vector<int> perm = cycle > 0 ? spdnn::cycle_permutation(1024, cycle, seed) : std::vector<int>();
  std::vector<int> cls(1024);
  for (int i = 0; i < 1024; ++i) cls[i] = (cycle > 0 ? perm[i] : i) % 64;
  return cls;
}

// An ELL layer (row = output) as the W CpuInference takes (rows = inputs, cols = outputs): the ELL's rows as a CSR
// without the padding, transposed.
spdnn::Csr ell_to_w(const spdnn::Ell& e) {
  spdnn::Csr t;
  t.rows = e.rows;
  t.cols = e.cols;
  t.ptr.push_back(0);
  for (int64_t r = 0; r < e.rows; ++r) {
    std::vector<std::pair<int, float>> row;
    for (int64_t k = 0; k < e.width; ++k)
      if (e.idx[r * e.width + k] >= 0) row.emplace_back(e.idx[r * e.width + k], e.val[r * e.width + k]);
    std::sort(row.begin(), row.end());
    for (const auto& [i, v] : row) {
      t.idx.push_back(i);
      t.val.push_back(v);
    }
    t.ptr.push_back(int64_t(t.idx.size()));
  }
  return spdnn::transpose(t);
}

// rows random 0/1 images of n neurons; in image r each neuron is on with probability 10 + 50 r / (rows - 1) percent
// (at the challenge's bias the sparse images die within a few layers and the dense ones saturate: both kinds).
spdnn::Csr random_images(int64_t rows, int64_t n, uint64_t seed) {
  Lcg rng{seed};
  spdnn::Csr y;
  y.rows = rows;
  y.cols = n;
  y.ptr.push_back(0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t density_percent = 10 + 50 * r / std::max<int64_t>(rows - 1, 1);
    for (int64_t i = 0; i < n; ++i)
      if (rng.below(100) < density_percent) {
        y.idx.push_back(int(i));
        y.val.push_back(1.f);
      }
    y.ptr.push_back(int64_t(y.idx.size()));
  }
  return y;
}

// One layer summed the way the GPU kernel sums: each output a float fma chain over its ELL row's entries in stored
// order (padding skipped); then the bias, ReLU and the clamp at 32 (an epilogue of the same kind as the kernel's, not
// a copy of it); y dense, images x neurons. Every operation and its order follow the entries' order, not the
// neurons' names, and relabelling keeps each row's entry order: bitwise the same values at the renamed positions.
// (Reversing each row's entries in relabel_ell, tried once, makes this check fail at every layer.)
std::vector<std::vector<float>> stored_order_layer(const spdnn::Ell& e, const std::vector<std::vector<float>>& y,
                                                   float bias) {
  std::vector<std::vector<float>> out(y.size(), std::vector<float>(size_t(e.rows), 0.f));
  for (size_t r = 0; r < y.size(); ++r)
    for (int64_t j = 0; j < e.rows; ++j) {
      float acc = 0.f;
      for (int64_t k = 0; k < e.width; ++k)
        if (e.idx[j * e.width + k] >= 0) acc = std::fma(y[r][e.idx[j * e.width + k]], e.val[j * e.width + k], acc);
      out[r][j] = std::min(std::max(acc + bias, 0.f), 32.f);
    }
  return out;
}

std::vector<std::vector<float>> dense_images(const spdnn::Csr& m) {
  std::vector<std::vector<float>> d(size_t(m.rows), std::vector<float>(size_t(m.cols), 0.f));
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t k = m.ptr[r]; k < m.ptr[r + 1]; ++k) d[r][m.idx[k]] = m.val[k];
  return d;
}

// Relabels the network at every boundary (P_0 = the groups of layer 1's inputs, P_l = those of layer l + 1's, P_L =
// last_labels) and runs the original and the relabelled network on two references, checking after every layer l
// that neuron j of each image of the original matches neuron P_l[j] of the relabelled run:
// - stored_order_layer (the GPU kernel's order): bitwise equal (==), everywhere;
// - CpuInference (float64, the CSR reference): the same categories at the end, values to 1e-12, and bitwise only
//   where cpu_exact says every sum is exact (values multiples of 2^-k, a dyadic bias). It sums each output's products
//   in ascending input index, and relabelling changes that order: in the challenge network (bias -0.3) nearly half
//   the values below the clamp move in their last bits (where sum + bias nearly cancels, a ~1e-16 remainder even
//   changes by a large factor), so == there would test CpuInference's order, not the relabelling.
void check_relabelled_network(const std::vector<spdnn::Ell>& layers, const spdnn::Csr& images, double bias,
                              const std::vector<int>& last_labels, bool cpu_exact) {
  const size_t depth = layers.size();
  std::vector<std::vector<int>> p(depth + 1);
  for (size_t l = 0; l < depth; ++l) {
    p[l] = spdnn::reader_group_labels(layers[l], {});
    REQUIRE(is_permutation_of(p[l], layers[l].cols));
  }
  p[depth] = last_labels;
  const spdnn::Csr relabelled_images = spdnn::relabel_columns(images, p[0]);
  for (int64_t r = 0; r < relabelled_images.rows; ++r)
    for (int64_t k = relabelled_images.ptr[r] + 1; k < relabelled_images.ptr[r + 1]; ++k)
      REQUIRE(relabelled_images.idx[k] > relabelled_images.idx[k - 1]);
  std::vector<std::vector<float>> y = dense_images(images), y_relabelled = dense_images(relabelled_images);
  spdnn::CpuInference original(images), relabelled(relabelled_images);
  int64_t fractional = 0, cpu_last_bits = 0;  // values below the clamp; CpuInference values not bitwise equal
  for (size_t l = 0; l < depth; ++l) {
    INFO("layer " << l + 1);
    const spdnn::Ell e = spdnn::relabel_ell(layers[l], p[l], p[l + 1]);
    y = stored_order_layer(layers[l], y, float(bias));
    y_relabelled = stored_order_layer(e, y_relabelled, float(bias));
    original.layer(ell_to_w(layers[l]), bias);
    relabelled.layer(ell_to_w(e), bias);
    int64_t differ = 0, cpu_far = 0;
    for (int64_t r = 0; r < images.rows; ++r) {
      const std::vector<double> a = original.dense_row(r), b = relabelled.dense_row(r);
      for (int64_t j = 0; j < layers[l].rows; ++j) {
        const int64_t to = p[l + 1].empty() ? j : p[l + 1][j];
        differ += y[r][j] != y_relabelled[r][to];
        fractional += y[r][j] != 0.f && y[r][j] != 32.f;
        cpu_last_bits += a[j] != b[to];
        cpu_far += !(std::fabs(a[j] - b[to]) <= 1e-12 * std::max(1.0, std::fabs(a[j])));
      }
    }
    CHECK(differ == 0);
    CHECK(cpu_far == 0);
  }
  if (cpu_exact) CHECK(cpu_last_bits == 0);
  const std::vector<int> cats = original.categories();
  CHECK(relabelled.categories() == cats);
  // Not trivial: some images survive, some die, and values below the clamp were compared.
  CHECK(!cats.empty());
  CHECK(cats.size() < size_t(images.rows));
  CHECK(fractional > 0);
  UNSCOPED_INFO("survivors " << cats.size() << " of " << images.rows << "; stored order: " << fractional
                             << " values below the clamp, all equal; CpuInference: " << cpu_last_bits
                             << " values differ in their last bits");
}

}  // namespace

TEST_CASE("reader_group_labels: a permutation that follows its definition (random ELL, padding, unread inputs)",
          "[sparse][cpu][relabel]") {
  // 12 classes of 3 inputs (0..35), inputs 36..49 read by nobody.
  const spdnn::Ell e = random_class_ell(40, 50, 12, 3, 99);
  const std::vector<int> labels = spdnn::reader_group_labels(e, {});
  REQUIRE(is_permutation_of(labels, e.cols));
  CHECK(labels == reference_group_labels(e, {}));
  for (int i = 36; i < 50; ++i) CHECK(labels[i] == i);  // unread: last, ascending (every class is read here)
  // A row order: the groups follow it (and any rows it leaves out are scanned after it, ascending).
  std::vector<int> order = spdnn::chain_order(e);
  std::reverse(order.begin(), order.end());
  CHECK(spdnn::reader_group_labels(e, order) == reference_group_labels(e, order));
  const std::vector<int> part = {17, 3, 3, 30};
  CHECK(spdnn::reader_group_labels(e, part) == reference_group_labels(e, part));
  CHECK_THROWS_AS(spdnn::reader_group_labels(e, {40}), std::invalid_argument);
  spdnn::Ell bad = e;
  bad.idx[7] = 50;
  CHECK_THROWS_AS(spdnn::reader_group_labels(bad, {}), std::invalid_argument);
  // Two inputs of one class in a row, the rest not: then the class is two groups, no longer one.
  spdnn::Ell split = e;
  split.rows += 1;
  for (int64_t k = 0; k < split.width; ++k) {
    split.idx.push_back(k == 0 ? 0 : k == 1 ? 12 : -1);  // inputs 0 and 12 of class 0, not 24
    split.val.push_back(k < 2 ? 0.0625f : 0.f);
  }
  CHECK(spdnn::reader_group_labels(split, {}) == reference_group_labels(split, {}));
  // Many tiny ELLs (few columns, so equal reader sets are common; repeats, padding, empty rows, no rows at all) in
  // random and partial orders.
  Lcg rng{2024};
  for (int trial = 0; trial < 500; ++trial) {
    spdnn::Ell t;
    t.rows = rng.below(10);
    t.cols = 1 + rng.below(8);
    t.width = 1 + rng.below(4);
    for (int64_t k = 0; k < t.rows * t.width; ++k) {
      t.idx.push_back(rng.below(4) == 0 ? -1 : rng.below(int(t.cols)));
      t.val.push_back(1.f);
    }
    std::vector<int> o;
    for (int k = rng.below(int(t.rows) + 1); k > 0; --k) o.push_back(rng.below(int(t.rows)));
    INFO("trial " << trial);
    const std::vector<int> got = spdnn::reader_group_labels(t, o);
    REQUIRE(is_permutation_of(got, t.cols));
    REQUIRE(got == reference_group_labels(t, o));
  }
}

TEST_CASE("reader_group_labels: the challenge layers' residue classes get consecutive labels", "[sparse][cpu][relabel]") {
  // N = 1024, M = 64, S = 6. Layers 1 (cycle 0, stage 0) and 7 (cycle 1, stage 0): each class of 16 inputs is one
  // group, and every row's 32 entries are two runs of 16 consecutive labels, one per class. Layer 12 (cycle 1, stage
  // 5 = the last): classes q and q + 32 are read by the same 32 rows, so they form one group of 32 and every row's
  // entries are one run of 32.
  for (int layer : {1, 7, 12}) {
    INFO("layer " << layer);
    const spdnn::Ell e = spdnn::generate_layer_ell(1024, layer, 42);
    const std::vector<int> labels = spdnn::reader_group_labels(e, {});
    REQUIRE(is_permutation_of(labels, 1024));
    CHECK(labels == reference_group_labels(e, {}));
    const bool last_stage = (layer - 1) % 6 == 5;
    const std::vector<int> cls = residue_classes(layer, 42);
    auto group_of = [&](int i) { return last_stage ? cls[i] % 32 : cls[i]; };
    // Each group: its members (ascending j) have consecutive labels, ascending.
    std::map<int, std::vector<int>> members;
    for (int i = 0; i < 1024; ++i) members[group_of(i)].push_back(i);
    REQUIRE(members.size() == (last_stage ? 32u : 64u));
    for (const auto& [g, m] : members) {
      INFO("group " << g);
      REQUIRE(m.size() == (last_stage ? 32u : 16u));
      for (size_t t = 1; t < m.size(); ++t) CHECK(labels[m[t]] == labels[m[0]] + int(t));
    }
    // On the relabelled ELL: each row's entries, split by the (original) group of the input, are runs.
    const spdnn::Ell r = spdnn::relabel_ell(e, labels, {});
    REQUIRE(r.width == 32);
    for (int64_t j = 0; j < 1024; ++j) {
      INFO("row " << j);
      std::map<int, std::vector<int>> runs;
      for (int64_t k = 0; k < 32; ++k) runs[group_of(e.idx[j * 32 + k])].push_back(r.idx[j * 32 + k]);
      REQUIRE(runs.size() == (last_stage ? 1u : 2u));
      for (auto& [g, run] : runs) {
        std::sort(run.begin(), run.end());
        REQUIRE(run.size() == (last_stage ? 32u : 16u));
        CHECK(run.back() - run.front() == int(run.size()) - 1);  // distinct and sorted: consecutive
      }
    }
  }
}

TEST_CASE("relabel_ell / relabel_columns: rows, entries and values move, order kept; sizes checked",
          "[sparse][cpu][relabel]") {
  spdnn::Ell e;
  e.rows = 3;
  e.cols = 4;
  e.width = 3;
  e.idx = {3, 0, -1, /**/ 1, -1, 2, /**/ 2, 3, 0};
  e.val = {1.f, 2.f, 0.f, /**/ 3.f, 0.f, 4.f, /**/ 5.f, 6.f, 7.f};
  const std::vector<int> in = {2, 0, 3, 1}, out = {1, 2, 0};
  const spdnn::Ell r = spdnn::relabel_ell(e, in, out);
  CHECK((r.rows == 3 && r.cols == 4 && r.width == 3));
  CHECK(r.idx == std::vector<int>{3, 1, 2, /**/ 1, 2, -1, /**/ 0, -1, 3});
  CHECK(r.val == std::vector<float>{5.f, 6.f, 7.f, /**/ 1.f, 2.f, 0.f, /**/ 3.f, 0.f, 4.f});
  CHECK(spdnn::relabel_ell(e, {}, {}).idx == e.idx);
  CHECK(spdnn::relabel_ell(e, in, {}).idx == std::vector<int>{1, 2, -1, /**/ 0, -1, 3, /**/ 3, 1, 2});
  CHECK_THROWS_AS(spdnn::relabel_ell(e, {0, 1, 2}, {}), std::invalid_argument);
  CHECK_THROWS_AS(spdnn::relabel_ell(e, {}, {0, 1, 2, 3}), std::invalid_argument);
  CHECK_THROWS_AS(spdnn::relabel_ell(e, {0, 1, 1, 2}, {}), std::invalid_argument);

  spdnn::Csr m;
  m.rows = 2;
  m.cols = 4;
  m.ptr = {0, 3, 4};
  m.idx = {0, 1, 3, 2};
  m.val = {1.f, 2.f, 3.f, 4.f};
  const spdnn::Csr c = spdnn::relabel_columns(m, in);  // 0 -> 2, 1 -> 0, 3 -> 1; 2 -> 3
  CHECK(c.ptr == m.ptr);
  CHECK(c.idx == std::vector<int>{0, 1, 2, 3});
  CHECK(c.val == std::vector<float>{2.f, 3.f, 1.f, 4.f});
  CHECK(spdnn::relabel_columns(m, {}).idx == m.idx);
  CHECK_THROWS_AS(spdnn::relabel_columns(m, {0, 1, 2}), std::invalid_argument);
}

TEST_CASE("map_order: a row order in the new names", "[sparse][cpu][relabel]") {
  const std::vector<int> order = {2, 0, 3, 1}, out = {3, 1, 0, 2};
  CHECK(spdnn::map_order(order, out) == std::vector<int>{0, 3, 2, 1});
  CHECK(spdnn::map_order(order, {}) == order);
  CHECK_THROWS_AS(spdnn::map_order({4}, out), std::invalid_argument);
  // It names the same rows after relabel_ell: row map_order(o)[k] of the relabelled ELL is row o[k] of the original.
  const spdnn::Ell e = spdnn::generate_layer_ell(1024, 3, 42);
  const std::vector<int> o = spdnn::chain_order(e), rows = spdnn::reader_group_labels(spdnn::generate_layer_ell(1024, 4, 42), {});
  const spdnn::Ell r = spdnn::relabel_ell(e, {}, rows);
  const std::vector<int> mapped = spdnn::map_order(o, rows);
  for (size_t k = 0; k < o.size(); ++k)
    REQUIRE(std::equal(r.idx.begin() + mapped[k] * 32, r.idx.begin() + (mapped[k] + 1) * 32, e.idx.begin() + o[k] * 32));
}

TEST_CASE("relabelling is exact: the stored-order arithmetic gives bitwise the same values at the new positions",
          "[sparse][cpu][relabel]") {
  const spdnn::Csr images = random_images(50, 1024, 7);
  SECTION("challenge network, N = 1024, 8 layers (both cycles, the last stage included), bias -0.3") {
    std::vector<spdnn::Ell> layers;
    for (int l = 1; l <= 8; ++l) {
      layers.push_back(spdnn::generate_layer_ell(1024, l, 42));
      REQUIRE(ell_to_w(layers.back()).idx == spdnn::generate_layer(1024, l, 42).idx);  // the W CpuInference takes
    }
    check_relabelled_network(layers, images, -0.3, {}, false);
    check_relabelled_network(layers, images, -0.3,
                             spdnn::reader_group_labels(spdnn::generate_layer_ell(1024, 9, 42), {}), false);
  }
  SECTION("random ELLs with padding and unread inputs, N = 1024, 4 layers") {
    std::vector<spdnn::Ell> layers;
    for (int l = 0; l < 4; ++l) layers.push_back(random_class_ell(1024, 1024, 200, 4, 1000 + uint64_t(l)));
    std::vector<int> shuffled(1024);
    for (int i = 0; i < 1024; ++i) shuffled[i] = (i * 389 + 17) % 1024;  // 389 odd: a permutation
    check_relabelled_network(layers, images, -0.5, {}, true);  // values k / 16: exact sums
    check_relabelled_network(layers, images, -0.5, shuffled, true);
  }
}

namespace {
// Shared-memory wavefronts of vals4w / vals4w8 by a count written from the kernels' access pattern, not from
// bank_labels: a half-warp's request costs, per bank group, one wavefront per distinct 16-byte feature row in it
// (equal rows broadcast), the most over the groups. (The count matched ncu on the identity names: ~3.1 wavefronts per
// feature load against ncu's 2.8-3.3 at N = 4096, bench/results/c3b6603/.) Loads: the lanes' lists (row slot 0's:
// the one-list path) at each position; stores: each row slot's outputs. Per warp request (two half-warps), mean.
struct BankCount {
  double loads = 0, stores = 0;
};
BankCount count_wavefronts(const spdnn::Ell& e, const std::vector<int>& order, const std::vector<int>& in_labels,
                           const std::vector<int>& out_labels) {
  const int n = int(e.cols);
  auto group_of = [&](const std::vector<int>& labels, int neuron) {
    return jhdnn::sparse::resident_bank_group(labels.empty() ? neuron : labels[size_t(neuron)], n);
  };
  auto cost = [](const std::map<int, std::set<int>>& by_group) {
    size_t most = 0;
    for (const auto& [g, rows] : by_group) most = std::max(most, rows.size());
    return double(most);
  };
  double loads = 0, stores = 0, load_requests = 0, store_requests = 0;
  for (int64_t c0 = 0; c0 + 128 <= e.rows; c0 += 128) {
    for (int64_t k = 0; k < e.width; ++k, ++load_requests)
      for (int half = 0; half < 2; ++half) {
        std::map<int, std::set<int>> by_group;
        for (int p = 16 * half; p < 16 * half + 16; ++p) {
          const int f = e.idx[size_t(order[size_t(c0 + jhdnn::sparse::resident_vals4w_row(p, 0))] * e.width + k)];
          if (f >= 0) by_group[group_of(in_labels, f)].insert(f);
        }
        loads += cost(by_group);
      }
    for (int i = 0; i < 4; ++i, ++store_requests)
      for (int half = 0; half < 2; ++half) {
        std::map<int, std::set<int>> by_group;
        for (int p = 16 * half; p < 16 * half + 16; ++p) {
          const int r = order[size_t(c0 + jhdnn::sparse::resident_vals4w_row(p, i))];
          by_group[group_of(out_labels, r)].insert(r);
        }
        stores += cost(by_group);
      }
  }
  return {loads / load_requests, stores / store_requests};
}
}  // namespace

// bank_labels names the neurons between two layers so that vals4w's requests spread over the bank groups. On the
// challenge's layers in chain order (N = 1024 and 4096, cycles 1 and 2: inputs scattered by the cycle's permutation)
// the half-warp's 4 distinct inputs at a list position take one wavefront each half (2 a request, the least), where
// the identity names take ~3; the stores of the layer before, written under the same names, at most ~5 a request
// by this count (16 rows a half: 2 the least; the identity's 4-10; ncu measured 9.1 -> 8.1 a store at 61e85f0, so the
// count is the model's, not the hardware's, for stores). Bad inputs throw.
TEST_CASE("bank_labels: the resident kernels' requests spread over the bank groups", "[sparse][cpu][relabel]") {
  for (const int64_t n : {int64_t(1024), int64_t(4096)}) {
    for (const int layer : {14, 23}) {
      INFO("N " << n << " layer " << layer);
      const spdnn::Ell prev = spdnn::generate_layer_ell(n, layer - 1, 42), e = spdnn::generate_layer_ell(n, layer, 42);
      const std::vector<int> prev_order = spdnn::chain_order(prev), order = spdnn::chain_order(e);
      const std::vector<int> labels = spdnn::bank_labels(e, order, prev_order);
      REQUIRE(is_permutation_of(labels, n));
      const BankCount before = count_wavefronts(e, order, {}, {}), after = count_wavefronts(e, order, labels, {});
      const BankCount stores_before = count_wavefronts(prev, prev_order, {}, {});
      const BankCount stores_after = count_wavefronts(prev, prev_order, {}, labels);
      UNSCOPED_INFO("N " << n << " layer " << layer << ": loads " << before.loads << " -> " << after.loads
                         << ", the layer before's stores " << stores_before.stores << " -> " << stores_after.stores);
      CHECK(before.loads > 2.8);
      CHECK(after.loads < 2.01);
      CHECK(stores_after.stores < 5.5);
      // Without the layer before's order only the loads count.
      CHECK(count_wavefronts(e, order, spdnn::bank_labels(e, order, {}), {}).loads < 2.01);
    }
  }
  const spdnn::Ell e = spdnn::generate_layer_ell(1024, 14, 42);
  CHECK_THROWS_AS(spdnn::bank_labels(e, {0, 1}, {}), std::invalid_argument);  // not a permutation of the rows
  CHECK_THROWS_AS(spdnn::bank_labels(e, {}, std::vector<int>(1024, 0)), std::invalid_argument);
  spdnn::Ell bad = e;
  bad.idx[5] = 1024;
  CHECK_THROWS_AS(spdnn::bank_labels(bad, {}, {}), std::invalid_argument);
  // Any ELL: a permutation (random lists, padding, a row count that is no multiple of 128, unread inputs).
  const spdnn::Ell r = random_class_ell(200, 300, 20, 5, 7);
  CHECK(is_permutation_of(spdnn::bank_labels(r, spdnn::chain_order(r), {}), r.cols));
}
