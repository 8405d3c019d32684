// depthwise: groups == C convolutions (MobileNet / EfficientNet layers) on CUDA cores.
//
// A depthwise layer has no reduction over channels: each output is R*S multiply-adds of one input
// channel, so it is bound by memory traffic, not arithmetic, and tensor cores have nothing to do.
// Two kernels (README.md has the design and the numbers behind it):
//
//   dw_nhwc_kernel  channels innermost in x and y (NHWC and its padded variants), multiplier 1.
//                   A thread owns 4 channels (one vector: 8 bytes of halves / bf16, 16 of floats)
//                   of kQpt adjacent output pixels of one row. A block owns a channel slice for
//                   many pixels; it first transposes its slice of the filter into shared memory as
//                   fp32, tap-major ([r][s][channel], already mirrored in CONVOLUTION mode), so a
//                   thread reads a tap's 4 weights with one float4 load. For 3x3 / 5x5 with stride
//                   1 or 2 and no horizontal dilation the filter row lives in registers and each
//                   input column of the row window is loaded once (predicated, all columns of a
//                   row in flight together) and used by every output that covers it. Registers
//                   are bounded per instance (64 for 16-bit 3x3: 50% occupancy) and the grid holds
//                   only resident blocks, which walk row segments grid-stride.
//   dw_any_kernel   everything else: NCHW, any strides, channel multiplier > 1, filters too large
//                   for shared memory. One thread computes kQpt adjacent outputs of one channel
//                   row, reading x and w through the caches (3x3 / 5x5 at stride 1 / 2: the
//                   filter row in registers and each input column of the window loaded once).
//
// Both accumulate in fp32, read y only when beta != 0, and need no workspace.
#include "conv/depthwise/depthwise.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "conv/direct/direct_common.cuh"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace depthwise {
namespace {

using direct::from_acc;
using direct::grid_for;
using direct::store_output;
using direct::to_acc;

constexpr int kQpt = 4;          // output pixels per thread along a row (both kernels)
constexpr int kBlock = 256;      // threads per block, at most (dw_nhwc_kernel uses ctv * pix <= 256)
constexpr int kMaxCtv = 32;      // channel vectors per block of dw_nhwc_kernel, at most
constexpr int64_t kSmemMaxBytes = 48 * 1024;  // the filter slice; no opt-in attribute needed
constexpr int kMaxGridY = 65535;

// Everything the kernels need, by value (kernel parameter space).
struct DwParams {
  int64_t N, C, K, H, W, P, Q;
  int64_t mult;  // channel multiplier K / C: output channel k reads input channel k / mult
  int R, S;
  int pad_h, pad_w, sh, sw, dh, dw;
  int flip;  // 1 in CONVOLUTION mode: the filter is read mirrored
  int64_t xs[4], ws[4], ys[4];  // element strides: n|k, c, h|r|p, w|s|q
  int64_t qblocks;  // ceil(Q / kQpt): output row segments
  int64_t items;    // work items (nhwc: pixel segments N*P*qblocks; any: N*K*P*qblocks)
  int ctv;          // dw_nhwc_kernel: channel vectors per block
  int pix;          // dw_nhwc_kernel: pixel segments per block (block = ctv * pix threads)
  int chan_fastest; // dw_any_kernel: consecutive threads take consecutive channels (channels-last y)
};

// ------------------------------------------------------------------ channel vectors of T

// A thread's channel vector is 4 channels for every type: one 16-byte load of floats, one 8-byte
// load of halves / bf16. (Until 375877d 16-bit types took 8 channels in 16 bytes: 32 accumulators,
// 24 filter taps and the 24-register input window of 4 pixels x 3x3 held 122 registers per
// thread, 25% occupancy, and the kernel was latency-bound at 4x the DRAM floor; README.md.)
template <class T> struct Vec;
template <> struct Vec<float> {
  static constexpr int kN = 4;
  using Raw = uint4;  // kN elements as loaded / stored
  __device__ static void unpack(const uint4& u, float (&v)[4]) {
    v[0] = __uint_as_float(u.x); v[1] = __uint_as_float(u.y);
    v[2] = __uint_as_float(u.z); v[3] = __uint_as_float(u.w);
  }
  __device__ static uint4 pack(const float (&v)[4]) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  }
};

