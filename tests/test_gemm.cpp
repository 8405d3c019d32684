// GPU correctness of the GEMMs: the public API (jhdnnGemm / jhdnnGemmStridedBatched, i.e. the
// library SGEMM) over every order x transpose combination, odd sizes, padded leading dimensions,
// strided batches, alpha / beta and the degenerate sizes; every step of the teaching series on
// the shapes it accepts (and its refusal of the others); cuBLAS on the same inputs; and the
// bad-input table of the API.
//
// How one configuration is checked:
//   - inputs: small random integers (exact in fp32, and so are their sums here: every partial
//     sum stays far below 2^24), so every path must match the float64 reference EXACTLY -- a
//     missing, repeated or misplaced product shows. One real-valued case uses the forward error
//     bound (k + 2) * 2^-23 * (|alpha| sum|a||b| + |beta c|) instead;
//   - alpha, beta powers of two (exact); beta == 0 runs start from C full of NaN (0xFF bytes),
//     which must not leak into the result;
//   - the gaps between A's and B's columns (ld > rows) hold NaN, so reading one poisons a result;
//     the gaps of C must come back bit-for-bit unchanged; guard bytes after every buffer too;
//   - cuBLAS runs on the same inputs and must match the reference as well (the harness checking
//     itself).
// Every TEST_CASE starts with JHDNN_REQUIRE_GPU(): without a GPU they are reported as skipped.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <cublas_v2.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/status_rows.h"
#include "common/test_util.h"
#include "gemm/gemm.h"
#include "gemm_epilogue_launch.h"
#include "gemm/sgemm_series/series.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string last_error() {
  char buf[2048] = {};
  jhdnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

struct Gpu {
  CudaStream stream;
  JhdnnHandle jh;
  cublasHandle_t cublas = nullptr;
  Gpu() {
    JHDNN_CHECK(jhdnnSetStream(jh.get(), stream.get()));
    if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate failed");
    cublasSetStream(cublas, stream.get());
    std::printf("test_gemm: %s\n", gpu_description().c_str());
    std::printf("test_gemm: seed %" PRIu64 " (rerun with JHDNN_TEST_SEED=%" PRIu64 ")\n", test_seed(), test_seed());
    std::fflush(stdout);
  }
};

Gpu& gpu() {
  static Gpu g;  // the cuBLAS handle lives until exit
  return g;
}

#define START_GPU_CASE()  \
  JHDNN_REQUIRE_GPU();    \
  (void)gpu();            \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

// ================================================================ one GEMM configuration

struct Config {
  jhdnnOrder_t order = JHDNN_ORDER_COL;
  jhdnnGemmOp_t ta = JHDNN_GEMM_OP_N, tb = JHDNN_GEMM_OP_N;
  int64_t m = 1, n = 1, k = 1;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // ld = minimum + pad
  int64_t batch = 1;
  int64_t gap_a = 0, gap_b = 0, gap_c = 0;  // stride = one matrix + gap (shared_a: stride 0)
  bool shared_a = false;
  float alpha = 1.f, beta = 0.f;
  bool integers = true;
  int64_t offset_a = 0, offset_c = 0;  // elements the matrices start after the allocation (alignment)
  bool align4 = false;  // round every ld and batch stride up to a multiple of 4 (the cp.async kernel's copies)

  std::string str() const {
    char b[400];
    std::snprintf(b, sizeof b,
                  "%s %c%c m%lld n%lld k%lld pads %lld/%lld/%lld batch %lld gaps %lld/%lld/%lld%s alpha %g beta %g "
                  "%s offsets %lld/%lld%s",
                  order == JHDNN_ORDER_ROW ? "row" : "col", ta == JHDNN_GEMM_OP_N ? 'N' : 'T',
                  tb == JHDNN_GEMM_OP_N ? 'N' : 'T', (long long)m, (long long)n, (long long)k, (long long)pad_a,
                  (long long)pad_b, (long long)pad_c, (long long)batch, (long long)gap_a, (long long)gap_b,
                  (long long)gap_c, shared_a ? " sharedA" : "", alpha, beta, integers ? "ints" : "reals",
                  (long long)offset_a, (long long)offset_c, align4 ? " align4" : "");
    return b;
  }
};

// A stored matrix: rows x cols in `order`, leading dimension ld, `count` of them `stride` apart.
struct Stored {
  int64_t rows, cols, ld, stride, count;
  bool row_major;
  int64_t off(int64_t b, int64_t i, int64_t j) const {
    return b * stride + (row_major ? i * ld + j : i + j * ld);
  }
  int64_t one() const { return row_major ? (rows - 1) * ld + cols : (cols - 1) * ld + rows; }
  int64_t extent() const {
    if (rows == 0 || cols == 0 || count == 0) return 0;
    return (count - 1) * stride + one();
  }
  int64_t min_ld() const { return std::max<int64_t>(1, row_major ? cols : rows); }
};

struct Host {
  Config c;
  Stored sa, sb, sc;
  std::vector<float> a, b, c0;  // stored images (gaps NaN)
  std::vector<double> ref;      // expected C, same layout as c0 (gaps: NaN = untouched)
  std::vector<double> bound;    // allowed |error| per element (0: exact)
};

Stored make_stored(int64_t rows, int64_t cols, bool row_major, int64_t pad, int64_t gap, int64_t batch, bool shared,
                   bool align4 = false) {
  Stored s{rows, cols, 0, 0, batch, row_major};
  auto up4 = [&](int64_t v) { return align4 ? (v + 3) / 4 * 4 : v; };
  s.ld = up4(s.min_ld() + pad);
  s.stride = shared ? 0 : up4(s.one() + gap);
  if (rows == 0 || cols == 0) s.stride = shared ? 0 : up4(gap);
  return s;
}

