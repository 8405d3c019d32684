// tensorcore_wgmma's planning (src/conv/tensorcore/wgmma_plan.{h,cpp}) on the CPU, no GPU needed:
// the pixel box, the whole-waves / tail division, the cost model and the solver's configuration
// choice, on ResNet-50 (batch 32) and VGG-16 (batch 16) layers for the H200 (132 SMs) and on a
// sweep of shapes. What the GPU runs is checked against the float64 reference in
// test_conv_tensorcore.cpp (forced tail configurations, and the solver's choice on a layer that
// takes the tail); this file checks the decisions themselves.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "conv/tensorcore/wgmma_cursor.h"
#include "conv/tensorcore/wgmma_plan.h"

namespace {

using jhdnn::core::ConvProblem;
namespace tc = jhdnn::conv::tensorcore;

constexpr int kH200Sms = 132;

// A packed NHWC fp16 2-D problem (the planner reads only the shape fields and the data type).
ConvProblem nhwc(int64_t n, int64_t c, int64_t hw, int64_t k, int64_t f, int stride, int pad,
                 jhdnnDataType_t dt = JHDNN_DATA_HALF) {
  ConvProblem p;
  p.dtype = dt;
  p.N = n, p.C = c, p.K = k, p.H = hw, p.W = hw, p.R = f, p.S = f;
  p.pad_h = p.pad_w = pad, p.stride_h = p.stride_w = stride;
  p.P = p.Q = (hw + 2 * pad - f) / stride + 1;
  return p;
}

struct Layer {
  std::string name;
  ConvProblem p;
};

// ResNet-50 batch 32 and VGG-16 batch 16, the layers jhdnn-bench's suites time (C >= 8: the first
// layers with C = 3 are not tensorcore_wgmma's).
std::vector<Layer> layers() {
  const int n = 32, v = 16;
  return {
      {"rn50_c2_1x1_64_64", nhwc(n, 64, 56, 64, 1, 1, 0)},
      {"rn50_c2_3x3_64", nhwc(n, 64, 56, 64, 3, 1, 1)},
      {"rn50_c2_1x1_64_256", nhwc(n, 64, 56, 256, 1, 1, 0)},
      {"rn50_c2_1x1_256_64", nhwc(n, 256, 56, 64, 1, 1, 0)},
      {"rn50_c3_1x1_256_128", nhwc(n, 256, 56, 128, 1, 1, 0)},
      {"rn50_c3_3x3_128s2", nhwc(n, 128, 56, 128, 3, 2, 1)},
      {"rn50_c3_ds_256_512s2", nhwc(n, 256, 56, 512, 1, 2, 0)},
      {"rn50_c3_1x1_128_512", nhwc(n, 128, 28, 512, 1, 1, 0)},
      {"rn50_c3_1x1_512_128", nhwc(n, 512, 28, 128, 1, 1, 0)},
      {"rn50_c3_3x3_128", nhwc(n, 128, 28, 128, 3, 1, 1)},
      {"rn50_c4_1x1_512_256", nhwc(n, 512, 28, 256, 1, 1, 0)},
      {"rn50_c4_3x3_256s2", nhwc(n, 256, 28, 256, 3, 2, 1)},
      {"rn50_c4_ds_512_1024s2", nhwc(n, 512, 28, 1024, 1, 2, 0)},
      {"rn50_c4_1x1_256_1024", nhwc(n, 256, 14, 1024, 1, 1, 0)},
      {"rn50_c4_1x1_1024_256", nhwc(n, 1024, 14, 256, 1, 1, 0)},
      {"rn50_c4_3x3_256", nhwc(n, 256, 14, 256, 3, 1, 1)},
      {"rn50_c5_1x1_1024_512", nhwc(n, 1024, 14, 512, 1, 1, 0)},
      {"rn50_c5_3x3_512s2", nhwc(n, 512, 14, 512, 3, 2, 1)},
      {"rn50_c5_ds_1024_2048s2", nhwc(n, 1024, 14, 2048, 1, 2, 0)},
      {"rn50_c5_1x1_512_2048", nhwc(n, 512, 7, 2048, 1, 1, 0)},
      {"rn50_c5_1x1_2048_512", nhwc(n, 2048, 7, 512, 1, 1, 0)},
      {"rn50_c5_3x3_512", nhwc(n, 512, 7, 512, 3, 1, 1)},
      {"vgg_conv1_2", nhwc(v, 64, 224, 64, 3, 1, 1)},
      {"vgg_conv2_1", nhwc(v, 64, 112, 128, 3, 1, 1)},
      {"vgg_conv2_2", nhwc(v, 128, 112, 128, 3, 1, 1)},
      {"vgg_conv3_1", nhwc(v, 128, 56, 256, 3, 1, 1)},
      {"vgg_conv3_2", nhwc(v, 256, 56, 256, 3, 1, 1)},
      {"vgg_conv4_1", nhwc(v, 256, 28, 512, 3, 1, 1)},
      {"vgg_conv4_2", nhwc(v, 512, 28, 512, 3, 1, 1)},
      {"vgg_conv5_1", nhwc(v, 512, 14, 512, 3, 1, 1)},
  };
}

int64_t tiles128(const ConvProblem& p) { return tc::wgmma_pixel_tiles(p, tc::pick_pixel_box(p)) * ((p.K + 127) / 128); }

// The invariants every plan must satisfy, whatever the shape.
void check_plan_invariants(const ConvProblem& p, int sms, bool clusters_ok, const tc::WgmmaPlan& plan) {
  CHECK((plan.bn == 64 || plan.bn == 128 || plan.bn == 256));
  CHECK((plan.split == 1 || plan.split == 2 || plan.split == 4 || plan.split == 8));
  CHECK((plan.bm == 64 || plan.bm == 128));
  const int64_t t = tiles128(p), kb = tc::wgmma_reduction_blocks(p);
  if (plan.bm == 64) {  // small M only: one wave of 64 x 128 tiles at two CTAs per SM
    CHECK(plan.bn == 128);
    CHECK(plan.split == 1);  // round 7's split 2 is forced-only (measured no faster)
    CHECK_FALSE(plan.tail);
    CHECK(t * 2 <= sms);
    CHECK(p.K > 64);
    const int64_t t64 = tc::wgmma_pixel_tiles(p, tc::pick_pixel_box(p, 64)) * ((p.K + 127) / 128);
    CHECK(t64 * 2 >= sms);
    CHECK(t64 <= 2 * sms);
    // Round 9: the 8-stage one-CTA-per-SM pipeline exactly when the tiles fit one per SM.
    CHECK(plan.deep == (t64 <= sms));
  } else {
    CHECK_FALSE(plan.deep);  // the deep pipeline exists for 64-pixel tiles only
  }
  if (!clusters_ok) CHECK(plan.split == 1);
  if (plan.split > 1) {
    CHECK(plan.bn == 128);
    CHECK(kb >= 3 * plan.split);  // every CTA of a cluster gets >= 3 reduction blocks
  }
  if (plan.tail) {
    CHECK(plan.bm == 128);
    CHECK(plan.split > 1);
    const tc::TailDivision d = tc::wgmma_tail_division(t, sms);
    CHECK(d.dp_tiles > 0);                      // at least one whole wave runs unsplit
    CHECK(d.tail_tiles > 0);                    // and there is a partial wave to split
    CHECK(d.tail_tiles * plan.split <= sms);    // the split tail is one wave
    CHECK(tc::wgmma_cost_tail(t, kb, sms, plan.split) < 0.95 * tc::wgmma_cost_unsplit(t, kb, sms));
  } else if (plan.split > 1 && plan.bm == 128) {
    CHECK(t * plan.split <= sms);  // plain split-K: one wave of clusters
  }
}

}  // namespace

