// The CTA-level GEMM tile of the fused sparse-DNN layer (JHDNN_SPDNN_TILE=cta; src/sparse/cta_tile.cuh,
// src/sparse/README.md "CTA tile"): its shared-memory layout and every thread's share of the copies and
// of the compute, shared by the kernel and its CPU emulation (tests/test_spdnn_cta_tile.cpp), so that
// the emulation checks the indexing the GPU runs.
//
// Per item (a tile of 128 images r0 .. r0 + 127 of the active list x a slice of output rows), the
// slice's aligned 16-row list blocks b (rows 16 b .. 16 b + 15 of the row order) alternate between the
// two halves of the block: half h = warps 4 h .. 4 h + 3 (128 threads) takes the h-th, (h + 2)-th, ...
// block of the slice. A list block whose 16 rows share one unpadded input list I[0..31] is a 16 x 128
// GEMM block with K = 32: A[t][img] = x(I[t], col(r0 + img)), B[o][t] = W[row o][t]. Each half stages A
// and B in its own double-buffered stage; thread (w, lane) of the half then computes rows 4 og .. 4 og + 3
// (og = lane / 8) x images 32 w + 4 ig .. + 3 (ig = lane % 8): 16 accumulators.
//
// Two configurations, by the stages per half (`stages`): 2 = `cta` (double buffer, 3 blocks per SM, the
// 80-register cap), 3 = `cta2` (JHDNN_SPDNN_TILE=cta2: a 3-stage ring, so the copies run two list
// blocks ahead of the compute; 2 blocks per SM, 128 registers). The names without a stage count
// (kCtaHalfFloats, kCtaColsOffset, kCtaSmemBytes) are cta's.
#pragma once

#include "sparse/reuse_tile.h"

