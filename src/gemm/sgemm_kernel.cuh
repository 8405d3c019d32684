// The library SGEMM kernel: series step 08 (see sgemm_series/) made general.
//
//   block tile 128 x kBN (kBN = 128, or 64 for n <= 64-ish problems), K tile 8, 2 * kBN threads
//   (warps as 2 (m) x kBN/32 (n), each warp 64 x 32),
//   each thread an 8 x 8 outer product (two 4-wide groups in m and in n, 32 / 16 apart, so the
//   fragments load as float4 and one warp reads 128 contiguous bytes per operand per k),
//   both operands staged in shared memory as [k][m] / [k][n] (A transposed on the way in),
//   rows padded by 4 floats so the transposing stores are bank-conflict free,
//   register double buffering: tile kt+1 is fetched from global memory while tile kt is computed,
//   predicated (zero-filled) loads and guarded stores, so any m, n, k, ld and alignment works.
//
// Operands are column-major after the row-major swap (gemm.h). Each is "K-major" when its
// elements are contiguous along k (A transposed, B not transposed) and "MN-major" otherwise; the
// two cases use different thread-to-element maps so that global loads stay coalesced.
#pragma once

#include <cstdint>

#include "gemm/epilogue.cuh"

namespace jhdnn::gemm::kernel {

constexpr int kBM = 128, kBN = 128, kBK = 8;  // kBN: the wide variant; kBN / 2 is the narrow one
constexpr int kPad = 4;  // keeps 16-byte alignment of rows; see the header comment

// Threads of the variant with block tile 128 x bn: one warp per 64 x 32 piece.
__host__ __device__ constexpr int threads_for(int bn) { return (kBM / 64) * (bn / 32) * 32; }

struct Params {
  int m, n, k;
  int tiles_m, tiles_n;
  const float* a;
  const float* b;
  float* c;
  int64_t lda, ldb, ldc;
  int64_t batch_count, batch_inner;
  int64_t a_outer, a_inner, b_outer, b_inner, c_outer, c_inner;
  bool c_vec;  // C and ldc allow aligned float4 stores
};

// Stages one (kBK x kRows) tile of an operand X whose element (i, kk) sits at
// X[i * stride_i + kk * stride_k]: for K-major X stride_k == 1, for MN-major stride_i == 1.
// `base` already points at element (tile_i0, k0); rows/cols past (rows_left, k_left) read as 0.
// kT threads share the tile, kLoads elements each.
template <bool kKMajor, int kRows, int kT>
struct TileLoader {
  static constexpr int kLoads = kRows * kBK / kT;
  static constexpr int kLd = kRows + kPad;
  static_assert(kT % kBK == 0 && kT % kRows == 0 && kLoads * kT == kRows * kBK, "thread map must tile exactly");

  const float* ptr;  // this thread's first element
  int64_t step;      // distance between this thread's 4 elements
  int64_t k_step;    // advance per K tile
  int i_off, k_off;  // this thread's (i, k) inside the tile
  int i_step_elems;  // i distance between its 4 elements (K-major) or 0

  __device__ void init(const float* base, int64_t ld, int tid) {
    if (kKMajor) {
      // 8 consecutive threads read 8 consecutive k (one 32-byte sector) of one row i.
      k_off = tid % kBK;
      i_off = tid / kBK;                  // 0 .. kT/8 - 1, then + kT/8 per load
      i_step_elems = kT / kBK;
      ptr = base + int64_t(i_off) * ld + k_off;
      step = int64_t(i_step_elems) * ld;
      k_step = kBK;
    } else {
      // A warp reads 32 consecutive i (128 bytes) of one k.
      i_off = tid % kRows;
      k_off = tid / kRows;                // 0 .. kT/kRows - 1, then + kT/kRows per load
      i_step_elems = 0;
      ptr = base + int64_t(k_off) * ld + i_off;
      step = int64_t(kT / kRows) * ld;
      k_step = int64_t(kBK) * ld;
    }
  }
  __device__ __forceinline__ void fetch(float (&r)[kLoads], int rows_left, int k_left) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int i = i_off + l * i_step_elems;
      const int kk = kKMajor ? k_off : k_off + l * (kT / kRows);
      r[l] = (i < rows_left && kk < k_left) ? __ldg(ptr + l * step) : 0.f;
    }
  }
  __device__ __forceinline__ void store(float* s, const float (&r)[kLoads]) const {
#pragma unroll
    for (int l = 0; l < kLoads; ++l) {
      const int i = i_off + l * i_step_elems;
      const int kk = kKMajor ? k_off : k_off + l * (kT / kRows);
      s[kk * kLd + i] = r[l];  // (kBK, kRows) tile, transposed for K-major operands
    }
  }
  __device__ __forceinline__ void advance() { ptr += k_step; }
};

