// tensorcore_wgmma_smallc's transform on the CPU, no GPU needed (src/conv/tensorcore/smallc.h;
// README.md "Round 6", section 1): the packed problem (F filter rows and the S filter columns folded
// into whole 128-byte pixel rows) computes exactly the original convolution, for EVERY fold F the
// pack allows (forced through smallc_geom(p, F) / smallc_problem(p, F)). x and w are packed on the
// host with the SAME functions the CUDA packing kernels run (smallc_taps + smallc_x_vector for x,
// smallc_w_source for w), the float64 reference convolves the packed tensors with
// smallc_problem(p, F), and the result must equal the reference of p itself -- over C = 1 .. 7,
// 1x1 .. 11x11 filters, R != S, strides 1 .. 4, paddings 0 .. 4, dilations 1 .. 2 (h and w),
// CONVOLUTION mode, NCHW / NHWC x and KCRS / KRSC w, fp16 and fp32 packing widths. The cost model's
// picks for the real first layers are pinned too. The GPU runs of the path (every problem of the
// shared set it takes, every forced kernel configuration, forced folds, both epilogues, with and
// without workspace) are in test_conv_tensorcore.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/problems.h"
#include "common/reference.h"
#include "common/test_util.h"
#include "conv/depthwise/depthwise.h"
#include "conv/solver.h"
#include "conv/tensorcore/smallc.h"
#include "conv/tensorcore/tensorcore.h"
#include "conv/tensorcore/wgmma_plan.h"
#include "core/conv_problem.h"
#include "core/device_info.h"

using namespace jhdnn;
using namespace jhdnn::test;
using core::ConvProblem;
namespace tc = jhdnn::conv::tensorcore;

namespace {

// The row-staged pass (smallc_pack_x_rows) as the kernel runs it with k packed rows per block:
// every block of the launch (smallc_row_chunks, smallc_row_block), phase 1 through the kernel's copy
// (vectorized: smallc_stage_vector, V elements at a time; element-wise: smallc_stage_source, for a
// contiguous row also as base + i, the kernel's shortcut) into a stage of the launch's size, poisoned
// with NaN before each block; phase 2 through every thread's smallc_row_cursor walk and
// smallc_row_index. Returns the number of defects: a vector written other than once, an element
// unequal to smallc_x_source (a NaN never is equal), a staged element unequal to the element-wise
// source, a cursor out of step, an index past the stage.
int64_t g_vec_checks = 0;

template <int V>
int64_t check_rows_pass(const tc::SmallCGeom& g, const std::vector<double>& x, uint32_t k, uint32_t pitch, bool vec) {
  int64_t bad = 0;
  const tc::SmallCRowTaps rt = tc::smallc_row_taps(g, pitch);
  const uint32_t chunks = tc::smallc_row_chunks(g, k), wc = uint32_t(g.W * g.C);
  const uint32_t vp = uint32_t(g.Cs / V), ppi = uint32_t(tc::kSmallCPackThreads) / vp;
  const size_t stage_elems = size_t(k + (g.F - 1) * g.dil_h) * pitch;  // the launch's shared memory
  if (pitch < wc || (vec && pitch % V != 0)) ++bad;
  const bool contiguous = g.xs[1] == 1 && g.xs[4] == g.C;
  std::vector<double> xs(size_t(g.N * g.Hp * g.Q * g.Cs), std::nan("")), stage(stage_elems);
  std::vector<int> writes(xs.size() / V, 0);
  for (uint32_t blk = 0; blk < uint32_t(g.N) * chunks; ++blk) {
    const tc::SmallCRowBlock b = tc::smallc_row_block(g, k, chunks, blk);
    const uint32_t nst = tc::smallc_stage_rows(g, b.rows);
    if (b.rows < 1 || b.rows > k || size_t(nst) * pitch > stage_elems) {
      ++bad;
      continue;
    }
    std::fill(stage.begin(), stage.end(), std::nan(""));
    if (vec) {
      const uint32_t rowvec = wc / V;
      for (uint32_t m = 0; m < nst * rowvec; ++m) {
        uint32_t r = 0, col = 0;
        const int64_t src = tc::smallc_stage_vector(g, V, rowvec, b.n, b.u0, m, r, col);
        if (r >= nst || col >= rowvec) {
          ++bad;
          continue;
        }
        for (int e = 0; e < V; ++e) {
          const size_t at = size_t(r) * pitch + size_t(col) * V + size_t(e);  // st[r * pitch / V + col], element e
          stage[at] = src >= 0 ? x[size_t(src + e)] : 0.0;
          const int64_t want = tc::smallc_stage_source(g, b.n, b.u0, r, int64_t(col) * V + e);
          if (!(stage[at] == (want >= 0 ? x[size_t(want)] : 0.0))) ++bad;
        }
      }
    } else {
      for (uint32_t r = 0; r < nst; ++r) {
        const int64_t h = int64_t(b.u0) - g.pad_h + int64_t(r);
        for (uint32_t i = 0; i < wc; ++i) {
          const int64_t off = tc::smallc_stage_source(g, b.n, b.u0, r, i);
          if (contiguous && off >= 0 && off != int64_t(b.n) * g.xs[0] + h * g.xs[3] + i) ++bad;
          stage[size_t(r) * pitch + i] = off >= 0 ? x[size_t(off)] : 0.0;
        }
      }
    }
    const uint32_t npix = b.rows * uint32_t(g.Q);
    for (uint32_t t = 0; t < uint32_t(tc::kSmallCPackThreads); ++t) {
      const uint32_t slot = t / vp, v = t % vp;
      if (slot >= ppi) continue;
      for (tc::SmallCRowCursor c = tc::smallc_row_cursor(g, slot); c.p < npix; tc::smallc_row_advance(g, ppi, c)) {
        if (c.q >= uint32_t(g.Q) || c.i * uint32_t(g.Q) + c.q != c.p || c.i >= b.rows) ++bad;
        const size_t vec_at = size_t(((int64_t(b.n) * g.Hp + b.u0) * g.Q + c.p) * vp + v);
        if (vec_at >= writes.size()) {  // past xs (a block past its image's last row)
          ++bad;
          break;
        }
        ++writes[vec_at];
        for (int e = 0; e < V; ++e) {
          const uint32_t j = v * V + uint32_t(e);
          const int32_t i = tc::smallc_row_index(g, pitch, rt.soff[j], rt.dw[j], c.i, c.q);
          if (i >= int32_t(size_t(nst) * pitch)) {
            ++bad;
            continue;
          }
          xs[vec_at * V + size_t(e)] = i >= 0 ? stage[size_t(i)] : 0.0;
        }
      }
    }
  }
  for (const int w : writes) bad += w != 1;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t u = 0; u < g.Hp; ++u)
      for (int64_t q = 0; q < g.Q; ++q)
        for (int64_t j = 0; j < g.Cs; ++j) {
          const int64_t off = tc::smallc_x_source(g, n, u, q, j);
          const double want = off >= 0 ? x[size_t(off)] : 0.0;
          if (!(xs[size_t(((n * g.Hp + u) * g.Q + q) * g.Cs + j)] == want)) ++bad;
        }
  return bad;
}

