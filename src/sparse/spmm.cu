// CSR x dense SpMM, C = alpha * A * B + beta * C, three kernels that teach the load-balance story:
//   THREAD_ROW  one thread per row of A, looping over every column of B: simple, but a warp's
//               threads walk rows of different lengths (divergence) and read B rows far apart.
//   WARP_ROW    one warp per row of A (and one 512-column band of B per blockIdx.y, so the rows
//               sweep B band by band while it sits in L2). Row-major B/C: lanes own columns of B (float4 when aligned),
//               the row's (col, value) pairs are loaded 32 at a time and broadcast with __shfl_sync,
//               so every B access is a coalesced row segment. Column-major: lanes split the row's
//               nonzeros and a warp reduction sums each output.
//   NNZ_SPLIT   every warp takes the same number of nonzeros (kChunk), whatever rows they belong to
//               (binary search of rowPtr finds the first row): one 100k-entry row is spread over many
//               warps. Partial row sums are added with atomicAdd after a pass that scales C by beta.
#include <algorithm>

#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kChunk = 256;  // nonzeros per warp in NNZ_SPLIT
constexpr int kBand = 512;   // columns of B per block in row-major WARP_ROW (a multiple of 128)
static_assert(kBand % 128 == 0, "a lane's float4 must never straddle two bands");

__device__ __forceinline__ int64_t at(jhdnnDenseOrder_t order, int64_t r, int64_t c, int64_t ld) {
  return order == JHDNN_ORDER_ROW ? r * ld + c : c * ld + r;
}

__device__ __forceinline__ void store(float* c, int64_t off, float alpha, float acc, float beta) {
  c[off] = beta == 0.f ? alpha * acc : alpha * acc + beta * c[off];
}

__global__ void __launch_bounds__(kBlock)
spmm_thread_row(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                const float* __restrict__ va, jhdnnDenseOrder_t order, const float* __restrict__ b, int64_t ldb,
                float alpha, float beta, float* __restrict__ c, int64_t ldc) {
  const int64_t row = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (row >= m) return;
  const int e0 = rp[row], e1 = rp[row + 1];
  for (int64_t j = 0; j < n; ++j) {
    float acc = 0.f;
    for (int e = e0; e < e1; ++e) acc += va[e] * __ldg(b + at(order, ci[e], j, ldb));
    store(c, at(order, row, j, ldc), alpha, acc, beta);
  }
}

// Row-major, lanes over columns; V = 4 uses float4 (n, ldb, ldc multiples of 4, 16-byte aligned).
template <int V>
__global__ void __launch_bounds__(kBlock)
spmm_warp_row_rm(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                 const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, float alpha, float beta,
                 float* __restrict__ c, int64_t ldc) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= m) return;
  const int e0 = rp[row], e1 = rp[row + 1];
  // blockIdx.y picks a band of kBand columns: blocks run x-fastest, so all rows of A work on the same
  // band of B at the same time and that band (k x kBand floats) is served from L2, not HBM.
  const int64_t j_lo = int64_t(blockIdx.y) * kBand, j_hi = min(n, j_lo + kBand);
  for (int64_t j0 = j_lo; j0 < j_hi; j0 += 32 * V) {
    const int64_t j = j0 + int64_t(lane) * V;
    float acc[V] = {};
    for (int eb = e0; eb < e1; eb += 32) {
      const int mine = eb + lane;
      const int col = mine < e1 ? ci[mine] : 0;
      const float val = mine < e1 ? va[mine] : 0.f;
      const int cnt = min(32, e1 - eb);
      for (int t = 0; t < cnt; ++t) {
        const int64_t kk = __shfl_sync(0xffffffffu, col, t);
        const float w = __shfl_sync(0xffffffffu, val, t);
        if (j < n) {
          if constexpr (V == 4) {
            const float4 x = __ldg(reinterpret_cast<const float4*>(b + kk * ldb + j));
            acc[0] += w * x.x; acc[1] += w * x.y; acc[2] += w * x.z; acc[3] += w * x.w;
          } else {
            acc[0] += w * __ldg(b + kk * ldb + j);
          }
        }
      }
    }
    if (j < n) {
#pragma unroll
      for (int q = 0; q < V; ++q) store(c, row * ldc + j + q, alpha, acc[q], beta);
    }
  }
}

// Column-major: lanes split the row's nonzeros, one warp reduction per output column.
__global__ void __launch_bounds__(kBlock)
spmm_warp_row_cm(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                 const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, float alpha, float beta,
                 float* __restrict__ c, int64_t ldc) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= m) return;
  const int e0 = rp[row], e1 = rp[row + 1];
  for (int64_t j = 0; j < n; ++j) {
    float acc = 0.f;
    for (int e = e0 + lane; e < e1; e += 32) acc += va[e] * __ldg(b + j * ldb + ci[e]);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane == 0) store(c, j * ldc + row, alpha, acc, beta);
  }
}

