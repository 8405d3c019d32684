// Test utilities: see test_util.h.
#include "common/test_util.h"

#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

namespace jhdnn::test {
namespace {

// Round v to a binary floating-point format with `mant_bits` explicit significand bits, minimum
// normal exponent `emin` and largest finite value `max_finite`: round to nearest, ties to even,
// gradual underflow, overflow to inf. Works directly from the double (no intermediate float, so
// no double rounding).
double round_binary(double v, int mant_bits, int emin, double max_finite) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e2 = 0;
  std::frexp(v, &e2);                             // |v| = m * 2^e2, m in [0.5, 1)
  const int exponent = std::max(e2 - 1, emin);    // floor(log2 |v|), clamped for subnormals
  const double quantum = std::ldexp(1.0, exponent - mant_bits);  // spacing of the format there
  const double a = std::fabs(v) / quantum;        // exact: scaling by a power of two
  double f = std::floor(a);
  const double frac = a - f;                      // exact (a < 2^(mant_bits + 2))
  if (frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0.0)) f += 1.0;  // ties to even
  const double r = f * quantum;
  if (r > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return std::copysign(r, v);
}

constexpr double kHalfMax = 65504.0;
constexpr double kBf16Max = 3.38953138925153547590470800371487866880e+38;  // (2 - 2^-7) * 2^127

template <class T>
T load_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // little-endian host (x86-64, aarch64 Linux)
  return v;
}

}  // namespace

// ---------------------------------------------------------------- rounding, conversion

double round_to(double v, jhdnnDataType_t dt) {
  switch (dt) {
    case JHDNN_DATA_DOUBLE: return v;
    case JHDNN_DATA_FLOAT: return round_binary(v, 23, -126, double(FLT_MAX));
    case JHDNN_DATA_HALF: return round_binary(v, 10, -14, kHalfMax);
    case JHDNN_DATA_BFLOAT16: return round_binary(v, 7, -126, kBf16Max);
    default: throw std::invalid_argument("round_to: not a floating-point jhdnnDataType_t");
  }
}

uint16_t double_to_half_bits(double v) {
  const double r = round_to(v, JHDNN_DATA_HALF);
  const uint16_t sign = std::signbit(r) ? 0x8000 : 0;
  if (std::isnan(r)) return uint16_t(sign | 0x7E00);
  if (std::isinf(r)) return uint16_t(sign | 0x7C00);
  const double a = std::fabs(r);
  if (a == 0.0) return sign;
  int e2 = 0;
  std::frexp(a, &e2);
  const int exponent = e2 - 1;
  if (exponent < -14) {  // subnormal: a = mant * 2^-24
    return uint16_t(sign | uint16_t(std::ldexp(a, 24)));
  }
  const uint16_t mant = uint16_t((std::ldexp(a, -exponent) - 1.0) * 1024.0);  // exact
  return uint16_t(sign | uint16_t((exponent + 15) << 10) | mant);
}

double half_bits_to_double(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int e = (bits >> 10) & 0x1F;
  const int mant = bits & 0x3FF;
  if (e == 0x1F)
    return mant ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * std::ldexp(double(mant), -24);
  return sign * std::ldexp(1.0 + mant / 1024.0, e - 15);
}

uint16_t double_to_bf16_bits(double v) {
  const double r = round_to(v, JHDNN_DATA_BFLOAT16);
  const float f = static_cast<float>(r);  // exact (or inf / NaN)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return uint16_t(((u >> 16) & 0x8000) | 0x7FC0);
  return uint16_t(u >> 16);  // low 16 bits are zero after rounding
}

double bf16_bits_to_double(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return double(f);
}

size_t dtype_size(jhdnnDataType_t dt) {
  switch (dt) {
    case JHDNN_DATA_FLOAT: return 4;
    case JHDNN_DATA_DOUBLE: return 8;
    case JHDNN_DATA_HALF:
    case JHDNN_DATA_BFLOAT16: return 2;
    default: throw std::invalid_argument("dtype_size: not a floating-point jhdnnDataType_t");
  }
}