// xs of p with fold F (packed NHWC, N x Hp x Q x Cs) built as the kernel builds it: every block and
// thread of the pack_x launch (smallc_pack_chunks, smallc_pack_slot), each writing its vector of
// up to kSmallCPackIters pixels through smallc_x_vector with the host's tap table. Every vector must
// be written exactly once (*bad counts the others), and every element must equal smallc_x_source
// (the closed form, with divisions; *bad counts mismatches too).
template <int V>
std::vector<double> pack_x(const ConvProblem& p, int64_t F, const std::vector<double>& x, int64_t* bad) {
  const tc::SmallCGeom g = tc::smallc_geom(p, F);
  const tc::SmallCTaps taps = tc::smallc_taps(g);
  const int64_t vp = g.Cs / V, chunks = tc::smallc_pack_chunks(g, V);
  std::vector<double> xs(size_t(g.N * g.Hp * g.Q * g.Cs), std::nan(""));
  std::vector<int> writes(xs.size() / V, 0);
  for (int64_t b = 0; b < g.N * g.Hp * chunks; ++b)
    for (uint32_t t = 0; t < uint32_t(tc::kSmallCPackThreads); ++t) {
      const tc::SmallCPackSlot sl = tc::smallc_pack_slot(g, V, uint32_t(chunks), uint32_t(b), t);
      if (!sl.active) continue;
      for (int k = 0; k < tc::kSmallCPackIters; ++k) {
        const int64_t q = int64_t(sl.q0) + k * int64_t(sl.ppi);
        if (q >= g.Q) break;
        const int64_t vec = (int64_t(sl.row) * g.Q + q) * vp + sl.v;
        ++writes[size_t(vec)];
        double out[V];
        tc::smallc_x_vector<double, V>(g, taps.tap + sl.v * V, x.data(), sl.n, sl.u, q, out);
        for (int e = 0; e < V; ++e) xs[size_t(vec * V + e)] = out[e];
      }
    }
  for (const int w : writes) *bad += w != 1;
  // The row-staged pass (smallc_pack_x_rows) as the kernel runs it, with the launch's block height
  // k and for every other k the pass allows too when the tensor is small (partial last blocks,
  // windows of 1 .. 8 rows); element-wise and, where the geometry allows it, vectorized staging.
  const int64_t kpick = tc::smallc_rows_per_block(g, V == 8 ? 2 : 4);
  const bool small = g.N * g.Hp * g.Q * g.Cs < (int64_t(1) << 20);
  if (kpick < 1 || kpick > tc::kSmallCRowsPerBlockMax || kpick > g.Hp) ++*bad;  // every shape here fits
  for (int64_t k = 1; k <= tc::kSmallCRowsPerBlockMax; ++k) {
    if (!(k == 1 || k == kpick || (small && k <= g.Hp))) continue;
    // The launch's pitch (the bank model's pick) and, for small tensors, the base pitch + 3 vectors.
    const int64_t pick = tc::smallc_stage_pitch(g, V == 8 ? 2 : 4), base = (g.W * g.C + V - 1) / V * V;
    if (pick < base || pick >= base + 8 * V || pick % V != 0) ++*bad;
    for (const int64_t pitch : {pick, base + 3 * V}) {
      if (pitch != pick && (!small || k != kpick)) continue;
      *bad += check_rows_pass<V>(g, x, uint32_t(k), uint32_t(pitch), false);
      if (tc::smallc_stage_vectorized(g, V))
        *bad += check_rows_pass<V>(g, x, uint32_t(k), uint32_t(pitch), true), ++g_vec_checks;
    }
  }
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t u = 0; u < g.Hp; ++u)
      for (int64_t q = 0; q < g.Q; ++q)
        for (int64_t j = 0; j < g.Cs; ++j) {
          const int64_t off = tc::smallc_x_source(g, n, u, q, j);
          const double want = off >= 0 ? x[size_t(off)] : 0.0;
          if (!(xs[size_t(((n * g.Hp + u) * g.Q + q) * g.Cs + j)] == want)) ++*bad;
        }
  return xs;
}

