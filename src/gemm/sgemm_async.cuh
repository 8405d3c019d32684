// The library SGEMM's fast path (series step 10, see README.md): step 09's cp.async pipeline made
// general, with a deeper K tile and an optional deterministic split-K over a thread-block cluster.
//
//   block tile (64 kWm) x (32 kWn), K tile 16, kWm x kWn warps of 64 x 32, each thread an 8 x 8
//   outer product (two 4-wide groups in m and in n, 32 / 16 apart: fragments load as float4, a
//   warp's A reads are 8 distinct float4 = 128 contiguous bytes, its B reads 4, no bank conflict);
//   both operands staged in shared memory as [k][m] / [k][n] rows padded by 4 floats, 4 stages of
//   cp.async (3 K tiles in flight, no registers held for them);
//   an operand contiguous along m / n ("MN-major": A not transposed, B transposed) is copied as
//   16-byte vectors (needs ld % 4 == 0 and a 16-byte aligned start, which the host checks), or,
//   for an A that is not so aligned (kAVec = 1: odd lda such as m = 1 or 8191), as 4-byte copies
//   with a warp covering 32 consecutive rows (128 contiguous bytes);
//   an operand contiguous along k ("K-major") is transposed on the way in by 4-byte copies: 8
//   consecutive threads copy 8 consecutive k of one row, and the padded row puts a warp's 32
//   stores in 32 different banks (4 k + i mod 32 all differ);
//   tiles fully inside the matrix issue unpredicated copies; edge tiles (m, n or k tail) zero-fill
//   what lies outside (cp.async's src-size operand) and never form an address outside the matrix.
//
// Split-K (kSplit instantiations, cluster launch of p.split CTAs along x): the CTAs of one
// cluster compute the same output tile over consecutive K ranges, park their accumulators in
// their own shared memory, and after a cluster barrier each finalizes 1/split of the tile by
// summing the split partials in rank order through distributed shared memory. Deterministic (a
// fixed summation order), no workspace, no atomics.
#pragma once

#include <cstdint>

#include <cooperative_groups.h>

#include "gemm/epilogue.cuh"