// 16-bit types: two elements per 32-bit word, the lower address in the low half.
template <class T> struct Vec16 {
  static constexpr int kN = 4;
  using Raw = uint2;
  __device__ static float lo(unsigned w) { return bits_to_float(static_cast<unsigned short>(w & 0xFFFFu)); }
  __device__ static float hi(unsigned w) { return bits_to_float(static_cast<unsigned short>(w >> 16)); }
  __device__ static unsigned word(float a, float b) {
    return unsigned(float_to_bits(a)) | (unsigned(float_to_bits(b)) << 16);
  }
  __device__ static void unpack(const uint2& u, float (&v)[4]) {
    v[0] = lo(u.x); v[1] = hi(u.x); v[2] = lo(u.y); v[3] = hi(u.y);
  }
  __device__ static uint2 pack(const float (&v)[4]) { return make_uint2(word(v[0], v[1]), word(v[2], v[3])); }
  __device__ static float bits_to_float(unsigned short b);
  __device__ static unsigned short float_to_bits(float f);
};
template <> __device__ inline float Vec16<__half>::bits_to_float(unsigned short b) {
  return __half2float(__ushort_as_half(b));
}
template <> __device__ inline unsigned short Vec16<__half>::float_to_bits(float f) {
  return __half_as_ushort(__float2half_rn(f));
}
template <> __device__ inline float Vec16<__nv_bfloat16>::bits_to_float(unsigned short b) {
  return __bfloat162float(__ushort_as_bfloat16(b));
}
template <> __device__ inline unsigned short Vec16<__nv_bfloat16>::float_to_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
template <> struct Vec<__half> : Vec16<__half> {};
template <> struct Vec<__nv_bfloat16> : Vec16<__nv_bfloat16> {};

// kN consecutive channels starting at p as fp32. kVecIO: one vector load (p aligned, all valid);
// else element loads of the first nvalid channels, zeros for the rest (the channel tail).
template <class T, bool kVecIO>
__device__ __forceinline__ void load_channels(const T* p, int nvalid, float (&v)[Vec<T>::kN]) {
  if constexpr (kVecIO) {
    Vec<T>::unpack(__ldg(reinterpret_cast<const typename Vec<T>::Raw*>(p)), v);
  } else {
#pragma unroll
    for (int i = 0; i < Vec<T>::kN; ++i) v[i] = i < nvalid ? to_acc<float>(p[i]) : 0.f;
  }
}

// A predicated read-only vector load: the 8 / 16 bytes at address `a` when `pred`, else zeros.
// One predicated LDG and no branch: written as C++ (`if (pred) v = __ldg(p)`) the compiler gave
// each window column its own branch and recomputed the column's 64-bit address inside it (about
// 22 instructions per column under the 64-register bound). `a` is an integer so that the address
// of a column left of the image (never read) is plain unsigned arithmetic, not pointer overflow.
__device__ __forceinline__ void ld_nc_pred(uint2& v, uint64_t a, bool pred) {
  asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\t"
      "@p ld.global.nc.v2.u32 {%0, %1}, [%2];\n\t}"
      : "=&r"(v.x), "=&r"(v.y)
      : "l"(a), "r"(int(pred)));
}
__device__ __forceinline__ void ld_nc_pred(uint4& v, uint64_t a, bool pred) {
  asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\t"
      "mov.b32 %2, 0;\n\tmov.b32 %3, 0;\n\t@p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
      : "=&r"(v.x), "=&r"(v.y), "=&r"(v.z), "=&r"(v.w)
      : "l"(a), "r"(int(pred)));
}