std::vector<double> pack_w(const ConvProblem& p, int64_t F, const std::vector<double>& w) {
  const tc::SmallCGeom g = tc::smallc_geom(p, F);
  std::vector<double> ws(size_t(g.K * g.Rf * g.Cs));
  for (int64_t k = 0; k < g.K; ++k)
    for (int64_t r = 0; r < g.Rf; ++r)
      for (int64_t j = 0; j < g.Cs; ++j) {
        const int64_t off = tc::smallc_w_source(g, k, r, j);
        ws[size_t((k * g.Rf + r) * g.Cs + j)] = off >= 0 ? w[size_t(off)] : 0.0;
      }
  return ws;
}

struct Shape {
  std::string name;
  ConvProblem p;  // FLOAT, packed NCHW / KCRS (re-laid below)
};

ConvProblem p2d(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int ph, int pw, int sh,
                int sw, int dh, int dw, jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION) {
  return core::make_problem_2d(JHDNN_DATA_FLOAT, false, N, C, H, W, K, R, S, ph, pw, sh, sw, dh, dw, 1, mode);
}

std::vector<Shape> shapes() {
  return {
      {"rn50_conv1_7x7s2_small", p2d(2, 3, 19, 17, 8, 7, 7, 3, 3, 2, 2, 1, 1)},
      {"vgg_conv1_1_small", p2d(2, 3, 9, 11, 5, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"c1_5x5", p2d(1, 1, 8, 9, 3, 5, 5, 2, 2, 1, 1, 1, 1)},
      {"c5_r3_s5_dil2_sw3_pw4", p2d(2, 5, 10, 23, 4, 3, 5, 1, 4, 2, 3, 1, 2)},
      {"c7_convmode_3x2", p2d(1, 7, 6, 7, 6, 3, 2, 1, 1, 1, 2, 2, 1, JHDNN_CONVOLUTION)},
      {"c3_convmode_7x7s2", p2d(1, 3, 13, 12, 4, 7, 7, 3, 3, 2, 2, 1, 1, JHDNN_CONVOLUTION)},
      {"alexnet_c3_11x11s4", p2d(1, 3, 31, 29, 4, 11, 11, 2, 2, 4, 4, 1, 1)},
      {"c2_1x1_s2", p2d(2, 2, 7, 9, 3, 1, 1, 0, 0, 2, 2, 1, 1)},
      {"c4_pad_past_filter", p2d(1, 4, 3, 3, 2, 3, 3, 3, 4, 1, 1, 1, 1)},
      {"c3_7x7_dilh2_s3x1", p2d(2, 3, 23, 10, 3, 7, 7, 3, 2, 3, 1, 2, 1)},
      {"c6_5x3_dil2x2_p0_s4", p2d(1, 6, 25, 14, 5, 5, 3, 0, 0, 4, 2, 2, 2)},
      {"c2_6x1_p3_convmode_dilh2", p2d(2, 2, 11, 5, 3, 6, 1, 3, 0, 1, 1, 2, 1, JHDNN_CONVOLUTION)},
      {"c1_7x4_s3_p2", p2d(1, 1, 16, 13, 2, 7, 4, 2, 3, 3, 4, 1, 1)},
      // Wide rows: several pack_x iterations and chunks per row (Q = 300 > 128 pixels per block),
      // and F up to 10 (fp32 Cs 96: 24 vectors per pixel, 16 idle threads per block).
      // Rows whose W*C is a multiple of 8 (and of 4): the row-staged pass's 16-byte staging in NHWC.
      {"c3_w16_7x7s2_vec", p2d(2, 3, 12, 16, 4, 7, 7, 3, 3, 2, 2, 1, 1)},
      {"c4_w10_5x3_dilh2_vec", p2d(2, 4, 13, 10, 3, 5, 3, 2, 1, 1, 1, 2, 1)},
      {"c3_wide_q300", p2d(1, 3, 6, 300, 2, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"c3_r10_s3_wide_q150", p2d(1, 3, 14, 150, 2, 10, 3, 2, 1, 1, 1, 1, 1)},
  };
}

// max |a - b| / (1 + |b|) over all outputs.
double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(a[i] - b[i]) / (1.0 + std::fabs(b[i])));
  return m;
}

