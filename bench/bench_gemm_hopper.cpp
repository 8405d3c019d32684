// Google Benchmark: the Hopper wgmma GEMM (src/gemm/hopper) against cublasGemmEx, both computing
// row-major C = A * Bt^T (A M x K, Bt N x K, packed): fp16 and bf16 inputs with the output in the
// input type (CUBLAS_COMPUTE_32F), and fp32 inputs / output on the tf32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32).
//
// GPU time from CUDA events around each launch (manual time); no L2 flush (the shapes here are
// compute-bound and their operands do not fit in L2 anyway). Counter FLOP/s = 2 M N K / time.
// Before timing, each jhDNN configuration is checked once against cuBLAS on a sample of elements;
// a configuration whose answer is wrong is reported as an error instead of a time.
// Names: gemm/<M>x<N>x<K>/<f16|bf16|tf32>/<jhdnn_wgmma|cublas>. Runtime about 40 s on an H200.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "common/gpu_util.h"
#include "common/test_util.h"
#include "gemm/hopper/gemm_wgmma.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

struct Shape {
  int64_t m, n, k;
};

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: cublasStatus " + std::to_string(int(s)));
}

struct Gpu {
  cublasHandle_t cublas = nullptr;
  CudaStream stream;
  Gpu() {
    cublas_check(cublasCreate(&cublas), "cublasCreate");
    cublas_check(cublasSetStream(cublas, stream.get()), "cublasSetStream");
  }
  ~Gpu() { cublasDestroy(cublas); }
};
Gpu& gpu() {
  static Gpu g;
  return g;
}

// Device operands of one (shape, type): random values in [-1, 1) (a 1M-value random pool repeated:
// realistic bit activity for the tensor cores without a minute of host fill for 8192^2).
struct Operands {
  DeviceBuffer a, b, c, c_ref;
  Operands(const Shape& s, jhdnnDataType_t t) {
    const size_t es = dtype_size(t);
    std::vector<double> pool(size_t(1) << 20);
    fill_random(pool, t, 12345);
    const std::vector<unsigned char> pool_bytes = to_device_bytes(pool, t);
    auto make = [&](int64_t elems, uint64_t shift) {
      std::vector<unsigned char> bytes(size_t(elems) * es);
      for (size_t i = 0; i < size_t(elems); ++i)
        std::memcpy(&bytes[i * es], &pool_bytes[((i + shift) % pool.size()) * es], es);
      DeviceBuffer d(bytes.size(), 0);
      d.upload(bytes);
      return d;
    };
    a = make(s.m * s.k, 0);
    b = make(s.n * s.k, 777);
    c = DeviceBuffer(size_t(s.m * s.n) * es, 0);
    c_ref = DeviceBuffer(size_t(s.m * s.n) * es, 0);
  }
};

Operands& operands_for(const Shape& s, jhdnnDataType_t t) {
  static std::string key;
  static std::unique_ptr<Operands> cached;
  const std::string k = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + core::data_type_name(t);
  if (!cached || key != k) {
    cached.reset();
    cached = std::make_unique<Operands>(s, t);
    key = k;
  }
  return *cached;
}

