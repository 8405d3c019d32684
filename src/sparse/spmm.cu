// CSR x dense SpMM, C = alpha * A * B + beta * C, three kernels that teach the load-balance story:
//   THREAD_ROW  one thread per row of A, looping over every column of B: simple, but a warp's
//               threads walk rows of different lengths (divergence) and read B rows far apart.
//   WARP_ROW    one warp per row of A (and one 512-column band of B per blockIdx.y, so the rows
//               sweep B band by band while it sits in L2). Row-major B/C: lanes own columns of B (float4 when aligned),
//               the row's (col, value) pairs are loaded 32 at a time and broadcast with __shfl_sync,
//               so every B access is a coalesced row segment. Column-major: lanes split the row's
//               nonzeros and a warp reduction sums each output.
//   NNZ_SPLIT   every warp takes the same number of nonzeros (kChunk), whatever rows they belong to
//               (binary search of rowPtr finds the first row), times a band of columns per blockIdx.y:
//               one 100k-entry row is spread over many warps. Rows inside one chunk are stored
//               directly; pieces of rows cut by a chunk boundary are added with atomicAdd after a
//               pass that scales just those rows by beta (see spmm_nnz_split).
//   WARP_ROW_WIDE  4 rows per warp (in the row order), two float4 per lane (256 columns per pass):
//               when the 4 rows have the same columns (the challenge layers in their reuse order) each
//               B load feeds all 4 rows; otherwise the rows run in turn, each broadcast pair feeding
//               two independent loads.
//   NNZ_PAIRS   NNZ_SPLIT with lane groups: row-major B, 16 lanes x float4 cover a 64-column band and
//               the two halves take alternate nonzeros of a segment (two B rows per load instruction;
//               halves summed by one shuffle at the row's end; n, ldb multiples of 4, else NNZ_SPLIT).
//               Column-major B: 8 lanes x 8-column bands, 4 nonzeros per step (B sectors from L2).
//               Row-major B runs spmm_nnz_deep<4> (JHDNN_SPMM_PAIRS=deep4, the default; deep = <8>,
//               classic = the <16, 4> above): the chunk's pairs staged in shared memory, 4 / 8 B rows in
//               flight per half-warp (1.44x / 1.29x classic on the power-law matrices, H200, ff25859).
//   TRANSPOSE_B column-major B and C: B is transposed into the caller's workspace (row-major, k x ldt)
//               by a tiled shared-memory transpose, then NNZ_PAIRS runs on it and stores C column-major.
//               In place, every (nonzero, column) of a column-major B is its own 32-byte sector; the
//               transposed copy turns n sectors per nonzero into n / 8.
#include <algorithm>

#include "core/config.h"
#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kChunk = 256;  // nonzeros per warp in NNZ_SPLIT
constexpr int kBand = 512;   // columns of B per block in row-major WARP_ROW (a multiple of 128)
static_assert(kBand % 128 == 0, "a lane's float4 must never straddle two bands");

__device__ __forceinline__ int64_t at(jhdnnOrder_t order, int64_t r, int64_t c, int64_t ld) {
  return order == JHDNN_ORDER_ROW ? r * ld + c : c * ld + r;
}

__device__ __forceinline__ void store(float* c, int64_t off, float alpha, float acc, float beta) {
  c[off] = beta == 0.f ? alpha * acc : alpha * acc + beta * c[off];
}

