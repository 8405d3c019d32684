// Generation 2 of the tensor-core GEMM (sm_90a): wgmma fed by TMA bulk tensor copies through an
// mbarrier pipeline, warp-specialized, persistent. See README.md in this folder.
//
// Block: 3 warpgroups (384 threads). Warpgroup 0 is the producer: one thread issues, per
// reduction block, two TMA copies (a 128 x 128-byte box of A and of B, 128-byte swizzled) into a
// free stage and tells the stage's "full" mbarrier how many bytes to expect. Warpgroups 1 and 2
// are consumers: each waits for a full stage, runs four wgmma m64n128 (k16 for fp16/bf16, k8 for
// TF32) on its 64 rows of A and all 128 rows of B straight from shared memory, and, once the
// wgmmas that read the previous stage have completed, arrives on that stage's "empty" mbarrier so
// the producer may refill it. The grid is one block per SM; each block walks the output tiles
// tile = blockIdx.x, + gridDim.x, ... (a persistent scheduler, grouped by 8 tile rows for L2
// reuse), so the producer is already loading the next tile while the consumers store this one.
#include "gemm/tensorcore/gemm_tc.h"

#include <algorithm>
#include <atomic>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/mma_sm80.cuh"
#include "core/sm90/ptx.cuh"
#include "core/sm90/tensor_map.h"
#include "core/sm90/wgmma.cuh"
#include "core/cuda_check.h"

namespace jhdnn::gemm::tensorcore {
namespace {

using namespace jhdnn::tc;

constexpr int kBM = 128, kBN = 128;       // block tile
constexpr int kRowBytes = 128;            // reduction bytes per stage row = the swizzle span
constexpr int kStages = 6;
constexpr int kTileBytes = kBM * kRowBytes;  // one operand's stage (kBM == kBN)
constexpr int kStageBytes = 2 * kTileBytes;  // A + B: 32 KiB
constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment slack for the 1024-byte swizzle atom
constexpr int kConsumers = 2;             // consumer warpgroups, 64 rows each
constexpr int kThreads = 128 * (1 + kConsumers);
constexpr int kGroupM = 8;                // tile rows per raster group

// Tile index -> (tile row, tile column), kGroupM tile rows at a time so blocks running together
// share B tiles (and A tiles) in L2.
__device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupM * tiles_n;
  const int group = tile / per_group;
  const int first_m = group * kGroupM;
  const int rows = min(kGroupM, tiles_m - first_m);
  const int in_group = tile % per_group;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, T* c,
                      int M, int N, int K, int64_t ldc, float alpha, float beta) {
#if JHDNN_WGMMA_OK
  constexpr int kBK = kRowBytes / int(sizeof(T));  // reduction elements per stage
  constexpr int kStep = 32;                        // bytes of reduction per wgmma (k16 / k8)
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = tc::smem_addr(smem_raw);
  const uint32_t tiles = (raw + 1023) & ~uint32_t(1023);  // 1024-aligned: the swizzle atom

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbar_init_no_clobber(tc::smem_addr(&full[s]), 1);                  // the producer's expect_tx arrival
      sm90::mbar_init_no_clobber(tc::smem_addr(&empty[s]), kConsumers * 128);  // every consumer thread
    }
    sm90::mbar_fence_init();
  }
  __syncthreads();

  const int tiles_m = (M + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
  const int num_tiles = tiles_m * tiles_n;
  const int kblocks = (K + kBK - 1) / kBK;

  if (wg == 0) {
    // ---- producer: one thread keeps every free stage loading.
    if (t == 0) {
      uint32_t it = 0;
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        int tm, tn;
        tile_coords(tile, tiles_m, tiles_n, tm, tn);
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const uint32_t s = it % kStages, phase = (it / kStages) & 1;
          sm90::mbar_wait_clock(tc::smem_addr(&empty[s]), phase ^ 1);  // a fresh barrier passes parity 1 at once
          const uint32_t fb = tc::smem_addr(&full[s]);
          sm90::mbar_arrive_expect_tx(fb, kStageBytes);
          const uint32_t sa = tiles + s * kStageBytes;
          sm90::tma_load_2d(sa, &map_a, fb, kb * kBK, tm * kBM);
          sm90::tma_load_2d(sa + kTileBytes, &map_b, fb, kb * kBK, tn * kBN);
        }
      }
    }
    return;
  }

  // ---- consumers: warpgroup cg owns rows [cg*64, cg*64+64) of each tile.
  const int cg = wg - 1;
  const int warp = t / 32, lane = t % 32;
  uint32_t it = 0;
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    int tm, tn;
    tile_coords(tile, tiles_m, tiles_n, tm, tn);
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.f;
    uint32_t prev = 0;
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % kStages, phase = (it / kStages) & 1;
      sm90::mbar_wait_clock(tc::smem_addr(&full[s]), phase);
      __syncwarp();  // reconverge after the spin: wgmma instructions are .sync.aligned
      const uint32_t sa = tiles + s * kStageBytes + cg * 64 * kRowBytes;
      const uint32_t sb = tiles + s * kStageBytes + kTileBytes;
      sm90::wgmma_fence();
