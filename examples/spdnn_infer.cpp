// Sparse DNN Graph Challenge inference on jhDNN: reads the challenge formats (or generates a
// challenge-style network), runs L layers with the fused layer + compaction, and reports the
// categories, the validation, TeraEdges/s, GPU vs host time, active images per layer and memory.
//
//   spdnn_infer [--width 1024,4096,...] [--layers 120,480,...] [--images 60000] [--seed 42]
//               [--network auto|official|generated] [--validate auto|yes|no] [--refresh -1]
//               [--path graph|fused|separate|persistent|resident[,...]] [--persistent-below -1]
//               [--resident-below -1] [--resident-slice 0] [--resident-trace FILE] [--order sorted|chain]
//               [--layout neuron|tiled|image] [--relabel auto|none|readers|banks] [--relabel-from 1] [--widen 4]
//               [--widen-keep 75] [--input-mask 0]
//               [--resident-first-chunk 0] [--resident-max-chunk 0] [--head-graph -1] [--tc-head 0] [--tc-convert 0]
//               [--tc-compact 1] [--tc-second 0] [--tc-graph 0] [--tc-tail 0]
//               [--csv FILE] [--active-csv FILE] [--data DIR] [--categories FILE] [--no-warmup]
//
// Inputs: the first 1200 official N = 1024 images (data/spdnn, or --data / JHDNN_SPDNN_DIR),
// scaled up (nearest neighbour) to 64x64, 128x128, 256x256 for the larger widths, and tiled to
// --images rows (image t is image t mod 1200). Networks: N = 1024 with L <= 120 uses the official
// files (--network auto); everything else is generated (tools/spdnn, seed --seed).
// Validation: the official truth (tiled) for the official network at L = 120; otherwise the
// float64 CPU reference on the 1200 distinct images (auto: where that is cheap, N*L <= 16384*120,
// about 6 s on one core; --validate yes for the rest, N = 65536 L = 120 takes 65 s on one core; the
// reference runs the images on all cores, so ~5-10 s on the 16-core GPU host).
// TeraEdges/s = 60000 * 32 * N * L / t (the challenge's count, t = GPU time of the layer loop), and
// the rate over the images actually run, images * 32 * N * L / t. Exit 1 on a validation failure, a row that
// could not run ("skipped": e.g. out of memory) or paths that differ; exit 2 on a bad option, an output file that
// cannot be written, a bad image, truth or official layer file, or --network official with N != 1024 or L > 120,
// before any run; exit 77 without a usable GPU.
// --path: graph (one fused layer+compaction kernel per layer, the L layers in one CUDA
// graph; loop_ms is the graph's GPU time, the capture is not in it), fused (the same kernels
// launched one by one), separate (round 1: layer + 4-launch compaction, --refresh readbacks),
// persistent (jhdnnSparseDnnLayersForwardCompact: the layers in ONE cooperative launch with a grid
// barrier between them; --persistent-below C >= 0: fused launches until a layer leaves <= C images,
// then the one launch for the rest), resident (jhdnnSparseDnnLayersForwardResident: fused launches
// while more than --resident-below images are alive, default -1 = 8 x SMs, then launches (96 layers, or all of them
// where they are at most 192, then 4 times the one before, up to 1024: --resident-first-chunk, --resident-max-chunk) in
// which every CTA keeps its slice of
// images in shared memory; --resident-slice: images per
// CTA, 0..8 (0 = the most that fit: 8 at N = 1024, 4 at N = 4096 with the vals kernel); with the default
// threshold it runs only for N <= 1024 and N = 4096 (JHDNN_SPDNN_RESIDENT_4096: 1 / unset on, 0 off, any
// other value refused, exit 2), elsewhere the graph path runs and says so; the default path: the fastest exact one on the H200 at 3f71f09, N = 1024
// L = 120 2.24 ms against the graph's 2.64). Several paths, comma-separated, run one after the other on the same
// network; every path after the first must give the first one's survivors and per-layer counts
// exactly ("same as <first path>" / "DIFFERS from <first path>", exit 1 on a difference).
// First a '#' line with jhdnnCreate's host time (the process's first handle: the kernels loaded, the resident path's
// pool created and primed). Each run prints a '#' line with the path that ran; each network, before its runs, one
// with the seconds its load took (generation or transposition, row orders, renaming and upload, on
// DeviceNetwork::load_threads() threads: outside every rate).
// --no-warmup: skip the warm-up run (the timed run's images; on the 1200 distinct ones until session 44, which left
// the first use of what only a full run needs in the timed run, e.g. the resident path's handed schedule, whose
// pool's first allocation took 6-11 ms until jhdnnCreate primed it, session 45), so that the timed run's kernels are
// the process's first (a profiler's --launch-skip then counts from the timed run's layer 1; with the
// warm-up, the graph and fused paths launch L layer kernels before it). loop_ms then includes first-launch costs.
// --resident-trace FILE: for the resident path, one more run after the measured one (its time is
// not reported) with jhdnnSparseDnnLayersForwardResidentTraced: FILE gets one CSV row per record that
// was reached, width,layers,call,cta,sm,event,layer,ns,clk,live,wait_clk (event entry / loaded /
// first_chunk / layer / exit; layer: network layer, 1-based, -1 where none; ns: %globaltimer; clk: the
// SM's clock64; live: the slice's images left; wait_clk: layer rows, the cycles thread 0 spent in the
// layer's cp.async waits + barriers). scripts/spdnn-resident-trace.py summarises it.
// --order: the row order each layer's descriptor gets (tools/spdnn/spdnn.h): sorted (reuse_order, equal input
// lists adjacent) or chain (chain_order, the default since session 23: those lists chained so that consecutive
// ones share inputs, for the features' L2 reuse; tools/spdnn/spdnn_gpu.h says what it measured). Results do not
// depend on it.
// --layout: the features' layout, neuron (neuron-major, the default) or tiled (JHDNN_SPARSE_DNN_FEATURES_TILED128:
// blocks of 128 images; graph and fused paths only: resident then runs the graph path and says so, separate and
// persistent are refused, exit 2) or image (JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR: each image's features contiguous;
// resident path only, every layer a resident call from layer 1, so --resident-below and --head-graph do not apply;
// --resident-first-chunk / --resident-max-chunk set the calls, between which the survivors are compacted; other
// paths are refused, exit 2).
// --relabel: auto (the default: banks from layer 11, spdnn_gpu.h kBankRelabelFrom, where the paths include resident,
// the width is one where it runs, spdnn::resident_auto_applies, and the layout is neuron-major; else none), none, readers (spdnn_gpu.h Relabel: the neurons renamed at load so
// that the inputs a list block reads are consecutive) or banks (renamed so that the resident kernels' shared-memory
// accesses spread over the banks); --relabel-from L: only the inputs of layers >= L renamed (default 1, auto's 11).
// Exact. Results do not depend on either.
// --widen W: fused launches of layers 2 .. 1 + W read the previous layer's whole output, dead columns too, when it
// kept >= P % of them (--widen-keep P, 1..100, default 75; spdnn_gpu.h run_inference's widen_layers, default 4; 0
// off). Results do not depend on either.
// --input-mask 0|1: the fused launch of layer 1 reads the images' piece mask (built from the sparse images before the
// clock starts; the '#' line gives its GPU time), so that an input zero in all of a 128-image tile is neither read nor
// multiplied (spdnn_gpu.h DriverOptions::input_mask, default 0 since session 37: its build, untimed, costs more than
// it saves). Results do not depend on it.
// --resident-first-chunk K: the resident path's first resident call runs K layers (1..1024; 0, the default: 96, or
// all of the resident layers where they are at most 192, session 39), so that the next call's host checks overlap
// it (spdnn_gpu.h DriverOptions; a first call shorter than 96: no gain measured at edfe84b, the option kept for such
// probes: scripts/spdnn-resident-early-gpu.sh).
// --tc-head K (odd, 0: off): the resident path runs layers 1..K as one resident call on bf16 tensor cores
// (jhdnnSetSparseMatrixMathType, TENSOR_OP_MATH: three bf16 pieces a feature; --tc-convert 1: ALLOW_CONVERSION, one),
// N a multiple of 64 up to 1024, or with --tc-convert 1 of 1024 up to 16384 as a thread-block cluster (the resident
// path runs at N = 1024 and 4096 only; the graph path, where it runs instead, captures the call as its first node:
// N = 16384, session 54): NOT the fp32 chain bit for bit, so validation then reports whether the
// categories still match (spdnn_gpu.h DriverOptions::tc_head_layers). --tc-compact 0: the call's survivors left in
// their own columns of its input instead of compacted (the default, 1; DriverOptions::tc_head_compact).
// --tc-second K2 (odd, 0: off): after it, layers K + 1..K + K2 as a second such call on its survivors
// (DriverOptions::tc_second_layers). --tc-graph 1: the calls as one CUDA graph built before the clock instead of
// launched by the host in the timed loop (the default, 0; DriverOptions::tc_graph). --tc-tail 1 (resident path): the
// resident calls on bf16 tensor cores too, one piece a feature (DriverOptions::tc_tail; with or without --tc-head);
// past N = 4096 on the library's planes kernels, the resident path then at any width, from the first layer the head
// allows unless --resident-below says otherwise (without --tc-head: from layer 1, no head graph by default).
// --head-graph K: the resident path launches its first K layers as one CUDA graph, built before the clock starts
// (-1, the default: 1 + --widen, or none where --resident-below is given or --tc-tail 1 runs past N = 4096; 0: none;
// spdnn_gpu.h DriverOptions::head_graph_layers). Layer K + 1 is then a fused launch too. Results do not depend on it.
// --resident-max-chunk K: the most layers of a resident call (1..1024; 0, the default: 1024); each call after the
// first runs up to 4 times the layers of the one before (twice until session 41). 96 gives the calls of 96 layers
// before session 37. The '#' line gives the host time inside the loop's jhDNN calls, the first resident /
// multi-layer call's share and the resident calls made.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/gpu_util.h"
#include "spdnn/spdnn.h"
#include "spdnn/spdnn_gpu.h"

