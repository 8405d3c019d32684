// The TMA-store epilogue's box arithmetic (src/conv/tensorcore/tma_store_box.h, used by the kernel in
// conv_wgmma.cu) on the CPU, no GPU needed: for every pixel box a tile can have, each consumer warp's
// store box holds exactly its 16 tile rows in the order the warp staged them, and over whole problems
// (odd sizes: tile tails in pixels and channels) the boxes, clipped to the tensor as TMA clips them,
// write every output element exactly once and nothing else. Also the staging layout against TMA's
// 128-byte swizzle. The GPU runs (test_conv_tensorcore, "epilogue tma") check the values.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "conv/tensorcore/tma_store_box.h"
#include "conv/tensorcore/wgmma_plan.h"

namespace {

namespace tc = jhdnn::conv::tensorcore;
using jhdnn::core::ConvProblem;

// A box function under test: the store box of a tile pixel box bw x bh (the real one: tc::tma_store_box).
using BoxFn = std::function<tc::TmaStoreBox(int bw, int bh)>;

// Every power-of-two pixel box (bw, bh, bn) of `pixels` pixels.
std::vector<tc::PixelBox> all_boxes(int pixels) {
  std::vector<tc::PixelBox> v;
  for (int bw = 1; bw <= pixels; bw *= 2)
    for (int bh = 1; bw * bh <= pixels; bh *= 2) v.push_back(tc::PixelBox{bw, bh, pixels / (bw * bh)});
  return v;
}

// "" when, for tile pixel box b, every warp's store box (origin + TMA row order) holds exactly the
// warp's 16 tile rows in staging order, else the first mismatch.
std::string check_rows(const tc::PixelBox& b, int pixels, const BoxFn& box_of) {
  const tc::TmaStoreBox sb = box_of(b.bw, b.bh);
  if (sb.w * sb.h * sb.n != tc::kTmaStoreRows || sb.w < 1 || sb.h < 1 || sb.n < 1)
    return "box extents do not multiply to 16";
  if (sb.w > b.bw || sb.h > b.bh || sb.n > b.bn) return "box larger than the tile's pixel box";
  for (int m_base = 0; m_base < pixels; m_base += tc::kTmaStoreRows) {
    int oq, op, on;
    tc::tma_store_origin(b.bw, b.bh, m_base, oq, op, on);
    for (int j = 0; j < tc::kTmaStoreRows; ++j) {
      int bq, bp, bn, tq, tp, tn;
      tc::tma_store_box_row(sb, j, bq, bp, bn);
      tc::tile_row_offset(b.bw, b.bh, m_base + j, tq, tp, tn);
      if (oq + bq != tq || op + bp != tp || on + bn != tn)
        return "box " + std::to_string(b.bw) + "x" + std::to_string(b.bh) + "x" + std::to_string(b.bn) + " warp rows " +
               std::to_string(m_base) + ": staged row " + std::to_string(j) + " is not tile row " +
               std::to_string(m_base + j);
    }
  }
  return "";
}

// Emulates the kernel's stores over a whole N x P x Q x K output with tile pixel box b and tile width
// bn_ch (128 or 256 channels): per tile (decode_tile's order), per consumer warp, per 64-channel chunk
// not wholly past K, one store of the warp's box unless its origin lies past the tensor, clipped to
// [0, K) x [0, Q) x [0, P) x [0, N) as TMA clips. Each written element must be the one the staged
// value belongs to (tile row m_base + j, channel k0 + 64c + e), and every element must be written
// exactly once. "" when so, else the first fault.
std::string check_cover(int N, int P, int Q, int K, const tc::PixelBox& b, int bn_ch, int pixels, const BoxFn& box_of) {
  const tc::TmaStoreBox sb = box_of(b.bw, b.bh);
  const int tiles_q = (Q + b.bw - 1) / b.bw, tiles_p = (P + b.bh - 1) / b.bh, tiles_n = (N + b.bn - 1) / b.bn;
  const int tiles_k = (K + bn_ch - 1) / bn_ch;
  std::vector<uint8_t> hits(size_t(N) * P * Q * K, 0);
  const int64_t tiles = int64_t(tiles_q) * tiles_p * tiles_n * tiles_k;
  for (int64_t tile = 0; tile < tiles; ++tile) {
    int64_t t = tile;
    const int k0 = int(t % tiles_k) * bn_ch;
    t /= tiles_k;
    const int q0 = int(t % tiles_q) * b.bw;
    t /= tiles_q;
    const int p0 = int(t % tiles_p) * b.bh;
    const int n0 = int(t / tiles_p) * b.bn;
    for (int m_base = 0; m_base < pixels; m_base += tc::kTmaStoreRows) {
      int oq, op, on;
      tc::tma_store_origin(b.bw, b.bh, m_base, oq, op, on);
      const int q = q0 + oq, p = p0 + op, n = n0 + on;
      if (!(q < Q && p < P && n < N)) continue;  // the kernel issues no store (an empty bulk group)
      for (int c = 0; c < bn_ch / tc::kTmaStoreCols; ++c) {
        const int kc = k0 + c * tc::kTmaStoreCols;
        if (kc >= K) break;
        for (int j = 0; j < tc::kTmaStoreRows; ++j) {
          int bq, bp, bn;
          tc::tma_store_box_row(sb, j, bq, bp, bn);
          const int gq = q + bq, gp = p + bp, gn = n + bn;
          if (gq >= Q || gp >= P || gn >= N) continue;  // clipped
          // The value staged in row j is tile row m_base + j: it must be this pixel.
          int tq, tp, tn;
          tc::tile_row_offset(b.bw, b.bh, m_base + j, tq, tp, tn);
          if (q0 + tq != gq || p0 + tp != gp || n0 + tn != gn)
            return "tile " + std::to_string(tile) + " warp rows " + std::to_string(m_base) + " row " + std::to_string(j) +
                   " lands on the wrong pixel";
          for (int e = 0; e < tc::kTmaStoreCols; ++e) {
            const int k = kc + e;
            if (k >= K) break;  // clipped
            uint8_t& h = hits[((size_t(gn) * P + gp) * Q + gq) * K + k];
            if (h != 0)
              return "element (n " + std::to_string(gn) + ", p " + std::to_string(gp) + ", q " + std::to_string(gq) +
                     ", k " + std::to_string(k) + ") written twice";
            h = 1;
          }
        }
      }
    }
  }
  for (size_t i = 0; i < hits.size(); ++i)
    if (hits[i] == 0) return "element " + std::to_string(i) + " never written";
  return "";
}

const BoxFn kReal = [](int bw, int bh) { return tc::tma_store_box(bw, bh); };

struct Shape {
  int N, P, Q, K;
};
// Odd and exact sizes: pixel tails in every dimension, K tails inside a 64-channel chunk and whole
// chunks past K (K = 24, 72, 200), exact fits (56 x 56, 14 x 14, K = 256).
const Shape kShapes[] = {{1, 7, 11, 24}, {3, 9, 13, 72}, {2, 14, 14, 256}, {2, 5, 3, 200}, {1, 56, 56, 64},
                         {5, 7, 7, 136}, {2, 17, 9, 8}, {1, 1, 300, 128}};

}  // namespace

