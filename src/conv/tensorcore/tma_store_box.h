// The box arithmetic of the wgmma convolution's TMA-store epilogue (README.md, "TMA store
// epilogue"), shared by the kernel (conv_wgmma.cu) and its CPU test (tests/test_wgmma_tma_store.cpp).
//
// A tile's 128 (or 64) output rows are the pixels of a bw x bh x bn box of (q, p, n) positions,
// w fastest (powers of two): row m is pixel (q0 + m % bw, p0 + (m / bw) % bh, n0 + m / (bw * bh)).
// A consumer warp owns 16 consecutive rows m_base .. m_base + 15 (m_base a multiple of 16), stages
// 64 channels of them at a time in shared memory (one 128-byte row per pixel) and stores them with
// ONE TMA bulk tensor store of the 4-D y (dims K, Q, P, N). The box that covers exactly those 16
// pixels, in the same order as the warp's staged rows (TMA's order: channels, then w, then h, then n):
//   w' = min(bw, 16), h' = min(bh, 16 / w'), n' = 16 / (w' * h')
// at origin (q0, p0, n0) + pixel(m_base). Because every extent is a power of two and m_base is a
// multiple of 16: bw >= 16 gives one run of 16 q positions inside one (p, n) row (m_base % bw is a
// multiple of 16, no wrap); bw < 16 gives 16 / bw whole w rows, which either fit in the tile's bh
// rows from a multiple of 16 / bw (no wrap in p) or take all bh rows of 16 / (bw * bh) images.
// n' <= bn since bw * bh * bn >= 16. Pixels and channels past the tensor are clipped by the hardware.
#pragma once

#if defined(__CUDACC__)
#define JHDNN_TMA_BOX_HD __host__ __device__
#else
#define JHDNN_TMA_BOX_HD
#endif

namespace jhdnn::conv::tensorcore {

constexpr int kTmaStoreRows = 16;  // tile rows per consumer warp (one box)
constexpr int kTmaStoreCols = 64;  // channels per box: one 128-byte row of fp16 / bf16 per pixel

// Extents of the store box in pixels along q, p, n (w * h * n == kTmaStoreRows).
struct TmaStoreBox {
  int w = 0, h = 0, n = 0;
};

// The box for a tile pixel box bw x bh (x bn; powers of two, bw * bh * bn >= 16).
JHDNN_TMA_BOX_HD inline TmaStoreBox tma_store_box(int bw, int bh) {
  TmaStoreBox b;
  b.w = bw < kTmaStoreRows ? bw : kTmaStoreRows;
  b.h = bh < kTmaStoreRows / b.w ? bh : kTmaStoreRows / b.w;
  b.n = kTmaStoreRows / (b.w * b.h);
  return b;
}

// Offsets (q, p, n) from the tile origin of tile row m (the same mapping as out_row in conv_wgmma.cu).
JHDNN_TMA_BOX_HD inline void tile_row_offset(int bw, int bh, int m, int& dq, int& dp, int& dn) {
  dq = m % bw;
  dp = (m / bw) % bh;
  dn = m / (bw * bh);
}

// Offsets (q, p, n) from the tile origin of the box of the warp owning rows m_base .. m_base + 15.
JHDNN_TMA_BOX_HD inline void tma_store_origin(int bw, int bh, int m_base, int& dq, int& dp, int& dn) {
  tile_row_offset(bw, bh, m_base, dq, dp, dn);
}

// Offsets (q, p, n) from the box origin of the box's shared-memory row j (TMA order: w fastest).
JHDNN_TMA_BOX_HD inline void tma_store_box_row(const TmaStoreBox& b, int j, int& dq, int& dp, int& dn) {
  dq = j % b.w;
  dp = (j / b.w) % b.h;
  dn = j / (b.w * b.h);
}

// Byte offset of the 16-byte unit `chunk` (8 channels) of staged row r (< 16) in a warp's 2 KiB
// buffer: TMA's 128-byte swizzle (the buffer is 1024-byte aligned, so the pattern's address bits
// 7..9 are r % 8): unit index XOR r % 8. The 8 rows of one stmatrix matrix (same unit, rows 8h ..
// 8h + 7) land on 8 different 16-byte bank groups (scripts/check_epilogue_banks.py checks it).
JHDNN_TMA_BOX_HD inline unsigned tma_stage_off(int r, int chunk) {
  return unsigned(r * 128 + ((chunk ^ (r & 7)) << 4));
}

}  // namespace jhdnn::conv::tensorcore

#undef JHDNN_TMA_BOX_HD