namespace {

// A whole-string integer in [lo, hi], or exit 2 naming the option (atoi would read "abc" as 0, "3x" as
// 3, and pass an out-of-range value on to a run that falls back or fails later).
int parse_int(const char* opt, const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi) {
    std::fprintf(stderr, "spdnn_infer: %s '%s' is not an integer in %ld..%ld\n", opt, s, lo, hi);
    std::exit(2);
  }
  return int(v);
}

// A comma-separated list of parse_int values (at least one; an empty item is refused too).
std::vector<long long> parse_list(const char* opt, const char* s, long lo, long hi) {
  std::vector<long long> v;
  const std::string all(s);
  size_t from = 0;
  while (true) {
    const size_t comma = all.find(',', from);
    const std::string item = all.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    v.push_back(parse_int(opt, item.c_str(), lo, hi));
    if (comma == std::string::npos) return v;
    from = comma + 1;
  }
}

// A whole-string unsigned 64-bit integer (decimal or 0x hex, no sign), or exit 2.
uint64_t parse_u64(const char* opt, const char* s) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno != 0) {
    std::fprintf(stderr, "spdnn_infer: %s '%s' is not an unsigned 64-bit integer\n", opt, s);
    std::exit(2);
  }
  return uint64_t(v);
}

void usage() {
  std::printf(
      "usage: spdnn_infer [--width 1024,4096,16384,65536] [--layers 120,480,1920] [--images 60000]\n"
      "                   [--seed 42] [--network auto|official|generated] [--validate auto|yes|no]\n"
      "                   [--refresh -1] [--path graph|fused|separate|persistent|resident[,...]]\n"
      "                   [--persistent-below -1] [--resident-below -1] [--resident-slice 0]\n"
      "                   [--resident-trace FILE] [--order sorted|chain] [--layout neuron|tiled|image]\n"
      "                   [--relabel auto|none|readers|banks] [--relabel-from 1] [--widen 4] [--widen-keep 75]\n"
      "                   [--input-mask 0]\n"
      "                   [--resident-first-chunk 0] [--resident-max-chunk 0] [--head-graph -1]\n"
      "                   [--tc-head 0] [--tc-convert 0] [--tc-compact 1] [--tc-second 0] [--tc-graph 0]\n"
      "                   [--tc-tail 0]\n"
      "                   [--csv FILE] [--active-csv FILE] [--data DIR] [--categories FILE] [--no-warmup]\n");
}

