// Dense (row-major FLOAT) to CSR in three passes, all warp-per-row:
//   1. count: each warp walks its row with float4 loads; __ballot_sync + __popc count the nonzeros of
//      32 lanes at once, so every lane ends with the row's count and no reduction is needed;
//   2. exclusive scan of the counts (CUB) gives rowPtr and nnz;
//   3. scatter: the warp walks the row again in chunks of 512 columns; one warp scan of the lanes'
//      packed per-vector counts places every nonzero in column order in a per-warp shared stage, and
//      the warp writes the chunk's col_ind / values as contiguous runs.
// Reading A twice is the price of not knowing nnz in advance (cuSPARSE's DenseToSparse does the same).
#include <cub/device/device_scan.cuh>

#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ bool vec_ok(const float* a, int64_t lda) {
  return (lda % 4 == 0) && ((reinterpret_cast<uintptr_t>(a) & 15) == 0);
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
count_rows(int64_t rows, int64_t cols, const float* __restrict__ a, int64_t lda, int* __restrict__ counts) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // whole warp leaves together
  const float* r = a + row * lda;
  int count = 0;
  int64_t done = 0;
  if (vec_ok(a, lda)) {
    const int64_t nvec = cols / 4;
    const float4* r4 = reinterpret_cast<const float4*>(r);
    // Unrolled so that a warp has several independent 512-byte loads in flight before the ballots /
    // scans that consume them (one in flight per warp left 60000 x 1024 below 70% of HBM).
#pragma unroll 4
    for (int64_t v0 = 0; v0 < nvec; v0 += 32) {
      const int64_t v = v0 + lane;
      float4 x = v < nvec ? __ldg(r4 + v) : make_float4(0.f, 0.f, 0.f, 0.f);
      count += __popc(__ballot_sync(0xffffffffu, x.x != 0.f)) + __popc(__ballot_sync(0xffffffffu, x.y != 0.f)) +
               __popc(__ballot_sync(0xffffffffu, x.z != 0.f)) + __popc(__ballot_sync(0xffffffffu, x.w != 0.f));
    }
    done = nvec * 4;
  }
  for (int64_t c0 = done; c0 < cols; c0 += 32) {
    const int64_t c = c0 + lane;
    const bool nz = c < cols && __ldg(r + c) != 0.f;
    count += __popc(__ballot_sync(0xffffffffu, nz));
  }
  if (lane == 0) counts[row] = count;
  if (row == 0 && lane == 0) counts[rows] = 0;  // so the exclusive scan's last entry is nnz
}

