// The host side of jhdnn-bench's verification (GPU-free, so tests/test_bench_cli.cpp checks it):
// inputs, the float64 reference over the whole output or a sample of it, the comparison, the
// tolerances, and the H200 ceilings used for the floor.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"
#include "core/conv_problem.h"

namespace jhdnn::bench {

// ---------------------------------------------------------------- ceilings

// Peak TFLOP/s of a configuration (f32 f16 bf16 tf32 f64) and copy bandwidth in GB/s.
double peak_tflops(const std::string& dt);
double peak_gbs();
jhdnnDataType_t dtype_of(const std::string& dt);

// ---------------------------------------------------------------- tolerances

// True for FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED: checked norm-wise.
bool is_normwise(int algo);
// Element-wise bound against the float64 reference (twice it against cuDNN).
test::Tolerance ref_tolerance(const core::ConvProblem& p, const std::string& dt);
// Relative L2 bound of the norm-wise algorithms.
double norm_bound(const std::string& dt);

// ---------------------------------------------------------------- inputs

// Runs f(begin, end) over [0, n) on every core, at least `grain` items per thread.
template <class F>
void parallel_for(int64_t n, F f, int64_t grain = 65536) {
  const int64_t threads =
      std::max<int64_t>(1, std::min<int64_t>(std::thread::hardware_concurrency(), n / grain + 1));
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t) pool.emplace_back([&, t] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto& th : pool) th.join();
}

// n values uniform in [-1, 1) (24 random bits), rounded to dt; element i depends only on (seed, i).
std::vector<double> make_input(int64_t n, uint64_t seed, jhdnnDataType_t dt);
// to_device_bytes on every core.
std::vector<unsigned char> to_bytes_parallel(const std::vector<double>& v, jhdnnDataType_t dt);

// ---------------------------------------------------------------- float64 reference

struct Reference {
  bool full = false;            // every output, or samples
  std::vector<int64_t> offset;  // element offsets into y
  std::vector<double> value;    // full: indexed by offset (y_span long); samples: by sample
};

// The whole output (conv_fwd_reference) when y_elems * K <= full_limit, else 4096 outputs: the 16
// corners of (n, k, p, q) and random ones (conv_reference_at). p must be packed.
Reference make_reference(const core::ConvProblem& p, const std::vector<double>& x, const std::vector<double>& w,
                         uint64_t seed, double full_limit);

struct RefCheck {
  double err = 0;  // max |got - ref| / max |ref| (dot-product) or relative L2 (norm-wise); inf: non-finite
  int64_t bad = 0, checked = 0;
  bool ok = false;
};

// y_bytes: the device output (y_span elements of p.dtype).
RefCheck check_reference(const Reference& ref, const std::vector<unsigned char>& y_bytes, const core::ConvProblem& p,
                         const std::string& dt, bool normwise);

// The verdict of the cuDNN comparison for one output: "ok", "FAIL", or "cudnn-off" when the output
// disagrees with cuDNN's but cuDNN's own output failed the float64 check (cudnn_ref_off_reference):
// the float64 reference is the ground truth, so such a row is judged by ref_check alone.
std::string cudnn_verdict(bool agrees_with_cudnn, bool cudnn_ref_off_reference);

// A row is a mismatch when either check says FAIL ("cudnn-off" and "-" are not failures).
bool is_mismatch(const std::string& ref_check, const std::string& cudnn_check);

}  // namespace jhdnn::bench
