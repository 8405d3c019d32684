// The input piece mask of the fused layer (jhdnnSparseDnnLayerForwardCompactMasked, session 36): the masked call is
// bitwise the unmasked one; where late4 uses the mask (tiles of 128 consecutive columns from a multiple of 128) an
// input whose 128 features in the tile are all +0.0f (its mask word 0) is not read -- such inputs hold a large finite
// poison here, which any read would carry into the outputs (a NaN would not do: fmaxf drops it) -- also in blocks
// where skipping its products would not be exact (an Inf / NaN weight, a bias of -0.0f), which must compute them
// (its argument checks: test_sparse.cpp, "sparse calls: the tiled feature layout's and the input mask's bad
// inputs"). Tag [masks]: `build/tests/test_sparse "[masks]"` runs only these.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/scoped_config.h"
#include "common/spdnn_layers.h"
#include "common/test_util.h"
#include "spdnn/spdnn.h"

using jhdnn::test::DeviceBuffer;
using jhdnn::test::from_dev;
using jhdnn::test::to_dev;
using jhdnn::test::JhdnnHandle;
using jhdnn::test::ScopedSpdnnTile;
using jhdnn::test::SplitMix64;

namespace {

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// A layer of n_out rows in lists of 16 adjacent rows (the challenge's rows per list), each list 32 distinct inputs
// < n_in in ascending order, with weights shared per list and one row off in every third list (value_shared_lists):
// late4's voted blocks, both the shared-weight and the transposed kind.
spdnn::Ell list_layer(int64_t n_in, int64_t n_out, SplitMix64& g) {
  spdnn::Ell e;
  e.rows = n_out;
  e.cols = n_in;
  e.width = 32;
  e.idx.resize(size_t(n_out * 32));
  e.val.resize(size_t(n_out * 32));
  std::vector<int> list(32);
  for (int64_t j = 0; j < n_out; ++j) {
    if (j % 16 == 0) {
      std::vector<int> all(static_cast<size_t>(n_in));
      std::iota(all.begin(), all.end(), 0);
      for (int k = 0; k < 32; ++k) std::swap(all[size_t(k)], all[size_t(k + int64_t(g.next() % uint64_t(n_in - k)))]);
      std::copy(all.begin(), all.begin() + 32, list.begin());
      std::sort(list.begin(), list.end());
    }
    std::copy(list.begin(), list.end(), e.idx.begin() + j * 32);
  }
  value_shared_lists(e, 3, g);
  return e;
}

// Where feature (i, c) is: neuron-major x[i * ld + c], or the tiled layout's block of 128 columns.
size_t at(bool tiled, int64_t n, int64_t ld, int64_t i, int64_t c) {
  return size_t(tiled ? (c / 128) * n * 128 + i * 128 + c % 128 : i * ld + c);
}

// The piece mask of n rows x ld columns: bit (c % 128) / 4 of word i * ceil(ld / 128) + c / 128 set iff one of the
// piece's 4 floats has a bit set (columns past ld count as zero).
std::vector<unsigned> piece_mask(const std::vector<float>& x, bool tiled, int64_t n, int64_t ld) {
  const int64_t words = (ld + 127) / 128;
  std::vector<unsigned> m(size_t(n * words), 0u);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < ld; ++c)
      if (bits_of(x[at(tiled, n, ld, i, c)]) != 0u) m[size_t(i * words + c / 128)] |= 1u << ((c % 128) / 4);
  return m;
}

}  // namespace

