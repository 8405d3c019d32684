#include "spdnn/spdnn.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <stdexcept>
#include <sys/stat.h>

#include "sparse/resident_banks.h"
#include "sparse/tc_tables.h"

namespace spdnn {

float challenge_bias(int64_t n, bool* ok) {
  if (ok) *ok = true;
  switch (n) {
    case 1024: return -0.3f;
    case 4096: return -0.35f;
    case 16384: return -0.4f;
    case 65536: return -0.45f;
    default:
      if (ok) *ok = false;
      return 0.f;
  }
}

namespace {

// One entry of a challenge TSV line: "a<TAB>b<TAB>v" (any blanks between the fields; a trailing \r or blanks
// allowed): exactly two integers and a finite float, each parsed to its end. Returns false (*why) otherwise.
bool parse_triple(const char* line, long long* a, long long* b, float* v, const char** why) {
  const char* p = line;
  char* end = nullptr;
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  for (long long* out : {a, b}) {
    errno = 0;
    *out = std::strtoll(p, &end, 10);
    if (end != p && *end == '\0') {
      *why = "expected three fields (two integers and a value)";
      return false;
    }
    if (end == p || !blank(*end)) {
      *why = "expected an integer";
      return false;
    }
    if (errno == ERANGE) {
      *why = "an integer out of range";
      return false;
    }
    p = end;
  }
  *v = std::strtof(p, &end);  // (an underflow gives the nearest float, a subnormal or 0, which is kept)
  if (end == p) {
    *why = "expected three fields (two integers and a value)";
    return false;
  }
  if (!std::isfinite(*v)) {  // nan, inf, or an overflow (HUGE_VALF)
    *why = "a value that is not a finite float";
    return false;
  }
  for (p = end; *p != '\0'; ++p)
    if (!blank(*p)) {
      *why = "text after the third field";
      return false;
    }
  return true;
}

// Reads "a<TAB>b<TAB>v" triples (1-based a, b), lines of any length; blank lines are skipped. The first
// malformed line fails the read with "path:line: why"; line[t] is entry t's line number, for later messages.
bool read_triples(const std::string& path, std::vector<int64_t>* a, std::vector<int64_t>* b, std::vector<float>* v,
                  std::vector<int64_t>* line_of, std::string* err) {
  std::ifstream f(path);
  if (!f) {
    *err = "cannot open " + path;
    return false;
  }
  std::string line;
  int64_t lineno = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    long long x = 0, y = 0;
    float z = 0.f;
    const char* why = nullptr;
    if (!parse_triple(line.c_str(), &x, &y, &z, &why)) {
      *err = path + ":" + std::to_string(lineno) + ": malformed line (" + why + ")";
      return false;
    }
    a->push_back(x);
    b->push_back(y);
    v->push_back(z);
    line_of->push_back(lineno);
  }
  if (f.bad()) {
    *err = "read error in " + path;
    return false;
  }
  return true;
}

Csr build_csr(int64_t rows, int64_t cols, const std::vector<int64_t>& r, const std::vector<int64_t>& c,
              const std::vector<float>& v) {
  Csr m;
  m.rows = rows;
  m.cols = cols;
  m.ptr.assign(rows + 1, 0);
  for (int64_t t : r) ++m.ptr[t + 1];
  for (int64_t i = 0; i < rows; ++i) m.ptr[i + 1] += m.ptr[i];
  m.idx.resize(r.size());
  m.val.resize(r.size());
  std::vector<int64_t> fill(m.ptr.begin(), m.ptr.end() - 1);
  for (size_t t = 0; t < r.size(); ++t) {
    const int64_t at = fill[r[t]]++;
    m.idx[at] = int(c[t]);
    m.val[at] = v[t];
  }
  for (int64_t i = 0; i < rows; ++i) {  // sort each row by column
    std::vector<std::pair<int, float>> e;
    for (int64_t k = m.ptr[i]; k < m.ptr[i + 1]; ++k) e.emplace_back(m.idx[k], m.val[k]);
    std::sort(e.begin(), e.end());
    for (size_t k = 0; k < e.size(); ++k) {
      m.idx[m.ptr[i] + k] = e[k].first;
      m.val[m.ptr[i] + k] = e[k].second;
    }
  }
  return m;
}

// splitmix64: a tiny, fully specified generator, so networks are the same on every platform.
struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) {  // unbiased: reject the top partial block
    const uint64_t lim = ~uint64_t(0) - (~uint64_t(0) % n);
    uint64_t x;
    do x = next(); while (x >= lim);
    return x % n;
  }
};

}  // namespace

