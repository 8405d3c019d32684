// Shared pieces of the host emulations of the fused sparse-DNN layer's tiles
// (tests/test_spdnn_reuse_tile.cpp: single / block / list; tests/test_spdnn_cta_tile.cpp: the CTA tile):
// the random source, the layer type, the CPU chain every output must equal bitwise, the output check
// (every output written once, nothing outside the valid columns, bitwise values, exact flags), and the
// aligned-16-row-block layer both use.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "spdnn/spdnn.h"

namespace spdnn_emu {

struct Rng {  // splitmix64
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
};

inline uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

struct Layer {
  spdnn::Ell e;            // width 32; padding idx -1 with a NaN value
  std::vector<int> order;  // empty: natural order
};

constexpr float kPoison = -12345.f;  // the emulated y before the kernel writes it

// The CPU chain for output j of the image in column c: what the kernel must produce, bitwise.
inline float chain32(const spdnn::Ell& e, const std::vector<float>& x, int64_t ldx, int64_t j, int64_t c, float bias,
                     float clamp_max) {
  float acc = 0.f;
  for (int k = 0; k < 32; ++k) {
    const int i = e.idx[size_t(j) * 32 + k];
    acc = std::fma(i >= 0 ? e.val[size_t(j) * 32 + k] : 0.f, i >= 0 ? x[size_t(i * ldx + c)] : 0.f, acc);
  }
  return std::min(std::max(acc + bias, 0.f), clamp_max);
}

struct Check {
  int64_t written_twice = 0, missing = 0, stray = 0, wrong = 0, flag_wrong = 0;
  bool ok() const { return written_twice == 0 && missing == 0 && stray == 0 && wrong == 0 && flag_wrong == 0; }
};

// res: an emulation's result with y (n_out x ldy, kPoison where never written), writes (per element of y)
// and flags (per active position). rows: the active list (column of position r).
template <class Result>
Check check(const Layer& L, const std::vector<float>& x, int64_t ldx, const std::vector<int>& rows, int count,
            int64_t ldy, float bias, float clamp_max, const Result& res) {
  Check c;
  for (int64_t j = 0; j < L.e.rows; ++j)
    for (int64_t col = 0; col < ldy; ++col) {
      const size_t at = size_t(j * ldy + col);
      if (col >= count) {
        c.stray += res.writes[at] != 0 || bits(res.y[at]) != bits(kPoison);
        continue;
      }
      c.written_twice += res.writes[at] > 1;
      c.missing += res.writes[at] == 0;
      const float want = chain32(L.e, x, ldx, j, rows[size_t(col)], bias, clamp_max);
      c.wrong += bits(res.y[at]) != bits(want);
    }
  for (int r = 0; r < count; ++r) {
    bool any = false;
    for (int64_t j = 0; j < L.e.rows; ++j) any = any || res.y[size_t(j * ldy + r)] != 0.f;
    c.flag_wrong += res.flags[size_t(r)] != int(any);
  }
  return c;
}

// An n x n width-32 layer with every slot padding (index -1; value NaN, which no output may use), for the
// generators to fill.
inline Layer blank_layer(int64_t n) {
  Layer L;
  L.e.rows = L.e.cols = n;
  L.e.width = 32;
  L.e.idx.assign(size_t(n) * 32, -1);
  L.e.val.assign(size_t(n) * 32, std::numeric_limits<float>::quiet_NaN());
  return L;
}

// Aligned 16-row blocks (natural order; n need not be a multiple of 16): one unpadded list (60%), one
// list with a padding entry (20%), or two lists of 8 rows (20%): list steps and block steps in one chunk.
// split_every > 0: instead, block b is two lists of 8 rows iff b % split_every == 0, else one unpadded list.
inline Layer mixed_blocks(int64_t n, Rng& g, int split_every = 0) {
  Layer L = blank_layer(n);
  spdnn::Ell& e = L.e;
  int list[2][32];
  for (int64_t j = 0; j < n; ++j) {
    if (j % 16 == 0) {
      const double u = split_every <= 0 ? g.uniform() : (j / 16) % split_every == 0 ? 0.9 : 0.0;
      const int kind = u < 0.6 ? 0 : u < 0.8 ? 1 : 2;
      for (auto& li : list)
        for (int& i : li) i = int(g.next() % uint64_t(n));
      if (kind == 1) list[0][g.next() % 32] = -1;               // one padding entry
      if (kind != 2) std::copy(list[0], list[0] + 32, list[1]);  // one list for the 16 rows
    }
    const int* li = list[(j % 16) / 8];
    for (int k = 0; k < 32; ++k) {
      e.idx[size_t(j) * 32 + k] = li[k];
      if (li[k] >= 0) e.val[size_t(j) * 32 + k] = float(g.uniform() * 0.05 - 0.01);
    }
  }
  return L;
}

}  // namespace spdnn_emu
