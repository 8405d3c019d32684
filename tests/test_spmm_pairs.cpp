// The NNZ_PAIRS kernel switch (JHDNN_SPMM_PAIRS = deep4 (the default) | deep | classic; src/core/config.h,
// src/sparse/spmm.cu spmm_nnz_deep). The numeric checks of the kernels are the SpMM case of
// test_sparse.cpp ([spmm]): under the default deep4 in test_sparse's own entries, again by ctest under
// JHDNN_SPMM_PAIRS=deep and =classic (spmm_pairs_deep, spmm_pairs_classic); here: the setter, a misspelt
// value refused by name before C is touched, and all three kernels (set through the setter, so plain
// test_sparse runs them too) on the row-major C layouts the SpMM case lacks: ldc % 4 != 0 and a C that is
// not 16-byte aligned.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/test_util.h"
#include "core/config.h"

using jhdnn::test::DeviceBuffer;
using jhdnn::test::JhdnnHandle;

namespace {

namespace cfg = jhdnn::core::config;

// A 40 x 40 CSR with 3 nonzeros per row, B 40 x 8 row-major (float4-readable: NNZ_PAIRS's row-major
// kernel), C 40 x 8 holding `fill`; runs jhdnnSpMM NNZ_PAIRS in `order` and returns its status,
// whether C still holds `fill` everywhere, and jhdnnGetLastErrorString right after the call (the
// later successful calls here, jhdnnDestroySparseMatrixDescriptor and jhdnnDestroy, clear it).
struct PairsRun {
  jhdnnStatus_t status;
  bool untouched;
  std::string message;
};
PairsRun run_pairs(jhdnnOrder_t order, float fill) {
  const int m = 40, k = 40, n = 8;
  std::vector<int> rp(m + 1), ci;
  std::vector<float> va;
  for (int r = 0; r < m; ++r) {
    for (int t = 0; t < 3; ++t) {
      ci.push_back((r * 7 + t * 11) % k);
      va.push_back(0.5f + 0.25f * float(t));
    }
    rp[r + 1] = int(ci.size());
  }
  for (int r = 0; r < m; ++r) std::sort(ci.begin() + rp[r], ci.begin() + rp[r + 1]);
  DeviceBuffer drp(rp.size() * 4), dci(ci.size() * 4), dva(va.size() * 4), db(size_t(k) * n * 4),
      dc(size_t(m) * n * 4);
  drp.upload(rp.data(), rp.size() * 4);
  dci.upload(ci.data(), ci.size() * 4);
  dva.upload(va.data(), va.size() * 4);
  std::vector<float> b(size_t(k) * n, 1.5f), c(size_t(m) * n, fill);
  db.upload(b.data(), b.size() * 4);
  dc.upload(c.data(), c.size() * 4);
  JhdnnHandle h;
  jhdnnSparseMatrixDescriptor_t d;
  JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&d));
  JHDNN_CHECK(jhdnnSetCsrMatrixDescriptor(d, m, k, int64_t(ci.size()), drp.as<int>(), dci.as<int>(), dva.get(),
                                          JHDNN_DATA_FLOAT));
  const float alpha = 1.f, beta = 0.f;
  const int64_t ld = order == JHDNN_ORDER_ROW ? n : m;  // m = k: B's and C's leading dimension
  const jhdnnStatus_t st =
      jhdnnSpMM(h.get(), JHDNN_SPMM_ALG_NNZ_PAIRS, &alpha, d, n, order, db.get(), ld, &beta, dc.get(), ld);
  char msg[256];
  jhdnnGetLastErrorString(msg, sizeof msg);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> got(c.size());
  dc.download(got.data(), got.size() * 4);
  jhdnnDestroySparseMatrixDescriptor(d);
  return {st, std::memcmp(got.data(), c.data(), c.size() * 4) == 0, msg};
}

}  // namespace

