#include "verify.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/reference.h"

namespace jhdnn::bench {

using namespace jhdnn::test;

// ---------------------------------------------------------------- ceilings (H200, measured)

// Peak FLOP/s per configuration: cuBLAS GEMM measured on the H200 (fp32 FMA 50.8, TF32 416, fp16
// 769, bf16 797 TFLOP/s); f64 is not measured: the 67 TFLOP/s data-sheet value. Copy bandwidth
// 4.16 TB/s. JHDNN_PEAK_TFLOPS / JHDNN_PEAK_GBS override them for other GPUs.
double peak_tflops(const std::string& dt) {
  if (const char* e = std::getenv("JHDNN_PEAK_TFLOPS")) return std::atof(e);
  if (dt == "tf32") return 416;
  if (dt == "f16") return 769;
  if (dt == "bf16") return 797;
  if (dt == "f64") return 67;
  return 50.8;
}
double peak_gbs() {
  if (const char* e = std::getenv("JHDNN_PEAK_GBS")) return std::atof(e);
  return 4160;
}

jhdnnDataType_t dtype_of(const std::string& dt) {
  if (dt == "f16") return JHDNN_DATA_HALF;
  if (dt == "bf16") return JHDNN_DATA_BFLOAT16;
  if (dt == "f64") return JHDNN_DATA_DOUBLE;
  return JHDNN_DATA_FLOAT;
}

bool is_normwise(int algo) {
  return algo == JHDNN_CONVOLUTION_FWD_ALGO_FFT || algo == JHDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         algo == JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || algo == JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

// Tolerances. Dot-product algorithms: element-wise conv_tolerance (test_util.h: scaled with the
// reduction length K, fp32 accumulation, output rounding, TF32 products for tf32) against the
// float64 reference, and twice that against cuDNN (both sides carry their own error).
// Winograd / FFT: relative L2 error of the whole output (or of the samples) below kNormBound.
Tolerance ref_tolerance(const core::ConvProblem& p, const std::string& dt) {
  return conv_tolerance(p.dtype, p.reduction(), dt == "tf32");
}
double norm_bound(const std::string& dt) {
  if (dt == "f64") return 1e-10;
  if (dt == "f32") return 1e-4;
  if (dt == "bf16") return 4e-2;
  return 1e-2;  // tf32, f16
}

// ---------------------------------------------------------------- inputs

namespace {

uint64_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

}  // namespace

// Element i of a tensor: uniform in [-1, 1) with 24 random bits (exact in float), rounded to dt.
std::vector<double> make_input(int64_t n, uint64_t seed, jhdnnDataType_t dt) {
  std::vector<double> v(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const double u = double(hash64(seed ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull)) >> 40) * (1.0 / 16777216.0);
      v[size_t(i)] = round_to(2.0 * u - 1.0, dt);
    }
  });
  if (n > 0 && std::all_of(v.begin(), v.end(), [](double e) { return e == 0.0; })) v[0] = 0.5;
  return v;
}

std::vector<unsigned char> to_bytes_parallel(const std::vector<double>& v, jhdnnDataType_t dt) {
  const size_t es = dtype_size(dt);
  std::vector<unsigned char> out(v.size() * es);
  parallel_for(int64_t(v.size()), [&](int64_t a, int64_t b) {
    const std::vector<double> part(v.begin() + a, v.begin() + b);
    const auto bytes = to_device_bytes(part, dt);
    std::memcpy(out.data() + size_t(a) * es, bytes.data(), bytes.size());
  });
  return out;
}

// ---------------------------------------------------------------- float64 reference