// Blocks per SM the register budget is sized for: 2 x 256 or 4 x 128 threads, <= 128 registers.
template <int kBn>
__host__ __device__ constexpr int min_blocks() { return 512 / threads_for(kBn); }

template <bool kAKMajor, bool kBKMajor, int kBn, class Epi>
__global__ void __launch_bounds__(threads_for(kBn), min_blocks<kBn>()) sgemm_kernel(Params p, Epi epi) {
  constexpr int kT = threads_for(kBn);
  using LoaderA = TileLoader<kAKMajor, kBM, kT>;
  using LoaderB = TileLoader<kBKMajor, kBn, kT>;
  constexpr int kLdA = LoaderA::kLd, kLdB = LoaderB::kLd;
  __shared__ __align__(16) float as[2][kBK * kLdA];  // A tile, [k][m]
  __shared__ __align__(16) float bs[2][kBK * kLdB];  // B tile, [k][n]

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp % 2, warp_n = warp / 2;   // 2 x kBn/32 warps of 64 x 32
  const int lane_m = lane % 8, lane_n = lane / 8;   // 8 x 4 lanes, each 2 x 2 groups of 4 x 4
  const int frag_m = warp_m * 64 + lane_m * 4;      // + {0, 32}
  const int frag_n = warp_n * 32 + lane_n * 4;      // + {0, 16}

  const int64_t tiles = int64_t(p.tiles_m) * p.tiles_n;
  // Grid-stride over (batch, tile) so neither gridDim.y nor gridDim.z limits the problem.
  for (int64_t work = blockIdx.x; work < tiles * p.batch_count; work += gridDim.x) {
    const int64_t batch = work / tiles;
    const int64_t tile = work % tiles;
    const int m0 = int(tile % p.tiles_m) * kBM;  // m fastest: neighbouring blocks share B's tile
    const int n0 = int(tile / p.tiles_m) * kBn;
    const int64_t bo = batch / p.batch_inner, bi = batch % p.batch_inner;
    const float* a = p.a + bo * p.a_outer + bi * p.a_inner;
    const float* b = p.b + bo * p.b_outer + bi * p.b_inner;
    float* c = p.c + bo * p.c_outer + bi * p.c_inner;

    LoaderA la;
    LoaderB lb;
    la.init(a + (kAKMajor ? int64_t(m0) * p.lda : int64_t(m0)), p.lda, tid);
    lb.init(b + (kBKMajor ? int64_t(n0) * p.ldb : int64_t(n0)), p.ldb, tid);
    const int m_left = p.m - m0, n_left = p.n - n0;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    const int k_tiles = p.k / kBK + (p.k % kBK != 0);  // no overflow for k near 2^31
    float ra[LoaderA::kLoads], rb[LoaderB::kLoads];
    if (k_tiles > 0) {
      la.fetch(ra, m_left, p.k);
      lb.fetch(rb, n_left, p.k);
      la.store(as[0], ra);
      lb.store(bs[0], rb);
    }
    __syncthreads();

    for (int kt = 0; kt < k_tiles; ++kt) {
      const int cur = kt & 1;
      const bool more = kt + 1 < k_tiles;
      if (more) {  // fetch tile kt+1 now; its latency hides behind the math below
        la.advance();
        lb.advance();
        const int k_left = p.k - (kt + 1) * kBK;
        la.fetch(ra, m_left, k_left);
        lb.fetch(rb, n_left, k_left);
      }
      const float* sa = as[cur];
      const float* sb = bs[cur];
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        float fa[8], fb[8];
        *reinterpret_cast<float4*>(fa) = *reinterpret_cast<const float4*>(sa + kk * kLdA + frag_m);
        *reinterpret_cast<float4*>(fa + 4) = *reinterpret_cast<const float4*>(sa + kk * kLdA + frag_m + 32);
        *reinterpret_cast<float4*>(fb) = *reinterpret_cast<const float4*>(sb + kk * kLdB + frag_n);
        *reinterpret_cast<float4*>(fb + 4) = *reinterpret_cast<const float4*>(sb + kk * kLdB + frag_n + 16);
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(fa[i], fb[j], acc[i][j]);
      }
      if (more) {  // the other buffer was last read before the previous barrier
        la.store(as[cur ^ 1], ra);
        lb.store(bs[cur ^ 1], rb);
      }
      __syncthreads();
    }

    // Epilogue: column n of this thread holds 4 + 4 consecutive rows -> float4 when possible.
    const bool reads_c = epi.reads_c();
    store_fragment_8x8(epi, reads_c, acc, c, p, m0, n0, frag_m, frag_n, m_left, n_left);
  }
}

}  // namespace jhdnn::gemm::kernel
