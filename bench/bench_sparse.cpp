// Sparse benchmarks (issue 6), jhDNN and cuSPARSE in the same binary, on the same data:
//   DenseToCsr/<impl>/<rows>x<cols>/d<density%>   jhdnnDenseToCsrAnalysis+Convert vs cusparseDenseToSparse
//       (analysis + convert). Counters: B/s (2 reads of A + the CSR written) and HBM (fraction of the
//       H200's measured 4.16 TB/s copy rate).
//   SpMM/<impl>/<matrix>/<order>                   challenge layers (W^T, N x N, 32 per row, times the
//       layer-1 features of 60000 images) and power-law matrices; jhDNN's algorithms (every
//       jhdnnSpMMAlg_t through jhdnnSpMMWithWorkspace, workspace allocated outside the timed region;
//       *_ordered: with the layer's reuse order as the row hint; jhdnn_default: DEFAULT's pick) vs
//       cusparseSpMM CSR ALG1/ALG2/ALG3. Counter: FLOP/s (2 * nnz * n).
//   LayerCallHost/<what>                            the host time of one challenge-layer call (bench_layer_call_host)
//   SpDNN/<impl>/N<width>/L<layers>                fused jhDNN inference vs a cuSPARSE pipeline (impl
//       resident_tc5 / resident_tc5c: the resident path with layers 1-5 as one tensor-core call, three / one bf16
//       pieces a feature, N <= 1024; resident_tc5c also N = 4096: not the fp32 chain bit for bit, `valid` against
//       the graph run's categories; resident_tc5_3c: layers 6-8 as a second such call, one piece; graph_tc5c: the
//       graph path with layers 1-5 as one such call, N = 16384; resident_tail / resident_tc5c_tail: the resident
//       calls on tensor cores too, without / with that head, N <= 4096 the streamed kernel, past it the planes kernels)
//       (cusparseSpMM CSR_ALG2 + bias/ReLU/clamp kernel per layer; at refresh layers only (1..16, powers of
//       two, the last) a CUB select of the live columns, the count read back into pinned memory and a gather
//       if columns died; bench_spdnn_cusparse says why it is exact). --spdnn-runs K timed runs each
//       (default 1), after one untimed warm-up run; real_time is their mean, the counters median_ms /
//       min_ms / max_ms give the median and the spread (scripts/sparse-report.py takes the median);
//       counters TE/s (60000 * 32 * N * L / t, t the median run's), survivors, and `valid` (1 =
//       categories equal the fused run's / the truth; every run's categories must equal the first run's,
//       else the benchmark errors and stops); survivors, host_ms and peak_GiB are the last run's.
// Options (before the Google Benchmark ones): --spdnn "1024:120,480;4096:120" (width:layers lists:
// "N:L" starts a width, a bare "L" adds layers to the width before it, ',' and ';' both separate, so
// "1024:120,4096:120" is N=1024 L=120 and N=4096 L=120; repeated flags append), --baseline (same
// syntax: which also run round 1's separate path and the cuSPARSE pipeline), --spdnn-runs K, --quick. The parsed
// lists are printed to stderr first.
// The inputs are the official first 1200 images (data/spdnn or JHDNN_SPDNN_DIR), scaled to the
// width and tiled to 60000 rows; the SpDNN and challenge-SpMM benches are skipped without them.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cusparse.h>

#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/test_util.h"
#include "core/config.h"
#include "spdnn/spdnn.h"
#include "spdnn/spdnn_gpu.h"

using jhdnn::benchutil::manual_time;
using jhdnn::test::DeviceBuffer;