TEST_CASE("wgmma plan: 64-pixel boxes (bm 64) are 64 pixels and cover the output", "[wgmma_plan]") {
  for (const Layer& l : layers()) {
    INFO(l.name);
    const tc::PixelBox b = tc::pick_pixel_box(l.p, 64);
    CHECK(b.bw * b.bh * b.bn == 64);
    CHECK(tc::wgmma_pixel_tiles(l.p, b) * 64 >= l.p.N * l.p.P * l.p.Q);
    CHECK(b.bw * l.p.stride_w <= 256);
    CHECK(b.bh * l.p.stride_h <= 256);
  }
  // The 128-pixel default is unchanged by the parameter.
  const ConvProblem c3 = nhwc(32, 128, 28, 128, 3, 1, 1);
  const tc::PixelBox d = tc::pick_pixel_box(c3), e = tc::pick_pixel_box(c3, 128);
  CHECK((d.bw == e.bw && d.bh == e.bh && d.bn == e.bn));
}

TEST_CASE("wgmma plan: pixel boxes are 128 pixels and cover the output", "[wgmma_plan]") {
  for (const Layer& l : layers()) {
    INFO(l.name);
    const tc::PixelBox b = tc::pick_pixel_box(l.p);
    CHECK(b.bw * b.bh * b.bn == 128);
    const int64_t tiles = tc::wgmma_pixel_tiles(l.p, b);
    CHECK(tiles * 128 >= l.p.N * l.p.P * l.p.Q);
    // Padding waste stays below half a tile row per tile on these layers (7x7 maps: 1568 of 1792).
    CHECK(tiles * 128 < 2 * l.p.N * l.p.P * l.p.Q);
  }
  // The known tile counts at batch 32: 196 for 28x28 maps (4 x 4 x 8 boxes), 784 for 56x56 (no waste).
  const tc::PixelBox b28 = tc::pick_pixel_box(nhwc(32, 128, 28, 128, 3, 1, 1));
  CHECK(tc::wgmma_pixel_tiles(nhwc(32, 128, 28, 128, 3, 1, 1), b28) == 196);
  const tc::PixelBox b56 = tc::pick_pixel_box(nhwc(32, 64, 56, 64, 3, 1, 1));
  CHECK(tc::wgmma_pixel_tiles(nhwc(32, 64, 56, 64, 3, 1, 1), b56) == 32 * 56 * 56 / 128);  // no waste
  CHECK(tc::wgmma_reduction_blocks(nhwc(32, 128, 28, 128, 3, 1, 1)) == 18);
  CHECK(tc::wgmma_reduction_blocks(nhwc(32, 128, 28, 128, 3, 1, 1, JHDNN_DATA_FLOAT)) == 36);
  CHECK(tc::wgmma_reduction_blocks(nhwc(2, 24, 9, 8, 1, 1, 0)) == 1);  // a channel tail is one more block
}