template <int V>
void check_transform(const Shape& sh, jhdnnDataType_t dt, bool nhwc, bool krsc, int64_t F) {
  ConvProblem p = with_layout(sh.p, dt, nhwc);
  if (krsc != nhwc) {  // with_layout sets both; cover the mixed layouts too
    const ConvProblem other = with_layout(sh.p, dt, krsc);
    for (int i = 0; i < 5; ++i) p.w_stride[i] = other.w_stride[i];
  }
  INFO(sh.name << " " << core::data_type_name(dt) << (nhwc ? " NHWC x" : " NCHW x") << (krsc ? " KRSC w" : " KCRS w")
               << " fold " << F);
  REQUIRE(tc::smallc_shape_reason(p) == nullptr);
  REQUIRE(tc::smallc_fold_reason(p, F) == nullptr);
  const ConvProblem q = tc::smallc_problem(p, F);
  const int64_t B = 128 / (dt == JHDNN_DATA_FLOAT ? 4 : 2);
  REQUIRE(q.P == p.P);
  REQUIRE(q.Q == p.Q);
  CHECK(q.C % B == 0);  // whole 128-byte rows
  CHECK(q.C >= F * p.S * p.C);
  CHECK(q.C < F * p.S * p.C + B);
  CHECK(q.R == (p.R + F - 1) / F);
  CHECK(q.dil_h == F * p.dil_h);
  CHECK(q.x_packed_nhwc());
  CHECK(q.w_packed_krsc());
  CHECK(q.S == 1);
  CHECK(q.stride_w == 1);
  CHECK(q.stride_h == p.stride_h);
  CHECK(q.pad_h == 0);
  CHECK(q.pad_w == 0);
  CHECK(q.mode == JHDNN_CROSS_CORRELATION);

  const uint64_t salt = hash_string(sh.name);
  std::vector<double> x(size_t(p.x_span())), w(size_t(p.w_span()));
  fill_random(x, dt, mix_seed(test_seed(), salt));
  fill_random(w, dt, mix_seed(test_seed(), salt + 1));
  std::vector<double> y(size_t(p.y_span()), 0.0), yq(size_t(q.y_span()), 0.0);
  conv_fwd_reference(p, x.data(), w.data(), y.data(), 1.0, 0.0);

  int64_t mismatches = 0;
  const std::vector<double> xs = pack_x<V>(p, F, x, &mismatches);
  CHECK(mismatches == 0);
  const std::vector<double> ws = pack_w(p, F, w);
  conv_fwd_reference(q, xs.data(), ws.data(), yq.data(), 1.0, 0.0);
  REQUIRE(y.size() == yq.size());  // same y strides
  const double d = max_rel_diff(yq, y);
  INFO("max |packed - original| / (1 + |original|) = " << d);
  CHECK(d < 1e-12);

  // The check can fail: the same packing without CONVOLUTION mode's mirror (or, in
  // cross-correlation, with it) gives a different answer on these random inputs.
  ConvProblem wrong = p;
  wrong.mode = p.mode == JHDNN_CONVOLUTION ? JHDNN_CROSS_CORRELATION : JHDNN_CONVOLUTION;
  if (p.R * p.S > 1) {
    const std::vector<double> ws_wrong = pack_w(wrong, F, w);
    std::vector<double> yw(yq.size(), 0.0);
    conv_fwd_reference(q, xs.data(), ws_wrong.data(), yw.data(), 1.0, 0.0);
    CHECK(max_rel_diff(yw, y) > 1e-6);
  }
}