void run_cublas(const Shape& s, jhdnnDataType_t t, const void* a, const void* b, void* c) {
  const float one = 1.0f, zero = 0.0f;
  const cudaDataType_t ct = t == JHDNN_DATA_HALF ? CUDA_R_16F : t == JHDNN_DATA_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t comp = t == JHDNN_DATA_FLOAT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublas_check(cublasGemmEx(gpu().cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(s.n), int(s.m), int(s.k), &one, b, ct,
                            int(s.k), a, ct, int(s.k), &zero, c, ct, int(s.n), comp, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

core::Status run_ours(const Shape& s, jhdnnDataType_t t, const void* a, const void* b, void* c) {
  gemm::hopper::GemmArgs g;
  g.m = s.m, g.n = s.n, g.k = s.k;
  g.a = a, g.lda = s.k, g.b = b, g.ldb = s.k, g.c = c, g.ldc = s.n;
  g.ab_type = t, g.c_type = t;
  return gemm::hopper::gemm_wgmma(g, gpu().stream.get());
}

template <class F>
void timed_loop(benchmark::State& st, const Shape& s, F run) {
  cudaStream_t stream = gpu().stream.get();
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) run();  // warm-up (clocks, caches)
  for (auto _ : st) {
    CUDA_CHECK(cudaEventRecord(e0, stream));
    run();
    CUDA_CHECK(cudaEventRecord(e1, stream));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    st.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * double(s.m) * double(s.n) * double(s.k),
                                             benchmark::Counter::kIsIterationInvariantRate);
}

// Our result vs cuBLAS's on ~64k elements spread over C: |ours - cublas| <= 2^-6 * (|cublas| + 1)
// catches any indexing / pipeline error (those are O(1) or NaN) without tripping on rounding
// (tf32: the two may shorten fp32 operands differently; the errors stay far below that bound).
std::string check_against_cublas(const Shape& s, jhdnnDataType_t t, Operands& op) {
  run_cublas(s, t, op.a.get(), op.b.get(), op.c_ref.get());
  CUDA_CHECK(cudaMemsetAsync(op.c.get(), 0xFF, op.c.bytes(), gpu().stream.get()));
  const core::Status r = run_ours(s, t, op.a.get(), op.b.get(), op.c.get());
  if (!r.ok()) return r.message;
  gpu().stream.sync();
  const std::vector<unsigned char> ours = op.c.download(), theirs = op.c_ref.download();
  const size_t es = dtype_size(t);
  const int64_t total = s.m * s.n, step = std::max<int64_t>(1, total / 65536) | 1;
  for (int64_t i = 0; i < total; i += step) {
    const double g = from_device_bytes(&ours[size_t(i) * es], 1, t)[0];
    const double c = from_device_bytes(&theirs[size_t(i) * es], 1, t)[0];
    if (!(std::fabs(g - c) <= std::ldexp(1.0, -6) * (std::fabs(c) + 1.0))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "WRONG RESULT at element %lld (row %lld, col %lld): got %g, cuBLAS %g", (long long)i,
                    (long long)(i / s.n), (long long)(i % s.n), g, c);
      return buf;
    }
  }
  return "";
}

void bench_ours(benchmark::State& st, Shape s, jhdnnDataType_t t) {
  Operands& op = operands_for(s, t);
  const std::string err = check_against_cublas(s, t, op);
  if (!err.empty()) {
    st.SkipWithError(err.c_str());
    return;
  }
  timed_loop(st, s, [&] {
    const core::Status r = run_ours(s, t, op.a.get(), op.b.get(), op.c.get());
    if (!r.ok()) throw std::runtime_error(r.message);
  });
}

void bench_cublas(benchmark::State& st, Shape s, jhdnnDataType_t t) {
  Operands& op = operands_for(s, t);
  timed_loop(st, s, [&] { run_cublas(s, t, op.a.get(), op.b.get(), op.c_ref.get()); });
}

int register_all() {
  const Shape shapes[] = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4000, 5000, 3000}, {1024, 8192, 8192}};
  for (const Shape& s : shapes) {
    for (jhdnnDataType_t t : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT}) {
      if (t == JHDNN_DATA_FLOAT && s.m != s.n) continue;  // tf32: the two square sizes only
      const std::string base = "gemm/" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                               "/" + (t == JHDNN_DATA_HALF ? "f16" : t == JHDNN_DATA_BFLOAT16 ? "bf16" : "tf32") + "/";
      benchmark::RegisterBenchmark((base + "jhdnn_wgmma").c_str(), bench_ours, s, t)
          ->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3);
      benchmark::RegisterBenchmark((base + "cublas").c_str(), bench_cublas, s, t)
          ->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "bench_gemm_hopper: no CUDA device: %s\n", why.c_str());
    return 1;
  }
  std::printf("%s\n", gpu_description().c_str());
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
