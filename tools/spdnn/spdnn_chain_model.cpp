// A model of the planes kernels' input reads (src/sparse/dnn_resident_tc_planes.cu, session 58): a unit of one group
// x 64 columns copies the group's two input blocks (16 plane rows each), so every block is read twice a layer (each
// is read by two groups). A warp that took a run of R groups along a chain -- each group after the first sharing a
// block with the one before it -- would copy the shared block once: k + 1 blocks for k groups. CPU only; nothing
// here ran on a GPU.
//
//   spdnn_chain_model [--width 16384] [--layers 20] [--run 4]
//
// For the generated challenge layers (tools/spdnn, seed 42) in the tensor-core tables' group order (build_tc_tables),
// it walks the groups greedily into chains (from the first group not yet taken, each next group an untaken reader of
// the block the last one did not share with the one before it, else of its other block; a run restarts every R groups
// and where a chain ends: a group copies the blocks the group before it in its run did not hold) and prints, per
// layer and on average, the blocks copied a group: 2.0 without chains.
#include <cstdio>
#include <string>
#include <vector>

#include "sparse/tc_tables.h"
#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

int main(int argc, char** argv) {
  const int n = spdnn::cli::arg_int(argc, argv, "--width", 16384);
  const int layers = spdnn::cli::arg_int(argc, argv, "--layers", 20);
  const int run_len = spdnn::cli::arg_int(argc, argv, "--run", 4);
  if (n < 1024 || n % 1024 != 0 || layers < 1 || run_len < 1) {
    std::fprintf(stderr, "spdnn_chain_model: --width a multiple of 1024, --layers and --run >= 1\n");
    return 2;
  }
  double sum = 0.0;
  for (int l = 1; l <= layers; ++l) {
    const spdnn::Ell e = spdnn::generate_layer_ell(n, l, 42);
    jhdnn::sparse::TcLayerTables t;
    const std::string why = jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t);
    if (!why.empty()) {
      std::fprintf(stderr, "spdnn_chain_model: layer %d: %s\n", l, why.c_str());
      return 1;
    }
    const int groups = n / 16;
    auto block = [&](int g, int k) { return t.bcol[size_t(2 * g + k)] / 16; };
    std::vector<std::vector<int>> readers(static_cast<size_t>(groups));  // block -> the groups that read it
    for (int g = 0; g < groups; ++g)
      for (int k = 0; k < 2; ++k) readers[size_t(block(g, k))].push_back(g);
    std::vector<char> taken(static_cast<size_t>(groups), 0);
    long copies = 0;
    for (int first = 0; first < groups; ++first) {
      int g = first, h0 = -1, h1 = -1, in_run = 0;  // h0, h1: the blocks the warp still has from the group before
      while (g >= 0 && !taken[size_t(g)]) {
        taken[size_t(g)] = 1;
        const int b0 = block(g, 0), b1 = block(g, 1);
        const bool has0 = in_run > 0 && (b0 == h0 || b0 == h1), has1 = in_run > 0 && (b1 == h0 || b1 == h1);
        copies += (has0 ? 0 : 1) + (b1 == b0 || has1 ? 0 : 1);
        in_run = (in_run + 1) % run_len;
        // the next group: an untaken reader of the block this one did not share with the one before, else of the other
        const int first_try = has0 ? b1 : b0, second_try = has0 ? b0 : b1;
        h0 = b0;
        h1 = b1;
        g = -1;
        for (int b : {first_try, second_try})
          for (int h : readers[size_t(b)])
            if (g < 0 && !taken[size_t(h)]) g = h;
      }
    }
    const double per = double(copies) / groups;
    sum += per;
    std::printf("layer %3d: %.3f blocks copied a group\n", l, per);
  }
  std::printf("N %d, runs of %d: %.3f blocks copied a group over layers 1-%d (2.000 without chains)\n", n, run_len,
              sum / layers, layers);
  return 0;
}