namespace jhdnn::gemm::async {

constexpr int kBK = 16, kStages = 4, kPad = 4;

__host__ __device__ constexpr int tile_m(int wm) { return 64 * wm; }
__host__ __device__ constexpr int tile_n(int wn) { return 32 * wn; }
__host__ __device__ constexpr int threads(int wm, int wn) { return 32 * wm * wn; }
// Dynamic shared memory of one CTA: kStages stages of both padded tiles.
__host__ __device__ constexpr int smem_bytes(int wm, int wn) {
  return kStages * kBK * (tile_m(wm) + kPad + tile_n(wn) + kPad) * 4;
}
// Blocks per SM the register budget is sized for (<= 128 registers per thread).
__host__ __device__ constexpr int min_blocks(int wm, int wn) { return 512 / threads(wm, wn); }

struct Params {
  int m, n, k;
  int tiles_m, tiles_n;
  int split;        // CTAs per output tile (the cluster size); 1: no split
  int k_per_split;  // K range of one split CTA, a multiple of kBK
  const float* a;
  const float* b;
  float* c;
  int64_t lda, ldb, ldc;
  int64_t batch_count, batch_inner;
  int64_t a_outer, a_inner, b_outer, b_inner, c_outer, c_inner;
  bool c_vec;  // C, ldc and C's batch strides allow aligned float4 stores
};

__device__ __forceinline__ void cp_async16(unsigned s, const float* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g) : "memory");
}
// Copies `bytes` (0, 4, 8, 12 or 16) and zero-fills the rest of the 16.
__device__ __forceinline__ void cp_async16_zfill(unsigned s, const float* g, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned s, const float* g) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(g) : "memory");
}
__device__ __forceinline__ void cp_async4_zfill(unsigned s, const float* g, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(g), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Stages (kBK x kRows) tiles of operand X, element (i, kk) at X[i * si + kk * sk] (K-major:
// sk == 1, si == ld; MN-major: si == 1, sk == ld), into a ring of shared [kBK][kRows + kPad] tiles.
// kVec (MN-major only): floats per copy, 4 (16-byte copies) or 1 (4-byte copies, any alignment).
template <bool kKMajor, int kRows, int kT, int kVec = 4>
struct Loader {
  static_assert(kVec == 4 || kVec == 1, "16- or 4-byte copies");
  static constexpr int kLd = kRows + kPad;
  static constexpr int kStageFloats = kBK * kLd;
  // MN-major: one kVec-float vector per copy; kVecs vectors per k row, kKStep k rows per round.
  static constexpr int kVecs = kRows / kVec;
  static constexpr int kKStep = kT / kVecs;
  // K-major: 8 threads per row along k (two halves of the 16), kIStep rows per round.
  static constexpr int kIStep = kT / 8;
  static constexpr int kCopies = kKMajor ? 2 * kRows / kIStep : kBK / kKStep;
  static_assert(kBK == 16, "the K-major map covers k in two halves of 8");
  static_assert(kKMajor ? (kT % 8 == 0 && kRows % kIStep == 0 && kIStep % 4 == 0)
                        : (kT % kVecs == 0 && kBK % kKStep == 0),
                "thread map must tile exactly");
  static_assert(kRows % 32 == 0, "the conflict-free K-major stores need kLd % 32 == 4");

  // Few members on purpose: they stay live through the main loop next to 64 accumulators and
  // 16 fragment registers, under the 128-register cap. (i0, k0) are recomputed from tid.
  const float* g;  // this thread's first element of the next tile to issue
  int64_t step;    // global distance between this thread's copy rounds
  unsigned s0;     // shared byte address of this thread's first element in stage 0

  static __device__ __forceinline__ int i0(int tid) { return kKMajor ? tid / 8 : (tid % kVecs) * kVec; }
  static __device__ __forceinline__ int k0(int tid) { return kKMajor ? tid % 8 : tid / kVecs; }

  __device__ __forceinline__ void init(const float* mat, int64_t ld, int tile_i0, int k_begin, unsigned stage0,
                                       int tid) {
    g = kKMajor ? mat + (int64_t(tile_i0) + i0(tid)) * ld + k_begin + k0(tid)
                : mat + int64_t(tile_i0) + i0(tid) + (int64_t(k_begin) + k0(tid)) * ld;
    step = int64_t(kKMajor ? kIStep : kKStep) * ld;
    s0 = stage0 + 4u * unsigned(k0(tid) * kLd + i0(tid));
  }

  // Copy c: K-major copies are (k half c % 2, row round c / 2); MN-major copies are k rounds.
  static __device__ __forceinline__ int c_i(int c) { return kKMajor ? (c / 2) * kIStep : 0; }
  static __device__ __forceinline__ int c_k(int c) { return kKMajor ? (c % 2) * 8 : c * kKStep; }
  __device__ __forceinline__ int64_t c_g(int c) const { return kKMajor ? (c % 2) * 8 + (c / 2) * step : c * step; }
  static __device__ __forceinline__ unsigned c_s(int c) {
    return 4u * unsigned(kKMajor ? (c % 2) * 8 * kLd + (c / 2) * kIStep : c * kKStep * kLd);
  }

  // Issues the next K tile into `stage`. guarded: check every copy against rows_left (matrix rows
  // from the tile's first row on) and k_left (the K extent left from this tile's first k),
  // zero-filling what lies outside; an outside copy names `safe` (an address inside the operand,
  // a kernel parameter so it costs no register) with src-size 0.
  __device__ __forceinline__ void issue(int stage, bool guarded, int rows_left, int k_left, int tid,
                                        const float* safe) {
    const unsigned s = s0 + unsigned(stage * kStageFloats * 4);
    if (!guarded) {
#pragma unroll
      for (int c = 0; c < kCopies; ++c) {
        if (kKMajor || kVec == 1) cp_async4(s + c_s(c), g + c_g(c));
        else cp_async16(s + c_s(c), g + c_g(c));
      }
    } else {
      const int i = i0(tid), k = k0(tid);
#pragma unroll
      for (int c = 0; c < kCopies; ++c) {
        const bool k_ok = k + c_k(c) < k_left;
        if (kKMajor) {
          const bool ok = k_ok && i + c_i(c) < rows_left;
          cp_async4_zfill(s + c_s(c), ok ? g + c_g(c) : safe, ok ? 4 : 0);
        } else {
          int r = rows_left - i;  // valid elements of this kVec-vector
          r = r < 0 ? 0 : (r > kVec ? kVec : r);
          const bool ok = k_ok && r > 0;
          if (kVec == 1) cp_async4_zfill(s + c_s(c), ok ? g + c_g(c) : safe, ok ? 4 : 0);
          else cp_async16_zfill(s + c_s(c), ok ? g + c_g(c) : safe, ok ? 4 * r : 0);
        }
      }
    }
    // Next K tile: kBK further along k.
    if (kKMajor) g += kBK;
    else g += (kBK / kKStep) * step;
  }
};

// kSplit: compiled separately, because the split-K epilogue's live state would push the plain
// kernel's main loop past 128 registers (spills, measured with -Xptxas -v).
// kAVec: 4, or 1 for an m-contiguous A without 16-byte alignment (see Loader).
template <bool kAKMajor, bool kBKMajor, int kWm, int kWn, bool kSplit, class Epi, int kAVec = 4>
__global__ void __launch_bounds__(threads(kWm, kWn), min_blocks(kWm, kWn)) sgemm_async_kernel(Params p, Epi epi) {
  constexpr int kBM = tile_m(kWm), kBN = tile_n(kWn), kT = threads(kWm, kWn);
  using LoaderA = Loader<kAKMajor, kBM, kT, kAVec>;
  using LoaderB = Loader<kBKMajor, kBN, kT>;
  constexpr int kLdA = LoaderA::kLd, kLdB = LoaderB::kLd;
  static_assert(kBM * kBN <= kStages * (LoaderA::kStageFloats + LoaderB::kStageFloats),
                "the split-K partial tile reuses the pipeline's shared memory");
  extern __shared__ __align__(16) float smem[];
  float* const as = smem;                                   // [kStages][kBK][kLdA]
  float* const bs = smem + kStages * LoaderA::kStageFloats;  // [kStages][kBK][kLdB]

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = warp % kWm, warp_n = warp / kWm;
  const int lane_m = lane % 8, lane_n = lane / 8;   // 8 x 4 lanes, each 2 x 2 groups of 4 x 4
  const int frag_m = warp_m * 64 + lane_m * 4;      // + {0, 32}
  const int frag_n = warp_n * 32 + lane_n * 4;      // + {0, 16}
  const unsigned as_s = static_cast<unsigned>(__cvta_generic_to_shared(as));
  const unsigned bs_s = static_cast<unsigned>(__cvta_generic_to_shared(bs));

  // One work item (batch, output tile) per CTA, or per cluster of `split` CTAs (the grid is
  // split * tiles * batches; the host keeps it <= INT_MAX).
  const int split = kSplit ? p.split : 1;
  const int64_t work = kSplit ? blockIdx.x / split : blockIdx.x;
  const int rank = kSplit ? int(blockIdx.x % split) : 0;
  const int64_t tiles = int64_t(p.tiles_m) * p.tiles_n;
  {
    const int64_t batch = work / tiles;
    const int64_t tile = work % tiles;
    const int m0 = int(tile % p.tiles_m) * kBM;  // m fastest: neighbouring blocks share B's tile
    const int n0 = int(tile / p.tiles_m) * kBN;
    const int64_t bo = batch / p.batch_inner, bi = batch % p.batch_inner;
    const float* a = p.a + bo * p.a_outer + bi * p.a_inner;
    const float* b = p.b + bo * p.b_outer + bi * p.b_inner;
    float* c = p.c + bo * p.c_outer + bi * p.c_inner;
    const int m_left = p.m - m0, n_left = p.n - n0;

    // This CTA's K range [k_begin, k_end).
    const int k_begin = rank * p.k_per_split;
    const int k_end = kSplit ? min(p.k, k_begin + p.k_per_split) : p.k;
    const int k_len = k_end > k_begin ? k_end - k_begin : 0;
    const int k_tiles = k_len / kBK + (k_len % kBK != 0);

    LoaderA la;
    LoaderB lb;
    la.init(a, p.lda, m0, k_begin, as_s, tid);
    lb.init(b, p.ldb, n0, k_begin, bs_s, tid);
    const bool interior = m_left >= kBM && n_left >= kBN;

    // Prologue: kStages - 1 tiles in flight. Every thread commits one group per tile slot, empty
    // or not, so the wait_group counts line up.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles) {
        const int k_left = k_len - s * kBK;
        const bool guarded = !interior || k_left < kBK;
        la.issue(s, guarded, m_left, k_left, tid, p.a);
        lb.issue(s, guarded, n_left, k_left, tid, p.b);
      }
      cp_async_commit();
    }

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    for (int kt = 0; kt < k_tiles; ++kt) {
      cp_async_wait<kStages - 2>();  // this thread's copies of tile kt have landed...
      __syncthreads();               // ...and everyone's; stage (kt - 1) % kStages is free again
      const int next = kt + kStages - 1;
      if (next < k_tiles) {
        const int k_left = k_len - next * kBK;
        const bool guarded = !interior || k_left < kBK;
        la.issue(next % kStages, guarded, m_left, k_left, tid, p.a);
        lb.issue(next % kStages, guarded, n_left, k_left, tid, p.b);
      }
      cp_async_commit();
      const float* sa = as + (kt % kStages) * LoaderA::kStageFloats;
      const float* sb = bs + (kt % kStages) * LoaderB::kStageFloats;
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
    }
    cp_async_wait<0>();  // only empty groups can be pending here; keep the invariant explicit

    const bool reads_c = epi.reads_c();
    if constexpr (!kSplit) {
      store_fragment_8x8(epi, reads_c, acc, c, p, m0, n0, frag_m, frag_n, m_left, n_left);
    } else {
      // Split-K: park the partial tile as [n][m] (column-major, ld kBM) in this CTA's shared
      // memory, then each CTA sums 1/split of the tile over the cluster in rank order.
      namespace cg = cooperative_groups;
      cg::cluster_group cluster = cg::this_cluster();
      __syncthreads();  // every warp is done reading the pipeline stages
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int nl = frag_n + (j < 4 ? j : 12 + j);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int ml = frag_m + h * 32;
          *reinterpret_cast<float4*>(smem + nl * kBM + ml) =
              make_float4(acc[h * 4 + 0][j], acc[h * 4 + 1][j], acc[h * 4 + 2][j], acc[h * 4 + 3][j]);
        }
      }
      cluster.sync();  // every CTA's partial tile is written and visible cluster-wide
      const int chunk = kBM * kBN / split;  // split is a power of two <= 8: divides the tile
      for (int e = rank * chunk + tid * 4; e < (rank + 1) * chunk; e += kT * 4) {
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int r = 0; r < split; ++r) {  // fixed order: deterministic
          const float4 q = *reinterpret_cast<const float4*>(cluster.map_shared_rank(smem, r) + e);
          v.x += q.x, v.y += q.y, v.z += q.z, v.w += q.w;
        }
        const int ml = e % kBM, nl = e / kBM;  // 4 consecutive rows of one column
        if (nl >= n_left || ml >= m_left) continue;
        const int64_t col = int64_t(n0) + nl, row = int64_t(m0) + ml;
        float* cp = c + col * p.ldc + row;
        const float vs[4] = {v.x, v.y, v.z, v.w};
        if (p.c_vec && ml + 3 < m_left) {
          float4 old = make_float4(0.f, 0.f, 0.f, 0.f);
          if (reads_c) old = *reinterpret_cast<const float4*>(cp);
          float4 o;
          o.x = epi(row + 0, col, vs[0], old.x);
          o.y = epi(row + 1, col, vs[1], old.y);
          o.z = epi(row + 2, col, vs[2], old.z);
          o.w = epi(row + 3, col, vs[3], old.w);
          *reinterpret_cast<float4*>(cp) = o;
        } else {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            if (ml + i >= m_left) break;
            cp[i] = epi(row + i, col, vs[i], reads_c ? cp[i] : 0.f);
          }
        }
      }
      cluster.sync();  // no CTA exits (releasing its shared memory) while another reads it
    }
  }
}

}  // namespace jhdnn::gemm::async