TEST_CASE("wgmma TMA store: each warp's box holds exactly its 16 tile rows, in staging order",
          "[tma_store][cpu]") {
  for (const int pixels : {128, 64})
    for (const tc::PixelBox& b : all_boxes(pixels)) {
      INFO("pixels " << pixels << " box " << b.bw << "x" << b.bh << "x" << b.bn);
      CHECK(check_rows(b, pixels, kReal) == "");
    }
}

TEST_CASE("wgmma TMA store: clipped boxes write every output element exactly once", "[tma_store][cpu]") {
  int checked = 0;
  for (const Shape& s : kShapes)
    for (const tc::PixelBox& b : all_boxes(128)) {
      if (b.bw > 2 * s.Q && b.bw > 16) continue;  // boxes far wider than the map: nothing new, only time
      for (const int bn_ch : {128, 256}) {
        INFO("N " << s.N << " P " << s.P << " Q " << s.Q << " K " << s.K << " box " << b.bw << "x" << b.bh << "x" << b.bn
                  << " bn " << bn_ch);
        CHECK(check_cover(s.N, s.P, s.Q, s.K, b, bn_ch, 128, kReal) == "");
        ++checked;
      }
    }
  CHECK(checked > 100);
  // The boxes the planner really picks for ResNet-50's maps (16 x 8 x 1 for 56 / 28 / 14, 8 x 8 x 2 for 7).
  for (const int hw : {56, 28, 14, 7}) {
    ConvProblem p;
    p.dtype = JHDNN_DATA_HALF;
    p.N = 32, p.C = 64, p.K = 256, p.H = p.W = hw, p.P = p.Q = hw, p.R = p.S = 1;
    p.stride_h = p.stride_w = 1, p.dil_h = p.dil_w = 1;
    const tc::PixelBox b = tc::pick_pixel_box(p, 128);
    INFO("ResNet-50 " << hw << "x" << hw << " box " << b.bw << "x" << b.bh << "x" << b.bn);
    CHECK(check_cover(2, hw, hw, 256, b, 256, 128, kReal) == "");
  }
}