std::vector<unsigned char> to_device_bytes(const std::vector<double>& v, jhdnnDataType_t dt) {
  const size_t es = dtype_size(dt);
  std::vector<unsigned char> out(v.size() * es);
  unsigned char* p = out.data();
  for (size_t i = 0; i < v.size(); ++i, p += es) {
    switch (dt) {
      case JHDNN_DATA_FLOAT: {
        const float f = static_cast<float>(round_to(v[i], dt));  // in range after rounding
        std::memcpy(p, &f, 4);
        break;
      }
      case JHDNN_DATA_DOUBLE: std::memcpy(p, &v[i], 8); break;
      case JHDNN_DATA_HALF: {
        const uint16_t b = double_to_half_bits(v[i]);
        std::memcpy(p, &b, 2);
        break;
      }
      default: {  // BFLOAT16 (dtype_size rejected everything else)
        const uint16_t b = double_to_bf16_bits(v[i]);
        std::memcpy(p, &b, 2);
        break;
      }
    }
  }
  return out;
}

std::vector<double> from_device_bytes(const void* bytes, size_t count, jhdnnDataType_t dt) {
  const size_t es = dtype_size(dt);
  std::vector<double> out(count);
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < count; ++i, p += es) {
    switch (dt) {
      case JHDNN_DATA_FLOAT: out[i] = double(load_le<float>(p)); break;
      case JHDNN_DATA_DOUBLE: out[i] = load_le<double>(p); break;
      case JHDNN_DATA_HALF: out[i] = half_bits_to_double(load_le<uint16_t>(p)); break;
      default: out[i] = bf16_bits_to_double(load_le<uint16_t>(p)); break;
    }
  }
  return out;
}

// ---------------------------------------------------------------- seeds and fills

uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("JHDNN_TEST_SEED"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      const unsigned long long s = std::strtoull(env, &end, 0);
      if (end != env && *end == '\0') return uint64_t(s);
      std::fprintf(stderr, "JHDNN_TEST_SEED='%s' is not a number; drawing a random seed\n", env);
    }
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ uint64_t(rd());
  }();
  return seed;
}

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  SplitMix64 g(seed ^ (salt * 0xD1B54A32D192ED03ull));
  g.next();
  return g.next();
}