__global__ void __launch_bounds__(kBlock)
spmm_thread_row(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                const float* __restrict__ va, jhdnnOrder_t order, const float* __restrict__ b, int64_t ldb,
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

// x[0..V-1] = p[0..V-1] by one load (V = 2 / 4: p aligned to V floats).
template <int V>
__device__ __forceinline__ void load_v(const float* p, float (&x)[V]) {
  if constexpr (V == 1) {
    x[0] = __ldg(p);
  } else if constexpr (V == 2) {
    const float2 t = __ldg(reinterpret_cast<const float2*>(p));
    x[0] = t.x; x[1] = t.y;
  } else {
    const float4 t = __ldg(reinterpret_cast<const float4*>(p));
    x[0] = t.x; x[1] = t.y; x[2] = t.z; x[3] = t.w;
  }
}

// Row-major, lanes over columns; V = 4 uses float4 (n, ldb, ldc multiples of 4, 16-byte aligned).
template <int V>
__global__ void __launch_bounds__(kBlock)
spmm_warp_row_rm(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                 const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, float alpha, float beta,
                 float* __restrict__ c, int64_t ldc,
                 const int* __restrict__ order) {
  const int lane = threadIdx.x & 31;
  const int64_t t_row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (t_row >= m) return;
  // The descriptor's row order (a hint): rows with the same columns run in the same block, so their
  // B rows are served from L1 after the first warp fetched them.
  const int64_t row = order ? int64_t(order[t_row]) : t_row;
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

// WARP_ROW_WIDE (row-major): a warp takes kGroup consecutive rows (in the row order, when one is set)
// and lanes own kSlabs slabs of V columns per pass (32 * V * kSlabs columns). When the kGroup rows
// have the same column list (the challenge layers' 16 rows per input list, adjacent in their reuse
// order), each B load feeds all kGroup rows: kGroup x fewer B loads per FMA than WARP_ROW (whose only
// reuse is L1 hits). Otherwise the rows run one after another, each broadcast pair feeding kSlabs
// independent loads. The equality test is warp-uniform (lengths, then __all_sync over the indices),
// and costs one extra read of the rows' indices per band.
constexpr int kGroup = 4, kSlabs = 2;
template <int V>
__global__ void __launch_bounds__(kBlock)
spmm_warp_rows_rm(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                  const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, float alpha, float beta,
                  float* __restrict__ c, int64_t ldc, const int* __restrict__ order) {
  static_assert(kBand % (32 * V * kSlabs) == 0, "a warp pass must not straddle two bands");
  const int lane = threadIdx.x & 31;
  const int64_t t0 = (int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5)) * kGroup;
  if (t0 >= m) return;
  const int rows = int(min(int64_t(kGroup), m - t0));  // warp-uniform
  int64_t row[kGroup];
  int e0[kGroup], e1[kGroup];
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    const int64_t t = g < rows ? t0 + g : t0;  // missing rows (the tail group) repeat row t0, never stored
    row[g] = order ? int64_t(order[t]) : t;
    e0[g] = rp[row[g]];
    e1[g] = rp[row[g] + 1];
  }
  const int len = e1[0] - e0[0];
  bool same = rows == kGroup;
#pragma unroll
  for (int g = 1; g < kGroup; ++g) same = same && e1[g] - e0[g] == len;
  for (int eb = 0; same && eb < len; eb += 32) {
    bool eq = true;
    if (eb + lane < len) {
      const int c0 = ci[e0[0] + eb + lane];
#pragma unroll
      for (int g = 1; g < kGroup; ++g) eq = eq && ci[e0[g] + eb + lane] == c0;
    }
    same = __all_sync(0xffffffffu, eq);
  }
  const int64_t j_lo = int64_t(blockIdx.y) * kBand, j_hi = min(n, j_lo + kBand);
  for (int64_t j0 = j_lo; j0 < j_hi; j0 += 32 * V * kSlabs) {
    if (same) {
      float acc[kGroup][kSlabs][V] = {};
      for (int eb = 0; eb < len; eb += 32) {
        const int mine = eb + lane;
        const int col = mine < len ? ci[e0[0] + mine] : 0;
        float val[kGroup];
#pragma unroll
        for (int g = 0; g < kGroup; ++g) val[g] = mine < len ? va[e0[g] + mine] : 0.f;
        const int cnt = min(32, len - eb);
        for (int t = 0; t < cnt; ++t) {
          const int64_t kk = __shfl_sync(0xffffffffu, col, t);
          float w[kGroup];
#pragma unroll
          for (int g = 0; g < kGroup; ++g) w[g] = __shfl_sync(0xffffffffu, val[g], t);
#pragma unroll
          for (int sl = 0; sl < kSlabs; ++sl) {
            const int64_t j = j0 + int64_t(sl) * 32 * V + int64_t(lane) * V;
            if (j < j_hi) {
              float x[V];
              load_v<V>(b + kk * ldb + j, x);
#pragma unroll
              for (int g = 0; g < kGroup; ++g)
#pragma unroll
                for (int q = 0; q < V; ++q) acc[g][sl][q] += w[g] * x[q];
            }
          }
        }
      }
#pragma unroll
      for (int g = 0; g < kGroup; ++g)
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) {
          const int64_t j = j0 + int64_t(sl) * 32 * V + int64_t(lane) * V;
          if (j < j_hi) {
#pragma unroll
            for (int q = 0; q < V; ++q) store(c, row[g] * ldc + j + q, alpha, acc[g][sl][q], beta);
          }
        }
    } else {
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {  // unrolled, so row[], e0[], e1[] stay in registers
        if (g >= rows) continue;
        float acc[kSlabs][V] = {};
        for (int eb = e0[g]; eb < e1[g]; eb += 32) {
          const int mine = eb + lane;
          const int col = mine < e1[g] ? ci[mine] : 0;
          const float val = mine < e1[g] ? va[mine] : 0.f;
          const int cnt = min(32, e1[g] - eb);
          for (int t = 0; t < cnt; ++t) {
            const int64_t kk = __shfl_sync(0xffffffffu, col, t);
            const float w = __shfl_sync(0xffffffffu, val, t);
#pragma unroll
            for (int sl = 0; sl < kSlabs; ++sl) {
              const int64_t j = j0 + int64_t(sl) * 32 * V + int64_t(lane) * V;
              if (j < j_hi) {
                float x[V];
                load_v<V>(b + kk * ldb + j, x);
#pragma unroll
                for (int q = 0; q < V; ++q) acc[sl][q] += w * x[q];
              }
            }
          }
        }
#pragma unroll
        for (int sl = 0; sl < kSlabs; ++sl) {
          const int64_t j = j0 + int64_t(sl) * 32 * V + int64_t(lane) * V;
          if (j < j_hi) {
#pragma unroll
            for (int q = 0; q < V; ++q) store(c, row[g] * ldc + j + q, alpha, acc[sl][q], beta);
          }
        }
      }
    }
  }
}