// One vector store instruction (st.global.v2 / v4). A plain `*(uint4*)p = v` was split into
// 32-bit stores by the compiler front end (4 store instructions per 16 bytes; ncu at 375877d: 8 of
// 32 bytes used per sector and 38% excess sectors).
__device__ __forceinline__ void store_raw(void* p, uint2 v) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ void store_raw(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

template <class T, bool kVecIO>
__device__ __forceinline__ void store_channels(T* p, int nvalid, const float (&v)[Vec<T>::kN]) {
  if constexpr (kVecIO) {
    store_raw(p, Vec<T>::pack(v));
  } else {
#pragma unroll
    for (int i = 0; i < Vec<T>::kN; ++i)
      if (i < nvalid) p[i] = from_acc<T>(v[i]);
  }
}

// ------------------------------------------------------------------ channels-innermost kernel

// Blocks of kBlock threads per SM that dw_nhwc_kernel's registers must allow (__launch_bounds__;
// 4 = 64 registers = 50% occupancy, 3 = 80, 2 = 128): the most each instance takes without
// spilling (ptxas -v, CUDA 13.0; README.md has the table). The raw input window is kSpan columns of
// 8 (16-bit) or 16 (float) bytes, so wider windows and float need more registers.
template <class T, bool kVecIO, int kFS, int kSW>
constexpr int nhwc_min_blocks() {
  if constexpr (sizeof(T) == 2) {
    return kFS == 5 ? 3 : 4;
  } else {
    if (kFS == 0) return kVecIO ? 3 : 4;
    return kFS == 3 && kSW == 1 ? 4 : 2;
  }
}

// Output row segment `item` of the nhwc kernel as (n, p, q0). 32-bit division when every item
// index fits (all real problems): nvcc emits each 64-bit division as a run-time operand-size test,
// a 32-bit sequence and a call for wide operands; this skips the tests and branches.
__device__ __forceinline__ void split_item(const DwParams& prm, int64_t item, int64_t& n, int64_t& p, int64_t& q0) {
  if (prm.items <= INT_MAX) {  // uniform branch; item < items, qblocks <= items, P <= items
    const unsigned it = unsigned(item), qbl = unsigned(prm.qblocks), P = unsigned(prm.P);
    const unsigned rest = it / qbl;
    q0 = int64_t(it - rest * qbl) * kQpt;
    p = rest % P;
    n = rest / P;
  } else {
    const int64_t rest = item / prm.qblocks;
    q0 = (item - rest * prm.qblocks) * kQpt;
    p = rest % prm.P;
    n = rest / prm.P;
  }
}

// kFS > 0: the filter is 1 x ... x kFS wide with horizontal stride kSW and dilation 1, known at
// compile time (the register-reuse path); kFS == 0: any S, stride and dilation at run time.
template <class T, bool kVecIO, int kFS, int kSW>
__global__ void __launch_bounds__(kBlock, nhwc_min_blocks<T, kVecIO, kFS, kSW>())
    dw_nhwc_kernel(DwParams prm, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                   float alpha, float beta) {
  constexpr int V = Vec<T>::kN;
  static_assert(V == 4, "one float4 of filter taps per channel vector (w_s reads below)");
  extern __shared__ float4 smem_f4[];  // float4: 16-byte aligned for the tap loads below
  float* w_s = reinterpret_cast<float*>(smem_f4);
  const int CT = prm.ctv * V;  // channels of this block's slice
  const int64_t cblock = int64_t(blockIdx.y) * CT;
  const int R = prm.R, S = prm.S, RS = R * S;  // RS * CT floats fit in 48 KiB (host checks)

  // The block's filter slice, tap-major: w_s[(r * S + s) * CT + c] = w[cblock + c, 0, r', s'],
  // r', s' mirrored in CONVOLUTION mode, zero for channels past C. kStage independent loads per
  // thread before the first store, so a block waits for about one L2 round trip per kStage taps
  // instead of one per tap.
  constexpr int kStage = 4;
  const int total = RS * CT;  // <= 12288
  for (int i0 = threadIdx.x; i0 < total; i0 += kStage * blockDim.x) {
    float v[kStage];
#pragma unroll
    for (int u = 0; u < kStage; ++u) {
      const int i = i0 + u * int(blockDim.x);
      v[u] = 0.f;
      if (i < total) {
        const int c = i % CT;
        const int rs = i / CT;
        const int r = rs / S, s = rs - r * S;
        const int64_t k = cblock + c;
        if (k < prm.C) {
          const int rf = prm.flip ? R - 1 - r : r;
          const int sf = prm.flip ? S - 1 - s : s;
          v[u] = to_acc<float>(w[k * prm.ws[0] + rf * prm.ws[2] + sf * prm.ws[3]]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kStage; ++u) {
      const int i = i0 + u * int(blockDim.x);
      if (i < total) w_s[i] = v[u];
    }
  }
  __syncthreads();  // the only barrier: threads may leave after it

  const int cv = int(threadIdx.x) % prm.ctv;
  const int pi = int(threadIdx.x) / prm.ctv;
  const int64_t c0 = cblock + int64_t(cv) * V;  // first channel of this thread
  if (c0 >= prm.C) return;
  const int nvalid = prm.C - c0 < V ? int(prm.C - c0) : V;
  const float* wt = w_s + cv * V;  // tap rs of this thread's channels: wt + rs * CT (16-byte aligned)
  const T* xc = x + c0;

  for (int64_t item = int64_t(blockIdx.x) * prm.pix + pi; item < prm.items; item += int64_t(gridDim.x) * prm.pix) {
    int64_t n, p, q0;
    split_item(prm, item, n, p, q0);

    float acc[kQpt][V];
#pragma unroll
    for (int j = 0; j < kQpt; ++j)
#pragma unroll
      for (int v = 0; v < V; ++v) acc[j][v] = 0.f;

    if constexpr (kFS > 0) {
      // Register window: the filter row in registers and the kSpan input columns the kQpt outputs
      // read, each loaded once and used by every output that covers it.
      using Raw = typename Vec<T>::Raw;
      constexpr int kSpan = (kQpt - 1) * kSW + kFS;
      static_assert(kSpan <= 32, "column mask");
      const int64_t wi0 = q0 * kSW - prm.pad_w;
      // Which window columns lie inside the image: the same for every filter row, so decided once.
      unsigned cols = 0;
#pragma unroll
      for (int i = 0; i < kSpan; ++i)
        if (wi0 + i >= 0 && wi0 + i < prm.W) cols |= 1u << i;
      // Byte address of window column 0 of row h: xw + h * xs2b (unsigned arithmetic: column 0
      // may lie left of the image; only in-image columns are read).
      const uint64_t xs3b = uint64_t(prm.xs[3]) * sizeof(T);
      const uint64_t xs2b = uint64_t(prm.xs[2]) * sizeof(T);
      const uint64_t xw = reinterpret_cast<uint64_t>(xc) + uint64_t(n * prm.xs[0] + wi0 * prm.xs[3]) * sizeof(T);
      for (int r = 0; r < R; ++r) {
        const int64_t h = p * prm.sh - prm.pad_h + int64_t(r) * prm.dh;
        if (h < 0 || h >= prm.H) continue;  // the whole filter row lies in the padding
        // Every column of the row is requested before any is used: kSpan independent loads in
        // flight per thread, kept raw (8 bytes each for 16-bit types) and converted at use.
        Raw raw[kSpan];
        uint64_t a = xw + uint64_t(h) * xs2b;
#pragma unroll
        for (int i = 0; i < kSpan; ++i, a += xs3b) ld_nc_pred(raw[i], a, cols >> i & 1u);
        float wr[kFS][V];  // tap s of this row for the thread's channels: one 16-byte shared load
        const float* wrow = wt + r * S * CT;
#pragma unroll
        for (int s = 0; s < kFS; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(wrow + s * CT);
          wr[s][0] = f.x; wr[s][1] = f.y; wr[s][2] = f.z; wr[s][3] = f.w;
        }
#pragma unroll
        for (int i = 0; i < kSpan; ++i) {
          float xv[V];
          Vec<T>::unpack(raw[i], xv);  // zero bits unpack to +0.0 for every type
#pragma unroll
          for (int j = 0; j < kQpt; ++j) {
            const int s = i - j * kSW;  // tap of output j that reads column i (compile time)
            if (s >= 0 && s < kFS) {
#pragma unroll
              for (int v = 0; v < V; ++v) acc[j][v] = fmaf(wr[s][v], xv[v], acc[j][v]);
            }
          }
        }
      }
    } else {
      for (int r = 0; r < R; ++r) {
        const int64_t h = p * prm.sh - prm.pad_h + int64_t(r) * prm.dh;
        if (h < 0 || h >= prm.H) continue;  // the whole filter row lies in the padding
        const T* xr = xc + n * prm.xs[0] + h * prm.xs[2];
        const float* wrow = wt + r * S * CT;
        for (int s = 0; s < S; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(wrow + s * CT);
          const float wv[V] = {f.x, f.y, f.z, f.w};
          const int64_t ws0 = q0 * prm.sw - prm.pad_w + int64_t(s) * prm.dw;
#pragma unroll
          for (int j = 0; j < kQpt; ++j) {
            const int64_t wi = ws0 + int64_t(j) * prm.sw;
            if (wi < 0 || wi >= prm.W) continue;
            float xv[V];
            load_channels<T, kVecIO>(xr + wi * prm.xs[3], nvalid, xv);
#pragma unroll
            for (int v = 0; v < V; ++v) acc[j][v] = fmaf(wv[v], xv[v], acc[j][v]);
          }
        }
      }
    }

    // Epilogue: outputs past Q were computed on zeros / real data and are not stored.
    T* yp = y + n * prm.ys[0] + p * prm.ys[2] + c0;
#pragma unroll
    for (int j = 0; j < kQpt; ++j) {
      const int64_t q = q0 + j;
      if (q >= prm.Q) break;
      T* yq = yp + q * prm.ys[3];
      float out[V];
#pragma unroll
      for (int v = 0; v < V; ++v) out[v] = alpha * acc[j][v];
      if (beta != 0.f) {  // beta == 0 never reads y (it may hold NaN)
        float old[V];
        load_channels<T, kVecIO>(yq, nvalid, old);
#pragma unroll
        for (int v = 0; v < V; ++v) out[v] += beta * old[v];
      }
      store_channels<T, kVecIO>(yq, nvalid, out);
    }
  }
}

// ------------------------------------------------------------------ general kernel

// Work item of dw_any_kernel as (output channel k, row segment qb, output row p, image n) and the
// input channel kin = k / mult. Unsigned 32-bit divisions when every item index fits (then K,
// qblocks, P and mult do too), as in split_item: there were five 64-bit divisions per item of 4
// outputs, each an operand-size test and branch before its 32-bit sequence.
template <class I>
__device__ __forceinline__ void split_any_item_as(const DwParams& prm, I item, int64_t& k, int64_t& qb, int64_t& p,
                                                  int64_t& n, int64_t& kin) {
  const I K = I(prm.K), QB = I(prm.qblocks), P = I(prm.P);
  I kk, r;
  if (prm.chan_fastest) {  // neighbouring threads write neighbouring channels (channels-last y)
    r = item / K; kk = item - r * K;
    I r2 = r / QB; qb = int64_t(r - r2 * QB);
    I r3 = r2 / P; p = int64_t(r2 - r3 * P); n = int64_t(r3);
  } else {  // neighbouring threads write neighbouring row segments (NCHW-like y)
    r = item / QB; qb = int64_t(item - r * QB);
    I r2 = r / P; p = int64_t(r - r2 * P);
    I r3 = r2 / K; kk = r2 - r3 * K; n = int64_t(r3);
  }
  k = int64_t(kk);
  kin = prm.mult == 1 ? k : int64_t(kk / I(prm.mult));
}

__device__ __forceinline__ void split_any_item(const DwParams& prm, int64_t item, int64_t& k, int64_t& qb, int64_t& p,
                                               int64_t& n, int64_t& kin) {
  if (prm.items <= INT_MAX)  // uniform branch
    split_any_item_as<unsigned>(prm, unsigned(item), k, qb, p, n, kin);
  else
    split_any_item_as<int64_t>(prm, item, k, qb, p, n, kin);
}

// kFS > 0: filter width kFS, horizontal stride kSW, dilation 1 at compile time: the filter row in
// registers and each input column of the row window loaded once (as in dw_nhwc_kernel, one
// channel); kFS == 0: run-time loops.
template <class T, int kFS, int kSW>
__global__ void __launch_bounds__(kBlock)
    dw_any_kernel(DwParams prm, const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                  float alpha, float beta) {
  for (int64_t item = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; item < prm.items;
       item += int64_t(blockDim.x) * gridDim.x) {
    int64_t k, qb, p, n, kin;
    split_any_item(prm, item, k, qb, p, n, kin);
    const int64_t q0 = qb * kQpt;
    const T* xc = x + n * prm.xs[0] + kin * prm.xs[1];
    const T* wk = w + k * prm.ws[0];

    float acc[kQpt];
#pragma unroll
    for (int j = 0; j < kQpt; ++j) acc[j] = 0.f;
    for (int r = 0; r < prm.R; ++r) {
      const int64_t h = p * prm.sh - prm.pad_h + int64_t(r) * prm.dh;
      if (h < 0 || h >= prm.H) continue;
      const int rf = prm.flip ? prm.R - 1 - r : r;
      const T* xr = xc + h * prm.xs[2];
      const T* wr = wk + rf * prm.ws[2];
      if constexpr (kFS > 0) {
        float wv[kFS];  // wv[s]: tap s of this row, mirrored in CONVOLUTION mode
#pragma unroll
        for (int s = 0; s < kFS; ++s) wv[s] = to_acc<float>(wr[(prm.flip ? kFS - 1 - s : s) * prm.ws[3]]);
        constexpr int kSpan = (kQpt - 1) * kSW + kFS;
        const int64_t wi0 = q0 * kSW - prm.pad_w;
#pragma unroll
        for (int i = 0; i < kSpan; ++i) {
          const int64_t wi = wi0 + i;
          const float xv = wi >= 0 && wi < prm.W ? to_acc<float>(xr[wi * prm.xs[3]]) : 0.f;
#pragma unroll
          for (int j = 0; j < kQpt; ++j) {
            const int s = i - j * kSW;  // tap of output j that reads column i (compile time)
            if (s >= 0 && s < kFS) acc[j] = fmaf(wv[s], xv, acc[j]);
          }
        }
      } else {
        for (int s = 0; s < prm.S; ++s) {
          const int sf = prm.flip ? prm.S - 1 - s : s;
          const float wv = to_acc<float>(wr[sf * prm.ws[3]]);
          const int64_t ws0 = q0 * prm.sw - prm.pad_w + int64_t(s) * prm.dw;
#pragma unroll
          for (int j = 0; j < kQpt; ++j) {
            const int64_t wi = ws0 + int64_t(j) * prm.sw;
            if (wi >= 0 && wi < prm.W) acc[j] = fmaf(wv, to_acc<float>(xr[wi * prm.xs[3]]), acc[j]);
          }
        }
      }
    }
    T* yp = y + n * prm.ys[0] + k * prm.ys[1] + p * prm.ys[2];
#pragma unroll
    for (int j = 0; j < kQpt; ++j)
      if (q0 + j < prm.Q) store_output(yp + (q0 + j) * prm.ys[3], acc[j], alpha, beta);
  }
}

// ------------------------------------------------------------------ host side

// Channels per thread vector (Vec<T>::kN) and its bytes (the alignment its loads need).
constexpr int64_t kVecElems = 4;
int64_t vec_bytes(jhdnnDataType_t dt) { return kVecElems * (dt == JHDNN_DATA_FLOAT ? 4 : 2); }

// Which kernel, and its launch shape. Decided from the problem alone (fast / ctv / pix / smem) and
// the pointers (vec_io: vector loads need addresses aligned to the vector).
struct Plan {
  bool nhwc = false;  // dw_nhwc_kernel, else dw_any_kernel
  bool vec_io = false;
  int fs = 0, sw = 0;  // register-reuse instance (filter width, stride), 0 = run-time loops
  int ctv = 0, pix = 0;
  int64_t cblocks = 0;
  size_t smem = 0;
};

Plan make_plan(const ConvProblem& p, const void* x, const void* y) {
  Plan pl;
  const int64_t V = kVecElems;
  const int64_t mult = p.K / p.C;
  const bool chan_inner = p.x_stride[core::kC] == 1 && p.y_stride[core::kC] == 1;
  const int64_t rs = p.R * p.S;  // both < 2^31 (check_depthwise), so no overflow
  const int64_t max_rs = kSmemMaxBytes / (V * int64_t(sizeof(float)));  // one channel vector's taps
  const int64_t max_ctv_smem = rs <= max_rs ? kSmemMaxBytes / (rs * V * int64_t(sizeof(float))) : 0;
  const int64_t cvecs = (p.C + V - 1) / V;
  const int64_t cap = std::min<int64_t>(kMaxCtv, max_ctv_smem);
  const int64_t cblocks = cap >= 1 ? (cvecs + cap - 1) / cap : 0;
  const bool fixed_width = p.dil_w == 1 && (p.S == 3 || p.S == 5) && (p.stride_w == 1 || p.stride_w == 2);
  if (mult != 1 || !chan_inner || cap < 1 || cblocks > kMaxGridY) {  // dw_any_kernel (> 8 M channels: too)
    if (fixed_width) {
      pl.fs = int(p.S);
      pl.sw = p.stride_w;
    }
    return pl;
  }
  pl.nhwc = true;
  pl.cblocks = cblocks;
  pl.ctv = int((cvecs + cblocks - 1) / cblocks);  // balanced: the last slice is not nearly empty
  pl.pix = std::max(1, kBlock / pl.ctv);
  pl.smem = size_t(rs * pl.ctv * V) * sizeof(float);
  auto mult_of_v = [&](const int64_t* s) { return s[core::kN] % V == 0 && s[core::kH] % V == 0 && s[core::kW] % V == 0; };
  pl.vec_io = p.C % V == 0 && mult_of_v(p.x_stride) && mult_of_v(p.y_stride) &&
              reinterpret_cast<uintptr_t>(x) % vec_bytes(p.dtype) == 0 &&
              reinterpret_cast<uintptr_t>(y) % vec_bytes(p.dtype) == 0;
  if (pl.vec_io && fixed_width) {
    pl.fs = int(p.S);
    pl.sw = p.stride_w;
  }
  return pl;
}

// Everything this solver refuses, flat, first failure wins; nullptr when it takes the problem.
const char* check_depthwise(const ConvProblem& p) {
  if (const char* why = direct::check_common(p, /*allow_double=*/false)) return why;
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1)
    return "not a 2-D problem (3-D depthwise goes to DIRECT)";
  if (p.G != p.C) return "not depthwise: groups != C (one input channel per group required)";
  // C = groups = 1 is an ordinary convolution: left to the dense solvers (tensor cores, implicit
  // GEMM), so adding this solver changes no dispatch of a groups-1 problem.
  if (p.G == 1) return "not depthwise: groups 1 (an ordinary convolution, for the dense solvers)";
  if (p.R > INT_MAX || p.S > INT_MAX) return "filter height or width above 2^31 - 1";
  return nullptr;
}

DwParams make_params(const ConvProblem& p, const Plan& pl) {
  DwParams d{};
  d.N = p.N; d.C = p.C; d.K = p.K; d.H = p.H; d.W = p.W; d.P = p.P; d.Q = p.Q;
  d.mult = p.K / p.C;
  d.R = int(p.R); d.S = int(p.S);
  d.pad_h = p.pad_h; d.pad_w = p.pad_w;
  d.sh = p.stride_h; d.sw = p.stride_w; d.dh = p.dil_h; d.dw = p.dil_w;
  d.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  const int src[4] = {core::kN, core::kC, core::kH, core::kW};
  for (int i = 0; i < 4; ++i) {
    d.xs[i] = p.x_stride[src[i]];
    d.ws[i] = p.w_stride[src[i]];
    d.ys[i] = p.y_stride[src[i]];
  }
  d.qblocks = (p.Q + kQpt - 1) / kQpt;
  d.items = pl.nhwc ? p.N * p.P * d.qblocks : p.N * p.K * p.P * d.qblocks;
  d.ctv = pl.ctv;
  d.pix = pl.pix;
  d.chan_fastest = p.y_stride[core::kC] < p.y_stride[core::kW] ? 1 : 0;
  return d;
}

template <class T>
using KernelPtr = void (*)(DwParams, const T*, const T*, T*, float, float);

template <class T>
KernelPtr<T> nhwc_kernel(const Plan& pl) {
  if (!pl.vec_io) return dw_nhwc_kernel<T, false, 0, 0>;
  if (pl.fs == 3 && pl.sw == 1) return dw_nhwc_kernel<T, true, 3, 1>;
  if (pl.fs == 3 && pl.sw == 2) return dw_nhwc_kernel<T, true, 3, 2>;
  if (pl.fs == 5 && pl.sw == 1) return dw_nhwc_kernel<T, true, 5, 1>;
  if (pl.fs == 5 && pl.sw == 2) return dw_nhwc_kernel<T, true, 5, 2>;
  return dw_nhwc_kernel<T, true, 0, 0>;
}

template <class T>
KernelPtr<T> any_kernel(const Plan& pl) {
  if (pl.fs == 3 && pl.sw == 1) return dw_any_kernel<T, 3, 1>;
  if (pl.fs == 3 && pl.sw == 2) return dw_any_kernel<T, 3, 2>;
  if (pl.fs == 5 && pl.sw == 1) return dw_any_kernel<T, 5, 1>;
  if (pl.fs == 5 && pl.sw == 2) return dw_any_kernel<T, 5, 2>;
  return dw_any_kernel<T, 0, 0>;
}

// gridDim.x of dw_nhwc_kernel: one block per `pix` row segments, but no more than the GPU holds
// at once (all channel slices together): each block stages its filter slice once (a barrier and
// an L2 round trip) and then walks row segments grid-stride, instead of one segment per thread
// and a staging per block (1568 blocks of one segment each on dw32_112 before). If the occupancy
// query fails the grid is simply not capped (correct either way; the query changes only speed).
unsigned nhwc_grid_x(const void* kernel, int threads, const Plan& pl, int64_t items) {
  const unsigned work = grid_for(items, pl.pix);
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, pl.smem) != cudaSuccess) {
    (void)cudaGetLastError();
    return work;
  }
  const int64_t resident = int64_t(std::max(per_sm, 1)) * std::max(sms, 1);
  const int64_t cap = std::max<int64_t>(1, resident / pl.cblocks);
  return unsigned(std::min<int64_t>(work, cap));
}

template <class T>
Status launch(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream) {
  const Plan pl = make_plan(p, a.x, a.y);
  const DwParams prm = make_params(p, pl);
  const T* x = static_cast<const T*>(a.x);
  const T* w = static_cast<const T*>(a.w);
  T* y = static_cast<T*>(a.y);
  if (pl.nhwc) {
    const KernelPtr<T> kernel = nhwc_kernel<T>(pl);
    const int threads = pl.ctv * pl.pix;
    const dim3 grid(nhwc_grid_x(reinterpret_cast<const void*>(kernel), threads, pl, prm.items), unsigned(pl.cblocks));
    kernel<<<grid, unsigned(threads), pl.smem, stream>>>(prm, x, w, y, float(a.alpha), float(a.beta));
  } else {
    any_kernel<T>(pl)<<<grid_for(prm.items, kBlock), kBlock, 0, stream>>>(prm, x, w, y, float(a.alpha),
                                                                         float(a.beta));
  }
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

template <class T>
Status load_typed() {
  return direct::load_kernels(dw_nhwc_kernel<T, false, 0, 0>, dw_nhwc_kernel<T, true, 0, 0>,
                              dw_nhwc_kernel<T, true, 3, 1>, dw_nhwc_kernel<T, true, 3, 2>,
                              dw_nhwc_kernel<T, true, 5, 1>, dw_nhwc_kernel<T, true, 5, 2>,
                              dw_any_kernel<T, 0, 0>, dw_any_kernel<T, 3, 1>, dw_any_kernel<T, 3, 2>,
                              dw_any_kernel<T, 5, 1>, dw_any_kernel<T, 5, 2>);
}

class DepthwiseSolver final : public ConvSolver {
 public:
  const char* name() const override { return "depthwise"; }
  // cuDNN reports its depthwise kernel as IMPLICIT_PRECOMP_GEMM; registered before tensorcore_mma
  // so that algorithm's dispatch takes depthwise problems here (README.md, "Math type").
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    if (const char* why = check_depthwise(p)) return Verdict::no(why);
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem&) const override { return 0; }

  Status run(const ConvProblem& p, const ConvArgs& a, void*, size_t, cudaStream_t stream) const override {
    // Workspace: none needed, so any ws / ws_bytes is fine.
    if (const char* why = check_depthwise(p))
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "depthwise: %s", why);
    if (!a.x || !a.w || !a.y) return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "depthwise: x, w or y is null");
    switch (p.dtype) {
      case JHDNN_DATA_FLOAT: return launch<float>(p, a, stream);
      case JHDNN_DATA_HALF: return launch<__half>(p, a, stream);
      case JHDNN_DATA_BFLOAT16: return launch<__nv_bfloat16>(p, a, stream);
      default: break;
    }
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "depthwise: unsupported data type");
  }

  Status load_kernels() const override {
    JHDNN_TRY(load_typed<float>());
    JHDNN_TRY(load_typed<__half>());
    return load_typed<__nv_bfloat16>();
  }
};

}  // namespace
}  // namespace depthwise

const ConvSolver& depthwise_solver() {
  static const auto& s = *new depthwise::DepthwiseSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
