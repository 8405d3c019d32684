// tensorcore_wgmma: generation 2 of the Tensor Core convolution (sm_90a) -- the implicit GEMM of
// conv_mma.cu with Hopper's machinery: TMA bulk tensor copies into 128-byte-swizzled shared memory,
// an mbarrier pipeline, one producer and two consumer warpgroups issuing wgmma, and a persistent
// tile scheduler (the same block structure as src/gemm/tensorcore/gemm_wgmma.cu).
//
// The trick that makes TMA an implicit-GEMM loader: a block's 128 output pixels are a
// bw x bh x bn box of (q, p, n) (e.g. 16 x 8 x 1, or 8 x 8 x 2 for 7x7 maps). For filter tap
// (r, s) and a 64-channel (32 for fp32) slice starting at c0, the input pixels those outputs read
// form one box of the 4-D NHWC tensor x (dims C, W, H, N) at
//   (c0, q0*sw - pw + s*dw, p0*sh - ph + r*dh, n0)  with traversal strides (1, sw, sh, 1),
// and TMA zero-fills every element outside the tensor: padding, channel tails and tile tails come
// for free. The box lands as 128 rows (one per output pixel) of 128 bytes -- exactly the K-major,
// 128B-swizzled A tile wgmma reads. The filter slice is a box of the 3-D KRSC tensor w (dims C,
// R*S, K) at (c0, tap, k0). Reduction order: taps outer, channel slices inner.
#include "conv/tensorcore/tensorcore.h"