void fill(std::vector<float>& v, const Stored& s, uint64_t seed, bool integers) {
  v.assign(size_t(std::max<int64_t>(s.extent(), 1)), kNaN);
  std::vector<double> vals(size_t(s.rows * s.cols));
  if (!vals.empty()) {
    if (integers) fill_random_ints(vals, seed, -3, 3);
    else fill_random(vals, JHDNN_DATA_FLOAT, seed);
  }
  SplitMix64 rng(seed ^ 0x5eedull);
  for (int64_t b = 0; b < s.count; ++b)
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t j = 0; j < s.cols; ++j) {
        // A different permutation of the values per batch (cheap variety without new fills).
        const size_t idx = size_t((i * s.cols + j + b * 7919) % (s.rows * s.cols));
        double v0 = vals[idx];
        if (b > 0 && (rng.next() & 1)) v0 = -v0;
        v[size_t(s.off(b, i, j))] = float(v0);
      }
}

Host make_host(const Config& c) {
  Host h;
  h.c = c;
  const bool row = c.order == JHDNN_ORDER_ROW;
  const bool ta = c.ta == JHDNN_GEMM_OP_T, tb = c.tb == JHDNN_GEMM_OP_T;
  h.sa = make_stored(ta ? c.k : c.m, ta ? c.m : c.k, row, c.pad_a, c.gap_a, c.batch, c.shared_a, c.align4);
  h.sb = make_stored(tb ? c.n : c.k, tb ? c.k : c.n, row, c.pad_b, c.gap_b, c.batch, false, c.align4);
  h.sc = make_stored(c.m, c.n, row, c.pad_c, c.gap_c, c.batch, false, c.align4);
  const uint64_t salt = hash_string(c.str());
  fill(h.a, h.sa, mix_seed(test_seed(), salt + 1), c.integers);
  fill(h.b, h.sb, mix_seed(test_seed(), salt + 2), c.integers);
  if (c.beta != 0.f) {
    fill(h.c0, h.sc, mix_seed(test_seed(), salt + 3), c.integers);
  } else {
    h.c0.assign(size_t(std::max<int64_t>(h.sc.extent(), 1)), kNaN);
  }
  h.ref.assign(h.c0.size(), std::numeric_limits<double>::quiet_NaN());
  h.bound.assign(h.c0.size(), 0.0);
  for (int64_t bt = 0; bt < c.batch; ++bt)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0, abs_s = 0;
        for (int64_t kk = 0; kk < c.k; ++kk) {
          const double av = h.a[size_t(ta ? h.sa.off(bt, kk, i) : h.sa.off(bt, i, kk))];
          const double bv = h.b[size_t(tb ? h.sb.off(bt, j, kk) : h.sb.off(bt, kk, j))];
          s += av * bv;
          abs_s += std::fabs(av * bv);
        }
        const size_t o = size_t(h.sc.off(bt, i, j));
        double v = double(c.alpha) * s;
        double mag = std::fabs(double(c.alpha)) * abs_s;
        if (c.beta != 0.f) {
          v += double(c.beta) * h.c0[o];
          mag += std::fabs(double(c.beta) * h.c0[o]);
        }
        h.ref[o] = v;
        h.bound[o] = c.integers ? 0.0 : double(c.k + 2) * std::ldexp(1.0, -23) * mag + 1e-30;
      }
  return h;
}

// Device copies of one Host; matrices start offset_* elements into their buffers.
struct Dev {
  DeviceBuffer a, b, c;
  const float* pa = nullptr;
  const float* pb = nullptr;
  float* pc = nullptr;
  explicit Dev(const Host& h)
      : a((h.a.size() + size_t(h.c.offset_a)) * 4), b(h.b.size() * 4), c((h.c0.size() + size_t(h.c.offset_c)) * 4) {
    a.upload(h.a.data(), h.a.size() * 4, size_t(h.c.offset_a) * 4);
    b.upload(h.b.data(), h.b.size() * 4);
    pa = a.as<float>() + h.c.offset_a;
    pb = b.as<float>();
    pc = c.as<float>() + h.c.offset_c;
    reset_c(h);
  }
  void reset_c(const Host& h) { c.upload(h.c0.data(), h.c0.size() * 4, size_t(h.c.offset_c) * 4); }
};

// Downloads C and checks it: logical elements against ref (exact or within bound), every other
// element bit-for-bit as it was, and the guards.
void check_c(const std::string& who, const Dev& d, const Host& h) {
  INFO("result of " << who << " for " << h.c.str());
  CHECK(d.a.guard_intact());
  CHECK(d.b.guard_intact());
  CHECK(d.c.guard_intact());
  std::vector<float> got(h.c0.size());
  d.c.download(got.data(), got.size() * 4, size_t(h.c.offset_c) * 4);
  int64_t bad = 0, gaps_changed = 0, first = -1;
  double worst = 0;
  for (size_t o = 0; o < got.size(); ++o) {
    if (std::isnan(h.ref[o])) {  // not a logical element: untouched
      if (std::memcmp(&got[o], &h.c0[o], 4) != 0) ++gaps_changed;
      continue;
    }
    const double err = std::fabs(double(got[o]) - h.ref[o]);
    if (!std::isfinite(got[o]) || err > h.bound[o]) {
      if (first < 0) first = int64_t(o);
      ++bad;
    }
    if (std::isfinite(err)) worst = std::max(worst, err);
  }
  INFO("bad elements " << bad << " (first at offset " << first << ": got "
                       << (first >= 0 ? got[size_t(first)] : 0.f) << " want " << (first >= 0 ? h.ref[size_t(first)] : 0.0)
                       << "), max |err| " << worst << ", gap elements changed " << gaps_changed);
  CHECK(bad == 0);
  CHECK(gaps_changed == 0);
}