core::DeviceInfo h200() {
  core::DeviceInfo d;
  d.device = 0, d.cc_major = 9, d.cc_minor = 0, d.sm_count = 132;
  return d;
}

}  // namespace

TEST_CASE("wgmma smallc: the packed problem computes the original convolution (float64, CPU)", "[smallc]") {
  int64_t runs = 0, folded = 0;
  for (const Shape& sh : shapes())
    for (bool nhwc : {true, false})
      for (bool krsc : {true, false})
        for (int64_t F = 1; F <= sh.p.R; ++F) {
          // Every fold the pack allows (Cs <= 128 elements); F = 1 always does.
          const ConvProblem h = with_layout(sh.p, JHDNN_DATA_HALF, nhwc), f = with_layout(sh.p, JHDNN_DATA_FLOAT, nhwc);
          if (tc::smallc_fold_reason(h, F) == nullptr) check_transform<8>(sh, JHDNN_DATA_HALF, nhwc, krsc, F), ++runs, folded += F > 1;
          if (sh.p.S * sh.p.C <= 32 && tc::smallc_fold_reason(f, F) == nullptr)
            check_transform<4>(sh, JHDNN_DATA_FLOAT, nhwc, krsc, F), ++runs, folded += F > 1;
          if (F == 1) CHECK(tc::smallc_fold_reason(h, F) == nullptr);
        }
  std::printf("[smallc] transform checked in %lld cases, %lld of them with F > 1; %lld row-staged runs with 16-byte staging\n",
              (long long)runs, (long long)folded, (long long)g_vec_checks);
  CHECK(folded >= 100);
  CHECK(g_vec_checks >= 40);
}