namespace {
// The entry at line `line` of `path` (for messages).
std::string at_line(const std::string& path, int64_t line) { return path + ":" + std::to_string(line); }

// A second entry for the same (row, column) of the CSR just built (its rows' columns ascending): the file is
// refused (a reader that summed or kept one would silently differ from the other side of a comparison).
bool no_duplicates(const Csr& m, const std::string& path, const char* what, std::string* err) {
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t k = m.ptr[i] + 1; k < m.ptr[i + 1]; ++k)
      if (m.idx[k] == m.idx[k - 1]) {
        *err = path + ": " + what + " " + std::to_string(i + 1) + ", column " + std::to_string(m.idx[k] + 1) +
               " is given twice";
        return false;
      }
  return true;
}
}  // namespace

bool read_layer_tsv(const std::string& path, int64_t n, Csr* w, std::string* err) {
  std::vector<int64_t> r, c, line;
  std::vector<float> v;
  if (!read_triples(path, &r, &c, &v, &line, err)) return false;
  if (r.empty()) {
    *err = path + ": no entries (a challenge layer has 32 per neuron)";
    return false;
  }
  for (size_t t = 0; t < r.size(); ++t) {
    if (r[t] < 1 || r[t] > n || c[t] < 1 || c[t] > n) {
      *err = at_line(path, line[t]) + ": neuron outside 1.." + std::to_string(n);
      return false;
    }
    --r[t];
    --c[t];
  }
  *w = build_csr(n, n, r, c, v);
  return no_duplicates(*w, path, "row", err);
}

bool read_images_tsv(const std::string& path, int64_t n, int64_t rows, Csr* y, std::string* err) {
  std::vector<int64_t> r, c, line;
  std::vector<float> v;
  if (!read_triples(path, &r, &c, &v, &line, err)) return false;
  for (size_t t = 0; t < r.size(); ++t) {
    if (r[t] < 1 || r[t] > rows) {
      *err = at_line(path, line[t]) + ": image outside 1.." + std::to_string(rows);
      return false;
    }
    if (c[t] < 1 || c[t] > n) {
      *err = at_line(path, line[t]) + ": neuron outside 1.." + std::to_string(n);
      return false;
    }
    --r[t];
    --c[t];
  }
  *y = build_csr(rows, n, r, c, v);
  return no_duplicates(*y, path, "image", err);
}

bool read_categories(const std::string& path, int64_t images, std::vector<int>* cats, std::string* err) {
  std::ifstream f(path);
  if (!f) {
    *err = "cannot open " + path;
    return false;
  }
  cats->clear();
  std::string line;
  for (int64_t lineno = 1; std::getline(f, line); ++lineno) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;  // blank line
    const char* p = line.c_str() + first;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(p, &end, 10);
    if (end == p || errno == ERANGE || std::strspn(end, " \t\r") != std::strlen(end)) {
      *err = at_line(path, lineno) + ": expected one image number";
      return false;
    }
    if (x < 1 || x > images) {
      *err = at_line(path, lineno) + ": image " + std::to_string(x) + " outside 1.." + std::to_string(images);
      return false;
    }
    cats->push_back(int(x - 1));
  }
  if (f.bad()) {
    *err = "read error in " + path;
    return false;
  }
  std::sort(cats->begin(), cats->end());
  const auto dup = std::adjacent_find(cats->begin(), cats->end());
  if (dup != cats->end()) {
    *err = path + ": image " + std::to_string(*dup + 1) + " is listed twice";
    return false;
  }
  return true;
}