// Runs one step of the SGEMM series on c's matrices (h on the device as d) on the test stream and
// waits for it.
core::Status run_series_step(const gemm::series::Step& st, const Config& c, const Host& h, const Dev& d) {
  gemm::series::Args a;
  a.m = int(c.m), a.n = int(c.n), a.k = int(c.k), a.alpha = c.alpha, a.beta = c.beta;
  a.a = d.pa, a.lda = int(h.sa.ld), a.b = d.pb, a.ldb = int(h.sb.ld), a.c = d.pc, a.ldc = int(h.sc.ld);
  const core::Status r = st.run(a, gpu().stream.get());
  gpu().stream.sync();
  return r;
}

jhdnnStatus_t run_api(const Dev& d, const Host& h) {
  const Config& c = h.c;
  if (c.batch == 1 && c.gap_a == 0 && c.gap_b == 0 && c.gap_c == 0)
    return jhdnnGemm(gpu().jh.get(), JHDNN_DATA_FLOAT, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, d.pa, h.sa.ld,
                     d.pb, h.sb.ld, &c.beta, d.pc, h.sc.ld);
  return jhdnnGemmStridedBatched(gpu().jh.get(), JHDNN_DATA_FLOAT, c.order, c.ta, c.tb, c.m, c.n, c.k, &c.alpha, d.pa,
                                 h.sa.ld, h.sa.stride, d.pb, h.sb.ld, h.sb.stride, &c.beta, d.pc, h.sc.ld,
                                 h.sc.stride, c.batch);
}

// cuBLAS on the same buffers (row-major as the swapped column-major product).
cublasStatus_t run_cublas(const Dev& d, const Host& h) {
  const Config& c = h.c;
  const bool row = c.order == JHDNN_ORDER_ROW;
  const cublasOperation_t oa = c.ta == JHDNN_GEMM_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t ob = c.tb == JHDNN_GEMM_OP_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (row)
    return cublasSgemmStridedBatched(gpu().cublas, ob, oa, int(c.n), int(c.m), int(c.k), &c.alpha, d.pb, int(h.sb.ld),
                                     h.sb.stride, d.pa, int(h.sa.ld), h.sa.stride, &c.beta, d.pc, int(h.sc.ld),
                                     h.sc.stride, int(c.batch));
  return cublasSgemmStridedBatched(gpu().cublas, oa, ob, int(c.m), int(c.n), int(c.k), &c.alpha, d.pa, int(h.sa.ld),
                                   h.sa.stride, d.pb, int(h.sb.ld), h.sb.stride, &c.beta, d.pc, int(h.sc.ld),
                                   h.sc.stride, int(c.batch));
}

// The library SGEMM with its kernel forced (gemm::sgemm_path), on the column-major description
// the API builds (a row-major call is C^T = op(B)^T op(A)^T).
core::Status run_path(const Dev& d, const Host& h, gemm::SgemmPath path, int split) {
  const Config& c = h.c;
  const bool op_a = c.ta == JHDNN_GEMM_OP_T, op_b = c.tb == JHDNN_GEMM_OP_T;
  gemm::GemmDesc g;
  if (c.order == JHDNN_ORDER_ROW) {
    g.m = c.n, g.n = c.m, g.k = c.k;
    g.a = d.pb, g.lda = h.sb.ld, g.trans_a = op_b, g.a_outer = h.sb.stride;
    g.b = d.pa, g.ldb = h.sa.ld, g.trans_b = op_a, g.b_outer = h.sa.stride;
  } else {
    g.m = c.m, g.n = c.n, g.k = c.k;
    g.a = d.pa, g.lda = h.sa.ld, g.trans_a = op_a, g.a_outer = h.sa.stride;
    g.b = d.pb, g.ldb = h.sb.ld, g.trans_b = op_b, g.b_outer = h.sb.stride;
  }
  g.c = d.pc, g.ldc = h.sc.ld, g.c_outer = h.sc.stride;
  g.batch_outer = c.batch;
  g.alpha = c.alpha, g.beta = c.beta;
  return gemm::sgemm_path(g, path, split, gpu().stream.get());
}

const char* path_name(gemm::SgemmPath p) {
  return p == gemm::SgemmPath::kAsync ? "cp.async" : (p == gemm::SgemmPath::kFallback ? "fallback (step 08)" : "none");
}

// One configuration through a forced kernel path; checks the result and that this path ran
// (and with split-K, that it was split `split` ways).
void check_path(const Config& c, gemm::SgemmPath path, int split) {
  const Host h = make_host(c);
  Dev d(h);
  const core::Status st = run_path(d, h, path, split);
  gpu().stream.sync();
  const gemm::SgemmRun run = gemm::last_sgemm_run();
  INFO(c.str() << " forced " << path_name(path) << " split " << split << ": " << core::status_name(st.code) << " "
               << st.message << "; ran " << path_name(run.path) << " tile " << run.tile_m << "x" << run.tile_n
               << " split " << run.split);
  REQUIRE(st.ok());
  check_c(std::string("library SGEMM, ") + path_name(path) + " kernel", d, h);
  CHECK(run.path == path);
  if (split >= 2) CHECK(run.split == split);
  if (split == 1) CHECK(run.split == 1);
}