Reference make_reference(const core::ConvProblem& p, const std::vector<double>& x, const std::vector<double>& w,
                         uint64_t seed, double full_limit) {
  Reference r;
  const int64_t n = p.y_elems();
  if (double(n) * double(p.reduction()) <= full_limit) {
    r.full = true;
    r.value.assign(size_t(p.y_span()), 0.0);
    conv_fwd_reference(p, x.data(), w.data(), r.value.data(), 1.0, 0.0);
    r.offset.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) r.offset[size_t(i)] = i;  // packed: offset i is element i
    return r;
  }
  // Samples: the 16 corners of (n, k, p, q), then random outputs.
  std::vector<std::array<int64_t, 5>> idx;
  for (int c = 0; c < 16; ++c)
    idx.push_back({(c & 1) ? p.N - 1 : 0, (c & 2) ? p.K - 1 : 0, 0, (c & 4) ? p.P - 1 : 0, (c & 8) ? p.Q - 1 : 0});
  SplitMix64 g(seed ^ 0x5A5A5A5A);
  while (idx.size() < 4096)
    idx.push_back({int64_t(g.next() % uint64_t(p.N)), int64_t(g.next() % uint64_t(p.K)),
                   int64_t(g.next() % uint64_t(p.O)), int64_t(g.next() % uint64_t(p.P)),
                   int64_t(g.next() % uint64_t(p.Q))});
  r.offset.resize(idx.size());
  r.value.resize(idx.size());
  parallel_for(int64_t(idx.size()), [&](int64_t a, int64_t b) {
    for (int64_t i = a; i < b; ++i) {
      const auto& c = idx[size_t(i)];
      r.offset[size_t(i)] = c[0] * p.y_stride[0] + c[1] * p.y_stride[1] + c[2] * p.y_stride[2] +
                            c[3] * p.y_stride[3] + c[4] * p.y_stride[4];
      r.value[size_t(i)] = conv_reference_at(p, x.data(), w.data(), c[0], c[1], c[2], c[3], c[4]);
    }
  }, 64);
  return r;
}

RefCheck check_reference(const Reference& ref, const std::vector<unsigned char>& bytes, const core::ConvProblem& p,
                         const std::string& dt, bool normwise) {
  RefCheck c;
  const size_t es = dtype_size(p.dtype);
  const Tolerance tol = ref_tolerance(p, dt);
  double max_d = 0, max_r = 0, d2 = 0, r2 = 0;
  bool nonfinite = false;
  // Whole output: convert it once; samples: one element each.
  const std::vector<double> all = ref.full ? from_device_bytes(bytes.data(), size_t(p.y_span()), p.dtype)
                                           : std::vector<double>();
  for (size_t i = 0; i < ref.offset.size(); ++i) {
    const double g = ref.full ? all[size_t(ref.offset[i])]
                              : from_device_bytes(bytes.data() + size_t(ref.offset[i]) * es, 1, p.dtype)[0];
    const double r = ref.value[ref.full ? size_t(ref.offset[i]) : i];
    ++c.checked;
    if (!std::isfinite(g)) {
      nonfinite = true;
      ++c.bad;
      continue;
    }
    const double d = std::fabs(g - r);
    if (!normwise && d > tol.atol + tol.rtol * std::fabs(r)) ++c.bad;
    max_d = std::max(max_d, d), max_r = std::max(max_r, std::fabs(r));
    d2 += d * d, r2 += r * r;
  }
  if (normwise) {
    c.err = nonfinite ? INFINITY : (r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2));
    c.ok = c.err <= norm_bound(dt);
  } else {
    c.err = nonfinite ? INFINITY : (max_r > 0 ? max_d / max_r : max_d);
    c.ok = c.bad == 0;
  }
  return c;
}

std::string cudnn_verdict(bool agrees_with_cudnn, bool cudnn_ref_off_reference) {
  if (agrees_with_cudnn) return "ok";
  return cudnn_ref_off_reference ? "cudnn-off" : "FAIL";
}

bool is_mismatch(const std::string& ref_check, const std::string& cudnn_check) {
  return ref_check == "FAIL" || cudnn_check == "FAIL";
}

}  // namespace jhdnn::bench