bool generator_width_ok(int64_t n) {
  if (n < 32 || n % 16 != 0) return false;
  const int64_t m = n / 16;
  return (m & (m - 1)) == 0;
}

std::vector<int> cycle_permutation(int64_t n, int cycle, uint64_t seed) {
  std::vector<int> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = int(i);
  SplitMix rng{seed * 0x100000001B3ull + uint64_t(cycle) * 0x9E3779B97F4A7C15ull + uint64_t(n)};
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[rng.below(uint64_t(i + 1))]);  // Fisher-Yates
  return p;
}

namespace {
// The generator's inputs (std::invalid_argument otherwise: a width off the spec divided by zero or built a layer
// off the spec, a layer < 1 shifted by a negative count).
void check_generator_args(int64_t n, int layer) {
  if (!generator_width_ok(n))
    throw std::invalid_argument("generator: width " + std::to_string(n) + " is not 16 x a power of two >= 2");
  if (layer < 1) throw std::invalid_argument("generator: layer " + std::to_string(layer) + " < 1 (layers are 1-based)");
}
}  // namespace

Csr generate_layer(int64_t n, int layer, uint64_t seed) {
  check_generator_args(n, layer);
  const int64_t m = n / 16;
  int s_count = 0;
  while ((int64_t(1) << s_count) < m) ++s_count;
  const int c = (layer - 1) / s_count, s = (layer - 1) % s_count;
  std::vector<int> perm;
  if (c > 0) perm = cycle_permutation(n, c, seed);
  Csr w;
  w.rows = w.cols = n;
  w.ptr.resize(n + 1);
  w.idx.resize(n * 32);
  w.val.assign(n * 32, 0.0625f);
  for (int64_t i = 0; i < n; ++i) {
    w.ptr[i] = i * 32;
    const int64_t r = (c == 0 ? i : perm[i]) % m;
    const int64_t r2 = ((r - (int64_t(1) << s)) % m + m) % m;
    const int64_t lo = std::min(r, r2), hi = std::max(r, r2);
    int* out = &w.idx[i * 32];
    for (int64_t t = 0; t < 16; ++t) {  // ascending: lo + tM < hi + tM < lo + (t+1)M
      out[2 * t] = int(lo + t * m);
      out[2 * t + 1] = int(hi + t * m);
    }
  }
  w.ptr[n] = n * 32;
  return w;
}

Ell generate_layer_ell(int64_t n, int layer, uint64_t seed) {
  check_generator_args(n, layer);
  const int64_t m = n / 16;
  int s_count = 0;
  while ((int64_t(1) << s_count) < m) ++s_count;
  const int c = (layer - 1) / s_count, s = (layer - 1) % s_count;
  std::vector<int> inv(n);  // inv[perm(i)] = i: rows of residue q are inv[q + t M]
  if (c == 0) {
    for (int64_t i = 0; i < n; ++i) inv[i] = int(i);
  } else {
    const std::vector<int> perm = cycle_permutation(n, c, seed);
    for (int64_t i = 0; i < n; ++i) inv[perm[i]] = int(i);
  }
  Ell e;
  e.rows = e.cols = n;
  e.width = 32;
  e.idx.resize(n * 32);
  e.val.assign(n * 32, 0.0625f);
  for (int64_t j = 0; j < n; ++j) {
    const int64_t q = j % m, q2 = (q + (int64_t(1) << s)) % m;
    int* out = &e.idx[j * 32];
    for (int64_t t = 0; t < 16; ++t) {
      out[t] = inv[q + t * m];
      out[16 + t] = inv[q2 + t * m];
    }
    std::sort(out, out + 32);
  }
  return e;
}

