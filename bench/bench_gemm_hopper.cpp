// Google Benchmark: every tensor-core GEMM kernel of jhDNN against cublasGemmEx on the same
// buffers, row-major C = A * Bt^T (A M x K, Bt N x K, packed: "TN" in cuBLAS's words, the layout
// every kernel takes), at 4096^3 and 8192^3:
//   hopper  gemm::tensorcore::gemm_hopper  128x256 tiles, 2 consumer warpgroups of m64n256, 4 stages (src/gemm/hopper)
//   wgmma   gemm::tensorcore::gemm_wgmma   128x128 tiles, m64n128, 6 stages (GPU-verified generation 2)
//   mma     gemm::tensorcore::gemm_mma     mma.sync (generation 1)
//   api     jhdnnGemmEx (row-major, N / T), the kernel the selection picks (JHDNN_TC_GEMM respected)
//   cublas  cublasGemmEx, CUBLAS_COMPUTE_32F (fp16 / bf16, C in the input type) or
//           CUBLAS_COMPUTE_32F_FAST_TF32 (FLOAT)
// f16 and bf16 inputs write C in the input type; tf32 is FLOAT in and out.
//
// GPU time from CUDA events around each launch (manual time), the L2 cleared before each
// iteration (as bench_tensorcore). Counter FLOP/s = 2 M N K / time. Before timing, each jhDNN
// configuration is checked once against cuBLAS on ~64k sampled elements; a wrong answer is
// reported as an error ("WRONG RESULT ...") instead of a time.
// Names: gemm/<f16|bf16|tf32>/<n>^3/<hopper|wgmma|mma|api|cublas>. About 25 s on an H200.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include "bench_util.h"
#include "common/gpu_util.h"
#include "common/test_util.h"
#include "gemm/tensorcore/gemm_tc.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

enum Impl { kHopper, kWgmma, kMma, kApi, kCublas };
const char* impl_name(Impl i) {
  switch (i) {
    case kHopper: return "hopper";
    case kWgmma: return "wgmma";
    case kMma: return "mma";
    case kApi: return "api";
    case kCublas: return "cublas";
  }
  return "?";
}

using benchutil::cublas_check;
using benchutil::cuda_type;
using benchutil::Gpu;
using benchutil::random_buffer;

Gpu& gpu() { return benchutil::shared_gpu(benchutil::kJhdnn | benchutil::kCublas); }

// Operands of one (type, size), kept while the benchmarks of that configuration run (they are
// registered consecutively), with cuBLAS's answer downloaded once for the checks.
struct Operands {
  jhdnnDataType_t dt;
  int64_t n;
  DeviceBuffer a, b, c;
  std::vector<unsigned char> ref;  // cuBLAS's C
};
std::unique_ptr<Operands> g_ops;

