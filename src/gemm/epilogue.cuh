// Epilogue functors: what a GEMM kernel does with each accumulator before it stores it.
//
// A kernel is templated on its epilogue, so a fused operation (bias, activation, residual) costs
// no extra pass over C. The contract, for an epilogue type E:
//   bool E::reads_c() const             -- true when the kernel must load C (beta != 0); when false
//                                          C is never read (it may hold NaN).
//   float E::operator()(row, col, acc, c) const
//                                       -- the value stored at C(row, col); c is C's old value, or
//                                          0 when reads_c() is false. row/col index the kernel's
//                                          column-major C (see gemm.h: row-major calls swap them).
// Only the instantiations the library uses are compiled (LinearCombination today); the others are
// here so a fused caller instantiates them without touching the kernels.
#pragma once

#include <cstdint>

namespace jhdnn::gemm {

// C = alpha * acc + beta * C.
struct LinearCombination {
  float alpha = 1.f, beta = 0.f;
  __host__ __device__ bool reads_c() const { return beta != 0.f; }
  __device__ __forceinline__ float operator()(int64_t, int64_t, float acc, float c) const {
    return beta != 0.f ? alpha * acc + beta * c : alpha * acc;
  }
};

struct Identity {
  __device__ __forceinline__ float operator()(float v) const { return v; }
};
struct Relu {
  __device__ __forceinline__ float operator()(float v) const { return v > 0.f ? v : 0.f; }
};

// C = act(alpha * acc + beta * C + bias[row or col]) + residual(row, col): the convolution +
// bias + activation (+ skip connection) epilogue. bias / residual may be null (then skipped).
template <class Act>
struct BiasActivation {
  float alpha = 1.f, beta = 0.f;
  const float* bias = nullptr;  // one value per row (bias_per_row) or per column
  bool bias_per_row = true;
  const float* residual = nullptr;  // column-major, leading dimension ld_residual
  int64_t ld_residual = 0;
  Act act{};
  __host__ __device__ bool reads_c() const { return beta != 0.f; }
  __device__ __forceinline__ float operator()(int64_t row, int64_t col, float acc, float c) const {
    float v = alpha * acc;
    if (beta != 0.f) v += beta * c;
    if (bias != nullptr) v += bias[bias_per_row ? row : col];
    v = act(v);
    if (residual != nullptr) v += residual[row + col * ld_residual];
    return v;
  }
};

// One thread's 8 x 8 accumulator fragment of the library SGEMM kernels (sgemm_kernel.cuh,
// sgemm_async.cuh) through the epilogue into column-major C (ld p.ldc) of the tile at (m0, n0): rows
// frag_m + {0..3, 32..35}, columns frag_n + {0..3, 16..19}; acc[h * 4 + i][j] is row frag_m + 32 h + i
// of column j (j >= 4: frag_n + 16 + j - 4). Column n of the thread holds 4 + 4 consecutive rows: one
// float4 each when p.c_vec and all 4 rows are inside, else element by element; nothing at or past
// m_left / n_left is touched, and C is read only when the epilogue needs it.
template <class Epi, class Params>
__device__ __forceinline__ void store_fragment_8x8(const Epi& epi, bool reads_c, const float (&acc)[8][8], float* c,
                                                   const Params& p, int m0, int n0, int frag_m, int frag_n,
                                                   int m_left, int n_left) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int nl = frag_n + (j < 4 ? j : 12 + j);  // j >= 4: + 16
    if (nl >= n_left) continue;
    const int64_t col = int64_t(n0) + nl;
    float* ccol = c + col * p.ldc;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int ml = frag_m + h * 32;
      const int64_t row = int64_t(m0) + ml;
      if (p.c_vec && ml + 3 < m_left) {
        float4 old = make_float4(0.f, 0.f, 0.f, 0.f);
        if (reads_c) old = *reinterpret_cast<const float4*>(ccol + row);
        float4 v;
        v.x = epi(row + 0, col, acc[h * 4 + 0][j], old.x);
        v.y = epi(row + 1, col, acc[h * 4 + 1][j], old.y);
        v.z = epi(row + 2, col, acc[h * 4 + 2][j], old.z);
        v.w = epi(row + 3, col, acc[h * 4 + 3][j], old.w);
        *reinterpret_cast<float4*>(ccol + row) = v;
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (ml + i >= m_left) break;
          const float old = reads_c ? ccol[row + i] : 0.f;
          ccol[row + i] = epi(row + i, col, acc[h * 4 + i][j], old);
        }
      }
    }
  }
}

}  // namespace jhdnn::gemm