TEST_CASE("wgmma smallc: the fold's cost model picks F per layer", "[smallc]") {
  // ResNet-50 conv1 (b32, C 3, 7x7 s2 p3, 224 -> 112) and VGG-16 conv1_1 (b16, C 3, 3x3 p1, 224).
  const ConvProblem rn = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 32, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2, 1, 1);
  const ConvProblem vgg = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 16, 3, 224, 224, 64, 3, 3, 1, 1, 1, 1, 1, 1);
  struct Pick {
    const ConvProblem* p;
    jhdnnDataType_t dt;
    int64_t F, Cs, blocks;
  };
  // conv1 16-bit: F = 3 (63 of 64 channels, 3 blocks); fp32: F = 1 (21 of 32, 7 blocks: F = 3
  // would be 64 floats = 2 blocks per row, 6 blocks for twice the copy). VGG: F = 3, 1 block.
  for (const Pick& k : {Pick{&rn, JHDNN_DATA_HALF, 3, 64, 3}, Pick{&rn, JHDNN_DATA_BFLOAT16, 3, 64, 3},
                        Pick{&rn, JHDNN_DATA_FLOAT, 1, 32, 7}, Pick{&vgg, JHDNN_DATA_HALF, 3, 64, 1},
                        Pick{&vgg, JHDNN_DATA_BFLOAT16, 3, 64, 1}, Pick{&vgg, JHDNN_DATA_FLOAT, 3, 32, 1}}) {
    const ConvProblem p = with_layout(*k.p, k.dt, true);
    INFO(p.key() << " " << core::data_type_name(k.dt));
    REQUIRE(tc::smallc_shape_reason(p) == nullptr);
    const int64_t F = tc::smallc_pick_fold(p);
    for (int64_t f = 1; f <= p.R; ++f) {
      std::printf("[smallc] %s %s: F %lld cost %.1f MB%s\n", p.key().c_str(), core::data_type_name(k.dt), (long long)f,
                  tc::smallc_fold_cost(p, f) / 1e6, f == F ? "  <- picked" : "");
      CHECK(tc::smallc_fold_cost(p, F) <= tc::smallc_fold_cost(p, f));
    }
    CHECK(F == k.F);
    const ConvProblem q = tc::smallc_problem(p);
    CHECK(q.C == k.Cs);
    CHECK(tc::wgmma_reduction_blocks(q) == k.blocks);
    CHECK(q.P == p.P);
    CHECK(q.Q == p.Q);
    // The pack's work split and mapping on the real geometry (one image): every vector written
    // once, every element equal to the closed form (the full convolution check is on the small
    // shapes above).
    ConvProblem one = p;
    one.N = 1;
    std::vector<double> x(size_t(one.x_span()));
    for (size_t i = 0; i < x.size(); ++i) x[i] = double(i % 1021) + 1.0;
    int64_t bad = 0;
    if (k.dt == JHDNN_DATA_FLOAT)
      (void)pack_x<4>(one, F, x, &bad);
    else
      (void)pack_x<8>(one, F, x, &bad);
    CHECK(bad == 0);
  }
  // The row-staged pass's plan on the real layers: k packed rows per block (512 / Q), and the staged
  // row pitch the bank model picks -- measured in shared-memory wavefronts per 2-byte / 4-byte load
  // of the first 2 warps (16 loads of 16-bit data, 8 of fp32): conv1 fp16 2.25 -> 2 per load,
  // VGG conv1_1 fp16 2 -> 1, fp32 2.75 -> 2; conv1 fp32 (F = 1) 1.25 at every pitch.
  struct RowPlan {
    const ConvProblem* p;
    jhdnnDataType_t dt;
    int64_t k, wf_base, wf_pick;
  };
  for (const RowPlan& r : {RowPlan{&rn, JHDNN_DATA_HALF, 4, 36, 32}, RowPlan{&rn, JHDNN_DATA_FLOAT, 4, 10, 10},
                           RowPlan{&vgg, JHDNN_DATA_BFLOAT16, 2, 32, 16}, RowPlan{&vgg, JHDNN_DATA_FLOAT, 2, 22, 16}}) {
    const ConvProblem p = with_layout(*r.p, r.dt, true);
    const int64_t eb = r.dt == JHDNN_DATA_FLOAT ? 4 : 2;
    const tc::SmallCGeom g = tc::smallc_geom(p);
    const int64_t pitch = tc::smallc_stage_pitch(g, eb), base = g.W * g.C;  // 672: a multiple of 16 bytes
    INFO(p.key() << " " << core::data_type_name(r.dt) << " pitch " << pitch);
    std::printf("[smallc] %s %s: row-staged k %lld, pitch %lld elements (W*C %lld), wavefronts %lld (at W*C: %lld)\n",
                p.key().c_str(), core::data_type_name(r.dt), (long long)tc::smallc_rows_per_block(g, eb), (long long)pitch,
                (long long)base, (long long)tc::smallc_stage_wavefronts(g, eb, pitch),
                (long long)tc::smallc_stage_wavefronts(g, eb, base));
    CHECK(tc::smallc_rows_per_block(g, eb) == r.k);
    CHECK(tc::smallc_rows_per_block(g, eb, pitch) == r.k);
    CHECK(tc::smallc_stage_wavefronts(g, eb, base) == r.wf_base);
    CHECK(tc::smallc_stage_wavefronts(g, eb, pitch) == r.wf_pick);
    CHECK(tc::smallc_stage_vectorized(g, int(16 / eb)));
    CHECK((pitch - base) * eb % 16 == 0);
    CHECK((pitch - base) * eb < 128);
  }
  // The model by hand, conv1 fp16 F = 3: A = 32*112*112 pixels * 3 blocks * 128 bytes; xs = 32 x 229
  // x 112 x 64 halves (Hp = 111*2 + 2*3 + 1 = 229), written once and read once.
  const ConvProblem h = with_layout(rn, JHDNN_DATA_HALF, true);
  CHECK(tc::smallc_fold_cost(h, 3) == 32.0 * 112 * 112 * 3 * 128 + 2.0 * 32 * 229 * 112 * 64 * 2);
  // Refused folds: outside [1, R], or more than the 128-element table (7 * 7 * 3 = 147).
  CHECK(tc::smallc_fold_reason(h, 0) != nullptr);
  CHECK(tc::smallc_fold_reason(h, 8) != nullptr);
  CHECK(tc::smallc_fold_reason(h, 7) != nullptr);
  CHECK(tc::smallc_fold_reason(h, 6) == nullptr);  // 126 -> 128
  CHECK(std::isinf(tc::smallc_fold_cost(h, 7)));
}

