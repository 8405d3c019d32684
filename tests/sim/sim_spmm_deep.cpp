// CPU transliteration of spmm_nnz_deep<kDepth> (src/sparse/spmm.cu), split_rows_prepare and the
// store_segment rule: a warp is 32 lanes in lockstep (ballot, shuffles and the shfl_xor(16) as array
// reads), run over power-law CSR matrices (Pareto 1.5 lengths, empty rows, a 3000- and a 700-long row, a
// full row), both depths, row- and column-major C (ldc % 4 == 0: the float4 stores), grid.y 1 / 2 / all
// bands, beta 0 (C NaN) and 0.5, n = 3..200 with zero-padded B rows; checked against a float64 sum (1e-5
// relative) and the C padding untouched.
//   g++ -O2 -std=c++17 -Wall -Wextra -o /tmp/sim_spmm_deep tests/sim/sim_spmm_deep.cpp && /tmp/sim_spmm_deep
// Prints one line per configuration and "0 failing" (exit 0). Written without a GPU (branch
// wip-spmm-powerlaw): 384 configurations ok, ~4 s; mutating the half-warp offset, the p < p_end bound, the
// half-warp reduction or the float4 store's one-chunk condition makes it fail (384 failing / "sp oob" /
// 336 failing / 72 failing).
#include <cstdio>
#include <cstdint>
#include <cmath>
#include <vector>
#include <random>
#include <algorithm>
#include <cstring>
constexpr int kChunk = 256, kWarps = 8;
struct I2 { int x, y; };
struct float4 { float x, y, z, w; };
static bool row_in_one_chunk(int64_t rs, int64_t re) { return re > rs && rs / kChunk == (re - 1) / kChunk; }
static int64_t at(bool row, int64_t r, int64_t c, int64_t ld) { return row ? r * ld + c : c * ld + r; }
template <int kDepth>
void emu(int64_t m, int64_t n, int64_t nnz, const int* rp, const int* ci, const float* va, const float* b, int64_t ldb,
         bool crow, bool c_vec4, float alpha, float beta, float* c, int64_t ldc, int64_t gridy) {
  // prepare
  for (int64_t row = 0; row < m; ++row)
    if (!row_in_one_chunk(rp[row], rp[row + 1]))
      for (int64_t j = 0; j < n; ++j) { float* p = c + at(crow, row, j, ldc); *p = beta == 0.f ? 0.f : beta * *p; }
  const int L = 16, V = 4, kH = 2;
  const int64_t warps = (nnz + kChunk - 1) / kChunk;
  const int64_t nblocks = (warps + kWarps - 1) / kWarps;
  for (int64_t by = 0; by < gridy; ++by)
  for (int64_t bx = 0; bx < nblocks; ++bx)
    for (int wib = 0; wib < kWarps; ++wib) {
      const int64_t w = bx * kWarps + wib, e_begin = w * kChunk;
      if (e_begin >= nnz) continue;
      const int64_t e_end = std::min(nnz, e_begin + kChunk);
      I2 sp[kChunk];
      for (int lane = 0; lane < 32; ++lane)
        for (int i = lane; i < kChunk; i += 32) {
          const int64_t e = e_begin + i;
          if (e < e_end) { sp[i].x = ci[e]; std::memcpy(&sp[i].y, &va[e], 4); } else sp[i] = {0, 0};
        }
      int64_t lo = 0, hi = m;
      while (hi - lo > 1) {
        const int64_t step = (hi - lo + 31) / 32;
        int cnt = 0; bool prefix = true;
        for (int lane = 0; lane < 32; ++lane) {
          const int64_t p = lo + (int64_t(lane) + 1) * step;
          const bool le = p < hi && rp[p] <= e_begin;
          if (le && !prefix) { std::printf("ballot not a prefix\n"); std::exit(1); }
          if (!le) prefix = false;
          cnt += le;
        }
        lo += cnt * step;
        hi = std::min(hi, lo + step);
      }
      const int64_t first_row = lo;
      int64_t win = first_row;
      int rpw[32];
      auto load_win = [&]() { for (int l = 0; l < 32; ++l) rpw[l] = rp[std::min(win + l, m)]; };
      load_win();
      const int64_t bands = (n + L * V - 1) / (L * V);
      for (int64_t band = by; band < bands; band += gridy) {
        int64_t row = first_row;
        if (win != first_row) { win = first_row; load_win(); }
        int64_t rs = rpw[0];
        for (int64_t e = e_begin; e < e_end; ++row) {
          if (row + 1 - win >= 32) { win = row; load_win(); }
          const int64_t idx = row + 1 - win;
          if (idx < 0 || idx > 31) { std::printf("bad shfl idx\n"); std::exit(1); }
          const int64_t re = rpw[idx];
          const int64_t se = std::min(re, e_end);
          if (se > e) {
            const int p_end = int(se - e_begin);
            float acc[32][4] = {};
            for (int p0 = int(e - e_begin); p0 < p_end; p0 += kH * kDepth)
              for (int lane = 0; lane < 32; ++lane) {
                const int grp = lane / L;
                const int64_t j = band * L * V + int64_t(lane % L) * V;
                const bool has = j < n;
                float4 x[kDepth]; float wv[kDepth];
                for (int t = 0; t < kDepth; ++t) {
                  const int p = p0 + kH * t + grp;
                  const bool ok = p < p_end;
                  const int q = ok ? p : 0;
                  if (q < 0 || q >= kChunk) { std::printf("sp oob\n"); std::exit(1); }
                  const I2 pr = sp[q];
                  float vv; std::memcpy(&vv, &pr.y, 4);
                  wv[t] = ok ? vv : 0.f;
                  if (has && ok) {
                    const float* bp = b + j + int64_t(pr.x) * ldb;
                    x[t] = {bp[0], bp[1], bp[2], bp[3]};
                  } else x[t] = {0, 0, 0, 0};
                }
                for (int t = 0; t < kDepth; ++t) {
                  acc[lane][0] += wv[t] * x[t].x; acc[lane][1] += wv[t] * x[t].y;
                  acc[lane][2] += wv[t] * x[t].z; acc[lane][3] += wv[t] * x[t].w;
                }
              }
            float red[32][4];
            for (int lane = 0; lane < 32; ++lane) for (int q = 0; q < 4; ++q) red[lane][q] = acc[lane][q] + acc[lane ^ 16][q];
            for (int lane = 0; lane < 16; ++lane) {
              const int64_t j = band * L * V + int64_t(lane % L) * V;
              if (j >= n) continue;
              if (c_vec4 && j + V <= n && row_in_one_chunk(rs, re)) {  // the float4 store
                float* p = c + row * ldc + j;
                if ((reinterpret_cast<uintptr_t>(p) & 15) != 0) { std::printf("misaligned float4 store\n"); std::exit(1); }
                float o[4];
                for (int q = 0; q < 4; ++q) o[q] = p[q];
                for (int q = 0; q < 4; ++q) p[q] = beta == 0.f ? alpha * red[lane][q] : alpha * red[lane][q] + beta * o[q];
                continue;
              }
              for (int q = 0; q < V; ++q) {
                if (j + q >= n) continue;
                float* p = c + at(crow, row, j + q, ldc);
                if (row_in_one_chunk(rs, re)) *p = beta == 0.f ? alpha * red[lane][q] : alpha * red[lane][q] + beta * *p;
                else *p += alpha * red[lane][q];
              }
            }
            e = se;
          }
          rs = re;
        }
      }
    }
}