// Column-major: lanes split the row's nonzeros, one warp reduction per output column.
__global__ void __launch_bounds__(kBlock)
spmm_warp_row_cm(int64_t m, int64_t n, const int* __restrict__ rp, const int* __restrict__ ci,
                 const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, float alpha, float beta,
                 float* __restrict__ c, int64_t ldc,
                 const int* __restrict__ order) {
  const int lane = threadIdx.x & 31;
  const int64_t t_row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (t_row >= m) return;
  const int64_t row = order ? int64_t(order[t_row]) : t_row;  // the row-order hint, as in spmm_warp_row_rm
  const int e0 = rp[row], e1 = rp[row + 1];
  for (int64_t j = 0; j < n; ++j) {
    float acc = 0.f;
    for (int e = e0 + lane; e < e1; e += 32) acc += va[e] * __ldg(b + j * ldb + ci[e]);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane == 0) store(c, j * ldc + row, alpha, acc, beta);
  }
}

// NNZ_SPLIT. Warp w of blockIdx.x owns the nonzeros [w * kChunk, (w + 1) * kChunk) wherever they
// fall; blockIdx.y (with a grid stride) picks a band of 32 * V columns of B and C, lane l owning
// columns band * 32 * V + l * V .. + V - 1 (V = 4/2: float4/float2 loads of row-major B). Rows are
// walked as segments (the part of a row inside the chunk): a segment's (col, value) pairs come in
// with one coalesced load per 32 and are broadcast by shuffles, so each lane issues independent B
// loads back to back (round 1 loaded one pair at a time, and parallelised over the nonzeros only: a
// challenge layer has 32k nonzeros = 128 warps for the whole GPU, each looping over 60000 columns,
// which is what made it 100x slower than WARP_ROW).
// A row that lies inside one chunk has exactly one writer per column: it is stored directly
// (alpha * acc + beta * C). A row cut by a chunk boundary has several: split_rows_prepare first
// scales those rows (and sets empty rows, which nobody visits) by beta, then each piece is added
// with atomicAdd. So results are bitwise deterministic except in rows longer than a chunk's cut.
__device__ __forceinline__ bool row_in_one_chunk(int64_t rs, int64_t re) {
  return re > rs && rs / kChunk == (re - 1) / kChunk;
}

// The next 32 pairs of a segment that ends at se, one per lane: lane l holds pair eb + l (0, 0 past
// se); cnt of the 32 are real. Broadcast by __shfl_sync in the NNZ_SPLIT / NNZ_PAIRS loops.
struct Pairs {
  int col;
  float val;
  int cnt;
};
__device__ __forceinline__ Pairs load_pairs(const int* __restrict__ ci, const float* __restrict__ va, int64_t eb,
                                            int64_t se, int lane) {
  const int64_t mine = eb + lane;
  Pairs p;
  p.col = mine < se ? ci[mine] : 0;
  p.val = mine < se ? va[mine] : 0.f;
  p.cnt = se - eb < 32 ? int(se - eb) : 32;
  return p;
}

// Stores a segment's sums acc (columns j..j+V-1 of row) by the NNZ_SPLIT rule: directly when the
// row lies in one chunk (the only writer), else added atomically (split_rows_prepare scaled the row
// by beta). kTail: store only the columns < n (NNZ_PAIRS; NNZ_SPLIT's V columns are all < n).
template <int V, bool kTail>
__device__ __forceinline__ void store_segment(float* __restrict__ c, jhdnnOrder_t c_order, int64_t row, int64_t j,
                                              int64_t n, int64_t ldc, float alpha, const float (&acc)[V], float beta,
                                              int64_t rs, int64_t re) {
  if (row_in_one_chunk(rs, re)) {
#pragma unroll
    for (int q = 0; q < V; ++q)
      if (!kTail || j + q < n) store(c, at(c_order, row, j + q, ldc), alpha, acc[q], beta);
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q)
      if (!kTail || j + q < n) atomicAdd(c + at(c_order, row, j + q, ldc), alpha * acc[q]);
  }
}

// One warp per row: C(row, :) = beta * C(row, :) (0 when beta == 0) for empty and chunk-cut rows.
__global__ void __launch_bounds__(kBlock)
split_rows_prepare(int64_t m, int64_t n, const int* __restrict__ rp, jhdnnOrder_t order, float beta,
                   float* __restrict__ c, int64_t ldc) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= m) return;
  if (row_in_one_chunk(rp[row], rp[row + 1])) return;
  for (int64_t j = lane; j < n; j += 32) {
    float* p = c + at(order, row, j, ldc);
    *p = beta == 0.f ? 0.f : beta * *p;
  }
}

