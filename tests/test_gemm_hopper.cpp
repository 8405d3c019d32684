// GPU correctness of the Hopper wgmma GEMM (src/gemm/hopper): C = alpha * A * Bt^T + beta * C,
// row-major, A M x K, Bt N x K, fp16 / bf16 inputs, fp32 accumulation, C in the input type or fp32.
//
// How one configuration is checked:
//   - inputs uniform in [-1, 1), rounded to the input type, seeded from test_seed() (printed once;
//     rerun with JHDNN_TEST_SEED=<seed> to replay), never all zero; lda / ldb / ldc may be padded;
//   - C: beta == 0 -> every byte poisoned with 0xFF (NaN in every float type), so a skipped output
//     or a read of C shows up as NaN; beta != 0 -> random values (the padding columns between n
//     and ldc stay poisoned). Padding columns and the guard bytes after every buffer must come back
//     untouched;
//   - float64 reference on the rounded inputs, on every row for small problems and on a sample of
//     rows (first / last rows of tiles, tails, and an even spread) for big ones, per element:
//       |got - ref| <= |alpha| * K * u32 * sum_k |a_mk b_nk| + u_out * |ref| (+ beta's rounding)
//     (a deterministic bound: fp32 accumulation of K exact products, one rounding to the output
//     type). A wrong element, a missing k16 step or a misplaced fragment is far outside it;
//   - cublasGemmEx (CUBLAS_COMPUTE_32F) on the same inputs: cuBLAS vs the reference (the harness
//     checking itself on the sampled rows) and ours vs cuBLAS on every element at twice the bound;
//   - the first mismatching element (row, col, got, ref, bound) and the number of mismatches are
//     printed, so a wrong answer is diagnosable from the log alone.
// A hung pipeline cannot hang the test: the kernel's mbarrier waits carry a watchdog (on by
// default, JHDNN_HOPPER_WATCHDOG in src/core/sm90/ptx.cuh) that traps after ~10 s, which
// surfaces here as a CUDA error ("unspecified launch failure") on the synchronize.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/test_util.h"
#include "core/status.h"
#include "gemm/hopper/gemm_wgmma.h"

using namespace jhdnn;
using namespace jhdnn::test;
using gemm::hopper::GemmArgs;

namespace {

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed: cublasStatus " + std::to_string(int(s)));
}
#define CUBLAS_CHECK(call) cublas_check((call), #call)

struct Cublas {
  cublasHandle_t h = nullptr;
  Cublas() { CUBLAS_CHECK(cublasCreate(&h)); }
  ~Cublas() { cublasDestroy(h); }
};
Cublas& cublas() {
  static Cublas c;
  return c;
}

cudaDataType_t cuda_type(jhdnnDataType_t t) {
  return t == JHDNN_DATA_HALF ? CUDA_R_16F : t == JHDNN_DATA_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

// Unit roundoff of the output type.
double unit_roundoff(jhdnnDataType_t t) {
  return t == JHDNN_DATA_HALF ? std::ldexp(1.0, -11) : t == JHDNN_DATA_BFLOAT16 ? std::ldexp(1.0, -8)
                                                                                : std::ldexp(1.0, -24);
}

const char* tname(jhdnnDataType_t t) { return core::data_type_name(t); }

struct Case {
  int64_t m, n, k;
  jhdnnDataType_t ab, c;
  float alpha = 1.0f, beta = 0.0f;
  int64_t lda_pad = 0, ldb_pad = 0, ldc_pad = 0;
  bool b_kn = false;  // B given K x N (N contiguous) instead of N x K
};

std::string describe(const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "m=%lld n=%lld k=%lld %s->%s alpha=%g beta=%g B %s lda=k+%lld ldb=%s+%lld ldc=n+%lld",
                (long long)c.m, (long long)c.n, (long long)c.k, tname(c.ab), tname(c.c), c.alpha, c.beta,
                c.b_kn ? "KxN" : "NxK", (long long)c.lda_pad, c.b_kn ? "n" : "k", (long long)c.ldb_pad,
                (long long)c.ldc_pad);
  return buf;
}