Csr transpose(const Csr& w) {
  Csr t;
  t.rows = w.cols;
  t.cols = w.rows;
  t.ptr.assign(t.rows + 1, 0);
  for (int j : w.idx) ++t.ptr[j + 1];
  for (int64_t j = 0; j < t.rows; ++j) t.ptr[j + 1] += t.ptr[j];
  t.idx.resize(w.idx.size());
  t.val.resize(w.idx.size());
  std::vector<int64_t> fill(t.ptr.begin(), t.ptr.end() - 1);
  for (int64_t i = 0; i < w.rows; ++i)  // rows in order, so each column's list stays ascending
    for (int64_t k = w.ptr[i]; k < w.ptr[i + 1]; ++k) {
      const int64_t at = fill[w.idx[k]]++;
      t.idx[at] = int(i);
      t.val[at] = w.val[k];
    }
  return t;
}

std::vector<int> reuse_order(const Ell& e) {
  return jhdnn::sparse::reuse_order(e.rows, e.width, e.idx.data());  // (src/sparse/tc_tables.cpp)
}

std::vector<int> chain_order(const Ell& e) {
  const std::vector<int> sorted = reuse_order(e);
  const int64_t w = e.width;
  auto list = [&](int row) { return e.idx.data() + int64_t(row) * w; };
  // groups: runs of equal lists in reuse_order, [first[g], first[g + 1])
  std::vector<int64_t> first;
  for (int64_t t = 0; t < e.rows; ++t)
    if (t == 0 || !std::equal(list(sorted[t]), list(sorted[t]) + w, list(sorted[t - 1]))) first.push_back(t);
  const int64_t groups = int64_t(first.size());
  first.push_back(e.rows);
  // the groups that read each input row (each group once per input, however often its list repeats it)
  std::vector<std::vector<int>> readers(size_t(std::max<int64_t>(e.cols, 0)));
  for (int64_t g = 0; g < groups; ++g) {
    const int* l = list(sorted[first[g]]);
    for (int64_t k = 0; k < w; ++k)
      if (l[k] >= 0 && l[k] < e.cols && (readers[l[k]].empty() || readers[l[k]].back() != int(g)))
        readers[l[k]].push_back(int(g));
  }
  // An input read by more than kChainMaxReaders groups is left out of the counts: it does not tell a neighbour
  // apart (and, read that often, it stays in the L2 anyway), and counting it would cost groups^2 (a hub input in
  // every list of 65536 distinct ones: 26 s a layer; with the cap 32 x kChainMaxReaders steps per group).
  constexpr size_t kChainMaxReaders = 64;
  for (std::vector<int>& r : readers)
    if (r.size() > kChainMaxReaders) std::vector<int>().swap(r);
  std::vector<int> order;
  order.reserve(size_t(e.rows));
  std::vector<char> done(size_t(groups), 0);
  std::vector<int> shared(size_t(groups), 0), touched;
  int64_t next_unvisited = 0;
  int64_t g = groups > 0 ? 0 : -1;
  while (g >= 0) {
    done[g] = 1;
    for (int64_t t = first[g]; t < first[g + 1]; ++t) order.push_back(sorted[t]);
    const int* l = list(sorted[first[g]]);
    for (int64_t k = 0; k < w; ++k)  // count, per unvisited group, the inputs it shares with g
      if (l[k] >= 0 && l[k] < e.cols && (k == 0 || std::find(l, l + k, l[k]) == l + k))
        for (int h : readers[l[k]])
          if (!done[h] && shared[h]++ == 0) touched.push_back(h);
    int64_t best = -1;
    for (int h : touched) {
      if (best < 0 || shared[h] > shared[best] || (shared[h] == shared[best] && h < best)) best = h;
    }
    for (int h : touched) shared[h] = 0;
    touched.clear();
    if (best < 0) {
      while (next_unvisited < groups && done[next_unvisited]) ++next_unvisited;
      best = next_unvisited < groups ? next_unvisited : -1;
    }
    g = best;
  }
  return order;
}

