// The NNZ_PAIRS kernel switch (JHDNN_SPMM_PAIRS = classic | deep | deep4; src/core/config.h,
// src/sparse/spmm.cu spmm_nnz_deep). The numeric checks of the deep kernels are the SpMM case of
// test_sparse.cpp ([spmm]), run again by ctest under JHDNN_SPMM_PAIRS=deep and =deep4
// (spmm_pairs_deep, spmm_pairs_deep4); here: the setter, and a misspelt value refused by name before
// C is touched.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
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
  // The ctest entries spmm_pairs_deep / _deep4 rely on the environment reaching the switch: were it
  // lost, they would re-run classic and pass.
  const char* env = std::getenv("JHDNN_SPMM_PAIRS");
  const std::string env_name = env == nullptr || *env == '\0' ? "classic" : env;
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
  CHECK(cfg::spmm_pairs() == cfg::SpmmPairs::kClassic);
  REQUIRE(cfg::set_spmm_pairs("deep"));
  cfg::reset_to_environment();  // back to the environment's value (classic, or the ctest entry's)
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
