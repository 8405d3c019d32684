// Correctness of the tensor-core GEMM (src/gemm/tensorcore): fp16, bf16 and TF32, all four
// transpose combinations (the fast "TN" one and the general loader's), odd sizes and tails,
// alpha / beta, against a float64 reference on the rounded inputs (tolerance conv_tolerance with
// reduction length K) and against cublasGemmEx on the same buffers. Every kernel is run
// explicitly (gemm_mma, gemm_wgmma 128x128, gemm_hopper 128x256), then the selection; then the
// public jhdnnGemm / jhdnnGemmEx / *StridedBatched* in every order and transpose, the
// JHDNN_TC_GEMM ceiling, K == 0, and the bad inputs.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/scoped_config.h"
#include "common/status_rows.h"
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

  // Each kernel explicitly, then the automatic choice. gemm_wgmma serves only "TN" with 16-byte-
  // multiple leading dimensions on sm_90; gemm_hopper any B layout for 16-bit types (N x K for
  // TF32) with op(A) K-contiguous on sm_90; elsewhere each must refuse with a status and a reason
  // (and the selection falls back).
  std::vector<double> jh;
  int dev = 0, major = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  const bool wgmma_fits = !s.ta && s.tb && major == 9 &&
                          gemm::tensorcore::wgmma_unsupported(dt, s.M, s.N, s.K, dA.get(), lda, dB.get(), ldb, dC.get(),
                                                              ldc) == nullptr;
  const std::string hopper_why =
      gemm::tensorcore::hopper_unsupported(dt, dt, s.tb, s.M, s.N, s.K, dA.get(), lda, dB.get(), ldb, dC.get(), ldc);
  const bool hopper_fits = !s.ta && major == 9 && hopper_why.empty();
  INFO("gemm_wgmma takes it: " << wgmma_fits << "; gemm_hopper takes it: " << hopper_fits
                               << (hopper_why.empty() ? "" : " (refusal: " + hopper_why + ")"));
  for (int which = 0; which < 4; ++which) {
    const char* name = which == 0 ? "kernel gemm_mma (mma.sync)"
                       : which == 1 ? "kernel gemm_wgmma (128x128, verified)"
                       : which == 2 ? "kernel gemm_hopper (128x256, src/gemm/hopper)"
                                    : "gemm_ex (automatic selection)";
    INFO(name);
    if ((which == 1 || which == 2) && s.ta) continue;  // neither has a transposed-A argument
    if (which == 1 && !s.tb) continue;                 // gemm_wgmma: "TN" only
    reset_c();
    core::Status st;
    gemm::tensorcore::TcKernel used = gemm::tensorcore::TcKernel::kAuto;
    if (which == 0)
      st = gemm::tensorcore::gemm_mma(dt, s.ta, s.tb, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta,
                                      dC.get(), ldc, stream);
    else if (which == 1)
      st = gemm::tensorcore::gemm_wgmma(dt, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta, dC.get(),
                                        ldc, stream);
    else if (which == 2)
      st = gemm::tensorcore::gemm_hopper(dt, dt, s.tb, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta,
                                         dC.get(), ldc, stream);
    else
      st = gemm::tensorcore::gemm_ex(dt, dt, s.ta, s.tb, s.M, s.N, s.K, s.alpha, dA.get(), lda, dB.get(), ldb, s.beta,
                                     dC.get(), ldc, gemm::tensorcore::TcKernel::kAuto, stream, &used);
    const cudaError_t sync = cudaStreamSynchronize(stream);
    INFO("status: " << core::status_name(st.code) << " " << st.message << "; stream sync: " << cudaGetErrorString(sync)
                    << (which == 3 ? std::string("; selected: ") + gemm::tensorcore::tc_kernel_name(used) : ""));
    REQUIRE(sync == cudaSuccess);  // a watchdog trap (hung pipeline) or a fault shows up here
    CUDA_CHECK(cudaGetLastError());
    if (which == 1 && !wgmma_fits) {
      CHECK((st.code == JHDNN_STATUS_NOT_SUPPORTED || st.code == JHDNN_STATUS_ARCH_MISMATCH));
      continue;
    }
    if (which == 2 && !hopper_fits) {
      CHECK(!st.ok());
      CHECK(!st.message.empty());
      continue;
    }
    if (which == 3) {  // the selection picks the fastest kernel that takes the arguments
      const gemm::tensorcore::TcKernel want = hopper_fits  ? gemm::tensorcore::TcKernel::kHopper
                                              : wgmma_fits ? gemm::tensorcore::TcKernel::kWgmma
                                                           : gemm::tensorcore::TcKernel::kMma;
      CHECK(std::string(gemm::tensorcore::tc_kernel_name(used)) == gemm::tensorcore::tc_kernel_name(want));
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

// ================================================================ public API: jhdnnGemm / jhdnnGemmEx

namespace {

std::string api_last_error() {
  char buf[2048] = {};
  jhdnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

struct ApiCase {
  jhdnnOrder_t order;
  jhdnnGemmOp_t ta, tb;
  int64_t m, n, k;
  int64_t pad;    // added to every leading dimension
  int64_t batch;  // > 1: the StridedBatched entry, with gaps between the matrices
  float alpha, beta;
};

// Offset of stored element (r, c) of a matrix in the given order.
int64_t at(bool row, int64_t ld, int64_t r, int64_t c) { return row ? r * ld + c : c * ld + r; }

// One public-API GEMM vs the float64 reference and vs cublasGemmStridedBatchedEx on the same
// buffers. legacy: jhdnnGemm / jhdnnGemmStridedBatched(dataType = ab) instead of the Ex entries.
void run_api(jhdnnHandle_t h, cublasHandle_t cublas, cudaStream_t stream, jhdnnDataType_t ab, jhdnnDataType_t ct,
             jhdnnMathType_t math, bool legacy, const ApiCase& c) {
  const bool row = c.order == JHDNN_ORDER_ROW;
  const bool ta = c.ta == JHDNN_GEMM_OP_T, tb = c.tb == JHDNN_GEMM_OP_T;
  const char* env = gemm::tensorcore::tc_kernel_name(gemm::tensorcore::TcKernel(int(core::config::tc_gemm_ceiling())));
  INFO((legacy ? "jhdnnGemm" : "jhdnnGemmEx") << (c.batch > 1 ? "StridedBatched" : "") << " A/B "
                                                << core::data_type_name(ab) << " C " << core::data_type_name(ct)
                                                << " math " << int(math) << (row ? " ROW" : " COL") << " op(A) "
                                                << (ta ? "T" : "N") << " op(B) " << (tb ? "T" : "N") << " m " << c.m
                                                << " n " << c.n << " k " << c.k << " ld pad " << c.pad << " batch "
                                                << c.batch << " alpha " << c.alpha << " beta " << c.beta
                                                << " TC GEMM ceiling " << env);
  const int64_t a_r = ta ? c.k : c.m, a_c = ta ? c.m : c.k;
  const int64_t b_r = tb ? c.n : c.k, b_c = tb ? c.k : c.n;
  const int64_t lda = (row ? a_c : a_r) + c.pad, ldb = (row ? b_c : b_r) + c.pad, ldc = (row ? c.n : c.m) + c.pad;
  // Batch strides leave an 8-element gap (kept 16-byte aligned) that must stay untouched.
  const int64_t sa = (row ? a_r : a_c) * lda + 8, sb = (row ? b_r : b_c) * ldb + 8, sc = (row ? c.m : c.n) * ldc + 8;
  const uint64_t salt = hash_string(std::to_string(c.m) + "/" + std::to_string(c.n) + "/" + std::to_string(c.k) +
                                    core::data_type_name(ab) + core::data_type_name(ct) + (row ? "r" : "c") +
                                    (ta ? "T" : "N") + (tb ? "T" : "N"));
  std::vector<double> A(size_t(c.batch * sa)), B(size_t(c.batch * sb)), C0(size_t(c.batch * sc));
  fill_random(A, ab, mix_seed(test_seed(), salt + 1));
  fill_random(B, ab, mix_seed(test_seed(), salt + 2));
  fill_random(C0, ct, mix_seed(test_seed(), salt + 3));
  std::vector<double> ref(C0.size(), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < c.k; ++kk) {
          const double x = A[size_t(b * sa + (ta ? at(row, lda, kk, i) : at(row, lda, i, kk)))];
          const double y = B[size_t(b * sb + (tb ? at(row, ldb, j, kk) : at(row, ldb, kk, j)))];
          acc += x * y;
        }
        const size_t o = size_t(b * sc + at(row, ldc, i, j));
        ref[o] = double(c.alpha) * acc + (c.beta != 0.f ? double(c.beta) * C0[o] : 0.0);
      }
  const size_t es_ab = dtype_size(ab), es_c = dtype_size(ct);
  DeviceBuffer dA(A.size() * es_ab), dB(B.size() * es_ab), dC(C0.size() * es_c);
  dA.upload(to_device_bytes(A, ab));
  dB.upload(to_device_bytes(B, ab));
  const std::vector<unsigned char> c_init =
      c.beta != 0.f ? to_device_bytes(C0, ct) : std::vector<unsigned char>(C0.size() * es_c, 0xFF);  // NaN poison
  // Which elements of C are logical (the rest -- padding, batch gaps -- must keep their bytes).
  std::vector<char> logical(C0.size(), 0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) logical[size_t(b * sc + at(row, ldc, i, j))] = 1;
  const int64_t dims[5] = {c.batch, c.m, c.n, 1, 1};
  const int64_t strides[5] = {sc, row ? ldc : 1, row ? 1 : ldc, 0, 0};
  const bool tf32 = ab == JHDNN_DATA_FLOAT && math != JHDNN_FMA_MATH;
  const Tolerance tol = conv_tolerance(ab, c.k, tf32);
  auto check_c = [&](const char* who) {
    INFO(who);
    CHECK(dC.guard_intact());
    const std::vector<unsigned char> bytes = dC.download();
    const std::vector<double> got = from_device_bytes(bytes.data(), C0.size(), ct);
    const CompareResult r = compare_tensor(got.data(), ref.data(), dims, strides, tol);
    INFO(who << " vs float64: " << r.summary());
    CHECK(r.ok);
    int64_t touched = 0;
    for (size_t e = 0; e < logical.size(); ++e)
      if (!logical[e]) touched += std::memcmp(&bytes[e * es_c], &c_init[e * es_c], es_c) != 0;
    INFO(who << " wrote " << touched << " elements outside C's logical ones (padding / batch gaps)");
    CHECK(touched == 0);
    return got;
  };

  dC.upload(c_init);
  jhdnnStatus_t st;
  if (legacy && c.batch == 1)
    st = jhdnnGemm(h, ab, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, dA.get(), lda, dB.get(), ldb, &c.beta,
                   dC.get(), ldc);
  else if (legacy)
    st = jhdnnGemmStridedBatched(h, ab, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, dA.get(), lda, sa, dB.get(), ldb,
                                 sb, &c.beta, dC.get(), ldc, sc, c.batch);
  else if (c.batch == 1)
    st = jhdnnGemmEx(h, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, dA.get(), lda, dB.get(), ldb, ab, &c.beta,
                     dC.get(), ldc, ct, math);
  else
    st = jhdnnGemmStridedBatchedEx(h, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, dA.get(), lda, sa, dB.get(), ldb,
                                   sb, ab, &c.beta, dC.get(), ldc, sc, ct, math, c.batch);
  const std::string msg = api_last_error();
  const cudaError_t sync = cudaStreamSynchronize(stream);
  INFO("status " << jhdnnGetErrorString(st) << ": " << msg << "; stream sync: " << cudaGetErrorString(sync));
  REQUIRE(st == JHDNN_STATUS_SUCCESS);
  REQUIRE(sync == cudaSuccess);
  const std::vector<double> jh = check_c("jhDNN");

  // cuBLAS is column-major: a row-major C is the column-major C^T = op(B)^T op(A)^T.
  dC.upload(c_init);
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasComputeType_t comp = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasStatus_t cs =
      row ? cublasGemmStridedBatchedEx(cublas, ob, oa, int(c.n), int(c.m), int(c.k), &c.alpha, dB.get(), cuda_type(ab),
                                       int(ldb), sb, dA.get(), cuda_type(ab), int(lda), sa, &c.beta, dC.get(),
                                       cuda_type(ct), int(ldc), sc, int(c.batch), comp, CUBLAS_GEMM_DEFAULT)
          : cublasGemmStridedBatchedEx(cublas, oa, ob, int(c.m), int(c.n), int(c.k), &c.alpha, dA.get(), cuda_type(ab),
                                       int(lda), sa, dB.get(), cuda_type(ab), int(ldb), sb, &c.beta, dC.get(),
                                       cuda_type(ct), int(ldc), sc, int(c.batch), comp, CUBLAS_GEMM_DEFAULT);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  REQUIRE(cs == CUBLAS_STATUS_SUCCESS);
  const std::vector<double> cu = check_c("cuBLAS");
  const CompareResult r = compare_tensor(jh.data(), cu.data(), dims, strides, Tolerance{2 * tol.atol, 2 * tol.rtol});
  INFO("jhDNN vs cuBLAS: " << r.summary());
  CHECK(r.ok);
}

struct ApiGpu {
  CudaStream stream;
  JhdnnHandle jh;
  cublasHandle_t cublas = nullptr;
  ApiGpu() {
    JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetStream(cublas, stream.get());
  }
  ~ApiGpu() { cublasDestroy(cublas); }
};

constexpr jhdnnOrder_t kRow = JHDNN_ORDER_ROW, kCol = JHDNN_ORDER_COL;
constexpr jhdnnGemmOp_t kN = JHDNN_GEMM_OP_N, kT = JHDNN_GEMM_OP_T;

}  // namespace

TEST_CASE("tensorcore gemm: jhdnnGemmEx, every order and transpose, vs float64 and cuBLAS", "[gpu][gemm][tensorcore][api]") {
  JHDNN_REQUIRE_GPU();
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs");
  ScopedTcGemmCeiling auto_kernel("auto");  // whatever JHDNN_TC_GEMM says
  ApiGpu g;
  for (jhdnnDataType_t ab : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT})
    for (jhdnnOrder_t order : {kRow, kCol})
      for (jhdnnGemmOp_t ta : {kN, kT})
        for (jhdnnGemmOp_t tb : {kN, kT}) {
          // 16-byte multiples everywhere (the fast kernels where the layout allows), then odd sizes
          // and leading dimensions in a 2-matrix batch (the mma.sync kernel's general loader).
          run_api(g.jh.get(), g.cublas, g.stream.get(), ab, ab, JHDNN_DEFAULT_MATH, false,
                  {order, ta, tb, 136, 200, 72, 8, 1, 1.f, 0.f});
          run_api(g.jh.get(), g.cublas, g.stream.get(), ab, ab, JHDNN_TENSOR_OP_MATH, false,
                  {order, ta, tb, 37, 51, 29, 3, 2, 0.5f, -1.f});
        }
}

TEST_CASE("tensorcore gemm: jhdnnGemm HALF / BFLOAT16, FLOAT output, FMA FLOAT, batches, big shapes", "[gpu][gemm][tensorcore][api]") {
  JHDNN_REQUIRE_GPU();
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs");
  ScopedTcGemmCeiling auto_kernel("auto");  // whatever JHDNN_TC_GEMM says
  ApiGpu g;
  auto run = [&](jhdnnDataType_t ab, jhdnnDataType_t ct, jhdnnMathType_t math, bool legacy, const ApiCase& c) {
    run_api(g.jh.get(), g.cublas, g.stream.get(), ab, ct, math, legacy, c);
  };
  // jhdnnGemm / jhdnnGemmStridedBatched with the 16-bit types (DEFAULT_MATH, C in the data type).
  for (jhdnnDataType_t ab : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16}) {
    run(ab, ab, JHDNN_DEFAULT_MATH, true, {kRow, kN, kN, 128, 256, 64, 0, 1, 1.f, 0.f});
    run(ab, ab, JHDNN_DEFAULT_MATH, true, {kCol, kT, kN, 130, 90, 48, 8, 3, 2.f, 0.5f});
  }
  // jhdnnGemm FLOAT keeps its meaning (fp32 FMA): compared against cuBLAS's plain fp32 GEMM.
  run(JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT, JHDNN_FMA_MATH, true, {kRow, kN, kT, 70, 90, 50, 1, 1, 1.f, 0.f});
  run(JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT, JHDNN_FMA_MATH, false, {kCol, kN, kN, 70, 90, 50, 1, 2, 1.f, 1.f});
  // FLOAT output of 16-bit inputs: the layouts the 128x256 kernel takes (op(A) K-contiguous).
  for (jhdnnDataType_t ab : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16}) {
    run(ab, JHDNN_DATA_FLOAT, JHDNN_DEFAULT_MATH, false, {kRow, kN, kT, 136, 200, 72, 8, 1, 1.f, 0.f});
    // (every leading dimension a multiple of 8 elements: the kernel's TMA needs 16-byte rows)
    run(ab, JHDNN_DATA_FLOAT, JHDNN_DEFAULT_MATH, false, {kRow, kN, kN, 129, 264, 72, 0, 2, 0.5f, -1.f});
    run(ab, JHDNN_DATA_FLOAT, JHDNN_TENSOR_OP_MATH, false, {kCol, kT, kN, 100, 300, 264, 8, 1, 1.f, 0.f});
    run(ab, JHDNN_DATA_FLOAT, JHDNN_TENSOR_OP_MATH, false, {kCol, kN, kN, 104, 300, 264, 8, 1, 1.f, 0.f});
  }
  // Several tiles per CTA through the API (persistent loop, pipeline phases wrapping).
  run(JHDNN_DATA_HALF, JHDNN_DATA_HALF, JHDNN_DEFAULT_MATH, false, {kRow, kN, kN, 1000, 1032, 264, 8, 2, 1.f, 0.f});
  run(JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT, JHDNN_TENSOR_OP_MATH, false, {kCol, kT, kN, 1000, 1032, 264, 4, 1, 1.f, 0.f});
}

