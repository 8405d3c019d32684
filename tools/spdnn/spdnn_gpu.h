// GPU side of the Sparse DNN challenge driver, shared by tests/test_sparse.cpp, bench/bench_sparse.cpp
// and examples/spdnn_infer.cpp: device-resident networks (ELL of W transposed, one per layer), the
// inference loop on the jhDNN API (fused layer + compaction, no host round trip except every
// `refresh` layers to shrink the launch bound), and the cuSPARSE-pipeline baseline's helper kernels.
//
// Multi-GPU design: the images are independent rows, so a run over several GPUs gives each GPU a
// contiguous block of images (`first_image`, `images`) with the whole network replicated; the
// categories are the union of the per-GPU lists (offset by first_image). One GPU is used today.
//
// Errors throw std::runtime_error (CUDA_CHECK / JHDNN_CHECK from tests/common/gpu_util.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "jhdnn/jhdnn.h"
#include "spdnn/spdnn.h"

namespace spdnn {

// One layer on the device: W transposed as ELL (row j = inputs of output j) and its descriptor.
struct DeviceLayer {
  int* idx = nullptr;
  float* val = nullptr;
  int* order = nullptr;  // the ELL's row order (RowOrder), set as the descriptor's row order (or null)
  jhdnnSparseMatrixDescriptor_t desc = nullptr;
};

// The row order DeviceNetwork::load gives each layer's descriptor (jhdnnSetSparseMatrixRowOrder): none, reuse_order
// (equal input lists adjacent), or chain_order (those groups chained so that consecutive lists share inputs; the
// default since session 23: with late4's strided warps it cut a late layer's DRAM traffic at N = 16384 from 197 to
// 144 MB; graph path, 040f24d: N = 16384 L = 480 49.4-50.2 ms against sorted's 53.8-55.1, N = 65536 L = 120
// 111.8-113.5 against 121.7-122.8, N = 1024 / 4096 L = 1920 within 1%).
enum class RowOrder { kNone, kSorted, kChain };

// Whether DeviceNetwork::load renames the neurons (session 26; tools/spdnn/spdnn.h reader_group_labels): kReaders
// gives the neurons between layers l and l + 1 the labels reader_group_labels(layer l + 1) (inputs read by the same
// rows next to each other), relabelling each layer's rows and entries (relabel_ell: entry order kept, so every fma
// chain is the one of the original network) and the input images' pixels; the last layer's outputs keep their
// names. Exact: the same categories and the same features at the new names. With the tiled feature layout a list
// block's 32 inputs are then two runs of consecutive neurons, contiguous in memory (JHDNN_SPARSE_DNN_FEATURES_TILED128).
// kBanks (session 42) gives them bank_labels(layer l + 1, its row order, layer l's row order) instead: names under
// which vals4w / vals4w8's feature loads and output stores spread over the shared-memory banks (the resident path's
// late layers). load's relabel_from: the first layer whose inputs are renamed (the layers before keep their
// neurons' names, e.g. the crowded layers that the graph path runs from DRAM).
enum class Relabel { kNone, kReaders, kBanks };
// The resident path's default renaming (spdnn_infer and bench_sparse, at the widths where resident_auto_applies; the
// graph path's late layers at N = 16384 / 65536 were not measured under it): kBanks from layer 11, the first resident
// layer at N = 1024 and two before N = 4096's (13), so that the crowded layers keep their names. Measured at 61e85f0
// (bench/results/61e85f0/): N = 4096 L = 480 / 1920 -1.0 / -1.4% (7.56 -> 7.49 ms, 20.11 -> 19.84), N = 1024 and
// L = 120 inside the spread; from layer 1 the same. The feature loads' wavefronts fell 3.1 -> 2.0 as counted
// (shared wavefronts -24% in the handed call), its time only -1.2%: the loads wait on latency, not on the banks.
constexpr int kBankRelabelFrom = 11;
// That default as one rule, for every program that loads a network for a path (spdnn_infer's --relabel auto,
// bench_sparse's rows): kBanks where the resident path runs (resident_path: it is among the paths run; a width where
// resident_auto_applies; neuron-major features, tiled false), else kNone. Its first renamed layer:
// relabel_from_default.
Relabel auto_relabel(int64_t n, bool resident_path, bool tiled);
// The first layer whose inputs a renaming of kind k renames by default: kBankRelabelFrom for kBanks, else 1.
constexpr int relabel_from_default(Relabel k) { return k == Relabel::kBanks ? kBankRelabelFrom : 1; }

class DeviceNetwork {
 public:
  DeviceNetwork() = default;
  DeviceNetwork(const DeviceNetwork&) = delete;
  DeviceNetwork& operator=(const DeviceNetwork&) = delete;
  ~DeviceNetwork();
  // Uploads every layer (get(l) for l = 1..layers). All layers stay resident. order: the row order set on each
  // descriptor (the fused layer's reuse hint). get and the row order run on worker threads, several layers at
  // once (get must be safe to call concurrently: generate_layer_ell and transpose_to_ell of const data are); the
  // uploads follow in layer order, and the first layer that throws stops the load with its exception (relabelled, the
  // layer before it is not uploaded either: its outputs take their names from the failed layer).
  void load(int64_t n, int layers, const std::function<Ell(int)>& get, RowOrder order = RowOrder::kChain,
            Relabel relabel = Relabel::kNone, int relabel_from = 1);
  // The host threads load makes layers on: the machine's, at most 32.
  static int load_threads();
  int64_t width() const { return n_; }
  // The new name of neuron i between layers l and l + 1 (l = 0: the input pixels; l = layers(): the outputs, never
  // renamed): labels(l)[i]; an empty vector when load did not relabel.
  const std::vector<int>& labels(int l) const { return labels_.empty() ? no_labels_ : labels_[size_t(l)]; }
  int layers() const { return int(layers_.size()); }
  const DeviceLayer& layer(int l) const { return layers_[l - 1]; }  // 1-based
  size_t bytes() const { return bytes_; }