// An option whose value is one of a few names: *out = the name's value, else usage and false (the caller exits 2).
template <class T>
bool parse_choice(const char* v, std::initializer_list<std::pair<const char*, T>> names, T* out) {
  for (const auto& [name, value] : names)
    if (!std::strcmp(v, name)) {
      *out = value;
      return true;
    }
  usage();
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> widths{1024}, layer_counts{120};
  long long images_total = 60000;
  uint64_t seed = 42;
  std::string network = "auto", validate = "auto", csv, active_csv, cats_out, trace_csv;
  int refresh = -1;  // adaptive (see spdnn_gpu.h)
  int persistent_below = -1;  // kPersistent: the whole network in one launch
  int resident_below = -1, resident_slice = 0;  // kResident: automatic threshold and slice
  std::vector<spdnn::Path> paths = {spdnn::Path::kResident};  // graph where it does not apply
  bool warmup = true;
  spdnn::RowOrder row_order = spdnn::RowOrder::kChain;
  jhdnnSparseDnnFeatureLayout_t layout = JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR;
  spdnn::Relabel relabel = spdnn::Relabel::kNone;
  bool relabel_auto = true;
  int relabel_from = 0;  // 0: the kind's default
  spdnn::DriverOptions opt;  // --widen, --widen-keep, --input-mask, --resident-first-chunk
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--width")) widths = parse_list("--width", next(), 1, INT_MAX);
    else if (!std::strcmp(argv[i], "--layers")) layer_counts = parse_list("--layers", next(), 1, INT_MAX);
    else if (!std::strcmp(argv[i], "--images")) images_total = parse_int("--images", next(), 1, INT_MAX);
    else if (!std::strcmp(argv[i], "--seed")) seed = parse_u64("--seed", next());
    else if (!std::strcmp(argv[i], "--network")) {
      if (!parse_choice(next(), {{"auto", std::string("auto")}, {"official", std::string("official")},
                                 {"generated", std::string("generated")}}, &network))
        return 2;
    }
    else if (!std::strcmp(argv[i], "--validate")) {
      if (!parse_choice(next(), {{"auto", std::string("auto")}, {"yes", std::string("yes")},
                                 {"no", std::string("no")}}, &validate))
        return 2;
    }
    else if (!std::strcmp(argv[i], "--refresh")) refresh = parse_int("--refresh", next(), -1, INT_MAX);
    else if (!std::strcmp(argv[i], "--persistent-below"))
      persistent_below = parse_int("--persistent-below", next(), -1, INT_MAX);
    else if (!std::strcmp(argv[i], "--resident-below"))
      resident_below = parse_int("--resident-below", next(), -1, INT_MAX);
    else if (!std::strcmp(argv[i], "--resident-slice"))  // 0 = the most that fit; the library checks the width
      resident_slice = parse_int("--resident-slice", next(), 0, 8);  // 8: the largest slice of any kernel
    else if (!std::strcmp(argv[i], "--resident-trace")) trace_csv = next();
    else if (!std::strcmp(argv[i], "--widen")) opt.widen_layers = parse_int("--widen", next(), 0, INT_MAX);
    else if (!std::strcmp(argv[i], "--widen-keep")) opt.widen_keep_percent = parse_int("--widen-keep", next(), 1, 100);
    else if (!std::strcmp(argv[i], "--input-mask")) opt.input_mask = parse_int("--input-mask", next(), 0, 1) != 0;
    else if (!std::strcmp(argv[i], "--resident-first-chunk"))
      opt.resident_first_chunk =
          parse_int("--resident-first-chunk", next(), 0, JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS);
    else if (!std::strcmp(argv[i], "--head-graph"))
      opt.head_graph_layers = parse_int("--head-graph", next(), -1, INT_MAX);
    else if (!std::strcmp(argv[i], "--tc-head")) opt.tc_head_layers = parse_int("--tc-head", next(), 0, INT_MAX);
    else if (!std::strcmp(argv[i], "--tc-convert")) opt.tc_head_convert = parse_int("--tc-convert", next(), 0, 1) != 0;
    else if (!std::strcmp(argv[i], "--tc-compact")) opt.tc_head_compact = parse_int("--tc-compact", next(), 0, 1) != 0;
    else if (!std::strcmp(argv[i], "--tc-second")) opt.tc_second_layers = parse_int("--tc-second", next(), 0, INT_MAX);
    else if (!std::strcmp(argv[i], "--tc-graph")) opt.tc_graph = parse_int("--tc-graph", next(), 0, 1) != 0;
    else if (!std::strcmp(argv[i], "--tc-tail")) opt.tc_tail = parse_int("--tc-tail", next(), 0, 1) != 0;
    else if (!std::strcmp(argv[i], "--resident-max-chunk"))
      opt.resident_max_chunk = parse_int("--resident-max-chunk", next(), 0, JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS);
    else if (!std::strcmp(argv[i], "--path")) {
      std::stringstream list(next());
      paths.clear();
      for (std::string p; std::getline(list, p, ',');) {
        if (p == "graph") paths.push_back(spdnn::Path::kGraph);
        else if (p == "fused") paths.push_back(spdnn::Path::kFused);
        else if (p == "separate") paths.push_back(spdnn::Path::kSeparate);
        else if (p == "persistent") paths.push_back(spdnn::Path::kPersistent);
        else if (p == "resident") paths.push_back(spdnn::Path::kResident);
        else {
          usage();
          return 2;
        }
      }
      if (paths.empty()) {
        usage();
        return 2;
      }
    }
    else if (!std::strcmp(argv[i], "--no-warmup")) warmup = false;
    else if (!std::strcmp(argv[i], "--order")) {
      if (!parse_choice(next(), {{"sorted", spdnn::RowOrder::kSorted}, {"chain", spdnn::RowOrder::kChain}}, &row_order))
        return 2;
    }
    else if (!std::strcmp(argv[i], "--layout")) {
      if (!parse_choice(next(), {{"neuron", JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR},
                                 {"tiled", JHDNN_SPARSE_DNN_FEATURES_TILED128},
                                 {"image", JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR}}, &layout))
        return 2;
    }
    else if (!std::strcmp(argv[i], "--relabel")) {
      const char* v = next();
      relabel_auto = !std::strcmp(v, "auto");
      if (!relabel_auto && !parse_choice(v,
                                         {{"none", spdnn::Relabel::kNone}, {"readers", spdnn::Relabel::kReaders},
                                          {"banks", spdnn::Relabel::kBanks}},
                                         &relabel))
        return 2;
    }
    else if (!std::strcmp(argv[i], "--relabel-from")) relabel_from = parse_int("--relabel-from", next(), 1, INT_MAX);
    else if (!std::strcmp(argv[i], "--csv")) csv = next();
    else if (!std::strcmp(argv[i], "--active-csv")) active_csv = next();
    else if (!std::strcmp(argv[i], "--categories")) cats_out = next();
    else if (!std::strcmp(argv[i], "--data")) setenv("JHDNN_SPDNN_DIR", next(), 1);
    else {
      usage();
      return !std::strcmp(argv[i], "--help") ? 0 : 2;
    }
  }
  bool resident_in_paths = false;
  for (spdnn::Path p : paths) resident_in_paths |= p == spdnn::Path::kResident;
  if (layout == JHDNN_SPARSE_DNN_FEATURES_TILED128)
    for (spdnn::Path p : paths)
      if (p == spdnn::Path::kSeparate || p == spdnn::Path::kPersistent) {
        std::fprintf(stderr, "spdnn_infer: --layout tiled runs on the graph and fused paths (resident runs graph), not %s\n",
                     spdnn::path_name(p));
        return 2;
      }
  if (layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR)
    for (spdnn::Path p : paths)
      if (p != spdnn::Path::kResident) {
        std::fprintf(stderr, "spdnn_infer: --layout image runs on the resident path only, not %s\n",
                     spdnn::path_name(p));
        return 2;
      }
  if (layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR && opt.input_mask) {
    std::fprintf(stderr, "spdnn_infer: --layout image has no input mask\n");
    return 2;
  }
  for (long long n : widths) {  // before the GPU and the data, so that no earlier width of the list runs first
    bool challenge = false;
    (void)spdnn::challenge_bias(n, &challenge);
    if (!challenge) {
      std::fprintf(stderr, "spdnn_infer: width %lld is not a challenge width (1024, 4096, 16384, 65536)\n", n);
      return 2;
    }
  }
  // The official network: N = 1024 with L <= 120 under --network auto, every (N, L) under --network official;
  // official_layers, the largest L that runs it, is read once below.
  auto is_official = [&](long long n, long long layers) {
    return network == "official" || (network == "auto" && n == 1024 && layers <= 120);
  };
  long long official_layers = 0;
  for (long long n : widths)
    for (long long layers : layer_counts)
      if (is_official(n, layers)) {
        if (n != 1024 || layers > 120) {
          std::fprintf(stderr, "spdnn_infer: the official network here is N = 1024, L <= 120\n");
          return 2;
        }
        official_layers = std::max(official_layers, layers);
      }
  // Output files: each must open for writing before anything runs (not be found unwritable after the runs).
  for (const std::string* path : {&csv, &active_csv, &cats_out, &trace_csv}) {
    if (path->empty()) continue;
    FILE* f = std::fopen(path->c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "spdnn_infer: cannot write %s\n", path->c_str());
      return 2;
    }
    std::fclose(f);
  }
  try {  // a misspelt JHDNN_SPDNN_RESIDENT_4096 is refused here, before any run (not as a skipped row)
    (void)spdnn::resident_4096_on();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdnn_infer: %s\n", e.what());
    return 2;
  }
  std::string why;
  if (!jhdnn::test::gpu_available(&why)) {
    std::fprintf(stderr, "spdnn_infer: no usable GPU: %s\n", why.c_str());
    return 77;
  }
  const std::string dir = spdnn::data_dir();
  spdnn::Csr images1024;
  std::vector<int> truth1200;
  std::string err;
  if (!spdnn::read_images_tsv(dir + "/sparse-images-1024-first1200.tsv", 1024, 1200, &images1024, &err) ||
      !spdnn::read_categories(dir + "/neuron1024-l120-categories-first1200.tsv", 1200, &truth1200, &err)) {
    std::fprintf(stderr, "spdnn_infer: %s (run scripts/fetch-spdnn-data.sh or pass --data)\n", err.c_str());
    return 2;
  }
  std::vector<spdnn::Csr> official_w;  // layer l at [l - 1], read once before any run (a bad file exits 2 first)
  for (int l = 1; l <= official_layers; ++l) {
    spdnn::Csr w;
    if (!spdnn::read_layer_tsv(dir + "/neuron1024/n1024-l" + std::to_string(l) + ".tsv", 1024, &w, &err)) {
      std::fprintf(stderr, "spdnn_infer: %s\n", err.c_str());
      return 2;
    }
    official_w.push_back(std::move(w));
  }
  std::string path_list;
  for (spdnn::Path p : paths) path_list += (path_list.empty() ? "" : ",") + std::string(spdnn::path_name(p));
  std::printf("# %s\n# inputs: the first %lld official images, scaled to each width, tiled to %lld rows; path %s\n",
              jhdnn::test::gpu_description().c_str(), (long long)images1024.rows, images_total, path_list.c_str());
  FILE* fcsv = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
  FILE* fact = active_csv.empty() ? nullptr : std::fopen(active_csv.c_str(), "w");
  FILE* ftrace = trace_csv.empty() ? nullptr : std::fopen(trace_csv.c_str(), "w");
  if ((!csv.empty() && !fcsv) || (!active_csv.empty() && !fact) || (!trace_csv.empty() && !ftrace)) {
    std::fprintf(stderr, "spdnn_infer: cannot write an output file (--csv, --active-csv, --resident-trace)\n");
    return 2;
  }
  if (ftrace) std::fprintf(ftrace, "width,layers,call,cta,sm,event,layer,ns,clk,live,wait_clk\n");
  const char* header =
      "width,layers,network,images,loop_ms,host_ms,teraedges_per_s,teraedges_per_s_images_run,survivors,"
      "validation,weights_mib,features_mib,peak_used_mib,path";
  if (fcsv) std::fprintf(fcsv, "%s\n", header);
  if (fact) std::fprintf(fact, "width,layers,layer,active\n");
  std::printf("%8s %6s %-9s %7s %10s %10s %8s %8s %9s %-22s %9s %9s %9s\n", "width", "layers", "network", "images",
              "loop_ms", "host_ms", "TE/s", "TE/s_run", "survivors", "validation", "W_MiB", "Y_MiB", "peak_MiB");
  bool all_ok = true;
  const auto create_start = std::chrono::steady_clock::now();  // (the context exists: gpu_available made it)
  jhdnn::test::JhdnnHandle h;
  std::printf("# jhdnnCreate: %.3f ms (loads the kernels, creates and primes the resident path's pool)\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - create_start).count());
  for (long long n : widths) {
    const float bias = spdnn::challenge_bias(n);  // (a challenge width: checked before any run)
    const spdnn::Csr images = n == 1024 ? images1024 : spdnn::scale_images(images1024, n);
    for (long long layers : layer_counts) {
      const bool official = is_official(n, layers);
      // --relabel auto: the bank renaming where the resident path runs (spdnn::auto_relabel)
      const spdnn::Relabel relabel_here =
          relabel_auto ? spdnn::auto_relabel(n, resident_in_paths, layout == JHDNN_SPARSE_DNN_FEATURES_TILED128)
                       : relabel;
      const int relabel_from_here = relabel_from > 0 ? relabel_from : spdnn::relabel_from_default(relabel_here);
      spdnn::DeviceNetwork net;
      try {
        const auto load_start = std::chrono::steady_clock::now();
        if (official) {
          net.load(n, int(layers), [&](int l) { return spdnn::transpose_to_ell(official_w[size_t(l - 1)]); },
                   row_order, relabel_here, relabel_from_here);
        } else {
          net.load(n, int(layers), [&](int l) { return spdnn::generate_layer_ell(n, l, seed); }, row_order,
                   relabel_here, relabel_from_here);
        }
        // The network's host side and upload (generation or transposition, row orders, renaming; untimed by the rates)
        std::printf("# N %lld L %lld: network loaded in %.3f s (%d host threads)\n", n, layers,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count(),
                    spdnn::DeviceNetwork::load_threads());
        // Validation truth (once for all paths).
        std::vector<int> truth;
        bool have_truth = false;
        if (official && layers == 120) {
          truth = truth1200;
          have_truth = true;
        } else if (validate == "yes" || (validate == "auto" && n * layers <= 16384LL * 120)) {
          spdnn::CpuInference cpu(images);
          for (int l = 1; l <= layers; ++l)
            cpu.layer(official ? official_w[size_t(l - 1)] : spdnn::generate_layer(n, l, seed), bias);
          truth = cpu.categories();
          have_truth = true;
        }
        std::vector<int> first_cats, first_active;
        for (size_t pi = 0; pi < paths.size(); ++pi) {
          const spdnn::Path path = paths[pi];
          // Warm-up on the timed run's images (first launches, caches, first allocations), then the measured run.
          if (warmup)
            (void)spdnn::run_inference(h.get(), net, images, images_total, bias, refresh, 0, nullptr, nullptr, path,
                                       persistent_below, resident_below, resident_slice, nullptr, layout, opt);
          const spdnn::InferenceResult r =
              spdnn::run_inference(h.get(), net, images, images_total, bias, refresh, 0, nullptr, nullptr, path,
                                   persistent_below, resident_below, resident_slice, nullptr, layout, opt);
          if (!r.note.empty()) std::fprintf(stderr, "spdnn_infer: N %lld L %lld: %s\n", n, layers, r.note.c_str());
          std::printf("# N %lld L %lld: path %s, path_used %s", n, layers, spdnn::path_name(path),
                      spdnn::path_name(r.path_used));
          if (r.path_used == spdnn::Path::kPersistent) std::printf(", one launch from layer %d", r.tail_first);
          if (r.path_used == spdnn::Path::kResident)
            std::printf(", resident from layer %d (threshold %d)", r.tail_first,
                        resident_below >= 0 ? resident_below : spdnn::resident_auto_threshold());
          std::printf(", row order %s", row_order == spdnn::RowOrder::kChain ? "chain" : "sorted");
          std::printf(", layout %s, relabel %s, widen %d keep %d%%",
                      layout == JHDNN_SPARSE_DNN_FEATURES_TILED128         ? "tiled"
                      : layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR ? "image"
                                                                        : "neuron",
                      relabel_here == spdnn::Relabel::kReaders ? "readers"
                      : relabel_here == spdnn::Relabel::kBanks ? "banks"
                                                               : "none",
                      opt.widen_layers, opt.widen_keep_percent);
          if (relabel_here != spdnn::Relabel::kNone && relabel_from_here > 1)
            std::printf(" (relabel from layer %d)", relabel_from_here);
          std::string widened;  // the layers that read more positions than the survivors before them
          for (size_t l = 1; l < r.read.size(); ++l)
            if (r.read[l] > r.active[l - 1]) widened += (widened.empty() ? "" : ",") + std::to_string(l + 1);
          const bool masked = opt.input_mask && path != spdnn::Path::kSeparate;  // (the separate path has no mask)
          std::printf(" (widened: %s), input mask %d", widened.empty() ? "none" : widened.c_str(), int(masked));
          if (masked) std::printf(" (built in %.3f ms, untimed)", r.input_mask_ms);
          std::printf(", API host time %.3f ms", r.api_host_ms);
          if (r.head_graph_layers > 0)
            std::printf(" (layers 1-%d: one graph, built in %.3f ms, untimed)", r.head_graph_layers, r.build_ms);
          if (r.tc_head_layers > 0)
            std::printf(" (layers 1-%d: one tensor-core resident call, %s; NOT the fp32 chain bit for bit)",
                        r.tc_head_layers, opt.tc_head_convert ? "features rounded to bf16" : "3 bf16 pieces a feature");
          if (r.tc_second_layers > 0)
            std::printf(" (layers %d-%d: a second such call)", r.tc_head_layers + 1,
                        r.tc_head_layers + r.tc_second_layers);
          if (r.tc_head_layers > 0 && !opt.tc_head_compact) std::printf(" (its survivors not compacted)");
          if (r.tc_tail) std::printf(" (the resident calls on tensor cores, features rounded to bf16; NOT the fp32 chain)");
          if (r.tc_head_layers > 0)
            std::printf(" (tensor-core calls %s)", r.path_used == spdnn::Path::kGraph ? "in the network's graph"
                                                   : r.tc_graph                       ? "as one graph"
                                                                                      : "launched");
          if (r.tail_first > 0)
            std::printf(" (first %s call %.3f ms, first chunk %d)",
                        r.path_used == spdnn::Path::kResident ? "resident" : "multi-layer", r.first_tail_host_ms,
                        opt.resident_first_chunk);
          if (r.resident_calls > 0)
            std::printf(", %d resident calls (most %d layers)", r.resident_calls,
                        opt.resident_max_chunk > 0 ? opt.resident_max_chunk : JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS);
          if (pi > 0) {
            const bool same = r.categories == first_cats && r.active == first_active;
            all_ok &= same;
            std::printf(", %s %s (survivors and per-layer counts)", same ? "same as" : "DIFFERS from",
                        spdnn::path_name(paths[0]));
          } else {
            first_cats = r.categories;
            first_active = r.active;
          }
          std::printf("\n");

          std::string verdict = "not validated";
          if (have_truth) {
            std::vector<int> tiled;
            for (long long t = 0; t < images_total; ++t)
              if (std::binary_search(truth.begin(), truth.end(), int(t % images.rows))) tiled.push_back(int(t));
            const bool ok = tiled == r.categories;
            all_ok &= ok;
            verdict = ok ? (official && layers == 120 ? "exact (official truth)" : "exact (CPU reference)")
                         : "FAILED";
          }
          const double t_s = r.loop_ms * 1e-3;
          const double te = 60000.0 * 32 * double(n) * double(layers) / t_s / 1e12;
          const double te_run = double(images_total) * 32 * double(n) * double(layers) / t_s / 1e12;
          const double mib = 1024.0 * 1024.0;
          std::printf("%8lld %6lld %-9s %7lld %10.3f %10.3f %8.2f %8.2f %9zu %-22s %9.1f %9.1f %9.1f\n", n, layers,
                      official ? "official" : "generated", images_total, r.loop_ms, r.host_ms, te, te_run,
                      r.categories.size(), verdict.c_str(), net.bytes() / mib, r.device_bytes / mib,
                      r.peak_used_bytes / mib);
          std::fflush(stdout);
          if (fcsv)
            std::fprintf(fcsv, "%lld,%lld,%s,%lld,%.4f,%.4f,%.4f,%.4f,%zu,%s,%.1f,%.1f,%.1f,%s\n", n, layers,
                         official ? "official" : "generated", images_total, r.loop_ms, r.host_ms, te, te_run,
                         r.categories.size(), verdict.c_str(), net.bytes() / mib, r.device_bytes / mib,
                         r.peak_used_bytes / mib, spdnn::path_name(r.path_used));
          if (fact && pi == 0)
            for (size_t l = 0; l < r.active.size(); ++l)
              std::fprintf(fact, "%lld,%lld,%zu,%d\n", n, layers, l + 1, r.active[l]);
          if (ftrace && r.path_used == spdnn::Path::kResident) {
            std::vector<spdnn::ResidentTraceCall> calls;
            (void)spdnn::run_inference(h.get(), net, images, images_total, bias, refresh, 0, nullptr, nullptr, path,
                                       persistent_below, resident_below, resident_slice, &calls, layout, opt);
            static const char* const kEvent[] = {"none", "entry", "loaded", "first_chunk", "layer", "exit"};
            size_t rows_written = 0;
            for (size_t c = 0; c < calls.size(); ++c) {
              const spdnn::ResidentTraceCall& call = calls[c];
              for (size_t e = 0; e < call.records.size(); ++e) {
                const jhdnnSparseDnnResidentTraceRecord_t& rec = call.records[e];
                if (rec.event < 1 || rec.event > 5) continue;  // not reached (or no such CTA)
                const int layer = rec.layer >= 0 ? call.first_layer + rec.layer : -1;
                std::fprintf(ftrace, "%lld,%lld,%zu,%zu,%d,%s,%d,%llu,%llu,%d,%u\n", n, layers, c,
                             e / JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS, int(rec.sm), kEvent[rec.event], layer,
                             rec.ns, rec.clk, int(rec.live), rec.waitClk);
                ++rows_written;
              }
            }
            std::fflush(ftrace);
            std::printf("# N %lld L %lld: resident trace of %zu calls (%zu records) written to %s\n", n, layers,
                        calls.size(), rows_written, trace_csv.c_str());
          }
          if (!cats_out.empty() && pi == 0) {
            FILE* f = std::fopen(cats_out.c_str(), "w");
            if (!f) throw std::runtime_error("cannot write " + cats_out);
            for (int c : r.categories) std::fprintf(f, "%d\n", c + 1);
            std::fclose(f);
          }
        }
      } catch (const std::exception& e) {  // a row that could not run fails the program (exit 1), as a wrong one does
        all_ok = false;
        std::printf("%8lld %6lld skipped: %s\n", n, layers, e.what());
        if (fcsv) std::fprintf(fcsv, "%lld,%lld,,%lld,,,,,,skipped: %s,,,,\n", n, layers, images_total, e.what());
        cudaGetLastError();
      }
    }
  }
  if (fcsv) std::fclose(fcsv);
  if (fact) std::fclose(fact);
  if (ftrace) std::fclose(ftrace);
  return all_ok ? 0 : 1;
}
