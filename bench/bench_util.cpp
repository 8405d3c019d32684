#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "common/test_util.h"
#include "conv/dispatch.h"

namespace jhdnn::benchutil {

using test::dtype_size;

// ---------------------------------------------------------------- device, stream, handles

Gpu::Gpu(unsigned h) : handles(h) {
  if (!core::query_device(&dev).ok()) throw std::runtime_error("query_device failed");
  flush = std::make_unique<DeviceBuffer>(2 * dev.l2_bytes + (1 << 20), 0);
  if (handles & kCudnn) {
    cudnn_ = std::make_unique<test::CudnnHandle>();
    CUDNN_CHECK(cudnnSetStream(cudnn_->get(), stream.get()));
  }
  if (handles & kJhdnn) {
    jhdnn_ = std::make_unique<test::JhdnnHandle>();
    JHDNN_CHECK(jhdnnSetStream(jhdnn_->get(), stream.get()));
  }
  if (handles & kCublas) {
    cublas_check(cublasCreate(&cublas_), "cublasCreate");
    cublas_check(cublasSetStream(cublas_, stream.get()), "cublasSetStream");
    cublas_check(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
}

Gpu::~Gpu() {
  if (cublas_) cublasDestroy(cublas_);
}

void Gpu::flush_l2() const { CUDA_CHECK(cudaMemsetAsync(flush->get(), 0, flush->bytes(), stream.get())); }

Gpu& shared_gpu(unsigned handles) {
  static Gpu g(handles);
  if (g.handles != handles) throw std::logic_error("shared_gpu: asked for another set of handles");
  return g;
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: cublasStatus " + std::to_string(int(s)));
}

cudaDataType_t cuda_type(jhdnnDataType_t dt) {
  return dt == JHDNN_DATA_HALF ? CUDA_R_16F : dt == JHDNN_DATA_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

// ---------------------------------------------------------------- timing

EventTimer::EventTimer() {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreate(&e));
  start_.reset(e);
  CUDA_CHECK(cudaEventCreate(&e));
  stop_.reset(e);
}

void EventTimer::start(cudaStream_t s) { CUDA_CHECK(cudaEventRecord(start_.get(), s)); }

double EventTimer::stop_ms(cudaStream_t s) {
  CUDA_CHECK(cudaEventRecord(stop_.get(), s));
  CUDA_CHECK(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return ms;
}

void set_flops(benchmark::State& st, double flops) {
  st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

benchmark::internal::Benchmark* manual_time(benchmark::internal::Benchmark* b, int iterations,
                                            benchmark::TimeUnit unit) {
  return b->UseManualTime()->Unit(unit)->Iterations(iterations);
}

void run_benchmarks(int* argc, char** argv) {
  benchmark::Initialize(argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}

bool usable_gpu(const char* prog) {
  std::string why;
  if (test::gpu_available(&why)) return true;
  std::fprintf(stderr, "%s: no usable GPU (%s)\n", prog, why.c_str());
  return false;
}

// ---------------------------------------------------------------- inputs

void repeat_block(DeviceBuffer& b, size_t block_bytes) {
  const size_t total = b.bytes();
  auto* base = static_cast<char*>(b.get());
  for (size_t have = block_bytes; have > 0 && have < total;) {
    const size_t copy = std::min(have, total - have);
    CUDA_CHECK(cudaMemcpyAsync(base + have, base, copy, cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    have += copy;
  }
  // The copies are on the legacy stream; the bench stream is non-blocking, so wait here.
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

DeviceBuffer random_buffer(int64_t elems, jhdnnDataType_t dt, uint64_t seed) {
  const int64_t es = int64_t(dtype_size(dt));
  const int64_t block = std::min<int64_t>(elems, int64_t(1) << 20);
  std::vector<double> h(static_cast<size_t>(block));
  test::fill_random(h, dt, seed);
  DeviceBuffer b(size_t(elems * es), 0);
  b.upload(test::to_device_bytes(h, dt).data(), size_t(block * es));
  repeat_block(b, size_t(block * es));
  return b;
}

bool all_finite(const DeviceBuffer& b, int64_t elems, jhdnnDataType_t dt) {
  const auto bytes = b.download();
  for (double v : test::from_device_bytes(bytes.data(), size_t(elems), dt))
    if (!std::isfinite(v)) return false;
  return true;
}

ConvInputs::ConvInputs(const core::ConvProblem& p) {
  const size_t es = dtype_size(p.dtype);
  std::vector<double> hx(size_t(p.x_span())), hw(size_t(p.w_span()));
  test::fill_random(hx, p.dtype, 1);
  test::fill_random(hw, p.dtype, 2);
  x = DeviceBuffer(hx.size() * es, 0);
  w = DeviceBuffer(hw.size() * es, 0);
  y = DeviceBuffer(size_t(p.y_span()) * es, 0);
  x.upload(test::to_device_bytes(hx, p.dtype));
  w.upload(test::to_device_bytes(hw, p.dtype));
}

ConvInputs& conv_inputs(const core::ConvProblem& p, const std::string& key) {
  static KeepLast<ConvInputs> last;
  return last.get(key, [&] { return std::make_unique<ConvInputs>(p); });
}

// ---------------------------------------------------------------- jhDNN convolution solvers

void run_solver_or_throw(const conv::ConvSolver& s, const core::ConvProblem& p, const conv::ConvArgs& args,
                         const DeviceBuffer& ws, const Gpu& g) {
  const core::Status r = conv::run_solver(s, p, args, ws.get(), ws.bytes(), g.stream.get());
  if (!r.ok()) throw std::runtime_error(r.message);
}

bool first_run_ok(benchmark::State& st, const conv::ConvSolver& s, const core::ConvProblem& p,
                  const conv::ConvArgs& args, DeviceBuffer& y, const DeviceBuffer& ws, const Gpu& g) {
  y.poison();
  const core::Status first = conv::run_solver(s, p, args, ws.get(), ws.bytes(), g.stream.get());
  g.stream.sync();
  if (!first.ok()) {
    st.SkipWithError(first.message.c_str());
    return false;
  }
  if (!all_finite(y, p.y_span(), p.dtype)) {
    st.SkipWithError("an output was not written (NaN poison left) or is not finite");
    return false;
  }
  return true;
}

}  // namespace jhdnn::benchutil
