// Hopper wgmma GEMM: kernel and host launcher. Design notes in README.md; the PTX wrappers are in
// src/core/sm90 (ptx.cuh, wgmma.cuh, tensor_map.h).
#include "gemm/hopper/gemm_wgmma.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/sm90/ptx.cuh"
#include "core/sm90/tensor_map.h"
#include "core/sm90/wgmma.cuh"

// In a build for more architectures than sm_90a, the device pass of every other architecture
// compiles an empty kernel body (see the kernel), leaving the helpers below unreferenced there.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#pragma nv_diag_suppress 177
#endif

namespace jhdnn::gemm::hopper {
namespace {

// ---------------------------------------------------------------- configuration

constexpr int kBM = 128;  // CTA tile rows (2 consumer warpgroups x 64)
constexpr int kBN = 256;  // CTA tile columns (one m64n256 wgmma per consumer per k16 step)
// k-block: 128 bytes of K = one 128B-swizzle row: 64 16-bit elements, 32 fp32 (tf32) elements.
// Every tile size in bytes below is therefore the same for all input types.
template <class TIn>
constexpr int kBKOf = 128 / int(sizeof(TIn));
constexpr int kKRowBytes = 128;
// One wgmma k step reads 32 bytes of K (k16 for 16-bit types, k8 for tf32).
constexpr int kKStepBytes = 32;
constexpr int kStages = 4;
constexpr int kConsumerWarpgroups = 2;
constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
constexpr int kGroupRows = 8;  // tile-rows per raster group (L2 reuse of B tiles)

constexpr uint32_t kABytes = kBM * kKRowBytes;  // 16 KiB
constexpr uint32_t kBBytes = kBN * kKRowBytes;  // 32 KiB
constexpr uint32_t kStageBytes = kABytes + kBBytes;
constexpr uint32_t kBChunkBytes = 64 * 64 * 2;  // K x N B (16-bit only): 64 columns x 64 k-rows (8 KiB)
// Stages, the full / empty barriers (8 bytes each), and slack to align the tiles to 1024 bytes
// (the 128B swizzle repeats every 1024 bytes; descriptors assume base offset 0).
constexpr size_t kSmemBytes = 1024 + size_t(kStages) * kStageBytes + 2 * kStages * 8;
static_assert(kSmemBytes <= 227 * 1024, "exceeds the 227 KiB of dynamic shared memory per block");

// Register budgets after setmaxnreg: the producer needs a handful, each consumer thread holds 128
// fp32 accumulators. 128 * 40 + 256 * 232 = 64512 <= 65536 registers per SM.
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;

// ---------------------------------------------------------------- epilogue

// out = alpha * acc + beta * c_old. reads_c() false (beta == 0) means C is never loaded, so NaN or
// garbage in C does not leak into the result (BLAS semantics).
struct EpilogueAlphaBeta {
  float alpha, beta;
  __device__ __forceinline__ bool reads_c() const { return beta != 0.0f; }
  __device__ __forceinline__ float operator()(float acc, float c_old) const {
    return reads_c() ? alpha * acc + beta * c_old : alpha * acc;
  }
};

__device__ __forceinline__ float load1(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load1(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ __forceinline__ float load1(const float* p) { return *p; }
__device__ __forceinline__ void store1(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ void store1(float* p, float v) { *p = v; }

__device__ __forceinline__ float2 load2(const __half* p) {
  return __half22float2(*reinterpret_cast<const __half2*>(p));
}
__device__ __forceinline__ float2 load2(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ float2 load2(const float* p) { return *reinterpret_cast<const float2*>(p); }
__device__ __forceinline__ void store2(__half* p, float a, float b) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float a, float b) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void store2(float* p, float a, float b) {
  *reinterpret_cast<float2*>(p) = make_float2(a, b);
}

// One k step (32 bytes of K) of the 64 x 256 block.
template <class TIn, int TransB>
__device__ __forceinline__ void wgmma_kstep(float (&acc)[128], uint64_t da, uint64_t db) {
  if constexpr (std::is_same_v<TIn, __half>) {
    sm90::WgmmaN<__half, 256>::run<TransB>(acc, da, db);
  } else if constexpr (std::is_same_v<TIn, __nv_bfloat16>) {
    sm90::WgmmaN<__nv_bfloat16, 256>::run<TransB>(acc, da, db);
  } else {
    static_assert(std::is_same_v<TIn, float> && TransB == 0, "tf32 wgmma reads K-major operands only");
    sm90::WgmmaN<float, 256>::run(acc, da, db);
  }
}

// ---------------------------------------------------------------- tile scheduler

// Linear tile index -> (tile row, tile column), walking groups of kGroupRows tile-rows column by
// column, so CTAs running at the same time share B tiles (and A tiles) in L2.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupRows * tiles_n;
  const int group = tile / per_group;
  const int first_m = group * kGroupRows;
  const int group_rows = min(tiles_m - first_m, kGroupRows);
  const int r = tile - group * per_group;
  tm = first_m + r % group_rows;
  tn = r / group_rows;
}

// ---------------------------------------------------------------- kernel

// Warpgroup 0: producer (one thread issues all TMA loads). Warpgroups 1, 2: consumers, each owning
// 64 rows of the 128 x 256 tile. Persistent: CTA b handles tiles b, b + gridDim.x, ...
// Pipeline counters run across tiles: iteration `it` uses stage it % kStages in round
// it / kStages, whose parity selects the barrier phase.
// BKN: B is given K x N (N contiguous) instead of N x K; its stage then holds 4 N-major chunks of
// 64 columns x 64 k-rows (8 KiB each), loaded by 4 TMA boxes, read with the transpose bit set.
template <class TIn, class TOut, class Epilogue, bool BKN>
__global__ void __launch_bounds__(kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                      TOut* __restrict__ c, int64_t ldc, int M, int N, int K, Epilogue epi, bool pair_ok) {
  constexpr int kBK = kBKOf<TIn>;
  static_assert(!BKN || sizeof(TIn) == 2, "B given K x N is supported for 16-bit types only");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (sm90::smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t smem_a = base;                          // kStages x [128 rows][128 B]
  const uint32_t smem_b = smem_a + kStages * kABytes;    // kStages x [256 rows][128 B]
  const uint32_t full_bar = smem_b + kStages * kBBytes;  // kStages mbarriers: "stage loaded"
  const uint32_t empty_bar = full_bar + kStages * 8;     // kStages mbarriers: "stage consumed"

  const int tiles_m = (M + kBM - 1) / kBM;
  const int tiles_n = (N + kBN - 1) / kBN;
  const int num_tiles = tiles_m * tiles_n;
  const int k_blocks = (K + kBK - 1) / kBK;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init(full_bar + 8 * s, 1);                            // the producer's arrive (+ tx bytes)
      sm90::mbar_init(empty_bar + 8 * s, kConsumerWarpgroups * 4);     // one arrive per consumer warp
    }
    sm90::mbar_fence_init();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------- producer
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      sm90::tma_prefetch_desc(&tm_a);
      sm90::tma_prefetch_desc(&tm_b);
      uint32_t it = 0;
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        int tm, tn;
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < k_blocks; ++kb, ++it) {
          const uint32_t s = it % kStages;
          const uint32_t parity = (it / kStages) & 1u;
          sm90::mbar_wait(empty_bar + 8 * s, parity ^ 1u);  // round 0 passes at once
          if constexpr (BKN) {
            // Only the 64-column chunks that start inside N are loaded. A chunk wholly past N
            // keeps stale data, which only reaches output columns >= N (column n of C depends
            // on column n of B alone), and those are never stored.
            const int chunks = min(kBN / 64, (N - tn * kBN + 63) / 64);
            sm90::mbar_arrive_expect_tx(full_bar + 8 * s, kABytes + uint32_t(chunks) * kBChunkBytes);
            sm90::tma_load_2d(smem_a + s * kABytes, &tm_a, full_bar + 8 * s, kb * kBK, tm * kBM);
            for (int q = 0; q < chunks; ++q)
              sm90::tma_load_2d(smem_b + s * kBBytes + q * kBChunkBytes, &tm_b, full_bar + 8 * s, tn * kBN + q * 64,
                               kb * kBK);
          } else {
            sm90::mbar_arrive_expect_tx(full_bar + 8 * s, kStageBytes);
            sm90::tma_load_2d(smem_a + s * kABytes, &tm_a, full_bar + 8 * s, kb * kBK, tm * kBM);
            sm90::tma_load_2d(smem_b + s * kBBytes, &tm_b, full_bar + 8 * s, kb * kBK, tn * kBN);
          }
        }
      }
    }
    return;
  }

