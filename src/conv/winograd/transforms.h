// The Winograd transform matrices of the non-fused solvers, as data, and the one routine that
// applies them (README.md in this folder). Host and device: the kernels use it, and the CPU test
// of tests/test_conv_winograd.cpp ("[cpu]") checks on the host that each F's three matrices and
// this arithmetic compute a 3x3 correlation.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define JHDNN_WINO_HD __host__ __device__
#define JHDNN_WINO_INLINE __forceinline__
#else
#define JHDNN_WINO_HD
#define JHDNN_WINO_INLINE inline
#endif
// Every loop of combine / sandwich is unrolled on the device, so each coefficient is a constant and
// the zero / +-1 tests vanish at compile time; the host compiler (CPU test) runs the loops as written.
#if defined(__CUDA_ARCH__)
#define JHDNN_WINO_UNROLL _Pragma("unroll")
#else
#define JHDNN_WINO_UNROLL
#endif

namespace jhdnn::conv::winograd {

// ---------------------------------------------------------------- the transform matrices

// F(2x2, 3x3), interpolation points 0, 1, -1 and infinity (Lavin & Gray 2016).
struct F2 {
  static constexpr int m = 2;
  static constexpr const char* name = "winograd_nonfused_2x2";
  struct BT {  // a x a
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
      return v[i][j];
    }
  };
  struct G {  // a x 3
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
      return v[i][j];
    }
  };
  struct AT {  // m x a
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
      return v[i][j];
    }
  };
};

// F(4x4, 3x3), interpolation points 0, -1, 1, 1/2, -2 and infinity: measured in fp32 (README.md,
// tests/sim/sim_winograd.py) ~1.5-2x more accurate than the common 0, +-1, +-2 (Barabasz et al.,
// "Error analysis and improving the accuracy of Winograd convolution", 2020, found the same).
// Each row of B^T is scaled so its smallest non-zero entry is +-1 (the inverse scale goes to G).
struct F4 {
  static constexpr int m = 4;
  static constexpr const char* name = "winograd_nonfused_4x4";
  struct BT {
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[6][6] = {{1, -1.5f, -2, 1.5f, 1, 0},  {0, 2, -5, 1, 2, 0},  {0, -2, 1, 5, 2, 0},
                                 {0, -2, -1, 2, 1, 0},        {0, 1, -2, -1, 2, 0}, {0, 1, -1.5f, -2, 1.5f, 1}};
      return v[i][j];
    }
  };
  struct G {
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[6][3] = {{1, 0, 0},
                                 {-1.f / 6, 1.f / 6, -1.f / 6},
                                 {1.f / 6, 1.f / 6, 1.f / 6},
                                 {-16.f / 15, -8.f / 15, -4.f / 15},
                                 {1.f / 30, -1.f / 15, 2.f / 15},
                                 {0, 0, 1}};
      return v[i][j];
    }
  };
  struct AT {
    JHDNN_WINO_HD static constexpr float at(int i, int j) {
      constexpr float v[4][6] = {
          {1, 1, 1, 1, 1, 0}, {0, -1, 1, 0.5f, -2, 0}, {0, 1, 1, 0.25f, 4, 0}, {0, -1, 1, 0.125f, -8, 1}};
      return v[i][j];
    }
  };
};

// c * v rounded on its own: never contracted into a following add (nvcc contracts a * b + c into
// an FMA by default; the host compiler on x86-64 without -mfma does not).
JHDNN_WINO_HD JHDNN_WINO_INLINE float mul_rn(float c, float v) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(c, v);
#else
  return c * v;
#endif
}

// sum_k Mat(i, k) * v[k] with the coefficients known at compile time (every loop around a call is
// unrolled): zeros are skipped, +-1 become adds / subtracts, the rest FMAs, in k order (the order
// tests/sim/sim_winograd.py models; __fmul_rn keeps the first product from being contracted into
// the next add, so every rounding is the one the simulation makes).
template <class Mat, int N>
JHDNN_WINO_HD JHDNN_WINO_INLINE float combine(int i, const float (&v)[N]) {
  float acc = 0.f;
  bool first = true;
JHDNN_WINO_UNROLL
  for (int k = 0; k < N; ++k) {
    const float c = Mat::at(i, k);
    if (c == 0.f) continue;
    if (first)
      acc = c == 1.f ? v[k] : c == -1.f ? -v[k] : mul_rn(c, v[k]);
    else
      acc = c == 1.f ? acc + v[k] : c == -1.f ? acc - v[k] : std::fma(c, v[k], acc);
    first = false;
  }
  return acc;
}

// out = L d L^T for an R x N matrix L: columns first (t = L d), then rows (out = t L^T).
template <class L, int R, int N>
JHDNN_WINO_HD JHDNN_WINO_INLINE void sandwich(const float (&d)[N][N], float (&out)[R][R]) {
  float t[R][N];
JHDNN_WINO_UNROLL
  for (int j = 0; j < N; ++j) {
    float col[N];
JHDNN_WINO_UNROLL
    for (int k = 0; k < N; ++k) col[k] = d[k][j];
JHDNN_WINO_UNROLL
    for (int i = 0; i < R; ++i) t[i][j] = combine<L>(i, col);
  }
JHDNN_WINO_UNROLL
  for (int i = 0; i < R; ++i)
JHDNN_WINO_UNROLL
    for (int j = 0; j < R; ++j) out[i][j] = combine<L>(j, t[i]);
}

}  // namespace jhdnn::conv::winograd
