// Host-only planning for generation 2 of the Tensor Core convolution (conv_wgmma.cu): the pixel box
// of a tile, the tile counts, and the kernel configuration the solver runs -- pure functions of the
// problem shape and the SM count, so they are unit-tested without a GPU (tests/test_wgmma_plan.cpp).
// README.md ("Wave quantization and the split-K tail") explains the cost model.
#pragma once

#include <cstdint>

#include "core/conv_problem.h"

namespace jhdnn::conv::tensorcore {

constexpr int kWgmmaTilePixels = 128;    // output pixels per tile (2 consumer warpgroups x 64 rows)
constexpr int kWgmmaStageRowBytes = 128;  // reduction bytes per stage row (64 fp16/bf16, 32 fp32)

// The 128 output pixels of a tile: a bw x bh x bn box of (q, p, n), powers of two with product 128.
struct PixelBox {
  int bw = 0, bh = 0, bn = 0;
};

// The fewest tiles (least padding waste) first, then the smallest input footprint per tile (halo
// included), which favours compact boxes (16 x 8 over 1 x 64 x 2) for L2 reuse. `pixels`: the
// tile's output pixels, 128 (two consumer warpgroups) or 64 (the bm 64 configuration, one).
PixelBox pick_pixel_box(const core::ConvProblem& p, int pixels = kWgmmaTilePixels);
// Tiles of 128 pixels covering N x P x Q with box b (output-channel tiles not counted).
int64_t wgmma_pixel_tiles(const core::ConvProblem& p, const PixelBox& b);
// Reduction blocks of one tile: R * S * ceil(C / (128 bytes of channels)).
int64_t wgmma_reduction_blocks(const core::ConvProblem& p);

// What the solver runs (mirrors WgmmaConfig in tensorcore.h):
//   bn    64, 128 or 256 output channels per tile;
//   split 1, or the CTAs of a cluster sharing one 128 x 128 tile's reduction (split-K);
//   tail  false: split (if > 1) applies to every tile (one cluster per tile, one launch);
//         true: "data-parallel + split-K tail" -- the whole waves of 128-wide tiles run unsplit in
//         the persistent kernel over `grid` CTAs, and only the tiles of the last, partial wave run
//         split `split` ways in the split-K kernel (a second launch), so the last wave is spread
//         over (up to) all SMs instead of leaving most of them idle.
//   bm    128 (two consumer warpgroups, 128 output pixels per tile) or 64 (one consumer warpgroup,
//         64 pixels, two CTAs per SM; only with bn 128, no tail): small-M layers whose 128-row
//         tiles would fill at most half the SMs run twice as many tiles (README.md, "Round 6"),
//         whole reductions. bm 64 with split 2 / 4 (the push-reduction kernel, "Round 7") is
//         reachable only as a forced configuration: measured on the H200 it did not beat split 1.
//   deep  with bm 64: the 8-stage pipeline, one CTA per SM (README.md, "Round 9"), chosen when the
//         64 x 128 tiles number at most the SMs -- the block scheduler spreads such a grid one CTA
//         per SM anyway, so the second CTA's shared memory is better spent on stages.
struct WgmmaPlan {
  int bn = 128;
  int split = 1;
  bool tail = false;
  int bm = 128;
  bool deep = false;
};

// The decision (README.md, "Generation 2", "Wave quantization" and "Round 6"):
//  - when 128 x 128 tiles fill at most half the SMs and K > 64: 64 x 128 tiles (bm 64) if there are
//    between half and twice as many of them as SMs (one wave at two CTAs per SM, most SMs busy),
//    each the whole reduction (round 7's split 2 over clusters measured no faster: README.md);
//    deep (8 stages, one CTA per SM) when those tiles number at most the SMs (round 9);
//  - else split-K over a cluster for every tile when 128-wide tiles fill at most half the SMs and the
//    reduction has >= 3 blocks per CTA (the largest of 8, 4, 2 that fits in one wave);
//  - 64-wide tiles for K <= 64; 256-wide ones for K >= 256 when their waves cost less;
//  - otherwise 128-wide, and then, when the last wave is partial, the split-K tail if the cost
//    model predicts it at least 5% faster (wgmma_tail_gain).
// clusters_ok: clusters of 8 CTAs of 193 KiB fit on the device (cudaOccupancyMaxActiveClusters);
// without it nothing is split.
WgmmaPlan plan_wgmma(const core::ConvProblem& p, int sm_count, bool clusters_ok);

// How many clusters of 2, 4 and 8 split-K CTAs (193 KiB, 384 threads) the device runs at once
// (cudaOccupancyMaxActiveClusters; 0 = that size cannot launch). Clusters must fit in one GPC, so
// this can be below sm_count / s. A split (plain or tail) is only chosen when all its clusters
// are co-resident: a second wave of clusters would cost a whole extra split tile.
struct ClusterLimits {
  int of2 = 0, of4 = 0, of8 = 0;
  int of(int s) const { return s == 2 ? of2 : s == 4 ? of4 : s == 8 ? of8 : 0; }
  // The ideal limits of an sm_count-SM device (every SM usable by every cluster size), or none.
  static ClusterLimits ideal(int sm_count, bool clusters_ok) {
    ClusterLimits l;
    if (clusters_ok) {
      l.of2 = sm_count / 2, l.of4 = sm_count / 4, l.of8 = sm_count / 8;
    }
    return l;
  }
};
WgmmaPlan plan_wgmma(const core::ConvProblem& p, int sm_count, const ClusterLimits& clusters);

// Cost model, in units of the time one CTA spends on one 128 x 128 x (128-byte) reduction block.
// Unsplit persistent kernel, `tiles` tiles of kb blocks over `ctas` CTAs (one per SM):
//   ceil(tiles / ctas) * (kb + E) + F
// Split-K tail with s CTAs per tail tile (dp = the whole waves, r = tiles - dp):
//   (dp / ctas) * (kb + E) + F + [dp > 0] * L + ceil(kb / s) + F + X + E / s
// E = 1 (a tile's epilogue: the consumers store, not overlapped with their next main loop),
// F = 2 (pipeline fill: the first TMA loads' latency), L = 2 (the second launch: the first grid
// drains, the next one starts), X = 15 (the split-K kernel's fixed cost beyond its blocks: partial
// tile to shared memory, two cluster barriers, distributed-shared-memory reads, the gpu-scope fences
// and the epilogue's index arithmetic). E, F, L are estimates from the c9398a6 profile
// (rn50_c3_3x3_128: ~0.65 us per block including overheads). X is fitted: it was 2 until the H200
// measured rn50_c3_3x3_128 at 5a35705 (ncu): the whole wave took 12.4 us (21 units, ~0.59 us per
// unit), the 64-tile tail split 2 ways 15.6 us (26 units for 9 blocks), and the two together
// 26 us against 19.8 us unsplit. With X = 15 that layer and every ResNet-50 / VGG-16 layer stay
// unsplit; the tail remains for long reductions with a small partial wave (137 tiles of 72 blocks:
// 103 against 148 units unsplit), which the model still favours by a wide margin.
double wgmma_cost_unsplit(int64_t tiles, int64_t kb, int64_t ctas);
double wgmma_cost_tail(int64_t tiles, int64_t kb, int64_t ctas, int split);
// The best tail split for 128-wide tiles (0 when none is allowed or none beats unsplit by 5%):
// s in {8, 4, 2} with (tail tiles) * s <= ctas, kb >= 3 * s and, when limits are given, at most
// limits->of(s) tail tiles (clusters).
int wgmma_tail_split(int64_t tiles, int64_t kb, int64_t ctas, const ClusterLimits* limits = nullptr);

// How a tail-split run divides `tiles` tiles over a persistent grid of `grid` CTAs: the first
// dp_tiles (a whole number of waves) unsplit, the remaining tail_tiles split-K.
struct TailDivision {
  int64_t dp_tiles = 0, tail_tiles = 0;
};
TailDivision wgmma_tail_division(int64_t tiles, int64_t grid);

}  // namespace jhdnn::conv::tensorcore
