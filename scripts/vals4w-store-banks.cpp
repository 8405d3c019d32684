// A host model of the vals4w kernel's output stores (4 STS.128 per warp-chunk) on the generated N = 4096
// layers 13-16 in the reuse order: per store and quarter warp (8 lanes, 16-byte rows), the wavefronts are
// the most rows in one bank group (feature row % 8). Checked against ncu's source counters at 5044f6f
// (bench/results/5044f6f/): model 10.38 / 6.78 per store instruction over layers 13-24, measured 10.34 / 6.60.
// It then searches the lanes' row orders that keep the header loads conflict-free (lane p's i-th row is
// 4p + ((i + a[p % 8]) & 3); even lanes' a distinct, odd lanes' a distinct), under resident_pos and under a
// 3-bit-fold permutation inside aligned groups of 8 rows (a candidate resident_pos for 16-byte rows).
//
//   scripts/build.sh   (once: build/tools/spdnn/libspdnn_tools.a)
//   g++ -O3 -std=c++17 -Itools/spdnn -Isrc -Iinclude scripts/vals4w-store-banks.cpp build/tools/spdnn/libspdnn_tools.a -o /tmp/store-banks
//   /tmp/store-banks
#include <algorithm>
#include <cstdio>
#include <vector>

#include "spdnn.h"
#include "sparse/sparse.h"

namespace {
constexpr int kN = 4096;

// 3-bit XOR-fold of row >> 3, applied inside aligned groups of 8 (rows from n & ~7 on kept).
int fold8_pos(int j, int n) {
  if (j >= (n & ~7)) return j;
  unsigned g = unsigned(j) >> 3, key = 0;
  while (g != 0) {
    key ^= g & 7u;
    g >>= 3;
  }
  return int(unsigned(j) ^ key);
}

// The feature rows of every chunk's 128 rows, for layers first..last.
std::vector<std::vector<int>> chunk_rows(int first, int last, bool fold8) {
  std::vector<std::vector<int>> out;
  for (int layer = first; layer <= last; ++layer) {
    const spdnn::Ell e = spdnn::generate_layer_ell(kN, layer, 42);
    const std::vector<int> ord = spdnn::reuse_order(e);
    for (int c = 0; c < kN / 128; ++c) {
      std::vector<int> p(128);
      for (int r = 0; r < 128; ++r) {
        const int j = ord[size_t(c) * 128 + size_t(r)];
        p[size_t(r)] = fold8 ? fold8_pos(j, kN) : jhdnn::sparse::resident_pos(j, kN);
      }
      out.push_back(std::move(p));
    }
  }
  return out;
}

// Wavefronts per store instruction (4 quarters), averaged over the chunks and the 4 stores.
double store_cost(const std::vector<std::vector<int>>& rows, const int (&a)[8]) {
  long wf = 0;
  for (const auto& p : rows)
    for (int qw = 0; qw < 4; ++qw)
      for (int s = 0; s < 4; ++s) {
        int cnt[8] = {};
        for (int t = 0; t < 8; ++t) {
          const int lane = qw * 8 + t;
          ++cnt[p[size_t(4 * lane + ((s + a[t]) & 3))] & 7];
        }
        wf += *std::max_element(cnt, cnt + 8);
      }
  return double(wf) / double(rows.size() * 4);
}

// The best header-compatible rotations (a[0] = 0: rotating every lane alike changes nothing).
double search(const std::vector<std::vector<int>>& rows, int (&best)[8]) {
  double bc = 1e30;
  for (int code = 0; code < (1 << 16); ++code) {
    int a[8];
    for (int t = 0; t < 8; ++t) a[t] = (code >> (2 * t)) & 3;
    bool ok = a[0] == 0;
    for (int x = 0; x < 8 && ok; ++x)
      for (int y = x + 2; y < 8 && ok; y += 2) ok = a[x] != a[y];
    if (!ok) continue;
    const double c = store_cost(rows, a);
    if (c < bc) {
      bc = c;
      std::copy(a, a + 8, best);
    }
  }
  return bc;
}
}  // namespace

int main() {
  const int kernel[8] = {0, 0, 1, 1, 2, 2, 3, 3};  // dnn_resident_vals4w_kernel: a = p >> 1
  const auto check = chunk_rows(13, 24, false);
  std::printf("resident_pos, the kernel's order, layers 13-24, per store s:");
  for (int s = 0; s < 4; ++s) {
    long wf = 0;
    for (const auto& p : check)
      for (int qw = 0; qw < 4; ++qw) {
        int cnt[8] = {};
        for (int t = 0; t < 8; ++t) ++cnt[p[size_t(4 * (qw * 8 + t) + ((s + kernel[t]) & 3))] & 7];
        wf += *std::max_element(cnt, cnt + 8);
      }
    std::printf(" %.2f", double(wf) / double(check.size()));
  }
  std::printf("  (ideal 4)\n");
  for (bool fold8 : {false, true}) {
    const auto rows = chunk_rows(13, 16, fold8);
    int best[8];
    const double bc = search(rows, best);
    std::printf("%s: the kernel's order %.3f per store, best header-compatible order %.3f (a =",
                fold8 ? "3-bit fold in groups of 8" : "resident_pos", store_cost(rows, kernel), bc);
    for (int t = 0; t < 8; ++t) std::printf(" %d", best[t]);
    std::printf(")\n");
  }
  return 0;
}
