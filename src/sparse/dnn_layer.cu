// The Sparse DNN Graph Challenge layer, fused, and the row compaction between layers.
//
// Layout (the seed paper's): features are stored feature-major, x(i, img) at x[i * ldx + img], so
// the 32 lanes of a warp, each owning one active image, read one input feature of 32 images as one
// coalesced segment. W is given transposed in ELL form (row j = the input neurons of output j).
//
// A block is 8 warps over one tile of 32 active images (blockIdx.x) and one slice of output neurons
// (blockIdx.y); warp w takes outputs slice_begin + w, + 8, ... of the descriptor's row order (if
// set): outputs that share inputs then run back to back and their feature lines are reused from L1
// (in the challenge networks the 16 outputs with the same residue mod N/16 have the same inputs). For each output the warp loads the
// row's 32 (index, weight) pairs with one coalesced load and keeps them in registers; __shfl_sync
// broadcasts them, so weights cost 8 bytes per 32 edges and every feature load is a coalesced line,
// whatever the permutation of the network. The bias, ReLU and clamp are applied in registers and
// the output row written once. A lane that produces a nonzero marks its image alive.
//
// Active rows: activeRows[r] says which column of x holds the r-th active image; output r is
// written compactly at column r of y. *activeCount lives on the device, so a whole network runs
// without a host round trip: the grid is sized for maxActive and surplus tiles leave at once.
#include <algorithm>

#include <cub/device/device_scan.cuh>

#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kWarps = 8;
constexpr int kMinSlice = 64;  // outputs per block at least (keeps the weight registers busy)

// kIpt images per lane (a tile of 32 * kIpt images per block): each (index, weight) pair broadcast by
// __shfl_sync then serves kIpt coalesced loads and FMAs, which matters while many images are alive
// (shuffles and loads compete for the same issue slots). kIpt = 1 once few are left, so that the
// tiles still cover the GPU.
template <bool kWidth32, int kIpt>
__global__ void __launch_bounds__(kWarps * 32)
dnn_layer_kernel(int64_t n_out, int width, const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                 float clamp_max, const int* __restrict__ active_count, const int* __restrict__ active_rows,
                 const float* __restrict__ x, int64_t ldx, float* __restrict__ y, int64_t ldy,
                 int* __restrict__ row_nonzero, int64_t slice, const int* __restrict__ order) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int count = *active_count;
  const int tile0 = int(blockIdx.x) * 32 * kIpt;
  if (tile0 >= count) return;  // the whole tile is past the survivors
  const float* xs[kIpt];
  bool valid[kIpt], alive[kIpt];
#pragma unroll
  for (int q = 0; q < kIpt; ++q) {
    const int r = tile0 + q * 32 + lane;
    valid[q] = r < count;
    xs[q] = x + (valid[q] ? int64_t(active_rows[r]) : 0);
    alive[q] = false;
  }
  const int64_t j_begin = int64_t(blockIdx.y) * slice;
  const int64_t j_end = min(n_out, j_begin + slice);
  for (int64_t t_out = j_begin + warp; t_out < j_end; t_out += kWarps) {
    const int64_t j = order ? int64_t(order[t_out]) : t_out;  // output neuron (see jhdnnSetSparseMatrixRowOrder)
    const int* rowi = wi + j * width;
    const float* rowv = wv + j * width;
    float acc[kIpt];
#pragma unroll
    for (int q = 0; q < kIpt; ++q) acc[q] = 0.f;
    if constexpr (kWidth32) {
      const int my_i = rowi[lane];
      const float my_w = my_i >= 0 ? rowv[lane] : 0.f;  // padding: its value is never used (may be NaN)
      if constexpr (kIpt == 1) {
        float xv[32];
#pragma unroll
        for (int t = 0; t < 32; ++t) {  // all 32 loads issued before the FMAs (independent addresses)
          const int i = __shfl_sync(0xffffffffu, my_i, t);
          xv[t] = (valid[0] && i >= 0) ? __ldg(xs[0] + int64_t(i) * ldx) : 0.f;
        }
#pragma unroll
        for (int t = 0; t < 32; ++t) acc[0] += __shfl_sync(0xffffffffu, my_w, t) * xv[t];
      } else {
#pragma unroll 8
        for (int t = 0; t < 32; ++t) {
          const int i = __shfl_sync(0xffffffffu, my_i, t);
          const float w = __shfl_sync(0xffffffffu, my_w, t);
          const int64_t off = int64_t(i) * ldx;
#pragma unroll
          for (int q = 0; q < kIpt; ++q) acc[q] += w * ((valid[q] && i >= 0) ? __ldg(xs[q] + off) : 0.f);
        }
      }
    } else {
      for (int k0 = 0; k0 < width; k0 += 32) {
        const int k = k0 + lane;
        const int my_i = k < width ? rowi[k] : -1;
        const float my_w = k < width ? rowv[k] : 0.f;
        const int cnt = min(32, width - k0);
        for (int t = 0; t < cnt; ++t) {
          const int i = __shfl_sync(0xffffffffu, my_i, t);
          const float w = __shfl_sync(0xffffffffu, my_w, t);
#pragma unroll
          for (int q = 0; q < kIpt; ++q)
            if (valid[q] && i >= 0) acc[q] += w * __ldg(xs[q] + int64_t(i) * ldx);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kIpt; ++q) {
      const float v = fminf(fmaxf(acc[q] + bias, 0.f), clamp_max);
      if (valid[q]) {
        y[j * ldy + tile0 + q * 32 + lane] = v;
        alive[q] |= v != 0.f;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < kIpt; ++q)
    if (alive[q]) row_nonzero[tile0 + q * 32 + lane] = 1;  // benign race: every writer writes 1 (flags zeroed)
}

// flags -> 0/1 (the API accepts any nonzero int).
__global__ void normalize_flags(int n, const int* __restrict__ flags, int* __restrict__ out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) out[t] = flags[t] != 0;
}

__global__ void scatter_survivors(int n, const int* __restrict__ f01, const int* __restrict__ scan,
                                  const int* __restrict__ ids_in, int* __restrict__ rows_out, int* __restrict__ ids_out,
                                  int* __restrict__ count_out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  if (f01[t]) {
    rows_out[scan[t]] = t;
    ids_out[scan[t]] = ids_in[t];
  }
  if (t == n - 1) *count_out = scan[t] + f01[t];
}

size_t align256(size_t b) { return (b + 255) & ~size_t(255); }

size_t scan_temp_bytes(int n) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr), n);
  return bytes;
}

}  // namespace

