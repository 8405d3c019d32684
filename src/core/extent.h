// Extent and overlap arithmetic of strided dense matrices, shared by the argument checks of the API
// shims (GEMM, SpMM, the sparse layer), so that every call bounds its buffers the same way.
#pragma once

#include <cstdint>

namespace jhdnn::core {

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
inline bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto lo_a = reinterpret_cast<uintptr_t>(a), lo_b = reinterpret_cast<uintptr_t>(b);
  return lo_a < lo_b + uintptr_t(b_bytes) && lo_b < lo_a + uintptr_t(a_bytes);
}

// Elements from a stored (rows x cols, ld) column-major matrix's start to its last element + 1,
// over the batch (a row-major r x c matrix is the column-major c x r one). -1 on int64 overflow.
inline int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
  int64_t s, t;
  if (rows == 0 || cols == 0) return 0;
  if (__builtin_mul_overflow(cols - 1, ld, &s) || __builtin_add_overflow(s, rows, &s)) return -1;
  if (__builtin_mul_overflow(batch - 1, stride, &t) || __builtin_add_overflow(s, t, &s)) return -1;
  return s;
}

}  // namespace jhdnn::core