// nnz = the descriptor's (the size of col_ind / values). rowPtr comes from the analysis of A; if the
// descriptor's nnz is smaller than the analysis returned, or A gained nonzeros since, the slots at or
// past nnz are dropped instead of written out of bounds (the result is then not A's CSR).
//
// Vector path, per warp and chunk of kChunk = 512 columns (kVecs float4 per lane: lane l holds vectors
// v0 + 32 k + l, k = 0..3): the lane's nonzero count per k is packed into one int (8 bits per k: a k's
// warp total is at most 128), so ONE warp scan gives every (k, lane)'s place in column order (all of
// k's 32 lanes, then k + 1's). The nonzeros go to the warp's shared stage in that order, and the warp
// then writes the chunk's col_ind / values as contiguous runs (coalesced stores; storing each nonzero
// straight from its lane spread a chunk's ~50 nonzeros over 16 store instructions per array at 10%
// density, which is where the 10% conversion lost its time against the 3% one on the H200).
constexpr int kVecs = 4;
constexpr int kChunk = 32 * kVecs * 4;  // columns per warp chunk

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
scatter_rows(int64_t rows, int64_t cols, const float* __restrict__ a, int64_t lda, const int* __restrict__ row_ptr,
             int* __restrict__ col_ind, float* __restrict__ values, int nnz) {
  __shared__ int s_col[kWarpsPerBlock][kChunk];
  __shared__ float s_val[kWarpsPerBlock][kChunk];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const unsigned lower = (1u << lane) - 1u;  // lanes below this one
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= rows) return;
  const float* r = a + row * lda;
  int base = row_ptr[row];
  int64_t done = 0;
  if (vec_ok(a, lda)) {
    const int64_t nvec = cols / 4;
    const float4* r4 = reinterpret_cast<const float4*>(r);
    int* sc = s_col[warp];
    float* sv = s_val[warp];
    for (int64_t v0 = 0; v0 < nvec; v0 += 32 * kVecs) {
      float4 x[kVecs];
      unsigned packed = 0;  // byte k: this lane's nonzeros in x[k]
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int64_t v = v0 + 32 * k + lane;
        x[k] = v < nvec ? __ldg(r4 + v) : make_float4(0.f, 0.f, 0.f, 0.f);
        packed |= unsigned((x[k].x != 0.f) + (x[k].y != 0.f) + (x[k].z != 0.f) + (x[k].w != 0.f)) << (8 * k);
      }
      unsigned incl = packed;  // inclusive warp scan, four 8-bit sums at once
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const unsigned t = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += t;
      }
      const unsigned totals = __shfl_sync(0xffffffffu, incl, 31);
      const unsigned excl = incl - packed;
      int k_base = 0;  // nonzeros of the chunk's vectors before row k of the lane grid
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        int pos = k_base + int((excl >> (8 * k)) & 0xffu);
        const float e[4] = {x[k].x, x[k].y, x[k].z, x[k].w};
        const int c0 = int((v0 + 32 * k + lane) * 4);
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (e[q] != 0.f) {
            sc[pos] = c0 + q;
            sv[pos] = e[q];
            ++pos;
          }
        k_base += int((totals >> (8 * k)) & 0xffu);
      }
      __syncwarp();
      for (int i = lane; i < k_base; i += 32)
        if (unsigned(base + i) < unsigned(nnz)) {  // see the nnz note at the kernel
          col_ind[base + i] = sc[i];
          values[base + i] = sv[i];
        }
      __syncwarp();  // the stage is rewritten by the next chunk
      base += k_base;
    }
    done = nvec * 4;
  }
  for (int64_t c0 = done; c0 < cols; c0 += 32) {
    const int64_t c = c0 + lane;
    const float x = c < cols ? __ldg(r + c) : 0.f;
    const unsigned mask = __ballot_sync(0xffffffffu, x != 0.f);
    const int pos = base + __popc(mask & lower);
    if (x != 0.f && unsigned(pos) < unsigned(nnz)) {
      col_ind[pos] = int(c);
      values[pos] = x;
    }
    base += __popc(mask);
  }
}

size_t scan_temp_bytes(int n) {
  size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr), n);
  return bytes;
}

size_t align256(size_t b) { return (b + 255) & ~size_t(255); }

}  // namespace

Status load_dense_to_csr_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, count_rows));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, scatter_rows));
  return Status::success();
}

size_t dense_to_csr_workspace(int64_t rows) {
  return align256(size_t(rows + 1) * sizeof(int)) + scan_temp_bytes(int(rows + 1));
}

Status dense_to_csr_analysis(cudaStream_t s, int64_t rows, int64_t cols, const float* a, int64_t lda,
                             int* row_ptr, int64_t* nnz, void* ws, size_t ws_size) {
  int* counts = static_cast<int*>(ws);
  void* temp = static_cast<char*>(ws) + align256(size_t(rows + 1) * sizeof(int));
  size_t temp_bytes = ws_size - align256(size_t(rows + 1) * sizeof(int));
  const unsigned grid = unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  count_rows<<<grid, kWarpsPerBlock * 32, 0, s>>>(rows, cols, a, lda, counts);
  JHDNN_LAUNCH_CHECK();
  JHDNN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, row_ptr, int(rows + 1), s));
  int total = 0;
  JHDNN_CUDA_TRY(cudaMemcpyAsync(&total, row_ptr + rows, sizeof(int), cudaMemcpyDeviceToHost, s));
  JHDNN_CUDA_TRY(cudaStreamSynchronize(s));
  *nnz = total;
  return Status::success();
}

Status dense_to_csr_convert(cudaStream_t s, int64_t rows, int64_t cols, const float* a, int64_t lda,
                            const int* row_ptr, int* col_ind, float* values, int64_t nnz) {
  const unsigned grid = unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  scatter_rows<<<grid, kWarpsPerBlock * 32, 0, s>>>(rows, cols, a, lda, row_ptr, col_ind, values, int(nnz));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::sparse
