// Division of non-negative int32 values by a divisor fixed for a whole kernel launch, with one
// multiply-high, one add and one shift instead of the ~20-instruction integer division sequence
// (Granlund & Montgomery, "Division by invariant integers using multiplication", 1994).
//
// For d >= 1 and l = ceil(log2 d): m = floor(2^32 * (2^l - d) / d) + 1, and for 0 <= n < 2^31
//   n / d == (umulhi(m, n) + n) >> l
// (umulhi(m, n) < n, so the sum stays below 2^32). The host half is exhaustively spot-checked in
// tests/test_conv_implicit_gemm.cpp.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define JHDNN_HD __host__ __device__ __forceinline__
#else
#define JHDNN_HD inline
#endif

namespace jhdnn::conv::igemm {

struct FastDivmod {
  int32_t d = 1;
  uint32_t m = 1;
  uint32_t l = 0;

  FastDivmod() = default;
  // d must be in [1, 2^31).
  explicit FastDivmod(int32_t divisor) : d(divisor) {
    uint32_t shift = 0;
    while ((uint64_t(1) << shift) < uint64_t(divisor)) ++shift;
    l = shift;
    m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - uint64_t(divisor))) / uint64_t(divisor) + 1);
  }

  // n in [0, 2^31).
  JHDNN_HD int32_t div(int32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t hi = __umulhi(m, uint32_t(n));
#else
    const uint32_t hi = uint32_t((uint64_t(m) * uint32_t(n)) >> 32);
#endif
    return int32_t((hi + uint32_t(n)) >> l);
  }
  // quotient, and n - quotient * d in *rem.
  JHDNN_HD int32_t divmod(int32_t n, int32_t* rem) const {
    const int32_t q = div(n);
    *rem = n - q * d;
    return q;
  }
};

}  // namespace jhdnn::conv::igemm