TEST_CASE("wgmma plan: whole waves and the tail", "[wgmma_plan]") {
  for (int64_t grid : {1, 3, 5, 132, 264})
    for (int64_t tiles = 0; tiles < 700; ++tiles) {
      const tc::TailDivision d = tc::wgmma_tail_division(tiles, grid);
      INFO("tiles " << tiles << " grid " << grid);
      REQUIRE(d.dp_tiles + d.tail_tiles == tiles);
      REQUIRE(d.dp_tiles % grid == 0);
      REQUIRE(d.tail_tiles >= 0);
      REQUIRE(d.tail_tiles < grid);
    }
  const tc::TailDivision d = tc::wgmma_tail_division(196, 132);
  CHECK(d.dp_tiles == 132);
  CHECK(d.tail_tiles == 64);
  CHECK(tc::wgmma_tail_division(264, 132).tail_tiles == 0);
  CHECK(tc::wgmma_tail_division(100, 132).dp_tiles == 0);
  CHECK(tc::wgmma_tail_division(5, 0).dp_tiles == 0);  // degenerate grid: nothing, no division by zero
}

TEST_CASE("wgmma plan: cost model", "[wgmma_plan]") {
  // Whole waves: the unsplit kernel is never beaten (no partial wave -> no tail split offered).
  CHECK(tc::wgmma_tail_split(264, 18, 132) == 0);
  // Less than one wave: plain split-K's territory, not the tail's.
  CHECK(tc::wgmma_tail_split(100, 18, 132) == 0);
  // rn50_c3_3x3_128: 196 tiles of 18 blocks on 132 SMs -> 2 waves unsplit (cost 40); whole wave +
  // the 64-tile tail split 2 ways (128 CTAs): 19 + 2 + 2 + 9 + 2 + 15 + 0.5 = 49.5 -- no tail (the
  // H200 measured 26 us with it, 19.8 without: the fitted X = 15 of wgmma_plan.h).
  CHECK(tc::wgmma_cost_unsplit(196, 18, 132) == 40.0);
  CHECK(tc::wgmma_cost_tail(196, 18, 132, 2) == 49.5);
  CHECK(tc::wgmma_tail_split(196, 18, 132) == 0);
  // 140 tiles of 36 blocks (3x3 256 -> 128, 28x28, batch 20): unsplit 2 x 37 + 2 = 76; tail
  // 37 + 2 + 2 + ceil(36 / 8) + 2 + 15 + 1 / 8 = 63.125 -> split 8.
  CHECK(tc::wgmma_cost_tail(140, 36, 132, 8) == 63.125);
  CHECK(tc::wgmma_tail_split(140, 36, 132) == 8);
  // A tiny tail of a long reduction takes the widest split that stays one wave (5 tiles x 8).
  CHECK(tc::wgmma_tail_split(137, 72, 132) == 8);
  // Short reductions never split (each CTA of a cluster needs >= 3 blocks; 1x1 with C = 256 has 4).
  CHECK(tc::wgmma_tail_split(196, 4, 132) == 0);
  // Many waves: the partial last wave is a small share, the second launch not worth it (5% margin:
  // 11 whole waves + 60 tiles: unsplit 230, tail 226.5 > 0.95 * 230).
  CHECK(tc::wgmma_tail_split(11 * 132 + 60, 18, 132) == 0);
  // A tail too big to split in one wave (116 tiles x 2 > 132 CTAs) is not split.
  CHECK(tc::wgmma_tail_split(1568, 18, 132) == 0);
  // More tiles in the tail never makes the split cheaper than with fewer (same kb, same waves).
  for (int s : {2, 4, 8})
    for (int64_t t = 133; t < 264; ++t)
      CHECK(tc::wgmma_cost_tail(t, 36, 132, s) == tc::wgmma_cost_tail(133, 36, 132, s));
}