TEST_CASE("tensorcore gemm: JHDNN_TC_GEMM runs each kernel through the API", "[gpu][gemm][tensorcore][api]") {
  JHDNN_REQUIRE_GPU();
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs");
  ApiGpu g;
  for (const char* kernel : {"mma", "wgmma", "hopper", "AUTO"}) {
    ScopedTcGemmCeiling ceiling(kernel);
    for (jhdnnDataType_t ab : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT}) {
      run_api(g.jh.get(), g.cublas, g.stream.get(), ab, ab, JHDNN_DEFAULT_MATH, false,
              {kRow, kN, kT, 264, 520, 136, 0, 1, 1.f, 0.f});  // "TN": every kernel takes it
      run_api(g.jh.get(), g.cublas, g.stream.get(), ab, ab, JHDNN_DEFAULT_MATH, false,
              {kCol, kN, kN, 264, 520, 136, 8, 1, 1.f, 0.5f});  // B K x N for the kernels
    }
  }
}

TEST_CASE("tensorcore gemm: K == 0 and empty problems through the API", "[gpu][gemm][tensorcore][api]") {
  JHDNN_REQUIRE_GPU();
  ScopedTcGemmCeiling auto_kernel("auto");  // whatever JHDNN_TC_GEMM says
  ApiGpu g;
  for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_FLOAT}) {
    INFO(core::data_type_name(dt));
    const int64_t m = 33, n = 20, ldc = 40;  // row-major, padded
    std::vector<double> c0(size_t(m * ldc));
    fill_random(c0, dt, 77);
    DeviceBuffer dC(c0.size() * dtype_size(dt));
    for (float beta : {0.5f, 0.f}) {
      INFO("beta " << beta);
      dC.upload(to_device_bytes(c0, dt));
      const float alpha = 1.f;
      REQUIRE(jhdnnGemmEx(g.jh.get(), kRow, kN, kN, m, n, 0, &alpha, nullptr, 1, nullptr, n, dt, &beta, dC.get(), ldc, dt,
                          JHDNN_DEFAULT_MATH) == JHDNN_STATUS_SUCCESS);
      CUDA_CHECK(cudaStreamSynchronize(g.stream.get()));
      const auto bytes = dC.download();
      const std::vector<double> got = from_device_bytes(bytes.data(), c0.size(), dt);
      int64_t bad = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const double want = j < n ? double(beta) * c0[size_t(i * ldc + j)] : c0[size_t(i * ldc + j)];
          const double tolv = std::fabs(want) * (dt == JHDNN_DATA_BFLOAT16 ? 1e-2 : 1e-3);
          bad += !(std::fabs(got[size_t(i * ldc + j)] - want) <= tolv);
        }
      CHECK(bad == 0);
    }
  }
  // m == 0: nothing is touched, no pointer is needed.
  const float one = 1.f, zero = 0.f;
  CHECK(jhdnnGemmEx(g.jh.get(), kRow, kN, kN, 0, 8, 8, &one, nullptr, 8, nullptr, 8, JHDNN_DATA_HALF, &zero, nullptr, 8,
                    JHDNN_DATA_HALF, JHDNN_DEFAULT_MATH) == JHDNN_STATUS_SUCCESS);
}