// Rows to check against the float64 reference: all of them when the problem is small, else the
// edges of the first / last tiles and of the consumer halves, plus ~48 rows spread over M.
std::vector<int64_t> rows_to_check(int64_t m, int64_t n, int64_t k) {
  std::vector<int64_t> rows;
  if (m * n * k <= (int64_t(1) << 28)) {
    for (int64_t r = 0; r < m; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(7), int64_t(8), int64_t(15), int64_t(16), int64_t(63),
                    int64_t(64), int64_t(127), int64_t(128), m - 129, m - 65, m - 64, m - 2, m - 1})
    if (r >= 0 && r < m) rows.push_back(r);
  const int64_t step = std::max<int64_t>(1, m / 48);
  for (int64_t r = 3; r < m; r += step) rows.push_back(r);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

void run_case(const Case& cs) {
  INFO(describe(cs) << " (seed " << test_seed() << ")");
  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const int64_t lda = K + cs.lda_pad, ldb = (cs.b_kn ? N : K) + cs.ldb_pad, ldc = N + cs.ldc_pad;
  const int64_t b_rows = cs.b_kn ? K : N;
  const size_t es_in = dtype_size(cs.ab), es_c = dtype_size(cs.c);

  // Host inputs (rounded to the input type); padding elements get values too (never read).
  const uint64_t salt = hash_string(describe(cs));
  // FLOAT (tf32) inputs get values with an fp16 significand (11 bits): exact in tf32, so the
  // result does not depend on how the tensor cores shorten fp32 operands (truncation or rounding)
  // and the tolerance stays the fp32-accumulation one.
  const jhdnnDataType_t fill_type = cs.ab == JHDNN_DATA_FLOAT ? JHDNN_DATA_HALF : cs.ab;
  std::vector<double> ha(size_t(M * lda)), hb(size_t(b_rows * ldb));
  fill_random(ha, fill_type, mix_seed(test_seed(), salt + 1));
  fill_random(hb, fill_type, mix_seed(test_seed(), salt + 2));
  DeviceBuffer da(ha.size() * es_in), db(hb.size() * es_in), dc(size_t(M * ldc) * es_c);
  da.upload(to_device_bytes(ha, cs.ab));
  db.upload(to_device_bytes(hb, cs.ab));

  // C: all poison; for beta != 0 the logical elements get random values (padding stays poison).
  std::vector<unsigned char> c_init(dc.bytes(), 0xFF);
  std::vector<double> hc0(size_t(M * N), 0.0);
  if (cs.beta != 0.0f) {
    fill_random(hc0, cs.c, mix_seed(test_seed(), salt + 3));
    const std::vector<unsigned char> packed = to_device_bytes(hc0, cs.c);
    for (int64_t r = 0; r < M; ++r)
      std::memcpy(&c_init[size_t(r * ldc) * es_c], &packed[size_t(r * N) * es_c], size_t(N) * es_c);
  }
  dc.upload(c_init);

  GemmArgs args;
  args.m = M, args.n = N, args.k = K;
  args.a = da.get(), args.lda = lda;
  args.b = db.get(), args.ldb = ldb, args.b_kn = cs.b_kn;
  args.c = dc.get(), args.ldc = ldc;
  args.ab_type = cs.ab, args.c_type = cs.c;
  args.alpha = cs.alpha, args.beta = cs.beta;
  const core::Status st = gemm::hopper::gemm_wgmma(args, nullptr);
  INFO("gemm_wgmma: " << core::status_name(st.code) << " " << st.message);
  REQUIRE(st.ok());
  CUDA_CHECK(cudaDeviceSynchronize());  // a watchdog trap shows up here
  const std::vector<unsigned char> c_bytes = dc.download();
  const std::vector<double> got = from_device_bytes(c_bytes.data(), size_t(M * ldc), cs.c);

  // cuBLAS on the same inputs: column-major C^T (N x M, ldc) = B^T * A^T, where A^T is the K x M
  // col-major view of A and B^T is op T of the K x N col-major view of Bt (N x K storage) or,
  // for K x N storage, the N x K col-major view itself.
  DeviceBuffer dcb(size_t(M * ldc) * es_c);
  dcb.upload(c_init);
  CUBLAS_CHECK(cublasSetStream(cublas().h, nullptr));
  CUBLAS_CHECK(cublasGemmEx(cublas().h, cs.b_kn ? CUBLAS_OP_N : CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &cs.alpha, db.get(),
                            cuda_type(cs.ab), int(ldb), da.get(), cuda_type(cs.ab), int(lda), &cs.beta, dcb.get(),
                            cuda_type(cs.c), int(ldc),
                            cs.ab == JHDNN_DATA_FLOAT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<unsigned char> cb_bytes = dcb.download();
  const std::vector<double> cub = from_device_bytes(cb_bytes.data(), size_t(M * ldc), cs.c);

  const double u32 = std::ldexp(1.0, -24), uo = unit_roundoff(cs.c);
  const double alpha = cs.alpha, beta = cs.beta;

  // 1) float64 reference on the sampled rows.
  int64_t bad = 0, bad_cublas_ref = 0, checked = 0, bad_nan = 0;
  double max_err = 0;
  std::string first_bad, first_bad_cublas;
  std::vector<char> bad_row(size_t(M), 0), bad_col(size_t(N), 0);  // where the wrong elements are
  for (int64_t r : rows_to_check(M, N, K)) {
    for (int64_t j = 0; j < N; ++j) {
      double s = 0, sabs = 0;
      const double* ar = &ha[size_t(r * lda)];
      // B(k, j): Bt storage hb[j * ldb + k], K x N storage hb[k * ldb + j].
      const double* br = cs.b_kn ? &hb[size_t(j)] : &hb[size_t(j * ldb)];
      const int64_t bstep = cs.b_kn ? ldb : 1;
      for (int64_t kk = 0; kk < K; ++kk) {
        const double p = ar[kk] * br[kk * bstep];
        s += p;
        sabs += std::fabs(p);
      }
      const double c0 = hc0[size_t(r * N + j)];
      const double ref = alpha * s + (beta != 0 ? beta * c0 : 0.0);
      const double tol = std::fabs(alpha) * double(K) * u32 * sabs + uo * std::fabs(ref) +
                         4 * u32 * (std::fabs(alpha * s) + std::fabs(beta * c0)) + 1e-30;
      const double g = got[size_t(r * ldc + j)], cb = cub[size_t(r * ldc + j)];
      ++checked;
      const double err = std::fabs(g - ref);
      if (std::isfinite(g)) max_err = std::max(max_err, err);
      if (!(err <= tol)) {  // NaN fails
        bad_row[size_t(r)] = bad_col[size_t(j)] = 1;
        bad_nan += !std::isfinite(g);
        if (bad++ == 0) {
          // Where the element sits in the kernel: 128 x 256 tile, consumer warpgroup (64 rows),
          // warp (16 rows), accumulator fragment (row g + 8h, column 8j + 2t + e).
          char buf[512];
          std::snprintf(buf, sizeof buf,
                        "first mismatch at (row %lld, col %lld): got %.9g ref %.9g |err| %.3g > tol %.3g "
                        "[tile (%lld, %lld), consumer %lld, warp %lld, fragment row g=%lld h=%lld, n8 block %lld, "
                        "quad thread t=%lld e=%lld]",
                        (long long)r, (long long)j, g, ref, err, tol, (long long)(r / 128), (long long)(j / 256),
                        (long long)(r % 128 / 64), (long long)(r % 64 / 16), (long long)(r % 8), (long long)(r % 16 / 8),
                        (long long)(j % 256 / 8), (long long)(j % 8 / 2), (long long)(j % 2));
          first_bad = buf;
        }
      }
      // cuBLAS rounds alpha * A B to the output type before it blends beta * C (measured on the H200:
      // with beta = 1 and HALF output it is off by one output ulp of the terms, not of the result),
      // so its bound gets an output-type rounding of each term on top of ours.
      const double tol_cublas = tol + uo * (std::fabs(alpha * s) + std::fabs(beta * c0));
      if (!(std::fabs(cb - ref) <= tol_cublas) && bad_cublas_ref++ == 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "cuBLAS vs reference at (row %lld, col %lld): cublas %.9g ref %.9g", (long long)r,
                      (long long)j, cb, ref);
        first_bad_cublas = buf;
      }
    }
  }
  const int64_t n_bad_rows = std::count(bad_row.begin(), bad_row.end(), 1);
  const int64_t n_bad_cols = std::count(bad_col.begin(), bad_col.end(), 1);
  std::printf("  hopper gemm %s: %lld elements vs float64, max |err| %.3g, %lld bad", describe(cs).c_str(),
              (long long)checked, max_err, (long long)bad);
  if (bad > 0)
    std::printf(" (%lld non-finite: never written or NaN math; spread over %lld rows and %lld of %lld columns)",
                (long long)bad_nan, (long long)n_bad_rows, (long long)n_bad_cols, (long long)N);
  std::printf("\n");
  INFO(first_bad << (bad > 0 ? " -- " + std::to_string(bad) + " bad, " + std::to_string(bad_nan) + " non-finite, in " +
                                   std::to_string(n_bad_rows) + " rows x " + std::to_string(n_bad_cols) + " columns"
                             : std::string()));
  CHECK(bad == 0);
  INFO(first_bad_cublas);
  CHECK(bad_cublas_ref == 0);

  // 2) Ours vs cuBLAS on every element, at twice a bound that holds for every row
  //    (sum |a b| <= K because |a|, |b| <= 1).
  int64_t bad_vs_cublas = 0;
  std::string first_vs;
  for (int64_t r = 0; r < M; ++r) {
    for (int64_t j = 0; j < N; ++j) {
      const double g = got[size_t(r * ldc + j)], cb = cub[size_t(r * ldc + j)];
      const double c0 = hc0[size_t(r * N + j)];
      const double tol = 2 * (std::fabs(alpha) * double(K) * u32 * double(K) + uo * std::fabs(cb) +
                              4 * u32 * (std::fabs(alpha) * double(K) + std::fabs(beta * c0)) +
                              uo * (std::fabs(alpha) * double(K) + std::fabs(beta * c0))) + 1e-30;  // cuBLAS's blend rounding
      if (!(std::fabs(g - cb) <= tol) && bad_vs_cublas++ == 0) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "first mismatch vs cuBLAS at (row %lld, col %lld): got %.9g cublas %.9g tol %.3g",
                      (long long)r, (long long)j, g, cb, tol);
        first_vs = buf;
      }
    }
  }
  INFO(first_vs << " (" << bad_vs_cublas << " elements)");
  CHECK(bad_vs_cublas == 0);

  // 3) Padding columns of C untouched; no writes past any buffer.
  int64_t pad_touched = 0;
  for (int64_t r = 0; r < M; ++r)
    for (size_t b = size_t(r * ldc + N) * es_c; b < size_t((r + 1) * ldc) * es_c; ++b)
      pad_touched += c_bytes[b] != 0xFF;
  CHECK(pad_touched == 0);
  CHECK(da.guard_intact());
  CHECK(db.guard_intact());
  CHECK(dc.guard_intact());
}