#include <algorithm>
#include <mutex>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/mma_sm80.cuh"
#include "conv/tensorcore/wgmma_sm90.cuh"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace tensorcore {
namespace {

using namespace jhdnn::tc;

constexpr int kBM = 128, kBN = 128;       // output pixels x output channels per tile
constexpr int kRowBytes = 128;            // reduction bytes per stage row (64 fp16/bf16, 32 fp32)
constexpr int kStages = 6;
constexpr int kTileBytes = kBM * kRowBytes;
constexpr int kStageBytes = 2 * kTileBytes;
constexpr int kSmemBytes = kStages * kStageBytes + 1024;
constexpr int kConsumers = 2;
constexpr int kThreads = 128 * (1 + kConsumers);

struct WgParams {
  int N, P, Q, K;
  int bw, bh, bn;                 // pixel box: bw * bh * bn == kBM
  int tiles_q, tiles_p, tiles_img, tiles_k, num_tiles;
  int R, S, cblocks, kblocks;     // kblocks = R * S * cblocks
  int pad_h, pad_w, str_h, str_w, dil_h, dil_w, flip;
  int64_t ys[4];                  // y element strides: n, k, p, q
  float alpha, beta;
};

template <class T>
__global__ void __launch_bounds__(kThreads, 1)
    conv_wgmma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                      T* __restrict__ y, const WgParams prm) {
#if JHDNN_WGMMA_OK
  constexpr int kBK = kRowBytes / int(sizeof(T));
  constexpr int kStep = 32;  // reduction bytes per wgmma
  __shared__ __align__(8) uint64_t full[kStages], empty[kStages];
  extern __shared__ unsigned char smem_raw[];
  const uint32_t tiles = (smem_addr(smem_raw) + 1023) & ~uint32_t(1023);

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(smem_addr(&full[s]), 1);
      mbar_init(smem_addr(&empty[s]), kConsumers * 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // Tile -> (image block, p block, q block, k block); k fastest, so blocks running together read
  // the same input box (from L2) for different output channels.
  auto decode = [&](int tile, int& n0, int& p0, int& q0, int& k0) {
    k0 = (tile % prm.tiles_k) * kBN;
    tile /= prm.tiles_k;
    q0 = (tile % prm.tiles_q) * prm.bw;
    tile /= prm.tiles_q;
    p0 = (tile % prm.tiles_p) * prm.bh;
    n0 = (tile / prm.tiles_p) * prm.bn;
  };

  if (wg == 0) {
    if (t == 0) {
      uint32_t it = 0;
      for (int tile = blockIdx.x; tile < prm.num_tiles; tile += gridDim.x) {
        int n0, p0, q0, k0;
        decode(tile, n0, p0, q0, k0);
        for (int kb = 0; kb < prm.kblocks; ++kb, ++it) {
          const int tap = kb / prm.cblocks, c0 = (kb % prm.cblocks) * kBK;
          const int r = tap / prm.S, s = tap % prm.S;
          const int wtap = prm.flip ? (prm.R - 1 - r) * prm.S + (prm.S - 1 - s) : tap;
          const uint32_t st = it % kStages, phase = (it / kStages) & 1;
          mbar_wait(smem_addr(&empty[st]), phase ^ 1);
          const uint32_t fb = smem_addr(&full[st]);
          mbar_expect_tx(fb, kStageBytes);
          const uint32_t sa = tiles + st * kStageBytes;
          tma_load_4d(sa, &map_x, c0, q0 * prm.str_w - prm.pad_w + s * prm.dil_w,
                      p0 * prm.str_h - prm.pad_h + r * prm.dil_h, n0, fb);
          tma_load_3d(sa + kTileBytes, &map_w, c0, wtap, k0, fb);
        }
      }
    }
    return;
  }

  const int cg = wg - 1, warp = t / 32, lane = t % 32;
  uint32_t it = 0;
  for (int tile = blockIdx.x; tile < prm.num_tiles; tile += gridDim.x) {
    int n0, p0, q0, k0;
    decode(tile, n0, p0, q0, k0);
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.f;
    uint32_t prev = 0;
    for (int kb = 0; kb < prm.kblocks; ++kb, ++it) {
      const uint32_t st = it % kStages, phase = (it / kStages) & 1;
      mbar_wait(smem_addr(&full[st]), phase);
      __syncwarp();  // reconverge after the spin: wgmma instructions are .sync.aligned
      const uint32_t sa = tiles + st * kStageBytes + cg * 64 * kRowBytes;
      const uint32_t sb = tiles + st * kStageBytes + kTileBytes;
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < kRowBytes / kStep; ++k) Wgmma<T>::run(acc, smem_desc(sa + k * kStep), smem_desc(sb + k * kStep));
      wgmma_commit();
      wgmma_wait<1>();
      if (kb > 0) mbar_arrive(smem_addr(&empty[prev]));
      prev = st;
    }
    wgmma_wait<0>();
    if (prm.kblocks > 0) mbar_arrive(smem_addr(&empty[prev]));

    // Epilogue: accumulator row m of the tile is pixel (q0 + m % bw, p0 + (m / bw) % bh, n0 + m / (bw*bh)).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = cg * 64 + warp * 16 + lane / 4 + h * 8;
      const int q = q0 + m % prm.bw, p = p0 + (m / prm.bw) % prm.bh, n = n0 + m / (prm.bw * prm.bh);
      if (q >= prm.Q || p >= prm.P || n >= prm.N) continue;
      T* yrow = y + n * prm.ys[0] + p * prm.ys[2] + q * prm.ys[3];
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int k = k0 + j * 8 + (lane % 4) * 2;
        if (k >= prm.K) continue;
        float v0 = prm.alpha * acc[4 * j + 2 * h], v1 = prm.alpha * acc[4 * j + 2 * h + 1];
        T* o = yrow + k * prm.ys[1];
        const bool pair = k + 1 < prm.K && prm.ys[1] == 1 && (reinterpret_cast<uintptr_t>(o) % (2 * sizeof(T))) == 0;
        if (pair) {
          auto* pp = reinterpret_cast<typename Pair<T>::type*>(o);
          if (prm.beta != 0.f) {  // beta == 0 never reads y
            const float2 f = Pair<T>::to_f32(*pp);
            v0 += prm.beta * f.x, v1 += prm.beta * f.y;
          }
          *pp = Pair<T>::from_f32(v0, v1);
        } else {
          if (prm.beta != 0.f) v0 += prm.beta * to_f32(o[0]);
          o[0] = from_f32<T>(v0);
          if (k + 1 < prm.K) {
            T* o1 = o + prm.ys[1];
            if (prm.beta != 0.f) v1 += prm.beta * to_f32(*o1);
            *o1 = from_f32<T>(v1);
          }
        }
      }
    }
  }
#endif
}

// ---------------------------------------------------------------- host side

int64_t elem_bytes(jhdnnDataType_t dt) { return dt == JHDNN_DATA_FLOAT ? 4 : 2; }