namespace {

// std::invalid_argument unless labels is empty (the identity) or a permutation of 0..n-1. O(n): cheap next to the
// relabelling itself, and a wrong vector would otherwise write out of bounds or silently drop a neuron.
void check_labels(const std::vector<int>& labels, int64_t n, const char* what) {
  if (labels.empty()) return;
  if (int64_t(labels.size()) != n)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(labels.size()) + " labels for " +
                                std::to_string(n) + " neurons");
  std::vector<char> seen(size_t(n), 0);
  for (int v : labels) {
    if (v < 0 || v >= n || seen[v]) throw std::invalid_argument(std::string(what) + ": not a permutation");
    seen[v] = 1;
  }
}

}  // namespace

std::vector<int> reader_group_labels(const Ell& e, const std::vector<int>& order) {
  const int64_t rows = e.rows, cols = e.cols, w = e.width;
  if (int64_t(e.idx.size()) != rows * w)
    throw std::invalid_argument("reader_group_labels: idx does not hold rows x width entries");
  for (int64_t k = 0; k < rows * w; ++k)
    if (e.idx[k] >= cols)
      throw std::invalid_argument("reader_group_labels: entry " + std::to_string(e.idx[k]) + " >= cols");
  for (int r : order)
    if (r < 0 || r >= rows) throw std::invalid_argument("reader_group_labels: order names row " + std::to_string(r));
  return jhdnn::sparse::reader_group_labels(rows, cols, w, e.idx.data(), order);  // (src/sparse/tc_tables.cpp)
}

