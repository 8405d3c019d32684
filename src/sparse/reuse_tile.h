// The fused sparse-DNN layer's work split (dnn_layer.cu: layer_shape, layer_tile_reuse), shared by the
// kernels and their CPU emulation (tests/test_spdnn_reuse_tile.cpp), so that the emulation checks the
// same tiles, slices and output runs the GPU runs.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define JHDNN_SPDNN_HD __host__ __device__ __forceinline__
#else
#define JHDNN_SPDNN_HD inline
#endif

namespace jhdnn::sparse::tile {

constexpr int kWarps = 8;      // warps per block of the layer kernels
constexpr int kMinSlice = 64;  // outputs per block at least (keeps the weight registers busy)

struct Shape {
  int ipt;  // groups of 32 images per tile (4 or 1; cta2w's late layers: 2)
  int64_t tiles, slices, slice;
};

// The fused kernel's launch shape for `count` active images (the host launcher of round 1 computes
// the equivalent with target = 4 * SMs, rounded up): four images per lane while there are enough
// 128-image tiles for two waves, else one; the outputs split into slices so that about `target`
// work items exist even when few images are left (but at least kMinSlice outputs per slice). The
// fused kernel passes target = its resident grid and rounds down, so that in the late layers (a few
// hundred images) every item runs in the first and only round: a second round would double the
// chain of outputs each warp walks. With at least half a grid of tiles, the target is 4 grids.
// Width-32 layers (layer_tile_reuse) use the same shape: with 60000 images, 469 tiles of 128 images
// x 3 slices (1407 items, ~3.6 per block of a 396-block grid), each tile's 4 groups of 32 images
// sharing 2 runs of outputs per slice (see layer_tile_reuse).
// align (the list tile: kListOutputs, else 1): slices are rounded up to a multiple of align x the
// warps' runs per slice, so that every slice and run begins at a multiple of align in the row order
// (warp_run with the same align) and the challenge's aligned 16-row lists are never cut.
// min_tiles4 (the CTA tile, cta_tile.h: cta_layer_shape): 128-image tiles from this many on (0: 2 x SMs).
// ipt_low (cta2w, cta_tile.h: cta2w_layer_shape): the tile's groups of 32 images below that (1, or 2: 64-image tiles).
JHDNN_SPDNN_HD Shape layer_shape(int64_t count, int64_t n_out, int sm_count, int64_t target, int align = 1,
                                 int64_t min_tiles4 = 0, int ipt_low = 1) {
  Shape sh;
  sh.ipt = (count + 127) / 128 >= (min_tiles4 > 0 ? min_tiles4 : 2 * int64_t(sm_count)) ? 4 : ipt_low;
  sh.tiles = (count + 32 * sh.ipt - 1) / (32 * sh.ipt);
  // Many tiles (the first layers): ~4 rounds of items, so the last, partial round is a small tail.
  if (2 * sh.tiles >= target) target *= 4;
  int64_t slices = target / sh.tiles;
  if (slices < 1) slices = 1;
  const int64_t max_slices = n_out / kMinSlice > 1 ? n_out / kMinSlice : 1;
  if (slices > max_slices) slices = max_slices;
  if (slices > 65535) slices = 65535;
  sh.slice = (n_out + slices - 1) / slices;
  if (align > 1) {  // align x runs per slice (kWarps / groups); align 1 leaves round 2's shape alone
    const int64_t unit = int64_t(align) * (kWarps / sh.ipt);
    sh.slice = (sh.slice + unit - 1) / unit * unit;
  }
  sh.slices = (n_out + sh.slice - 1) / sh.slice;
  return sh;
}

// layer_tile_reuse's split of one item (a tile of `groups` x 32 images, outputs [j_begin, j_end) of
// the row order) over the block's warps: warp w serves image group w / runs (runs = kWarps / groups)
// and the contiguous run w % runs of the slice, outputs [begin, end) (empty when begin == end).
// align: runs are rounded up to a multiple of it (layer_shape's align; with j_begin a multiple of
// it, every run then begins at one). Outputs fit int: the API requires rows < INT_MAX.
struct Run {
  int group, begin, end;
};
JHDNN_SPDNN_HD Run warp_run(int warp, int groups, int64_t j_begin, int64_t j_end, int align = 1) {
  const int runs = kWarps / groups;  // groups is 1, 2 or 4 (layer_shape's ipt): 8, 4 or 2 runs
  int64_t per = (j_end - j_begin + runs - 1) / runs;
  per = (per + align - 1) / align * align;
  const int64_t b = j_begin + int64_t(warp % runs) * per;
  const int64_t begin = b < j_end ? b : j_end;
  const int64_t end = begin + per < j_end ? begin + per : j_end;
  return {warp / runs, int(begin), int(end)};
}

// layer_tile_reuse walks a run in groups of at most 32 outputs [g0, group_end) (lane l loads the
// order entry g0 + l once). Block steps (JHDNN_SPDNN_TILE=block) stay inside a group, so there the
// groups end at multiples of 32 of the row order: input lists that are aligned runs of 16 rows (the
// challenge layers in their reuse order) never straddle a group boundary, and only a run's first
// and last list can be cut. One output at a time, groups are simply 32 long.
JHDNN_SPDNN_HD int group_end(int g0, int t_end, bool block) {
  const int room = block ? 32 - (g0 & 31) : 32;  // g0 >= 0
  return t_end - g0 <= room ? t_end : g0 + room;
}

// cta2's pipelined block steps (deep_steps.cuh: reuse_range_deep; shared with the CPU emulation): steps of
// up to kDeepOutputs outputs that share the held list (the challenge's 16 rows per list). A step at
// row-order position p of the group [g0, g1) (group_end with block = true) takes, in lane l, the output at
// position deep_piece_pos(p, g1, l) (o = l % 16: output p + o; lanes o and o + 16 hold the same) --
// clamped to the group's last position, a valid row whose list the vote drops. The lane's order entry of
// the group: deep_order_entry (0 past the group: a valid row, never stored).
constexpr int kDeepOutputs = 16;
JHDNN_SPDNN_HD int deep_piece_pos(int p, int g1, int lane) {
  const int q = p + (lane & (kDeepOutputs - 1));
  return q < g1 ? q : g1 - 1;
}
JHDNN_SPDNN_HD int deep_order_entry(const int* order, int g0, int g1, int lane) {
  return g0 + lane < g1 ? (order ? order[g0 + lane] : g0 + lane) : 0;
}

}  // namespace jhdnn::sparse::tile

