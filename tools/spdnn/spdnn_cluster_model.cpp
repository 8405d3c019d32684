// A model of a tensor-core head for widths past 1024 on thread-block clusters (docs/perf-notes.md session 51, "Next,
// a plan"): the N = 1024 kernel's CTA (16 warps x 4 groups of 16 rows, the A fragments in registers) repeated c = N /
// 1024 times in one cluster, CTA r owning 1/c of every layer's groups and of the tile's features. A layer's output
// that a group of another CTA reads next would cross distributed shared memory (written by the producer's epilogue
// into the consumer's buffer, one cluster barrier a layer). CPU only; nothing here ran on a GPU.
//
//   spdnn_cluster_model [--width 4096] [--layers 5] [--images 16]
//
// For the generated challenge layers (tools/spdnn, seed 42: the official ones at N = 1024) in the tensor-core tables'
// order (build_tc_tables: groups of 16 rows in reuse order), per pair of layers l, l + 1 it counts the (input,
// reading group) pairs of layer l + 1 whose input was produced by another CTA, for two assignments of groups to CTAs:
//   contiguous: group g of every layer to CTA g * c / G (G = N / 16 groups);
//   greedy:     layer 1 contiguous; each later layer's groups, most-local first, to the CTA that produced most of
//               their inputs, at most G / c groups a CTA.
// It prints those shares, the feature bytes a CTA sends per tile and layer (remote pairs x images x 2 bytes, one bf16
// piece), and a CTA's shared memory for two feature buffers of the tile (its N / c rows). Then, for the library's
// split (session 52: build_tc_cluster_slots, tc_cluster_destinations; contiguous), how the copies into other CTAs
// fall on the kernel's warps (16 a CTA, 4 groups each): per layer the warps that send any, and the most and the mean
// (output row, other CTA) copies a warp sends, the work the warps that send do while the others wait at the layer's
// barrier; and how many of the copies are of rows the sending CTA does not read itself (no local copy to send from).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sparse/tc_tables.h"
#include "spdnn/cli_args.h"
#include "spdnn/spdnn.h"