// The API and cuBLAS on one configuration.
void check_config(const Config& c, bool with_cublas = true) {
  const Host h = make_host(c);
  Dev d(h);
  const jhdnnStatus_t st = run_api(d, h);
  gpu().stream.sync();
  INFO(c.str() << ": " << jhdnnGetErrorString(st) << " " << last_error());
  REQUIRE(st == JHDNN_STATUS_SUCCESS);
  check_c("jhDNN", d, h);
  if (!with_cublas || c.m == 0 || c.n == 0 || c.batch == 0) return;
  d.reset_c(h);
  const cublasStatus_t cs = run_cublas(d, h);
  gpu().stream.sync();
  REQUIRE(cs == CUBLAS_STATUS_SUCCESS);
  check_c("cuBLAS", d, h);
}

const jhdnnOrder_t kOrders[] = {JHDNN_ORDER_COL, JHDNN_ORDER_ROW};
const jhdnnGemmOp_t kOps[] = {JHDNN_GEMM_OP_N, JHDNN_GEMM_OP_T};

}  // namespace

// ================================================================ library GEMM through the API

TEST_CASE("gemm: every order and transpose, odd sizes, padded ld, alpha/beta", "[gpu][gemm][api]") {
  START_GPU_CASE();
  struct Shape { int64_t m, n, k; };
  // n = 64, 130, 192, 300 (column-major; m for row-major) take the 128 x 64 tile variant, the
  // others the 128 x 128 one (sgemm.cu picks by tile fill).
  const Shape shapes[] = {{1, 1, 1},       {7, 5, 3},        {128, 128, 8}, {129, 65, 17}, {257, 130, 200},
                          {33, 300, 1000}, {64, 1, 513},     {1, 77, 9},    {100, 64, 50}, {70, 192, 33}};
  for (jhdnnOrder_t order : kOrders)
    for (jhdnnGemmOp_t ta : kOps)
      for (jhdnnGemmOp_t tb : kOps)
        for (const Shape& s : shapes)
          for (float beta : {0.f, -2.f}) {
            Config c;
            c.order = order, c.ta = ta, c.tb = tb, c.m = s.m, c.n = s.n, c.k = s.k;
            c.pad_a = 3, c.pad_b = 1, c.pad_c = 2;
            c.alpha = 0.5f, c.beta = beta;
            check_config(c);
          }
}

TEST_CASE("gemm: tight leading dimensions and aligned float4 stores", "[gpu][gemm][api]") {
  START_GPU_CASE();
  for (jhdnnOrder_t order : kOrders)
    for (jhdnnGemmOp_t ta : kOps)
      for (jhdnnGemmOp_t tb : kOps) {
        Config c;
        c.order = order, c.ta = ta, c.tb = tb, c.m = 256, c.n = 384, c.k = 72;
        c.alpha = 2.f, c.beta = 0.25f;
        check_config(c);
      }
}

TEST_CASE("gemm: misaligned pointers and odd ldc take the scalar paths", "[gpu][gemm][api]") {
  START_GPU_CASE();
  for (int64_t off : {1, 2, 3}) {
    Config c;
    c.m = 200, c.n = 131, c.k = 45, c.pad_c = 1;
    c.offset_a = off, c.offset_c = off;
    c.beta = 1.f;
    check_config(c);
    // A (m-contiguous, not transposed) misaligned, B k-contiguous: the cp.async kernel copies A
    // 4 bytes at a time (check_config's last library call was the jhDNN one); C scalar stores.
    CHECK(gemm::last_sgemm_run().path == gemm::SgemmPath::kAsync);
    CHECK(gemm::last_sgemm_run().a_4byte);
    // B transposed (n-contiguous) too: only the general kernel takes a misaligned A then.
    c.tb = JHDNN_GEMM_OP_T;
    check_config(c);
    CHECK(gemm::last_sgemm_run().path == gemm::SgemmPath::kFallback);
  }
}

TEST_CASE("gemm: the cp.async kernel and the general kernel, forced, on the same shapes", "[gpu][gemm][paths]") {
  START_GPU_CASE();
  struct Shape { int64_t m, n, k; };
  // Tails in m, n and k of every tile variant (64 x 128 for m <= 64, 128 x 64, 128 x 128).
  const Shape shapes[] = {{1, 1, 1},   {7, 5, 3},       {128, 128, 16}, {129, 65, 17}, {257, 130, 200},
                          {33, 300, 1000}, {64, 1, 513}, {1, 77, 9},     {100, 64, 50}, {70, 192, 33},
                          {200, 260, 47}};
  for (jhdnnOrder_t order : kOrders)
    for (jhdnnGemmOp_t ta : kOps)
      for (jhdnnGemmOp_t tb : kOps)
        for (const Shape& s : shapes)
          for (float beta : {0.f, -2.f}) {
            Config c;
            c.order = order, c.ta = ta, c.tb = tb, c.m = s.m, c.n = s.n, c.k = s.k;
            c.pad_a = 3, c.pad_b = 1, c.pad_c = 2, c.align4 = true;
            c.alpha = 0.5f, c.beta = beta;
            check_path(c, gemm::SgemmPath::kAsync, 1);
            check_path(c, gemm::SgemmPath::kFallback, 1);
          }
  // Neither transposed, odd ld and odd batch strides: the cp.async kernel copies the m-contiguous
  // operand (A, or B for row-major) 4 bytes at a time.
  for (jhdnnOrder_t order : kOrders)
    for (const Shape& s : shapes)
      for (int64_t batch : {1, 2}) {
        Config c;
        c.order = order, c.m = s.m, c.n = s.n, c.k = s.k, c.batch = batch;
        c.pad_a = 3, c.pad_b = 1, c.pad_c = 2, c.gap_a = 1, c.gap_b = 2, c.gap_c = 3;
        c.offset_a = 1;
        c.alpha = 0.5f, c.beta = -2.f;
        check_path(c, gemm::SgemmPath::kAsync, 1);
      }
}