int main() {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> U(0, 1);
  int fails = 0;
  struct Case { int64_t m, k, n; int kind; };
  for (Case cs : {Case{2000, 6000, 64, 0}, Case{1500, 4000, 132, 0}, Case{300, 5000, 68, 1}, Case{1, 1, 4, 2}, Case{37, 53, 8, 0}, Case{5000, 9000, 200, 0}, Case{700, 900, 70, 0}, Case{900, 800, 3, 0}}) {
    std::vector<int> rp(cs.m + 1, 0), ci; std::vector<float> va;
    for (int64_t r = 0; r < cs.m; ++r) {
      int64_t len = int64_t(16 / 3.0 * std::pow(U(g) + 1e-12, -1.0 / 1.5));
      if (r % 7 == 3) len = 0;
      if (cs.kind == 0 && r == 5) len = 3000;
      if (cs.kind == 0 && r == cs.m - 2) len = 700;
      if (cs.kind == 1 && r == 7) len = cs.k;
      len = std::min(len, cs.k);
      std::vector<int> cols;
      if (cs.kind == 1 && r == 7) for (int t = 0; t < cs.k; ++t) cols.push_back(t);
      else for (int64_t t = 0; t < len; ++t) cols.push_back(int(g() % cs.k));
      std::sort(cols.begin(), cols.end()); cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
      for (int cc : cols) { ci.push_back(cc); va.push_back(float(U(g) * 2 - 1)); }
      rp[r + 1] = int(ci.size());
    }
    const int64_t nnz = ci.size();
    for (int cpad : {3, 4})
    for (bool crow : {true, false})
    for (int64_t gy : {int64_t(1), int64_t(2), int64_t(65535)})
    for (float beta : {0.f, 0.5f}) for (int depth : {4, 8}) {
      const int64_t ldb = (cs.n + 3) / 4 * 4 + 4;  // padded rows (transposed-workspace style when n % 4 != 0)
      std::vector<float> b(cs.k * ldb);
      for (int64_t kk = 0; kk < cs.k; ++kk) for (int64_t j = 0; j < ldb; ++j) b[kk * ldb + j] = j < cs.n ? float(U(g) * 2 - 1) : 0.f;
      const int64_t ldc = (crow ? (cpad == 4 ? (cs.n + 3) / 4 * 4 : cs.n) : cs.m) + cpad;
      const int64_t csz = ldc * (crow ? cs.m : cs.n);
      const bool c_vec4 = crow && ldc % 4 == 0;  // std::vector<float>'s buffer is 16-byte aligned (checked per store)
      std::vector<float> c0(csz); for (auto& v : c0) v = float(U(g) * 2 - 1);
      std::vector<float> c = c0;
      if (beta == 0.f) for (int64_t r = 0; r < cs.m; ++r) for (int64_t j = 0; j < cs.n; ++j) c[at(crow, r, j, ldc)] = NAN;
      const std::vector<float> cinit = c;
      const int64_t bands = (cs.n + 63) / 64, gridy = std::min(bands, gy);
      if (depth == 4) emu<4>(cs.m, cs.n, nnz, rp.data(), ci.data(), va.data(), b.data(), ldb, crow, c_vec4, 1.25f, beta, c.data(), ldc, gridy);
      else emu<8>(cs.m, cs.n, nnz, rp.data(), ci.data(), va.data(), b.data(), ldb, crow, c_vec4, 1.25f, beta, c.data(), ldc, gridy);
      int bad = 0;
      for (int64_t r = 0; r < cs.m; ++r) for (int64_t j = 0; j < cs.n; ++j) {
        double s = 0, sa = 0;
        for (int e = rp[r]; e < rp[r + 1]; ++e) { const double p = double(va[e]) * b[ci[e] * ldb + j]; s += p; sa += std::fabs(p); }
        const int64_t o = at(crow, r, j, ldc);
        const double ref = 1.25 * s + (beta != 0 ? beta * double(c0[o]) : 0.0);
        const double tol = 1e-5 * (1.25 * sa + std::fabs(beta * c0[o])) + 1e-30;
        if (!(std::fabs(c[o] - ref) <= tol)) { if (bad++ < 3) std::printf("  C(%lld,%lld)=%g ref %g\n", (long long)r, (long long)j, c[o], ref); }
      }
      // padding untouched
      const int64_t outer = crow ? cs.m : cs.n, inner = crow ? cs.n : cs.m;
      for (int64_t o = 0; o < outer; ++o) for (int64_t p = inner; p < ldc; ++p) if (std::memcmp(&c[o * ldc + p], &cinit[o * ldc + p], 4)) ++bad;
      std::printf("ldc %lld vec4 %d m %lld n %lld nnz %lld crow %d gridy %lld beta %g depth %d: %s\n", (long long)ldc, c_vec4, (long long)cs.m, (long long)cs.n, (long long)nnz, crow, (long long)gridy, beta, depth, bad ? "BAD" : "ok");
      fails += bad != 0;
    }
  }
  std::printf("%d failing\n", fails);
  return fails != 0;
}