TEST_CASE("fused layer: the input piece mask is bitwise the unmasked call and skips zero inputs",
          "[sparse][gpu][masks]") {
  JHDNN_REQUIRE_GPU();
  JhdnnHandle h;
  struct Case {
    const char* tile;
    int64_t n_in, n_out, cols;
    int count;
    bool contiguous, tiled, nonfinite;
    float bias;
  };
  // late4crowd (auto's tile at these widths) and late4all use the mask on contiguous lists (poisoned: a read of a
  // zero input shows); scattered lists gather and cta2w has no late4 items (the mask unused: real zeros there).
  // Counts that leave a partial last tile; weights with Inf / NaN in some lists, a bias of -0.0f (the products kept).
  const Case cases[] = {{"late4crowd", 1024, 1024, 20000, 19962, true, false, false, -0.3f},
                        {"late4all", 1024, 1024, 20000, 19962, true, false, true, -0.3f},
                        {"late4all", 512, 640, 9000, 8999, true, true, false, -0.3f},
                        {"late4crowd", 256, 512, 12800, 12800, true, false, false, -0.f},
                        {"late4all", 256, 512, 5000, 3000, false, false, false, -0.3f},
                        {"cta2w", 1024, 1024, 6000, 5990, true, false, false, -0.3f}};
  int salt = 0;
  for (const Case& cs : cases) {
    INFO("tile " << cs.tile << " n_in " << cs.n_in << " n_out " << cs.n_out << " cols " << cs.cols << " count "
                 << cs.count << (cs.contiguous ? " contiguous" : " scattered") << (cs.tiled ? " tiled" : "")
                 << (cs.nonfinite ? " non-finite weights" : "") << " bias " << cs.bias);
    ScopedSpdnnTile tile(cs.tile);
    SplitMix64 g(jhdnn::test::mix_seed(jhdnn::test::test_seed(), 3600 + salt++));
    spdnn::Ell e = list_layer(cs.n_in, cs.n_out, g);
    if (cs.nonfinite)  // one weight of every 5th list's rows Inf or NaN (the list's rows keep sharing it)
      for (int64_t j = 0; j < cs.n_out; ++j)
        if ((j / 16) % 5 == 0) e.val[size_t(j * 32 + (j / 16) % 32)] = (j / 16) % 2 ? INFINITY : NAN;
    const bool late4 = std::strcmp(cs.tile, "cta2w") != 0;
    const bool poison = late4 && cs.contiguous;  // the mask must be used: zero inputs of a tile are not read
    // x: each (input, 128-column tile) all zero with probability 0.4; else 85% of its pieces zero, the others half
    // zeros (some -0.0f, which is not zero to the mask), values in (0, 32]. ld = cols (the tiled capacity: cols
    // rounded up to 128).
    const int64_t ldx = cs.tiled ? (cs.cols + 127) / 128 * 128 : cs.cols;
    const int64_t words = (ldx + 127) / 128;
    std::vector<float> x(size_t(cs.n_in * ldx), 0.f);
    for (int64_t i = 0; i < cs.n_in; ++i)
      for (int64_t w = 0; w < words; ++w) {
        if (g.uniform() < 0.4) continue;
        for (int64_t p = 32 * w; p < std::min(32 * (w + 1), ldx / 4); ++p) {
          if (g.uniform() < 0.85) continue;
          for (int64_t c = 4 * p; c < 4 * p + 4; ++c)
            if (g.uniform() < 0.5)
              x[at(cs.tiled, cs.n_in, ldx, i, c)] = g.uniform() < 0.05 ? -0.f : float(g.uniform() * 32 + 1e-3);
        }
      }
    const std::vector<unsigned> xm = piece_mask(x, cs.tiled, cs.n_in, ldx);
    std::vector<float> xp = x;  // the inputs zero in a whole tile poisoned where they must not be read
    size_t poisoned = 0;
    if (poison)
      for (int64_t i = 0; i < cs.n_in; ++i)
        for (int64_t c = 0; c < ldx; ++c)
          if (xm[size_t(i * words + c / 128)] == 0u) {
            xp[at(cs.tiled, cs.n_in, ldx, i, c)] = 1e6f;
            ++poisoned;
          }
    std::vector<int> rows;
    for (int64_t c = 0; c < cs.cols && int(rows.size()) < cs.count; ++c)
      if (cs.contiguous || g.uniform() < 0.7) rows.push_back(int(c));
    REQUIRE(int(rows.size()) == cs.count);
    const int max_active = cs.count;
    std::vector<int> ids(static_cast<size_t>(max_active));
    std::iota(ids.begin(), ids.end(), 0);
    const int64_t ldy = cs.tiled ? (int64_t(max_active) + 127) / 128 * 128 : max_active + 3;
    size_t wsz = 0;
    JHDNN_CHECK(jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(h.get(), max_active, &wsz));
    DeviceBuffer di = to_dev(e.idx), dv = to_dev(e.val), drows = to_dev(rows), dids = to_dev(ids),
                 dcount = to_dev(std::vector<int>{cs.count}), dxm = to_dev(xm);
    jhdnnSparseMatrixDescriptor_t d;
    JHDNN_CHECK(jhdnnCreateSparseMatrixDescriptor(&d));
    JHDNN_CHECK(jhdnnSetEllMatrixDescriptor(d, cs.n_out, cs.n_in, 32, di.as<int>(), dv.get(), JHDNN_DATA_FLOAT));
    const jhdnnSparseDnnFeatureLayout_t layout =
        cs.tiled ? JHDNN_SPARSE_DNN_FEATURES_TILED128 : JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR;
    struct Out {
      std::vector<float> y;
      std::vector<int> rows;
      int count;
    };
    auto run = [&](const std::vector<float>& xin, bool masked) {
      const size_t ysize = size_t(cs.n_out * ldy);
      DeviceBuffer dx = to_dev(xin), dy(ysize * 4), dro(size_t(max_active) * 4), dio(size_t(max_active) * 4),
          dco = to_dev(std::vector<int>{0}), dws(wsz);
      CUDA_CHECK(cudaMemset(dy.get(), 0xFF, ysize * 4));  // poison: what is not written stays NaN
      CUDA_CHECK(cudaMemset(dws.get(), 0, wsz));
      if (masked)
        JHDNN_CHECK(jhdnnSparseDnnLayerForwardCompactMasked(
            h.get(), d, cs.bias, 32.f, max_active, dcount.as<int>(), drows.as<int>(), dids.as<int>(), layout,
            dx.get(), ldx, dxm.as<unsigned>(), dy.get(), ldy, dro.as<int>(), dio.as<int>(), dco.as<int>(), dws.get(),
            wsz));
      else
        JHDNN_CHECK(jhdnnSparseDnnLayerForwardCompactEx(h.get(), d, cs.bias, 32.f, max_active, dcount.as<int>(),
                                                        drows.as<int>(), dids.as<int>(), layout, dx.get(), ldx,
                                                        dy.get(), ldy, dro.as<int>(), dio.as<int>(), dco.as<int>(),
                                                        dws.get(), wsz));
      CUDA_CHECK(cudaDeviceSynchronize());
      Out o;
      o.count = from_dev<int>(dco, 1)[0];
      o.y = from_dev<float>(dy, ysize);
      o.rows = from_dev<int>(dro, size_t(std::max(0, std::min(o.count, max_active))));
      std::sort(o.rows.begin(), o.rows.end());  // the order of the kept entries is unspecified
      return o;
    };
    const Out want = run(x, false);
    const Out got = run(poison ? xp : x, true);
    CHECK(want.count > 0);
    CHECK(got.count == want.count);
    CHECK(got.rows == want.rows);
    size_t differ = 0;
    for (int64_t j = 0; j < cs.n_out; ++j)
      for (int r = 0; r < cs.count; ++r) {
        const size_t k = at(cs.tiled, cs.n_out, ldy, j, r);
        differ += bits_of(got.y[k]) != bits_of(want.y[k]);
      }
    CHECK(differ == 0);
    if (poison) CHECK(poisoned > 0);  // the case has zero inputs to skip
    JHDNN_CHECK(jhdnnDestroySparseMatrixDescriptor(d));
  }
}
