// The generation-1 tensor-core kernel: implicit GEMM on mma.sync with ldmatrix fragment loads and
// a kStages-deep cp.async pipeline. The GEMM view and the loaders are described at the top of
// conv_mma.cu; tile shapes, the swizzle and the pipeline in README.md.
#include <atomic>
#include <cstring>
#include <mutex>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/tensorcore/mma_launch.h"
#include "conv/tensorcore/mma_sm80.cuh"
#include "core/cuda_check.h"

namespace jhdnn::conv::tensorcore {
namespace {

using tc::cp_async_16;
using tc::smem_addr;

// Block tile kBM x kBN, warps of 64 x 32 outputs (4 x 4 mma tiles of 16 x 8), reduction slices of
// 64 bytes per row (4 chunks of 16 bytes), kStages slices in flight.
template <int BN, int MinBlocks>
struct Cfg {
  static constexpr int kBM = 128, kBN = BN;
  static constexpr int kWarpM = 64, kWarpN = 32;
  static constexpr int kWarpsM = kBM / kWarpM, kWarpsN = kBN / kWarpN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kStages = 4;
  static constexpr int kRowBytes = 64, kChunks = kRowBytes / 16;
  static constexpr int kStageBytes = (kBM + kBN) * kRowBytes;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static constexpr int kRowStep = kThreads / kChunks;       // loader rows between a thread's chunks
  static constexpr int kARows = kBM / kRowStep, kBRows = kBN / kRowStep;  // chunks per thread per slice
  static constexpr int kMinBlocks = MinBlocks;
  static_assert(kBM % kRowStep == 0 && kBN % kRowStep == 0, "loader covers the tile exactly");
};
// 128 x 128, 8 warps: the main shape (each thread keeps 64 fp32 accumulators). 64 KiB of shared
// memory, 2 blocks per SM (<= 128 registers).
using Wide = Cfg<128, 2>;
// 128 x 64, 4 warps: for K/G <= 64 (ResNet's 64-channel layers) and for grids too small to fill
// the SMs with 128-wide tiles. 48 KiB; 3 blocks per SM leave 168 registers (4 blocks = 128 spill).
using Narrow = Cfg<64, 3>;

// Byte offset of 16-byte chunk ch of row `row` in a (rows, 64-byte) tile. XOR-ing the chunk with
// (row/2)%4 spreads the 8 rows an ldmatrix phase reads (same chunk, consecutive rows) over all
// 32 banks; without it rows 64 bytes apart would collide 4-way.
__device__ __forceinline__ int swz(int row, int ch) { return row * 64 + ((ch ^ ((row >> 1) & 3)) << 4); }

template <class T>
__device__ __forceinline__ T zero_of() {
  return tc::from_f32<T>(0.f);
}

template <class T, bool kVec, class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    conv_mma_kernel(TcParams prm, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y) {
  constexpr int V = 16 / int(sizeof(T));   // elements per 16-byte chunk
  constexpr int kBK = 64 / int(sizeof(T)); // reduction elements per stage
  extern __shared__ __align__(128) unsigned char smem[];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp % C::kWarpsM, warp_n = warp / C::kWarpsM;
  const int g = blockIdx.z;
  const int64_t m0 = int64_t(blockIdx.x) * C::kBM;
  const int n0 = blockIdx.y * C::kBN;

  // ---- loader state: this thread fills chunk lchunk of rows lrow + i*kRowStep of A and B.
  const int lchunk = tid % C::kChunks, lrow = tid / C::kChunks;
  const T* xg = x + int64_t(g) * prm.Cg * prm.xs[1];
  const T* wg = w + int64_t(g) * prm.Kg * prm.ws[0];
  int64_t a_base[C::kARows];  // x offset of image n
  int a_d[C::kARows], a_h[C::kARows], a_w[C::kARows];  // input coordinate of tap (0,0,0); INT_MIN/2: row past M
#pragma unroll
  for (int i = 0; i < C::kARows; ++i) {
    const int64_t m = m0 + lrow + i * C::kRowStep;
    a_base[i] = 0;
    a_d[i] = a_h[i] = a_w[i] = INT_MIN / 2;  // fails every bounds check below
    if (m < prm.M) {
      const int q = int(m % prm.Q);
      int64_t r = m / prm.Q;
      const int p = int(r % prm.P);
      r /= prm.P;
      const int o = int(r % prm.O);
      const int64_t n = r / prm.O;
      a_base[i] = n * prm.xs[0];
      a_d[i] = o * prm.str_d - prm.pad_d;
      a_h[i] = p * prm.str_h - prm.pad_h;
      a_w[i] = q * prm.str_w - prm.pad_w;
    }
  }
  int64_t b_base[C::kBRows];  // w offset of output channel k, or -1 past K/G
#pragma unroll
  for (int i = 0; i < C::kBRows; ++i) {
    const int k = n0 + lrow + i * C::kRowStep;
    b_base[i] = k < prm.Kg ? int64_t(k) * prm.ws[0] : -1;
  }

  // Reduction index kk -> (t, r, s, c) of the input tap, and the filter tap read (mirrored in
  // CONVOLUTION mode). Returns false past Kred.
  auto decompose = [&](int kk, int& c, int& t, int& r, int& s) {
    c = kk % prm.Cg;
    int rest = kk / prm.Cg;
    s = rest % prm.S;
    rest /= prm.S;
    r = rest % prm.R;
    t = rest / prm.R;
  };
  auto x_offset = [&](int i, int c, int t, int r, int s, bool& ok) -> int64_t {
    const int d = a_d[i] + t * prm.dil_d, h = a_h[i] + r * prm.dil_h, ww = a_w[i] + s * prm.dil_w;
    ok = unsigned(d) < unsigned(prm.D) && unsigned(h) < unsigned(prm.H) && unsigned(ww) < unsigned(prm.W);
    return a_base[i] + c * prm.xs[1] + d * prm.xs[2] + h * prm.xs[3] + int64_t(ww) * prm.xs[4];
  };
  auto w_offset = [&](int i, int c, int t, int r, int s) -> int64_t {
    const int tf = prm.flip ? prm.T - 1 - t : t, rf = prm.flip ? prm.R - 1 - r : r, sf = prm.flip ? prm.S - 1 - s : s;
    return b_base[i] + c * prm.ws[1] + tf * prm.ws[2] + rf * prm.ws[3] + int64_t(sf) * prm.ws[4];
  };

  // Fills stage `stage` with reduction slice kt: A rows [m0, m0+kBM), B rows [n0, n0+kBN).
  auto load_slice = [&](int stage, int kt) {
    unsigned char* sa = smem + stage * C::kStageBytes;
    unsigned char* sb = sa + C::kBM * C::kRowBytes;
    const int kk = kt * kBK + lchunk * V;
    if constexpr (kVec) {
      // Cg % V == 0: the chunk is V channels of one tap, contiguous and 16-byte aligned.
      const bool kin = kk < prm.Kred;
      int c = 0, t = 0, r = 0, s = 0;
      if (kin) decompose(kk, c, t, r, s);
#pragma unroll
      for (int i = 0; i < C::kARows; ++i) {
        bool ok;
        const int64_t off = x_offset(i, c, t, r, s, ok);
        ok = ok && kin;
        cp_async_16(smem_addr(sa + swz(lrow + i * C::kRowStep, lchunk)), ok ? xg + off : x, ok ? 16 : 0);
      }
#pragma unroll
      for (int i = 0; i < C::kBRows; ++i) {
        const bool ok = kin && b_base[i] >= 0;
        cp_async_16(smem_addr(sb + swz(lrow + i * C::kRowStep, lchunk)), ok ? wg + w_offset(i, c, t, r, s) : w,
                    ok ? 16 : 0);
      }
    } else {
      // General gather: each element of the chunk through the strides (any layout, any Cg).
      T av[C::kARows][V], bv[C::kBRows][V];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const bool kin = kk + e < prm.Kred;
        int c = 0, t = 0, r = 0, s = 0;
        if (kin) decompose(kk + e, c, t, r, s);
#pragma unroll
        for (int i = 0; i < C::kARows; ++i) {
          bool ok;
          const int64_t off = x_offset(i, c, t, r, s, ok);
          av[i][e] = (ok && kin) ? xg[off] : zero_of<T>();
        }
#pragma unroll
        for (int i = 0; i < C::kBRows; ++i)
          bv[i][e] = (kin && b_base[i] >= 0) ? wg[w_offset(i, c, t, r, s)] : zero_of<T>();
      }
#pragma unroll
      for (int i = 0; i < C::kARows; ++i) {
        uint4 u;
        memcpy(&u, av[i], 16);
        *reinterpret_cast<uint4*>(sa + swz(lrow + i * C::kRowStep, lchunk)) = u;
      }
#pragma unroll
      for (int i = 0; i < C::kBRows; ++i) {
        uint4 u;
        memcpy(&u, bv[i], 16);
        *reinterpret_cast<uint4*>(sb + swz(lrow + i * C::kRowStep, lchunk)) = u;
      }
    }
  };

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  // ---- pipeline: slices 0 .. kStages-2 in flight before the first mma.
  const int num_kt = (prm.Kred + kBK - 1) / kBK;
#pragma unroll
  for (int st = 0; st < C::kStages - 1; ++st) {
    if (st < num_kt) load_slice(st, st);
    tc::cp_async_commit();  // committed even when empty, so the group count stays in step
  }