// V > 1 only for row-major B (n and ldb multiples of V, B aligned to V floats); C is stored element by
// element in its own order (c_order), so the transposed path can store a column-major C.
template <int V>
__global__ void __launch_bounds__(kBlock)
spmm_nnz_split(int64_t m, int64_t n, int64_t nnz, const int* __restrict__ rp, const int* __restrict__ ci,
               const float* __restrict__ va, jhdnnOrder_t b_order, const float* __restrict__ b, int64_t ldb,
               jhdnnOrder_t c_order, float alpha, float beta, float* __restrict__ c, int64_t ldc) {
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
  const int64_t bands = (n + 32 * V - 1) / (32 * V);
  for (int64_t band = blockIdx.y; band < bands; band += gridDim.y) {
    const int64_t j = band * 32 * V + int64_t(lane) * V;  // this lane's first column (V columns, all < n or none)
    const bool has = j < n;
    int64_t row = first_row;
    int64_t rs = rp[row];
    for (int64_t e = e_begin; e < e_end; ++row) {  // warp-uniform: e, row, rs, re
      const int64_t re = rp[row + 1];
      const int64_t se = min(re, e_end);  // this row's segment is [e, se) (empty for an empty row)
      if (se > e) {
        float acc[V];
#pragma unroll
        for (int q = 0; q < V; ++q) acc[q] = 0.f;
        for (int64_t eb = e; eb < se; eb += 32) {
          const Pairs pr = load_pairs(ci, va, eb, se, lane);
          const int col = pr.col, cnt = pr.cnt;
          const float val = pr.val;
#pragma unroll 4
          for (int t = 0; t < cnt; ++t) {
            const int64_t k = __shfl_sync(0xffffffffu, col, t);
            const float wv = __shfl_sync(0xffffffffu, val, t);
            if (has) {
              float x[V];
              if constexpr (V == 1)
                x[0] = __ldg(b + at(b_order, k, j, ldb));
              else
                load_v<V>(b + k * ldb + j, x);
#pragma unroll
              for (int q = 0; q < V; ++q) acc[q] += wv * x[q];
            }
          }
        }
        if (has) store_segment<V, false>(c, c_order, row, j, n, ldc, alpha, acc, beta, rs, re);
        e = se;
      }
      rs = re;
    }
  }
}

// NNZ_PAIRS: the chunks, segments and store rules of spmm_nnz_split, but the warp is split into
// kH = 32 / L groups of L lanes: lane l works on columns band * L * V + (l % L) * V .. + V - 1, group
// h = l / L on the segment's nonzeros h, h + kH, h + 2 kH, ...; at the row's end the groups' sums
// meet in log2(kH) __shfl_xor_sync steps and group 0 stores. Two shapes:
//   <16, 4> row-major B: two half-warps x float4 = 64 columns, two B rows per load instruction, 16
//           shuffle steps per 32 pairs instead of 32. B: ldb a multiple of 4, 16-byte aligned, and
//           columns j..j+3 readable for every j < n with j % 4 == 0 (n % 4 == 0, or the transposed
//           workspace whose rows are zero-padded to ldb).
//   <8, 1>  column-major B in place: 8 columns x 4 nonzeros per step, 8-column bands (blockIdx.y):
//           blocks run x-fastest, so the whole GPU sweeps 8 columns of B at a time (8 x 4 k bytes:
//           32 MB at k = 2^20) and its 32-byte sectors come from L2; a 32-column band (NNZ_SPLIT)
//           spreads the sweep over 128 MB and reads them from HBM.
// Only columns < n of C are stored.
template <int L, int V>
__global__ void __launch_bounds__(kBlock)
spmm_nnz_pairs(int64_t m, int64_t n, int64_t nnz, const int* __restrict__ rp, const int* __restrict__ ci,
               const float* __restrict__ va, jhdnnOrder_t b_order, const float* __restrict__ b, int64_t ldb,
               jhdnnOrder_t c_order, float alpha, float beta, float* __restrict__ c, int64_t ldc) {
  static_assert(32 % L == 0 && (V == 1 || V == 4), "L lanes per nonzero must divide the warp");
  constexpr int kH = 32 / L;
  const int lane = threadIdx.x & 31, grp = lane / L;
  const int64_t w = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  const int64_t e_begin = w * kChunk;
  if (e_begin >= nnz) return;
  const int64_t e_end = min(nnz, e_begin + kChunk);
  // First row: the last r with rp[r] <= e_begin, by a 32-way search (the 32 lanes probe at once, a
  // ballot counts the probes at or below e_begin): 4 dependent loads at m = 2^20 instead of 20.
  int64_t lo = 0, hi = m;  // invariant: rp[lo] <= e_begin < rp[hi]
  while (hi - lo > 1) {
    const int64_t step = (hi - lo + 31) / 32;
    const int64_t p = lo + (int64_t(lane) + 1) * step;
    const unsigned le = __ballot_sync(0xffffffffu, p < hi && rp[p] <= e_begin);  // a prefix of the lanes
    lo += int64_t(__popc(le)) * step;
    hi = min(hi, lo + step);
  }
  const int64_t first_row = lo;
  // Row pointers come 32 at a time: lane l holds rp[win + l], so walking the rows costs one load per
  // 32 rows instead of a dependent load per row.
  int64_t win = first_row;
  int rpw = rp[min(win + lane, m)];
  const int64_t bands = (n + L * V - 1) / (L * V);
  for (int64_t band = blockIdx.y; band < bands; band += gridDim.y) {
    const int64_t j = band * L * V + int64_t(lane % L) * V;
    const bool has = j < n;
    int64_t row = first_row;
    if (win != first_row) {  // a later band: back to the first window
      win = first_row;
      rpw = rp[min(win + lane, m)];
    }
    int64_t rs = __shfl_sync(0xffffffffu, rpw, 0);
    for (int64_t e = e_begin; e < e_end; ++row) {  // warp-uniform: e, row, rs, re, win
      if (row + 1 - win >= 32) {  // rp[row + 1] is past the window: the next 32 start at row
        win = row;
        rpw = rp[min(win + lane, m)];
      }
      const int64_t re = __shfl_sync(0xffffffffu, rpw, int(row + 1 - win));
      const int64_t se = min(re, e_end);
      if (se > e) {
        float acc[V];
#pragma unroll
        for (int q = 0; q < V; ++q) acc[q] = 0.f;
        for (int64_t eb = e; eb < se; eb += 32) {
          const Pairs pr = load_pairs(ci, va, eb, se, lane);
          const int col = pr.col, cnt = pr.cnt;
          const float val = pr.val;
          const int steps = (cnt + kH - 1) / kH;
#pragma unroll 4
          for (int t = 0; t < steps; ++t) {
            const int src = kH * t + grp;  // <= 31 (steps <= 32 / kH); src >= cnt only in the last step
            const int64_t k = __shfl_sync(0xffffffffu, col, src);
            const float wv = __shfl_sync(0xffffffffu, val, src);
            if (has && src < cnt) {
              if constexpr (V == 4) {
                const float4 x = __ldg(reinterpret_cast<const float4*>(b + k * ldb + j));
                acc[0] += wv * x.x; acc[1] += wv * x.y; acc[2] += wv * x.z; acc[3] += wv * x.w;
              } else {
                acc[0] += wv * __ldg(b + at(b_order, k, j, ldb));
              }
            }
          }
        }
#pragma unroll
        for (int d = L; d < 32; d <<= 1)
#pragma unroll
          for (int q = 0; q < V; ++q) acc[q] += __shfl_xor_sync(0xffffffffu, acc[q], d);
        if (has && grp == 0) store_segment<V, true>(c, c_order, row, j, n, ldc, alpha, acc, beta, rs, re);
        e = se;
      }
      rs = re;
    }
  }
}