__global__ void scale_c(int64_t m, int64_t n, jhdnnDenseOrder_t order, float beta, float* __restrict__ c, int64_t ldc) {
  const int64_t total = m * n;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    // t walks the contiguous dimension fastest.
    const int64_t inner = order == JHDNN_ORDER_ROW ? n : m;
    const int64_t o = t / inner, i = t % inner;
    float* p = c + o * ldc + i;
    *p = beta == 0.f ? 0.f : beta * *p;
  }
}

__global__ void __launch_bounds__(kBlock)
spmm_nnz_split(int64_t m, int64_t n, int64_t nnz, const int* __restrict__ rp, const int* __restrict__ ci,
               const float* __restrict__ va, jhdnnDenseOrder_t order, const float* __restrict__ b, int64_t ldb,
               float alpha, float* __restrict__ c, int64_t ldc) {
  const int lane = threadIdx.x & 31;
  const int64_t w = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t e_begin = w * kChunk;
  if (e_begin >= nnz) return;
  const int64_t e_end = min(nnz, e_begin + kChunk);
  // First row: the last r with rp[r] <= e_begin (empty rows before it share its rp value).
  int64_t lo = 0, hi = m;  // invariant: rp[lo] <= e_begin < rp[hi]
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (rp[mid] <= e_begin) lo = mid; else hi = mid;
  }
  const int64_t first_row = lo;
  for (int64_t j0 = 0; j0 < n; j0 += 32) {
    const int64_t j = j0 + lane;
    int64_t row = first_row;
    int64_t row_end = rp[row + 1];
    float acc = 0.f;
    for (int64_t e = e_begin; e < e_end; ++e) {
      while (e >= row_end) {  // the row ended inside the chunk: flush it, move to the next non-empty one
        if (j < n) atomicAdd(c + at(order, row, j, ldc), alpha * acc);
        acc = 0.f;
        ++row;
        row_end = rp[row + 1];
      }
      if (j < n) acc += va[e] * __ldg(b + at(order, ci[e], j, ldb));
    }
    if (j < n) atomicAdd(c + at(order, row, j, ldc), alpha * acc);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

}  // namespace

Status load_spmm_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_thread_row));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_rm<1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_rm<4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_cm));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, scale_c));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_split));
  return Status::success();
}

Status spmm(cudaStream_t s, jhdnnSpMMAlg_t algo, float alpha, const jhdnnSparseMatrixStruct& a, int64_t n,
            jhdnnDenseOrder_t order, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int64_t m = a.rows;
  if (m == 0 || n == 0) return Status::success();
  if (algo == JHDNN_SPMM_ALG_DEFAULT) algo = JHDNN_SPMM_ALG_WARP_ROW;
  switch (algo) {
    case JHDNN_SPMM_ALG_THREAD_ROW: {
      spmm_thread_row<<<unsigned((m + kBlock - 1) / kBlock), kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values,
                                                                            order, b, ldb, alpha, beta, c, ldc);
      break;
    }
    case JHDNN_SPMM_ALG_WARP_ROW: {
      const unsigned grid = unsigned((m + kWarps - 1) / kWarps);
      const unsigned bands = unsigned((n + kBand - 1) / kBand);
      if (bands > 65535) return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "n (%lld) is too large", (long long)n);
      const dim3 grid2{grid, bands, 1u};
      if (order == JHDNN_ORDER_COL) {
        spmm_warp_row_cm<<<grid, kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values, b, ldb, alpha, beta, c, ldc);
      } else if (n % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 && aligned16(b) && aligned16(c)) {
        spmm_warp_row_rm<4><<<grid2, kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values, b, ldb, alpha, beta, c, ldc);
      } else {
        spmm_warp_row_rm<1><<<grid2, kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values, b, ldb, alpha, beta, c, ldc);
      }
      break;
    }
    case JHDNN_SPMM_ALG_NNZ_SPLIT: {
      scale_c<<<unsigned(std::min<int64_t>((m * n + 255) / 256, 65536)), 256, 0, s>>>(m, n, order, beta, c, ldc);
      JHDNN_LAUNCH_CHECK();
      if (a.nnz == 0) break;
      const int64_t warps = (a.nnz + kChunk - 1) / kChunk;
      spmm_nnz_split<<<unsigned((warps + kWarps - 1) / kWarps), kBlock, 0, s>>>(
          m, n, a.nnz, a.row_ptr, a.col_ind, a.values, order, b, ldb, alpha, c, ldc);
      break;
    }
    default:
      return core::fail(JHDNN_STATUS_BAD_PARAM, "unknown SpMM algorithm %d", int(algo));
  }
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::sparse