  for (int kt = 0; kt < num_kt; ++kt) {
    // Groups committed so far: kStages-1+kt. Leaving kStages-2 in flight means slice kt has landed.
    tc::cp_async_wait<C::kStages - 2>();
    __syncthreads();  // slice kt visible to all; every warp is done with slice kt-1's stage
    {
      const int nk = kt + C::kStages - 1;  // refill the stage slice kt-1 used
      if (nk < num_kt) load_slice(nk % C::kStages, nk);
      tc::cp_async_commit();
    }
    const unsigned char* sa = smem + (kt % C::kStages) * C::kStageBytes;
    const unsigned char* sb = sa + C::kBM * C::kRowBytes;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {  // two 32-byte k-steps per 64-byte slice
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int mi = 0; mi < 4; ++mi) {
        // lanes 0-15: rows 0-15 at k-chunk 0; lanes 16-31: rows 0-15 at k-chunk 1 (a0..a3 order)
        const int row = warp_m * C::kWarpM + mi * 16 + (lane & 15);
        tc::ldmatrix_x4(smem_addr(sa + swz(row, ks * 2 + (lane >> 4))), af[mi][0], af[mi][1], af[mi][2], af[mi][3]);
      }
#pragma unroll
      for (int nj = 0; nj < 2; ++nj) {
        // matrices: (n 0-7, k-chunk 0), (n 0-7, chunk 1), (n 8-15, chunk 0), (n 8-15, chunk 1)
        const int row = warp_n * C::kWarpN + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
        tc::ldmatrix_x4(smem_addr(sb + swz(row, ks * 2 + ((lane >> 3) & 1))), bf[2 * nj][0], bf[2 * nj][1],
                        bf[2 * nj + 1][0], bf[2 * nj + 1][1]);
      }
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int e = 0; e < 4; ++e) af[mi][e] = tc::Mma<T>::prep(af[mi][e]);
#pragma unroll
      for (int ni = 0; ni < 4; ++ni)
#pragma unroll
        for (int e = 0; e < 2; ++e) bf[ni][e] = tc::Mma<T>::prep(bf[ni][e]);
#pragma unroll
      for (int mi = 0; mi < 4; ++mi)
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) tc::Mma<T>::run(acc[mi][ni], af[mi], bf[ni]);
    }
  }
  tc::cp_async_wait<0>();  // no copy may still target shared memory when the block exits

  // ---- epilogue straight from the accumulators: element (mi, ni, e) is row
  // mi*16 + lane/4 + (e/2)*8, column ni*8 + (lane%4)*2 + e%2 of the warp tile.
  const T* z = static_cast<const T*>(prm.z);
  const T* bias = static_cast<const T*>(prm.bias);
