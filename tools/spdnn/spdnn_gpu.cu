#include "spdnn/spdnn_gpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "common/gpu_util.h"

namespace spdnn {
namespace {

// Block r writes image r (source row r % src_rows) into column r of the feature-major x (leading dimension ld);
// tiled (n neurons): into column r of the tiled layout; image-major: into x[r * ld + i] (ld: the image stride)
// (upload_features).
__global__ void scatter_images(const int64_t* __restrict__ ptr, const int* __restrict__ idx,
                               const float* __restrict__ val, int64_t src_rows, float* __restrict__ x, int64_t ld,
                               jhdnnSparseDnnFeatureLayout_t layout, int64_t n) {
  const int64_t r = blockIdx.x;
  const int64_t s = r % src_rows;
  float* col = x + r;  // neuron-major
  int64_t stride = ld;
  if (layout == JHDNN_SPARSE_DNN_FEATURES_TILED128) {
    col = x + (r / 128) * n * 128 + r % 128;
    stride = 128;
  } else if (layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR) {
    col = x + r * ld;
    stride = 1;
  }
  for (int64_t k = ptr[s] + threadIdx.x; k < ptr[s + 1]; k += blockDim.x) col[int64_t(idx[k]) * stride] = val[k];
}

// The images' piece mask (jhdnnSparseDnnLayerForwardCompactMasked): for column r (image r mod src_rows) and each of
// its nonzero features i, bit (r % 128) / 4 of mask[i * mask_ld + r / 128]; the mask zeroed before. A stored value
// whose bits are zero (+0.0f) sets nothing: the dense copy holds +0.0f there (scatter_images).
__global__ void image_mask_kernel(const int64_t* __restrict__ ptr, const int* __restrict__ idx,
                                  const float* __restrict__ val, int64_t src_rows, unsigned* __restrict__ mask,
                                  int64_t mask_ld) {
  const int64_t r = blockIdx.x;
  const int64_t s = r % src_rows;
  for (int64_t k = ptr[s] + threadIdx.x; k < ptr[s + 1]; k += blockDim.x)
    if (__float_as_uint(val[k]) != 0u) atomicOr(mask + int64_t(idx[k]) * mask_ld + r / 128, 1u << ((r % 128) / 4));
}

__global__ void brc_kernel(float* __restrict__ y, int64_t n_out, int64_t cols, int64_t ld, float bias, float clamp,
                           int* __restrict__ flags) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  bool alive = false;
  for (int64_t j = blockIdx.y; j < n_out; j += gridDim.y) {
    float* p = y + j * ld + c;
    const float v = fminf(fmaxf(*p + bias, 0.f), clamp);
    *p = v;
    alive |= v != 0.f;
  }
  if (alive && flags) flags[c] = 1;  // flags == nullptr: a layer that does not compact (bench_spdnn_cusparse)
}

__global__ void gather_kernel(const float* __restrict__ src, int64_t ld_src, float* __restrict__ dst, int64_t ld_dst,
                              int64_t n_rows, const int* __restrict__ cols, int64_t count,
                              const int* __restrict__ ids_in, int* __restrict__ ids_out) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= count) return;
  const int64_t c = cols[t];
  if (ids_out && blockIdx.y == 0) ids_out[t] = ids_in[c];  // the image of column c moves with it
  for (int64_t i = blockIdx.y; i < n_rows; i += gridDim.y) dst[i * ld_dst + t] = src[i * ld_src + c];
}

__global__ void fill_kernel(float* __restrict__ a, int64_t total, uint32_t threshold, uint64_t seed) {
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    uint64_t z = uint64_t(t) * 0x9E3779B97F4A7C15ull + seed;  // splitmix64 finaliser as a hash
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    a[t] = uint32_t(z) < threshold ? 1.f + float(z >> 40) * (1.f / 16777216.f) : 0.f;
  }
}

// The widening check before a fused layer (run_inference's widen_layers): the layer before it read *span list
// positions and kept *kept of them, rows / ids (its output list, of capacity >= *span) in an unspecified order. If
// 100 kept >= keep_percent span, the list becomes every position of that layer's output, rows[t] = t and
// ids[t] = ids_in[t] (the image of its input position t: output column t), and *eff = span; else the list stays and
// *eff = kept. Exact: a column that was not kept is all zero, so the layer computes it as zero again and does not
// keep it either.
// Why: survivors lie scattered among the columns, and a tile of scattered columns gathers 4-byte pieces (late4's
// kGather) at ~1.5x the time per image of a tile of consecutive columns (layer 1: 3.2 against 4.8-5.0 ns per image
// at N = 1024, bench/results/c8bb036/near), so computing the dead columns too pays while they are few. Not below
// ~75% kept: at N = 4096 layer 3 (68.5% kept) gained ~45-130 us widened, but layer 4's survivors then lay among
// 60000 columns instead of 41100 and it took ~600 us against ~490 (ncu, bench/results/375f8ed/widen); 67 / 75 / 85%
// measured in bench/results/32ae990.
__global__ void widen_list_kernel(const int* __restrict__ span, const int* __restrict__ kept, int* __restrict__ eff,
                                  int* __restrict__ rows, int* __restrict__ ids, const int* __restrict__ ids_in,
                                  int keep_percent) {
  const int sp = *span, k = *kept;
  const bool wide = 100ll * k >= int64_t(keep_percent) * sp;
  if (blockIdx.x == 0 && threadIdx.x == 0) *eff = wide ? sp : k;
  if (!wide) return;
  for (int t = int(blockIdx.x * blockDim.x + threadIdx.x); t < sp; t += int(gridDim.x * blockDim.x)) {
    rows[t] = t;
    ids[t] = ids_in[t];
  }
}

// Host milliseconds since t0.
double host_ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Device memory freed when the owner goes out of scope, also when a check throws half way.
struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using Owned = std::vector<std::unique_ptr<void, CudaFree>>;

template <class T>
T* dalloc(size_t count, size_t* total, Owned* owned = nullptr) {
  T* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  if (owned) owned->emplace_back(p);
  *total += std::max<size_t>(count, 1) * sizeof(T);
  return p;
}

}  // namespace

DeviceNetwork::~DeviceNetwork() {
  for (auto& l : layers_) {
    if (l.desc) jhdnnDestroySparseMatrixDescriptor(l.desc);
    cudaFree(l.idx);
    cudaFree(l.val);
    cudaFree(l.order);
  }
}

namespace {
struct LayerHost {  // a layer on the host, made by a worker thread of DeviceNetwork::load
  Ell e;
  std::vector<int> order;
  std::vector<int> in_labels;  // relabelled: the new names of the layer's inputs (reader_group_labels, bank_labels)
  bool renamed = false;        // e and order already under in_labels and the next layer's (rename_layer)
  std::exception_ptr error;
};
// Layer h under new names: its inputs' (h.in_labels) and its outputs' (out_labels, the next layer's in_labels).
void rename_layer(LayerHost& h, const std::vector<int>& out_labels) {
  h.e = relabel_ell(h.e, h.in_labels, out_labels);
  h.order = map_order(h.order, out_labels);
  h.renamed = true;
}
// fn(k) for k = 0 .. count - 1 on up to `threads` threads (this one among them), each k taken once from a shared
// counter, so a slow k does not hold up a fixed share of the others. fn must not throw.
void run_on_threads(int threads, int count, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  auto work = [&] {
    for (int k = next++; k < count; k = next++) fn(k);
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < std::min(threads, count); ++t) pool.emplace_back(work);
  } catch (const std::system_error&) {  // no more threads: the ones started and this one take every k
  }
  work();
  for (auto& t : pool) t.join();
}
}  // namespace

// The host side of the layers, a chunk of 2 per thread at a time: at n = 65536 generating a layer and its chain
// order takes tens of milliseconds, so L = 1920 spent minutes of a device call here on one thread (session 24; the
// bench_sparse N = 65536 L = 1920 step, which loads two networks, took 310 s for ~7 s of GPU time). Each layer is
// computed by one thread exactly as before (the same functions), so the network does not depend on the thread count.
// Relabelled (kReaders, kBanks): layer l is uploaded as relabel_ell(e_l, P_{l-1}, P_l), P_{l-1} its own inputs'
// labels and P_l those of layer l + 1, so each chunk's last layer waits (`pending`) for the next chunk's first.
int DeviceNetwork::load_threads() { return int(std::max(1u, std::min(std::thread::hardware_concurrency(), 32u))); }

