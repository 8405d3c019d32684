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

}  // namespace jhdnn::gemm