TEST_CASE("gemm: split-K over a thread-block cluster (forced 2, 4, 8 ways)", "[gpu][gemm][splitk]") {
  START_GPU_CASE();
  struct Shape { int64_t m, n, k; };
  // m <= 64 takes the 64 x 128 tile, the others 128 x 64; k tails inside the last slice.
  const Shape shapes[] = {{64, 200, 1000}, {300, 70, 777}, {130, 129, 1025}, {1, 128, 600}, {5, 3, 130}};
  for (jhdnnOrder_t order : kOrders)
    for (jhdnnGemmOp_t ta : kOps)
      for (jhdnnGemmOp_t tb : kOps)
        for (const Shape& s : shapes)
          for (int split : {2, 4, 8}) {
            Config c;
            c.order = order, c.ta = ta, c.tb = tb, c.m = s.m, c.n = s.n, c.k = s.k;
            c.pad_a = 1, c.pad_b = 2, c.pad_c = 3, c.align4 = true;
            c.alpha = 2.f, c.beta = split == 4 ? 0.5f : 0.f;
            check_path(c, gemm::SgemmPath::kAsync, split);
          }
  for (jhdnnGemmOp_t ta : kOps) {  // batched: one cluster per (batch, tile)
    Config c;
    c.ta = ta, c.tb = JHDNN_GEMM_OP_T, c.m = 70, c.n = 129, c.k = 333, c.batch = 3;
    c.gap_a = 5, c.gap_b = 2, c.gap_c = 11, c.align4 = true;
    c.alpha = -1.f, c.beta = 0.5f;
    check_path(c, gemm::SgemmPath::kAsync, 4);
  }
  {
    Config c;  // real values: the split sums stay within the forward error bound
    c.m = 50, c.n = 300, c.k = 3000, c.integers = false, c.align4 = true;
    check_path(c, gemm::SgemmPath::kAsync, 8);
  }
  for (const Shape& s : shapes)  // A by 4-byte copies (odd lda, misaligned start), split
    for (int split : {2, 8}) {
      Config c;
      c.m = s.m, c.n = s.n, c.k = s.k, c.pad_a = 1, c.offset_a = 1, c.pad_c = 1;
      c.beta = 1.f;
      check_path(c, gemm::SgemmPath::kAsync, split);
    }
}

TEST_CASE("gemm: which kernel the library picks", "[gpu][gemm][paths]") {
  START_GPU_CASE();
  using gemm::SgemmPath;
  auto ran = [](const Config& c) {
    check_config(c, false);
    return gemm::last_sgemm_run();
  };
  {
    Config c;  // aligned, tight ld: the cp.async kernel; 6 wide tiles < one per SM: 128 x 64, and
    c.m = 256, c.n = 384, c.k = 72;  // k = 72 (5 K tiles) is too short to split
    const gemm::SgemmRun r = ran(c);
    INFO("ran tile " << r.tile_m << "x" << r.tile_n << " split " << r.split);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.tile_n == 64);
    CHECK(r.split == 1);
  }
  {
    Config c;  // 256 tiles of 128 x 128 (more than one per SM on any GPU of <= 255 SMs)
    c.m = 2048, c.n = 2048, c.k = 16;
    const gemm::SgemmRun r = ran(c);
    INFO("ran tile " << r.tile_m << "x" << r.tile_n << " split " << r.split);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.tile_m == 128);
    CHECK(r.tile_n == 128);
    CHECK(r.split == 1);
  }
  {
    Config c;  // lda = 257: A cannot be copied as 16-byte vectors -> 4-byte copies (B not transposed)
    c.m = 256, c.n = 384, c.k = 72, c.pad_a = 1;
    const gemm::SgemmRun r = ran(c);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.a_4byte);
  }
  {
    Config c;  // B transposed with ldb = 385: the general kernel
    c.tb = JHDNN_GEMM_OP_T, c.m = 256, c.n = 384, c.k = 72, c.pad_b = 1;
    CHECK(ran(c).path == SgemmPath::kFallback);
  }
  {
    Config c;  // A transposed (k-contiguous, 4-byte copies) and B not: no alignment needed
    c.ta = JHDNN_GEMM_OP_T, c.m = 256, c.n = 384, c.k = 72, c.offset_a = 1, c.pad_a = 1, c.pad_b = 3;
    CHECK(ran(c).path == SgemmPath::kAsync);
  }
  {
    Config c;  // batch stride of a transposed B not a multiple of 4 -> the general kernel
    c.tb = JHDNN_GEMM_OP_T, c.m = 64, c.n = 64, c.k = 20, c.batch = 3, c.gap_b = 1;
    CHECK(ran(c).path == SgemmPath::kFallback);
  }
  {
    Config c;  // m = 1 (lda = 1): A by 4-byte copies, 64 x 128 tiles split over a cluster
    c.m = 1, c.n = 1024, c.k = 2048;
    const gemm::SgemmRun r = ran(c);
    INFO("ran tile " << r.tile_m << "x" << r.tile_n << " split " << r.split);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.a_4byte);
    CHECK(r.tile_m == 64);
    CHECK(r.split >= 2);
  }
  {
    Config c;  // few tiles, long k: 64 x 128 tiles split over a cluster
    c.m = 64, c.n = 1024, c.k = 2048;
    const gemm::SgemmRun r = ran(c);
    INFO("ran tile " << r.tile_m << "x" << r.tile_n << " split " << r.split);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.tile_m == 64);
    CHECK(r.split >= 2);
  }
  {
    Config c;  // few tiles along m: 128 x 64 tiles, split
    c.m = 1024, c.n = 8, c.k = 2048;
    const gemm::SgemmRun r = ran(c);
    INFO("ran tile " << r.tile_m << "x" << r.tile_n << " split " << r.split);
    CHECK(r.path == SgemmPath::kAsync);
    CHECK(r.tile_n == 64);
    CHECK(r.split >= 2);
  }
  {
    // Step 10 of the series is the cp.async kernel on any m, n, k once lda allows it.
    Config c;
    c.m = 67, c.n = 45, c.k = 33, c.pad_a = 1, c.beta = -1.f;  // lda = 68
    const Host h = make_host(c);
    Dev d(h);
    const core::Status r = run_series_step(gemm::series::steps().at(9), c, h, d);
    INFO("status " << core::status_name(r.code) << ": " << r.message);
    REQUIRE(r.ok());
    CHECK(gemm::last_sgemm_run().path == SgemmPath::kAsync);
    check_c("series step 10", d, h);
  }
}