TEST_CASE("tensorcore gemm: jhdnnGemmEx bad inputs get a clear status and message", "[gpu][gemm][tensorcore][api][bad_input]") {
  {  // a null handle needs no GPU
    const float one = 1.f;
    float dummy[4] = {};
    CHECK(jhdnnGemmEx(nullptr, kCol, kN, kN, 1, 1, 1, &one, dummy, 1, dummy, 1, JHDNN_DATA_HALF, &one, dummy, 1,
                      JHDNN_DATA_HALF, JHDNN_DEFAULT_MATH) == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
    CHECK(api_last_error().find("handle") != std::string::npos);
  }
  JHDNN_REQUIRE_GPU();
  ScopedTcGemmCeiling auto_kernel("auto");  // whatever JHDNN_TC_GEMM says
  ApiGpu g;
  jhdnnHandle_t h = g.jh.get();
  DeviceBuffer a(64 * 64 * 4), b(64 * 64 * 4), c(64 * 64 * 4);
  const void* pa = a.get();
  const void* pb = b.get();
  void* pc = c.get();
  const float one = 1.f, zero = 0.f;
  const jhdnnDataType_t H = JHDNN_DATA_HALF, F = JHDNN_DATA_FLOAT;
  const jhdnnMathType_t D = JHDNN_DEFAULT_MATH;
  using Row = StatusRow;
  const std::vector<Row> rows = {
      {"DOUBLE A/B", [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, JHDNN_DATA_DOUBLE, &zero, pc, 8, F, D); },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "DOUBLE"},
      {"jhdnnGemm DOUBLE", [&] { return jhdnnGemm(h, JHDNN_DATA_DOUBLE, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "DOUBLE"},
      {"FLOAT A/B, HALF C", [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, F, &zero, pc, 8, H, D); },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "C type HALF"},
      {"HALF A/B, BFLOAT16 C",
       [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 8, JHDNN_DATA_BFLOAT16, D); },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "C type BFLOAT16"},
      {"bad math type",
       [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 8, H, jhdnnMathType_t(9)); },
       JHDNN_STATUS_BAD_PARAM, "mathType"},
      {"HALF under FMA_MATH",
       [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 8, H, JHDNN_FMA_MATH); },
       JHDNN_STATUS_NOT_SUPPORTED, "FMA_MATH"},
      {"null A", [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, nullptr, 8, pb, 8, H, &zero, pc, 8, H, D); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "A"},
      {"null alpha", [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, nullptr, pa, 8, pb, 8, H, &zero, pc, 8, H, D); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "alpha"},
      {"lda < k (row, N)", [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 9, &one, pa, 8, pb, 8, H, &zero, pc, 8, H, D); },
       JHDNN_STATUS_BAD_PARAM, "lda (8)"},
      {"ldc < m (col)", [&] { return jhdnnGemmEx(h, kCol, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 7, H, D); },
       JHDNN_STATUS_BAD_PARAM, "ldc (7)"},
      {"misaligned HALF A",
       [&] {
         return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, static_cast<const char*>(pa) + 1, 8, pb, 8, H, &zero, pc, 8, H, D);
       },
       JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "aligned"},
      {"misaligned FLOAT C of HALF inputs",
       [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, static_cast<char*>(pc) + 2, 8, F, D); },
       JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "aligned"},
      {"C overlaps A (HALF)",
       [&] { return jhdnnGemmEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, a.as<char>() + 16, 8, H, D); },
       JHDNN_STATUS_BAD_PARAM, "overlaps A"},
      {"overlapping C batches",
       [&] {
         return jhdnnGemmStridedBatchedEx(h, kRow, kN, kN, 8, 8, 8, &one, pa, 8, 64, pb, 8, 64, H, &zero, pc, 8, 32, H, D, 2);
       },
       JHDNN_STATUS_BAD_PARAM, "strideC"},
      {"FLOAT output of HALF, transposed A (no 128x256 kernel for it)",
       [&] { return jhdnnGemmEx(h, kRow, kT, kN, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 8, F, D); },
       JHDNN_STATUS_NOT_SUPPORTED, "128x256"},
  };
  check_status_rows(rows);
  // A misspelt JHDNN_TC_GEMM (an error, not a silent "auto") is read once per process: test_config's
  // config_env_tc_gemm_misspelt runs with it in the environment.
  {  // FLOAT output of HALF inputs needs the 128x256 kernel; the ceiling "mma" excludes it
    ScopedTcGemmCeiling ceiling("mma");
    const jhdnnStatus_t st = jhdnnGemmEx(h, kRow, kN, kT, 8, 8, 8, &one, pa, 8, pb, 8, H, &zero, pc, 8, F, D);
    const std::string msg = api_last_error();
    INFO("got " << jhdnnGetErrorString(st) << ": " << msg);
    CHECK(st == JHDNN_STATUS_NOT_SUPPORTED);
    CHECK(msg.find("JHDNN_TC_GEMM") != std::string::npos);
  }
}
