// What the features of a challenge-style network look like layer by layer (float64 CPU reference, CPU only): per
// printed layer (0: the input images) the images still active, their nonzero features per image, the share of those at the clamp, and
// the images whose whole feature row is one value (all N features equal), and (session 24) the share of the N
// feature rows (neurons) that are zero for every active image, which a layer would not need to read from memory.
// It asks whether the data has structure that an exact kernel could use, before any kernel is written.
//
//   spdnn_feature_stats [--width 16384] [--layers 120] [--every 10] [--seed 42]
//
// Inputs: the first 1200 official N = 1024 images (data/spdnn, or JHDNN_SPDNN_DIR), scaled to the width as
// spdnn_infer does; spdnn_infer tiles them to 60000 rows, whose copies have the same features, so the 1200 are
// what is counted here. Networks: tools/spdnn's generator (seed --seed), bias challenge_bias(width), clamp 32.
#include <cstdio>
#include <string>
#include <vector>

#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const int64_t n = arg_int(argc, argv, "--width", 16384);
  const int layers = arg_int(argc, argv, "--layers", 120);
  const int every = arg_int(argc, argv, "--every", 10);
  const int seed = arg_int(argc, argv, "--seed", 42);
  bool challenge = false;  // the bias is the challenge's: other widths have none
  spdnn::challenge_bias(n, &challenge);
  if (!challenge || layers < 1 || every < 1 || seed < 0) {
    std::fprintf(stderr, "usage: spdnn_feature_stats [--width 16384 (1024, 4096, 16384 or 65536)] [--layers 120] "
                         "[--every 10] [--seed 42]\n");
    return 2;
  }
  spdnn::Csr img;
  if (!spdnn::cli::read_first_images("spdnn_feature_stats", &img)) return 1;
  spdnn::CpuInference ref(spdnn::scale_images(img, n));
  const double bias = spdnn::challenge_bias(n);
  std::printf("# N %lld, 1200 images, generated network (seed %d), bias %g, clamp 32\n"
              "# layer  active  nonzero_per_image  nonzero_pct  at_clamp_pct_of_nonzero  constant_row_images"
              "  zero_rows_pct\n",
              (long long)n, seed, bias);
  // Layer 0 is the input images.
  for (int l = 0; l <= layers; ++l) {
    if (l > 0) ref.layer(spdnn::generate_layer(n, l, uint64_t(seed)), bias);
    if (l > 3 && l % every != 0 && l != layers) continue;
    int64_t active = 0, nonzero = 0, at_clamp = 0, constant = 0;
    std::vector<char> used(size_t(n), 0);  // feature row (neuron) i nonzero in some active image
    for (const auto& row : ref.rows()) {
      if (row.empty()) continue;
      ++active;
      nonzero += int64_t(row.size());
      bool same = int64_t(row.size()) == n;  // a constant row: every feature present and equal
      for (const auto& p : row) {
        used[size_t(p.first)] = 1;
        at_clamp += p.second == 32.0;
        same = same && p.second == row.front().second;
      }
      constant += same;
    }
    const double per_image = active ? double(nonzero) / double(active) : 0.0;
    int64_t zero_rows = 0;
    for (char u : used) zero_rows += !u;
    std::printf("%7d %7lld %18.1f %12.1f %24.1f %20lld %14.1f\n", l, (long long)active, per_image,
                100.0 * per_image / double(n), nonzero ? 100.0 * double(at_clamp) / double(nonzero) : 0.0,
                (long long)constant, 100.0 * double(zero_rows) / double(n));
  }
}