// NNZ_PAIRS deep (JHDNN_SPMM_PAIRS=deep4, the default since session 17, or deep): spmm_nnz_pairs<16, 4>'s
// chunks, bands, row walk and store rules, with more B rows in flight per warp. The SASS count of
// <16, 4> (src/sparse/README.md, "NNZ_PAIRS deep") shows one LDG.128 in flight per warp: each
// step's load lands in the registers the next step's load reuses, and its FMAs wait for it, so a row
// of 8 nonzeros costs 1 (pairs) + 4 (B) dependent L2 round trips. Here:
//  - the warp's whole chunk of (col, value) pairs is staged in shared memory at the start (8 loads
//    per lane, all in flight, issued before the row search), so a row's pairs cost no round trip;
//    every half-warp reads the same pair (a broadcast LDS.64);
//  - a segment runs kDepth steps at a time: kDepth B loads into separate registers first (lanes whose
//    nonzero is past the segment load nothing and use weight 0 and x = 0), then the FMAs: a row of up
//    to 2 kDepth nonzeros costs one B round trip instead of ceil(len / 2).
//  - a row inside one chunk is stored with one float4 per lane (c_vec4: row-major C, ldc % 4 == 0, 16-byte
//    aligned; columns j..j+3 < n) and the evict-first hint (__stcs; __ldcs for beta's read): 8 sector
//    writes per 64-column row segment instead of classic's 4 element stores touching 32, and C (as big as
//    B at n = 64) is not kept in L2 at B's expense. Chunk-cut rows and other layouts: store_segment.
// Same sums per half-warp in the same order as <16, 4> (nonzeros h, h + 2, ...), then the same
// shfl_xor(16); adding the zero products of the padded steps changes no sum (x + 0 = x; only a -0
// sum becomes +0). Occupancy (ptxas, CUDA 13.0): <4> 4 blocks per SM (64 registers, no spill; its 4
// loads are all issued before the FMAs); <8> 3 blocks (80 registers, ~60 B of spills in the row walk,
// 7-8 loads issued before the FMAs; at 64 registers ptxas kept only ~4 in flight).
template <int kDepth>
__global__ void __launch_bounds__(kBlock, kDepth >= 8 ? 3 : 4)
spmm_nnz_deep(int64_t m, int64_t n, int64_t nnz, const int* __restrict__ rp, const int* __restrict__ ci,
              const float* __restrict__ va, const float* __restrict__ b, int64_t ldb, jhdnnOrder_t c_order,
              bool c_vec4, float alpha, float beta, float* __restrict__ c, int64_t ldc) {
  constexpr int L = 16, V = 4, kH = 32 / L;
  __shared__ int2 s_pairs[kWarps][kChunk];  // (col, value bits) of the warp's chunk: 2 KB per warp
  const int lane = threadIdx.x & 31, grp = lane / L, wib = threadIdx.x >> 5;
  const int64_t w = int64_t(blockIdx.x) * kWarps + wib;
  const int64_t e_begin = w * kChunk;
  if (e_begin >= nnz) return;  // warp-uniform; no block-wide barrier below
  const int64_t e_end = min(nnz, e_begin + kChunk);
  int2* const sp = s_pairs[wib];
#pragma unroll
  for (int i = lane; i < kChunk; i += 32) {  // past e_end: (0, 0), never read as a nonzero
    const int64_t e = e_begin + i;
    sp[i] = e < e_end ? make_int2(ci[e], __float_as_int(va[e])) : make_int2(0, 0);
  }
  int64_t lo = 0, hi = m;  // the first row, by spmm_nnz_pairs's 32-way search
  while (hi - lo > 1) {
    const int64_t step = (hi - lo + 31) / 32;
    const int64_t p = lo + (int64_t(lane) + 1) * step;
    const unsigned le = __ballot_sync(0xffffffffu, p < hi && rp[p] <= e_begin);
    lo += int64_t(__popc(le)) * step;
    hi = min(hi, lo + step);
  }
  const int64_t first_row = lo;
  int64_t win = first_row;
  int rpw = rp[min(win + lane, m)];
  __syncwarp();  // the staged pairs are visible to the whole warp
  const int64_t bands = (n + L * V - 1) / (L * V);
  for (int64_t band = blockIdx.y; band < bands; band += gridDim.y) {
    const int64_t j = band * L * V + int64_t(lane % L) * V;
    const bool has = j < n;
    const float* const bj = b + j;
    int64_t row = first_row;
    if (win != first_row) {
      win = first_row;
      rpw = rp[min(win + lane, m)];
    }
    int64_t rs = __shfl_sync(0xffffffffu, rpw, 0);
    for (int64_t e = e_begin; e < e_end; ++row) {  // warp-uniform: e, row, rs, re, win
      if (row + 1 - win >= 32) {
        win = row;
        rpw = rp[min(win + lane, m)];
      }
      const int64_t re = __shfl_sync(0xffffffffu, rpw, int(row + 1 - win));
      const int64_t se = min(re, e_end);
      if (se > e) {
        const int p_end = int(se - e_begin);  // the segment is sp[e - e_begin, p_end)
        float acc[V] = {0.f, 0.f, 0.f, 0.f};
        for (int p0 = int(e - e_begin); p0 < p_end; p0 += kH * kDepth) {
          float4 x[kDepth];
          float wv[kDepth];
#pragma unroll
          for (int t = 0; t < kDepth; ++t) {
            const int p = p0 + kH * t + grp;
            const bool ok = p < p_end;  // p < p_end <= kChunk: sp[p] is inside the warp's slice
            const int2 pr = sp[ok ? p : 0];
            wv[t] = ok ? __int_as_float(pr.y) : 0.f;
            x[t] = has && ok ? __ldg(reinterpret_cast<const float4*>(bj + int64_t(pr.x) * ldb))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
          }
#pragma unroll
          for (int t = 0; t < kDepth; ++t) {
            acc[0] += wv[t] * x[t].x; acc[1] += wv[t] * x[t].y; acc[2] += wv[t] * x[t].z; acc[3] += wv[t] * x[t].w;
          }
        }
#pragma unroll
        for (int q = 0; q < V; ++q) acc[q] += __shfl_xor_sync(0xffffffffu, acc[q], 16);
        if (has && grp == 0) {
          if (c_vec4 && j + V <= n && row_in_one_chunk(rs, re)) {  // one 16-byte store, evict-first
            float4* const p = reinterpret_cast<float4*>(c + row * ldc + j);
            float4 v;
            if (beta == 0.f) {
              v = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
            } else {
              const float4 o = __ldcs(p);
              v = make_float4(alpha * acc[0] + beta * o.x, alpha * acc[1] + beta * o.y, alpha * acc[2] + beta * o.z,
                              alpha * acc[3] + beta * o.w);
            }
            __stcs(p, v);
          } else {
            store_segment<V, true>(c, c_order, row, j, n, ldc, alpha, acc, beta, rs, re);
          }
        }
        e = se;
      }
      rs = re;
    }
  }
}