#pragma unroll
      for (int k = 0; k < kRowBytes / kStep; ++k)
        sm90::WgmmaN<T, 128>::run(acc, sm90::make_desc_k_sw128(sa + k * kStep),
                                  sm90::make_desc_k_sw128(sb + k * kStep));
      sm90::wgmma_commit();
      // Keep this block's wgmmas in flight; the previous block's have finished reading its stage.
      sm90::wgmma_wait<1>();
      if (kb > 0) sm90::mbar_arrive(tc::smem_addr(&empty[prev]));
      prev = s;
    }
    sm90::wgmma_wait<0>();
    if (kblocks > 0) sm90::mbar_arrive(tc::smem_addr(&empty[prev]));

    // ---- epilogue from registers: acc[4j + e] is row warp*16 + lane/4 + (e/2)*8, column
    // 8j + 2*(lane%4) + e%2 of this warpgroup's 64 x 128 tile.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = tm * kBM + cg * 64 + warp * 16 + lane / 4 + h * 8;
      if (row >= M) continue;
      T* crow = c + int64_t(row) * ldc;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int col = tn * kBN + j * 8 + (lane % 4) * 2;
        if (col >= N) continue;
        float v0 = alpha * acc[4 * j + 2 * h], v1 = alpha * acc[4 * j + 2 * h + 1];
        const bool pair = col + 1 < N && (reinterpret_cast<uintptr_t>(crow + col) % (2 * sizeof(T))) == 0;
        if (pair) {
          auto* p = reinterpret_cast<typename tc::Pair<T>::type*>(crow + col);
          if (beta != 0.f) {  // beta == 0 never reads C
            const float2 o = tc::Pair<T>::to_f32(*p);
            v0 += beta * o.x, v1 += beta * o.y;
          }
          *p = tc::Pair<T>::from_f32(v0, v1);
        } else {
          if (beta != 0.f) v0 += beta * tc::to_f32(crow[col]);
          crow[col] = tc::from_f32<T>(v0);
          if (col + 1 < N) {
            if (beta != 0.f) v1 += beta * tc::to_f32(crow[col + 1]);
            crow[col + 1] = tc::from_f32<T>(v1);
          }
        }
      }
    }
  }
#endif
}

// ---------------------------------------------------------------- host side

template <class T> constexpr jhdnnDataType_t dt_of();
template <> constexpr jhdnnDataType_t dt_of<__half>() { return JHDNN_DATA_HALF; }
template <> constexpr jhdnnDataType_t dt_of<__nv_bfloat16>() { return JHDNN_DATA_BFLOAT16; }
template <> constexpr jhdnnDataType_t dt_of<float>() { return JHDNN_DATA_FLOAT; }

// Tensor map of a row-major rows x k matrix (k contiguous, ld elements between rows), boxes of
// 128 rows x 128 bytes, 128-byte swizzle, zeros outside.
core::Status make_map(CUtensorMap* map, jhdnnDataType_t dt, const void* ptr, int64_t rows, int64_t k, int64_t ld) {
  PFN_cuTensorMapEncodeTiled_v12000 fn = sm90::tensor_map_encoder();
  if (fn == nullptr) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "gemm_wgmma: the driver has no cuTensorMapEncodeTiled");
  const size_t es = dt == JHDNN_DATA_FLOAT ? 4 : 2;
  const CUtensorMapDataType type = dt == JHDNN_DATA_HALF       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : dt == JHDNN_DATA_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};
  const cuuint64_t strides[1] = {cuuint64_t(ld) * es};
  const cuuint32_t box[2] = {cuuint32_t(kRowBytes / es), cuuint32_t(kBM)};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = fn(map, type, 2, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "gemm_wgmma: cuTensorMapEncodeTiled failed (%d)", int(r));
  return core::Status::success();
}

template <class T>
core::Status launch(int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda, const void* B,
                    int64_t ldb, float beta, void* C, int64_t ldc, int sm_count, cudaStream_t stream) {
  // A bit per device whose smem limit is raised: after the first call per device, one atomic load.
  // Concurrent first calls just set the same attribute twice (as in gemm/sgemm_async.cu).
  static std::atomic<uint64_t> prepared{0};
  int dev = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t(1) << dev : 0;
  if (bit == 0 || (prepared.load(std::memory_order_acquire) & bit) == 0) {
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(gemm_wgmma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    prepared.fetch_or(bit, std::memory_order_acq_rel);
  }
  CUtensorMap ma, mb;
  JHDNN_TRY(make_map(&ma, dt_of<T>(), A, M, K, lda));
  JHDNN_TRY(make_map(&mb, dt_of<T>(), B, N, K, ldb));
  const int64_t tiles = ((M + kBM - 1) / kBM) * ((N + kBN - 1) / kBN);
  const unsigned grid = unsigned(std::min<int64_t>(tiles, sm_count));
  gemm_wgmma_kernel<T><<<grid, kThreads, kSmemBytes, stream>>>(ma, mb, static_cast<T*>(C), int(M), int(N), int(K), ldc,
                                                               alpha, beta);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

}  // namespace

core::Status gemm_wgmma(jhdnnDataType_t dtype, int64_t M, int64_t N, int64_t K, float alpha, const void* A,
                        int64_t lda, const void* B, int64_t ldb, float beta, void* C, int64_t ldc,
                        cudaStream_t stream) {
  using core::fail;
  if (const char* why = wgmma_unsupported(dtype, M, N, K, A, lda, B, ldb, C, ldc))
    return fail(JHDNN_STATUS_NOT_SUPPORTED, "gemm_wgmma: %s", why);
  const core::DeviceInfo& dev = conv::tensorcore::cached_device_info();
  if (dev.sm() != 90) return fail(JHDNN_STATUS_ARCH_MISMATCH, "gemm_wgmma: wgmma needs an sm_90 (Hopper) device");
  switch (dtype) {
    case JHDNN_DATA_HALF: return launch<__half>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dev.sm_count, stream);
    case JHDNN_DATA_BFLOAT16:
      return launch<__nv_bfloat16>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dev.sm_count, stream);
    default: return launch<float>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, dev.sm_count, stream);
  }
}

}  // namespace jhdnn::gemm::tensorcore