TEST_CASE("wgmma plan: the solver's choices on ResNet-50 b32 and VGG-16 b16 (H200, 132 SMs)", "[wgmma_plan]") {
  int tails = 0, deeps = 0;
  std::printf("[wgmma_plan] %-24s %6s %4s %4s %4s %5s %5s %5s  (132 SMs)\n", "layer", "t128", "kb", "bm", "bn", "split",
              "tail", "deep");
  for (const Layer& l : layers()) {
    INFO(l.name);
    const tc::WgmmaPlan plan = tc::plan_wgmma(l.p, kH200Sms, true);
    std::printf("[wgmma_plan] %-24s %6" PRId64 " %4" PRId64 " %4d %4d %5d %5s %5s\n", l.name.c_str(), tiles128(l.p),
                tc::wgmma_reduction_blocks(l.p), plan.bm, plan.bn, plan.split, plan.tail ? "yes" : "no",
                plan.deep ? "yes" : "no");
    deeps += plan.deep ? 1 : 0;
    check_plan_invariants(l.p, kH200Sms, true, plan);
    tails += plan.tail ? 1 : 0;
    // Without clusters nothing splits, and the tile width is the same as with them unless split.
    const tc::WgmmaPlan nc = tc::plan_wgmma(l.p, kH200Sms, false);
    check_plan_invariants(l.p, kH200Sms, false, nc);
    if (plan.split == 1) CHECK(nc.bn == plan.bn);
  }
  std::fflush(stdout);
  // The 28x28 3x3 layer (196 tiles, 1.48 waves) runs unsplit since the tail's cost was fitted
  // (measured slower with it); a longer reduction with a small partial wave still takes the tail.
  const tc::WgmmaPlan c3 = tc::plan_wgmma(nhwc(32, 128, 28, 128, 3, 1, 1), kH200Sms, true);
  CHECK(c3.bn == 128);
  CHECK(c3.split == 1);
  CHECK_FALSE(c3.tail);
  const tc::WgmmaPlan t20 = tc::plan_wgmma(nhwc(20, 256, 28, 128, 3, 1, 1), kH200Sms, true);
  CHECK(t20.split == 8);
  CHECK(t20.tail);
  // Unchanged decisions: K <= 64 -> 64-wide tiles; big K on big maps -> 256-wide.
  CHECK(tc::plan_wgmma(nhwc(32, 64, 56, 64, 1, 1, 0), kH200Sms, true).bn == 64);
  // No SM count (a failed device query): the plain configuration, not a division by zero.
  for (int sms : {0, -1}) {
    const tc::WgmmaPlan z = tc::plan_wgmma(nhwc(32, 128, 28, 128, 3, 1, 1), sms, true);
    CHECK((z.bn == 128 && z.split == 1 && !z.tail));
  }
  CHECK(tc::plan_wgmma(nhwc(32, 64, 56, 256, 1, 1, 0), kH200Sms, true).bn == 256);
  // Batch-1 14x14 3x3 256 -> 256: 4 tiles, plain split-K over clusters of 8 (not a tail): its 8
  // tiles of 64 pixels would leave most SMs idle, so not bm 64.
  const tc::WgmmaPlan b1 = tc::plan_wgmma(nhwc(1, 256, 14, 256, 3, 1, 1), kH200Sms, true);
  CHECK(b1.split == 8);
  CHECK_FALSE(b1.tail);
  CHECK(b1.bm == 128);
  // Round 6: the 7x7 conv5 layers at batch 32 (M = 1568: 14 x 4 = 56 tiles of 128 x 128, which
  // took split 2) run 28 x 4 = 112 tiles of 64 x 128 pixels x channels, bm 64, whole reductions,
  // with or without clusters. Round 7's split 2 over clusters of two (224 CTAs) measured no faster
  // on the H200 (README.md, "Round 7"), so the planner never picks it. Round 9: 112 tiles <= 132 SMs,
  // so one CTA per SM -- the deep (8-stage) pipeline.
  for (const ConvProblem& c5 : {nhwc(32, 2048, 7, 512, 1, 1, 0), nhwc(32, 512, 7, 512, 3, 1, 1),
                                nhwc(32, 512, 14, 512, 3, 2, 1)}) {
    for (bool clusters_ok : {true, false}) {
      const tc::WgmmaPlan pl = tc::plan_wgmma(c5, kH200Sms, clusters_ok);
      CHECK(pl.bm == 64);
      CHECK(pl.bn == 128);
      CHECK(pl.split == 1);
      CHECK_FALSE(pl.tail);
      CHECK(pl.deep);
    }
    CHECK(tc::wgmma_pixel_tiles(c5, tc::pick_pixel_box(c5, 64)) == 28);
    // The boundary: on 112 SMs the 112 tiles are still one per SM (deep); on 111 the 56 tiles of
    // 128 x 128 fill more than half the SMs, so the small-M rule (bm 64 at all) no longer applies.
    CHECK(tc::plan_wgmma(c5, 112, true).deep);
    CHECK(tc::plan_wgmma(c5, 112, true).bm == 64);
    CHECK(tc::plan_wgmma(c5, 111, true).bm == 128);
    CHECK_FALSE(tc::plan_wgmma(c5, 111, true).deep);
  }
  // ... but not the 7x7 layer with K = 2048 (448 such tiles: more than a wave; 224 of 128 x 128 fill the GPU).
  CHECK(tc::plan_wgmma(nhwc(32, 512, 7, 2048, 1, 1, 0), kH200Sms, true).bm == 128);
  // Nor the 14x14 conv4 layers (98 tiles of 128 x 128: more than half the SMs).
  CHECK(tc::plan_wgmma(nhwc(32, 256, 14, 256, 3, 1, 1), kH200Sms, true).bm == 128);
  CHECK(tails == 0);  // since the tail's cost was fitted (X = 15), none of these layers takes it
  CHECK(deeps == 3);  // round 9: exactly ResNet-50's three 7x7 conv5 bm 64 layers (c5_1x1_2048_512, c5_3x3_512 and _s2)
}