TEST_CASE("gemm: strided batches", "[gpu][gemm][batched]") {
  START_GPU_CASE();
  for (jhdnnOrder_t order : kOrders)
    for (jhdnnGemmOp_t ta : kOps) {
      Config c;
      c.order = order, c.ta = ta, c.tb = JHDNN_GEMM_OP_T;
      c.m = 70, c.n = 129, c.k = 33, c.batch = 5;
      c.gap_a = 5, c.gap_b = 0, c.gap_c = 11;
      c.alpha = -1.f, c.beta = 0.5f;
      check_config(c);
      c.shared_a = true;  // strideA = 0: one A for every batch
      c.beta = 0.f;
      check_config(c);
    }
}

TEST_CASE("gemm: degenerate sizes (k = 0, m = 0, n = 0, batch = 0)", "[gpu][gemm][degenerate]") {
  START_GPU_CASE();
  {
    Config c;  // k = 0: C = beta * C
    c.m = 37, c.n = 19, c.k = 0, c.beta = -2.f, c.alpha = 3.f;
    check_config(c);
  }
  for (int64_t which = 0; which < 2; ++which) {
    Config c;  // nothing to compute: C untouched (check_c sees every element as a gap)
    c.m = which == 0 ? 0 : 13, c.n = which == 0 ? 11 : 0, c.k = 5, c.beta = 1.f;
    check_config(c, false);
  }
}

TEST_CASE("gemm: real-valued inputs within the forward error bound", "[gpu][gemm][reals]") {
  START_GPU_CASE();
  for (jhdnnOrder_t order : kOrders) {
    Config c;
    c.order = order, c.ta = JHDNN_GEMM_OP_T;
    c.m = 1000, c.n = 1000, c.k = 1000;
    c.integers = false;
    c.alpha = 1.f, c.beta = 0.f;
    check_config(c);
  }
}

TEST_CASE("gemm: a shape past 2^31 elements of C offsets uses 64-bit addressing", "[gpu][gemm][large]") {
  START_GPU_CASE();
  // 5 batches of a 64 x 64 C, strideC = 2^29 + 7: the last batch starts past element 2^31, so a
  // 32-bit offset anywhere in the kernel would write the wrong place (about 8.6 GB of C span).
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const int64_t stride = (int64_t(1) << 29) + 7;
  const int64_t batch = 5;
  const size_t bytes = size_t((batch - 1) * stride + 64 * 64) * 4;
  if (free_b < bytes + (size_t(1) << 30)) SKIP("needs " << bytes << " free bytes of device memory");
  Config c;
  c.m = 64, c.n = 64, c.k = 20, c.batch = batch, c.gap_c = stride - 64 * 64, c.beta = 0.f;
  // Host copies of an 8 GiB C would be too big: check only the logical elements by hand.
  Host h;
  h.c = c;
  h.sa = make_stored(64, 20, false, 0, 0, batch, false);
  h.sb = make_stored(20, 64, false, 0, 0, batch, false);
  fill(h.a, h.sa, mix_seed(test_seed(), 11), true);
  fill(h.b, h.sb, mix_seed(test_seed(), 12), true);
  DeviceBuffer a(h.a.size() * 4), b(h.b.size() * 4), cbuf(bytes);
  a.upload(h.a.data(), h.a.size() * 4);
  b.upload(h.b.data(), h.b.size() * 4);
  const float alpha = 1.f, beta = 0.f;
  JHDNN_CHECK(jhdnnGemmStridedBatched(gpu().jh.get(), JHDNN_DATA_FLOAT, JHDNN_ORDER_COL, JHDNN_GEMM_OP_N,
                                      JHDNN_GEMM_OP_N, 64, 64, 20, &alpha, a.get(), 64, h.sa.stride, b.get(), 20,
                                      h.sb.stride, &beta, cbuf.get(), 64, stride, batch));
  gpu().stream.sync();
  CHECK(cbuf.guard_intact());
  int64_t bad = 0;
  for (int64_t bt = 0; bt < batch; ++bt) {
    std::vector<float> got(64 * 64);
    cbuf.download(got.data(), got.size() * 4, size_t(bt * stride) * 4);
    for (int64_t j = 0; j < 64; ++j)
      for (int64_t i = 0; i < 64; ++i) {
        double s = 0;
        for (int64_t kk = 0; kk < 20; ++kk) s += double(h.a[size_t(h.sa.off(bt, i, kk))]) * h.b[size_t(h.sb.off(bt, kk, j))];
        if (double(got[size_t(i + j * 64)]) != s) ++bad;
      }
  }
  CHECK(bad == 0);
}

