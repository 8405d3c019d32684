// How many 32-byte sectors late4's 4-byte feature copies touch in the scattered (crowded and middle) layers, for two
// mappings of a tile's 128 images to the lanes (src/sparse/late4_tile.cuh, kGather; the strided mapping was built
// and measured slower in session 25, bench/results/c5dcbdc/: the count below did not predict the time). CPU only: a
// count over the active lists, not a cache model.
//
//   spdnn_gather_model [--width 16384] [--layers 6] [--seed 42]
//
// The lists: the first 1200 official images scaled to the width (float64 CPU reference, tools/spdnn's generated
// network), tiled to 60000 rows as spdnn_infer tiles them, so an image survives a layer when its source image does.
// Layer l's entering list holds the positions, in layer l - 1's output, of its survivors: a layer writes its output
// at the position of each entering image, and the compaction appends each 32-image group's survivors in order, the
// groups in ascending order here (on the GPU in the order their tiles finish: the model's order is its best case).
// Per layer, over its tiles of 128 list entries, one warp instruction per (mapping, m), the 32 lanes' columns:
//   consecutive (main): lane l copies entry 4 l + m;   strided (the branch): lane l copies entry l + 32 m.
// It prints the sectors per instruction (one input row; every input row of a tile repeats the pattern) and the
// tile's distinct sectors, the least any mapping can touch.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

namespace {

constexpr int kImages = 60000, kDistinct = 1200, kTile = 128;

struct Count {
  double instructions = 0, sectors_consecutive = 0, sectors_strided = 0, sectors_union = 0;
};

// cols: layer's entering list (the columns of its input features), in list order.
Count count_sectors(const std::vector<int>& cols) {
  Count c;
  const int count = int(cols.size());
  for (int t0 = 0; t0 < count; t0 += kTile) {
    std::set<int> tile_sectors;
    for (int m = 0; m < 4; ++m) {
      std::set<int> a, b;
      for (int l = 0; l < 32; ++l) {
        const int ea = t0 + 4 * l + m, eb = t0 + l + 32 * m;
        if (ea < count) a.insert(cols[ea] / 8);  // 8 floats a sector
        if (eb < count) b.insert(cols[eb] / 8);
      }
      c.sectors_consecutive += double(a.size());
      c.sectors_strided += double(b.size());
      tile_sectors.insert(a.begin(), a.end());
      c.instructions += 1;
    }
    c.sectors_union += double(tile_sectors.size());
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const int64_t n = arg_int(argc, argv, "--width", 16384);
  const int layers = arg_int(argc, argv, "--layers", 6);
  const int seed = arg_int(argc, argv, "--seed", 42);
  bool challenge = false;  // the bias is the challenge's: other widths have none
  spdnn::challenge_bias(n, &challenge);
  if (!challenge || layers < 1 || seed < 0) {
    std::fprintf(stderr,
                 "usage: spdnn_gather_model [--width 16384 (1024, 4096, 16384 or 65536)] [--layers 6] [--seed 42]\n");
    return 2;
  }
  spdnn::Csr img;
  if (!spdnn::cli::read_first_images("spdnn_gather_model", &img)) return 1;
  spdnn::CpuInference ref(spdnn::scale_images(img, n));
  const double bias = spdnn::challenge_bias(n);
  // The entering list of layer 1: every image at its own column; ids = the source image (t mod 1200).
  std::vector<int> cols(kImages), ids(kImages);
  for (int t = 0; t < kImages; ++t) cols[t] = ids[t] = t;
  std::printf("# N %lld, 60000 images (1200 tiled), generated network (seed %d); sectors of 32 bytes per warp "
              "instruction of 32 lanes x 4 bytes\n"
              "# layer  entering  sectors_per_instr_consecutive  sectors_per_instr_strided  tile_union_per_instr\n",
              (long long)n, seed);
  for (int l = 1; l <= layers; ++l) {
    const Count c = count_sectors(cols);
    std::printf("%7d %9zu %30.2f %26.2f %21.2f\n", l, cols.size(), c.sectors_consecutive / c.instructions,
                c.sectors_strided / c.instructions, c.sectors_union / c.instructions);
    ref.layer(spdnn::generate_layer(n, l, uint64_t(seed)), bias);
    // Layer l writes position p of its list; the next list: the survivors' positions, group by group.
    std::vector<int> next_cols, next_ids;
    for (size_t p = 0; p < cols.size(); ++p)
      if (!ref.rows()[size_t(ids[p] % kDistinct)].empty()) {
        next_cols.push_back(int(p));
        next_ids.push_back(ids[p]);
      }
    cols.swap(next_cols);
    ids.swap(next_ids);
  }
}