TEST_CASE("wgmma plan: splits never need a second wave of clusters", "[wgmma_plan]") {
  const ConvProblem c3 = nhwc(41, 512, 14, 512, 3, 1, 1);  // 308 tiles of 72 blocks: 264 whole + 44 tail tiles
  tc::ClusterLimits lim = tc::ClusterLimits::ideal(kH200Sms, true);
  CHECK(lim.of2 == 66);
  CHECK(lim.of8 == 16);
  CHECK(tc::plan_wgmma(c3, kH200Sms, lim).tail);
  CHECK(tc::plan_wgmma(c3, kH200Sms, lim).split == 2);  // 44 x 4 CTAs would not fit in one wave
  lim.of2 = 44;  // exactly the 44 tail clusters
  CHECK(tc::plan_wgmma(c3, kH200Sms, lim).tail);
  lim.of2 = 43;  // one cluster would wait for a second wave: no tail
  const tc::WgmmaPlan no = tc::plan_wgmma(c3, kH200Sms, lim);
  CHECK_FALSE(no.tail);
  CHECK(no.split == 1);
  CHECK(no.bn == 128);
  // Plain split-K: batch-1 14x14 3x3 256 -> 256 (4 tiles) takes 8-CTA clusters only if 4 of them fit.
  const ConvProblem b1 = nhwc(1, 256, 14, 256, 3, 1, 1);
  tc::ClusterLimits l8 = tc::ClusterLimits::ideal(kH200Sms, true);
  CHECK(tc::plan_wgmma(b1, kH200Sms, l8).split == 8);
  l8.of8 = 3;
  CHECK(tc::plan_wgmma(b1, kH200Sms, l8).split == 4);
  l8.of4 = 0;
  CHECK(tc::plan_wgmma(b1, kH200Sms, l8).split == 2);
  // No clusters at all: nothing splits, the bool form agrees.
  CHECK(tc::plan_wgmma(b1, kH200Sms, tc::ClusterLimits{}).split == 1);
  CHECK(tc::plan_wgmma(b1, kH200Sms, false).split == 1);
  CHECK(tc::wgmma_tail_split(308, 72, 132, &lim) == 0);
}