// What gen 2 needs beyond gen 1's checks; nullptr when it can take p (pointers are checked in run).
const char* check_wgmma(const core::ConvProblem& p, const core::DeviceInfo& dev) {
  const Verdict v1 = tensorcore_mma_solver().can_implement(p, dev);
  if (!v1.ok) return v1.reason;
  if (dev.sm() != 90) return "wgmma and TMA need an sm_90 (Hopper) device";
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1) return "2-D convolutions only";
  if (p.G != 1) return "groups are served by tensorcore_mma (a TMA channel box would cross groups)";
  const int64_t es = elem_bytes(p.dtype);
  if (p.x_stride[1] != 1) return "x must have unit channel stride (NHWC)";
  if ((p.x_stride[0] * es) % 16 || (p.x_stride[3] * es) % 16 || (p.x_stride[4] * es) % 16)
    return "x's n, h, w strides must be multiples of 16 bytes (C a multiple of 8 for 16-bit data, 4 for fp32)";
  if (p.x_stride[4] < p.C || p.x_stride[3] < p.W * p.x_stride[4] || p.x_stride[0] < p.H * p.x_stride[3])
    return "x's strides must nest as NHWC's do (a TMA tensor map requirement)";
  if (!p.w_packed_krsc()) return "w must be packed KRSC (NHWC filter format)";
  if ((p.C * es) % 16) return "C must be a multiple of 16 bytes";
  if (p.stride_h > 8 || p.stride_w > 8) return "TMA traversal strides are at most 8";
  if (p.N >= (int64_t(1) << 31) || p.H >= (int64_t(1) << 31) || p.W >= (int64_t(1) << 31)) return "sizes past 2^31";
  return nullptr;
}

// The pixel box (bw, bh, bn), powers of two with product kBM: the fewest tiles (least padding
// waste) first, then the smallest input footprint per tile (halo included), which favours compact
// boxes (16 x 8 over 1 x 64 x 2) for L2 reuse and long contiguous TMA rows.
void pick_box(const core::ConvProblem& p, WgParams& w) {
  int64_t best_tiles = -1;
  double best_halo = 0;
  for (int bw = 1; bw <= 64; bw *= 2)
    for (int bh = 1; bh * bw <= kBM && bh <= 64; bh *= 2) {
      const int bn = kBM / (bw * bh);
      if (bw * p.stride_w > 256 || bh * p.stride_h > 256) continue;
      const int64_t tiles = ((p.Q + bw - 1) / bw) * ((p.P + bh - 1) / bh) * ((p.N + bn - 1) / bn);
      // double: with huge dilations the product could overflow int64
      const double halo = (double(bw - 1) * p.stride_w + double(p.S - 1) * p.dil_w + 1) *
                          (double(bh - 1) * p.stride_h + double(p.R - 1) * p.dil_h + 1) * bn;
      if (best_tiles < 0 || tiles < best_tiles || (tiles == best_tiles && halo < best_halo)) {
        best_tiles = tiles, best_halo = halo;
        w.bw = bw, w.bh = bh, w.bn = bn;
      }
    }
}