Status load_dnn_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<true, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<true, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<false, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_layer_kernel<false, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, normalize_flags));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, scatter_survivors));
  return Status::success();
}

Status dnn_layer(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct& wt, float bias, float clamp_max,
                 int max_active, const int* active_count, const int* active_rows, const float* x, int64_t ldx,
                 float* y, int64_t ldy, int* row_nonzero) {
  if (max_active == 0) return Status::success();
  JHDNN_CUDA_TRY(cudaMemsetAsync(row_nonzero, 0, size_t(max_active) * sizeof(int), s));
  const int64_t n_out = wt.rows;
  // Four images per lane while there are enough 128-image tiles for two waves, else one.
  const int ipt = (int64_t(max_active) + 127) / 128 >= 2 * int64_t(sm_count) ? 4 : 1;
  const int64_t tiles = (int64_t(max_active) + 32 * ipt - 1) / (32 * ipt);
  // Enough blocks for ~4 waves even when few images are left: split the outputs into slices.
  int64_t slices = std::max<int64_t>(1, (4 * int64_t(sm_count) + tiles - 1) / tiles);
  slices = std::min<int64_t>(slices, std::max<int64_t>(1, n_out / kMinSlice));
  slices = std::min<int64_t>(slices, 65535);
  const int64_t slice = (n_out + slices - 1) / slices;
  slices = (n_out + slice - 1) / slice;
  const dim3 grid{unsigned(tiles), unsigned(slices), 1u};
  const int width = int(wt.width);
  auto launch = [&](auto kernel) {
    kernel<<<grid, kWarps * 32, 0, s>>>(n_out, width, wt.col_ind, wt.values, bias, clamp_max, active_count,
                                        active_rows, x, ldx, y, ldy, row_nonzero, slice, wt.row_order);
  };
  if (width == 32)
    ipt == 4 ? launch(dnn_layer_kernel<true, 4>) : launch(dnn_layer_kernel<true, 1>);
  else
    ipt == 4 ? launch(dnn_layer_kernel<false, 4>) : launch(dnn_layer_kernel<false, 1>);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

size_t compact_workspace(int max_active) {
  const size_t n = size_t(std::max(max_active, 1));
  return 2 * align256(n * sizeof(int)) + scan_temp_bytes(int(n));
}

Status compact(cudaStream_t s, int max_active, const int* flags, const int* ids_in, int* rows_out, int* ids_out,
               int* count_out, void* ws, size_t ws_size) {
  if (max_active == 0) {
    JHDNN_CUDA_TRY(cudaMemsetAsync(count_out, 0, sizeof(int), s));
    return Status::success();
  }
  const size_t slot = align256(size_t(max_active) * sizeof(int));
  int* f01 = static_cast<int*>(ws);
  int* scan = reinterpret_cast<int*>(static_cast<char*>(ws) + slot);
  void* temp = static_cast<char*>(ws) + 2 * slot;
  size_t temp_bytes = ws_size - 2 * slot;
  const unsigned grid = unsigned((max_active + 255) / 256);
  normalize_flags<<<grid, 256, 0, s>>>(max_active, flags, f01);
  JHDNN_LAUNCH_CHECK();
  JHDNN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, f01, scan, max_active, s));
  scatter_survivors<<<grid, 256, 0, s>>>(max_active, f01, scan, ids_in, rows_out, ids_out, count_out);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::sparse
