// A model of the L2 traffic of late4's late layers (src/sparse/README.md "Late4"), to predict how the row order
// and the warps' block assignment change the DRAM traffic before a GPU call measures it. CPU only.
//
//   spdnn_l2_model [--width 16384] [--images 1200] [--first-layer 41] [--layers 6] [--l2-mib 50]
//                  [--order sorted|chain] [--warps runs|strided]
//
// What it simulates (and what it leaves out): the generated network's layers (tools/spdnn), each in the given row
// order; the late4 item grid of the H200 (late4_layer_shape: tiles of 128 images x slices of 640 rows, all items
// at once, 8 warps an item); each warp's list blocks (runs: a contiguous run of the slice's blocks, as late4 up
// to 55126b7; strided: blocks w, w + 8, ..., as late4 since session 23) in block steps, every warp's step at the
// same time; per step the warps' feature reads quad by quad (4 input rows x the tile's bytes), interleaved over
// all warps, the block's 16 weight / index rows (4 KB) before them and its 16 output rows after; one LRU cache of
// --l2-mib (the L2 as one pool: its two partitions, the sectors, the prefetch distance and the order the SMs
// really run in are left out). A layer's features are the previous layer's outputs (what it left in the cache counts). Per layer it
// prints the DRAM bytes read (misses) and written (dirty pieces evicted), in MB (10^6 bytes).
// Calibration (session 22): the H200 measured 197 MB per late layer (ncu dram__bytes, N = 16384, launches 40-41,
// sorted order, runs); compare this model's sorted / runs line with it before reading the others.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "sparse/cta_tile.h"  // late4_layer_shape, late4_warp_begin, warp_run: the kernel's own item grid
#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

namespace {

struct Lru {
  explicit Lru(double bytes) : capacity(bytes) {}
  struct Piece {
    uint64_t id;
    double bytes;
    bool dirty;
  };
  double capacity, held = 0, read = 0, written = 0;
  std::list<Piece> pieces;  // most recent first
  std::unordered_map<uint64_t, std::list<Piece>::iterator> where;
  void touch(uint64_t id, double bytes, bool write) {
    auto it = where.find(id);
    if (it != where.end()) {
      it->second->dirty = it->second->dirty || write;
      pieces.splice(pieces.begin(), pieces, it->second);
      return;
    }
    if (!write) read += bytes;  // a miss: from DRAM (a write allocates without reading: whole sectors)
    pieces.push_front({id, bytes, write});
    where[id] = pieces.begin();
    held += bytes;
    while (held > capacity && !pieces.empty()) {
      const Piece& p = pieces.back();
      if (p.dirty) written += p.bytes;
      held -= p.bytes;
      where.erase(p.id);
      pieces.pop_back();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  using spdnn::cli::arg_str;
  const int64_t n = arg_int(argc, argv, "--width", 16384);
  const int images = arg_int(argc, argv, "--images", 1200);
  const int first = arg_int(argc, argv, "--first-layer", 41);
  const int layers = arg_int(argc, argv, "--layers", 6);
  const double l2 = arg_int(argc, argv, "--l2-mib", 50) * 1048576.0;
  const std::string order = arg_str(argc, argv, "--order", "sorted"), warps = arg_str(argc, argv, "--warps", "runs");
  if ((order != "sorted" && order != "chain") || (warps != "runs" && warps != "strided") || n < 1024 ||
      !spdnn::generator_width_ok(n) || images < 1 ||
      layers < 1 || first < 1 || l2 <= 0) {
    std::fprintf(stderr, "usage: spdnn_l2_model [--width 16384] [--images 1200] [--first-layer 41] [--layers 6] "
                         "[--l2-mib 50] [--order sorted|chain] [--warps runs|strided]\n");
    return 2;
  }
  // the kernel's item grid on the H200 (132 SMs, a grid of 2 blocks per SM)
  namespace tile = jhdnn::sparse::tile;
  const tile::Shape sh = tile::late4_layer_shape(images, n, 132, 264);
  if (!tile::late4_late(images, 132)) {
    std::fprintf(stderr, "spdnn_l2_model: %d images are not a late layer (late4 runs them on cta2's tile)\n", images);
    return 2;
  }
  const int tiles = int(sh.tiles);
  const int64_t slices = sh.slices, slice = sh.slice;
  auto tile_bytes = [&](int t) { return 4.0 * (t + 1 < tiles ? 128 : images - 128 * (tiles - 1)); };
  Lru cache(l2);
  std::printf("# N %lld, %d images (%d tiles x %lld slices of %lld rows), layers %d..%d, L2 %.0f MiB, order %s, "
              "warps %s\n# layer  DRAM_read_MB  DRAM_write_MB  total_MB\n",
              (long long)n, images, tiles, (long long)slices, (long long)slice, first, first + layers - 1, l2 / 1048576,
              order.c_str(), warps.c_str());
  for (int l = first; l < first + layers; ++l) {
    const spdnn::Ell e = spdnn::generate_layer_ell(n, l, 42);
    const std::vector<int> o = order == "chain" ? spdnn::chain_order(e) : spdnn::reuse_order(e);
    const double r0 = cache.read, w0 = cache.written;
    const uint64_t xbuf = uint64_t((l + 1) & 1), ybuf = uint64_t(l & 1);
    auto piece = [&](uint64_t buf, int64_t row, int t) { return ((buf * uint64_t(n) + uint64_t(row)) << 8) | uint64_t(t); };
    const uint64_t wtag = uint64_t(1) << 62;  // weight / index rows of block (layer, b)
    // each warp's block of this step (positions, multiples of 16, in the order)
    for (int step = 0;; ++step) {
      struct Work {
        int t;
        int64_t p;
      };
      std::vector<Work> work;
      for (int64_t s = 0; s < slices; ++s)
        for (int t = 0; t < tiles; ++t)
          for (int w = 0; w < 8; ++w) {
            const int64_t begin = s * slice, end = begin + slice < n ? begin + slice : n;
            int64_t p;  // this warp's block of this step
            if (warps == "runs") {  // late4 at 55126b7
              const tile::Run run = tile::warp_run(w, 1, begin, end, tile::kListOutputs);
              p = run.begin + 16 * int64_t(step);
              if (p >= run.end) continue;
            } else {  // late4 since session 23 (probe p5 in session 22)
              p = tile::late4_warp_begin(w, begin) + tile::kLate4Step * int64_t(step);
              if (p >= end) continue;
            }
            work.push_back({t, p});
          }
      if (work.empty()) break;
      for (const Work& wk : work) cache.touch(wtag | (uint64_t(l) << 32) | uint64_t(wk.p), 4096, false);
      for (int q = 0; q < 8; ++q)
        for (const Work& wk : work) {
          const int row0 = o[wk.p];
          for (int u = 0; u < 4; ++u) {
            const int in = e.idx[int64_t(row0) * e.width + 4 * q + u];
            if (in >= 0) cache.touch(piece(xbuf, in, wk.t), tile_bytes(wk.t), false);
          }
        }
      for (const Work& wk : work)
        for (int r = 0; r < 16 && wk.p + r < n; ++r) cache.touch(piece(ybuf, o[wk.p + r], wk.t), tile_bytes(wk.t), true);
    }
    const double rd = (cache.read - r0) / 1e6, wr = (cache.written - w0) / 1e6;
    std::printf("%7d  %12.1f  %13.1f  %8.1f\n", l, rd, wr, rd + wr);
  }
  return 0;
}