core::Status encode(CUtensorMap* map, jhdnnDataType_t dt, const void* ptr, cuuint32_t rank, const cuuint64_t* dims,
                    const cuuint64_t* strides_bytes, const cuuint32_t* box, const cuuint32_t* estr) {
  PFN_cuTensorMapEncodeTiled_v12000 fn = tensor_map_encoder();
  if (fn == nullptr) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: the driver has no cuTensorMapEncodeTiled");
  const CUtensorMapDataType type = dt == JHDNN_DATA_HALF       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : dt == JHDNN_DATA_BFLOAT16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const CUresult r = fn(map, type, rank, const_cast<void*>(ptr), dims, strides_bytes, box, estr,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return core::fail(JHDNN_STATUS_EXECUTION_FAILED, "tensorcore_wgmma: cuTensorMapEncodeTiled failed (%d)", int(r));
  return core::Status::success();
}

template <class T>
core::Status launch(const core::ConvProblem& p, const ConvArgs& a, int sm_count, cudaStream_t stream) {
  static std::mutex mu;
  static uint64_t prepared = 0;
  int dev = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  {
    std::lock_guard<std::mutex> lock(mu);
    if (dev >= 64 || !(prepared & (uint64_t(1) << dev))) {
      JHDNN_CUDA_TRY(cudaFuncSetAttribute(conv_wgmma_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      if (dev < 64) prepared |= uint64_t(1) << dev;
    }
  }
  const int64_t es = int64_t(sizeof(T));
  const int kBK = kRowBytes / int(sizeof(T));
  WgParams w{};
  w.N = int(p.N), w.P = int(p.P), w.Q = int(p.Q), w.K = int(p.K);
  pick_box(p, w);
  w.tiles_q = int((p.Q + w.bw - 1) / w.bw);
  w.tiles_p = int((p.P + w.bh - 1) / w.bh);
  w.tiles_img = int((p.N + w.bn - 1) / w.bn);
  w.tiles_k = int((p.K + kBN - 1) / kBN);
  const int64_t num_tiles = int64_t(w.tiles_q) * w.tiles_p * w.tiles_img * w.tiles_k;
  if (num_tiles >= (int64_t(1) << 31)) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: too many tiles");
  w.num_tiles = int(num_tiles);
  w.R = int(p.R), w.S = int(p.S);
  w.cblocks = int((p.C + kBK - 1) / kBK);
  w.kblocks = w.R * w.S * w.cblocks;
  w.pad_h = p.pad_h, w.pad_w = p.pad_w, w.str_h = p.stride_h, w.str_w = p.stride_w;
  w.dil_h = p.dil_h, w.dil_w = p.dil_w, w.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  w.ys[0] = p.y_stride[0], w.ys[1] = p.y_stride[1], w.ys[2] = p.y_stride[3], w.ys[3] = p.y_stride[4];
  w.alpha = float(a.alpha), w.beta = float(a.beta);

  CUtensorMap mx, mw;
  {
    const cuuint64_t dims[4] = {cuuint64_t(p.C), cuuint64_t(p.W), cuuint64_t(p.H), cuuint64_t(p.N)};
    const cuuint64_t strides[3] = {cuuint64_t(p.x_stride[4] * es), cuuint64_t(p.x_stride[3] * es),
                                   cuuint64_t(p.x_stride[0] * es)};
    const cuuint32_t box[4] = {cuuint32_t(kBK), cuuint32_t(w.bw * p.stride_w), cuuint32_t(w.bh * p.stride_h),
                               cuuint32_t(w.bn)};
    const cuuint32_t estr[4] = {1, cuuint32_t(p.stride_w), cuuint32_t(p.stride_h), 1};
    JHDNN_TRY(encode(&mx, p.dtype, a.x, 4, dims, strides, box, estr));
  }
  {
    const cuuint64_t dims[3] = {cuuint64_t(p.C), cuuint64_t(p.R * p.S), cuuint64_t(p.K)};
    const cuuint64_t strides[2] = {cuuint64_t(p.C * es), cuuint64_t(p.R * p.S * p.C * es)};
    const cuuint32_t box[3] = {cuuint32_t(kBK), 1, cuuint32_t(kBN)};
    const cuuint32_t estr[3] = {1, 1, 1};
    JHDNN_TRY(encode(&mw, p.dtype, a.w, 3, dims, strides, box, estr));
  }
  const unsigned grid = unsigned(std::min<int64_t>(num_tiles, sm_count));
  conv_wgmma_kernel<T><<<grid, kThreads, kSmemBytes, stream>>>(mx, mw, static_cast<T*>(a.y), w);
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

class TensorCoreWgmmaSolver final : public ConvSolver {
 public:
  const char* name() const override { return "tensorcore_wgmma"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo& dev) const override {
    if (const char* why = check_wgmma(p, dev)) return Verdict::no(why);
    return Verdict::yes();
  }

  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    const core::DeviceInfo& dev = cached_device_info();
    if (const char* why = check_wgmma(p, dev)) return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "tensorcore_wgmma: %s", why);
    if (!a.x || !a.w || !a.y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorcore_wgmma: x, w or y is null");
    // TMA needs 16-byte aligned tensors; a merely element-aligned one runs on generation 1.
    if ((reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.w)) % 16 != 0)
      return tensorcore_mma_solver().run(p, a, ws, ws_bytes, stream);
    switch (p.dtype) {
      case JHDNN_DATA_HALF: return launch<__half>(p, a, dev.sm_count, stream);
      case JHDNN_DATA_BFLOAT16: return launch<__nv_bfloat16>(p, a, dev.sm_count, stream);
      default: return launch<float>(p, a, dev.sm_count, stream);
    }
  }

  Status load_kernels() const override {
    cudaFuncAttributes attr;
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, conv_wgmma_kernel<__half>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, conv_wgmma_kernel<__nv_bfloat16>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, conv_wgmma_kernel<float>));
    return core::Status::success();
  }
};

}  // namespace
}  // namespace tensorcore

const ConvSolver& tensorcore_wgmma_solver() {
  static const tensorcore::TensorCoreWgmmaSolver s;
  return s;
}

}  // namespace jhdnn::conv