std::vector<int> bank_labels(const Ell& next, const std::vector<int>& next_order, const std::vector<int>& prev_order) {
  const int64_t rows = next.rows, n = next.cols, w = next.width;
  if (int64_t(next.idx.size()) != rows * w)
    throw std::invalid_argument("bank_labels: idx does not hold rows x width entries");
  if (n < 0 || n > (int64_t(1) << 30)) throw std::invalid_argument("bank_labels: cols outside [0, 2^30]");
  for (int64_t k = 0; k < rows * w; ++k)
    if (next.idx[k] >= n) throw std::invalid_argument("bank_labels: entry " + std::to_string(next.idx[k]) + " >= cols");
  check_labels(next_order, rows, "bank_labels next_order");  // a permutation of the rows, or empty
  check_labels(prev_order, n, "bank_labels prev_order");
  const int nn = int(n);
  auto row_at = [](const std::vector<int>& order, int64_t k) { return order.empty() ? int(k) : order[size_t(k)]; };
  // The read sets: per chunk half (16 lanes, 64 rows), row slot i of the lanes and list position k, the distinct
  // inputs its lanes read (the one-list path reads row slot 0's list: the same set for every slot, kept once).
  std::vector<std::vector<int>> sets;
  std::vector<std::vector<int>> sets_of(static_cast<size_t>(nn));
  std::vector<int> set;
  for (int64_t c0 = 0; c0 < rows; c0 += 128)
    for (int half = 0; half < 2; ++half)
      for (int64_t k = 0; k < w; ++k) {
        std::vector<int> last;
        for (int i = 0; i < 4; ++i) {
          set.clear();
          for (int p = 16 * half; p < 16 * half + 16; ++p) {
            const int64_t pos = c0 + jhdnn::sparse::resident_vals4w_row(p, i);
            if (pos >= rows) continue;  // past the last chunk's rows
            const int f = next.idx[size_t(row_at(next_order, pos)) * size_t(w) + size_t(k)];
            if (f >= 0 && std::find(set.begin(), set.end(), f) == set.end()) set.push_back(f);
          }
          if (set.size() < 2 || set == last) continue;
          last = set;
          for (int f : set) sets_of[size_t(f)].push_back(int(sets.size()));
          sets.push_back(set);
        }
      }
  // The store sets: the layer before writes its rows (these neurons) in prev_order, a half-warp's 16 lanes one row
  // slot i at a time.
  std::vector<int> store_set(static_cast<size_t>(nn), -1);
  if (!prev_order.empty())
    for (int64_t k = 0; k < n; ++k) {
      const int64_t c = k / 128, r = k % 128, p = r >> 2, i = ((r & 3) - (p >> 1)) & 3;  // resident_vals4w_row inverted
      store_set[size_t(prev_order[size_t(k)])] = int((c * 2 + (p >> 4)) * 4 + i);
    }
  std::vector<std::array<int, 8>> store_count(static_cast<size_t>(n / 16 + 8));
  for (auto& a : store_count) a.fill(0);
  // Groups by a greedy colouring, neurons ascending: each takes the group, among those with names left, that the
  // fewest of its sets' members already hold (a read set's clash weighs 4, the 32 loads a chunk against 4 stores;
  // a store set takes 2 a group before it counts), ties to the group with the most names left.
  std::array<std::vector<int>, 8> names;
  for (int i = 0; i < nn; ++i) names[size_t(jhdnn::sparse::resident_bank_group(i, nn))].push_back(i);
  std::array<size_t, 8> used{};
  std::vector<int> group(static_cast<size_t>(nn), -1);
  for (int v = 0; v < nn; ++v) {
    std::array<int, 8> cost{};
    for (int sidx : sets_of[size_t(v)])
      for (int u : sets[size_t(sidx)])
        if (u != v && group[size_t(u)] >= 0) cost[size_t(group[size_t(u)])] += 4;
    if (store_set[size_t(v)] >= 0) {
      const std::array<int, 8>& held = store_count[size_t(store_set[size_t(v)])];
      for (int b = 0; b < 8; ++b) cost[size_t(b)] += std::max(0, held[size_t(b)] - 1);
    }
    int best = -1;
    for (int b = 0; b < 8; ++b) {
      const size_t left = names[size_t(b)].size() - used[size_t(b)];
      if (left == 0) continue;
      if (best < 0 || cost[size_t(b)] < cost[size_t(best)] ||
          (cost[size_t(b)] == cost[size_t(best)] && left > names[size_t(best)].size() - used[size_t(best)]))
        best = b;
    }
    group[size_t(v)] = best;
    if (store_set[size_t(v)] >= 0) ++store_count[size_t(store_set[size_t(v)])][size_t(best)];
    ++used[size_t(best)];
  }
  // Names: within a group, ascending names to ascending neurons.
  std::vector<int> label(static_cast<size_t>(nn));
  std::array<size_t, 8> next_name{};
  for (int v = 0; v < nn; ++v) {
    const size_t b = size_t(group[size_t(v)]);
    label[size_t(v)] = names[b][next_name[b]++];
  }
  return label;
}

Ell relabel_ell(const Ell& e, const std::vector<int>& in_labels, const std::vector<int>& out_labels) {
  check_labels(in_labels, e.cols, "relabel_ell in_labels");
  check_labels(out_labels, e.rows, "relabel_ell out_labels");
  const int64_t w = e.width;
  if (int64_t(e.idx.size()) != e.rows * w || int64_t(e.val.size()) != e.rows * w)
    throw std::invalid_argument("relabel_ell: idx / val do not hold rows x width entries");
  Ell r;
  r.rows = e.rows;
  r.cols = e.cols;
  r.width = w;
  r.idx.resize(e.idx.size());
  r.val.resize(e.val.size());
  for (int64_t j = 0; j < e.rows; ++j) {
    const int64_t to = out_labels.empty() ? j : out_labels[j];
    for (int64_t k = 0; k < w; ++k) {  // same k: the entry order (the fma chain's order) is what keeps it exact
      int i = e.idx[j * w + k];
      if (i >= e.cols) throw std::invalid_argument("relabel_ell: entry " + std::to_string(i) + " >= cols");
      if (i >= 0 && !in_labels.empty()) i = in_labels[i];
      r.idx[to * w + k] = i;
      r.val[to * w + k] = e.val[j * w + k];
    }
  }
  return r;
}