TEST_CASE("wgmma plan: invariants over a sweep of shapes and SM counts", "[wgmma_plan]") {
  int64_t plans = 0, tails = 0, splits = 0, deeps = 0, shallow64 = 0;
  for (int sms : {16, 78, 114, 132})
    for (int64_t n : {1, 3, 8, 32})
      for (int64_t hw : {7, 14, 17, 28, 56})
        for (int64_t c : {16, 64, 256, 1024})
          for (int64_t k : {24, 64, 128, 384})
            for (int64_t f : {1, 3})
              for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_FLOAT}) {
                const ConvProblem p = nhwc(n, c, hw, k, f, 1, f / 2, dt);
                const tc::WgmmaPlan plan = tc::plan_wgmma(p, sms, true);
                INFO("sms " << sms << " n " << n << " hw " << hw << " c " << c << " k " << k << " f " << f);
                check_plan_invariants(p, sms, true, plan);
                ++plans;
                tails += plan.tail ? 1 : 0;
                splits += plan.split > 1 && !plan.tail ? 1 : 0;
                deeps += plan.deep ? 1 : 0;
                shallow64 += plan.bm == 64 && !plan.deep ? 1 : 0;
              }
  std::printf("[wgmma_plan] sweep: %" PRId64 " plans, %" PRId64 " split-K tails, %" PRId64 " plain split-K, %" PRId64
              " bm 64 deep, %" PRId64 " bm 64 two per SM\n",
              plans, tails, splits, deeps, shallow64);
  CHECK(tails > 0);
  CHECK(splits > 0);
  CHECK(deeps > 0);
  // The 4-stage two-per-SM bm 64 kernel is forced-only today: the small-M gate (128 x 128 tiles
  // t128 <= #SMs / 2) implies t64 <= 2 * t128 <= #SMs (halving the best 128-pixel box is always a
  // candidate 64-pixel box), so every planned bm 64 grid fits one CTA per SM and runs deep. A wider
  // gate would make this fail -- and the rule `deep = t64 <= #SMs` would then pick the 4-stage kernel.
  CHECK(shallow64 == 0);
}