TEST_CASE("wgmma smallc: shape rules, workspace, registry order", "[smallc]") {
  // ResNet-50 conv1 at batch 32, fp16 NHWC, F = 3: xs is 32 x 229 x 112 x 64 halves, ws 64 x 3 x 64.
  ConvProblem rn = with_layout(core::make_problem_2d(JHDNN_DATA_FLOAT, false, 32, 3, 224, 224, 64, 7, 7, 3, 3, 2, 2, 1, 1),
                               JHDNN_DATA_HALF, true);
  rn.math_type = JHDNN_TENSOR_OP_MATH;
  CHECK(tc::smallc_shape_reason(rn) == nullptr);
  const ConvProblem rnq = tc::smallc_problem(rn);
  CHECK(rnq.C == 64);
  CHECK(rnq.H == 229);
  CHECK(rnq.R == 3);
  CHECK(rnq.dil_h == 3);
  CHECK(rnq.pad_h == 0);
  CHECK(tc::smallc_x_bytes(rn) == size_t(32) * 229 * 112 * 64 * 2);
  CHECK(tc::smallc_w_bytes(rn) == size_t(64) * 3 * 64 * 2);
  CHECK(tc::smallc_workspace_bytes(rn) == size_t(32) * 229 * 112 * 64 * 2 + size_t(64) * 3 * 64 * 2 + 256);
  // Forced F = 1: 7 rows of 64 (21 real), the same Hp.
  CHECK(tc::smallc_problem(rn, 1).C == 64);
  CHECK(tc::smallc_problem(rn, 1).R == 7);
  CHECK(tc::smallc_x_bytes(rn, 1) == size_t(32) * 229 * 112 * 64 * 2);
  CHECK(tc::smallc_w_bytes(rn, 1) == size_t(64) * 7 * 64 * 2);
  ConvProblem rn32 = rn;
  rn32.dtype = JHDNN_DATA_FLOAT;
  CHECK(tc::smallc_problem(rn32).C == 32);  // F = 1: 21 -> 32 (one 128-byte block)
  CHECK(tc::smallc_problem(rn32).R == 7);
  CHECK(tc::smallc_w_bytes(rn32) == 57344);  // 64 * 7 * 32 * 4 = 57344 = 224 * 256

  // VGG-16 conv1_1 at batch 16, F = 3: Cs 64 (27 real), 1 filter row, Hp = 223 + 1 = 224.
  ConvProblem vgg = with_layout(core::make_problem_2d(JHDNN_DATA_FLOAT, false, 16, 3, 224, 224, 64, 3, 3, 1, 1, 1, 1, 1, 1),
                                JHDNN_DATA_BFLOAT16, true);
  vgg.math_type = JHDNN_TENSOR_OP_MATH;
  CHECK(tc::smallc_problem(vgg).C == 64);
  CHECK(tc::smallc_problem(vgg).H == 224);
  CHECK(tc::smallc_problem(vgg).R == 1);
  CHECK(tc::smallc_workspace_bytes(vgg) == size_t(16) * 224 * 224 * 64 * 2 + 8192 + 256);  // ws 64*1*64*2 = 8192

  // Refusals, each with a reason.
  ConvProblem wide = rn;
  wide.C = 10;  // 7 * 10 = 70 > 64
  CHECK(tc::smallc_shape_reason(with_layout(wide, JHDNN_DATA_HALF, true)) != nullptr);
  ConvProblem f32 = with_layout(vgg, JHDNN_DATA_FLOAT, true);
  CHECK(tc::smallc_shape_reason(f32) == nullptr);  // 9 <= 32
  CHECK(tc::smallc_shape_reason(with_layout(rn, JHDNN_DATA_FLOAT, true)) == nullptr);  // 21 <= 32
  ConvProblem f32wide = with_layout(core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 3, 31, 31, 4, 11, 11, 2, 2, 4, 4, 1, 1),
                                    JHDNN_DATA_FLOAT, true);
  CHECK(tc::smallc_shape_reason(f32wide) != nullptr);  // 33 > 32 floats
  ConvProblem grouped = rn;
  grouped.G = 3, grouped.C = 3, grouped.K = 63;
  CHECK(tc::smallc_shape_reason(grouped) != nullptr);
  ConvProblem s9 = rn;
  s9.stride_h = 9;
  CHECK(tc::smallc_shape_reason(s9) != nullptr);
  ConvProblem tall = rn;  // the pack forms rows in 32-bit integers
  tall.pad_h = 1 << 29;
  CHECK(tc::smallc_shape_reason(tall) != nullptr);
  ConvProblem dbl = rn;
  dbl.dtype = JHDNN_DATA_DOUBLE;
  CHECK(tc::smallc_shape_reason(dbl) != nullptr);

  // The solver: takes the first layers on sm_90 under tensor-op math, leaves to tensorcore_wgmma
  // what it takes without a copy, refuses FMA math and non-Hopper devices; its workspace is the
  // packed copy's; it sits right after tensorcore_wgmma and before tensorcore_mma.
  const conv::ConvSolver& s = conv::tensorcore_wgmma_smallc_solver();
  CHECK(s.algo() == JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  CHECK(s.workspace_optional());
  CHECK(s.can_implement(rn, h200()).ok);
  CHECK(s.can_implement(vgg, h200()).ok);
  CHECK(s.workspace_bytes(rn) == tc::smallc_workspace_bytes(rn));
  ConvProblem c8 = with_layout(core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 8, 20, 20, 16, 3, 3, 1, 1, 1, 1, 1, 1),
                               JHDNN_DATA_HALF, true);
  c8.math_type = JHDNN_TENSOR_OP_MATH;
  CHECK(conv::tensorcore_wgmma_solver().can_implement(c8, h200()).ok);
  const conv::Verdict v8 = s.can_implement(c8, h200());
  CHECK_FALSE(v8.ok);
  CHECK(std::string(v8.reason).find("tensorcore_wgmma") != std::string::npos);
  ConvProblem c8nchw = with_layout(c8, JHDNN_DATA_HALF, false);  // NCHW x: wgmma refuses, smallc packs it (24 <= 64)
  c8nchw.math_type = JHDNN_TENSOR_OP_MATH;
  CHECK(s.can_implement(c8nchw, h200()).ok);
  ConvProblem fma = rn;
  fma.math_type = JHDNN_FMA_MATH;
  CHECK_FALSE(s.can_implement(fma, h200()).ok);
  core::DeviceInfo a100 = h200();
  a100.cc_major = 8;
  CHECK_FALSE(s.can_implement(rn, a100).ok);
  const auto& all = conv::all_solvers();
  REQUIRE(all.size() >= 4);
  CHECK(all[0] == &conv::tensorcore_wgmma_solver());
  CHECK(all[1] == &s);
  CHECK(all[2] == &conv::depthwise_solver());  // groups == C only (src/conv/depthwise)
  CHECK(all[3] == &conv::tensorcore_mma_solver());

  // What the wgmma planner runs on the packed problems (H200): 64-wide tiles (K = 64), unsplit.
  for (const ConvProblem* p : {&rn, &vgg}) {
    const ConvProblem q = tc::smallc_problem(*p);
    const tc::WgmmaPlan plan = tc::plan_wgmma(q, 132, true);
    const tc::PixelBox b = tc::pick_pixel_box(q);
    INFO(p->key() << " -> packed " << q.key());
    CHECK(plan.bn == 64);
    CHECK(plan.split == 1);
    CHECK(tc::wgmma_reduction_blocks(q) == (p == &rn ? 3 : 1));  // one 64-channel block per folded filter row
    std::printf("[smallc] %s -> packed C %lld: box %dx%dx%d, %lld pixel tiles, %lld blocks per tile, bn %d split %d\n",
                p->key().c_str(), (long long)q.C, b.bw, b.bh, b.bn, (long long)tc::wgmma_pixel_tiles(q, b),
                (long long)tc::wgmma_reduction_blocks(q), plan.bn, plan.split);
  }
}