void run_impl(Impl impl, Operands& op) {
  Gpu& g = gpu();
  const int64_t n = op.n;
  const float one = 1.f, zero = 0.f;
  core::Status s;
  switch (impl) {
    case kCublas:  // row-major C = A Bt^T is column-major C^T = op_T(Bt) A^T
      cublas_check(cublasGemmEx(g.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, int(n), int(n), int(n), &one, op.b.get(),
                                cuda_type(op.dt), int(n), op.a.get(), cuda_type(op.dt), int(n), &zero, op.c.get(),
                                cuda_type(op.dt), int(n),
                                op.dt == JHDNN_DATA_FLOAT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
      return;
    case kHopper:
      s = gemm::tensorcore::gemm_hopper(op.dt, op.dt, true, n, n, n, 1.f, op.a.get(), n, op.b.get(), n, 0.f,
                                        op.c.get(), n, g.stream.get());
      break;
    case kWgmma:
      s = gemm::tensorcore::gemm_wgmma(op.dt, n, n, n, 1.f, op.a.get(), n, op.b.get(), n, 0.f, op.c.get(), n,
                                       g.stream.get());
      break;
    case kMma:
      s = gemm::tensorcore::gemm_mma(op.dt, false, true, n, n, n, 1.f, op.a.get(), n, op.b.get(), n, 0.f, op.c.get(),
                                     n, g.stream.get());
      break;
    case kApi: {
      const jhdnnStatus_t st =
          jhdnnGemmEx(g.jhdnn(), JHDNN_ORDER_ROW, JHDNN_GEMM_OP_N, JHDNN_GEMM_OP_T, n, n, n, &one, op.a.get(), n,
                      op.b.get(), n, op.dt, &zero, op.c.get(), n, op.dt, JHDNN_DEFAULT_MATH);
      if (st != JHDNN_STATUS_SUCCESS) {
        char buf[1024];
        jhdnnGetLastErrorString(buf, sizeof buf);
        throw std::runtime_error(std::string("jhdnnGemmEx: ") + buf);
      }
      return;
    }
  }
  if (!s.ok()) throw std::runtime_error(s.message);
}

Operands& operands(jhdnnDataType_t dt, int64_t n) {
  if (!g_ops || g_ops->dt != dt || g_ops->n != n) {
    g_ops.reset();
    auto op = std::make_unique<Operands>();
    op->dt = dt;
    op->n = n;
    op->a = random_buffer(n * n, dt, 3);
    op->b = random_buffer(n * n, dt, 4);
    op->c = DeviceBuffer(size_t(n * n) * dtype_size(dt), 0);
    run_impl(kCublas, *op);
    gpu().stream.sync();
    op->ref = op->c.download();
    g_ops = std::move(op);
  }
  return *g_ops;
}

// Ours vs cuBLAS on ~64k elements spread over C: |ours - cublas| <= 2^-6 * (|cublas| + 1) catches
// any indexing / pipeline error (O(1) or NaN) without tripping on rounding. TF32 gets
// 2^-8 * sqrt(n) on top: both sides drop 13 mantissa bits of every input (wgmma truncates what TMA
// delivers, cuBLAS rounds), a random-walk error of ~2^-10 * sqrt(n) / 3 over n products of
// [-1, 1] inputs (measured: 0.02 at n = 4096), while an indexing error is O(sqrt(n)).
std::string check_against_cublas(Impl impl, Operands& op) {
  CUDA_CHECK(cudaMemsetAsync(op.c.get(), 0xFF, op.c.bytes(), gpu().stream.get()));  // NaN
  run_impl(impl, op);
  gpu().stream.sync();
  const std::vector<unsigned char> ours = op.c.download();
  const size_t es = dtype_size(op.dt);
  const int64_t total = op.n * op.n, step = std::max<int64_t>(1, total / 65536) | 1;
  for (int64_t i = 0; i < total; i += step) {
    const double g = from_device_bytes(&ours[size_t(i) * es], 1, op.dt)[0];
    const double c = from_device_bytes(&op.ref[size_t(i) * es], 1, op.dt)[0];
    const double tf32 = op.dt == JHDNN_DATA_FLOAT ? std::ldexp(std::sqrt(double(op.n)), -8) : 0.0;
    if (!(std::fabs(g - c) <= std::ldexp(1.0, -6) * (std::fabs(c) + 1.0) + tf32)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "WRONG RESULT at (row %lld, col %lld): got %g, cuBLAS %g",
                    (long long)(i / op.n), (long long)(i % op.n), g, c);
      return buf;
    }
  }
  return "";
}

void bench(benchmark::State& st, jhdnnDataType_t dt, int64_t n, Impl impl) {
  Gpu& g = gpu();
  Operands* op = nullptr;
  try {
    op = &operands(dt, n);
    if (impl != kCublas) {
      const std::string err = check_against_cublas(impl, *op);
      if (!err.empty()) return st.SkipWithError(err.c_str());
    }
    run_impl(impl, *op);  // warm-up
  } catch (const std::exception& e) {
    return st.SkipWithError(e.what());
  }
  benchutil::event_loop(st, g, [&] { run_impl(impl, *op); });
  benchutil::set_flops(st, 2.0 * double(n) * double(n) * double(n));
}

}  // namespace

int main(int argc, char** argv) {
  if (!benchutil::usable_gpu("bench_gemm_hopper")) return 1;
  std::printf("%s\n", gpu_description().c_str());
  const std::pair<jhdnnDataType_t, const char*> types[] = {
      {JHDNN_DATA_HALF, "f16"}, {JHDNN_DATA_BFLOAT16, "bf16"}, {JHDNN_DATA_FLOAT, "tf32"}};
  for (const auto& [dt, tname] : types)
    for (int64_t n : {4096, 8192})
      for (Impl impl : {kHopper, kWgmma, kMma, kApi, kCublas})
        benchutil::manual_time(
            benchmark::RegisterBenchmark(
                ("gemm/" + std::string(tname) + "/" + std::to_string(n) + "^3/" + impl_name(impl)).c_str(), bench, dt,
                n, impl),
            impl == kMma ? 5 : 20);
  benchutil::run_benchmarks(&argc, argv);
  g_ops.reset();
  return 0;
}