// The producer's reduction cursor (src/conv/tensorcore/wgmma_cursor.h) against the division formula
// it replaced in conv_wgmma.cu, for every starting block (the split-K ranks start anywhere: mid-tap,
// mid-row) and every block after it: channel slices per tap 1..5, filters 1x1 .. 5x5 and R != S,
// dilations 1..3, CONVOLUTION mode's flipped filter tap.
TEST_CASE("wgmma cursor: stepping equals the per-block division formula", "[wgmma_plan][cursor]") {
  int64_t checked = 0;
  for (int kBK : {32, 64})
    for (int cblocks : {1, 2, 3, 5})
      for (int R : {1, 2, 3, 5})
        for (int S : {1, 3, 4})
          for (int dil_w : {1, 3})
            for (int dil_h : {1, 2})
              for (bool flip : {false, true}) {
                const int kblocks = cblocks * R * S, xw0 = -2, xh0 = 5;
                for (int kb0 = 0; kb0 < kblocks; ++kb0) {
                  tc::ReductionCursor cur;
                  cur.start(kb0, kBK, cblocks, R, S, xw0, xh0, dil_w, dil_h, flip);
                  for (int kb = kb0; kb < kblocks; ++kb, cur.step()) {
                    const int tap = kb / cblocks, r = tap / S, s = tap % S;
                    const int c0 = (kb % cblocks) * kBK;
                    const int wtap = flip ? (R - 1 - r) * S + (S - 1 - s) : tap;
                    const bool same = cur.c0 == c0 && cur.xw == xw0 + s * dil_w && cur.xh == xh0 + r * dil_h &&
                                      cur.wtap == wtap;
                    if (!same) {
                      INFO("kBK " << kBK << " cblocks " << cblocks << " R " << R << " S " << S << " dil " << dil_h
                                  << "x" << dil_w << " flip " << flip << " kb0 " << kb0 << " kb " << kb << ": cursor c0 "
                                  << cur.c0 << " xw " << cur.xw << " xh " << cur.xh << " wtap " << cur.wtap
                                  << ", formula c0 " << c0 << " xw " << xw0 + s * dil_w << " xh "
                                  << xh0 + r * dil_h << " wtap " << wtap);
                      REQUIRE(same);
                    }
                    ++checked;
                  }
                }
              }
  CHECK(checked > 100000);
}
