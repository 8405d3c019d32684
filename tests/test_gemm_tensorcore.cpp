// Correctness of the tensor-core GEMM (src/gemm/tensorcore): fp16, bf16 and TF32, all four
// transpose combinations (the fast "TN" one and the general loader's), odd sizes and tails,
// alpha / beta, against a float64 reference on the rounded inputs (tolerance conv_tolerance with
// reduction length K) and against cublasGemmEx on the same buffers.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/test_util.h"
#include "gemm/tensorcore/gemm_tc.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

cudaDataType_t cuda_type(jhdnnDataType_t dt) {
  return dt == JHDNN_DATA_HALF ? CUDA_R_16F : dt == JHDNN_DATA_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

struct Shape {
  int64_t M, N, K;
  bool ta, tb;
  float alpha, beta;
};

// Row-major C (M x N, ldc = N + pad) from A, B as stored (lda / ldb with a little padding, so a
// kernel that ignores the leading dimension fails).
void run_shape(jhdnnDataType_t dt, const Shape& s, cublasHandle_t cublas, cudaStream_t stream) {
  INFO("dtype " << core::data_type_name(dt) << " M " << s.M << " N " << s.N << " K " << s.K << " trans_a " << s.ta
                << " trans_b " << s.tb << " alpha " << s.alpha << " beta " << s.beta);
  const int64_t a_rows = s.ta ? s.K : s.M, a_cols = s.ta ? s.M : s.K;
  const int64_t b_rows = s.tb ? s.N : s.K, b_cols = s.tb ? s.K : s.N;
  const int64_t lda = a_cols + 8, ldb = b_cols + 8, ldc = s.N + 3;
  const uint64_t salt = hash_string(std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K) +
                                    (s.ta ? "T" : "N") + (s.tb ? "T" : "N") + core::data_type_name(dt));
  std::vector<double> A(size_t(a_rows * lda)), B(size_t(b_rows * ldb)), C0(size_t(s.M * ldc));
  fill_random(A, dt, mix_seed(test_seed(), salt + 1));
  fill_random(B, dt, mix_seed(test_seed(), salt + 2));
  fill_random(C0, dt, mix_seed(test_seed(), salt + 3));
  std::vector<double> ref(size_t(s.M * ldc), 0.0);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < s.K; ++k) {
        const double a = s.ta ? A[size_t(k * lda + m)] : A[size_t(m * lda + k)];
        const double b = s.tb ? B[size_t(n * ldb + k)] : B[size_t(k * ldb + n)];
        acc += a * b;
      }
      ref[size_t(m * ldc + n)] = double(s.alpha) * acc + (s.beta != 0.f ? double(s.beta) * C0[size_t(m * ldc + n)] : 0.0);
    }
  const size_t es = dtype_size(dt);
  DeviceBuffer dA(A.size() * es), dB(B.size() * es), dC(C0.size() * es);
  dA.upload(to_device_bytes(A, dt));
  dB.upload(to_device_bytes(B, dt));
  auto reset_c = [&] {
    if (s.beta != 0.f) dC.upload(to_device_bytes(C0, dt));
    else dC.poison();  // NaN: beta == 0 must not read C
  };
  const Tolerance tol = conv_tolerance(dt, s.K, dt == JHDNN_DATA_FLOAT);
  const int64_t dims[5] = {s.M, s.N, 1, 1, 1}, strides[5] = {ldc, 1, 0, 0, 0};
  auto compare = [&](const char* who, Tolerance t) {
    INFO(who);
    CHECK(dC.guard_intact());
    const auto bytes = dC.download();
    const std::vector<double> got = from_device_bytes(bytes.data(), C0.size(), dt);
    const CompareResult r = compare_tensor(got.data(), ref.data(), dims, strides, t);
    INFO(r.summary());
    CHECK(r.ok);
    // The padding columns of C are never written.
    int64_t touched = 0;
    const std::vector<unsigned char> init = s.beta != 0.f ? to_device_bytes(C0, dt) : std::vector<unsigned char>(bytes.size(), 0xFF);
    for (int64_t m = 0; m < s.M; ++m)
      for (int64_t n = s.N; n < ldc; ++n)
        for (size_t b = 0; b < es; ++b) touched += bytes[size_t(m * ldc + n) * es + b] != init[size_t(m * ldc + n) * es + b];
    CHECK(touched == 0);
    return got;
  };

  // Each generation explicitly, then the automatic choice. gemm_wgmma serves only "TN" with
  // 16-byte-multiple leading dimensions on sm_90; elsewhere it must refuse with NOT_SUPPORTED /
  // ARCH_MISMATCH (and gemm() falls back to gemm_mma).
  std::vector<double> jh;
  int dev = 0, major = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  const bool wgmma_fits = !s.ta && s.tb && major == 9 &&
                          gemm::tensorcore::wgmma_unsupported(dt, s.M, s.N, s.K, dA.get(), lda, dB.get(), ldb, dC.get(),
                                                              ldc) == nullptr;
  for (int which = 0; which < 3; ++which) {
    const char* name = which == 0 ? "gemm_mma" : which == 1 ? "gemm_wgmma" : "gemm (auto)";
    INFO(name);
    if (which == 1 && (s.ta || !s.tb)) continue;  // gemm_wgmma has no transpose arguments: "TN" only
    reset_c();
    core::Status st;
    if (which == 0)
      st = gemm::tensorcore::gemm_mma(dt, s.ta, s.tb, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta,
                                      dC.get(), ldc, stream);
    else if (which == 1)
      st = gemm::tensorcore::gemm_wgmma(dt, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta, dC.get(),
                                        ldc, stream);
    else
      st = gemm::tensorcore::gemm(dt, s.ta, s.tb, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta,
                                  dC.get(), ldc, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaGetLastError());
    INFO("status: " << core::status_name(st.code) << " " << st.message);
    if (which == 1 && !wgmma_fits) {
      CHECK((st.code == JHDNN_STATUS_NOT_SUPPORTED || st.code == JHDNN_STATUS_ARCH_MISMATCH));
      continue;
    }
    REQUIRE(st.ok());
    std::vector<double> got = compare(name, tol);
    if (which == 0) jh = std::move(got);
  }

  // cuBLAS (column-major): C^T (N x M, ld ldc) = op(B)^T op(A)^T; a row-major stored matrix is its
  // transpose in column-major, so B's op flag is "T" exactly when B is stored N x K (trans_b).
  reset_c();
  const cublasOperation_t opB = s.tb ? CUBLAS_OP_T : CUBLAS_OP_N, opA = s.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasStatus_t cs = cublasGemmEx(cublas, opB, opA, int(s.N), int(s.M), int(s.K), &s.alpha, dB.get(), cuda_type(dt),
                                         int(ldb), dA.get(), cuda_type(dt), int(lda), &s.beta, dC.get(), cuda_type(dt),
                                         int(ldc), dt == JHDNN_DATA_FLOAT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                         CUBLAS_GEMM_DEFAULT);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  REQUIRE(cs == CUBLAS_STATUS_SUCCESS);
  const std::vector<double> cu = compare("cuBLAS", tol);
  const CompareResult r = compare_tensor(jh.data(), cu.data(), dims, strides, Tolerance{2 * tol.atol, 2 * tol.rtol});
  INFO("jhDNN vs cuBLAS: " << r.summary());
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("tensorcore gemm: fp16 / bf16 / TF32 vs float64 and cuBLAS", "[gpu][gemm][tensorcore]") {
  JHDNN_REQUIRE_GPU();
  std::printf("test_gemm_tensorcore: %s; seed %" PRIu64 "\n", gpu_description().c_str(), test_seed());
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs");
  CudaStream stream;
  cublasHandle_t cublas = nullptr;
  REQUIRE(cublasCreate(&cublas) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasSetStream(cublas, stream.get()) == CUBLAS_STATUS_SUCCESS);
  const std::vector<Shape> shapes = {
      {128, 128, 64, false, true, 1.f, 0.f},   {256, 192, 512, false, true, 1.f, 0.f},
      {129, 67, 40, false, true, 1.f, 0.f},    {1, 300, 77, false, true, 1.f, 0.f},
      {300, 1, 96, false, true, 0.5f, 0.75f},  {200, 520, 1000, false, true, -1.f, 1.f},
      {96, 80, 72, false, false, 1.f, 0.f},    {96, 80, 72, true, true, 1.f, 0.f},
      {65, 33, 31, true, false, 2.f, 0.5f},    {512, 512, 2048, false, true, 1.f, 0.f},
      // more output tiles than SMs (the persistent loop, stage phases wrapping across tiles)
      {2048, 1152, 256, false, true, 1.f, 0.f}, {1000, 1000, 200, false, true, 0.5f, -0.5f},
  };
  for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT})
    for (const Shape& s : shapes) run_shape(dt, s, cublas, stream.get());
  cublasDestroy(cublas);
}

TEST_CASE("tensorcore gemm: bad arguments", "[gemm][tensorcore]") {
  int dummy[4] = {};
  CHECK(gemm::tensorcore::gemm(JHDNN_DATA_DOUBLE, false, true, 8, 8, 8, 1.f, dummy, 8, dummy, 8, 0.f, dummy, 8, nullptr)
            .code == JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  CHECK(gemm::tensorcore::gemm(JHDNN_DATA_HALF, false, true, 0, 8, 8, 1.f, dummy, 8, dummy, 8, 0.f, dummy, 8, nullptr)
            .code == JHDNN_STATUS_BAD_PARAM);
  CHECK(gemm::tensorcore::gemm(JHDNN_DATA_HALF, false, true, 8, 8, 8, 1.f, dummy, 4, dummy, 8, 0.f, dummy, 8, nullptr)
            .code == JHDNN_STATUS_BAD_PARAM);
  CHECK(gemm::tensorcore::gemm(JHDNN_DATA_HALF, false, true, 8, 8, 8, 1.f, nullptr, 8, dummy, 8, 0.f, dummy, 8, nullptr)
            .code == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
}