TEST_CASE("SpMM pairs switch: the setter takes the three names, refuses others", "[sparse][api][spmm]") {
  struct Restore {
    ~Restore() { cfg::set_spmm_pairs(nullptr); }
  } restore;
  REQUIRE(cfg::set_spmm_pairs(nullptr));  // the environment's value, whatever ran before
  const cfg::SpmmPairs env_value = cfg::spmm_pairs();
  // The ctest entries spmm_pairs_deep / _classic rely on the environment reaching the switch: were it
  // lost, they would re-run deep4 and pass.
  const char* env = std::getenv("JHDNN_SPMM_PAIRS");
  const std::string env_name = env == nullptr || *env == '\0' ? "deep4" : env;
  if (env_name == "classic") CHECK(env_value == cfg::SpmmPairs::kClassic);
  if (env_name == "deep") CHECK(env_value == cfg::SpmmPairs::kDeep);
  if (env_name == "deep4") CHECK(env_value == cfg::SpmmPairs::kDeep4);
  REQUIRE(cfg::set_spmm_pairs("deep"));
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kDeep);
  REQUIRE(cfg::set_spmm_pairs("deep4"));
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kDeep4);
  REQUIRE(cfg::set_spmm_pairs("classic"));
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kClassic);
  CHECK_FALSE(cfg::set_spmm_pairs("Deep"));
  CHECK_FALSE(cfg::set_spmm_pairs("deep8"));
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kClassic);  // a refused name changes nothing
  REQUIRE(cfg::set_spmm_pairs(""));                       // "" = the default
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kDeep4);
  REQUIRE(cfg::set_spmm_pairs("deep"));
  cfg::reset_to_environment();  // back to the environment's value (deep4, or the ctest entry's)
  CHECK(cfg::spmm_pairs() == env_value);
}

TEST_CASE("SpMM pairs switch: a misspelt JHDNN_SPMM_PAIRS is refused by name, C untouched",
          "[.env][env_spmm_pairs_misspelt]") {
  REQUIRE(std::getenv("JHDNN_SPMM_PAIRS") != nullptr);
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kInvalid);
  CHECK(std::string(cfg::spmm_pairs_bad_value()) == std::getenv("JHDNN_SPMM_PAIRS"));
  JHDNN_REQUIRE_GPU();
  // Row-major B would run the switched kernel: refused before split_rows_prepare writes C.
  const PairsRun row = run_pairs(JHDNN_ORDER_ROW, 7.f);
  CHECK(row.status == JHDNN_STATUS_BAD_PARAM);
  CHECK(row.untouched);
  INFO("message: " << row.message);
  CHECK(row.message.find(std::string("JHDNN_SPMM_PAIRS=") + std::getenv("JHDNN_SPMM_PAIRS")) != std::string::npos);
  // Column-major B runs NNZ_PAIRS <8, 1>, which the switch does not name: it runs (and writes C).
  const PairsRun col = run_pairs(JHDNN_ORDER_COL, 7.f);
  CHECK(col.status == JHDNN_STATUS_SUCCESS);
  CHECK_FALSE(col.untouched);
  CHECK(col.message.empty());
}