 private:
  // Layer l's device copy and descriptor (its order set as the descriptor's row order when set_order).
  void upload_layer(int l, const Ell& e, const std::vector<int>& order, bool set_order);
  int64_t n_ = 0;
  std::vector<DeviceLayer> layers_;
  std::vector<std::vector<int>> labels_;  // layers + 1 entries when relabelled (the last one empty), else none
  std::vector<int> no_labels_;
  size_t bytes_ = 0;
};

// How run_inference drives the layers.
//   kSeparate  jhdnnSparseDnnLayerForward + jhdnnSparseDnnCompact (ordered; ~7 launches per layer,
//              survivor count read back per `refresh` to shrink the launch bound): round 1's path.
//   kFused     jhdnnSparseDnnLayerForwardCompact, one launch per layer, no host readback.
//   kGraph     kFused captured once into a CUDA graph (on a private stream), then launched: the
//              capture + instantiation is outside loop_ms but inside build_ms. If the capture
//              fails, the fused loop runs instead (path_used = kFused, note says why).
//   kPersistent jhdnnSparseDnnLayersForwardCompact: ONE cooperative launch runs the layers from
//              `tail_first` to L, a grid barrier between layers (no launch, ramp-up or drain per
//              layer). Before it, layers 1 .. tail_first - 1 run as kFused launches while the count
//              read back (one layer behind, so the GPU always has a layer queued) is above
//              `persistent_below`; persistent_below < 0: the whole network is the one launch (no
//              readback at all). If the device cannot launch cooperatively, the rest runs as kFused
//              (path_used = kFused, note says why).
//   kResident  the shared-memory-resident late layers (jhdnnSparseDnnLayersForwardResident): kFused
//              launches while the count read back one layer behind is above `resident_below` (< 0:
//              resident_auto_threshold(), 8 images per SM), or up to keep_layer; then the remaining
//              layers in resident calls (96 layers, then x4, twice until session 41, up to 1024:
//              DriverOptions), each ONE launch in which every CTA keeps a slice of 4 or 8 images in
//              shared memory through all the call's layers. The rule (src/sparse/README.md,
//              "dnn_resident.cu"): with resident_below < 0 it runs only where an 8-image slice fits
//              (n <= 1024 among the challenge widths); elsewhere the whole network runs as kGraph
//              (path_used = kGraph, note says why). resident_below >= 0 forces it at any n that fits
//              a slice (resident_slice: images per CTA, 0 = the most that fit).
enum class Path { kSeparate, kFused, kGraph, kPersistent, kResident };
const char* path_name(Path p);

struct InferenceResult {
  std::vector<int> categories;     // image numbers (0-based) with a nonzero output row, ascending
  std::vector<int> active;         // active images after each layer (layers entries)
  std::vector<int> read;           // fused paths: the list positions each layer read (layers entries): active[l - 2]
                                   // (or the images for layer 1), more where widen_layers widened it; else empty
  double loop_ms = 0;              // GPU time of the layer loop (CUDA events)
  double host_ms = 0;              // host wall time of the same loop (launches + bound refreshes)
  size_t device_bytes = 0;         // what the run allocated (features, lists, workspace), weights excluded
  size_t peak_used_bytes = 0;      // cudaMemGetInfo total - free at the peak of the run
  int head_graph_layers = 0;       // kResident: the head's layers launched as one graph (DriverOptions)
  int tc_head_layers = 0;          // kResident / kGraph: the head's layers run as one tensor-core call (DriverOptions)
  int tc_second_layers = 0;        // kResident: the layers of the second tensor-core call after it (DriverOptions)
  bool tc_graph = false;           // kResident: the tensor-core call(s) launched as one graph (DriverOptions)
  bool tc_tail = false;            // kResident: the resident calls on tensor cores (DriverOptions)
  double build_ms = 0;             // kGraph: host time to capture and instantiate the graph (kResident: the head's)
  double api_host_ms = 0;          // host time inside the timed loop's jhDNN layer calls (checks and launches; the
                                   // graph path's launch only; kSeparate: 0, not measured)
  double input_mask_ms = 0;        // DriverOptions::input_mask: GPU time to build the images' piece mask
                                   // (before the clock starts, with the dense features)
  double first_tail_host_ms = 0;   // kResident / kPersistent: the first resident / multi-layer call's share of it
  Path path_used = Path::kSeparate;  // what ran (kGraph falls back to kFused if the capture fails; kPersistent and
                                     // kResident report kFused where no multi-layer / resident call ran)
  int tail_first = 0;              // kPersistent / kResident: first layer (1-based) of the single launch; 0 if none ran
  int resident_calls = 0;          // kResident: the resident calls made (DriverOptions' chunk schedule)
  std::string note;                // why a fallback happened (or why no multi-layer / resident call ran), else empty
};

// kResident's optional trace (resident_trace non-null): for each resident call, the records of
// jhdnnSparseDnnLayersForwardResidentTraced (max_active x JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS, CTA
// b's at [b * RECORDS, (b + 1) * RECORDS); CTAs that did not exist or events not reached: zero).
struct ResidentTraceCall {
  int first_layer = 0;  // network layer (1-based) of the call's layer 0
  int layers = 0;
  int max_active = 0;  // the call's maxActive (its CTAs: ceil(max_active / slice))
  std::vector<jhdnnSparseDnnResidentTraceRecord_t> records;
};

// Runs net.layers() layers with the fused jhDNN layer on `rows` images: image r is row r % images.rows
// of `images` (so 1200 distinct images can be tiled to 60000 without building the copy).
// refresh: read the survivor count back every `refresh` layers to shrink the launch bound; 0: never;
// -1 (adaptive): after each of the first 16 layers (where images die) and then at powers of two.
// (refresh only matters for Path::kSeparate.)
// keep_layer/keep_out: 0, or a layer (1..L; else std::runtime_error, as keep_layer > 0 without keep_out and
// keep_ids): if keep_layer > 0, the dense feature-major output (N x active) after that
// layer and the image number of each column are copied to keep_out / keep_ids, columns sorted by
// image number (the fused paths keep survivors in no particular order). kGraph with keep_layer
// runs as kFused (the copy needs the host in the middle of the loop); kPersistent runs layers up to
// keep_layer as kFused launches and the rest as its one launch.
// persistent_below: kPersistent only (see Path).
// resident_trace: kResident only: filled with one ResidentTraceCall per resident call (see above);
// the buffers are allocated inside the timed region, so take the trace on a run of its own.
// layout: the features' layout; JHDNN_SPARSE_DNN_FEATURES_TILED128 (column capacity `rows` rounded up to 128) runs
// on kFused and kGraph only (jhdnnSparseDnnLayerForwardCompactEx): kResident runs kGraph instead (note says so),
// kSeparate and kPersistent throw. JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR (image_stride(n) floats per image) runs on
// kResident only (else it throws, as with opt.input_mask): every layer a resident call
// (jhdnnSparseDnnLayersForwardResidentEx), from layer 1, in DriverOptions' chunks, each call after the first bounded
// by the survivors of the one before (read back at the boundary); resident_below, the head graph and widening (which
// act on fused layers) do not apply; a refused call throws (there is no fused path to fall back to). A relabelled network's input
// images are renamed with it (net.labels(0)); keep_out is given at the original names.
// opt: the driver's tuning (DriverOptions below); a value out of its range throws std::runtime_error.
constexpr int kWidenLayersDefault = 4;
constexpr int kWidenKeepPercentDefault = 75;  // 67 / 75 / 85 measured: bench/results/32ae990
struct DriverOptions {
  // widen_layers (>= 0): the fused launches of layers 2 .. 1 + widen_layers (every fused path; the resident and
  // multi-layer launches excepted) read the previous layer's WHOLE output, its dead columns too, when it kept at
  // least widen_keep_percent % (1..100) of its columns (decided on the device, a small kernel before the layer):
  // every column then sits where the 16-byte feature path reads it, and a dead column, all zeros, stays dead, so
  // the result is exactly the same. active and categories are unchanged (counts[l] stays the survivors); `read`
  // says what each layer read. 0: off.
  int widen_layers = kWidenLayersDefault;
  int widen_keep_percent = kWidenKeepPercentDefault;
  // input_mask: the fused launch of layer 1 reads the images' piece mask (jhdnnSparseDnnLayerForwardCompactMasked,
  // built from the sparse images before the clock starts, with the dense features: InferenceResult::input_mask_ms),
  // so that an input row whose features are zero in all of a 128-image tile is neither read nor multiplied there.
  // The results are the same. OFF by default since session 37: only jhDNN uses the mask, so its build belongs in the
  // timed work, and it costs more than it saves (measured at 9713083: built in 0.10 / 0.32 / 1.15 / 4.5 ms at
  // N = 1024 / 4096 / 16384 / 65536, against layer 1's 15 / 63 / 87 us saved at 3274830). For A/B runs and callers
  // that have a mask for free.
  bool input_mask = false;
  // kResident: the layers of the first resident call (1..JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS; 0 = the default,
  // resident_first_call_layers: kResidentFirstChunkDefault, or all of them where they are at most twice that). The
  // API checks a call's layers on the host before its launch, while the GPU has only the head's last layer queued; a short first call lets the next, longer one be checked while it runs (as
  // kPersistent's first call of 8). Measured at edfe84b (bench/results/edfe84b/copies): no gain from a first call
  // shorter than 96 since the resident call checks its layers' weight arrays only when it builds their packed copies
  // (InferenceResult's api_host_ms and first_tail_host_ms say how long a call's checks take).
  int resident_first_chunk = 0;
  // kResident: the most layers of any resident call (1..JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS; 0 = that most). After
  // the first call each call runs up to kResidentCallGrowth (4) times the layers of the one before
  // (resident_call_layers), so that its host checks (~0.3 us a layer, 1.2 us per layer of the call before) end long
  // before the call before it (~2.6 us a layer at N = 1024) and the GPU never waits for them. Fewer calls, fewer call
  // boundaries (each reloads the slices' features and writes the survivors out), and longer calls, in which vals4w's
  // handed schedule can pay for its swaps; but a longer call re-forms its slices from the survivors less often (no
  // matter for the challenge networks, whose survivors stop changing by layer ~15). 96 gives the schedule before
  // session 37 (calls of 96 layers).
  int resident_max_chunk = 0;
  // kResident: the head's first layers as one CUDA graph, captured and instantiated before the clock starts (as
  // the graph path's whole network; InferenceResult::build_ms), launched with one call where the loop starts:
  // layers 1 .. head_graph_layers (-1: 1 + widen_layers, the crowded first layers that the widening check serves,
  // or none where the caller set resident_below, and none for the tensor-core tail past n = 4096, whose planes calls
  // run those layers faster, session 59; 0: none, every head layer a host-driven launch as before session
  // 44). Layer head_graph_layers + 1 is then always a fused launch too (its decision would need the count of the
  // graph's last-but-one layer), and the host decides from layer head_graph_layers + 2 on, as before. Why: the
  // loop's first layer call took ~30 us of host time before anything ran (spdnn_infer's API host time at L = 1),
  // and the graph path's first five layers ran ~35 us faster than the resident path's (session 44,
  // bench/results/1ae5b7e/: -2.2% at N = 1024 L = 120, -1.2% at N = 4096). The same launches, the same results.
  int head_graph_layers = -1;
  // kResident (and kGraph, which captures the call as its first node: N = 16384, where the resident path does not fit;
  // session 54): layers 1 .. tc_head_layers as ONE resident call on tensor cores (their descriptors' math type set to
  // TENSOR_OP_MATH, or TENSOR_OP_MATH_ALLOW_CONVERSION with tc_head_convert, for the run and put back after it;
  // jhdnnSetSparseMatrixMathType says what that promises: NOT the fp32 chain bit for bit). The call's first run,
  // which builds its tables, is made before the clock (its results are then overwritten). Odd (the call reads list 0
  // and writes list 1, as the fused layers 1 .. K would leave it), less than L; no head graph then, and layer K + 1
  // is a fused launch as after the graph. 0: off (the default: every path exact).
  int tc_head_layers = 0;
  bool tc_head_convert = false;
  // The tensor-core call's survivors compacted (rowsOut NULL: survivor t in column t, layer K + 1 reading the list
  // 0, 1, 2, ...), else in their own columns of the call's input (session 51: layer 6 then read 4900 survivors
  // spread over 60000 columns in 143 us, against 37 us on the default path; bench/results/6a2a868/).
  bool tc_head_compact = true;
  // After the head's call, layers K + 1 .. K + tc_second_layers as a second tensor-core call (same math type) on the
  // head's survivors, its own compacted (odd, as K: the lists' parity; K + tc_second_layers < L). 0: none (the
  // default). Tried because the head runs ~5.9 ns an image-layer at N = 4096 and the fused layers 6-8 ~13-23; measured
  // no faster (session 54, bench/results/7227fdf/ and e822bd8/: the call's kernel for layers 6-8 248 us against the
  // fused 228): a call of few tiles does not hide its raw loads and survivor writes, and from layer 6 on about half
  // of a layer's outputs go to other CTAs of the cluster.
  int tc_second_layers = 0;
  // The tensor-core call(s) captured as one CUDA graph before the clock, launched with one call where the loop starts,
  // as the exact path's head graph (head_graph_layers), so that their host checks do not run while the GPU waits.
  // Off by default: no gain measured (session 54, bench/results/0e8dec6/: N = 4096 L = 120 3.257 / 3.271 ms as a
  // graph, 3.252 / 3.208 launched; N = 1024 0.726 / 0.744 against 0.811 / 0.742). Kept for callers that capture.
  bool tc_graph = false;
  // kResident: the resident calls on tensor cores too (one bf16 piece a feature: every layer after the head's calls
  // set to TENSOR_OP_MATH_ALLOW_CONVERSION for the run). Their calls of more than 8 layers run the streamed kernel
  // (src/sparse/dnn_resident_tc_stream.cu: a tile of 8 images in one CTA, n <= 4096, the weights streamed from the L2);
  // the tables of every such layer are built before the clock. NOT the fp32 chain bit for bit. Off by default.
  // Past n = kTcTailStreamMaxN the library runs those calls on its planes kernels (dnn_resident_tc_planes.cu, session
  // 58: one launch a layer, the features in bf16 planes in device memory); the resident path then runs at any width,
  // its calls from the first layer the head allows (resident_below < 0), and the device's default memory pool keeps
  // its memory for the run.
  bool tc_tail = false;
};
// The widest n of the library's streamed kernel (its kTcStreamMaxN, src/sparse/sparse.h).
constexpr int64_t kTcTailStreamMaxN = 4096;
constexpr int kResidentFirstChunkDefault = 96;
// The first resident call's layers for `left` resident layers: `first` (DriverOptions::resident_first_chunk) where
// given, else 96 (kResidentFirstChunkDefault), or all `left` where they are at most twice that and at most `most`
// (one call for them all); never more than `most`.
// Session 39 (bench/results/31005a6/): at N = 4096 L = 120 one call of 108 layers instead of 96 + 12 took 4.37-4.38
// ms against 4.41-4.44 (-0.8%, every pair lower); N = 1024 L = 120 unchanged. Far longer first calls lose: their
// host checks (~0.3 us a layer) have no call before them to hide behind (session 38: 1024 layers, +0.27% at L = 1920).
inline int resident_first_call_layers(int left, int first, int most) {
  const int want =
      first > 0 ? first : left <= 2 * kResidentFirstChunkDefault && left <= most ? left : kResidentFirstChunkDefault;
  return want < most ? want : most;
}
// Each resident call after the first runs up to this many times the layers of the one before (DriverOptions::
// resident_max_chunk). 2 until session 41; 4 makes N = 4096 L = 480's calls 96 + 372 (was 96 + 192 + 180), long
// enough for vals4w's handed schedule (its swap costs ~1.7 layer-times an item, sparse.h).
constexpr int kResidentCallGrowth = 4;
// The layers of each resident call for `left` resident layers: the first as resident_first_call_layers says, then
// each kResidentCallGrowth times the one before, never more than `most`; the last takes what is left.
inline std::vector<int> resident_call_layers(int left, int first, int most) {
  std::vector<int> calls;
  for (int next = resident_first_call_layers(left, first, most); left > 0;
       next = next > most / kResidentCallGrowth ? most : kResidentCallGrowth * next) {
    calls.push_back(next < left ? next : left);
    left -= calls.back();
  }
  return calls;
}
InferenceResult run_inference(jhdnnHandle_t h, const DeviceNetwork& net, const Csr& images, int64_t rows, float bias,
                              int refresh = -1, int keep_layer = 0, std::vector<float>* keep_out = nullptr,
                              std::vector<int>* keep_ids = nullptr, Path path = Path::kGraph,
                              int persistent_below = -1, int resident_below = -1, int resident_slice = 0,
                              std::vector<ResidentTraceCall>* resident_trace = nullptr,
                              jhdnnSparseDnnFeatureLayout_t layout = JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR,
                              const DriverOptions& opt = {});

// kResident's default switch-over count: 8 x SMs live images (one 8-image slice per SM).
int resident_auto_threshold();
// kResident with resident_below < 0 runs only for widths where an 8-image slice fits (n <= 1024), and
// at 2048 < n <= 4096 (4-image slices: of the vals kernel at 2905 < n, as at 4096; of pair below, not
// measured) when resident_4096_on().
bool resident_auto_applies(int64_t n);
// The N = 4096 switch (session 16): the vals kernel (S = 4 slices, weight values stored once per run;
// src/sparse/README.md, "Vals") lets the resident path run at n = 4096, where the list-pack kernels fit
// only 2-image slices. ON since the H200 measured it (trial 918395d, spdnn_infer N = 4096, exact): L = 120
// 6.65 ms against the graph path's 7.03, L = 480 13.02 against 15.34. JHDNN_SPDNN_RESIDENT_4096=0 forces it
// off (A/B runs), 1 on; unset or "" = kResident4096Default; any other value throws std::runtime_error
// naming it (so does resident_auto_applies, at every n).
constexpr bool kResident4096Default = true;
bool resident_4096_on();

// The image-major layout's floats per image (JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR): n rounded up to 4.
inline int64_t image_stride(int64_t n) { return (n + 3) / 4 * 4; }

// Dense upload of ld images (ld: the column capacity), zeros elsewhere. Neuron-major (the default):
// x[i * ld + r] = images(r % images.rows, i); tiled (ld a multiple of 128): x[(r / 128) * n * 128 + i * 128 + r % 128]
// (JHDNN_SPARSE_DNN_FEATURES_TILED128); image-major: x[r * image_stride(n) + i], ld x image_stride(n) floats.
// mask (device, n rows of mask_ld = (ld + 127) / 128 words; nullptr: none; not in the image-major layout): the
// features' piece mask (jhdnnSparseDnnLayerForwardCompactMasked) built from the sparse images; returns its GPU
// milliseconds.
double upload_features(const Csr& images, float* x, int64_t ld, cudaStream_t s,
                       jhdnnSparseDnnFeatureLayout_t layout = JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR,
                       unsigned* mask = nullptr, int64_t mask_ld = 0);

// Baseline helpers (cuSPARSE pipeline, bench_spdnn_cusparse): y = clamp(relu(y + bias)) over an n_out x cols
// feature-major block, flags[c] = 1 for columns with a nonzero (flags zeroed first; flags == nullptr: no flags);
// select_columns: the flagged positions t < cols, in order, into rows_out and their number into *count_out (device),
// one cub::DeviceSelect::Flagged call with a temp buffer of select_columns_workspace(>= cols) bytes; then the
// compacted columns gathered: dst[:, t] = src[:, rows[t]] for t < count (count read on the host), and, when ids_out
// is given, ids_out[t] = ids_in[rows[t]].
void bias_relu_clamp_flags(float* y, int64_t n_out, int64_t cols, int64_t ld, float bias, float clamp, int* flags,
                           cudaStream_t s);
size_t select_columns_workspace(int64_t max_cols);
void select_columns(const int* flags, int64_t cols, int* rows_out, int* count_out, void* temp, size_t temp_bytes,
                    cudaStream_t s);
void gather_columns(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t n_rows, const int* cols,
                    int64_t count, cudaStream_t s, const int* ids_in = nullptr, int* ids_out = nullptr);

// Bench input: a rows x cols row-major matrix, each entry nonzero (in [1, 2)) with probability
// `density`, from a counter-based hash of (index, seed), generated on the device.
void fill_sparse_dense(float* a, int64_t rows, int64_t cols, double density, uint64_t seed, cudaStream_t s);

}  // namespace spdnn