namespace {

constexpr double kHbmBytesPerS = 4.16e12;  // measured copy rate of the H200 (common brief)
constexpr int64_t kImages = 60000;
int g_spdnn_runs = 1;  // --spdnn-runs: timed runs per SpDNN benchmark

// The times of a SpDNN benchmark's timed runs (one per iteration): each is the iteration's manual time, and
// report() adds the median (the lower middle one for an even count), the fastest and the slowest as counters.
struct RunTimes {
  std::vector<double> ms;
  void add(benchmark::State& st, double t) {
    ms.push_back(t);
    st.SetIterationTime(t * 1e-3);
  }
  double median() const {
    std::vector<double> v = ms;
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[(v.size() - 1) / 2];
  }
  void report(benchmark::State& st) const {
    st.counters["median_ms"] = median();
    st.counters["min_ms"] = ms.empty() ? 0.0 : *std::min_element(ms.begin(), ms.end());
    st.counters["max_ms"] = ms.empty() ? 0.0 : *std::max_element(ms.begin(), ms.end());
  }
};

#define SP_CHECK(call)                                                                                   \
  do {                                                                                                   \
    cusparseStatus_t st_ = (call);                                                                       \
    if (st_ != CUSPARSE_STATUS_SUCCESS)                                                                  \
      throw std::runtime_error(std::string(#call) + " failed: " + cusparseGetErrorString(st_));          \
  } while (0)

// The handles, and CUDA events timing on the legacy default stream (nullptr; no L2 flush).
struct Ctx {
  jhdnn::test::JhdnnHandle h;
  cusparseHandle_t sp = nullptr;
  jhdnn::benchutil::EventTimer timer;
  Ctx() { SP_CHECK(cusparseCreate(&sp)); }
  ~Ctx() { cusparseDestroy(sp); }
  void start() { timer.start(nullptr); }
  double stop_ms() { return timer.stop_ms(nullptr); }
};
Ctx* g_ctx = nullptr;

spdnn::Csr g_images1024;
bool g_have_images = false;
std::vector<int> g_truth1200;

// ---------------------------------------------------------------- dense to CSR

void bench_dense_to_csr(benchmark::State& st, bool cusparse, int64_t rows, int64_t cols, double density) {
  Ctx& c = *g_ctx;
  DeviceBuffer a(size_t(rows) * cols * 4, 0);
  spdnn::fill_sparse_dense(a.as<float>(), rows, cols, density, 12345, nullptr);
  DeviceBuffer rp((rows + 1) * 4, 0);
  size_t ws = 0;
  if (jhdnnGetDenseToCsrWorkspaceSize(c.h.get(), rows, cols, &ws) != JHDNN_STATUS_SUCCESS) {
    st.SkipWithError("bufferSize failed");
    return;
  }
  DeviceBuffer dws(ws, 0);
  int64_t nnz = 0;
  JHDNN_CHECK(jhdnnDenseToCsrAnalysis(c.h.get(), rows, cols, a.get(), cols, rp.as<int>(), &nnz, dws.get(), ws));
  DeviceBuffer ci(nnz * 4 + 4, 0), va(nnz * 4 + 4, 0);
  jhdnnSparseMatrixDescriptor_t d;
  JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&d));
  JHDNN_CHECK(jhdnnSetCsrMatrixDescriptor(d, rows, cols, nnz, rp.as<int>(), ci.as<int>(), va.get(), JHDNN_DATA_FLOAT));
  cusparseDnMatDescr_t dn = nullptr;
  cusparseSpMatDescr_t csr = nullptr;
  std::unique_ptr<DeviceBuffer> cbuf;
  if (cusparse) {
    SP_CHECK(cusparseCreateDnMat(&dn, rows, cols, cols, a.get(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
    SP_CHECK(cusparseCreateCsr(&csr, rows, cols, 0, rp.get(), nullptr, nullptr, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                               CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    size_t bs = 0;
    SP_CHECK(cusparseDenseToSparse_bufferSize(c.sp, dn, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, &bs));
    cbuf = std::make_unique<DeviceBuffer>(bs, 0);
  }
  auto run = [&]() {
    if (!cusparse) {
      int64_t z = 0;
      JHDNN_CHECK(jhdnnDenseToCsrAnalysis(c.h.get(), rows, cols, a.get(), cols, rp.as<int>(), &z, dws.get(), ws));
      JHDNN_CHECK(jhdnnDenseToCsrConvert(c.h.get(), a.get(), cols, d));
    } else {
      SP_CHECK(cusparseDenseToSparse_analysis(c.sp, dn, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, cbuf->get()));
      int64_t r_, c_, z = 0;
      SP_CHECK(cusparseSpMatGetSize(csr, &r_, &c_, &z));  // the caller needs nnz to allocate: part of the cost
      SP_CHECK(cusparseCsrSetPointers(csr, rp.get(), ci.get(), va.get()));
      SP_CHECK(cusparseDenseToSparse_convert(c.sp, dn, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, cbuf->get()));
    }
  };
  run();  // warm-up
  CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : st) {
    c.start();
    run();
    st.SetIterationTime(c.stop_ms() * 1e-3);
  }
  const double bytes = 2.0 * rows * cols * 4 + double(nnz) * 8 + double(rows + 1) * 4;
  st.counters["B/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["nnz"] = double(nnz);
  if (csr) cusparseDestroySpMat(csr);
  if (dn) cusparseDestroyDnMat(dn);
  jhdnnDestroySparseMatrixDescriptor(d);
}

// ---------------------------------------------------------------- SpMM

struct DevCsr {
  int64_t m = 0, k = 0, nnz = 0;
  DeviceBuffer rp, ci, va;
  DeviceBuffer order;  // optional row-order hint (jhdnn_warp_row_ordered); empty: none
};

DevCsr upload_csr(const spdnn::Csr& a) {
  DevCsr d;
  d.m = a.rows;
  d.k = a.cols;
  d.nnz = a.nnz();
  std::vector<int> rp(a.ptr.begin(), a.ptr.end());
  d.rp = DeviceBuffer(rp.size() * 4, 0);
  d.rp.upload(rp.data(), rp.size() * 4);
  d.ci = DeviceBuffer(a.idx.size() * 4 + 4, 0);
  d.va = DeviceBuffer(a.val.size() * 4 + 4, 0);
  if (!a.idx.empty()) {
    d.ci.upload(a.idx.data(), a.idx.size() * 4);
    d.va.upload(a.val.data(), a.val.size() * 4);
  }
  return d;
}

spdnn::Csr power_law(int64_t m, int64_t k, double avg, uint64_t seed) {
  jhdnn::test::SplitMix64 g(seed);
  spdnn::Csr a;
  a.rows = m;
  a.cols = k;
  a.ptr.assign(m + 1, 0);
  for (int64_t r = 0; r < m; ++r) {
    // Pareto(alpha = 1.5) lengths with mean `avg`, capped at k.
    const double u = g.uniform() + 1e-12;
    int64_t len = std::min<int64_t>(k, int64_t(avg / 3.0 * std::pow(u, -1.0 / 1.5)));
    std::vector<int> cols(len);
    for (auto& c : cols) c = int(g.next() % uint64_t(k));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int c : cols) {
      a.idx.push_back(c);
      a.val.push_back(float(g.uniform()));
    }
    a.ptr[r + 1] = int64_t(a.idx.size());
  }
  return a;
}

// impl: 0..6 jhDNN algorithm (jhdnnSpMMAlg_t; through jhdnnSpMMWithWorkspace with the reported
// workspace, allocated outside the timed region), 7 WARP_ROW and 8 WARP_ROW_WIDE with the row-order
// hint (rows with equal columns adjacent), 10 + k cuSPARSE CSR ALG k (1, 2, 3), 20 / 21 NNZ_PAIRS under
// JHDNN_SPMM_PAIRS=deep / classic (set for this benchmark through core::config, restored after). Counter
// max_rel_diff on NNZ_PAIRS's row-major rows other than classic (5 = the default deep4, 20 = deep): the
// largest |C - C_classic| / max|C_classic| against one NNZ_PAIRS classic run.
constexpr int kImplDeep = 20, kImplClassic = 21;
void bench_spmm(benchmark::State& st, std::shared_ptr<DevCsr> a, int64_t n, jhdnnOrder_t order, int impl,
                std::shared_ptr<DeviceBuffer> b) {
  Ctx& c = *g_ctx;
  const int64_t ldb = order == JHDNN_ORDER_ROW ? n : a->k, ldc = order == JHDNN_ORDER_ROW ? n : a->m;
  DeviceBuffer cbuf(size_t(a->m) * n * 4, 0);
  const float alpha = 1.f, beta = 0.f;
  std::function<void()> run;
  jhdnnSparseMatrixDescriptor_t d = nullptr;
  cusparseSpMatDescr_t sa = nullptr;
  cusparseDnMatDescr_t sb = nullptr, sc = nullptr;
  std::unique_ptr<DeviceBuffer> work;
  const bool scoped = impl == kImplDeep || impl == kImplClassic;
  const bool vs_classic = order == JHDNN_ORDER_ROW && (impl == kImplDeep || impl == JHDNN_SPMM_ALG_NNZ_PAIRS);
  struct PairsScope {  // JHDNN_SPMM_PAIRS for this benchmark only
    bool on;
    explicit PairsScope(bool on_, const char* v) : on(on_) {
      if (on && !jhdnn::core::config::set_spmm_pairs(v)) std::abort();
    }
    ~PairsScope() {
      if (on) jhdnn::core::config::set_spmm_pairs(nullptr);
    }
  } pairs_scope(scoped, impl == kImplDeep ? "deep" : "classic");
  if (scoped) impl = JHDNN_SPMM_ALG_NNZ_PAIRS;
  if (impl < 10) {
    JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&d));
    JHDNN_CHECK(jhdnnSetCsrMatrixDescriptor(d, a->m, a->k, a->nnz, a->rp.as<int>(), a->ci.as<int>(), a->va.get(),
                                            JHDNN_DATA_FLOAT));
    if (impl >= 7) JHDNN_CHECK(jhdnnSetSparseMatrixRowOrder(d, a->order.as<int>()));
    const jhdnnSpMMAlg_t alg = impl == 7 ? JHDNN_SPMM_ALG_WARP_ROW
                               : impl == 8 ? JHDNN_SPMM_ALG_WARP_ROW_WIDE
                                           : jhdnnSpMMAlg_t(impl);
    size_t ws = 0;
    JHDNN_CHECK(jhdnnGetSpMMWorkspaceSize(c.h.get(), alg, d, n, order, &ws));
    work = std::make_unique<DeviceBuffer>(ws, 0);
    run = [&, d, alg, ws]() {
      JHDNN_CHECK(jhdnnSpMMWithWorkspace(c.h.get(), alg, &alpha, d, n, order, b->get(), ldb, &beta, cbuf.get(), ldc,
                                         ws ? work->get() : nullptr, ws));
    };
  } else {
    const cusparseSpMMAlg_t alg = impl == 11 ? CUSPARSE_SPMM_CSR_ALG1 : impl == 12 ? CUSPARSE_SPMM_CSR_ALG2
                                                                                   : CUSPARSE_SPMM_CSR_ALG3;
    const cusparseOrder_t co = order == JHDNN_ORDER_ROW ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
    SP_CHECK(cusparseCreateCsr(&sa, a->m, a->k, a->nnz, a->rp.get(), a->ci.get(), a->va.get(), CUSPARSE_INDEX_32I,
                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    SP_CHECK(cusparseCreateDnMat(&sb, a->k, n, ldb, b->get(), CUDA_R_32F, co));
    SP_CHECK(cusparseCreateDnMat(&sc, a->m, n, ldc, cbuf.get(), CUDA_R_32F, co));
    size_t bs = 0;
    const cusparseStatus_t s = cusparseSpMM_bufferSize(c.sp, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                       CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, sa, sb, &beta, sc,
                                                       CUDA_R_32F, alg, &bs);
    if (s != CUSPARSE_STATUS_SUCCESS) {
      st.SkipWithError((std::string("cuSPARSE refuses: ") + cusparseGetErrorString(s)).c_str());
      cusparseDestroySpMat(sa);
      cusparseDestroyDnMat(sb);
      cusparseDestroyDnMat(sc);
      return;
    }
    work = std::make_unique<DeviceBuffer>(bs, 0);
    if (alg == CUSPARSE_SPMM_CSR_ALG3)  // preprocessing once per matrix, outside the timed region
      SP_CHECK(cusparseSpMM_preprocess(c.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                       sa, sb, &beta, sc, CUDA_R_32F, alg, work->get()));
    run = [&, alg]() {
      SP_CHECK(cusparseSpMM(c.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, sa, sb,
                            &beta, sc, CUDA_R_32F, alg, work->get()));
    };
  }
  run();
  CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : st) {
    c.start();
    run();
    st.SetIterationTime(c.stop_ms() * 1e-3);
  }
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * double(a->nnz) * double(n), benchmark::Counter::kIsIterationInvariantRate);
  if (vs_classic) {  // the deep kernel's C against the classic kernel's (same B, same descriptor)
    const size_t count = size_t(a->m) * size_t(n);
    std::vector<float> got(count), ref(count);
    CUDA_CHECK(cudaMemcpy(got.data(), cbuf.get(), count * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemset(cbuf.get(), 0xFF, count * 4));  // NaN: a C element the classic run misses shows up
    if (!jhdnn::core::config::set_spmm_pairs("classic")) std::abort();
    run();
    CUDA_CHECK(cudaDeviceSynchronize());
    jhdnn::core::config::set_spmm_pairs(nullptr);  // back to the environment's kernel for the next benchmark
    CUDA_CHECK(cudaMemcpy(ref.data(), cbuf.get(), count * 4, cudaMemcpyDeviceToHost));
    double mx = 0, diff = 0;
    for (size_t i = 0; i < count; ++i) mx = std::max(mx, double(std::fabs(ref[i])));
    for (size_t i = 0; i < count; ++i) {
      const double dd = std::fabs(double(got[i]) - double(ref[i]));
      diff = dd == dd ? std::max(diff, dd) : 1e30;  // NaN anywhere: 1e30
    }
    st.counters["max_rel_diff"] = mx > 0 ? diff / mx : diff;
  }
  if (d) jhdnnDestroySparseMatrixDescriptor(d);
  if (sa) cusparseDestroySpMat(sa);
  if (sb) cusparseDestroyDnMat(sb);
  if (sc) cusparseDestroyDnMat(sc);
}

// ---------------------------------------------------------------- SpDNN inference

spdnn::Csr images_for(int64_t n) { return n == 1024 ? g_images1024 : spdnn::scale_images(g_images1024, n); }

std::map<std::pair<int64_t, int>, std::vector<int>> g_fused_categories;  // for the baseline's `valid`

// path kGraph: the fused layer+compaction kernels in one CUDA graph (the default); kSeparate: round 1's
// layer + 4-launch compaction with survivor readbacks (kept for comparison); kPersistent: all layers
// in one cooperative launch (jhdnnSparseDnnLayersForwardCompact); kResident: the late layers with
// shared-memory-resident slices (jhdnnSparseDnnLayersForwardResident). tiled (kGraph): the tiled feature layout
// with the reader relabelling (session 26; spdnn_gpu.h Relabel, jhdnnSparseDnnLayerForwardCompactEx); kResident
// with the bank relabelling from layer 11 (session 42, spdnn_infer's default).
// tc_head (kResident, kGraph): layers 1 .. tc_head as one tensor-core resident call (spdnn DriverOptions; convert:
// one bf16 piece a feature, else three), its survivors compacted, and tc_second layers after it as a second such
// call: NOT the fp32 chain bit for bit, so `valid` says whether its categories are the graph run's (session 51).
void bench_spdnn_fused(benchmark::State& st, int64_t n, int layers, spdnn::Path path, bool tiled, int tc_head,
                       bool convert, int tc_second, bool tc_tail) {
  Ctx& c = *g_ctx;
  const float bias = spdnn::challenge_bias(n);
  const spdnn::Csr imgs = images_for(n);
  const jhdnnSparseDnnFeatureLayout_t layout =
      tiled ? JHDNN_SPARSE_DNN_FEATURES_TILED128 : JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR;
  spdnn::DeviceNetwork net;
  // The tiled rows with the reader renaming, the others with spdnn_infer's default (spdnn::auto_relabel).
  const spdnn::Relabel relabel =
      tiled ? spdnn::Relabel::kReaders : spdnn::auto_relabel(n, path == spdnn::Path::kResident, false);
  net.load(n, layers, [&](int l) { return spdnn::generate_layer_ell(n, l, 42); }, spdnn::RowOrder::kChain, relabel,
           spdnn::relabel_from_default(relabel));
  spdnn::DriverOptions opt;
  opt.tc_head_layers = tc_head;
  opt.tc_head_convert = convert;
  opt.tc_second_layers = tc_second;
  opt.tc_tail = tc_tail;
  // Warm-up on the timed runs' images, as the pipeline's (on the 1200 distinct ones until session 44: the first timed
  // run then paid the first use of what only a full run needs, e.g. the resident path's handed schedule)
  (void)spdnn::run_inference(c.h.get(), net, imgs, kImages, bias, -1, 0, nullptr, nullptr, path, -1, -1, 0, nullptr,
                             layout, opt);
  spdnn::InferenceResult r;
  RunTimes times;
  std::vector<int> first;
  for (auto _ : st) {
    r = spdnn::run_inference(c.h.get(), net, imgs, kImages, bias, -1, 0, nullptr, nullptr, path, -1, -1, 0, nullptr,
                             layout, opt);
    times.add(st, r.loop_ms);
    if (times.ms.size() == 1) {
      first = r.categories;
    } else if (r.categories != first) {
      st.SkipWithError("the timed runs' categories differ");
      break;  // (Google Benchmark: no further iteration after SkipWithError)
    }
  }
  if (st.error_occurred()) return;  // no counters, and not the reference of later paths' `valid`
  times.report(st);
  auto it = g_fused_categories.find({n, layers});
  if (it == g_fused_categories.end())
    g_fused_categories[{n, layers}] = r.categories;
  else
    st.counters["valid"] = double(it->second == r.categories);  // the separate path against the graph run
  st.counters["TE/s"] = 60000.0 * 32 * double(n) * layers / (times.median() * 1e-3) / 1e12;
  st.counters["survivors"] = double(r.categories.size());
  st.counters["host_ms"] = r.host_ms;
  st.counters["peak_GiB"] = double(r.peak_used_bytes) / (1u << 30);
  if (path == spdnn::Path::kGraph) st.counters["graph_build_ms"] = r.build_ms;
  if (path == spdnn::Path::kPersistent) st.counters["persistent_ran"] = double(r.path_used == spdnn::Path::kPersistent);
  if (path == spdnn::Path::kResident) st.counters["resident_first"] = double(r.tail_first);  // 0: not run
  const std::string second = tc_second == 0 ? ""
                             : " and layers " + std::to_string(tc_head + 1) + "-" +
                                   std::to_string(tc_head + tc_second) + " a second";
  const std::string tc_text = tc_head == 0 ? ""
                              : ", layers 1-" + std::to_string(tc_head) + " one tensor-core call" + second + " (" +
                                    (convert ? "one bf16 piece" : "three bf16 pieces") +
                                    " a feature; not the fp32 chain bit for bit)";
  const std::string tail_text =
      tc_tail ? ", the resident calls on tensor cores (one bf16 piece a feature; not the fp32 chain bit for bit)" : "";
  st.SetLabel(std::string(spdnn::path_name(r.path_used)) + " path" + tc_text + tail_text +
              (tiled ? ", tiled features, relabelled neurons" : "") + ", generated network, 1200 official images " +
              "scaled+tiled to 60000" + (r.note.empty() ? "" : "; " + r.note));
}

// cuSPARSE pipeline: what a competent cuSPARSE user would write for the same pruned inference (the baseline of the
// "x cuSPARSE" ratios), all on the benchmark's stream (the legacy default stream, as Ctx's events):
//   every layer:   cusparseSpMM CSR_ALG2 (W^T CSR x the `width` feature columns of `in`, into `out`; ALG2 measured
//                  fastest of ALG1/2/3 on these layers, SpMM/cusparse_csr_alg*) + a bias/ReLU/clamp kernel;
//   refresh layer: the kernel also flags live columns; one cub::DeviceSelect::Flagged pass (CUB ships with the
//                  toolkit; preallocated temp buffer) lists them; the count is copied (cudaMemcpyAsync) into pinned
//                  memory and the host waits for it; if columns died, they are gathered into a compact `in` (the
//                  image ids move with them), else `in` and `out` swap roles;
//   other layers:  no flags, no compaction, no readback: `in` and `out` swap roles and the host runs ahead.
// Refresh layers: 1..16 (where images die: 60000 -> ~1000-1600 by layer ~20, bench/results/97c15d6/table/
// spdnn_active_*.csv), powers of two, and the last layer (so the final list is exact) -- the schedule of jhDNN's
// separate path (run_inference refresh = -1) plus the last layer: 19 host waits at L = 120, 21 at 480, 23 at 1920,
// where the previous version read the count back with a blocking pageable cudaMemcpy, ran jhdnnSparseDnnCompact and
// gathered in every layer (~75 us per late layer at N = 1024).
// Why the refresh waits block rather than read the count one layer behind: in layers 1..16 the count falls by up to
// half per layer, so an SpMM on a stale width would cost more than the wait (a few us against ~0.1-1 ms layers);
// after 16 the host never waits until the next power of two. Why CUB rather than jhdnnSparseDnnCompact: with no wait
// in most layers its ~23 us of host checks would mostly hide behind the GPU's queue, but not at the refresh layers
// around 10..16, where the queue holds one small layer when the host gets there; and a cuSPARSE user would not call
// jhDNN: one DeviceSelect::Flagged launch (the ids move in the gather) replaces its normalize + 2 scan + scatter.
// Exact: between refreshes a dead column stays in the SpMM, but it is all zero, so its output is zero, + bias (<= 0)
// and ReLU keep it zero: it is never flagged, never a survivor. A live column's values do not depend on the other
// columns (C[:, c] = W^T B[:, c]; only if cuSPARSE changed its summation order with the column count could they
// differ in rounding, as they could before between layers of different widths), and the ids change only where the
// columns move (the gather). So the survivors are the same; `valid` still compares them with the fused run's.
void bench_spdnn_cusparse(benchmark::State& st, int64_t n, int layers) {
  Ctx& c = *g_ctx;
  const float bias = spdnn::challenge_bias(n);
  if (!(bias <= 0.f)) {  // the challenge's biases are negative; a positive one would revive dead columns
    st.SkipWithError("bias > 0: carrying dead columns between refreshes would not be exact");
    return;
  }
  const spdnn::Csr imgs = images_for(n);
  spdnn::DeviceNetwork net;
  net.load(n, layers, [&](int l) { return spdnn::generate_layer_ell(n, l, 42); });
  std::vector<int> rp_host(n + 1);
  for (int64_t j = 0; j <= n; ++j) rp_host[j] = int(j * 32);  // ELL width 32, no padding -> CSR
  DeviceBuffer rp((n + 1) * 4, 0);
  rp.upload(rp_host.data(), rp_host.size() * 4);
  const int64_t R = kImages;
  DeviceBuffer x(size_t(n) * R * 4, 0), y(size_t(n) * R * 4, 0), flags(R * 4, 0), ids_a(R * 4, 0), ids_b(R * 4, 0),
      rows_out(R * 4, 0), cnt(4, 0);
  const size_t sel_bytes = spdnn::select_columns_workspace(R);  // enough for any width <= R
  DeviceBuffer sel_ws(sel_bytes, 0);
  struct PinnedInt {  // the count's readback target: pinned, so the copy is a true async DMA
    int* p = nullptr;
    PinnedInt() { CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(int))); }
    ~PinnedInt() { cudaFreeHost(p); }
  } host_count;
  const float alpha = 1.f, beta = 0.f;
  std::vector<cusparseSpMatDescr_t> mats(layers);
  for (int l = 0; l < layers; ++l)
    SP_CHECK(cusparseCreateCsr(&mats[l], n, n, n * 32, rp.get(), net.layer(l + 1).idx, net.layer(l + 1).val,
                               CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  std::unique_ptr<DeviceBuffer> work;
  size_t work_bytes = 0;
  std::vector<int> iota(R);
  for (int64_t t = 0; t < R; ++t) iota[t] = int(t);
  std::vector<int> cats;
  cusparseDnMatDescr_t d_in = nullptr, d_out = nullptr;  // the dense operands at the current width
  auto destroy_dense = [&]() {
    if (d_in) cusparseDestroyDnMat(d_in);
    if (d_out) cusparseDestroyDnMat(d_out);
    d_in = d_out = nullptr;
  };
  // One pipeline run (the layer loop timed by events); `cats` gets its sorted survivors.
  auto run = [&]() -> double {
    spdnn::upload_features(imgs, x.as<float>(), R, nullptr);
    ids_a.upload(iota.data(), R * 4);
    float* in = x.as<float>();
    float* out = y.as<float>();
    int* ids_cur = ids_a.as<int>();
    int* ids_nxt = ids_b.as<int>();
    int width = int(R);  // columns of `in`: the last count read back, an upper bound on the live columns
    // The dense descriptors change only with the width (at a refresh that dropped columns), and the workspace is
    // sized there too: cusparseSpMM_bufferSize cannot read device data, so its answer depends on the shapes, nnz and
    // algorithm only, the same for every layer (n x n, 32 n nonzeros). Otherwise a swap of `in` and `out` swaps the
    // descriptors: no host work per layer but the two launches.
    auto set_width = [&](int l) {
      destroy_dense();
      SP_CHECK(cusparseCreateDnMat(&d_in, n, width, R, in, CUDA_R_32F, CUSPARSE_ORDER_ROW));
      SP_CHECK(cusparseCreateDnMat(&d_out, n, width, R, out, CUDA_R_32F, CUSPARSE_ORDER_ROW));
      size_t bs = 0;
      SP_CHECK(cusparseSpMM_bufferSize(c.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                       mats[l], d_in, &beta, d_out, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, &bs));
      if (!work || bs > work_bytes) {  // allocates in the warm-up run only: the timed run sees the same widths
        work = std::make_unique<DeviceBuffer>(std::max<size_t>(bs, 1), 0);
        work_bytes = std::max<size_t>(bs, 1);
      }
    };
    set_width(0);  // host-only setup (descriptors, buffer size): before the clock starts
    c.start();
    for (int l = 0; l < layers && width > 0; ++l) {
      const int layer = l + 1;  // 1-based, as the refresh schedule
      const bool refresh = layer <= 16 || (layer & (layer - 1)) == 0 || layer == layers;
      SP_CHECK(cusparseSpMM(c.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mats[l],
                            d_in, &beta, d_out, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG2, work->get()));
      spdnn::bias_relu_clamp_flags(out, n, width, R, bias, 32.f, refresh ? flags.as<int>() : nullptr, nullptr);
      int next = width;
      if (refresh) {
        spdnn::select_columns(flags.as<int>(), width, rows_out.as<int>(), cnt.as<int>(), sel_ws.get(), sel_bytes,
                              nullptr);
        // The one wait per refresh: cuSPARSE takes the column count from a host descriptor, and the gather needs it.
        CUDA_CHECK(cudaMemcpyAsync(host_count.p, cnt.get(), sizeof(int), cudaMemcpyDeviceToHost, nullptr));
        CUDA_CHECK(cudaStreamSynchronize(nullptr));
        next = *host_count.p;
      }
      if (next == width) {  // no column died (or not known yet): the columns stay where they are, ids too
        std::swap(in, out);
        std::swap(d_in, d_out);
      } else {  // compact `out`'s live columns into `in` (the buffer the SpMM just read) and shrink the operands
        spdnn::gather_columns(out, R, in, R, n, rows_out.as<int>(), next, nullptr, ids_cur, ids_nxt);
        std::swap(ids_cur, ids_nxt);
        width = next;
        if (width > 0 && l + 1 < layers) set_width(l + 1);
      }
    }
    const double ms = c.stop_ms();
    destroy_dense();
    cats.resize(width);
    if (width > 0) CUDA_CHECK(cudaMemcpy(cats.data(), ids_cur, size_t(width) * 4, cudaMemcpyDeviceToHost));
    std::sort(cats.begin(), cats.end());
    return ms;
  };
  // Warm-up, as the fused paths get one: the first run allocates the SpMM workspace (also at a refresh, should a
  // width need more) and pays cuSPARSE's and CUB's first-call costs (a first run measured 135 ms where later
  // runs of the same network took 87, N = 4096 L = 480, bench/results/304ab06).
  (void)run();
  RunTimes times;
  std::vector<int> first;
  for (auto _ : st) {
    times.add(st, run());
    if (times.ms.size() == 1) {
      first = cats;
    } else if (cats != first) {
      st.SkipWithError("the timed runs' categories differ");
      break;
    }
  }
  for (auto m : mats) cusparseDestroySpMat(m);
  if (st.error_occurred()) return;
  times.report(st);
  st.counters["TE/s"] = 60000.0 * 32 * double(n) * layers / (times.median() * 1e-3) / 1e12;
  st.counters["survivors"] = double(cats.size());
  auto it = g_fused_categories.find({n, layers});
  st.counters["valid"] = it == g_fused_categories.end() ? -1.0 : double(it->second == cats);
  st.SetLabel("cusparseSpMM CSR_ALG2 + bias/ReLU/clamp; at refresh layers CUB select + pinned count readback + "
              "gather if columns died");
}

// LayerCallHost/<what>: the host time of one call (std::chrono around it, the GPU's work not waited for; every 256
// calls the stream drains outside the clock), on an N = 1024 challenge layer with maxActive = 60000 and a device
// count of 0 (the kernel leaves at once, so the launch queue never fills):
//   layer_call         jhdnnSparseDnnLayerForwardCompactEx, call after call (the fused head's steady state);
//   layer_call_cold    the same call right after a cudaStreamSynchronize (outside the clock): a timed loop's first
//                      call, which nothing before it hides;
//   layer_call_fresh   the same call on feature and list buffers allocated just before it (outside the clock), as
//                      in a spdnn run's first call (each run allocates its own);
//   pointer_attributes one cudaPointerGetAttributes of a device pointer (the layer call's checks make 12);
//   pointer_attributes_fresh  the same on a buffer allocated just before it.
// Why: a resident-path run's first layer starts only when its call returns, and its small head layers take about
// as long on the GPU as the host takes to issue them (session 44, bench/results/1ae5b7e/probes/).
void bench_layer_call_host(benchmark::State& st, int what) {
  Ctx& c = *g_ctx;
  constexpr int64_t n = 1024, kMax = kImages;
  spdnn::DeviceNetwork net;
  net.load(n, 1, [&](int l) { return spdnn::generate_layer_ell(n, l, 42); });
  DeviceBuffer x(size_t(n * kMax) * 4, 0), y(size_t(n * kMax) * 4, 0), rows(kMax * 4, 0), ids(kMax * 4, 0),
      rows_out(kMax * 4, 0), ids_out(kMax * 4, 0), counts(2 * 4, 0);
  size_t ws_size = 0;
  if (jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(c.h.get(), int(kMax), &ws_size) != JHDNN_STATUS_SUCCESS) {
    st.SkipWithError("workspace size query failed");
    return;
  }
  DeviceBuffer ws(ws_size, 0);
  // count 0 (the kernel's work), the workspace zeroed as the API asks (DeviceBuffer poisons with 0xFF)
  if (cudaMemset(counts.get(), 0, counts.bytes()) != cudaSuccess || cudaMemset(ws.get(), 0, ws_size) != cudaSuccess ||
      jhdnnSetStream(c.h.get(), nullptr) != JHDNN_STATUS_SUCCESS) {
    st.SkipWithError("setup failed");
    return;
  }
  auto call = [&] {
    return jhdnnSparseDnnLayerForwardCompactEx(c.h.get(), net.layer(1).desc, spdnn::challenge_bias(n), 32.f, int(kMax),
                                               counts.as<int>(), rows.as<int>(), ids.as<int>(),
                                               JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x.get(), kMax, y.get(), kMax,
                                               rows_out.as<int>(), ids_out.as<int>(), counts.as<int>() + 1, ws.get(),
                                               ws_size);
  };
  if (call() != JHDNN_STATUS_SUCCESS) {  // (also the warm-up: attributes set, kernels loaded)
    st.SkipWithError("the layer call failed");
    return;
  }
  const bool fresh = what == 2 || what == 4;
  int64_t k = 0;
  for (auto _ : st) {
    if (what == 1 || fresh || ++k % 256 == 0) {
      st.PauseTiming();
      cudaStreamSynchronize(nullptr);
      if (fresh) {  // new buffers at new addresses (the old ones freed after the new ones exist)
        DeviceBuffer x2(x.bytes(), 0), rows2(rows.bytes(), 0), rows_out2(rows_out.bytes(), 0);
        x = std::move(x2);
        rows = std::move(rows2);
        rows_out = std::move(rows_out2);
      }
      st.ResumeTiming();
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (what >= 3) {
      cudaPointerAttributes attr{};
      cudaPointerGetAttributes(&attr, x.get());
    } else if (call() != JHDNN_STATUS_SUCCESS) {
      st.SkipWithError("the layer call failed");
      break;
    }
    st.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  cudaStreamSynchronize(nullptr);
}

// Width:layers lists. Tokens are separated by ',', ';' or whitespace; a token "N:L" starts width N with L layers,
// a bare "L" adds L layers to the width before it. So "1024:120,480;4096:120" and
// "1024:120,480,4096:120" both mean N=1024 with L=120 and 480, and N=4096 with L=120. Repeating the
// flag appends. Anything else (a bare L before any width, a non-number, a width other than the challenge's 1024,
// 4096, 16384 and 65536) is an error: exit 2.
void parse_configs(const std::string& s, const char* flag, std::vector<std::pair<int64_t, std::vector<int>>>* out) {
  std::string tok;
  bool first = true;
  auto bad = [&](const std::string& t) {
    std::fprintf(stderr, "bench_sparse: %s \"%s\": bad token \"%s\" (want N:L[,L...][;N:L...])\n", flag, s.c_str(),
                 t.c_str());
    std::exit(2);
  };
  auto num = [&](const std::string& t) -> long long {
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) bad(t);
    const long long v = std::atoll(t.c_str());
    if (v <= 0) bad(t);
    return v;
  };
  std::string norm = s;
  // Whitespace separates like ',' and ';' ("1024:120,1920 4096:120" is two widths; deleting the space, as before
  // session 25, made it width 19204096).
  std::replace_if(
      norm.begin(), norm.end(), [](char ch) { return ch == ';' || std::isspace(static_cast<unsigned char>(ch)); }, ',');
  // Literal quotes arrive when the list came through an unquoted shell variable (SPARSE_ARGS): drop them.
  norm.erase(std::remove_if(norm.begin(), norm.end(), [](char ch) { return ch == '"' || ch == '\''; }), norm.end());
  std::stringstream ns(norm);
  while (std::getline(ns, tok, ',')) {
    if (tok.empty()) continue;
    const size_t colon = tok.find(':');
    if (colon != std::string::npos) {
      const long long n = num(tok.substr(0, colon));
      bool challenge = false;
      spdnn::challenge_bias(n, &challenge);
      if (!challenge) {  // the generator and the biases are the challenge's: any other width is not a network
        std::fprintf(stderr,
                     "bench_sparse: %s \"%s\": width %lld is not a challenge width (1024, 4096, 16384, 65536)\n", flag,
                     s.c_str(), n);
        std::exit(2);
      }
      out->push_back({n, {int(num(tok.substr(colon + 1)))}});
      first = false;
    } else {
      if (first) bad(tok);
      out->back().second.push_back(int(num(tok)));
    }
  }
}

std::string describe(const std::vector<std::pair<int64_t, std::vector<int>>>& cfg) {
  std::string d;
  for (const auto& [n, ls] : cfg) {
    d += (d.empty() ? "" : "; ") + std::string("N=") + std::to_string(n) + " L=";
    for (size_t i = 0; i < ls.size(); ++i) d += (i ? "," : "") + std::to_string(ls[i]);
  }
  return d.empty() ? "(none)" : d;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<int64_t, std::vector<int>>> spdnn_cfg, base_cfg;
  bool spdnn_given = false, base_given = false;
  bool quick = false;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--spdnn") && i + 1 < argc) {
      parse_configs(argv[++i], "--spdnn", &spdnn_cfg);
      spdnn_given = true;
    } else if (!std::strcmp(argv[i], "--baseline") && i + 1 < argc) {
      parse_configs(argv[++i], "--baseline", &base_cfg);
      base_given = true;
    } else if (!std::strcmp(argv[i], "--spdnn-runs") && i + 1 < argc) {
      char* end = nullptr;
      const long k = std::strtol(argv[++i], &end, 10);
      if (!end || *end != '\0' || k < 1 || k > 1000) {
        std::fprintf(stderr, "bench_sparse: --spdnn-runs takes 1..1000, got '%s'\n", argv[i]);
        return 2;
      }
      g_spdnn_runs = int(k);
    } else if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!spdnn_given) parse_configs("1024:120,480,1920;4096:120,480,1920;16384:120,480;65536:120", "--spdnn", &spdnn_cfg);
  // The baseline at every depth of N = 1024 and 4096 (issue 6 asks for the ratio on the same networks;
  // the late layers weigh more at L = 480 / 1920) and at L = 120 for N = 16384 (its separate-path run
  // takes ~0.3 s at L = 120 and grows with L). N = 4096 L = 1920: pipeline ~0.3 s, separate ~0.4 s.
  if (!base_given) parse_configs("1024:120,480,1920;4096:120,480,1920;16384:120", "--baseline", &base_cfg);
  std::fprintf(stderr, "bench_sparse: SpDNN fused (graph): %s\nbench_sparse: SpDNN baselines (separate path, cuSPARSE): %s\n",
               describe(spdnn_cfg).c_str(), describe(base_cfg).c_str());
  int rargc = int(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  std::string why;
  if (!jhdnn::test::gpu_available(&why)) {
    std::fprintf(stderr, "bench_sparse: no usable GPU: %s\n", why.c_str());
    return 0;
  }
  Ctx ctx;
  g_ctx = &ctx;
  std::string err;
  g_have_images = spdnn::read_images_tsv(spdnn::data_dir() + "/sparse-images-1024-first1200.tsv", 1024, 1200,
                                         &g_images1024, &err);
  if (!g_have_images) std::fprintf(stderr, "bench_sparse: %s: SpDNN and challenge SpMM benches skipped\n", err.c_str());
  std::printf("# %s\n", jhdnn::test::gpu_description().c_str());

  // Dense to CSR: 60000 x {1024, 4096, 16384} at 3% and 10%.
  for (int64_t cols : {1024, 4096, 16384})
    for (double dens : {0.03, 0.10})
      for (bool cus : {false, true}) {
        const std::string name = std::string("DenseToCsr/") + (cus ? "cusparse" : "jhdnn") + "/60000x" +
                                 std::to_string(cols) + "/d" + std::to_string(int(dens * 100));
        manual_time(benchmark::RegisterBenchmark(name.c_str(), bench_dense_to_csr, cus, int64_t(60000), cols, dens),
                    quick ? 2 : 10);
      }

  // SpMM: challenge layers (W^T of generated layer 7, the first permuted one) x layer-1 features.
  struct Mat { std::string name; std::shared_ptr<DevCsr> a; int64_t n; std::shared_ptr<DeviceBuffer> b; };
  std::vector<Mat> mats;
  if (g_have_images)
    for (int64_t n : {1024, 4096, 16384}) {
      const spdnn::Csr wt = spdnn::transpose(spdnn::generate_layer(n, 7, 42));
      auto a = std::make_shared<DevCsr>(upload_csr(wt));
      // Row j of W^T lists the inputs of output j, the same rows as the ELL's: its reuse order.
      const std::vector<int> ord = spdnn::reuse_order(spdnn::generate_layer_ell(n, 7, 42));
      a->order = DeviceBuffer(ord.size() * 4, 0);
      a->order.upload(ord.data(), ord.size() * 4);
      const int64_t cols = quick ? 6000 : kImages;
      auto b = std::make_shared<DeviceBuffer>(size_t(n) * cols * 4, 0);
      spdnn::upload_features(images_for(n), b->as<float>(), cols, nullptr);  // N x cols, row-major
      mats.push_back({"challenge_N" + std::to_string(n), a, cols, b});
    }
  for (int64_t m : {int64_t(1) << 17, int64_t(1) << 20}) {
    auto a = std::make_shared<DevCsr>(upload_csr(power_law(m, m, 16, 99 + m)));
    const int64_t n = 64;
    auto b = std::make_shared<DeviceBuffer>(size_t(m) * n * 4, 0);
    spdnn::fill_sparse_dense(b->as<float>(), m, n, 1.0, 7, nullptr);
    mats.push_back({"powerlaw_m" + std::to_string(m) + "_avg16_n64", a, n, b});
  }
  for (const Mat& mt : mats)
    for (jhdnnOrder_t order : {JHDNN_ORDER_ROW, JHDNN_ORDER_COL}) {
      if (mt.name.rfind("challenge", 0) == 0 && order == JHDNN_ORDER_COL) continue;  // features are row-major here
      const char* on = order == JHDNN_ORDER_ROW ? "row" : "col";
      for (int impl : {1, 2, 7, 4, 8, 3, 5, kImplDeep, kImplClassic, 6, 0, 11, 12, 13}) {
        if (impl == 1 && mt.n > 64) continue;  // THREAD_ROW (teaching only) loops over all n columns per thread
        if (impl >= 7 && impl < 10 && mt.a->order.bytes() == 0) continue;
        if (impl == 6 && order == JHDNN_ORDER_ROW) continue;  // TRANSPOSE_B is NNZ_PAIRS for a row-major B
        // The switch names the row-major kernel (NNZ_PAIRS of a column-major B is <8, 1>, unchanged).
        if ((impl == kImplDeep || impl == kImplClassic) && order != JHDNN_ORDER_ROW) continue;
        static const char* names[] = {"default",   "thread_row", "warp_row",         "nnz_split",
                                      "warp_row_wide", "nnz_pairs", "transpose_b", "warp_row_ordered",
                                      "warp_row_wide_ordered"};
        const std::string impl_name = impl == kImplDeep    ? std::string("jhdnn_nnz_pairs_deep")
                                      : impl == kImplClassic ? std::string("jhdnn_nnz_pairs_classic")
                                      : impl < 10          ? std::string("jhdnn_") + names[impl]
                                                           : "cusparse_csr_alg" + std::to_string(impl - 10);
        const std::string name = "SpMM/" + impl_name + "/" + mt.name + "/" + on;
        manual_time(benchmark::RegisterBenchmark(name.c_str(), bench_spmm, mt.a, mt.n, order, impl, mt.b), quick ? 2 : 5);
      }
    }

  // The host time of a layer call (no data needed: the kernel has nothing to do).
  for (int what : {0, 1, 2, 3, 4}) {
    static const char* names[] = {"layer_call", "layer_call_cold", "layer_call_fresh", "pointer_attributes",
                                  "pointer_attributes_fresh"};
    manual_time(benchmark::RegisterBenchmark((std::string("LayerCallHost/") + names[what]).c_str(),
                                             bench_layer_call_host, what),
                quick ? 200 : what == 2 || what == 4 ? 200 : 2000);
  }

  if (g_have_images) {
    auto spdnn_name = [](const std::string& impl, int64_t n, int l) {
      return "SpDNN/" + impl + "/N" + std::to_string(n) + "/L" + std::to_string(l);
    };
    // bench_spdnn_fused's arguments after n and l: path, tiled, tc_head, convert, tc_second, tc_tail
    auto fused = [&](const std::string& impl, int64_t n, int l, spdnn::Path path, bool tiled, int tc_head,
                     bool convert, int tc_second, bool tc_tail = false) {
      manual_time(benchmark::RegisterBenchmark(spdnn_name(impl, n, l).c_str(), bench_spdnn_fused, n, l, path, tiled,
                                               tc_head, convert, tc_second, tc_tail),
                  g_spdnn_runs);
    };
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls) fused("fused", n, l, spdnn::Path::kGraph, false, 0, false, 0);
    // The graph path on the tiled feature layout with relabelled neurons (session 26); `valid` against the graph run.
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls) fused("tiled", n, l, spdnn::Path::kGraph, true, 0, false, 0);
    // The multi-layer cooperative launch (whole network, no readback); `valid` against the graph run.
    // N <= 4096 only, to keep the default run's time (spdnn_infer --path persistent for the others).
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls)
        if (n <= 4096) fused("persistent", n, l, spdnn::Path::kPersistent, false, 0, false, 0);
    // The shared-memory-resident late layers (fused launches until <= 8 x SMs images are alive, then
    // launches of 96 layers, then twice the one before up to 1024, with each CTA's slice of 4 or 8 images in shared
    // memory); `valid` against the graph run. Registered where the default rule runs it
    // (spdnn::resident_auto_applies: N <= 1024, and N = 4096 unless JHDNN_SPDNN_RESIDENT_4096=0).
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls)
        if (spdnn::resident_auto_applies(n)) fused("resident", n, l, spdnn::Path::kResident, false, 0, false, 0);
    // The resident path with the opt-in tensor-core head (session 51): layers 1-5 as one call on bf16 tensor cores,
    // three pieces a feature (resident_tc5) and one (resident_tc5c); N = 4096 (session 52: a cluster of 4 CTAs) one
    // piece only, `valid` against the graph run's categories; resident_tc5_3c: layers 6-8 as a second call (one
    // piece; session 54: no faster, bench/results/7227fdf/, e822bd8/).
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls) {
        if (n > 4096) continue;
        if (n <= 1024) fused("resident_tc5", n, l, spdnn::Path::kResident, false, 5, false, 0);
        fused("resident_tc5c", n, l, spdnn::Path::kResident, false, 5, true, 0);
        fused("resident_tc5_3c", n, l, spdnn::Path::kResident, false, 5, true, 3);
        // (session 56) and the resident calls on tensor cores too: the streamed kernel for their calls of > 8 layers
        fused("resident_tc5c_tail", n, l, spdnn::Path::kResident, false, 5, true, 0, true);
        fused("resident_tail", n, l, spdnn::Path::kResident, false, 0, false, 0, true);
      }
    // The head on the graph path where the resident path does not fit (N = 16384: a cluster of 16 CTAs, one piece;
    // sessions 54-55), `valid` against the graph run's categories.
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls)
        if (n > 4096 && n <= 16384) fused("graph_tc5c", n, l, spdnn::Path::kGraph, false, 5, true, 0);
    // Past N = 4096 the tensor-core tail on the library's planes kernels (session 58: one launch a layer, the features
    // in bf16 planes in device memory), the resident path's calls from layer 1 (resident_tail) or after the head and
    // its first fused layer (resident_tc5c_tail, N = 16384); `valid` against the graph run's categories.
    for (auto& [n, ls] : spdnn_cfg)
      for (int l : ls) {
        if (n <= 4096) continue;
        if (n <= 16384) fused("resident_tc5c_tail", n, l, spdnn::Path::kResident, false, 5, true, 0, true);
        fused("resident_tail", n, l, spdnn::Path::kResident, false, 0, false, 0, true);
      }
    for (auto& [n, ls] : base_cfg)
      for (int l : ls) {
        fused("separate", n, l, spdnn::Path::kSeparate, false, 0, false, 0);
        manual_time(benchmark::RegisterBenchmark(spdnn_name("cusparse", n, l).c_str(), bench_spdnn_cusparse, n, l),
                    g_spdnn_runs);
      }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  mats.clear();
  return 0;
}