// The shapes of test_conv_tensorcore's "[smallc]" GPU case: the solver must take every one of them in
// every type and layout on an H200, with every fold 1, 2, 3 and R (R > 3) allowed and the packed
// problem of each taken by tensorcore_wgmma -- so that GPU case's run counts (36, 36, 36, 36, 30, with
// its direct-pass shape W = 9000 too) hold unless the GPU itself fails.
TEST_CASE("wgmma smallc: the GPU fold cases are taken (H200 rules)", "[smallc]") {
  const ConvProblem shapes[] = {
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 1, 13, 12, 16, 5, 5, 2, 2, 1, 1, 1, 1),
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 2, 30, 29, 24, 7, 7, 3, 3, 2, 2, 2, 2),
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 3, 11, 14, 40, 5, 5, 1, 1, 1, 1, 1, 1, 1, JHDNN_CONVOLUTION),
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 3, 7, 300, 8, 3, 3, 1, 1, 1, 1, 1, 1),
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 3, 13, 16, 8, 5, 3, 2, 2, 1, 1, 2, 2),
  };
  int64_t fold_r = 0, taken = 0;
  for (const ConvProblem& base : shapes)
    for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT})
      for (bool nhwc : {true, false}) {
        ConvProblem p = with_layout(base, dt, nhwc);
        p.math_type = JHDNN_TENSOR_OP_MATH;
        INFO(p.key() << " " << core::data_type_name(dt) << (nhwc ? " NHWC" : " NCHW"));
        const conv::Verdict v = conv::tensorcore_wgmma_smallc_solver().can_implement(p, h200());
        INFO("can_implement: " << (v.ok ? "yes" : v.reason));
        CHECK(v.ok);
        taken += v.ok;
        for (int64_t F : {int64_t(1), int64_t(2), int64_t(3), p.R}) {
          INFO("fold " << F);
          REQUIRE(tc::smallc_fold_reason(p, F) == nullptr);
          const ConvProblem q = tc::smallc_problem(p, F);
          CHECK(conv::tensorcore_wgmma_solver().can_implement(q, h200()).ok);
          CHECK(q.P == p.P);
          CHECK(q.Q == p.Q);
        }
        fold_r += p.R > 3;
      }
  CHECK(taken == 30);
  CHECK(fold_r == 24);
}