Csr relabel_columns(const Csr& m, const std::vector<int>& labels) {
  check_labels(labels, m.cols, "relabel_columns labels");
  Csr out = m;
  if (labels.empty()) return out;
  std::vector<std::pair<int, float>> row;
  for (int64_t r = 0; r < m.rows; ++r) {
    row.clear();
    for (int64_t k = m.ptr[r]; k < m.ptr[r + 1]; ++k) {
      if (m.idx[k] < 0 || m.idx[k] >= m.cols)
        throw std::invalid_argument("relabel_columns: column " + std::to_string(m.idx[k]) + " outside [0, cols)");
      row.emplace_back(labels[m.idx[k]], m.val[k]);
    }
    // Only the columns decide the order (a CSR's columns are distinct; stable keeps repeats as they were).
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t t = 0; t < row.size(); ++t) {
      out.idx[m.ptr[r] + int64_t(t)] = row[t].first;
      out.val[m.ptr[r] + int64_t(t)] = row[t].second;
    }
  }
  return out;
}

std::vector<int> map_order(const std::vector<int>& order, const std::vector<int>& out_labels) {
  if (out_labels.empty()) return order;
  std::vector<int> mapped(order.size());
  for (size_t k = 0; k < order.size(); ++k) {
    const int r = order[k];
    if (r < 0 || size_t(r) >= out_labels.size())
      throw std::invalid_argument("map_order: row " + std::to_string(r) + " outside out_labels");
    mapped[k] = out_labels[r];
  }
  return mapped;
}

Ell transpose_to_ell(const Csr& w) {
  const Csr t = transpose(w);
  Ell e;
  e.rows = t.rows;
  e.cols = t.cols;
  for (int64_t j = 0; j < t.rows; ++j) e.width = std::max(e.width, t.ptr[j + 1] - t.ptr[j]);
  if (e.width == 0) e.width = 1;
  e.idx.assign(e.rows * e.width, -1);
  e.val.assign(e.rows * e.width, 0.f);
  for (int64_t j = 0; j < t.rows; ++j)
    for (int64_t k = t.ptr[j]; k < t.ptr[j + 1]; ++k) {
      e.idx[j * e.width + (k - t.ptr[j])] = t.idx[k];
      e.val[j * e.width + (k - t.ptr[j])] = t.val[k];
    }
  return e;
}

Csr scale_images(const Csr& img, int64_t n) {
  int64_t f = 1;
  while (1024 * f * f < n) ++f;
  if (img.cols != 1024 || 1024 * f * f != n)
    throw std::invalid_argument("scale_images: takes 32 x 32 images (1024 columns, got " + std::to_string(img.cols) +
                                ") to 1024 f^2 columns (got " + std::to_string(n) + ")");
  Csr out;
  out.rows = img.rows;
  out.cols = n;
  out.ptr.assign(img.rows + 1, 0);
  const int64_t side = 32 * f;
  for (int64_t r = 0; r < img.rows; ++r) {
    std::vector<std::pair<int, float>> e;
    for (int64_t k = img.ptr[r]; k < img.ptr[r + 1]; ++k) {
      const int64_t py = img.idx[k] / 32, px = img.idx[k] % 32;
      for (int64_t dy = 0; dy < f; ++dy)
        for (int64_t dx = 0; dx < f; ++dx) e.emplace_back(int((py * f + dy) * side + px * f + dx), img.val[k]);
    }
    std::sort(e.begin(), e.end());
    for (auto& p : e) {
      out.idx.push_back(p.first);
      out.val.push_back(p.second);
    }
    out.ptr[r + 1] = int64_t(out.idx.size());
  }
  return out;
}