// TRANSPOSE_B, step 1: t[kk * ldt + j] = B(kk, j) = b[j * ldb + kk] for kk < k, j < n, and 0 for
// n <= j < ldt (the float4 padding NNZ_PAIRS reads but never stores). 32 x 32 tiles through shared
// memory (33 columns: no bank conflicts), both the reads (along k) and the writes (along j) coalesced.
constexpr int kTile = 32, kTileRows = 8;
__global__ void __launch_bounds__(kTile * kTileRows)
transpose_col_to_row(int64_t k, int64_t n, const float* __restrict__ b, int64_t ldb, float* __restrict__ t,
                     int64_t ldt) {
  __shared__ float tile[kTile][kTile + 1];  // [j - j0][kk - k0]
  const int64_t k0 = int64_t(blockIdx.x) * kTile;
  for (int64_t j0 = int64_t(blockIdx.y) * kTile; j0 < ldt; j0 += int64_t(gridDim.y) * kTile) {
#pragma unroll
    for (int i = 0; i < kTile; i += kTileRows) {
      const int64_t kk = k0 + threadIdx.x, j = j0 + threadIdx.y + i;
      tile[threadIdx.y + i][threadIdx.x] = kk < k && j < n ? __ldg(b + j * ldb + kk) : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; i += kTileRows) {
      const int64_t kk = k0 + threadIdx.y + i, j = j0 + threadIdx.x;
      if (kk < k && j < ldt) t[kk * ldt + j] = tile[threadIdx.x][threadIdx.y + i];
    }
    __syncthreads();  // the tile is rewritten by the next j0
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Row stride of the transposed B in TRANSPOSE_B's workspace: n rounded up to 4 (float4 rows).
int64_t transposed_ld(int64_t n) { return (n + 3) / 4 * 4; }

// NNZ_SPLIT (pairs == false) or NNZ_PAIRS over B in b_order, C stored in c_order. NNZ_PAIRS: the
// JHDNN_SPMM_PAIRS kernel (deep4 by default, deep, or classic <16, 4>) for a row-major, float4-readable B
// (see spmm_nnz_pairs; b_padded: rows zero-padded to ldb), <8, 1>
// for a column-major B; a row-major B that is not float4-readable runs NNZ_SPLIT.
Status launch_nnz(cudaStream_t s, bool pairs, const jhdnnSparseMatrixStruct& a, int64_t n, jhdnnOrder_t b_order,
                  const float* b, int64_t ldb, bool b_padded, jhdnnOrder_t c_order, float alpha, float beta, float* c,
                  int64_t ldc) {
  const int64_t m = a.rows;
  const bool b_row = b_order == JHDNN_ORDER_ROW;
  const bool rm4 = b_row && ldb % 4 == 0 && aligned16(b) && (n % 4 == 0 || b_padded);
  // The NNZ_PAIRS kernel for a row-major B (JHDNN_SPMM_PAIRS), refused before C is touched.
  const core::config::SpmmPairs kind = pairs && rm4 ? core::config::spmm_pairs() : core::config::SpmmPairs::kClassic;
  if (kind == core::config::SpmmPairs::kInvalid)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "JHDNN_SPMM_PAIRS=%s: expected deep4, deep or classic",
                      core::config::spmm_pairs_bad_value());
  split_rows_prepare<<<unsigned((m + kWarps - 1) / kWarps), kBlock, 0, s>>>(m, n, a.row_ptr, c_order, beta, c, ldc);
  JHDNN_LAUNCH_CHECK();
  if (a.nnz == 0) return Status::success();
  const int64_t warps = (a.nnz + kChunk - 1) / kChunk;
  const int64_t xblocks = (warps + kWarps - 1) / kWarps;
  if (xblocks > INT32_MAX) return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "nnz is too large");
  if (pairs && (rm4 || !b_row)) {
    const int64_t bands = rm4 ? (n + 63) / 64 : (n + 7) / 8;
    const dim3 grid{unsigned(xblocks), unsigned(std::min<int64_t>(bands, 65535)), 1u};
    auto launch = [&](auto kernel) {
      kernel<<<grid, kBlock, 0, s>>>(m, n, a.nnz, a.row_ptr, a.col_ind, a.values, b_order, b, ldb, c_order, alpha,
                                     beta, c, ldc);
    };
    if (kind == core::config::SpmmPairs::kClassic) {
      rm4 ? launch(spmm_nnz_pairs<16, 4>) : launch(spmm_nnz_pairs<8, 1>);
    } else {  // the deep kernels (row-major B only): the same grid
      // Row-major C with 16-byte rows: the rows inside one chunk are stored as float4 (see spmm_nnz_deep).
      const bool c_vec4 = c_order == JHDNN_ORDER_ROW && ldc % 4 == 0 && aligned16(c);
      auto deep = [&](auto kernel) {
        kernel<<<grid, kBlock, 0, s>>>(m, n, a.nnz, a.row_ptr, a.col_ind, a.values, b, ldb, c_order, c_vec4, alpha,
                                       beta, c, ldc);
      };
      kind == core::config::SpmmPairs::kDeep ? deep(spmm_nnz_deep<8>) : deep(spmm_nnz_deep<4>);
    }
    JHDNN_LAUNCH_CHECK();
    return Status::success();
  }
  // Vector width: the widest that divides n, ldb and B's alignment, but no wider than n needs
  // (n = 64 with float4 would leave half the lanes idle). C is stored element by element.
  int v = 1;
  if (b_row) {
    auto fits = [&](int q) { return n % q == 0 && ldb % q == 0 && reinterpret_cast<uintptr_t>(b) % (4 * q) == 0; };
    if (n >= 128 && fits(4)) v = 4;
    else if (n >= 64 && fits(2)) v = 2;
  }
  const int64_t bands = (n + 32 * v - 1) / (32 * v);
  const dim3 grid{unsigned(xblocks), unsigned(std::min<int64_t>(bands, 65535)), 1u};
  auto launch = [&](auto kernel) {
    kernel<<<grid, kBlock, 0, s>>>(m, n, a.nnz, a.row_ptr, a.col_ind, a.values, b_order, b, ldb, c_order, alpha, beta,
                                   c, ldc);
  };
  v == 4 ? launch(spmm_nnz_split<4>) : v == 2 ? launch(spmm_nnz_split<2>) : launch(spmm_nnz_split<1>);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace

Status load_spmm_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_thread_row));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_rm<1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_rm<4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_rows_rm<1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_rows_rm<4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_warp_row_cm));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, split_rows_prepare));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_split<1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_split<2>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_split<4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_pairs<16, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_pairs<8, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_deep<8>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, spmm_nnz_deep<4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, transpose_col_to_row));
  return Status::success();
}

