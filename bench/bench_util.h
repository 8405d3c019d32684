// What the Google Benchmark binaries in bench/ share: the device and its stream with the vendor
// handles bound to it, an L2-flush buffer, CUDA-event timing loops, random device inputs, the
// finite-output check, a keep-the-last-configuration cache, and the "no usable GPU" exit.
//
// Timing (timed_loop / event_loop): one run per benchmark iteration, bracketed by two CUDA events
// on the bench stream, the L2 flushed before each run by a memset of a buffer twice its size
// (enqueued before the start event, so outside the timed region); the manual time is the event
// time. bench_tensorcore's graph-replay timing (tools/jhdnn-bench/measure.cpp) is not here.
//
// Errors throw std::runtime_error (CUDA_CHECK & co. from tests/common/gpu_util.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/gpu_util.h"
#include "conv/solver.h"
#include "core/conv_problem.h"
#include "core/device_info.h"

namespace jhdnn::benchutil {

using test::DeviceBuffer;

// ---------------------------------------------------------------- device, stream, handles

// Which vendor handles a binary's Gpu creates (bitwise or).
enum GpuHandles : unsigned { kCudnn = 1u, kJhdnn = 2u, kCublas = 4u };

// The device (queried once), one non-blocking stream every benchmark runs on, the handles asked
// for (each bound to that stream; cuBLAS in CUBLAS_DEFAULT_MATH: fp32 FMA, TF32 only when a call
// asks for it), and the L2-flush buffer (2 x L2 + 1 MiB).
class Gpu {
 public:
  explicit Gpu(unsigned handles);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  cudnnHandle_t cudnn() const { return cudnn_->get(); }  // kCudnn only
  jhdnnHandle_t jhdnn() const { return jhdnn_->get(); }  // kJhdnn only
  cublasHandle_t cublas() const { return cublas_; }       // kCublas only

  // Enqueues the L2 flush (a memset of the flush buffer) on the stream.
  void flush_l2() const;

  const unsigned handles;
  core::DeviceInfo dev;
  test::CudaStream stream;
  std::unique_ptr<DeviceBuffer> flush;

 private:
  std::unique_ptr<test::CudnnHandle> cudnn_;
  std::unique_ptr<test::JhdnnHandle> jhdnn_;
  cublasHandle_t cublas_ = nullptr;
};

// The process's Gpu, created on the first call with those handles (every call of one binary names
// the same set; another set throws).
Gpu& shared_gpu(unsigned handles);

// Throws "<what> failed: cublasStatus <n>" unless s is CUBLAS_STATUS_SUCCESS.
void cublas_check(cublasStatus_t s, const char* what);

// The cuBLAS / CUDA type of a jhDNN data type (HALF, BFLOAT16; anything else: CUDA_R_32F).
cudaDataType_t cuda_type(jhdnnDataType_t dt);

// ---------------------------------------------------------------- timing

// Two CUDA events bracketing the work enqueued on a stream between start() and stop_ms().
class EventTimer {
 public:
  EventTimer();
  void start(cudaStream_t s);
  // Records the stop event, waits for it, returns the milliseconds since start.
  double stop_ms(cudaStream_t s);

 private:
  struct Destroy {
    void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
  };
  using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, Destroy>;  // movable, not copyable
  Event start_, stop_;
};

// The FLOP/s counter: flops per iteration, as a rate over the (manual) time.
void set_flops(benchmark::State& st, double flops);

// The benchmark loop without a warm-up: per iteration, L2 flush, start event, run(), stop event,
// manual time = the event time. Returns the mean seconds per run (0 without iterations).
template <class F>
double event_loop(benchmark::State& st, const Gpu& g, F&& run) {
  EventTimer t;
  double total = 0;
  int64_t n = 0;
  for (auto _ : st) {
    g.flush_l2();
    t.start(g.stream.get());
    run();
    const double s = t.stop_ms(g.stream.get()) * 1e-3;
    st.SetIterationTime(s);
    total += s;
    ++n;
  }
  return n ? total / double(n) : 0.0;
}

// One warm-up run, then event_loop; sets the FLOP/s counter. Returns the mean seconds per run.
template <class F>
double timed_loop(benchmark::State& st, const Gpu& g, double flops, F&& run) {
  run();  // warm-up
  const double mean_s = event_loop(st, g, run);
  set_flops(st, flops);
  return mean_s;
}

// Google Benchmark's settings for a manually timed GPU benchmark: UseManualTime, the unit, a fixed
// iteration count. Returns b.
benchmark::internal::Benchmark* manual_time(benchmark::internal::Benchmark* b, int iterations,
                                            benchmark::TimeUnit unit = benchmark::kMillisecond);

// Initialize, RunSpecifiedBenchmarks, Shutdown.
void run_benchmarks(int* argc, char** argv);

// False (after printing "<prog>: no usable GPU (<reason>)" to stderr) when no GPU can be used.
bool usable_gpu(const char* prog);

// ---------------------------------------------------------------- inputs

// Copies the buffer's first block_bytes over the rest of it by doubling device-to-device copies
// (a few copies instead of a host fill of every element), and waits for them.
void repeat_block(DeviceBuffer& b, size_t block_bytes);

// elems values of type dt, random in [-1, 1): up to 2^20 values from fill_random(seed) on the host,
// repeated over the buffer by repeat_block.
DeviceBuffer random_buffer(int64_t elems, jhdnnDataType_t dt, uint64_t seed);

// True when the first elems elements of b (type dt) are all finite (b started as NaN poison).
bool all_finite(const DeviceBuffer& b, int64_t elems, jhdnnDataType_t dt);

// The value built for the most recent key only. Benchmarks of one configuration are registered
// together, so they share one value; a new key frees the old value before building the new one
// (layer-sized buffers: one set alive at a time).
template <class T>
class KeepLast {
 public:
  // make() returns a std::unique_ptr<T>.
  template <class Make>
  T& get(const std::string& key, Make&& make) {
    if (!value_ || key != key_) {
      value_.reset();
      value_ = make();
      key_ = key;
    }
    return *value_;
  }

 private:
  std::string key_;
  std::unique_ptr<T> value_;
};

// x and w of a convolution filled on the host with fill_random (seeds 1 and 2, [-1, 1), every
// element generated), y allocated (poisoned).
struct ConvInputs {
  DeviceBuffer x, w, y;
  explicit ConvInputs(const core::ConvProblem& p);
};

// The ConvInputs of the last key asked for (KeepLast): each problem's host fill, up to 400 MB,
// happens once, not once per algorithm.
ConvInputs& conv_inputs(const core::ConvProblem& p, const std::string& key);

// ---------------------------------------------------------------- jhDNN convolution solvers

// One run of solver s on the bench stream (conv::run_solver); throws on a failed status (for the
// timed loops, where a failure after a good first run is a bug).
void run_solver_or_throw(const conv::ConvSolver& s, const core::ConvProblem& p, const conv::ConvArgs& args,
                         const DeviceBuffer& ws, const Gpu& g);

// Checked once before timing: y (the buffer args.y points to) starts as NaN, s runs once, and every
// output must come back finite. (Values are checked against cuDNN by jhdnn-bench and against the
// float64 reference by the tests.) Otherwise false, the benchmark skipped with the run's message or
// "an output was not written (NaN poison left) or is not finite".
bool first_run_ok(benchmark::State& st, const conv::ConvSolver& s, const core::ConvProblem& p,
                  const conv::ConvArgs& args, DeviceBuffer& y, const DeviceBuffer& ws, const Gpu& g);

}  // namespace jhdnn::benchutil