// The deep kernels store a row inside one chunk as one float4 only when C is row-major with ldc % 4 == 0
// and 16-byte aligned (c_vec4); the SpMM case's row-major C always is (ldc = n + 4), so here the other
// two row-major layouts, next to the aligned one: ldc = n + 1, and ldc = n + 4 with C one float past a
// 16-byte boundary. A float4 store there faults (misaligned address) or lands in the wrong row.
// n = 68: a full 64-column band and a 4-column tail; row 3 (700 nonzeros) and the last row (300) are
// cut by chunks (atomics after the beta pre-scale), every 5th row is empty.
TEST_CASE("SpMM pairs switch: the three kernels on row-major C with ldc % 4 != 0 or unaligned, against float64",
          "[sparse][gpu][spmm_pairs]") {
  JHDNN_REQUIRE_GPU();
  struct Restore {
    ~Restore() { cfg::set_spmm_pairs(nullptr); }
  } restore;
  const int64_t m = 600, k = 900, n = 68, ldb = n + 4;
  jhdnn::test::SplitMix64 g(jhdnn::test::mix_seed(jhdnn::test::test_seed(), 0x5e9d));
  std::vector<int> rp(m + 1, 0), ci;
  std::vector<float> va;
  for (int64_t r = 0; r < m; ++r) {
    const int64_t len = r % 5 == 0 ? 0 : r == 3 ? 700 : r == m - 1 ? 300 : 1 + int64_t(g.next() % 40);
    std::vector<int> cols;
    for (int64_t t = 0; t < len; ++t) cols.push_back(int(g.next() % uint64_t(k)));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int cc : cols) {
      ci.push_back(cc);
      va.push_back(float(g.uniform() * 2 - 1));
    }
    rp[r + 1] = int(ci.size());
  }
  std::vector<float> b(size_t(k * ldb));
  for (float& x : b) x = float(g.uniform() * 2 - 1);
  DeviceBuffer drp(rp.size() * 4), dci(ci.size() * 4), dva(va.size() * 4), db(b.size() * 4);
  drp.upload(rp.data(), rp.size() * 4);
  dci.upload(ci.data(), ci.size() * 4);
  dva.upload(va.data(), va.size() * 4);
  db.upload(b.data(), b.size() * 4);
  JhdnnHandle h;
  jhdnnSparseMatrixDescriptor_t d;
  JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&d));
  JHDNN_CHECK(jhdnnSetCsrMatrixDescriptor(d, m, k, int64_t(ci.size()), drp.as<int>(), dci.as<int>(), dva.get(),
                                          JHDNN_DATA_FLOAT));
  for (const char* kind : {"deep4", "deep", "classic"})
    for (int layout = 0; layout < 3; ++layout)  // 0: ldc = n + 1; 1: C at +1 float; 2: aligned (float4 stores)
      for (float beta : {0.f, 0.5f}) {
        const int64_t ldc = layout == 0 ? n + 1 : n + 4, off = layout == 1 ? 1 : 0;
        INFO(kind << " layout " << layout << " ldc " << ldc << " C offset " << off << " beta " << beta);
        REQUIRE(cfg::set_spmm_pairs(kind));
        std::vector<float> c0(size_t(off + m * ldc));
        for (float& x : c0) x = float(g.uniform() * 2 - 1);
        std::vector<float> cinit = c0;
        if (beta == 0.f)  // beta = 0 must not read C
          for (int64_t r = 0; r < m; ++r)
            for (int64_t j = 0; j < n; ++j) cinit[size_t(off + r * ldc + j)] = std::numeric_limits<float>::quiet_NaN();
        DeviceBuffer dc(cinit.size() * 4);
        dc.upload(cinit.data(), cinit.size() * 4);
        const float alpha = 1.25f;
        CHECK(jhdnnSpMM(h.get(), JHDNN_SPMM_ALG_NNZ_PAIRS, &alpha, d, n, JHDNN_ORDER_ROW, db.get(), ldb, &beta,
                        dc.as<float>() + off, ldc) == JHDNN_STATUS_SUCCESS);
        CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<float> got(cinit.size());
        dc.download(got.data(), got.size() * 4);
        int bad = 0;
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < ldc; ++j) {
            const size_t o = size_t(off + r * ldc + j);
            if (j >= n) {  // padding: never written
              bad += std::memcmp(&got[o], &cinit[o], 4) != 0;
              continue;
            }
            double sum = 0, mag = 0;
            for (int e = rp[r]; e < rp[r + 1]; ++e) {
              const double p = double(va[e]) * b[size_t(ci[e] * ldb + j)];
              sum += p;
              mag += std::fabs(p);
            }
            const double ref = alpha * sum + (beta != 0.f ? beta * double(c0[o]) : 0.0);
            const double tol = 1e-5 * (alpha * mag + std::fabs(beta * double(c0[o]))) + 1e-30;
            if (!(std::fabs(double(got[o]) - ref) <= tol) && bad++ < 3)
              UNSCOPED_INFO("C(" << r << "," << j << ") = " << got[o] << " expected " << ref);
          }
        if (off) bad += std::memcmp(&got[0], &cinit[0], 4) != 0;  // the float before C
        CHECK(bad == 0);
        CHECK(dc.guard_intact());
      }
  jhdnnDestroySparseMatrixDescriptor(d);
}