int64_t spmm_workspace_bytes(jhdnnSpMMAlg_t algo, int64_t k, int64_t n, jhdnnOrder_t order) {
  if (order != JHDNN_ORDER_COL || (algo != JHDNN_SPMM_ALG_TRANSPOSE_B && algo != JHDNN_SPMM_ALG_DEFAULT)) return 0;
  const int64_t ldt = transposed_ld(n);
  if (k > 0 && ldt > (INT64_MAX / 4) / k) return -1;
  return k * ldt * 4;
}

jhdnnSpMMAlg_t spmm_choose(jhdnnSpMMAlg_t algo, int64_t k, int64_t n, jhdnnOrder_t order, size_t ws_size) {
  if (algo != JHDNN_SPMM_ALG_DEFAULT) return algo;
  if (order == JHDNN_ORDER_COL) {
    // In place, a column-major B costs a 32-byte sector per (nonzero, column); the transposed copy
    // costs 8 bytes per element of B once. Without the workspace: NNZ_PAIRS <8, 1> (balanced, and
    // its 8-column sweep keeps the B sectors in L2).
    const int64_t need = spmm_workspace_bytes(JHDNN_SPMM_ALG_TRANSPOSE_B, k, n, order);
    return need >= 0 && uint64_t(need) <= ws_size ? JHDNN_SPMM_ALG_TRANSPOSE_B : JHDNN_SPMM_ALG_NNZ_PAIRS;
  }
  // Row-major: wide B (n >= 512, the challenge layers' 60000 columns) is a row sweep per band
  // (WARP_ROW_WIDE); narrow B (power-law, n = 64) needs the nonzero-balanced NNZ_PAIRS, and so does a B
  // of more bands than a grid's y dimension holds (NNZ_PAIRS walks its bands, WARP_ROW_WIDE does not).
  return n >= 512 && (n + kBand - 1) / kBand <= 65535 ? JHDNN_SPMM_ALG_WARP_ROW_WIDE : JHDNN_SPMM_ALG_NNZ_PAIRS;
}