#pragma unroll
  for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t m = m0 + warp_m * C::kWarpM + mi * 16 + (lane >> 2) + half * 8;
      if (m >= prm.M) continue;
      const int64_t q = m % prm.Q;
      int64_t r = m / prm.Q;
      const int64_t p = r % prm.P;
      r /= prm.P;
      const int64_t o = r % prm.O;
      const int64_t n = r / prm.O;
      const int64_t yrow = n * prm.ys[0] + o * prm.ys[2] + p * prm.ys[3] + q * prm.ys[4];
#pragma unroll
      for (int ni = 0; ni < 4; ++ni) {
        const int k = n0 + warp_n * C::kWarpN + ni * 8 + (lane & 3) * 2;  // even; k + 1 is the pair
        if (k >= prm.Kg) continue;
        const int64_t kabs = int64_t(g) * prm.Kg + k;
        const int64_t off = yrow + kabs * prm.ys[1];
        float v[2] = {0.f, 0.f};
        const int nv = k + 1 < prm.Kg ? 2 : 1;
        // Channels innermost (NHWC) and the pair 2-element aligned: one 4- / 8-byte access.
        const bool paired = nv == 2 && prm.ys[1] == 1 &&
                            (reinterpret_cast<uintptr_t>(y + off) % (2 * sizeof(T))) == 0;
        float old[2] = {0.f, 0.f};
        if (prm.beta != 0.f) {  // beta == 0 never reads y
          if (paired) {
            const float2 f = tc::Pair<T>::to_f32(*reinterpret_cast<const typename tc::Pair<T>::type*>(y + off));
            old[0] = f.x, old[1] = f.y;
          } else {
            for (int j = 0; j < nv; ++j) old[j] = tc::to_f32(y[off + j * prm.ys[1]]);
          }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if (j >= nv) break;
          const int64_t oj = off + j * prm.ys[1];
          float t = prm.alpha * acc[mi][ni][half * 2 + j] + prm.beta * old[j];
          if (z != nullptr) t += prm.alpha2 * tc::to_f32(z[oj]);
          if (bias != nullptr) t += tc::to_f32(bias[kabs + j]);
          if (prm.relu) t = fmaxf(t, 0.f);
          v[j] = t;
        }
        if (paired) {
          *reinterpret_cast<typename tc::Pair<T>::type*>(y + off) = tc::Pair<T>::from_f32(v[0], v[1]);
        } else {
          for (int j = 0; j < nv; ++j) y[off + j * prm.ys[1]] = tc::from_f32<T>(v[j]);
        }
      }
    }
  }
}