  // ---------------- consumers
  sm90::setmaxnreg_inc<kConsumerRegs>();
  const int cw = warpgroup - 1;            // which 64-row half of the tile
  const int warp = (threadIdx.x % 128) / 32;
  const int lane = threadIdx.x % 32;
  float acc[128];
  uint32_t it = 0;
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    int tm, tn;
    tile_coords(tile, tiles_m, tiles_n, tm, tn);
#pragma unroll
    for (int r = 0; r < 128; ++r) acc[r] = 0.0f;

    for (int kb = 0; kb < k_blocks; ++kb, ++it) {
      const uint32_t s = it % kStages;
      sm90::mbar_wait(full_bar + 8 * s, (it / kStages) & 1u);
      // Lanes can leave the spin at different iterations (and the epilogue / the lane-0 arrives
      // diverge): reconverge explicitly before the .sync.aligned wgmma instructions.
      __syncwarp();
      // This consumer's 64 rows start 64 * 128 B = 8 KiB into the A stage (1024-aligned, so the
      // swizzle phase is unchanged). Each k step is 32 bytes further along the 128-byte row;
      // the hardware applies the 128B swizzle to the computed addresses.
      const uint32_t a_base = smem_a + s * kABytes + cw * (64 * 128);
      const uint32_t b_base = smem_b + s * kBBytes;
      sm90::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kKRowBytes / kKStepBytes; ++kk) {
        // K-major B: 32 bytes along the row per k16 step, like A. N-major B: 16 k-rows of 128 bytes
        // (two whole swizzle atoms, so the swizzle phase is unchanged).
        const uint64_t db = BKN ? sm90::make_desc_mn_sw128(b_base + kk * 16 * 128, kBChunkBytes)
                                : sm90::make_desc_k_sw128(b_base + kk * kKStepBytes);
        wgmma_kstep<TIn, BKN ? 1 : 0>(acc, sm90::make_desc_k_sw128(a_base + kk * kKStepBytes), db);
      }
      sm90::wgmma_commit();
      if (kb > 0) {
        // The previous k-block's wgmmas have finished reading their stage: hand it back.
        sm90::wgmma_wait<1>();
        if (lane == 0) sm90::mbar_arrive(empty_bar + 8 * ((it - 1) % kStages));
      }
    }
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int r = 0; r < 128; ++r) sm90::reg_fence(acc[r]);
    if (k_blocks > 0 && lane == 0) sm90::mbar_arrive(empty_bar + 8 * ((it - 1) % kStages));

    // Epilogue straight from the accumulator fragment: register 4j + 2h + e of thread (warp w,
    // lane 4g + t) is D(16w + g + 8h, 8j + 2t + e) of this consumer's 64 x 256 block.
    const int g = lane / 4, t = lane % 4;
    const bool reads_c = epi.reads_c();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = int64_t(tm) * kBM + cw * 64 + warp * 16 + g + 8 * h;
      if (row >= M) continue;
      TOut* crow = c + row * ldc;
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j) {
        const int col = tn * kBN + 8 * j + 2 * t;
        const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
        if (pair_ok && col + 1 < N) {
          float2 old = make_float2(0.0f, 0.0f);
          if (reads_c) old = load2(crow + col);
          store2(crow + col, epi(v0, old.x), epi(v1, old.y));
        } else {
          if (col < N) store1(crow + col, epi(v0, reads_c ? load1(crow + col) : 0.0f));
          if (col + 1 < N) store1(crow + col + 1, epi(v1, reads_c ? load1(crow + col + 1) : 0.0f));
        }
      }
    }
  }