namespace jhdnn::sparse::tile {

// ---------------------------------------------------------------- list-blocked tile (JHDNN_SPDNN_TILE=list)
// Shared by the kernel (src/sparse/list_tile.cuh) and its CPU emulation. A "list block" is an aligned
// block of kListOutputs positions of the row order, [16 b, 16 b + 16), that lies wholly inside a warp's
// run; when its 16 outputs share one input list without padding, the warp computes it as a 16 x 32
// (outputs x images) tile from shared memory. Each warp owns two stages (double buffer) of
// kListStageFloats floats: the list's features f(t, image) (32 x 32) then the 16 rows' weights.
constexpr int kListOutputs = 16;
constexpr int kListFeatFloats = 32 * 32;  // 4 KB
// Weight rows: output o = 4 og + u (the compute's lane og = lane / 8 holds outputs 4 og .. 4 og + 3)
// at u * kListWSlab + og * kListWRow: rows of 32 floats padded to 36 (144 bytes), 4 per slab.
constexpr int kListWRow = 36;
constexpr int kListWSlab = 4 * kListWRow;
constexpr int kListWeightFloats = 4 * kListWSlab;                      // 2304 B
constexpr int kListStageFloats = kListFeatFloats + kListWeightFloats;  // 6400 B
constexpr int kListWarpFloats = 2 * kListStageFloats;                  // 12800 B: two stages
constexpr int kListSmemBytes = kWarps * kListWarpFloats * 4;           // 100 KB of dynamic shared memory per block

// Feature t of image slot q (0..31: lane q's image) within a stage: row t is one 128-byte line, so
// the compute's LDS.128 of images 4 ig .. 4 ig + 3 (8 distinct 16-byte chunks, ig = 0..7) and the
// gather's 4-byte stores (lane q -> word q) are both conflict-free.
JHDNN_SPDNN_HD int list_f_index(int t, int q) { return t * 32 + q; }
// Weight t of the block's output o. One weight LDS.128 of the compute reads 4 distinct addresses
// (outputs 4 og + u, og = 0..3, the same inputs t .. t + 3): with rows of 128 bytes they would all
// fall in banks 4 (t / 4) .. + 3 (4-way conflict); the 144-byte row stride moves og's row by
// 16 bytes of banks each, so the four are in different bank groups. Rows stay 16-byte aligned for the
// cp.async pieces, and every address is a lane base (og) plus a constant (u, t): no address
// arithmetic in the FMA loop.
JHDNN_SPDNN_HD int list_w_index(int o, int t) {
  return kListFeatFloats + (o & 3) * kListWSlab + (o >> 2) * kListWRow + t;
}

// The list blocks of a run [begin, end): b in [*b0, *b1); *b0 == *b1 when none lies wholly inside.
JHDNN_SPDNN_HD void list_blocks(int begin, int end, int* b0, int* b1) {
  *b0 = (begin + kListOutputs - 1) / kListOutputs;  // begin >= 0
  *b1 = end / kListOutputs;
  if (*b1 < *b0) *b1 = *b0;
}

}  // namespace jhdnn::sparse::tile