TEST_CASE("wgmma TMA store: the checks catch a wrong box", "[tma_store][cpu]") {
  // One w row too many when bw < 16 (ignores bh): with bw 2, bh 4 the box spans 8 p rows of a 4-row tile.
  const BoxFn too_tall = [](int bw, int) {
    const int w = bw < 16 ? bw : 16;
    return tc::TmaStoreBox{w, 16 / w, 1};
  };
  CHECK(check_rows(tc::PixelBox{2, 4, 16}, 128, too_tall) != "");
  CHECK(check_cover(3, 9, 13, 72, tc::PixelBox{2, 4, 16}, 128, 128, too_tall) != "");
  // A box that assumes 16 pixels of one w row (right only for bw >= 16): with bw 8 the second half
  // of the box lands on the next 8 q positions instead of the next p row.
  const BoxFn flat = [](int, int) { return tc::TmaStoreBox{16, 1, 1}; };
  CHECK(check_rows(tc::PixelBox{8, 16, 1}, 128, flat) != "");
  CHECK(check_cover(2, 14, 14, 256, tc::PixelBox{8, 16, 1}, 256, 128, flat) != "");
  CHECK(check_rows(tc::PixelBox{16, 8, 1}, 128, flat) == "");  // and passes where it is right
}

TEST_CASE("wgmma TMA store: staging layout is TMA's 128-byte swizzle, injective, 2 KiB", "[tma_store][cpu]") {
  // TMA's SWIZZLE_128B on a 1024-byte aligned buffer of 128-byte rows: address bits 4..6 XOR bits 7..9.
  std::vector<int> seen(2048 / 16, 0);
  for (int r = 0; r < tc::kTmaStoreRows; ++r)
    for (int chunk = 0; chunk < 8; ++chunk) {
      const unsigned plain = unsigned(r * 128 + chunk * 16);
      const unsigned swz = plain ^ (((plain >> 7) & 7u) << 4);
      INFO("row " << r << " chunk " << chunk);
      CHECK(tc::tma_stage_off(r, chunk) == swz);
      REQUIRE(tc::tma_stage_off(r, chunk) < 2048u);
      ++seen[tc::tma_stage_off(r, chunk) / 16];
    }
  for (int s : seen) CHECK(s == 1);
  // stmatrix: the 8 rows of one 8x8 matrix (rows 8h .. 8h + 7, one 16-byte unit) hit 8 different
  // 16-byte bank groups (conflict-free).
  for (int h = 0; h < 2; ++h)
    for (int chunk = 0; chunk < 8; ++chunk) {
      unsigned groups = 0;
      for (int r = 8 * h; r < 8 * h + 8; ++r) groups |= 1u << ((tc::tma_stage_off(r, chunk) % 128) / 16);
      CHECK(groups == 0xffu);
    }
}
