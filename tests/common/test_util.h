// Test utilities shared by every jhDNN test and benchmark: rounding to device types, seeded fills,
// host <-> device byte images, tolerances and element-wise comparison. Pure host C++ (no CUDA).
//
// Conventions: tensors live on the host as std::vector<double> holding exactly the values the
// device sees (already rounded to the device type), addressed through five logical dims
// (n, c, d, h, w) and five element strides, as in core::ConvProblem.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/conv_problem.h"
#include "jhdnn/jhdnn.h"

namespace jhdnn::test {

// ---------------------------------------------------------------- rounding, conversion

// v rounded to the nearest value of type dt, ties to even, with IEEE overflow to +-inf and
// gradual underflow (subnormals):
//   FLOAT     binary32
//   HALF      binary16 (max 65504; 65520 and up round to inf; subnormal step 2^-24)
//   BFLOAT16  8-bit significand, float's exponent range (for any v that is a float this is the
//             usual "RNE on the float bits")
//   DOUBLE    identity
// NaN stays NaN. Throws std::invalid_argument for integer / boolean types.
double round_to(double v, jhdnnDataType_t dt);

// Bit patterns of the 16-bit types (plain C++ bit manipulation; v is rounded first).
uint16_t double_to_half_bits(double v);
double half_bits_to_double(uint16_t bits);
uint16_t double_to_bf16_bits(double v);
double bf16_bits_to_double(uint16_t bits);

// Bytes the device holds for v in type dt (FLOAT, DOUBLE, HALF, BFLOAT16; little-endian host):
// v.size() * element-size bytes. Values are rounded to dt on the way.
std::vector<unsigned char> to_device_bytes(const std::vector<double>& v, jhdnnDataType_t dt);
// The inverse: count elements of type dt at bytes, widened (exactly) to double.
std::vector<double> from_device_bytes(const void* bytes, size_t count, jhdnnDataType_t dt);

// Element size in bytes of FLOAT, DOUBLE, HALF, BFLOAT16 (throws for others).
size_t dtype_size(jhdnnDataType_t dt);

// ---------------------------------------------------------------- seeds and fills

// The run's seed: JHDNN_TEST_SEED from the environment when set (decimal or 0x-hex), else one
// drawn from std::random_device. Drawn once per process and cached, so every call in a run returns
// the same value: print it once, and rerunning with JHDNN_TEST_SEED=<it> replays the whole run.
uint64_t test_seed();

// A well-mixed seed for one tensor / problem of a run: mix_seed(test_seed(), salt).
uint64_t mix_seed(uint64_t seed, uint64_t salt);
// FNV-1a hash, for turning a problem name into a salt.
uint64_t hash_string(const std::string& s);

// splitmix64: tiny, good enough for test data, and bit-identical on every platform.
struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 random bits.
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// Uniform values in [lo, hi), each already rounded to dt (so host and device see the same
// numbers). Deterministic in (size, dt, seed, lo, hi). Never all zero: if it came out so,
// element 0 is set to a non-zero value of the range.
void fill_random(std::vector<double>& v, jhdnnDataType_t dt, uint64_t seed, double lo = -1.0,
                 double hi = 1.0);
// Uniform integers in [lo, hi] (inclusive). Small integers are exact in every dtype, and so are
// their sums while they stay below 2^11 (HALF), 2^8 (BFLOAT16 output), 2^24 (FLOAT): that allows
// exact comparisons. Never all zero.
void fill_random_ints(std::vector<double>& v, uint64_t seed, int lo, int hi);

// ---------------------------------------------------------------- tensor indexing

// Logical dims and strides of a problem's three tensors (n, c, d, h, w order; for w: k, c/G, t, r, s).
std::array<int64_t, 5> x_dims(const core::ConvProblem& p);
std::array<int64_t, 5> w_dims(const core::ConvProblem& p);
std::array<int64_t, 5> y_dims(const core::ConvProblem& p);

// Elements a strided tensor spans: 1 + sum (dim_i - 1) * stride_i (0 when any dim is 0).
int64_t span_elems(const int64_t dims[5], const int64_t strides[5]);

// Calls f(offset) for every logical element, in row-major order of (n, c, d, h, w).
template <class F>
void for_each_index(const int64_t dims[5], const int64_t strides[5], F f) {
  for (int64_t i0 = 0; i0 < dims[0]; ++i0)
    for (int64_t i1 = 0; i1 < dims[1]; ++i1)
      for (int64_t i2 = 0; i2 < dims[2]; ++i2)
        for (int64_t i3 = 0; i3 < dims[3]; ++i3) {
          const int64_t base = i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3];
          for (int64_t i4 = 0; i4 < dims[4]; ++i4) f(base + i4 * strides[4]);
        }
}

// dst[logical i] = src[logical i] for every logical element (re-layout between two stride sets).
void copy_tensor(const double* src, const int64_t src_strides[5], double* dst, const int64_t dst_strides[5],
                 const int64_t dims[5]);

// ---------------------------------------------------------------- tolerance and comparison

// An element passes when |got - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol, rtol;
};

// Bound on the error of one convolution output computed by a correct kernel from inputs in
// [-1, 1] (already rounded to dt), accumulating in fp32 (fp64 for DOUBLE), with reduction length
// K = (C/G) * T * R * S. tf32_products: the kernel rounds its inputs to TF32 (10-bit mantissa)
// before multiplying (FLOAT data under tensor-op math). See test_util.cpp for the derivation.
// Winograd / FFT need their own (norm-wise) bounds; see relative_l2_error.
Tolerance conv_tolerance(jhdnnDataType_t dt, int64_t reduction_length, bool tf32_products = false);

struct CompareResult {
  bool ok = true;
  int64_t checked = 0;      // logical elements visited
  int64_t n_bad = 0;        // outside tolerance, or non-finite
  int64_t n_nonfinite = 0;  // NaN / inf in got (always bad)
  double max_abs_err = 0;   // over finite elements
  double max_rel_err = 0;   // |got - ref| / |ref| over finite elements with |ref| >= atol
  int64_t worst_index = -1; // row-major logical index (over dims) of the worst element; -1: none
  // Details of the worst element (a non-finite one if any, else the largest error / allowed ratio).
  int64_t worst_coord[5] = {-1, -1, -1, -1, -1};
  double worst_got = 0, worst_ref = 0;
  Tolerance tol{0, 0};

  // One line: "ok: 1000 checked, max abs 1.2e-06 ..." or "FAILED: 3/1000 bad (1 non-finite) ...
  // worst (n,c,d,h,w)=(0,5,0,3,7): got nan ref 1.25".
  std::string summary() const;
};

// Compares the logical elements (dims n, c, d, h, w) of got and ref, both addressed with strides.
// NaN / inf in got always fails.
CompareResult compare_tensor(const double* got, const double* ref, const int64_t dims[5],
                             const int64_t strides[5], Tolerance tol);

// ||got - ref||_2 / ||ref||_2 over the logical elements (the norm-wise error used for Winograd /
// FFT); +inf if got has a non-finite element; 0 when both are zero.
double relative_l2_error(const double* got, const double* ref, const int64_t dims[5],
                         const int64_t strides[5]);

}  // namespace jhdnn::test