// ================================================================ the teaching series

TEST_CASE("gemm series: every step on the shapes it accepts, refusals otherwise", "[gpu][gemm][series]") {
  START_GPU_CASE();
  const std::vector<gemm::series::Step>& steps = gemm::series::steps();
  REQUIRE(steps.size() == 10);
  for (size_t i = 0; i < steps.size(); ++i) CHECK(steps[i].number == int(i + 1));
  struct Shape { int64_t m, n, k, pad; };
  // m, n multiples of 128 and k of 32 (every step takes them), with and without padded (multiple-of-4) ld.
  const Shape ok_shapes[] = {{256, 384, 64, 0}, {128, 256, 160, 4}};
  for (const gemm::series::Step& st : steps) {
    INFO("step " << st.number << " " << st.name << " (" << st.limits << ")");
    for (const Shape& s : ok_shapes)
      for (float beta : {0.f, 0.5f}) {
        Config c;
        c.m = s.m, c.n = s.n, c.k = s.k, c.pad_a = s.pad, c.pad_b = s.pad, c.pad_c = s.pad;
        c.alpha = 2.f, c.beta = beta;
        const Host h = make_host(c);
        Dev d(h);
        const core::Status r = run_series_step(st, c, h, d);
        INFO("status " << core::status_name(r.code) << ": " << r.message);
        REQUIRE(r.ok());
        check_c(std::string("series step ") + st.name, d, h);
      }
    // An odd shape: steps 01, 02 and 08 compute it, the others refuse with their reason.
    Config c;
    c.m = 67, c.n = 45, c.k = 33, c.beta = -1.f;
    const Host h = make_host(c);
    Dev d(h);
    const core::Status r = run_series_step(st, c, h, d);
    INFO("status " << core::status_name(r.code) << ": " << r.message);
    if (st.number == 1 || st.number == 2 || st.number == 8) {
      REQUIRE(r.ok());
      check_c(std::string("series step ") + st.name, d, h);
    } else {
      CHECK(r.code == JHDNN_STATUS_NOT_SUPPORTED_SHAPE);
      CHECK(r.message.find("multiple") != std::string::npos);  // step 10: lda (67) a multiple of 4
      std::vector<float> got(h.c0.size());
      d.c.download(got.data(), got.size() * 4);
      CHECK(std::memcmp(got.data(), h.c0.data(), got.size() * 4) == 0);  // a refusal writes nothing
    }
  }
}

// ================================================================ bad inputs