#else
  // Compiled for an architecture without wgmma / setmaxnreg (a build for more than sm_90a): an
  // empty body. The launcher never runs it (it checks the kernel's PTX version first).
  (void)c, (void)ldc, (void)M, (void)N, (void)K, (void)epi, (void)pair_ok;
#endif
}

// ---------------------------------------------------------------- host side

bool is16(jhdnnDataType_t t) { return t == JHDNN_DATA_HALF || t == JHDNN_DATA_BFLOAT16; }
CUtensorMapDataType tma_type(jhdnnDataType_t t) {
  return t == JHDNN_DATA_HALF       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
         : t == JHDNN_DATA_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}
bool aligned(const void* p, size_t n) { return reinterpret_cast<uintptr_t>(p) % n == 0; }

template <class TIn, class TOut, bool BKN>
core::Status launch(const GemmArgs& a, cudaStream_t stream, int sm_count) {
  const CUtensorMapDataType tt = tma_type(a.ab_type);
  constexpr uint32_t es = sizeof(TIn), bk = kBKOf<TIn>;
  CUtensorMap map_a, map_b;
  JHDNN_TRY(sm90::encode_tma_2d(&map_a, tt, es, a.a, uint64_t(a.m), uint64_t(a.k), uint64_t(a.lda), kBM, bk));
  if (BKN)
    JHDNN_TRY(sm90::encode_tma_2d(&map_b, tt, es, a.b, uint64_t(a.k), uint64_t(a.n), uint64_t(a.ldb), bk, 64));
  else
    JHDNN_TRY(sm90::encode_tma_2d(&map_b, tt, es, a.b, uint64_t(a.n), uint64_t(a.k), uint64_t(a.ldb), kBN, bk));

  auto kernel = wgmma_gemm_kernel<TIn, TOut, EpilogueAlphaBeta, BKN>;
  // The device code exists only in the sm_90a image; on a library built without 90a the runtime
  // would pick (JIT) another architecture's empty body.
  cudaFuncAttributes fa{};
  cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
  if (e != cudaSuccess)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH, "hopper gemm: no kernel image for this device: %s",
                      cudaGetErrorString(e));
  if (fa.ptxVersion < 90)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
                      "hopper gemm: the library was not built for sm_90a (kernel image from compute_%d)", fa.ptxVersion);
  // Per call (the attribute is per device, and this costs far less than the GEMM).
  e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSmemBytes));
  if (e != cudaSuccess)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "hopper gemm: cudaFuncSetAttribute(%zu B smem): %s",
                      kSmemBytes, cudaGetErrorString(e));
  const int64_t tiles = ((a.m + kBM - 1) / kBM) * ((a.n + kBN - 1) / kBN);
  const int grid = int(tiles < sm_count ? tiles : sm_count);
  TOut* c = static_cast<TOut*>(a.c);
  const bool pair_ok = a.ldc % 2 == 0 && aligned(c, 2 * sizeof(TOut));
  kernel<<<grid, kThreads, kSmemBytes, stream>>>(map_a, map_b, c, a.ldc, int(a.m), int(a.n), int(a.k),
                                                 EpilogueAlphaBeta{a.alpha, a.beta}, pair_ok);
  e = cudaGetLastError();
  if (e != cudaSuccess)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "hopper gemm: kernel launch: %s", cudaGetErrorString(e));
  return core::Status::success();
}

