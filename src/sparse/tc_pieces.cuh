// The tensor-core resident kernel's feature pieces and planes (dnn_resident_tc.cu), shared with the probe it grew
// from (tools/spdnn/spdnn_tchead_probe.cu): a fp32 feature as bf16 pieces, and where a feature sits in the
// neuron-major bf16 planes that ldmatrix reads.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "sparse/tc_tables.h"

namespace jhdnn::sparse {

__device__ __forceinline__ uint32_t bf2_bits(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }

// a, b (images t, t + 1) as kPieces bf16 pairs: hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid) (kPieces
// 3: their sum is x but for the last bit or so; 1: x rounded to bf16).
template <int kPieces>
__device__ __forceinline__ void split_pair(float a, float b, uint32_t (&p)[kPieces]) {
  const __nv_bfloat162 hi = __floats2bfloat162_rn(a, b);
  p[0] = bf2_bits(hi);
  if constexpr (kPieces == 3) {
    const float2 hf = __bfloat1622float2(hi);
    const float ra = a - hf.x, rb = b - hf.y;
    const __nv_bfloat162 mid = __floats2bfloat162_rn(ra, rb);
    const float2 mf = __bfloat1622float2(mid);
    p[1] = bf2_bits(mid);
    p[2] = bf2_bits(__floats2bfloat162_rn(ra - mf.x, rb - mf.y));
  }
}

// Columns col[0..7] of the fp32 row xi (a negative column gives 0) rounded to bf16, one piece, as four pairs: two
// 16-byte loads where `vec` says the columns are consecutive and 16-byte aligned, else one load a column. (The input
// conversion of the streamed and the planes kernels.)
__device__ __forceinline__ uint4 load8_bf16(const float* xi, const int (&col)[8], bool vec) {
  float v[8];
  if (vec) {
    const float4 v0 = __ldg(reinterpret_cast<const float4*>(xi + col[0]));
    const float4 v1 = __ldg(reinterpret_cast<const float4*>(xi + col[0] + 4));
    v[0] = v0.x, v[1] = v0.y, v[2] = v0.z, v[3] = v0.w, v[4] = v1.x, v[5] = v1.y, v[6] = v1.z, v[7] = v1.w;
  } else {
#pragma unroll
    for (int t = 0; t < 8; ++t) v[t] = col[t] >= 0 ? __ldg(xi + col[t]) : 0.f;
  }
  uint32_t p[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    uint32_t one[1];
    split_pair<1>(v[2 * q], v[2 * q + 1], one);
    p[q] = one[0];
  }
  return make_uint4(p[0], p[1], p[2], p[3]);
}

// One piece: the pair a, b (images t, t + 1) through ReLU and the clamp, rounded to bf16: bf16(min(max(x, 0), clamp))
// as min(max(bf16(x), 0), clamp2) on the rounded pair. Rounding is monotone and commutes with max and min, and 0 is
// exact, so the bits are the same (a NaN too: bf16 max returns the other operand, like fmaxf), in 3 instructions a
// pair (cvt, max, min) in place of 5 (4 FMNMX, cvt). clamp2: the clamp rounded to bf16, in both halves.
__device__ __forceinline__ uint32_t relu_clamp_pair(float a, float b, __nv_bfloat162 clamp2) {
  return bf2_bits(__hmin2(__hmax2(__floats2bfloat162_rn(a, b), __float2bfloat162_rn(0.f)), clamp2));
}

// Plane row k's byte offset and its half (images 0-7 or 8-15): a row is the tile's 16 images, 32 bytes, its halves
// swapped where bit 2 xor bit 3 of k is set, so that an 8-row ldmatrix phase, a copy phase and the epilogue's
// stores take the fewest wavefronts (a CPU count of the banks, session 49's review).
__device__ __forceinline__ int plane_offset(int k, int half) {
  return k * 32 + (((half ^ (k >> 2) ^ (k >> 3)) & 1) << 4);
}

// The plane row of renamed column c: the A fragments' columns are permuted (tc_kc_of_offset), and ldmatrix hands
// row k of a block to logical column k, so column c's feature sits at the row of its logical column.
__host__ __device__ __forceinline__ int plane_row(int c) { return (c & ~15) | tc_kc_of_offset(c & 15); }

}  // namespace jhdnn::sparse