namespace {

struct Layer {
  int groups = 0;
  std::vector<int> group_of;                 // output row j -> its group (position in the order / 16)
  std::vector<std::vector<int>> inputs_of;   // group -> the distinct inputs its 16 rows read
  jhdnn::sparse::TcLayerTables tables;       // the library's (build_tc_tables)
};

Layer tc_layer(int64_t n, int l, std::string* why) {
  const spdnn::Ell e = spdnn::generate_layer_ell(n, l, 42);
  Layer L;
  jhdnn::sparse::TcLayerTables& t = L.tables;
  *why = jhdnn::sparse::build_tc_tables(e.rows, e.cols, e.width, e.idx.data(), e.val.data(), &t);
  if (!why->empty()) return L;
  L.groups = int(e.rows / 16);
  L.group_of.assign(size_t(e.rows), 0);
  L.inputs_of.resize(size_t(L.groups));
  for (int p = 0; p < int(e.rows); ++p) {
    const int j = t.order[size_t(p)], g = p / 16;
    L.group_of[size_t(j)] = g;
    for (int64_t k = 0; k < e.width; ++k) {
      const int i = e.idx[size_t(int64_t(j) * e.width + k)];
      if (i >= 0) L.inputs_of[size_t(g)].push_back(i);
    }
  }
  for (auto& in : L.inputs_of) {
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
  }
  return L;
}

std::vector<int> contiguous(int groups, int c) {
  std::vector<int> cta(static_cast<size_t>(groups));
  for (int g = 0; g < groups; ++g) cta[size_t(g)] = int(int64_t(g) * c / groups);
  return cta;
}

// next's groups to CTAs given the producers' CTAs (prev_cta of prev's groups): most-local groups first.
std::vector<int> greedy(const Layer& prev, const std::vector<int>& prev_cta, const Layer& next, int c) {
  const int G = next.groups, cap = (G + c - 1) / c;
  std::vector<std::vector<int>> votes(size_t(G), std::vector<int>(size_t(c), 0));
  std::vector<int> best(size_t(G), 0);
  for (int g = 0; g < G; ++g) {
    for (int i : next.inputs_of[size_t(g)]) ++votes[size_t(g)][size_t(prev_cta[size_t(prev.group_of[size_t(i)])])];
    best[size_t(g)] = int(std::max_element(votes[size_t(g)].begin(), votes[size_t(g)].end()) -
                          votes[size_t(g)].begin());
  }
  std::vector<int> by(static_cast<size_t>(G));
  for (int g = 0; g < G; ++g) by[size_t(g)] = g;
  std::stable_sort(by.begin(), by.end(), [&](int a, int b) {
    return votes[size_t(a)][size_t(best[size_t(a)])] > votes[size_t(b)][size_t(best[size_t(b)])];
  });
  std::vector<int> cta(size_t(G), -1), load(size_t(c), 0);
  for (int g : by) {
    std::vector<int> pref(static_cast<size_t>(c));
    for (int r = 0; r < c; ++r) pref[size_t(r)] = r;
    std::stable_sort(pref.begin(), pref.end(),
                     [&](int a, int b) { return votes[size_t(g)][size_t(a)] > votes[size_t(g)][size_t(b)]; });
    for (int r : pref)
      if (load[size_t(r)] < cap) {
        cta[size_t(g)] = r;
        ++load[size_t(r)];
        break;
      }
  }
  return cta;
}

// The (input, reading group) pairs of `next` whose input another CTA produced, and all pairs.
void remote_pairs(const Layer& prev, const std::vector<int>& prev_cta, const Layer& next,
                  const std::vector<int>& next_cta, int64_t* remote, int64_t* all) {
  *remote = *all = 0;
  for (int g = 0; g < next.groups; ++g)
    for (int i : next.inputs_of[size_t(g)]) {
      ++*all;
      *remote += prev_cta[size_t(prev.group_of[size_t(i)])] != next_cta[size_t(g)];
    }
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const int n = arg_int(argc, argv, "--width", 4096), layers = arg_int(argc, argv, "--layers", 5),
            images = arg_int(argc, argv, "--images", 16);
  bool ok = true;
  spdnn::challenge_bias(n, &ok);
  if (!ok || n < 1024 || layers < 2 || layers > 120 || images < 1) {
    std::fprintf(stderr, "spdnn_cluster_model: --width a challenge width >= 1024, --layers 2..120, --images >= 1\n");
    return 2;
  }
  const int c = n / 1024;  // (the N = 1024 CTA's 64 groups each)
  std::vector<Layer> L;
  for (int l = 1; l <= layers; ++l) {
    std::string why;
    L.push_back(tc_layer(n, l, &why));
    if (!why.empty()) {
      std::fprintf(stderr, "spdnn_cluster_model: layer %d does not fit the tensor-core tables: %s\n", l, why.c_str());
      return 1;
    }
  }
  std::printf("N %d: a cluster of %d CTAs (%d groups each), tiles of %d images, one bf16 piece\n", n, c,
              L[0].groups / c, images);
  std::printf("a CTA's two feature buffers: %d KiB\n", 2 * (n / c) * images * 2 / 1024);
  std::printf("%-9s %-10s %14s %14s %22s\n", "layers", "assignment", "remote pairs", "of all", "KiB sent / CTA / tile");
  std::vector<int> cont_prev = contiguous(L[0].groups, c), greedy_prev = cont_prev;
  for (int l = 1; l < layers; ++l) {
    const std::vector<int> cont_next = contiguous(L[size_t(l)].groups, c);
    const std::vector<int> greedy_next = greedy(L[size_t(l - 1)], greedy_prev, L[size_t(l)], c);
    for (int kind = 0; kind < 2; ++kind) {
      int64_t remote = 0, all = 0;
      remote_pairs(L[size_t(l - 1)], kind ? greedy_prev : cont_prev, L[size_t(l)], kind ? greedy_next : cont_next,
                   &remote, &all);
      std::printf("%2d -> %-3d %-10s %14lld %13.1f%% %22.1f\n", l, l + 1, kind ? "greedy" : "contiguous",
                  (long long)remote, 100.0 * double(remote) / double(all),
                  double(remote) * images * 2 / c / 1024.0);
    }
    cont_prev = cont_next;
    greedy_prev = greedy_next;
  }
  std::printf("\nthe library's split: copies into other CTAs per warp (of %d warps, 16 a CTA)\n", c * 16);
  std::printf("%-9s %14s %10s %10s %22s\n", "layers", "warps sending", "most", "mean", "of rows not read here");
  for (int l = 1; l < layers; ++l) {
    const jhdnn::sparse::TcLayerTables &t = L[size_t(l - 1)].tables, &tn = L[size_t(l)].tables;
    jhdnn::sparse::TcClusterSlots cs;
    const std::string why = jhdnn::sparse::build_tc_cluster_slots(n, c, tn, &cs);
    if (!why.empty()) {
      std::fprintf(stderr, "spdnn_cluster_model: layers %d, %d: %s\n", l, l + 1, why.c_str());
      return 1;
    }
    const int rows = n / c;  // a CTA's rows of layer l; warp w's are its positions 64 w .. 64 w + 63
    std::vector<int> per_warp(size_t(c) * 16, 0);
    long long unread_here = 0;  // copies of rows the producing CTA does not read itself
    for (int q = 0; q < n; ++q) {
      const int producer = q / rows, j = t.order[size_t(q)];
      int ranks[2], at[2];
      const int to = jhdnn::sparse::tc_cluster_destinations(tn.label[size_t(j)], c, n / 16, cs.slot.data(), ranks, at);
      bool here = false;
      for (int d = 0; d < to; ++d) here |= ranks[d] == producer;
      for (int d = 0; d < to; ++d) {
        per_warp[size_t(producer * 16 + (q % rows) / 64)] += ranks[d] != producer;
        unread_here += ranks[d] != producer && !here;
      }
    }
    int sending = 0, most = 0;
    long long all = 0;
    for (int v : per_warp) {
      sending += v > 0;
      most = std::max(most, v);
      all += v;
    }
    std::printf("%2d -> %-3d %14d %10d %10.2f %22lld\n", l, l + 1, sending, most, double(all) / double(per_warp.size()),
                unread_here);
  }
  return 0;
}