// ---------------------------------------------------------------- host side

template <class T, bool kVec, class C>
constexpr auto kernel_of() {
  return &conv_mma_kernel<T, kVec, C>;
}

// Every variant: both tile widths with the vector loader, the wide tile with the general one.
template <class F>
core::Status for_each_kernel(F f) {
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__half, true, Wide>()), Wide::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__half, true, Narrow>()), Narrow::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__half, false, Wide>()), Wide::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__nv_bfloat16, true, Wide>()), Wide::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__nv_bfloat16, true, Narrow>()), Narrow::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<__nv_bfloat16, false, Wide>()), Wide::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<float, true, Wide>()), Wide::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<float, true, Narrow>()), Narrow::kSmemBytes));
  JHDNN_TRY(f(reinterpret_cast<const void*>(kernel_of<float, false, Wide>()), Wide::kSmemBytes));
  return core::Status::success();
}

constexpr int kMaxDevices = 64;

// Raises the dynamic shared-memory limit of every variant on the current device, once: a bit per
// device, set after success (a racing second thread repeats the idempotent attribute calls).
core::Status prepare_device() {
  static std::atomic<uint64_t> done{0};
  int dev = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  const uint64_t bit = dev < kMaxDevices ? (uint64_t(1) << dev) : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit)) return core::Status::success();
  JHDNN_TRY(for_each_kernel([](const void* k, int smem) -> core::Status {
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    return core::Status::success();
  }));
  done.fetch_or(bit, std::memory_order_acq_rel);
  return core::Status::success();
}