void DeviceNetwork::load(int64_t n, int layers, const std::function<Ell(int)>& get, RowOrder row_order,
                         Relabel relabel, int relabel_from) {
  n_ = n;
  const bool rl = relabel != Relabel::kNone;
  labels_.clear();
  if (rl) labels_.resize(size_t(layers) + 1);
  const int threads = load_threads();
  const int chunk = 2 * threads;  // host memory: ~16 MB per layer at n = 65536
  auto upload = [&](int l, LayerHost& h, const std::vector<int>& out_labels) {
    if (rl) {
      if (!h.renamed) rename_layer(h, out_labels);
      labels_[size_t(l) - 1] = std::move(h.in_labels);
    }
    upload_layer(l, h.e, h.order, row_order != RowOrder::kNone);
    h = LayerHost{};  // the chunk's host memory goes as it is uploaded
  };
  LayerHost pending;  // rl: the previous chunk's last layer, uploaded once this chunk's first has its labels
  for (int l0 = 1; l0 <= layers; l0 += chunk) {
    const int count = std::min(chunk, layers - l0 + 1);
    std::vector<LayerHost> made(static_cast<size_t>(count));
    run_on_threads(threads, count, [&](int k) {
      LayerHost& h = made[size_t(k)];
      try {
        h.e = get(l0 + k);
        if (row_order != RowOrder::kNone) h.order = row_order == RowOrder::kChain ? chain_order(h.e) : reuse_order(h.e);
        // groups placed in the order the rows are processed, so consecutive list blocks read neighbouring inputs
        if (relabel == Relabel::kReaders && l0 + k >= relabel_from) h.in_labels = reader_group_labels(h.e, h.order);
      } catch (...) {
        h.error = std::current_exception();
      }
    });
    // kBanks: a layer's input names need the row order of the layer before (its stores), so they are made once every
    // order of the chunk is, before any of its uploads maps an order to new names; on the threads too (one thread
    // took 2.7 ms a layer at n = 4096 and 0.65 at n = 1024 on the 2-core dev machine, -O2: ~5 s of N = 4096
    // L = 1920's load, before the clock). Only the layers before the chunk's first failed one, as the uploads; a
    // throw of bank_labels is that layer's error, so the first error in layer order comes out.
    auto good = [&] {  // the chunk's layers before its first failed one
      int g = 0;
      while (g < count && !made[size_t(g)].error) ++g;
      return g;
    };
    if (relabel == Relabel::kBanks)
      run_on_threads(threads, good(), [&](int k) {
        if (l0 + k < relabel_from) return;
        try {
          made[size_t(k)].in_labels =
              bank_labels(made[size_t(k)].e, made[size_t(k)].order, k > 0 ? made[size_t(k) - 1].order : pending.order);
        } catch (...) {
          made[size_t(k)].error = std::current_exception();
        }
      });
    // Relabelled: each layer but the chunk's last (it waits for the next chunk's first names) renamed on the threads
    // too (relabel_ell took 1.05 ms a layer at n = 4096 on the dev machine, 3.6 at 16384).
    if (rl)
      run_on_threads(threads, std::max(0, good() - 1), [&](int k) {
        try {
          rename_layer(made[size_t(k)], made[size_t(k) + 1].in_labels);
        } catch (...) {
          made[size_t(k)].error = std::current_exception();
        }
      });
    // Layers go up in order until the first that failed, whose exception comes out; relabelled, the layer before
    // it stays behind too (its outputs' names are the failed layer's).
    if (rl && l0 > 1) {
      if (made[0].error) std::rethrow_exception(made[0].error);
      upload(l0 - 1, pending, made[0].in_labels);
    }
    for (int k = 0; k < count; ++k) {
      if (made[k].error) std::rethrow_exception(made[k].error);
      if (!rl) {
        upload(l0 + k, made[k], no_labels_);
      } else if (k + 1 < count) {
        if (made[k + 1].error) std::rethrow_exception(made[k + 1].error);
        upload(l0 + k, made[k], made[k + 1].in_labels);
      } else {
        pending = std::move(made[k]);
      }
    }
  }
  if (rl && layers > 0) upload(layers, pending, no_labels_);  // the outputs keep their names
}

void DeviceNetwork::upload_layer(int l, const Ell& e, const std::vector<int>& order, bool set_order) {
  const int64_t n = n_;
  if (e.rows != n || e.cols != n) throw std::runtime_error("layer " + std::to_string(l) + " has the wrong shape");
  DeviceLayer d;
  d.idx = dalloc<int>(e.idx.size(), &bytes_);
  d.val = dalloc<float>(e.val.size(), &bytes_);
  layers_.push_back(d);  // owned from here on, freed by the destructor even if a check throws
  CUDA_CHECK(cudaMemcpy(d.idx, e.idx.data(), e.idx.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.val, e.val.data(), e.val.size() * sizeof(float), cudaMemcpyHostToDevice));
  JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&layers_.back().desc));
  JHDNN_CHECK(jhdnnSetEllMatrixDescriptor(layers_.back().desc, n, n, e.width, d.idx, d.val, JHDNN_DATA_FLOAT));
  if (set_order) {
    layers_.back().order = dalloc<int>(order.size(), &bytes_);
    CUDA_CHECK(cudaMemcpy(layers_.back().order, order.data(), order.size() * sizeof(int), cudaMemcpyHostToDevice));
    JHDNN_CHECK(jhdnnSetSparseMatrixRowOrder(layers_.back().desc, layers_.back().order));
  }
}

// upload_features, and (mask != nullptr) the images' piece mask: n rows of mask_ld words (image_mask_kernel); returns
// the mask's GPU milliseconds (0 without one).
double upload_features(const Csr& images, float* x, int64_t ld, cudaStream_t s, jhdnnSparseDnnFeatureLayout_t layout,
                       unsigned* mask, int64_t mask_ld) {
  const bool tiled = layout == JHDNN_SPARSE_DNN_FEATURES_TILED128;
  const bool image_major = layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR;
  if (!tiled && !image_major && layout != JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR)
    throw std::runtime_error("upload_features: unknown feature layout " + std::to_string(int(layout)));
  // exactly the stride jhdnnSparseDnnLayerForwardCompactMasked reads: a larger one would make it read other words
  if (mask != nullptr && mask_ld != (ld + 127) / 128)
    throw std::runtime_error("upload_features: mask_ld must be (ld + 127) / 128");
  if (mask != nullptr && image_major) throw std::runtime_error("upload_features: no piece mask in the image-major layout");
  if (tiled && ld % 128 != 0) throw std::runtime_error("upload_features: a tiled ld must be a multiple of 128");
  const int64_t stride = image_stride(images.cols);  // image-major: the floats per image
  size_t unused = 0;
  Owned owned;
  int64_t* ptr = dalloc<int64_t>(images.ptr.size(), &unused, &owned);
  int* idx = dalloc<int>(images.idx.size(), &unused, &owned);
  float* val = dalloc<float>(images.val.size(), &unused, &owned);
  CUDA_CHECK(cudaMemcpy(ptr, images.ptr.data(), images.ptr.size() * sizeof(int64_t), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(idx, images.idx.data(), images.idx.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(val, images.val.data(), images.val.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemsetAsync(x, 0, size_t(image_major ? stride : images.cols) * size_t(ld) * sizeof(float), s));
  scatter_images<<<unsigned(ld), 128, 0, s>>>(ptr, idx, val, images.rows, x, image_major ? stride : ld, layout,
                                              images.cols);
  CUDA_CHECK(cudaGetLastError());
  float mask_ms = 0.f;
  if (mask != nullptr) {
    struct Events {  // destroyed also when a check below throws
      cudaEvent_t e[2] = {nullptr, nullptr};
      ~Events() {
        for (cudaEvent_t x : e)
          if (x) cudaEventDestroy(x);
      }
    } ev;
    CUDA_CHECK(cudaEventCreate(&ev.e[0]));
    CUDA_CHECK(cudaEventCreate(&ev.e[1]));
    CUDA_CHECK(cudaEventRecord(ev.e[0], s));
    CUDA_CHECK(cudaMemsetAsync(mask, 0, size_t(images.cols) * size_t(mask_ld) * sizeof(unsigned), s));
    // one block per column of the features (ld >= the images), as scatter_images
    image_mask_kernel<<<unsigned(ld), 128, 0, s>>>(ptr, idx, val, images.rows, mask, mask_ld);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(ev.e[1], s));
    CUDA_CHECK(cudaEventSynchronize(ev.e[1]));
    CUDA_CHECK(cudaEventElapsedTime(&mask_ms, ev.e[0], ev.e[1]));
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  return mask_ms;
}

void bias_relu_clamp_flags(float* y, int64_t n_out, int64_t cols, int64_t ld, float bias, float clamp, int* flags,
                           cudaStream_t s) {
  if (cols == 0) return;
  if (flags) CUDA_CHECK(cudaMemsetAsync(flags, 0, size_t(cols) * sizeof(int), s));
  const dim3 grid{unsigned((cols + 255) / 256), unsigned(std::min<int64_t>(n_out, 1024)), 1u};
  brc_kernel<<<grid, 256, 0, s>>>(y, n_out, cols, ld, bias, clamp, flags);
  CUDA_CHECK(cudaGetLastError());
}

void gather_columns(const float* src, int64_t ld_src, float* dst, int64_t ld_dst, int64_t n_rows, const int* cols,
                    int64_t count, cudaStream_t s, const int* ids_in, int* ids_out) {
  if (count == 0) return;
  const dim3 grid{unsigned((count + 255) / 256), unsigned(std::min<int64_t>(n_rows, 1024)), 1u};
  gather_kernel<<<grid, 256, 0, s>>>(src, ld_src, dst, ld_dst, n_rows, cols, count, ids_in, ids_out);
  CUDA_CHECK(cudaGetLastError());
}

// One cub::DeviceSelect::Flagged pass (a single-pass scan with decoupled look-back) over the positions 0..cols-1: the
// flagged ones, in order, into rows_out, their number into *count_out (device). CUB ships with the CUDA toolkit.
size_t select_columns_workspace(int64_t max_cols) {
  size_t bytes = 0;
  const int* flags = nullptr;  // a size query: CUB reads no data, only the types and the item count
  int* out = nullptr;
  CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, thrust::counting_iterator<int>(0), flags, out, out,
                                        int(max_cols)));
  return std::max<size_t>(bytes, 1);
}

void select_columns(const int* flags, int64_t cols, int* rows_out, int* count_out, void* temp, size_t temp_bytes,
                    cudaStream_t s) {
  CUDA_CHECK(cub::DeviceSelect::Flagged(temp, temp_bytes, thrust::counting_iterator<int>(0), flags, rows_out,
                                        count_out, int(cols), s));
}

void fill_sparse_dense(float* a, int64_t rows, int64_t cols, double density, uint64_t seed, cudaStream_t s) {
  const uint32_t threshold = uint32_t(std::min(density, 1.0) * 4294967295.0);
  fill_kernel<<<4096, 256, 0, s>>>(a, rows * cols, threshold, seed);
  CUDA_CHECK(cudaGetLastError());
}

const char* path_name(Path p) {
  switch (p) {
    case Path::kSeparate: return "separate";
    case Path::kFused: return "fused";
    case Path::kGraph: return "graph";
    case Path::kPersistent: return "persistent";
    case Path::kResident: return "resident";
  }
  return "?";
}

int resident_auto_threshold() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return 8 * sms;
}