namespace jhdnn::sparse::tile {

constexpr int kCtaImages = 128;        // images per item (layer_shape's ipt = 4 tiles only)
constexpr int kCtaHalfThreads = 128;   // threads per half (4 warps)
constexpr int kCtaFeatFloats = 32 * kCtaImages;  // A: 32 inputs x 128 images, t-major (16 KB)
// B: the 16 rows' weights j-major in list_w_index's padded layout (rows of 32 floats at a 36-float
// stride, 4 per slab), so that one 16-byte cp.async per thread copies them and the compute's 4 LDS.128
// of one lane (4 rows x inputs t .. t + 3) fall in distinct bank groups across og.
constexpr int kCtaWeightFloats = kListWeightFloats;                  // 2304 B
constexpr int kCtaStageFloats = kCtaFeatFloats + kCtaWeightFloats;   // 18688 B
JHDNN_SPDNN_HD constexpr int cta_half_floats(int stages) { return stages * kCtaStageFloats; }  // a half's ring
// Then the item's 128 columns col(r0 + img) (0 past the count), written once per item: the gathered
// copies read them from here rather than holding 4 registers each through the compute.
JHDNN_SPDNN_HD constexpr int cta_cols_offset(int stages) { return 2 * cta_half_floats(stages); }  // 4-byte words
JHDNN_SPDNN_HD constexpr int cta_smem_bytes(int stages) { return (cta_cols_offset(stages) + kCtaImages) * 4; }
// Blocks per SM the configuration is sized for (the kernel's __launch_bounds__ minimum).
JHDNN_SPDNN_HD constexpr int cta_blocks_per_sm(int stages) { return stages == 2 ? 3 : 2; }
// sm_90: 228 KB (233472 B) of shared memory per SM, 1 KB reserved per block; the kernel's static
// s_last takes 16 B with its alignment. cta: 75264 B dynamic, 3 blocks; cta2: 112640 B, 2 blocks.
static_assert(3 * (cta_smem_bytes(2) + 16 + 1024) <= 233472, "cta's buffers must leave room for 3 blocks per SM");
static_assert(2 * (cta_smem_bytes(3) + 16 + 1024) <= 233472, "cta2's buffers must leave room for 2 blocks per SM");
static_assert(cta_smem_bytes(3) <= 232448, "cta2's dynamic shared memory must fit the sm_90 per-block opt-in limit");
constexpr int kCtaHalfFloats = cta_half_floats(2);  // cta: two stages (double buffer)
constexpr int kCtaColsOffset = cta_cols_offset(2);
constexpr int kCtaSmemBytes = cta_smem_bytes(2);     // 75264 B of dynamic shared memory

// The per-warp block-step buffers (ReuseSmem, 1280 B) of warp w of half h alias the start of the
// half's stage 0: they are used only while the half's pipeline is drained (see cta_tile.cuh).
constexpr int kCtaReuseBytes = 1280;
static_assert(4 * kCtaReuseBytes <= kCtaFeatFloats * 4, "the block-step buffers fit in one stage's A");
JHDNN_SPDNN_HD constexpr int cta_reuse_offset_bytes(int warp, int stages = 2) {  // warp 0..7 of the block
  return (warp >> 2) * cta_half_floats(stages) * 4 + (warp & 3) * kCtaReuseBytes;
}

// The layer's shape in CTA mode: 128-image tiles (the CTA tile's items) from cta_min_tiles of them on --
// half the SMs, where block mode waits for 2 x SMs (N = 1024 on the H200: from 8321 images, layers 1-5,
// where block mode has them in layers 1-3 only) -- with slices aligned to 16-row list blocks
// (align = kListOutputs), so that no list block is cut; below, 32-image tiles (block steps) in exactly
// block mode's shape. Why lower: a 128-image item costs the CTA tile ~12-20% fewer instructions than the
// block steps (README "CTA tile"), and layer_shape still makes ~4 rounds of items when tiles are many,
// else about a grid of them.
JHDNN_SPDNN_HD int64_t cta_min_tiles(int sm_count) { return sm_count / 2 > 1 ? sm_count / 2 : 1; }
JHDNN_SPDNN_HD Shape cta_layer_shape(int64_t count, int64_t n_out, int sm_count, int64_t target) {
  const Shape sh = layer_shape(count, n_out, sm_count, target, kListOutputs, cta_min_tiles(sm_count));
  return sh.ipt == 4 ? sh : layer_shape(count, n_out, sm_count, target, 1);
}

// JHDNN_SPDNN_TILE=cta2w: cta2's shape with 64-image tiles (ipt = 2) where cta2 has 32-image ones (the late
// layers: deep_steps.cuh with two images per lane, dnn_layer.cu layer_tile_deep2), the slices from the same
// target (so about twice as many per tile), aligned to 16-row list blocks: slices at multiples of 64 (align x
// kWarps / ipt) and, with warp_run(warp, 1, ..., kCta2wRunAlign), the 8 runs of a slice at multiples of 16, so
// that a challenge layer's aligned 16-row lists are never cut by a run (runs are ~2 x shorter than cta2's).
constexpr int kCta2wRunAlign = kListOutputs;
JHDNN_SPDNN_HD Shape cta2w_layer_shape(int64_t count, int64_t n_out, int sm_count, int64_t target) {
  const Shape sh = layer_shape(count, n_out, sm_count, target, kListOutputs, cta_min_tiles(sm_count));
  return sh.ipt == 4 ? sh : layer_shape(count, n_out, sm_count, target, kCta2wRunAlign, 0, 2);
}

// JHDNN_SPDNN_TILE=late4 (late4_tile.cuh): cta2's CTA tile where it runs (at least cta_min_tiles 128-image
// tiles); below it, the LATE layers, items of 128 images too, but each warp of the block takes the whole tile
// over its own list blocks of the slice (late4_warp_begin: strided, 16-row blocks every kLate4Step rows), its
// lanes 4 images each. Slices at multiples of 16 x 8 rows, from the same target as the
// other shapes (about a grid of items: one round). late4_late says which of the two a count gets.
JHDNN_SPDNN_HD bool late4_late(int64_t count, int sm_count) { return (count + 127) / 128 < cta_min_tiles(sm_count); }
JHDNN_SPDNN_HD Shape late4_layer_shape(int64_t count, int64_t n_out, int sm_count, int64_t target) {
  if (!late4_late(count, sm_count)) return cta_layer_shape(count, n_out, sm_count, target);
  Shape sh;
  sh.ipt = 4;
  sh.tiles = (count + 127) / 128;
  int64_t slices = target / sh.tiles;
  if (slices < 1) slices = 1;
  const int64_t max_slices = n_out / kMinSlice > 1 ? n_out / kMinSlice : 1;
  if (slices > max_slices) slices = max_slices;
  if (slices > 65535) slices = 65535;
  constexpr int64_t unit = int64_t(kListOutputs) * kWarps;
  sh.slice = ((n_out + slices - 1) / slices + unit - 1) / unit * unit;
  sh.slices = (n_out + sh.slice - 1) / sh.slice;
  return sh;
}
// late4's warps take a late slice's list blocks strided: warp w the 16-row blocks from j_begin + 16 w, every
// kLate4Step rows (j_begin a multiple of it: the slices above). So a CTA's 8 warps compute 8 consecutive blocks of
// the row order at a time, and with spdnn's chain order (consecutive blocks share inputs) an input row's two reads
// come close together on one SM. Against contiguous runs per warp (warp_run, late4 up to session 22) this took the
// DRAM traffic of a late layer at N = 16384 from 197 to 144 MB and its time from ~81 to ~70 us (session 23,
// bench/results/55126b7/probes, "p5:chain").
constexpr int kLate4Step = kListOutputs * kWarps;
JHDNN_SPDNN_HD int late4_warp_begin(int warp, int64_t j_begin) { return int(j_begin) + kListOutputs * warp; }

// late4's per-warp buffers (late4_tile.cuh: Late4Staged, in the
// warp's kLate4SlotBytes slot of cta2's dynamic memory): a list block's 16 index rows and 16 weight rows (rows of
// 32 padded to kLate4Row = 36 words, so the transpose's LDS.128 of 16 rows at one offset spread over the 8 bank
// groups), the blocks' output rows, the compute's weights transposed, wt[t][o] at late4_wt_index(t, o): rows of 16
// floats, inputs 16..31 16 words further on, so that the transpose's stores (lanes o and o + 16 write inputs t and
// t + 16) miss each other's banks; Late4Staged also the features' ring.
constexpr int kLate4Row = 36;
// late4's per-warp slot: an eighth of cta2's dynamic memory (14,080 bytes; the deep steps' slots are 12,736).
constexpr int kLate4SlotBytes = cta_smem_bytes(3) / kWarps;
JHDNN_SPDNN_HD constexpr int late4_slot_offset_bytes(int warp) { return warp * kLate4SlotBytes; }
static_assert(kLate4SlotBytes % 16 == 0 && kWarps * kLate4SlotBytes <= cta_smem_bytes(3), "late4's slots");
JHDNN_SPDNN_HD constexpr int late4_wt_index(int t, int o) { return t * 16 + o + (t >> 4) * 16; }
constexpr int kLate4WtFloats = late4_wt_index(31, 15) + 1;  // 528

// JHDNN_SPDNN_TILE=auto: the per-layer fused kernel's width-32 mode for weights of `rows` rows. Since session
// 17: 6 = cta2w (cta2 with 64-image late items, dnn_layer.cu kCta2wMode) at every width, because it measured
// at least as fast as every other tile at every width it ran (H200, exact, one run each unless noted;
// bench/results/3f606f3/ and tiles/): graph path N = 1024 L = 120 / 480 2.202, 2.211 / 5.817, 5.866 ms against
// cta2's 2.230, 2.226 / 5.918, 5.914 (alternating twice); N = 4096 6.61 / 13.82 against 6.99 / 15.43; N = 16384
// 28.66 / 62.60 (auto) against cta2's 30.88 / 70.68 (39e81e0); N = 65536 L = 120 120.5 against block's 130.8
// (cta2 129.2 at 04b5614); the resident path's fused head at N = 1024 / 4096 within the spread (1.769, 1.763
// vs 1.789, 1.762 ms; 6.66, 6.72 vs 6.76, 6.69). Before: cta2 up to 4096 rows (16384 since b8d0970), block
// above; the choice stays a function of the rows (what the host knows: the active count is on the device and
// the graph path is captured once) for the next tile that wins only at some widths.
// Since session 21: 7 = late4 for 4096 < rows <= 16384 (measured at N = 16384 only, 7ab6788, alternating twice,
// exact: graph path L = 480 60.72 / 60.94 ms against cta2w's 63.21 / 63.27, L = 120 28.81 / 28.82 against 29.08 /
// 28.88; ncu late layer 86.5-89.1 us against 100.4-103.6); not at 65536 rows, where late4 measured slower (L = 120
// 130.0 against 123.0 ms, one run each), nor at 4096 rows and below (not measured there). With the features
// staged (84e3c59): N = 16384 L = 480 56.67 against cta2w's 62.38 ms (one run each).
// Since session 23: late4 above 4096 rows, 65536 included. With late4's strided warps (late4_warp_begin) and
// spdnn's chain order (040f24d, bench/results/040f24d/, graph path, alternating twice, chain order): N = 65536
// L = 120 / 480 106.7, 107.7 / 248.2, 247.0 ms against cta2w's 111.9, 112.0 / 267.8, 267.4 (exact: late4 at
// N = 16384 L = 120 / 480 and cta2w at 65536 L = 120 under the chain order; late4 at 65536 in the verifying run).
// Under the sorted order late4 at 65536 rows is not measured since the strided warps.
// Since session 24: 8 = late4all (late4 in the crowded layers too, where late4 runs cta2's CTA tile) above 4096
// rows (bench/results/6db33ed/, graph path, chain order, alternating twice, exact at N = 16384 L = 120 and N = 65536
// L = 120): N = 16384 L = 120 / 480 22.65-22.70 / 47.86-47.95 ms against late4's 24.66-24.84 / 49.72-49.88,
// N = 65536 L = 120 101.5-102.0 against 108.4-108.9 (ncu, N = 16384: layer 1 2.91 against 3.74 ms, layers 1-12
// 15.1 against 17.2 ms).
// Since session 25: 9 = late4crowd (late4's items in the crowded layers, cta2w's in the late ones) up to 4096 rows
// (bench/results/ca29f1f/, 2808f50/, alternating twice): late4all's crowded items won at N = 1024 / 4096 on the
// resident path (L = 120 1.60-1.64 / 5.35 ms against cta2w's 1.76-1.77 / 5.83-5.90) and on the graph path at 4096
// (6.0 against 6.39), but its late items lost on the graph path at 1024 rows (L = 480 6.7-6.9 against 5.8 ms).
JHDNN_SPDNN_HD constexpr int spdnn_auto_tile(int64_t rows) { return rows > 4096 ? 8 : 9; }

// late4crowd's late layers of many images (session 29, branch wip-late4crowd-rule): late4's 128-image late items
// (late4_layer_shape), not cta2w's 64-image ones, from kLate4CrowdLate4Images images on when the layer has more than
// 2048 rows. Why: ncu of the N = 4096 head one launch at a time (bench/results/ec4fff9/head-tiles, caches flushed
// before each launch) gave layers 6 / 7 (6550 / 3500 images) 146 / 83 us under late4 against 191 / 103 under
// cta2w, layers 8-12 (2600 .. 1050 images) about the same or slower, and N = 1024's layer 6 (4900 images) slower
// (45.7 against 36.6 us); late4all, which runs late4's items in every late layer, was 1% faster than late4crowd on
// the resident path at N = 4096 (head only) and 2% slower on the graph path (~470 late layers of 950 images).
constexpr int64_t kLate4CrowdLate4Images = 3072;
JHDNN_SPDNN_HD constexpr bool late4crowd_late4_items(int64_t count, int64_t rows) {
  return rows > 2048 && count >= kLate4CrowdLate4Images;
}
// late4crowd's shape: late4's (128-image items, late4_item) where late4_late is false or late4crowd_late4_items
// holds, else cta2w's (64-image items); so late4crowd runs late4's items exactly where the shape's ipt is 4.
JHDNN_SPDNN_HD Shape late4crowd_layer_shape(int64_t count, int64_t n_out, int sm_count, int64_t target) {
  return late4crowd_late4_items(count, n_out) ? late4_layer_shape(count, n_out, sm_count, target)
                                              : cta2w_layer_shape(count, n_out, sm_count, target);
}

// cta2's pipelined block steps (deep_steps.cuh: reuse_range_deep; DeepSmem, 12736 B per warp: three steps'
// index and weight rows, a list's row pointers, the steps' outputs) run in the 32-image items, where no CTA
// tile runs in the same launch (cta_layer_shape: one shape per layer), so the whole dynamic buffer is free:
// warp w's at w x kCtaDeepBytes from its start.
constexpr int kCtaDeepBytes = 12736;
JHDNN_SPDNN_HD constexpr int cta_deep_offset_bytes(int warp) { return warp * kCtaDeepBytes; }
static_assert(kWarps * kCtaDeepBytes <= cta_smem_bytes(3),
              "the pipelined block steps' buffers fit cta2's dynamic shared memory");

// Floats from the dynamic buffer's start: half h, stage s.
JHDNN_SPDNN_HD constexpr int cta_stage_offset(int h, int s, int stages = 2) {
  return h * cta_half_floats(stages) + s * kCtaStageFloats;
}
// The stage ring (cta_pipeline): the half's k-th list block of a chunk (k = 0 .. 31) lives in stage
// cta_stage(k) and is copied cta_ahead() blocks before it is computed, in the iteration that computes
// block k - cta_ahead(), into the stage that block k - cta_ahead() - 1 was computed from: so a stage is
// overwritten only after the half barrier that follows its last reads.
JHDNN_SPDNN_HD constexpr int cta_ahead(int stages) { return stages - 1; }
JHDNN_SPDNN_HD constexpr int cta_stage(int k, int stages) {
  return stages == 2 ? (k & 1) : int(unsigned(k) % unsigned(stages));
}
// Within a stage: A[t][img] and B[o][t].
JHDNN_SPDNN_HD constexpr int cta_f_index(int t, int img) { return t * kCtaImages + img; }
JHDNN_SPDNN_HD constexpr int cta_w_index(int o, int t) {
  return kCtaFeatFloats + (o & 3) * kListWSlab + (o >> 2) * kListWRow + t;
}

// The slice [j_begin, j_end) as full list blocks [*b0, *b1) (b0 = ceil(j_begin / 16)), a head
// [j_begin, 16 b0) and a tail [16 b1, j_end) (either may be empty; with layer_shape's align = 16 the
// head always is). Half h takes blocks b0 + h + 2 k, k = 0 .. cta_half_blocks - 1; the head and tail
// run as block steps in half 0 and half 1.
JHDNN_SPDNN_HD void cta_blocks(int64_t j_begin, int64_t j_end, int* b0, int* b1) {
  *b0 = int((j_begin + kListOutputs - 1) / kListOutputs);
  *b1 = int(j_end / kListOutputs);
  if (*b1 < *b0) *b1 = *b0;
}
JHDNN_SPDNN_HD constexpr int cta_half_blocks(int b0, int b1, int h) { return b1 - b0 > h ? (b1 - b0 - h + 1) / 2 : 0; }

// The copies of thread (w, lane) of a half (w = 0..3) for one list block, k8 = 0..7:
// - features, contiguous columns (16 bytes each): input t = w + 4 k8, images 4 lane .. 4 lane + 3;
// - features, gathered (4 bytes each, m = 0..3): input t = w + 4 k8, image lane + 32 m;
// - weights (16 bytes): row 4 w + lane / 8, inputs 4 (lane % 8) .. + 3; the list test reads the same
//   16 bytes of that row's indices against row 0's.
JHDNN_SPDNN_HD constexpr int cta_copy_input(int w, int k8) { return w + 4 * k8; }
JHDNN_SPDNN_HD constexpr int cta_copy_image4(int lane) { return 4 * lane; }
JHDNN_SPDNN_HD constexpr int cta_gather_image(int lane, int m) { return lane + 32 * m; }
JHDNN_SPDNN_HD constexpr int cta_copy_row(int w, int lane) { return 4 * w + (lane >> 3); }
JHDNN_SPDNN_HD constexpr int cta_copy_chunk(int lane) { return 4 * (lane & 7); }
// The compute of thread (w, lane): rows cta_row(lane, u), images cta_image(w, lane, i), u, i = 0..3.
JHDNN_SPDNN_HD constexpr int cta_row(int lane, int u) { return 4 * (lane >> 3) + u; }
JHDNN_SPDNN_HD constexpr int cta_image(int w, int lane, int i) { return 32 * w + 4 * (lane & 7) + i; }

}  // namespace jhdnn::sparse::tile