template <class T, bool kVec, class C>
core::Status launch_cfg(const TcParams& prm, int groups, const void* x, const void* w, void* y, cudaStream_t stream) {
  const int64_t tiles_m = (prm.M + C::kBM - 1) / C::kBM;  // < 2^31 by the caller's M bound
  const dim3 grid(unsigned(tiles_m), unsigned((prm.Kg + C::kBN - 1) / C::kBN), unsigned(groups));
  conv_mma_kernel<T, kVec, C><<<grid, C::kThreads, C::kSmemBytes, stream>>>(
      prm, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y));
  JHDNN_LAUNCH_CHECK();
  return core::Status::success();
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// The 16-byte loader applies when every chunk of V reduction elements is V contiguous, 16-byte
// aligned elements of x and of w: unit channel strides, Cg a multiple of V, every other stride a
// multiple of V, base pointers 16-byte aligned.
bool vector_ok(const TcParams& p, const void* x, const void* w, int64_t V) {
  if (p.xs[1] != 1 || p.ws[1] != 1 || p.Cg % V != 0) return false;
  for (int i : {0, 2, 3, 4})
    if (p.xs[i] % V != 0 || p.ws[i] % V != 0) return false;
  return aligned16(x) && aligned16(w);
}

template <class T>
core::Status launch_typed(const TcParams& prm, int groups, const void* x, const void* w, void* y, int sm_count,
                          cudaStream_t stream) {
  constexpr int64_t V = 16 / int64_t(sizeof(T));
  if (!vector_ok(prm, x, w, V)) return launch_cfg<T, false, Wide>(prm, groups, x, w, y, stream);
  // Narrow tiles when a wide one would be at least half empty, or when wide tiles would leave
  // SMs idle (fewer blocks than 2 per SM) and narrow ones give more.
  const int64_t tiles_m = (prm.M + Wide::kBM - 1) / Wide::kBM;
  const int64_t wide_blocks = tiles_m * ((prm.Kg + Wide::kBN - 1) / Wide::kBN) * groups;
  const bool narrow = prm.Kg <= Narrow::kBN || wide_blocks < 2 * int64_t(sm_count);
  if (narrow) return launch_cfg<T, true, Narrow>(prm, groups, x, w, y, stream);
  return launch_cfg<T, true, Wide>(prm, groups, x, w, y, stream);
}

}  // namespace

core::Status launch_mma(jhdnnDataType_t dtype, const TcParams& prm, int groups, const void* x, const void* w,
                        void* y, int sm_count, cudaStream_t stream) {
  JHDNN_TRY(prepare_device());
  switch (dtype) {
    case JHDNN_DATA_HALF: return launch_typed<__half>(prm, groups, x, w, y, sm_count, stream);
    case JHDNN_DATA_BFLOAT16: return launch_typed<__nv_bfloat16>(prm, groups, x, w, y, sm_count, stream);
    case JHDNN_DATA_FLOAT: return launch_typed<float>(prm, groups, x, w, y, sm_count, stream);
    default: break;
  }
  return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "tensorcore_mma: data type %s", core::data_type_name(dtype));
}

core::Status load_mma_kernels() {
  JHDNN_TRY(for_each_kernel([](const void* k, int) -> core::Status {
    cudaFuncAttributes attr;
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, k));
    return core::Status::success();
  }));
  return prepare_device();
}

const core::DeviceInfo& cached_device_info() {
  static std::mutex mu;
  static core::DeviceInfo infos[kMaxDevices];
  static bool have[kMaxDevices] = {};
  static const core::DeviceInfo none{};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    cudaGetLastError();
    return none;  // sm() == 0: every tensor-core check refuses, with its reason
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!have[dev]) {
    if (!core::query_device(&infos[dev]).ok()) return none;
    have[dev] = true;
  }
  return infos[dev];
}

}  // namespace jhdnn::conv::tensorcore