Status spmm(cudaStream_t s, jhdnnSpMMAlg_t algo, float alpha, const jhdnnSparseMatrixStruct& a, int64_t n,
            jhdnnOrder_t order, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, void* ws,
            size_t ws_size) {
  const int64_t m = a.rows;
  if (m == 0 || n == 0) return Status::success();
  algo = spmm_choose(algo, a.cols, n, order, ws_size);
  switch (algo) {
    case JHDNN_SPMM_ALG_THREAD_ROW: {
      spmm_thread_row<<<unsigned((m + kBlock - 1) / kBlock), kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values,
                                                                            order, b, ldb, alpha, beta, c, ldc);
      break;
    }
    case JHDNN_SPMM_ALG_WARP_ROW:
    case JHDNN_SPMM_ALG_WARP_ROW_WIDE: {
      const bool wide = algo == JHDNN_SPMM_ALG_WARP_ROW_WIDE;
      const unsigned grid = unsigned((m + kWarps - 1) / kWarps);
      const unsigned grid_wide = unsigned((m + kWarps * kGroup - 1) / (kWarps * kGroup));
      const unsigned bands = unsigned((n + kBand - 1) / kBand);
      if (order == JHDNN_ORDER_ROW && bands > 65535)  // (one band per blockIdx.y; column-major has no bands)
        return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                          "n (%lld) is too large for WARP_ROW / WARP_ROW_WIDE with a row-major B (at most 65535 "
                          "bands of %d columns; NNZ_SPLIT, NNZ_PAIRS and DEFAULT take it)",
                          (long long)n, kBand);
      auto launch = [&](auto kernel) {
        const dim3 g{wide ? grid_wide : grid, bands, 1u};
        kernel<<<g, kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values, b, ldb, alpha, beta, c, ldc, a.row_order);
      };
      if (order == JHDNN_ORDER_COL) {
        spmm_warp_row_cm<<<grid, kBlock, 0, s>>>(m, n, a.row_ptr, a.col_ind, a.values, b, ldb, alpha, beta, c, ldc,
                                                 a.row_order);
      } else if (n % 4 == 0 && ldb % 4 == 0 && ldc % 4 == 0 && aligned16(b) && aligned16(c)) {
        wide ? launch(spmm_warp_rows_rm<4>) : launch(spmm_warp_row_rm<4>);
      } else {
        wide ? launch(spmm_warp_rows_rm<1>) : launch(spmm_warp_row_rm<1>);
      }
      break;
    }
    case JHDNN_SPMM_ALG_NNZ_SPLIT:
    case JHDNN_SPMM_ALG_NNZ_PAIRS:
      return launch_nnz(s, algo == JHDNN_SPMM_ALG_NNZ_PAIRS, a, n, order, b, ldb, false, order, alpha, beta, c, ldc);
    case JHDNN_SPMM_ALG_TRANSPOSE_B: {
      if (order == JHDNN_ORDER_ROW)  // B is already row-major: nothing to transpose
        return launch_nnz(s, true, a, n, order, b, ldb, false, order, alpha, beta, c, ldc);
      // The API checked ws_size >= spmm_workspace_bytes and the 256-byte alignment.
      const int64_t k = a.cols, ldt = transposed_ld(n);
      float* t = static_cast<float*>(ws);
      const int64_t jtiles = (ldt + kTile - 1) / kTile;
      const dim3 tgrid{unsigned((k + kTile - 1) / kTile), unsigned(std::min<int64_t>(jtiles, 65535)), 1u};
      transpose_col_to_row<<<tgrid, dim3(kTile, kTileRows, 1), 0, s>>>(k, n, b, ldb, t, ldt);
      JHDNN_LAUNCH_CHECK();
      return launch_nnz(s, true, a, n, JHDNN_ORDER_ROW, t, ldt, true, JHDNN_ORDER_COL, alpha, beta, c, ldc);
    }
    default:
      return core::fail(JHDNN_STATUS_BAD_PARAM, "unknown SpMM algorithm %d", int(algo));
  }
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace jhdnn::sparse