Csr tile_rows(const Csr& y, int64_t rows) {
  if (rows < 0 || (rows > 0 && y.rows <= 0))
    throw std::invalid_argument("tile_rows: " + std::to_string(rows) + " rows from " + std::to_string(y.rows));
  Csr out;
  out.rows = rows;
  out.cols = y.cols;
  out.ptr.assign(rows + 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = r % y.rows;
    for (int64_t k = y.ptr[s]; k < y.ptr[s + 1]; ++k) {
      out.idx.push_back(y.idx[k]);
      out.val.push_back(y.val[k]);
    }
    out.ptr[r + 1] = int64_t(out.idx.size());
  }
  return out;
}

CpuInference::CpuInference(const Csr& images) : n_(images.cols), rows_(images.rows) {
  for (int64_t r = 0; r < images.rows; ++r)
    for (int64_t k = images.ptr[r]; k < images.ptr[r + 1]; ++k)
      if (images.val[k] != 0.f) rows_[r].emplace_back(images.idx[k], double(images.val[k]));
}

void CpuInference::layer(const Csr& w, double bias, double clamp) {
  // Rows (images) are independent: split them over threads, each with its own scratch. Every row is
  // computed exactly as a single thread would (same order of additions), so results do not depend
  // on the thread count. (N = 65536, 1200 images x 120 layers: ~65 s on one core.)
  auto run = [&](size_t r0, size_t r1) {
    std::vector<double> acc(n_, 0.0);
    std::vector<char> touched(n_, 0);
    std::vector<int> list;
    for (size_t r = r0; r < r1; ++r) {
      auto& row = rows_[r];
      if (row.empty()) continue;  // a zero row stays zero (bias <= 0)
      list.clear();
      for (const auto& [i, y] : row)
        for (int64_t k = w.ptr[i]; k < w.ptr[i + 1]; ++k) {
          const int j = w.idx[k];
          if (!touched[j]) {
            touched[j] = 1;
            list.push_back(j);
          }
          acc[j] += y * double(w.val[k]);
        }
      std::sort(list.begin(), list.end());
      row.clear();
      for (int j : list) {
        // The bias is added where the product is nonzero (for bias <= 0 the same as everywhere).
        const double v = std::min(std::max(acc[j] + bias, 0.0), clamp);
        if (v != 0.0) row.emplace_back(j, v);
        acc[j] = 0.0;
        touched[j] = 0;
      }
    }
  };
  size_t live = 0;
  for (const auto& row : rows_) live += !row.empty();
  const size_t threads = std::min<size_t>({std::max(1u, std::thread::hardware_concurrency()), size_t(32),
                                           std::max<size_t>(1, live / 8)});
  if (threads <= 1) {
    run(0, rows_.size());
    return;
  }
  std::vector<std::thread> pool;
  const size_t per = (rows_.size() + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t) {
    const size_t r0 = std::min(rows_.size(), t * per), r1 = std::min(rows_.size(), r0 + per);
    if (r0 < r1) pool.emplace_back(run, r0, r1);
  }
  for (auto& th : pool) th.join();
}

int64_t CpuInference::active_rows() const {
  int64_t a = 0;
  for (const auto& r : rows_) a += !r.empty();
  return a;
}

std::vector<int> CpuInference::categories() const {
  std::vector<int> c;
  for (size_t r = 0; r < rows_.size(); ++r)
    if (!rows_[r].empty()) c.push_back(int(r));
  return c;
}

std::vector<double> CpuInference::dense_row(int64_t r) const {
  std::vector<double> d(n_, 0.0);
  for (const auto& [j, v] : rows_[r]) d[j] = v;
  return d;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string data_dir() {
  if (const char* e = std::getenv("JHDNN_SPDNN_DIR"); e && *e) return e;
#ifdef JHDNN_SOURCE_DIR
  return std::string(JHDNN_SOURCE_DIR) + "/data/spdnn";
#else
  return "data/spdnn";
#endif
}

}  // namespace spdnn