void run_types(Case c) {
  for (jhdnnDataType_t ab : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16}) {
    for (jhdnnDataType_t ct : {ab, JHDNN_DATA_FLOAT}) {
      c.ab = ab;
      c.c = ct;
      run_case(c);
    }
  }
}

}  // namespace

TEST_CASE("hopper gemm: one 128x256x64 tile", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  std::printf("hopper gemm tests, %s, seed %llu\n", gpu_description().c_str(), (unsigned long long)test_seed());
  run_types({128, 256, 64, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
}

TEST_CASE("hopper gemm: square 1024 and 1000", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  run_types({1024, 1024, 1024, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
  run_types({1000, 1000, 1000, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
}

TEST_CASE("hopper gemm: tails in M, N and K", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  run_types({129, 257, 72, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
  run_types({4096, 512, 264, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
  run_types({1, 300, 128, JHDNN_DATA_HALF, JHDNN_DATA_HALF});   // M = 1
  run_types({300, 1, 64, JHDNN_DATA_HALF, JHDNN_DATA_HALF});    // N = 1
  run_types({77, 130, 8, JHDNN_DATA_HALF, JHDNN_DATA_HALF});    // K = 8: one partial k-block
}

TEST_CASE("hopper gemm: persistent loop, several tiles per CTA", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  // 20 x 13 = 260 tiles on 132 SMs: CTAs run 1 or 2 tiles, 16 k-blocks each, so the pipeline's
  // stage / phase counters wrap across tile boundaries; the raster groups have a partial last group.
  run_types({2560, 3328, 1000, JHDNN_DATA_HALF, JHDNN_DATA_HALF});
  // 47 x 3 tiles (141 > 132) with long K: many phase wraps within a tile.
  Case c{6000, 700, 4096, JHDNN_DATA_BFLOAT16, JHDNN_DATA_BFLOAT16};
  run_case(c);
}

TEST_CASE("hopper gemm: alpha, beta, padded leading dimensions", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  Case c{129, 257, 72, JHDNN_DATA_HALF, JHDNN_DATA_HALF, 0.5f, -1.25f, 8, 16, 3};  // odd ldc: scalar stores
  run_types(c);
  Case d{640, 520, 200, JHDNN_DATA_HALF, JHDNN_DATA_HALF, -2.0f, 0.0f, 24, 8, 6};  // beta 0, C is NaN
  run_types(d);
  Case e{256, 512, 128, JHDNN_DATA_HALF, JHDNN_DATA_HALF, 1.0f, 1.0f, 0, 0, 0};
  run_types(e);
}

TEST_CASE("hopper gemm: B given K x N (transposed wgmma operand)", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  Case c{128, 256, 64, JHDNN_DATA_HALF, JHDNN_DATA_HALF};
  c.b_kn = true;
  run_types(c);
  Case d{1000, 1000, 1000, JHDNN_DATA_HALF, JHDNN_DATA_HALF};  // N tail inside a 64-column chunk
  d.b_kn = true;
  run_types(d);
  // N = 130: the tile's 4th 64-column chunk lies wholly past N (not loaded), the 3rd partly.
  Case e{129, 130, 72, JHDNN_DATA_HALF, JHDNN_DATA_HALF, 0.5f, -1.25f, 8, 14, 3};
  e.b_kn = true;
  run_types(e);
  Case f{2560, 3328, 520, JHDNN_DATA_BFLOAT16, JHDNN_DATA_BFLOAT16};  // several tiles per CTA
  f.b_kn = true;
  run_case(f);
}

TEST_CASE("hopper gemm: tf32 (FLOAT inputs and output)", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  // tf32 k-blocks are 32 elements (128 bytes): K = 36 and 264 leave partial k-blocks; lda / ldb
  // need only be multiples of 4.
  run_case({128, 256, 32, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT});
  run_case({1000, 1000, 1000, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT});
  run_case({129, 257, 36, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT, 0.5f, -1.25f, 4, 12, 1});
  run_case({4096, 512, 264, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT});
  run_case({2560, 3328, 520, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT});  // several tiles per CTA
  run_case({1, 300, 128, JHDNN_DATA_FLOAT, JHDNN_DATA_FLOAT, 2.0f, 0.0f});
}

TEST_CASE("hopper gemm: refusals carry a status and a reason", "[gemm][hopper]") {
  // These checks come before any device query, so they also run (and must pass) without a GPU.
  GemmArgs a;
  a.m = 100, a.n = 100, a.k = 1001, a.lda = 1001, a.ldb = 1001, a.ldc = 100;
  alignas(16) static unsigned char buf[64];
  a.a = buf, a.b = buf, a.c = buf;
  core::Status s = gemm::hopper::gemm_wgmma_check(a);
  INFO(s.message);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_LAYOUT);  // lda not a multiple of 8
  CHECK(s.message.find("multiples of 8") != std::string::npos);

  a.k = 1000, a.lda = 1000, a.ldb = 1000;
  a.a = buf + 2;  // not 16-byte aligned
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_LAYOUT);
  a.a = buf;

  a.ab_type = JHDNN_DATA_DOUBLE;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  a.ab_type = JHDNN_DATA_FLOAT;  // tf32: C must be FLOAT, B must be N x K
  a.c_type = JHDNN_DATA_HALF;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  a.c_type = JHDNN_DATA_FLOAT;
  a.b_kn = true;
  a.ldb = 104;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_LAYOUT);
  a.b_kn = false;
  a.ldb = 1000;
  a.ab_type = JHDNN_DATA_HALF;
  a.c_type = JHDNN_DATA_HALF;
  a.c_type = JHDNN_DATA_BFLOAT16;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE);
  a.c_type = JHDNN_DATA_HALF;

  a.k = 0;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_NOT_SUPPORTED_SHAPE);
  a.k = 1000;

  a.ldc = 99;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_BAD_PARAM);
  a.ldc = 100;

  a.b = nullptr;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
  a.b = buf;

  a.m = -1;
  s = gemm::hopper::gemm_wgmma_check(a);
  CHECK(s.code == JHDNN_STATUS_BAD_PARAM);

  // M == 0: a successful no-op that never touches the GPU or C.
  a.m = 0;
  CHECK(gemm::hopper::gemm_wgmma(a, nullptr).ok());
}

TEST_CASE("hopper gemm: empty M leaves C untouched on the GPU", "[gemm][hopper][gpu]") {
  JHDNN_REQUIRE_GPU();
  DeviceBuffer a(4096), b(4096), c(4096);
  GemmArgs g;
  g.m = 64, g.n = 0, g.k = 64, g.a = a.get(), g.lda = 64, g.b = b.get(), g.ldb = 64, g.c = c.get(), g.ldc = 8;
  REQUIRE(gemm::hopper::gemm_wgmma(g, nullptr).ok());
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<unsigned char> bytes = c.download();
  CHECK(std::all_of(bytes.begin(), bytes.end(), [](unsigned char x) { return x == 0xFF; }));
}