// The N = 4096 switch (session 16; kResident4096Default in spdnn_gpu.h). Exactly "0" or "1": any other
// value ("off", "false", " 1") is refused by name rather than read as on or off (a misspelt switch
// would otherwise silently choose the path of an A/B run).
bool resident_4096_on() {
  const char* v = std::getenv("JHDNN_SPDNN_RESIDENT_4096");
  if (v == nullptr || *v == '\0') return kResident4096Default;
  if (std::strcmp(v, "0") == 0) return false;
  if (std::strcmp(v, "1") == 0) return true;
  throw std::runtime_error("JHDNN_SPDNN_RESIDENT_4096 = '" + std::string(v).substr(0, 64) +
                           "' is not 0 or 1 (unset or empty: the built-in default)");
}

// n <= 1024: duo (8-image slices). 2048 < n <= 4096 with the switch on: at n = 4096 (measured) the library
// runs vals when its ring fits the call's layers (the challenge's: 3,200-byte chunks, 182,560 bytes of
// shared memory), else pair with 2-image slices (same results, slower than the graph path). The library
// tries vals only where a list-pack 4-image slice does not fit (2905 < n with 227 KB per block), so at
// 2048 < n <= 2905 this rule runs pair with 4-image slices, never measured; spdnn_infer takes only the
// challenge widths (1024, 4096, 16384, 65536), where that range does not arise.
// The switch is read (and a bad value refused) at every width, so a misspelt one is caught at once.
bool resident_auto_applies(int64_t n) {
  const bool on_4096 = resident_4096_on();
  return n <= 1024 || (n > 2048 && n <= 4096 && on_4096);
}
// (Elsewhere the graph path's late layers read the names' DRAM order, which the renaming was not measured on.)
Relabel auto_relabel(int64_t n, bool resident_path, bool tiled) {
  return resident_path && !tiled && resident_auto_applies(n) ? Relabel::kBanks : Relabel::kNone;
}
namespace {

// The count copies of kResident / kPersistent's fused head (InferenceRun::fused_head). The pinned counts, the
// events and the copy stream live until the end of the call (a failed call throws: they are freed then too). The
// count copies run on a non-blocking stream of their own, after an event of the layer, so that no copy sits between
// two layer kernels on the layers' stream: layer l + 1 starts when layer l ends, not when layer l's count has also
// crossed the bus (~10 us a layer at edfe84b: N = 1024 L = 120 -7%, bench/results/edfe84b/copies).
struct CountCopies {
  cudaStream_t stream = nullptr;
  cudaEvent_t done[2] = {nullptr, nullptr};    // layer l ended (on the layers' stream)
  cudaEvent_t copied[2] = {nullptr, nullptr};  // layer l's count is in hc[l] (on `stream`)
  ~CountCopies() {
    if (stream) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    for (cudaEvent_t e : {done[0], done[1], copied[0], copied[1]})
      if (e) cudaEventDestroy(e);
  }
};

// One run_inference call once its arguments are checked and its path settled: the buffers and the state that the
// pieces of the layer loop share, the handle's stream and the result (run_inference's, by reference). run_inference
// calls allocate, upload, start_count_copies (kResident / kPersistent only), start_clock, one path's loop and finish,
// in that order. A failed call throws; the destructor then destroys the loop's events, and the members free what
// they own in the reverse order of their declaration (cc, hc_owner, then o), the order in which the locals of the
// single function this replaces were freed.
struct InferenceRun {
  InferenceRun(jhdnnHandle_t h, const DeviceNetwork& net, int64_t rows, float bias, Path path, bool keep,
               int keep_layer, std::vector<float>* keep_out, std::vector<int>* keep_ids,
               jhdnnSparseDnnFeatureLayout_t layout, const DriverOptions& opt, InferenceResult& res);
  ~InferenceRun();
  InferenceRun(const InferenceRun&) = delete;
  InferenceRun& operator=(const InferenceRun&) = delete;

  // Setup, in this order: the device buffers (res.device_bytes), then the images and the first lists and counts
  // (res.peak_used_bytes), then (kResident / kPersistent) the count copies, then the loop's events.
  void allocate();
  void upload(const Csr& images);
  void start_count_copies();
  void start_clock();

  // The pieces of the layer loops.
  int64_t feature_at(int64_t i, int64_t c) const;
  void copy_out(int list, const int* dcount);
  void fused_layer(int l);
  void widen_list(int l);
  void fused_rest(int c0, const char* what);
  std::string head_only_note(const char* what, int threshold, int known) const;
  void tail_outcome(bool ran, Path tail, const char* what, int threshold, int known);
  void stop_clock(std::chrono::steady_clock::time_point t0);
  int fused_head(int threshold, int* known);
  void copy_count(int l);
  cudaGraph_t capture(cudaStream_t gs, const std::function<void()>& work);
  cudaGraph_t capture_layers(cudaStream_t gs, int last);
  void build_head_graph(int resident_below);

  // One function per path: the timed loop; each sets res.path_used (and what it measured) and final_list /
  // final_count.
  void separate_loop(int refresh);
  void resident_loop(int resident_below, int resident_slice, std::vector<ResidentTraceCall>* resident_trace);
  void persistent_loop(int persistent_below);
  void fused_or_graph_loop();
  bool graph_loop();
  void fused_loop();
  void all_layers();

  // The result's categories, active, read and loop_ms.
  void finish();

  // The call's arguments (path and keep as run_inference settled them).
  const jhdnnHandle_t h;
  const DeviceNetwork& net;
  const int64_t rows;
  const float bias;
  const Path path;
  const bool keep;
  const int keep_layer;
  std::vector<float>* const keep_out;
  std::vector<int>* const keep_ids;
  const jhdnnSparseDnnFeatureLayout_t layout;
  const DriverOptions& opt;
  InferenceResult& res;

  const int64_t n;
  const bool tiled;
  const bool image_major;  // JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR: resident calls from layer 1 (resident_loop)
  const bool tc_planes;    // the tensor-core tail past n = 4096: its calls on the library's planes kernels
  // The features' column capacity: the images, rounded up to whole blocks of 128 in the tiled layout.
  const int64_t ld;
  // The floats of a feature buffer: n x ld, or ld images of image_stride(n) floats in the image-major layout.
  const size_t buffer_floats;
  const int layers;
  const int r32;
  const int widen_layers, widen_keep_percent;

  cudaStream_t s = nullptr;  // the handle's stream (allocate)
  Owned o;                   // the buffers below (declared before hc_owner and cc: freed after them)
  float* x[2] = {nullptr, nullptr};
  // DriverOptions::input_mask (fused paths): the images' piece mask (x[0]'s), n rows of mask_ld words
  unsigned* pmask = nullptr;
  const int64_t mask_ld;
  const bool input_mask;
  int* act_rows[2] = {nullptr, nullptr};
  int* ids[2] = {nullptr, nullptr};
  // kSeparate: ping-pong counts, flags, the compaction workspace and a history of the counts.
  // Fused paths: counts[l] = active images after layer l (counts[0] = rows), one counter per layer so
  // that none has to be zeroed inside the loop, and the fused workspace (zeroed once).
  int* count[2] = {nullptr, nullptr};
  int *flags = nullptr, *hist = nullptr, *counts = nullptr, *eff = nullptr;
  void* ws = nullptr;
  size_t ws_size = 0;
  std::vector<const int*> in_count;  // fused_layer: the count that layer l read, in_count[l]

  // kResident / kPersistent: the pinned counts and their copies (start_count_copies, fused_head).
  int* hc = nullptr;
  std::unique_ptr<int, void (*)(int*)> hc_owner;  // (its deleter, cudaFreeHost, set by the constructor)
  CountCopies cc;  // declared after hc_owner: destroyed first, so no copy is in flight when hc is freed