TEST_CASE("gemm: bad inputs get a clear status and message", "[gpu][gemm][bad_input]") {
  // A null handle needs no GPU.
  {
    const float one = 1.f;
    float dummy[4] = {};
    CHECK(jhdnnGemm(nullptr, JHDNN_DATA_FLOAT, JHDNN_ORDER_COL, JHDNN_GEMM_OP_N, JHDNN_GEMM_OP_N, 1, 1, 1, &one,
                    dummy, 1, dummy, 1, &one, dummy, 1) == JHDNN_STATUS_BAD_PARAM_NULL_POINTER);
    CHECK(last_error().find("handle") != std::string::npos);
  }
  START_GPU_CASE();
  jhdnnHandle_t h = gpu().jh.get();
  DeviceBuffer a(64 * 64 * 4), b(64 * 64 * 4), c(64 * 64 * 4);
  const float* pa = a.as<float>();
  const float* pb = b.as<float>();
  float* pc = c.as<float>();
  const float one = 1.f, zero = 0.f;
  const auto col = JHDNN_ORDER_COL, row = JHDNN_ORDER_ROW;
  const auto N = JHDNN_GEMM_OP_N, T = JHDNN_GEMM_OP_T;
  const auto F = JHDNN_DATA_FLOAT;
  using Row = StatusRow;
  const std::vector<Row> rows = {
      {"null alpha", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, nullptr, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "alpha"},
      {"null beta", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, pa, 8, pb, 8, nullptr, pc, 8); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "beta"},
      {"null A", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, nullptr, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "A"},
      {"null B", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, pa, 8, nullptr, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "B"},
      {"null C", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, pa, 8, pb, 8, &zero, nullptr, 8); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "C"},
      {"negative m", [&] { return jhdnnGemm(h, F, col, N, N, -1, 8, 8, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "m (-1)"},
      {"negative k", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, -3, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "k (-3)"},
      {"lda < m (col, N)", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 4, &one, pa, 7, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "lda (7)"},
      {"lda < k (col, T)", [&] { return jhdnnGemm(h, F, col, T, N, 8, 8, 9, &one, pa, 8, pb, 9, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "lda (8)"},
      {"lda < k (row, N)", [&] { return jhdnnGemm(h, F, row, N, N, 8, 8, 9, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "lda (8)"},
      {"ldb < k", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 9, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "ldb (8)"},
      {"ldc < n (row)", [&] { return jhdnnGemm(h, F, row, N, N, 4, 8, 4, &one, pa, 4, pb, 8, &zero, pc, 7); },
       JHDNN_STATUS_BAD_PARAM, "ldc (7)"},
      {"bad order", [&] { return jhdnnGemm(h, F, jhdnnOrder_t(7), N, N, 8, 8, 8, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "order"},
      {"bad op", [&] { return jhdnnGemm(h, F, col, jhdnnGemmOp_t(2), N, 8, 8, 8, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_BAD_PARAM, "transA"},
      {"DOUBLE data", [&] { return jhdnnGemm(h, JHDNN_DATA_DOUBLE, col, N, N, 8, 8, 8, &one, pa, 8, pb, 8, &zero, pc, 8); },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "DOUBLE"},  // HALF / BFLOAT16 run on tensor cores (test_gemm_tensorcore)
      {"negative batch",
       [&] { return jhdnnGemmStridedBatched(h, F, col, N, N, 8, 8, 8, &one, pa, 8, 64, pb, 8, 64, &zero, pc, 8, 64, -1); },
       JHDNN_STATUS_BAD_PARAM, "batchCount"},
      {"negative stride",
       [&] { return jhdnnGemmStridedBatched(h, F, col, N, N, 8, 8, 8, &one, pa, 8, -64, pb, 8, 64, &zero, pc, 8, 64, 2); },
       JHDNN_STATUS_BAD_PARAM, "stride"},
      {"overlapping C batches",
       [&] { return jhdnnGemmStridedBatched(h, F, col, N, N, 8, 8, 8, &one, pa, 8, 64, pb, 8, 64, &zero, pc, 8, 32, 2); },
       JHDNN_STATUS_BAD_PARAM, "strideC"},
      {"extent overflows int64",
       [&] {
         return jhdnnGemmStridedBatched(h, F, col, N, N, 8, 8, 8, &one, pa, 8, int64_t(1) << 62, pb, 8, 64, &zero, pc,
                                        8, 64, 4);
       },
       JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "overflow"},
      {"C overlaps A", [&] { return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, pa, 8, pb, 8, &zero, a.as<float>() + 4, 8); },
       JHDNN_STATUS_BAD_PARAM, "overlaps A"},
      {"misaligned C",
       [&] {
         return jhdnnGemm(h, F, col, N, N, 8, 8, 8, &one, pa, 8, pb, 8, &zero,
                          reinterpret_cast<float*>(reinterpret_cast<char*>(pc) + 2), 8);
       },
       JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "aligned"},
  };
  check_status_rows(rows);
  // The legal corner cases succeed: batchCount 0, and m == 0 (nothing is touched, so no pointer
  // is needed).
  CHECK(jhdnnGemmStridedBatched(h, F, col, N, N, 8, 8, 8, &one, pa, 8, 64, pb, 8, 64, &zero, pc, 8, 64, 0) ==
        JHDNN_STATUS_SUCCESS);
  CHECK(jhdnnGemm(h, F, col, N, N, 0, 8, 8, &one, nullptr, 1, nullptr, 8, &zero, nullptr, 1) == JHDNN_STATUS_SUCCESS);
}

// ================================================================ the fusion-ready epilogue

TEST_CASE("gemm: the BiasActivation<Relu> epilogue (bias per row / column, residual)", "[gpu][gemm][epilogue]") {
  START_GPU_CASE();
  const int m = 150, n = 70, k = 37, lda = m + 2, ldb = k, ldc = m + 3, ldr = m;  // lda % 4 == 0: both kernels
  std::vector<double> av(size_t(lda) * k), bv(size_t(ldb) * n), cv(size_t(ldc) * n), biasv(size_t(std::max(m, n))),
      resv(size_t(ldr) * n);
  fill_random_ints(av, mix_seed(test_seed(), 31), -3, 3);
  fill_random_ints(bv, mix_seed(test_seed(), 32), -3, 3);
  fill_random_ints(cv, mix_seed(test_seed(), 33), -3, 3);
  fill_random_ints(biasv, mix_seed(test_seed(), 34), -20, 20);
  fill_random_ints(resv, mix_seed(test_seed(), 35), -3, 3);
  auto to_f = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> a = to_f(av), b = to_f(bv), c0 = to_f(cv), bias = to_f(biasv), res = to_f(resv);
  DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c0.size() * 4), dbias(bias.size() * 4), dres(res.size() * 4);
  da.upload(a.data(), a.size() * 4);
  db.upload(b.data(), b.size() * 4);
  dbias.upload(bias.data(), bias.size() * 4);
  dres.upload(res.data(), res.size() * 4);
  for (bool async : {false, true})
  for (bool per_row : {true, false}) {
    INFO((async ? "cp.async kernel" : "general kernel") << ", bias per " << (per_row ? "row" : "column"));
    dc.upload(c0.data(), c0.size() * 4);
    const float alpha = 0.5f, beta = -1.f;
    const core::Status st = gemm_bias_relu_residual(m, n, k, alpha, da.as<float>(), lda, db.as<float>(), ldb, beta,
                                                    dc.as<float>(), ldc, dbias.as<float>(), per_row,
                                                    dres.as<float>(), ldr, gpu().stream.get(), async);
    gpu().stream.sync();
    INFO(st.message);
    REQUIRE(st.ok());
    std::vector<float> got(c0.size());
    dc.download(got.data(), got.size() * 4);
    CHECK(dc.guard_intact());
    int64_t bad = 0, negatives_clamped = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < ldc; ++i) {
        const size_t o = size_t(i) + size_t(j) * ldc;
        if (i >= m) {  // rows between m and ldc: untouched
          bad += got[o] != c0[o];
          continue;
        }
        double s = 0;
        for (int kk = 0; kk < k; ++kk) s += double(a[size_t(i) + size_t(kk) * lda]) * b[size_t(kk) + size_t(j) * ldb];
        double v = alpha * s + beta * c0[o] + bias[size_t(per_row ? i : j)];
        if (v < 0) v = 0, ++negatives_clamped;
        v += res[size_t(i) + size_t(j) * ldr];
        bad += double(got[o]) != v;
      }
    CHECK(bad == 0);
    CHECK(negatives_clamped > 0);  // the activation was exercised
  }
}