uint64_t hash_string(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

void fill_random(std::vector<double>& v, jhdnnDataType_t dt, uint64_t seed, double lo, double hi) {
  SplitMix64 g(seed);
  bool any_nonzero = false;
  for (double& e : v) {
    // volatile: keep the compiler from fusing this into an FMA on some targets and not others,
    // so the data is bit-identical everywhere.
    volatile double scaled = (hi - lo) * g.uniform();
    e = round_to(lo + scaled, dt);
    any_nonzero = any_nonzero || e != 0.0;
  }
  if (!v.empty() && !any_nonzero) {
    double nz = round_to(hi, dt);
    if (nz == 0.0) nz = round_to(lo, dt);
    if (nz == 0.0) nz = 1.0;
    v[0] = nz;
  }
}

void fill_random_ints(std::vector<double>& v, uint64_t seed, int lo, int hi) {
  if (hi < lo) throw std::invalid_argument("fill_random_ints: hi < lo");
  SplitMix64 g(seed);
  const uint64_t range = uint64_t(int64_t(hi) - int64_t(lo) + 1);
  bool any_nonzero = false;
  for (double& e : v) {
    e = double(int64_t(lo) + int64_t(g.next() % range));
    any_nonzero = any_nonzero || e != 0.0;
  }
  if (!v.empty() && !any_nonzero) v[0] = hi != 0 ? hi : (lo != 0 ? lo : 1);
}

// ---------------------------------------------------------------- tensor indexing

std::array<int64_t, 5> x_dims(const core::ConvProblem& p) { return {p.N, p.C, p.D, p.H, p.W}; }
std::array<int64_t, 5> w_dims(const core::ConvProblem& p) { return {p.K, p.c_per_group(), p.T, p.R, p.S}; }
std::array<int64_t, 5> y_dims(const core::ConvProblem& p) { return {p.N, p.K, p.O, p.P, p.Q}; }

int64_t span_elems(const int64_t dims[5], const int64_t strides[5]) {
  int64_t span = 1;
  for (int i = 0; i < 5; ++i) {
    if (dims[i] <= 0) return 0;
    span += (dims[i] - 1) * strides[i];
  }
  return span;
}

void copy_tensor(const double* src, const int64_t src_strides[5], double* dst, const int64_t dst_strides[5],
                 const int64_t dims[5]) {
  for (int64_t i0 = 0; i0 < dims[0]; ++i0)
    for (int64_t i1 = 0; i1 < dims[1]; ++i1)
      for (int64_t i2 = 0; i2 < dims[2]; ++i2)
        for (int64_t i3 = 0; i3 < dims[3]; ++i3)
          for (int64_t i4 = 0; i4 < dims[4]; ++i4)
            dst[i0 * dst_strides[0] + i1 * dst_strides[1] + i2 * dst_strides[2] + i3 * dst_strides[3] +
                i4 * dst_strides[4]] = src[i0 * src_strides[0] + i1 * src_strides[1] + i2 * src_strides[2] +
                                           i3 * src_strides[3] + i4 * src_strides[4]];
}

// ---------------------------------------------------------------- tolerance

// Model. One output is y = sum_{i<K} x_i * w_i with |x_i|, |w_i| <= 1, inputs exact in dt (the
// reference sees the same rounded inputs, so input rounding is not an error). A correct kernel
// differs from the float64 reference only through
//
//  (a) accumulation: each fp32 add (and each product, unless fused in an FMA) rounds with
//      relative error <= u_acc = 2^-24 of the partial sum. Higham's worst case, K * u_acc * sum|x_i w_i|
//      ~ K^2 * u_acc, is far too loose to catch anything; for errors of random sign the total is a
//      random walk of K steps, ~ c * u_acc * sqrt(K) * (typical partial-sum magnitude):
//        - inputs of random sign: partial sums grow like sqrt(K) (each product has rms <= 1,
//          1/3 for uniform [-1, 1]), giving an absolute term  atol = c * u_acc * sqrt(K) * sqrt(K)
//          = c * u_acc * K;
//        - inputs of one sign: partial sums grow like |y| itself, giving a relative term
//          rtol = c * u_acc * sqrt(K).
//      With c = 4 the absolute term sits ~20 standard deviations above the typical error for
//      uniform data (sd ~ 0.15 * K * u_acc), yet a wrong or missing tap (error ~ |x w| ~ 0.1..1)
//      is still 2-3 orders of magnitude above it (K = 4608: atol = 1.1e-3).
//      Any summation order (tiles, split-K, pairwise) stays within this bound.
//  (b) the epilogue alpha * acc + beta * y in fp32: rtol += 2 * u_acc.
//  (c) the output's rounding to dt (HALF, BFLOAT16): relative u_out = 2^-11 / 2^-8 of |y|, plus
//      half a subnormal step for HALF (2^-25) near zero.
//  (d) the reference's own float64 accumulation error, bounded like (a) with u = 2^-53: the only
//      term that matters for DOUBLE data, where kernel and reference share the same precision.
//  (e) optional TF32 products (FLOAT data, tensor-op math): each input rounded to 10 mantissa bits
//      gives each product a relative error <= 2 * 2^-11; the random walk over K products adds
//      atol += 2 * 2^-10 * sqrt(K) and rtol += 2^-10. These are loose by nature: TF32 really does
//      make errors of order 1e-2 at K = 4608.
//
// So, with u_acc = 2^-24 (2^-53 for DOUBLE), u_ref = 2^-53:
//   atol = 4 (u_acc + u_ref) K  [+ 2^-25 for HALF]  [+ 2^-9 sqrt(K) for TF32]
//   rtol = 4 (u_acc + u_ref) sqrt(K) + 2 u_acc + u_out  [+ 2^-10 for TF32]
// Inputs outside [-1, 1] or |alpha| > 1: scale atol by max|x| * max|w| * |alpha|.
// Assumes fp32 accumulation for FLOAT/HALF/BFLOAT16; a kernel that accumulates in half needs more.
Tolerance conv_tolerance(jhdnnDataType_t dt, int64_t reduction_length, bool tf32_products) {
  const double K = double(std::max<int64_t>(reduction_length, 1));
  const double u_ref = std::ldexp(1.0, -53);
  double u_acc = 0, u_out = 0, atol_extra = 0;
  switch (dt) {
    case JHDNN_DATA_DOUBLE: u_acc = std::ldexp(1.0, -53); break;
    case JHDNN_DATA_FLOAT: u_acc = std::ldexp(1.0, -24); break;
    case JHDNN_DATA_HALF:
      u_acc = std::ldexp(1.0, -24);
      u_out = std::ldexp(1.0, -11);
      atol_extra = std::ldexp(1.0, -25);
      break;
    case JHDNN_DATA_BFLOAT16:
      u_acc = std::ldexp(1.0, -24);
      u_out = std::ldexp(1.0, -8);
      break;
    default: throw std::invalid_argument("conv_tolerance: not a floating-point jhdnnDataType_t");
  }
  Tolerance t;
  t.atol = 4.0 * (u_acc + u_ref) * K + atol_extra;
  t.rtol = 4.0 * (u_acc + u_ref) * std::sqrt(K) + 2.0 * u_acc + u_out;
  if (tf32_products) {
    t.atol += std::ldexp(1.0, -9) * std::sqrt(K);
    t.rtol += std::ldexp(1.0, -10);
  }
  return t;
}

// ---------------------------------------------------------------- comparison

std::string CompareResult::summary() const {
  char buf[512];
  if (ok) {
    std::snprintf(buf, sizeof buf, "ok: %" PRId64 " checked, max abs err %.3g, max rel err %.3g (atol %.3g, rtol %.3g)",
                  checked, max_abs_err, max_rel_err, tol.atol, tol.rtol);
    return buf;
  }
  int n = std::snprintf(buf, sizeof buf,
                        "FAILED: %" PRId64 "/%" PRId64 " bad (%" PRId64 " non-finite), max abs err %.3g, max rel err %.3g "
                        "(atol %.3g, rtol %.3g)",
                        n_bad, checked, n_nonfinite, max_abs_err, max_rel_err, tol.atol, tol.rtol);
  if (worst_index >= 0 && n > 0 && size_t(n) < sizeof buf) {
    std::snprintf(buf + n, sizeof buf - size_t(n),
                  "; worst at (n,c,d,h,w)=(%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                  ") [logical index %" PRId64 "]: got %.9g ref %.9g (allowed %.3g)",
                  worst_coord[0], worst_coord[1], worst_coord[2], worst_coord[3], worst_coord[4], worst_index,
                  worst_got, worst_ref, tol.atol + tol.rtol * std::fabs(worst_ref));
  }
  return buf;
}