  // The timed loop's ends: start_clock creates them, the destructor destroys them (also when a call throws; before
  // session 29 only a call that returned did).
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  // kResident: the head's first head_layers layers as one graph (DriverOptions::head_graph_layers; build_head_graph
  // before the clock, the destructor frees it); head_layers = 0 where none was built.
  cudaGraph_t head_graph = nullptr;
  cudaGraphExec_t head_exec = nullptr;
  int head_layers = 0;
  // kResident / kGraph with DriverOptions::tc_head_layers: the layers of the tensor-core calls, tc_first in the head's
  // and tc_layers in all (with tc_second_layers; prepare_tc_head before the clock; the destructor puts their
  // descriptors' math types back), and the graph of the calls (DriverOptions::tc_graph; null: launched by the host).
  int tc_first = 0, tc_layers = 0;
  std::vector<jhdnnMathType_t> tc_saved_math;
  // prepare_tc_tail past n = 4096: the device's default pool and its release threshold before the run
  cudaMemPool_t planes_pool = nullptr;
  uint64_t planes_pool_threshold = 0;
  int* tc_iota = nullptr;  // DriverOptions::tc_head_compact: 0, 1, 2, ..., the list layer tc_layers + 1 reads
  // prepare_tc_tail past n = 4096: 0, 1, 2, .. (tc_iota where there is one), the list of the resident calls after the
  // first, whose calls all write their survivors compacted (rowsOut NULL): the planes kernels' last layer then writes
  // y's rows in runs of columns, not at the survivors' list positions spread over the call's input (session 58: that
  // scatter took 580 us at N = 16384, its 32-byte sectors each written for 4 bytes).
  int* planes_iota = nullptr;
  cudaGraph_t tc_graph = nullptr;
  cudaGraphExec_t tc_exec = nullptr;
  void prepare_tc_head();
  void prepare_tc_tail();
  void tc_head_call();
  void tc_call(int first, int k, int in, const int* rows_in);
  // Set by the path's loop: the list and the count of the last layer's output.
  int final_list = 0;
  const int* final_count = nullptr;
};

InferenceRun::InferenceRun(jhdnnHandle_t h, const DeviceNetwork& net, int64_t rows, float bias, Path path, bool keep,
                           int keep_layer, std::vector<float>* keep_out, std::vector<int>* keep_ids,
                           jhdnnSparseDnnFeatureLayout_t layout, const DriverOptions& opt, InferenceResult& res)
    : h(h),
      net(net),
      rows(rows),
      bias(bias),
      path(path),
      keep(keep),
      keep_layer(keep_layer),
      keep_out(keep_out),
      keep_ids(keep_ids),
      layout(layout),
      opt(opt),
      res(res),
      n(net.width()),
      tiled(layout == JHDNN_SPARSE_DNN_FEATURES_TILED128),
      image_major(layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR),
      tc_planes(opt.tc_tail && n > kTcTailStreamMaxN),
      ld(tiled ? (rows + 127) / 128 * 128 : rows),
      buffer_floats(size_t(image_major ? image_stride(n) : n) * size_t(ld)),
      layers(net.layers()),
      r32(int(rows)),
      widen_layers(opt.widen_layers),
      widen_keep_percent(opt.widen_keep_percent),
      mask_ld((ld + 127) / 128),
      input_mask(path != Path::kSeparate && opt.input_mask),
      in_count(size_t(layers) + 1, nullptr),
      hc_owner(nullptr, [](int* p) { cudaFreeHost(p); }) {}

void InferenceRun::allocate() {
  JHDNN_CHECK(jhdnnGetStream(h, &s));
  size_t bytes = 0;
  x[0] = dalloc<float>(buffer_floats, &bytes, &o);
  x[1] = dalloc<float>(buffer_floats, &bytes, &o);
  if (input_mask) pmask = dalloc<unsigned>(size_t(n) * size_t(mask_ld), &bytes, &o);
  act_rows[0] = dalloc<int>(rows, &bytes, &o);
  act_rows[1] = dalloc<int>(rows, &bytes, &o);
  ids[0] = dalloc<int>(rows, &bytes, &o);
  ids[1] = dalloc<int>(rows, &bytes, &o);
  if (path == Path::kSeparate) {
    count[0] = dalloc<int>(1, &bytes, &o);
    count[1] = dalloc<int>(1, &bytes, &o);
    flags = dalloc<int>(rows, &bytes, &o);
    hist = dalloc<int>(layers, &bytes, &o);
    JHDNN_CHECK(jhdnnGetSparseDnnCompactWorkspaceSize(h, r32, &ws_size));
  } else {
    counts = dalloc<int>(size_t(layers) + 1, &bytes, &o);
    eff = dalloc<int>(size_t(layers) + 1, &bytes, &o);  // the counts that widened layers read (widen_layers)
    // kPersistent: the multi-layer workspace, whose prefix is the single-layer one (both zeroed once).
    if (path == Path::kPersistent)
      JHDNN_CHECK(jhdnnGetSparseDnnLayersForwardCompactWorkspaceSize(h, r32, &ws_size));
    else
      JHDNN_CHECK(jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(h, r32, &ws_size));
  }
  ws = dalloc<char>(ws_size, &bytes, &o);
  res.device_bytes = bytes;
}

void InferenceRun::upload(const Csr& images) {
  if (net.labels(0).empty()) {
    res.input_mask_ms = upload_features(images, x[0], ld, s, layout, pmask, mask_ld);
  } else {
    res.input_mask_ms =  // the pixels' new names
        upload_features(relabel_columns(images, net.labels(0)), x[0], ld, s, layout, pmask, mask_ld);
  }
  std::vector<int> iota(rows);
  std::iota(iota.begin(), iota.end(), 0);
  CUDA_CHECK(cudaMemcpy(act_rows[0], iota.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(ids[0], iota.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
  if (path == Path::kSeparate) {
    CUDA_CHECK(cudaMemcpy(count[0], &r32, sizeof(int), cudaMemcpyHostToDevice));
  } else {
    CUDA_CHECK(cudaMemset(counts, 0, (size_t(layers) + 1) * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(counts, &r32, sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(ws, 0, ws_size));
  }
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  res.peak_used_bytes = total_b - free_b;
}

void InferenceRun::start_count_copies() {
  CUDA_CHECK(cudaMallocHost(&hc, (size_t(layers) + 1) * sizeof(int)));
  hc_owner.reset(hc);
  CUDA_CHECK(cudaStreamCreateWithFlags(&cc.stream, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&cc.done[0], &cc.done[1], &cc.copied[0], &cc.copied[1]})
    CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
}

void InferenceRun::start_clock() {
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// Where feature (neuron i, column c) of a buffer is (jhdnn.h, jhdnnSparseDnnFeatureLayout_t).
int64_t InferenceRun::feature_at(int64_t i, int64_t c) const {
  if (image_major) return c * image_stride(n) + i;
  return tiled ? (c / 128) * n * 128 + i * 128 + c % 128 : i * ld + c;
}

// The dense output after a layer, columns = the list `list` (count at dcount), sorted by image.
void InferenceRun::copy_out(int list, const int* dcount) {
  int c = 0;
  CUDA_CHECK(cudaMemcpyAsync(&c, dcount, sizeof(int), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<float> all(buffer_floats);
  std::vector<int> pos(c), id(c), perm(c);
  CUDA_CHECK(cudaMemcpy(all.data(), x[list], all.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(pos.data(), act_rows[list], c * sizeof(int), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(id.data(), ids[list], c * sizeof(int), cudaMemcpyDeviceToHost));
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int a, int b) { return id[a] < id[b]; });
  keep_ids->resize(c);
  keep_out->assign(size_t(n) * c, 0.f);
  const std::vector<int>& names = net.labels(keep_layer);  // neuron i of the original network is names[i]
  for (int t = 0; t < c; ++t) {
    (*keep_ids)[t] = id[perm[t]];
    for (int64_t i = 0; i < n; ++i)
      (*keep_out)[i * c + t] = all[size_t(feature_at(names.empty() ? i : names[size_t(i)], pos[perm[t]]))];
  }
}

// Fused layer l (1-based): list (l-1)&1 -> list l&1, counts[l-1] -> counts[l]. Layers 2 .. 1 + widen_layers
// first run the widening check (widen_list_kernel) on layer l - 1's list and read their count from eff[l - 1]:
// layer l - 1 read in_count[l - 1] positions (counts[0], or eff[l - 2] if it was checked too). A few layers only:
// the check is a launch (in the graph path, one per layer of the whole network otherwise), and only the crowded
// first layers keep most of their columns.
void InferenceRun::fused_layer(int l) {
  const int cur = (l - 1) & 1, nx = l & 1;
  const int* const rows_in = l == tc_layers + 1 && tc_iota != nullptr ? tc_iota : act_rows[cur];
  in_count[size_t(l)] = counts + (l - 1);
  // (not after the tensor-core head's call, nor for the layer after it: that call writes only its survivors'
  // columns, and the check would read its list through in_count[l - 1], which no fused launch set)
  if (l >= 2 && l <= 1 + widen_layers && l > tc_layers + 1) widen_list(l);
  const auto t0 = std::chrono::steady_clock::now();
  // layer 1 reads the images' piece mask (DriverOptions::input_mask)
  const jhdnnStatus_t st =
      l == 1 && input_mask
          ? jhdnnSparseDnnLayerForwardCompactMasked(h, net.layer(l).desc, bias, 32.f, r32, in_count[size_t(l)],
                                                    rows_in, ids[cur], layout, x[cur], ld, pmask, x[nx], ld,
                                                    act_rows[nx], ids[nx], counts + l, ws, ws_size)
          : jhdnnSparseDnnLayerForwardCompactEx(h, net.layer(l).desc, bias, 32.f, r32, in_count[size_t(l)],
                                                rows_in, ids[cur], layout, x[cur], ld, x[nx], ld, act_rows[nx],
                                                ids[nx], counts + l, ws, ws_size);
  res.api_host_ms += host_ms_since(t0);
  JHDNN_CHECK(st);
}

// The widening check before fused layer l (fused_layer, 2 <= l <= 1 + widen_layers): widen_list_kernel on layer
// l - 1's list; layer l then reads its count from eff[l - 1] (in_count[l]).
void InferenceRun::widen_list(int l) {
  const int cur = (l - 1) & 1, prev = l & 1;  // (layer l - 1 read list `prev` and wrote list `cur`)
  cudaStream_t ls = nullptr;                  // the handle's stream now (the graph path captures on its own)
  JHDNN_CHECK(jhdnnGetStream(h, &ls));
  widen_list_kernel<<<unsigned(std::min<int64_t>((rows + 255) / 256, 264)), 256, 0, ls>>>(
      in_count[size_t(l - 1)], counts + (l - 1), eff + (l - 1), act_rows[cur], ids[cur], ids[prev], widen_keep_percent);
  CUDA_CHECK(cudaGetLastError());
  in_count[size_t(l)] = eff + (l - 1);
}

// After a multi-layer launch (`what`) was refused before any ran: the note, then layers c0 + 1 ..
// layers as fused launches.
void InferenceRun::fused_rest(int c0, const char* what) {
  char msg[256];
  jhdnnGetLastErrorString(msg, sizeof(msg));
  res.note = std::string(what) + " launch not supported (" + msg + "); ran the fused path instead";
  for (int l = c0 + 1; l <= layers; ++l) fused_layer(l);
}

// The timed loop's end (on the handle's stream): e1 recorded and waited for, res.host_ms since t0.
void InferenceRun::stop_clock(std::chrono::steady_clock::time_point t0) {
  CUDA_CHECK(cudaEventRecord(e1, s));
  CUDA_CHECK(cudaEventSynchronize(e1));
  res.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// kResident / kPersistent after their calls: path_used is `tail` if a `what` call ran, else kFused: the launch was
// refused (fused_rest's note), or the fused head ran every layer (head_only_note says why).
void InferenceRun::tail_outcome(bool ran, Path tail, const char* what, int threshold, int known) {
  res.path_used = ran ? tail : Path::kFused;
  if (!ran && res.note.empty()) res.note = head_only_note(what, threshold, known);
}

// kResident / kPersistent when the fused head ran every layer, so that no `what` call ran: the note says why.
std::string InferenceRun::head_only_note(const char* what, int threshold, int known) const {
  // (known: the last count read back, one layer behind: after layer `layers` - 1, or the images if there is one layer)
  const std::string seen =
      std::to_string(known) + (layers > 1 ? " after layer " + std::to_string(layers - 1) : " images");
  const std::string why = keep && keep_layer == layers
                              ? "the kept layer is the last"
                              : "the survivors (" + seen + ") stayed above the threshold " + std::to_string(threshold);
  return std::string("no ") + what + " call ran: " + why + "; ran the fused path";
}

// kResident / kPersistent: fused launches from layer 1 while the survivor count, read back one
// layer behind (layer l is queued before the host waits for layer l - 1), is above `threshold`, or
// up to keep_layer when that layer's output is kept. Returns the first layer not run; *known gets
// the last count seen. The counts come back through cc and hc (CountCopies says how).
int InferenceRun::fused_head(int threshold, int* known) {
  int first = 1;
  bool undecided = false;  // the layer after the head graph runs without a count (DriverOptions::head_graph_layers)
  if (tc_layers > 0) {  // layers 1 .. tc_layers in one or two tensor-core resident calls, the last count copied after
    if (tc_exec != nullptr) {
      const auto tl = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaGraphLaunch(tc_exec, s));
      res.api_host_ms += host_ms_since(tl);
    } else {
      tc_head_call();
    }
    copy_count(tc_layers);
    first = tc_layers + 1;
    undecided = true;
  } else if (head_layers > 0) {  // layers 1 .. head_layers in one launch, the last one's count copied after it
    const auto tl = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaGraphLaunch(head_exec, s));
    res.api_host_ms += host_ms_since(tl);
    copy_count(head_layers);
    first = head_layers + 1;
    undecided = true;
  }
  while (first <= layers && (undecided || (keep && first <= keep_layer) || *known > threshold)) {
    undecided = false;
    const int l = first++;
    fused_layer(l);
    copy_count(l);
    if (l == keep_layer && keep) copy_out(l & 1, counts + l);
    if (l >= 2) {  // layer l is queued: wait for layer l - 1 only
      CUDA_CHECK(cudaEventSynchronize(cc.copied[(l - 1) & 1]));
      *known = hc[l - 1];
    }
  }
  return first;
}

// fused_head: layer l's count into hc[l] on the copy stream, after layer l's event (cc.copied[l & 1] then says it
// is there).
void InferenceRun::copy_count(int l) {
  CUDA_CHECK(cudaEventRecord(cc.done[l & 1], s));
  CUDA_CHECK(cudaStreamWaitEvent(cc.stream, cc.done[l & 1], 0));
  CUDA_CHECK(cudaMemcpyAsync(hc + l, counts + l, sizeof(int), cudaMemcpyDeviceToHost, cc.stream));
  CUDA_CHECK(cudaEventRecord(cc.copied[l & 1], cc.stream));
}

// work()'s jhDNN calls captured on gs (the handle set on it; the caller sets it back), the graph returned. Relaxed:
// the API's argument checks (cudaPointerGetAttributes, occupancy queries) are not stream work and may run while
// capturing. A failed launch ends the capture (its partial graph freed) and throws.
cudaGraph_t InferenceRun::capture(cudaStream_t gs, const std::function<void()>& work) {
  JHDNN_CHECK(jhdnnSetStream(h, gs));
  CUDA_CHECK(cudaStreamBeginCapture(gs, cudaStreamCaptureModeRelaxed));
  try {
    work();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(gs, &partial);
    if (partial) cudaGraphDestroy(partial);
    throw;
  }
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(gs, &graph));
  return graph;
}

// Layers 1 .. last as fused launches captured on gs (capture).
cudaGraph_t InferenceRun::capture_layers(cudaStream_t gs, int last) {
  return capture(gs, [&] {
    for (int l = 1; l <= last; ++l) fused_layer(l);
  });
}

// The tensor-core calls: the head's, list 0 (the images) -> list 1 after layer tc_first, counts[1 .. tc_first]; then
// the second's (DriverOptions::tc_second_layers), list 1 -> list 0 after layer tc_layers, reading the head's output
// list (tc_iota where compacted). With tc_iota each call's survivors compacted (rowsOut NULL: survivor t in column t).
void InferenceRun::tc_head_call() {
  tc_call(1, tc_first, 0, act_rows[0]);
  if (tc_layers > tc_first) tc_call(tc_first + 1, tc_layers - tc_first, 1, tc_iota != nullptr ? tc_iota : act_rows[1]);
}

// Layers first .. first + k - 1 as one tensor-core resident call from list `in` (its rows rows_in) to the other.
void InferenceRun::tc_call(int first, int k, int in, const int* rows_in) {
  std::vector<jhdnnSparseMatrixDescriptor_t> descs;
  for (int l = first; l < first + k; ++l) descs.push_back(net.layer(l).desc);
  const int out = 1 - in;
  const auto tl = std::chrono::steady_clock::now();
  const jhdnnStatus_t st = jhdnnSparseDnnLayersForwardResidentEx(
      h, k, descs.data(), bias, 32.f, r32, counts + (first - 1), rows_in, ids[in],
      JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x[in], ld, x[out], ld, tc_iota != nullptr ? nullptr : act_rows[out],
      ids[out], 0, nullptr, 0);
  res.api_host_ms += host_ms_since(tl);
  JHDNN_CHECK(st);  // (throws with the message: prepare_tc_head's run went through the same checks)
}

// kResident / kGraph, before the clock (DriverOptions::tc_head_layers): the head's descriptors set to tensor-op math
// and the call run once, so that it builds its tables (a synchronize each) outside the timed loop; the counts it
// wrote are zeroed again (counts[0], the images, stays; a second call also overwrites the images, list 0: the caller
// uploads them again). A call the library refuses throws with its message.
void InferenceRun::prepare_tc_head() {
  const int k = opt.tc_head_layers, k2 = opt.tc_second_layers;
  if (k % 2 == 0 || k >= layers)
    throw std::runtime_error("tc_head_layers (" + std::to_string(k) + ") must be odd and less than the layers (" +
                             std::to_string(layers) + ")");
  if (k2 < 0 || (k2 > 0 && (k2 % 2 == 0 || k + k2 >= layers)))
    throw std::runtime_error("tc_second_layers (" + std::to_string(k2) + ") must be 0, or odd with tc_head_layers + "
                             "tc_second_layers less than the layers (" + std::to_string(layers) + ")");
  if (keep || image_major || tiled) throw std::runtime_error("the tensor-core head runs neuron-major, no kept layer");
  for (int l = 1; l <= k + k2; ++l) {
    jhdnnMathType_t m = JHDNN_DEFAULT_MATH;
    JHDNN_CHECK(jhdnnGetSparseMatrixMathType(net.layer(l).desc, &m));
    tc_saved_math.push_back(m);
    JHDNN_CHECK(jhdnnSetSparseMatrixMathType(
        net.layer(l).desc, opt.tc_head_convert ? JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : JHDNN_TENSOR_OP_MATH));
  }
  tc_first = k;
  tc_layers = k + k2;
  if (opt.tc_head_compact) {
    size_t bytes = 0;
    tc_iota = dalloc<int>(rows, &bytes, &o);
    res.device_bytes += bytes;
    std::vector<int> iota(rows);
    std::iota(iota.begin(), iota.end(), 0);
    CUDA_CHECK(cudaMemcpy(tc_iota, iota.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
  }
  tc_head_call();
  CUDA_CHECK(cudaMemsetAsync(counts + 1, 0, size_t(layers) * sizeof(int), s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  if (opt.tc_graph && path == Path::kResident) {  // (the tables are built now, so the calls may be captured; the
                                                   // destructor frees the graph. The graph path captures them anyway)
    cudaStream_t gs = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
    struct Restore {  // the handle back on the run's stream and gs destroyed, also where a step throws
      InferenceRun& run;
      cudaStream_t gs;
      ~Restore() {
        jhdnnSetStream(run.h, run.s);
        cudaStreamDestroy(gs);
      }
    } restore{*this, gs};
    tc_graph = capture(gs, [&] { tc_head_call(); });
    CUDA_CHECK(cudaGraphInstantiate(&tc_exec, tc_graph, 0));
    CUDA_CHECK(cudaGraphUpload(tc_exec, gs));
    CUDA_CHECK(cudaStreamSynchronize(gs));
  }
  res.api_host_ms = 0;
  res.tc_head_layers = k;
  res.tc_second_layers = k2;
  res.tc_graph = tc_exec != nullptr;
}

// kResident, before the clock (DriverOptions::tc_tail): every layer after the head's calls (all of them without a
// head) set to TENSOR_OP_MATH_ALLOW_CONVERSION for the run (the destructor puts them back), and their tables built by
// one call a chunk with a zero count, so that the resident calls in the loop find them (nothing runs on the device).
void InferenceRun::prepare_tc_tail() {
  if (keep || image_major || tiled) throw std::runtime_error("the tensor-core tail runs neuron-major, no kept layer");
  for (int l = int(tc_saved_math.size()) + 1; l <= layers; ++l) {
    jhdnnMathType_t m = JHDNN_DEFAULT_MATH;
    JHDNN_CHECK(jhdnnGetSparseMatrixMathType(net.layer(l).desc, &m));
    tc_saved_math.push_back(m);
    JHDNN_CHECK(jhdnnSetSparseMatrixMathType(net.layer(l).desc, JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION));
  }
  if (tc_planes) {
    // The planes kernels' calls take their planes from the device's current memory pool (stream-ordered): this
    // application keeps what the pool holds across synchronizations for the run, so that the untimed calls below
    // map it once (the largest bound) and the timed ones reuse it; the destructor puts the threshold back and trims.
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&planes_pool, device));
    CUDA_CHECK(cudaMemPoolGetAttribute(planes_pool, cudaMemPoolAttrReleaseThreshold, &planes_pool_threshold));
    uint64_t keep_all = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(planes_pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  }
  size_t bytes = 0;
  if (tc_planes) {
    planes_iota = tc_iota;
    if (planes_iota == nullptr) {
      planes_iota = dalloc<int>(rows, &bytes, &o);
      res.device_bytes += bytes;
      std::vector<int> iota(rows);
      std::iota(iota.begin(), iota.end(), 0);
      CUDA_CHECK(cudaMemcpy(planes_iota, iota.data(), rows * sizeof(int), cudaMemcpyHostToDevice));
    }
  }
  int* const zero = dalloc<int>(size_t(layers) + 1, &bytes, &o);
  res.device_bytes += bytes;
  CUDA_CHECK(cudaMemset(zero, 0, (size_t(layers) + 1) * sizeof(int)));
  std::vector<jhdnnSparseMatrixDescriptor_t> descs;
  for (int l = 1; l <= layers; ++l) descs.push_back(net.layer(l).desc);
  for (int c0 = tc_layers; c0 < layers;) {
    const int k = std::min(layers - c0, JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS);
    JHDNN_CHECK(jhdnnSparseDnnLayersForwardResidentEx(h, k, descs.data() + c0, bias, 32.f, r32, zero, act_rows[0],
                                                      ids[0], JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x[0], ld, x[1],
                                                      ld, act_rows[1], ids[1], 0, nullptr, 0));
    c0 += k;
  }
  CUDA_CHECK(cudaStreamSynchronize(s));
  res.api_host_ms = 0;
  res.tc_tail = true;
}

// kResident, before the clock: layers 1 .. head_layers (DriverOptions::head_graph_layers, at most L - 1; none when
// a layer's output is kept, and by default none where the caller set resident_below) captured on a private stream,
// as graph_loop captures the whole network, then instantiated and uploaded (res.build_ms). A graph that could not be
// built leaves head_layers 0 (every layer launched by the host, as before) and says why in res.note.
void InferenceRun::build_head_graph(int resident_below) {
  if (opt.tc_head_layers > 0) return;  // (the tensor-core call runs the head instead: prepare_tc_head)
  // (auto: none where the caller set the resident threshold, so that the switch stays where it asked, and none for
  // the tensor-core tail past n = 4096, whose planes calls run the crowded first layers faster than the fused ones:
  // N = 16384 L = 120 14.43 ms from layer 1 against 16.61 after a head graph, N = 65536 55.68 against 68.47, session
  // 59's spdnn_infer runs, bench/results/d24bb3d3/)
  int k = opt.head_graph_layers >= 0 ? opt.head_graph_layers
          : resident_below >= 0 || tc_planes ? 0
                                             : 1 + widen_layers;
  k = std::min(k, layers - 1);
  if (k <= 0 || keep || image_major) return;  // (image-major: no fused layer reads that layout)
  cudaStream_t gs = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  const auto tb = std::chrono::steady_clock::now();
  const double api_before = res.api_host_ms;
  try {
    head_graph = capture_layers(gs, k);
    CUDA_CHECK(cudaGraphInstantiate(&head_exec, head_graph, 0));
    CUDA_CHECK(cudaGraphUpload(head_exec, gs));
    CUDA_CHECK(cudaStreamSynchronize(gs));
    head_layers = k;
    res.head_graph_layers = k;
  } catch (const std::exception& e) {
    res.note = std::string("the head's graph was not built (") + e.what() + "); its layers ran as launches";
    cudaGetLastError();
  } catch (...) {
    res.note = "the head's graph was not built (an exception not derived from std::exception); its layers ran as "
               "launches";
    cudaGetLastError();
  }
  res.api_host_ms = api_before;  // (the capture's calls are not in the timed loop)
  res.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tb).count();
  jhdnnSetStream(h, s);
  cudaStreamDestroy(gs);
}

// kSeparate: layer forward + compaction per layer, the bound refreshed from the count per `refresh`.
void InferenceRun::separate_loop(int refresh) {
  int cur = 0, bound = r32;
  const auto t0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, s));
  for (int l = 1; l <= layers; ++l) {
    const int nx = 1 - cur;
    JHDNN_CHECK(jhdnnSparseDnnLayerForward(h, net.layer(l).desc, bias, 32.f, bound, count[cur], act_rows[cur],
                                           x[cur], rows, x[nx], rows, flags));
    JHDNN_CHECK(jhdnnSparseDnnCompact(h, bound, flags, ids[cur], act_rows[nx], ids[nx], count[nx], ws, ws_size));
    CUDA_CHECK(cudaMemcpyAsync(hist + (l - 1), count[nx], sizeof(int), cudaMemcpyDeviceToDevice, s));
    cur = nx;
    if (l == keep_layer && keep) copy_out(cur, count[cur]);
    const bool refresh_now = refresh > 0 ? l % refresh == 0 : refresh < 0 && (l <= 16 || (l & (l - 1)) == 0);
    if (refresh_now) {
      CUDA_CHECK(cudaMemcpyAsync(&bound, count[cur], sizeof(int), cudaMemcpyDeviceToHost, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
    }
  }
  stop_clock(t0);
  final_list = cur;
  final_count = count[cur];
  res.path_used = Path::kSeparate;
}

// kResident: the fused head, then the resident calls (and the optional trace).
void InferenceRun::resident_loop(int resident_below, int resident_slice,
                                 std::vector<ResidentTraceCall>* resident_trace) {
  // Fused launches while the count is above the threshold, or up to keep_layer (fused_head); then
  // resident calls (DriverOptions' first chunk, then x4 up to the max chunk: resident_call_layers), each one resident launch, with
  // maxActive = the last count seen
  // (counts never grow, so it bounds every later count).
  // The image-major layout has no fused head (no layer call reads it): resident calls from layer 1, the first with
  // maxActive = the images, each later one with the survivors of the call before, read back at the call boundary (a
  // host wait there: a bound of 60000 images for every call would make each call's CTAs, and vals4w's parks, those
  // of all the images); where a layer's output is kept, a call ends at that layer and the output is copied after it.
  std::vector<jhdnnSparseMatrixDescriptor_t> descs;
  for (int l = 1; l <= layers; ++l) descs.push_back(net.layer(l).desc);
  // (the tensor-core tail past n = 4096: its calls from the first layer the head's decision allows, as the planes
  // kernels' late layer at N = 16384 takes 29-32 us against the fused one's ~60, sessions 58-59)
  const int threshold = resident_below >= 0 ? resident_below : tc_planes ? int(rows) : resident_auto_threshold();
  const auto t0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, s));
  int known = r32;
  const int first = image_major ? 1 : fused_head(threshold, &known);
  // Layer `first` reads set (first - 1) & 1; each call writes the other set (list and features).
  int set = (first - 1) & 1;
  bool ran = false;
  // The optional trace: one zeroed buffer with room for every call (maxActive x RECORDS records
  // each). Allocated here, inside the timed region (the caller takes a separate run for the trace).
  using TraceRecord = jhdnnSparseDnnResidentTraceRecord_t;
  int max_active = std::max(known, 0);
  // The calls' layers (DriverOptions, resident_call_layers): resident_first_chunk for the first, then each call
  // kResidentCallGrowth times the one before, up to resident_max_chunk; the last takes what is left.
  const int most = opt.resident_max_chunk > 0 ? opt.resident_max_chunk : JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS;
  const int split = image_major && keep ? keep_layer : 0;  // the calls of layers 1 .. split, then the rest
  std::vector<int> chunks = resident_call_layers(split, opt.resident_first_chunk, most);
  for (int c : resident_call_layers(layers - (first - 1) - split, opt.resident_first_chunk, most)) chunks.push_back(c);
  const int calls = int(chunks.size());
  const size_t trace_per_call = size_t(max_active) * JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS;
  TraceRecord* trace = nullptr;
  std::unique_ptr<void, CudaFree> trace_owner;
  if (resident_trace && calls > 0 && max_active > 0) {
    CUDA_CHECK(cudaMalloc(&trace, size_t(calls) * trace_per_call * sizeof(TraceRecord)));
    trace_owner.reset(trace);
    CUDA_CHECK(cudaMemsetAsync(trace, 0, size_t(calls) * trace_per_call * sizeof(TraceRecord), s));
  }
  std::vector<int> trace_first;  // per traced call: its first layer (0-based), layer count and maxActive
  std::vector<int> trace_layers;
  std::vector<int> trace_max;
  for (int c0 = first - 1, call = 0; c0 < layers; ++call) {
    const int chunk = chunks[size_t(call)];
    const int out = 1 - set;
    TraceRecord* call_trace = trace ? trace + trace_first.size() * trace_per_call : nullptr;
    const auto tc = std::chrono::steady_clock::now();
    const int* const rows_in = planes_iota != nullptr && ran ? planes_iota : act_rows[set];
    int* const rows_out = planes_iota != nullptr ? nullptr : act_rows[out];
    const jhdnnStatus_t st = jhdnnSparseDnnLayersForwardResidentEx(
        h, chunk, descs.data() + c0, bias, 32.f, max_active, counts + c0, rows_in, ids[set], layout, x[set], rows,
        x[out], rows, rows_out, ids[out], resident_slice, call_trace, trace_per_call * sizeof(TraceRecord));
    const double call_ms = host_ms_since(tc);
    res.api_host_ms += call_ms;
    if (!ran) res.first_tail_host_ms = call_ms;
    if (st == JHDNN_STATUS_SUCCESS && call_trace) {
      trace_first.push_back(c0);
      trace_layers.push_back(chunk);
      trace_max.push_back(max_active);
    }
    if (st == JHDNN_STATUS_SUCCESS) {
      if (!ran) res.tail_first = c0 + 1;
      ran = true;
      ++res.resident_calls;
      set = out;
      c0 += chunk;
      if (image_major && keep && c0 == keep_layer) copy_out(set, counts + c0);
      if (image_major && c0 < layers) {
        CUDA_CHECK(cudaMemcpyAsync(&max_active, counts + c0, sizeof(int), cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
      }
    } else if (image_major) {  // no fused path to fall back to: nothing reads this layout but the resident call
      char msg[256];
      jhdnnGetLastErrorString(msg, sizeof(msg));
      throw std::runtime_error(std::string("the image-major layout runs on resident calls only, and the call of layers ") +
                               std::to_string(c0 + 1) + ".." + std::to_string(c0 + chunk) + " failed: " + msg);
    } else if ((st == JHDNN_STATUS_NOT_SUPPORTED_SHAPE || st == JHDNN_STATUS_NOT_SUPPORTED) && !ran) {
      fused_rest(c0, "resident");
      set = layers & 1;
      break;
    } else {
      JHDNN_CHECK(st);  // throws with the message
    }
  }
  stop_clock(t0);
  tail_outcome(ran, Path::kResident, "resident", threshold, known);
  if (resident_trace) {
    resident_trace->clear();
    for (size_t c = 0; c < trace_first.size(); ++c) {
      ResidentTraceCall call;
      call.first_layer = trace_first[c] + 1;
      call.layers = trace_layers[c];
      call.max_active = trace_max[c];
      call.records.resize(trace_per_call);
      CUDA_CHECK(cudaMemcpy(call.records.data(), trace + c * trace_per_call, trace_per_call * sizeof(TraceRecord),
                            cudaMemcpyDeviceToHost));
      resident_trace->push_back(std::move(call));
    }
  }
  final_list = set;
  final_count = counts + layers;
}

// kPersistent: the fused head, then the multi-layer calls.
void InferenceRun::persistent_loop(int persistent_below) {
  // Per-layer fused launches while the count is above persistent_below (none when it is < 0), or
  // up to keep_layer (fused_head); then one cooperative launch for the rest.
  std::vector<jhdnnSparseMatrixDescriptor_t> descs;
  for (int l = 1; l <= layers; ++l) descs.push_back(net.layer(l).desc);
  const auto t0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, s));
  int known = r32;  // the latest count the host has seen
  const int first = fused_head(persistent_below >= 0 ? persistent_below : INT32_MAX, &known);  // of the launch
  // The rest in calls of 8, then 96 layers: the API checks a call's descriptors before its launch,
  // so the first call is short (its checks are the only host time the GPU waits for) and each later
  // call is checked while the previous one runs. Chunk boundaries add a launch each (96 layers =
  // one launch of the kernel anyway: the layer table is a kernel parameter of 96 entries).
  bool tail_ran = false;
  for (int c0 = first - 1; c0 < layers;) {  // layer c0 + 1 reads list c0 & 1
    const int chunk = std::min(layers - c0, c0 == first - 1 ? 8 : 96);
    const auto tc = std::chrono::steady_clock::now();
    const jhdnnStatus_t st = jhdnnSparseDnnLayersForwardCompact(
        h, chunk, descs.data() + c0, bias, 32.f, r32, counts + c0, act_rows[c0 & 1], ids[c0 & 1], x[c0 & 1],
        act_rows[1 - (c0 & 1)], ids[1 - (c0 & 1)], x[1 - (c0 & 1)], rows, ws, ws_size);
    const double call_ms = host_ms_since(tc);
    res.api_host_ms += call_ms;
    if (!tail_ran) res.first_tail_host_ms = call_ms;
    if (st == JHDNN_STATUS_SUCCESS) {
      tail_ran = true;
      res.tail_first = first;
      c0 += chunk;
    } else if (st == JHDNN_STATUS_NOT_SUPPORTED && !tail_ran) {
      // (the multi-layer call refuses with NOT_SUPPORTED alone: no cooperative launch, or its kernel does not fit
      // on an SM; the resident call also with NOT_SUPPORTED_SHAPE, for a slice or a layer width it cannot take)
      fused_rest(c0, "multi-layer");
      break;
    } else {
      JHDNN_CHECK(st);  // throws with the message
    }
  }
  stop_clock(t0);
  tail_outcome(tail_ran, Path::kPersistent, "multi-layer", persistent_below, known);
  final_list = layers & 1;
  final_count = counts + layers;
}

// kGraph (graph_loop; fused_loop where the graph did not run) and kFused (fused_loop).
void InferenceRun::fused_or_graph_loop() {
  bool graph_ran = false;
  if (path == Path::kGraph) graph_ran = graph_loop();
  if (!graph_ran) fused_loop();  // kFused (or the graph's fallback)
  res.path_used = graph_ran ? Path::kGraph : Path::kFused;
  final_list = layers & 1;
  final_count = counts + layers;
}

// kGraph: capture the L launches once on a private stream (the handle's may be the legacy
// default stream, which cannot be captured), instantiate, launch. If the capture or the
// instantiation fails (nothing has run then), say why in res.note and run the fused loop
// instead: res.path_used tells which ran (the tests check it). Returns whether the graph ran.
bool InferenceRun::graph_loop() {
  bool graph_ran = false;
  cudaStream_t gs = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  // On every way out (a return, or any exception, std:: or not): the handle back on its stream, the graph freed.
  struct Cleanup {
    InferenceRun& run;
    cudaStream_t& gs;
    cudaGraph_t& graph;
    cudaGraphExec_t& exec;
    ~Cleanup() {
      jhdnnSetStream(run.h, run.s);
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
      cudaStreamDestroy(gs);
    }
  } cleanup{*this, gs, graph, exec};
  const auto tb = std::chrono::steady_clock::now();
  bool built = false;
  try {
    graph = capture(gs, [&] { all_layers(); });
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    built = true;
  } catch (const std::exception& e) {
    res.note = std::string("CUDA graph capture failed (") + e.what() + "); ran the fused path instead";
    cudaGetLastError();
  } catch (...) {
    res.note = "CUDA graph capture failed (an exception not derived from std::exception); ran the fused path instead";
    cudaGetLastError();
  }
  if (built) {
    res.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tb).count();
    CUDA_CHECK(cudaGraphUpload(exec, gs));
    CUDA_CHECK(cudaStreamSynchronize(gs));
    const auto t0 = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaEventRecord(e0, gs));
    const auto tl = std::chrono::steady_clock::now();
    CUDA_CHECK(cudaGraphLaunch(exec, gs));
    res.api_host_ms = host_ms_since(tl);  // the launch alone (the capture's calls are not in the timed loop)
    CUDA_CHECK(cudaEventRecord(e1, gs));
    CUDA_CHECK(cudaEventSynchronize(e1));
    res.host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    graph_ran = true;
  }
  return graph_ran;
}

// kFused, and kGraph's fallback.
void InferenceRun::fused_loop() {
  res.api_host_ms = 0;  // (a failed capture's calls are not in the timed loop)
  const auto t0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, s));
  all_layers();
  stop_clock(t0);
}

// kGraph / kFused: layers 1 .. L as launches, the tensor-core calls first where prepare_tc_head ran (tc_layers), then
// fused layers (a kept layer's output copied after it: kFused only).
void InferenceRun::all_layers() {
  if (tc_layers > 0) tc_head_call();
  for (int l = tc_layers + 1; l <= layers; ++l) {
    fused_layer(l);
    if (l == keep_layer && keep) copy_out(l & 1, counts + l);
  }
}

void InferenceRun::finish() {
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  res.loop_ms = ms;

  int c = 0;
  CUDA_CHECK(cudaMemcpy(&c, final_count, sizeof(int), cudaMemcpyDeviceToHost));
  res.categories.resize(c);
  if (c > 0) CUDA_CHECK(cudaMemcpy(res.categories.data(), ids[final_list], c * sizeof(int), cudaMemcpyDeviceToHost));
  std::sort(res.categories.begin(), res.categories.end());
  res.active.resize(layers);
  CUDA_CHECK(cudaMemcpy(res.active.data(), path == Path::kSeparate ? hist : counts + 1, layers * sizeof(int),
                        cudaMemcpyDeviceToHost));
  if (path != Path::kSeparate) {  // what each layer read: eff[l - 1] where the widening check ran, else counts[l - 1]
    std::vector<int> eff_h(size_t(layers) + 1);
    CUDA_CHECK(cudaMemcpy(eff_h.data(), eff, eff_h.size() * sizeof(int), cudaMemcpyDeviceToHost));
    res.read.resize(size_t(layers));
    for (int l = 1; l <= layers; ++l)
      res.read[size_t(l - 1)] = in_count[size_t(l)] == eff + (l - 1) ? eff_h[size_t(l - 1)]
                                                                     : (l == 1 ? r32 : res.active[size_t(l - 2)]);
  }

}

InferenceRun::~InferenceRun() {
  for (size_t l = 0; l < tc_saved_math.size(); ++l)
    jhdnnSetSparseMatrixMathType(net.layer(int(l) + 1).desc, tc_saved_math[l]);
  if (planes_pool != nullptr) {
    cudaDeviceSynchronize();  // (the planes' frees done before the pool lets go of them)
    cudaMemPoolSetAttribute(planes_pool, cudaMemPoolAttrReleaseThreshold, &planes_pool_threshold);
    cudaMemPoolTrimTo(planes_pool, 0);
  }
  if (head_exec) cudaGraphExecDestroy(head_exec);
  if (head_graph) cudaGraphDestroy(head_graph);
  if (tc_exec) cudaGraphExecDestroy(tc_exec);
  if (tc_graph) cudaGraphDestroy(tc_graph);
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
}

}  // namespace

InferenceResult run_inference(jhdnnHandle_t h, const DeviceNetwork& net, const Csr& images, int64_t rows, float bias,
                              int refresh, int keep_layer, std::vector<float>* keep_out, std::vector<int>* keep_ids,
                              Path path, int persistent_below, int resident_below, int resident_slice,
                              std::vector<ResidentTraceCall>* resident_trace, jhdnnSparseDnnFeatureLayout_t layout,
                              const DriverOptions& opt) {
  InferenceResult res;
  const int64_t n = net.width();
  const bool tiled = layout == JHDNN_SPARSE_DNN_FEATURES_TILED128;
  if (rows <= 0 || rows > INT32_MAX || images.rows <= 0) throw std::runtime_error("bad image count");
  const int widen_layers = opt.widen_layers, widen_keep_percent = opt.widen_keep_percent;
  if (widen_layers < 0) throw std::runtime_error("widen_layers must be >= 0");
  if (widen_keep_percent < 1 || widen_keep_percent > 100) throw std::runtime_error("widen_keep_percent must be 1..100");
  if (opt.resident_first_chunk < 0 || opt.resident_first_chunk > JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS)
    throw std::runtime_error("resident_first_chunk must be 0.." + std::to_string(JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS));
  if (opt.head_graph_layers < -1) throw std::runtime_error("head_graph_layers must be -1 (auto), 0 (none) or more");
  if (opt.resident_max_chunk < 0 || opt.resident_max_chunk > JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS)
    throw std::runtime_error("resident_max_chunk must be 0.." + std::to_string(JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS));
  if (images.cols != n) throw std::runtime_error("images have " + std::to_string(images.cols) + " columns, network " +
                                                 std::to_string(n));
  if (keep_layer < 0 || keep_layer > net.layers())
    throw std::runtime_error("keep_layer " + std::to_string(keep_layer) + " is not 0 (none) or a layer of 1.." +
                             std::to_string(net.layers()));
  if (keep_layer > 0 && (!keep_out || !keep_ids))
    throw std::runtime_error("keep_layer > 0 needs keep_out and keep_ids");
  const bool keep = keep_layer > 0;
  const bool image_major = layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR;
  if (!tiled && !image_major && layout != JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR)
    throw std::runtime_error("unknown feature layout " + std::to_string(int(layout)));
  if (image_major && path != Path::kResident)
    throw std::runtime_error(std::string("the image-major feature layout runs on the resident path only, not ") +
                             path_name(path));
  if (image_major && opt.input_mask) throw std::runtime_error("the image-major feature layout has no input mask");
  // (the tensor-core tail past n = 4096 runs its calls on the planes kernels, which need no slice in shared memory)
  const bool tc_planes = opt.tc_tail && n > kTcTailStreamMaxN;
  if (path == Path::kResident && !image_major && resident_below < 0 && !resident_auto_applies(n) && !tc_planes) {
    res.note = "resident path: an 8-image slice does not fit at n = " + std::to_string(n) +
               " (the rule: n <= 1024, or 2048 < n <= 4096 unless JHDNN_SPDNN_RESIDENT_4096=0; force it with "
               "resident_below >= 0)";
    path = Path::kGraph;
  }
  if (keep && path == Path::kGraph) path = Path::kFused;
  if (tiled && path == Path::kResident) {  // as where the resident path does not apply: the graph path, said so
    res.note = "the tiled feature layout runs on the fused and graph paths only";
    path = keep ? Path::kFused : Path::kGraph;
  }
  // (the path that runs instead: the graph path, or the fused one when a layer's output is kept; before session
  // 29 the note said "graph" in both cases)
  if (!res.note.empty()) res.note += std::string("; ran the ") + path_name(path) + " path";
  if (tiled && path != Path::kFused && path != Path::kGraph)
    throw std::runtime_error(std::string("the tiled feature layout runs on the fused and graph paths only, not ") +
                             path_name(path));

  InferenceRun run(h, net, rows, bias, path, keep, keep_layer, keep_out, keep_ids, layout, opt, res);
  run.allocate();
  run.upload(images);
  if (path == Path::kResident || path == Path::kPersistent) run.start_count_copies();
  if (path == Path::kResident) run.build_head_graph(resident_below);
  // (the tensor-core head: on the resident path, and on the graph path, which runs where the resident path does not
  // fit, N >= 16384 among the challenge's widths, session 54)
  const bool tc_path = path == Path::kResident || path == Path::kGraph;
  if (tc_path && opt.tc_head_layers > 0) {
    run.prepare_tc_head();
    // (its untimed run of a second call wrote list 0, the images: put them back. Session 54's first run without this
    // gave every survivor twice)
    if (opt.tc_second_layers > 0) run.upload(images);
  }
  if (!tc_path && opt.tc_head_layers > 0)
    throw std::runtime_error(std::string("the tensor-core head runs on the resident and graph paths, not ") +
                             path_name(path));
  if (opt.tc_tail && path != Path::kResident)
    throw std::runtime_error(std::string("the tensor-core tail runs on the resident path, not ") + path_name(path));
  if (opt.tc_tail) run.prepare_tc_tail();
  run.start_clock();
  if (path == Path::kSeparate) {
    run.separate_loop(refresh);
  } else if (path == Path::kResident) {
    run.resident_loop(resident_below, resident_slice, resident_trace);
  } else if (path == Path::kPersistent) {
    run.persistent_loop(persistent_below);
  } else {
    run.fused_or_graph_loop();
  }
  run.finish();
  return res;  // `run`'s `o` frees the buffers, cc the copy stream and its events, hc_owner the pinned counts
}

}  // namespace spdnn