template <bool BKN>
core::Status dispatch_types(const GemmArgs& a, cudaStream_t stream, int sms) {
  if (a.ab_type == JHDNN_DATA_HALF)
    return a.c_type == JHDNN_DATA_FLOAT ? launch<__half, float, BKN>(a, stream, sms)
                                        : launch<__half, __half, BKN>(a, stream, sms);
  return a.c_type == JHDNN_DATA_FLOAT ? launch<__nv_bfloat16, float, BKN>(a, stream, sms)
                                      : launch<__nv_bfloat16, __nv_bfloat16, BKN>(a, stream, sms);
}

}  // namespace

core::Status gemm_wgmma_check(const GemmArgs& a) {
  if (!is16(a.ab_type) && a.ab_type != JHDNN_DATA_FLOAT)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "hopper gemm: A/B type %s (HALF, BFLOAT16 or FLOAT (tf32) only)",
                      core::data_type_name(a.ab_type));
  if (a.c_type != a.ab_type && a.c_type != JHDNN_DATA_FLOAT)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "hopper gemm: C type %s with A/B %s (C must be %s or FLOAT)",
                      core::data_type_name(a.c_type), core::data_type_name(a.ab_type), core::data_type_name(a.ab_type));
  if (a.ab_type == JHDNN_DATA_FLOAT && a.b_kn)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT,
                      "hopper gemm: tf32 wgmma reads K-major operands only: B must be given N x K (b_kn = false)");
  if (a.m < 0 || a.n < 0 || a.k < 0)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "hopper gemm: negative size m=%lld n=%lld k=%lld", (long long)a.m,
                      (long long)a.n, (long long)a.k);
  const int64_t lim = int64_t(1) << 31;
  if (a.m >= lim || a.n >= lim || a.k >= lim)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "hopper gemm: m=%lld n=%lld k=%lld: each must be < 2^31",
                      (long long)a.m, (long long)a.n, (long long)a.k);
  if (a.m == 0 || a.n == 0) return core::Status::success();  // nothing to compute
  if (a.k == 0)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "hopper gemm: k == 0 (C = beta * C is left to the caller's general path)");
  if (a.a == nullptr || a.b == nullptr || a.c == nullptr)
    return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "hopper gemm: null A, B or C");
  if (a.lda < a.k || a.ldb < (a.b_kn ? a.n : a.k) || a.ldc < a.n)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "hopper gemm: lda=%lld (>= k=%lld) ldb=%lld (>= %s) ldc=%lld (>= n=%lld)",
                      (long long)a.lda, (long long)a.k, (long long)a.ldb, a.b_kn ? "n" : "k", (long long)a.ldc,
                      (long long)a.n);
  const int64_t ld_mult = 16 / int64_t(core::data_type_size(a.ab_type));  // 8 (16-bit) or 4 (fp32)
  if (a.lda % ld_mult != 0 || a.ldb % ld_mult != 0)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT,
                      "hopper gemm: lda=%lld, ldb=%lld must be multiples of %lld elements (TMA needs 16-byte row strides)",
                      (long long)a.lda, (long long)a.ldb, (long long)ld_mult);
  if (!aligned(a.a, 16) || !aligned(a.b, 16))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "hopper gemm: A and B must be 16-byte aligned for TMA");
  if (!aligned(a.c, core::data_type_size(a.c_type)))
    return core::fail(JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "hopper gemm: C is not aligned to its element size");
  const int64_t tiles = ((a.m + kBM - 1) / kBM) * ((a.n + kBN - 1) / kBN);
  if (tiles >= lim)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "hopper gemm: %lld tiles (must be < 2^31)", (long long)tiles);

  int dev = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "hopper gemm: device query: %s", cudaGetErrorString(e));
  if (major != 9 || minor != 0)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
                      "hopper gemm: needs an sm_90 device (wgmma / TMA, built for sm_90a); device is sm_%d%d", major,
                      minor);
  return core::Status::success();
}

core::Status gemm_wgmma(const GemmArgs& a, cudaStream_t stream) {
  JHDNN_TRY(gemm_wgmma_check(a));
  if (a.m == 0 || a.n == 0) return core::Status::success();
  int dev = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "hopper gemm: device query: %s", cudaGetErrorString(e));

  if (a.ab_type == JHDNN_DATA_FLOAT) return launch<float, float, false>(a, stream, sms);  // tf32
  if (a.b_kn) return dispatch_types<true>(a, stream, sms);
  return dispatch_types<false>(a, stream, sms);
}

}  // namespace jhdnn::gemm::hopper
