// Host-only planning for tensorcore_wgmma (see wgmma_plan.h and README.md in this folder).
#include "conv/tensorcore/wgmma_plan.h"

namespace jhdnn::conv::tensorcore {

namespace {

// Cost-model constants (wgmma_plan.h), in reduction-block times.
constexpr double kEpilogue = 1.0;
constexpr double kFill = 2.0;
constexpr double kLaunch = 2.0;
constexpr double kExchange = 15.0;  // fitted to the H200 at 5a35705 (wgmma_plan.h)
// A tail split must be predicted at least this much cheaper than the unsplit kernel: the model is
// not fitted, so near-ties keep the simpler, single-launch configuration.
constexpr double kMargin = 0.95;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

PixelBox pick_pixel_box(const core::ConvProblem& p, int pixels) {
  PixelBox best;
  int64_t best_tiles = -1;
  double best_halo = 0;
  for (int bw = 1; bw <= 64 && bw <= pixels; bw *= 2)
    for (int bh = 1; bh * bw <= pixels && bh <= 64; bh *= 2) {
      const int bn = pixels / (bw * bh);
      if (bw * p.stride_w > 256 || bh * p.stride_h > 256) continue;  // a TMA box dimension is at most 256
      const int64_t tiles = ceil_div(p.Q, bw) * ceil_div(p.P, bh) * ceil_div(p.N, bn);
      // double: with huge dilations the product could overflow int64
      const double halo = (double(bw - 1) * p.stride_w + double(p.S - 1) * p.dil_w + 1) *
                          (double(bh - 1) * p.stride_h + double(p.R - 1) * p.dil_h + 1) * bn;
      if (best_tiles < 0 || tiles < best_tiles || (tiles == best_tiles && halo < best_halo)) {
        best_tiles = tiles, best_halo = halo;
        best.bw = bw, best.bh = bh, best.bn = bn;
      }
    }
  return best;
}

int64_t wgmma_pixel_tiles(const core::ConvProblem& p, const PixelBox& b) {
  return ceil_div(p.Q, b.bw) * ceil_div(p.P, b.bh) * ceil_div(p.N, b.bn);
}

int64_t wgmma_reduction_blocks(const core::ConvProblem& p) {
  const int64_t bk = kWgmmaStageRowBytes / (p.dtype == JHDNN_DATA_FLOAT ? 4 : 2);
  return p.R * p.S * ceil_div(p.C, bk);
}

double wgmma_cost_unsplit(int64_t tiles, int64_t kb, int64_t ctas) {
  return double(ceil_div(tiles, ctas)) * (double(kb) + kEpilogue) + kFill;
}

double wgmma_cost_tail(int64_t tiles, int64_t kb, int64_t ctas, int split) {
  const TailDivision d = wgmma_tail_division(tiles, ctas);
  double cost = double(d.dp_tiles / ctas) * (double(kb) + kEpilogue) + kFill;
  if (d.dp_tiles > 0) cost += kLaunch;
  if (d.tail_tiles > 0) cost += double(ceil_div(kb, split)) + kFill + kExchange + kEpilogue / split;
  return cost;
}

int wgmma_tail_split(int64_t tiles, int64_t kb, int64_t ctas, const ClusterLimits* limits) {
  const TailDivision d = wgmma_tail_division(tiles, ctas);
  if (d.tail_tiles == 0 || d.dp_tiles == 0) return 0;  // no partial wave, or no whole one (plain split-K's case)
  const double unsplit = wgmma_cost_unsplit(tiles, kb, ctas);
  int best = 0;
  double best_cost = kMargin * unsplit;
  for (int s : {8, 4, 2}) {
    if (d.tail_tiles * s > ctas || kb < 3 * s) continue;
    if (limits != nullptr && d.tail_tiles > limits->of(s)) continue;  // would need a second wave of clusters
    const double c = wgmma_cost_tail(tiles, kb, ctas, s);
    if (c < best_cost) best = s, best_cost = c;
  }
  return best;
}

TailDivision wgmma_tail_division(int64_t tiles, int64_t grid) {
  TailDivision d;
  if (tiles <= 0 || grid <= 0) return d;
  d.dp_tiles = (tiles / grid) * grid;
  d.tail_tiles = tiles - d.dp_tiles;
  return d;
}

WgmmaPlan plan_wgmma(const core::ConvProblem& p, int sm_count, bool clusters_ok) {
  return plan_wgmma(p, sm_count, ClusterLimits::ideal(sm_count, clusters_ok));
}

WgmmaPlan plan_wgmma(const core::ConvProblem& p, int sm_count, const ClusterLimits& clusters) {
  if (sm_count < 1) return {128, 1, false};  // no SM count (a failed query): the plain configuration
  const PixelBox box = pick_pixel_box(p);
  const int64_t pix = wgmma_pixel_tiles(p, box), kb = wgmma_reduction_blocks(p);
  const int64_t t128 = pix * ceil_div(p.K, 128);
  if (t128 * 2 <= sm_count && p.K > 64) {
    // Small M (ResNet-50's 7x7 conv5 layers at batch 32: 56 tiles of 128 x 128 on 132 SMs): 64-pixel
    // tiles, each CTA the whole reduction, no split-K exchange; taken when they make a single wave
    // of two CTAs per SM that leaves at most half the SMs idle (tiny grids keep split-K).
    const int64_t t64 = wgmma_pixel_tiles(p, pick_pixel_box(p, 64)) * ceil_div(p.K, 128);
    if (t64 * 2 >= sm_count && t64 <= 2 * int64_t(sm_count)) {
      // At most one tile per SM (ResNet-50's conv5 7x7 layers: 112 on 132): one CTA per SM either
      // way, so the 8-stage pipeline that fills the SM's shared memory (README.md, "Round 9").
      // Under the gate above (t128 <= #SMs / 2, and t64 <= 2 * t128: halving the best 128-pixel
      // box is a 64-pixel candidate) this always holds; the 4-stage two-per-SM kernel stays for a
      // wider gate and for forced runs.
      const bool deep = t64 <= int64_t(sm_count);
      return {128, 1, false, 64, deep};
    }
  }
  if (t128 * 2 <= sm_count)
    for (int s : {8, 4, 2})
      if (t128 * s <= sm_count && kb >= 3 * s && t128 <= clusters.of(s)) return {128, s, false};
  if (p.K <= 64) return {64, 1, false};
  if (p.K >= 256) {
    // Waves of persistent tiles, in units of one 128-wide tile's time; a 256-wide tile is assumed
    // to cost 1.6 of them (twice the work at ~20% better efficiency: fewer bytes per FLOP). So
    // 256 wins on big layers and loses where it would leave SMs idle (e.g. 64 tiles on 132 SMs).
    const int64_t t256 = pix * ceil_div(p.K, 256);
    const double waves256 = double(ceil_div(t256, sm_count)) * 1.6;
    const double waves128 = double(ceil_div(t128, sm_count));
    if (waves256 < waves128) return {256, 1, false};
  }
  if (const int s = wgmma_tail_split(t128, kb, sm_count, &clusters); s > 1) return {128, s, true};
  return {128, 1, false};
}

}  // namespace jhdnn::conv::tensorcore