CompareResult compare_tensor(const double* got, const double* ref, const int64_t dims[5],
                             const int64_t strides[5], Tolerance tol) {
  CompareResult res;
  res.tol = tol;
  double worst_score = -1.0;  // error / allowed of the worst element; inf for non-finite
  bool worst_is_nonfinite = false;
  int64_t logical = 0;
  for (int64_t i0 = 0; i0 < dims[0]; ++i0)
    for (int64_t i1 = 0; i1 < dims[1]; ++i1)
      for (int64_t i2 = 0; i2 < dims[2]; ++i2)
        for (int64_t i3 = 0; i3 < dims[3]; ++i3)
          for (int64_t i4 = 0; i4 < dims[4]; ++i4, ++logical) {
            const int64_t off =
                i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3] + i4 * strides[4];
            const double g = got[off], r = ref[off];
            ++res.checked;
            const bool finite = std::isfinite(g);
            const double err = std::fabs(g - r);
            const double allowed = tol.atol + tol.rtol * std::fabs(r);
            double score;
            if (!finite) {
              ++res.n_nonfinite;
              ++res.n_bad;
              score = std::numeric_limits<double>::infinity();
            } else {
              if (err > res.max_abs_err) res.max_abs_err = err;
              if (std::fabs(r) >= tol.atol && std::fabs(r) > 0) {
                const double rel = err / std::fabs(r);
                if (rel > res.max_rel_err) res.max_rel_err = rel;
              }
              const bool good = err <= allowed;  // false for NaN err (non-finite ref)
              if (!good) ++res.n_bad;
              score = good ? (allowed > 0 ? err / allowed : 0.0)
                           : (allowed > 0 && std::isfinite(err) ? err / allowed
                                                                : std::numeric_limits<double>::max());
            }
            // Keep the first non-finite element once one is seen; otherwise the largest score.
            if (!worst_is_nonfinite && (!finite || score > worst_score)) {
              worst_score = score;
              worst_is_nonfinite = !finite;
              res.worst_index = logical;
              res.worst_coord[0] = i0;
              res.worst_coord[1] = i1;
              res.worst_coord[2] = i2;
              res.worst_coord[3] = i3;
              res.worst_coord[4] = i4;
              res.worst_got = g;
              res.worst_ref = r;
            }
          }
  res.ok = res.n_bad == 0;
  return res;
}

double relative_l2_error(const double* got, const double* ref, const int64_t dims[5],
                         const int64_t strides[5]) {
  double num = 0, den = 0;
  bool nonfinite = false;
  for_each_index(dims, strides, [&](int64_t off) {
    if (!std::isfinite(got[off])) nonfinite = true;
    const double d = got[off] - ref[off];
    num += d * d;
    den += ref[off] * ref[off];
  });
  if (nonfinite) return std::numeric_limits<double>::infinity();
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

}  // namespace jhdnn::test
