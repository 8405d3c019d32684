// tensorcore_wgmma_smallc: small-channel layers (C = 3 first layers) on the wgmma kernel, through a
// "row-packed" copy of x in the workspace (README.md in this folder, "Round 6", section 1). Host
// planning (the fold F, the packed problem, the workspace) and the element mapping of the two
// packing passes, shared by the CUDA kernels (conv_wgmma_smallc.cu) and the CPU test
// (tests/test_wgmma_smallc.cpp) that checks the transform against the float64 reference without a GPU.
//
// The transform. TMA needs 16-byte pixel strides, so x with C = 3 cannot feed the wgmma kernel, and
// padding C alone would leave most of the 128-byte reduction block of every stage empty. Instead
// the S filter columns AND F consecutive filter rows are folded into the channels:
//
//   B  = one reduction block: 64 elements (fp16 / bf16) or 32 (fp32) = 128 bytes
//   R' = ceil(R / F)      Hp = (P-1)*sh + (R'-1)*F*dh + 1      Cs = round_up(F*S*C, B)
//   xs[n][u][q][j] = x[n, c, u - ph + t*dh, q*sw - pw + s*dw]   j = (t*S + s)*C + c < F*S*C
//                    (0 outside the image, in h and in w; 0 for F*S*C <= j < Cs)
//   ws[k][r'][0][j] = w[k, c, r'*F + t, s]   (mirrored taps (R-1-r, S-1-s) in CONVOLUTION mode;
//                    0 when r'*F + t >= R or j >= F*S*C)
//
// and the original problem equals the cross-correlation of xs (packed NHWC: N x Hp x Q x Cs) with ws
// (packed KRSC: K x R' x 1 x Cs), pad 0 / 0, stride (sh, 1), dilation (F*dh, 1), same P, Q and y:
//   y[n,k,p,q] = sum_r' sum_j xs[n][p*sh + r'*F*dh][q][j] * ws[k][r'][j]
// (row u = p*sh + r'*F*dh of xs holds x rows p*sh - ph + (r'*F + t)*dh, t < F: filter row r'*F + t).
// The h padding is materialized (rows of zeros), so every row the kernel reads is inside xs.
// Whole 128-byte pixel rows matter: a TMA box whose 128-byte inner row is only partly inside the
// tensor loads much slower than a full row (H200, README table). F is chosen by smallc_pick_fold.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/conv_problem.h"

#if defined(__CUDACC__)
#define JHDNN_SMALLC_FN __host__ __device__ __forceinline__
#else
#define JHDNN_SMALLC_FN inline
#endif

namespace jhdnn::conv::tensorcore {

// The packed pixel holds at most this many elements (the tap table's size; 2 reduction blocks of
// fp16, 4 of fp32). F = 1 always fits: the shape rule asks S*C <= B <= 128.
constexpr int kSmallCMaxCs = 128;
// Rows / columns (with padding) below 2^30: the pack kernel forms h and w in 32-bit integers and
// marks padding taps with an offset of -2^30.
constexpr int64_t kSmallCCoordLimit = int64_t(1) << 30;

// What the packing passes need, flat (a kernel parameter).
struct SmallCGeom {
  int64_t N, C, H, W, K, R, S, Q;
  int64_t F, Rf, Hp, Cs;  // fold, R' = ceil(R / F), packed rows, packed channels
  int pad_h, pad_w, str_w, dil_h, dil_w, flip;
  int64_t xs[5];   // x strides (n, c, d, h, w), elements
  int64_t wst[5];  // w strides (k, c, t, r, s), elements
};

// One packed channel j of a pixel: where its element sits relative to the pixel's window corner
// x[n, 0, u - ph, q*sw - pw], and its h / w offsets (t*dh, s*dw) for the bounds checks. j >= F*S*C
// (the zero channels): dh = -2^30, so the h check always fails. Built on the host (smallc_taps),
// so the kernel does no division per element.
struct alignas(16) SmallCTap {
  int64_t off;  // c*xs[1] + t*dh*xs[3] + s*dw*xs[4]
  int32_t dh, dw;
};
struct SmallCTaps {
  SmallCTap tap[kSmallCMaxCs];
};

// The closed form, with divisions (the tests' check of the table): offset in x of xs[n][u][q][j],
// or -1 when that element is a zero (j >= F*S*C, or outside the image).
JHDNN_SMALLC_FN int64_t smallc_x_source(const SmallCGeom& g, int64_t n, int64_t u, int64_t q, int64_t j) {
  if (j >= g.F * g.S * g.C) return -1;
  const int64_t t = j / (g.S * g.C), s = (j / g.C) % g.S, c = j % g.C;
  const int64_t h = u - g.pad_h + t * g.dil_h, w = q * g.str_w - g.pad_w + s * g.dil_w;
  if (h < 0 || h >= g.H || w < 0 || w >= g.W) return -1;
  return n * g.xs[0] + c * g.xs[1] + h * g.xs[3] + w * g.xs[4];
}

// Offset in w of ws[k][r'][0][j], or -1 when that element is a zero (j >= F*S*C, or filter row
// r'*F + t >= R).
JHDNN_SMALLC_FN int64_t smallc_w_source(const SmallCGeom& g, int64_t k, int64_t rf, int64_t j) {
  if (j >= g.F * g.S * g.C) return -1;
  const int64_t t = j / (g.S * g.C), s = (j / g.C) % g.S, c = j % g.C;
  const int64_t r = rf * g.F + t;
  if (r >= g.R) return -1;
  const int64_t rr = g.flip ? g.R - 1 - r : r, ss = g.flip ? g.S - 1 - s : s;
  return k * g.wst[0] + c * g.wst[1] + rr * g.wst[3] + ss * g.wst[4];
}

// The pack pass's element mapping: the V elements of one 16-byte vector of packed pixel (n, u, q),
// channels j = v*V .. v*V + V-1, given that vector's V taps (tv = the tap table + v*V). The kernel
// (taps held in registers across the pixels a thread writes) and the CPU test run this same
// function; the test also checks it against smallc_x_source.
template <class U, int V>
JHDNN_SMALLC_FN void smallc_x_vector(const SmallCGeom& g, const SmallCTap* tv, const U* x, int64_t n, int64_t u,
                                     int64_t q, U (&out)[V]) {
  const int32_t h0 = int32_t(u - g.pad_h), w0 = int32_t(q * g.str_w - g.pad_w);
  const int64_t base = n * g.xs[0] + int64_t(h0) * g.xs[3] + int64_t(w0) * g.xs[4];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int e = 0; e < V; ++e) {
    const SmallCTap tp = tv[e];
    const int32_t h = h0 + tp.dh, w = w0 + tp.dw;  // |h|, |w| < 2^31 by kSmallCCoordLimit
    const bool in = uint32_t(h) < uint32_t(g.H) && uint32_t(w) < uint32_t(g.W);
    out[e] = in ? x[base + tp.off] : U(0);
  }
}

// The pack pass's work split (conv_wgmma_smallc.cu, smallc_pack_x; the CPU test packs through the
// same functions). A packed pixel is vp = Cs / V 16-byte vectors (8, 16, 24 or 32). Thread t of a
// block of kSmallCPackThreads owns vector v = t % vp of pixel slot t / vp (ppi = threads / vp slots;
// the threads % vp left over when vp = 24 idle), so one iteration writes ppi whole pixels =
// ppi * vp consecutive vectors (up to 4 KiB; a warp writes 512 contiguous bytes). Block b serves
// packed row (n, u) = b / chunks and pixels q = q0 + k * ppi, k < kSmallCPackIters, of chunk
// b % chunks. Two block-uniform 32-bit divisions (row, n), one per thread (slot), none per element.
constexpr int kSmallCPackThreads = 256;
constexpr int kSmallCPackIters = 4;

struct SmallCPackSlot {
  uint32_t n, u, row, v, q0, ppi, vp;
  bool active;
};

JHDNN_SMALLC_FN SmallCPackSlot smallc_pack_slot(const SmallCGeom& g, int V, uint32_t chunks, uint32_t block,
                                                uint32_t thread) {
  SmallCPackSlot s;
  s.vp = uint32_t(g.Cs) / uint32_t(V);
  s.ppi = kSmallCPackThreads / s.vp;
  const uint32_t slot = thread / s.vp;
  s.v = thread - slot * s.vp;
  s.active = slot < s.ppi;
  s.row = block / chunks;
  const uint32_t chunk = block - s.row * chunks;
  s.n = s.row / uint32_t(g.Hp);
  s.u = s.row - s.n * uint32_t(g.Hp);
  s.q0 = chunk * (s.ppi * kSmallCPackIters) + slot;
  return s;
}

// The row-staged pack pass (smallc_pack_x_rows; the default when smallc_rows_per_block > 0). A block
// serves k CONSECUTIVE packed rows u0 .. u0+k-1 of one image n (smallc_row_block; the last block of
// an image may have fewer). Those rows read the x rows u0 - ph + i + t*dh (i < k, t < F): one
// window of k + (F-1)*dh consecutive x rows, which the block first copies whole into shared memory
// as stage[r][w][c], x row u0 - ph + r, at a row pitch of smallc_stage_pitch elements (zeros for
// rows outside the image) -- consecutive packed rows share F-1 of their F rows (dh = 1), so x is
// read (k + F - 1) / k times instead of F times. For an
// NHWC x whose rows start 16-byte aligned the copy is 16-byte loads of one contiguous run per row
// (smallc_stage_vector); otherwise element by element through the strides (smallc_stage_source).
// After one barrier the block writes its k*Q pixels with the work split of the direct pass (thread:
// vector v of pixel slot; pixels slot, slot + ppi, ... of the k rows in order, smallc_row_cursor),
// each element a shared-memory read at smallc_row_index. The direct pass above gathers every
// element from global memory with a 2-byte load (ResNet-50 conv1 fp16: 52 M loads for 105 MB, 84 us
// on the H200, bound by them -- fp32, half the loads, 53 us).
constexpr int64_t kSmallCRowBytes = 48 * 1024;  // the staged window ((k + (F-1)*dh) * pitch elements), at most
constexpr int64_t kSmallCRowsPerBlockMax = 8;   // packed rows per block, at most
constexpr int64_t kSmallCRowPixels = 512;       // pixels per block aimed at: k = 512 / Q, clamped to [1, 8]

// Per packed channel j: soff = t*dh*pitch + s*dw*C + c (its staged element for packed row i = 0 of
// the block and the window corner w0 = 0) and dw = s*dw (the w bounds check); zero channels
// (j >= F*S*C): dw = -2^30, the check fails. soff is kept modulo 2^32: s*dw*C alone may pass 2^31
// (dw < 2^30 since Q >= 1), but whenever the element is inside the image i*pitch + soff + w0*C is
// its true index, below the staged size < 2^31.
struct SmallCRowTaps {
  uint32_t soff[kSmallCMaxCs];
  int32_t dw[kSmallCMaxCs];
};
SmallCRowTaps smallc_row_taps(const SmallCGeom& g, int64_t pitch);
// The staged row pitch, in elements: W*C rounded up to 16 bytes, plus d*16 bytes (d in 0 .. 7) for
// the d whose bank pattern is best (smallc_stage_wavefronts, the smaller d on a tie). The F rows a
// pixel reads sit t*dh*pitch apart; with pitch*elem a multiple of 128 bytes (or close to one) the
// same pixel's F runs land on the same banks (ResNet-50 conv1 fp16: 1344-byte rows, 2.25 modeled
// wavefronts per 2-byte load at d = 0, 2 at the pick; VGG conv1_1 fp16: 2 -> 1).
int64_t smallc_stage_pitch(const SmallCGeom& g, int64_t elem_bytes);
// The bank model: shared-memory wavefronts of phase 2's V loads of one 16-byte vector, summed over
// the first 2 warps of a block (64 threads on consecutive pixels from the middle of a packed row;
// the pattern repeats warp after warp): a wavefront per distinct 4-byte word in the busiest of the
// 32 banks, per load instruction.
int64_t smallc_stage_wavefronts(const SmallCGeom& g, int64_t elem_bytes, int64_t pitch);
// k, the packed rows per block of the row-staged pass: kSmallCRowPixels / Q clamped to
// [1, kSmallCRowsPerBlockMax] and to Hp, then lowered until the staged window fits kSmallCRowBytes;
// 0 when not even one row's window (1 + (F-1)*dh rows at smallc_stage_pitch) fits: the direct pass
// runs.
int64_t smallc_rows_per_block(const SmallCGeom& g, int64_t elem_bytes);
// The same for a given pitch (the launch computes the pitch once).
int64_t smallc_rows_per_block(const SmallCGeom& g, int64_t elem_bytes, int64_t pitch);
// Whether the window copy may use V-element (16-byte) vectors, the pointer's alignment aside (the
// launch checks x % 16 == 0): unit channel stride, w stride C (a row is W*C contiguous elements),
// n and h strides and W*C multiples of V (every staged row starts 16-byte aligned in x and in
// shared memory).
bool smallc_stage_vectorized(const SmallCGeom& g, int V);

// Block b of the row-staged pass: image n, first packed row u0, rows (1 .. k) it writes; chunks =
// ceil(Hp / k) blocks per image. One block-uniform division.
struct SmallCRowBlock {
  uint32_t n, u0, rows;
};
JHDNN_SMALLC_FN uint32_t smallc_row_chunks(const SmallCGeom& g, uint32_t k) { return (uint32_t(g.Hp) + k - 1) / k; }
JHDNN_SMALLC_FN SmallCRowBlock smallc_row_block(const SmallCGeom& g, uint32_t k, uint32_t chunks, uint32_t block) {
  SmallCRowBlock b;
  b.n = block / chunks;
  b.u0 = (block - b.n * chunks) * k;
  b.rows = uint32_t(g.Hp) - b.u0 < k ? uint32_t(g.Hp) - b.u0 : k;
  return b;
}
// The x rows a block stages: rows + (F-1)*dh (the shared allocation is for k rows).
JHDNN_SMALLC_FN uint32_t smallc_stage_rows(const SmallCGeom& g, uint32_t rows) {
  return rows + uint32_t(g.F - 1) * uint32_t(g.dil_h);
}

// Offset in x of staged element i = w*C + c of staged row r (x row u0 - ph + r of image n; at
// r*pitch + i in the stage), or -1 when that row is outside the image (the stage holds zeros). The
// element-wise copy; for a contiguous row the kernel uses n*xs[0] + h*xs[3] + i instead (equal: the
// CPU test checks it).
JHDNN_SMALLC_FN int64_t smallc_stage_source(const SmallCGeom& g, int64_t n, int64_t u0, int64_t r, int64_t i) {
  const int64_t h = u0 - g.pad_h + r;
  if (h < 0 || h >= g.H) return -1;
  const int64_t w = i / g.C, c = i - w * g.C;
  return n * g.xs[0] + c * g.xs[1] + h * g.xs[3] + w * g.xs[4];
}

// The vectorized copy (smallc_stage_vectorized): vector m of the window (staged row r = m / rowvec,
// elements col*V .. col*V + V-1 of it, never across a row since V divides W*C; rowvec = W*C / V)
// comes from x at the returned offset (V contiguous elements), or is zeros (-1: the row is outside
// the image). It goes to stage vector r * (pitch / V) + col. One 32-bit division per vector.
JHDNN_SMALLC_FN int64_t smallc_stage_vector(const SmallCGeom& g, int V, uint32_t rowvec, uint32_t n, uint32_t u0,
                                            uint32_t m, uint32_t& r, uint32_t& col) {
  r = m / rowvec, col = m - r * rowvec;
  const int64_t h = int64_t(u0) - g.pad_h + int64_t(r);
  if (h < 0 || h >= g.H) return -1;
  return int64_t(n) * g.xs[0] + h * g.xs[3] + int64_t(col) * V;
}

// A thread's walk over the block's k*Q pixels (pixel p = i*Q + q: packed row u0 + i, column q),
// p = slot, slot + ppi, ...: no division per pixel (one per thread).
struct SmallCRowCursor {
  uint32_t i, q, p;
};
JHDNN_SMALLC_FN SmallCRowCursor smallc_row_cursor(const SmallCGeom& g, uint32_t slot) {
  SmallCRowCursor c;
  c.i = slot / uint32_t(g.Q);
  c.q = slot - c.i * uint32_t(g.Q);
  c.p = slot;
  return c;
}
JHDNN_SMALLC_FN void smallc_row_advance(const SmallCGeom& g, uint32_t ppi, SmallCRowCursor& c) {
  c.p += ppi;
  c.q += ppi;
  while (c.q >= uint32_t(g.Q)) c.q -= uint32_t(g.Q), ++c.i;  // ppi <= 32 iterations when Q = 1; one at most when ppi <= Q
}

// Pixel q of packed row u0 + i in the stage: its window corner w0 = q*sw - pw and base =
// i*pitch + w0*C (modulo 2^32), computed once per pixel; its element j (taps soff, dw) is inside the
// image when smallc_row_in and then sits at smallc_row_at = soff + base, the element's true
// position (i + t*dh)*pitch + w*C + c < staged size < 2^31 (kSmallCRowBytes) -- the modular sum is
// exact. The kernel runs these three; smallc_row_index composes them (the CPU test, the bank model).
struct SmallCRowPixel {
  int32_t w0;
  uint32_t base;
};
JHDNN_SMALLC_FN SmallCRowPixel smallc_row_pixel(const SmallCGeom& g, uint32_t pitch, uint32_t i, uint32_t q) {
  SmallCRowPixel px;
  px.w0 = int32_t(int64_t(q) * g.str_w - g.pad_w);  // |w0| < 2^30, |dw| <= 2^30: w0 + dw does not overflow
  px.base = i * pitch + uint32_t(px.w0) * uint32_t(g.C);
  return px;
}
JHDNN_SMALLC_FN bool smallc_row_in(const SmallCGeom& g, SmallCRowPixel px, int32_t dw) {
  return uint32_t(px.w0 + dw) < uint32_t(g.W);  // a zero channel's dw = -2^30 always fails
}
JHDNN_SMALLC_FN uint32_t smallc_row_at(SmallCRowPixel px, uint32_t soff) { return soff + px.base; }

// Index into the stage of packed channel j (its taps soff, dw) of packed row u0 + i, pixel q, or -1
// for a zero (w outside the image, or a zero channel).
JHDNN_SMALLC_FN int32_t smallc_row_index(const SmallCGeom& g, uint32_t pitch, uint32_t soff, int32_t dw, uint32_t i,
                                         uint32_t q) {
  const SmallCRowPixel px = smallc_row_pixel(g, pitch, i, q);
  return smallc_row_in(g, px, dw) ? int32_t(smallc_row_at(px, soff)) : -1;
}

// B: the elements of one 128-byte reduction block (64 fp16 / bf16, 32 fp32).
int64_t smallc_block_elems(jhdnnDataType_t dt);

// Why fold F cannot serve p (nullptr: it can): F in [1, R], F*S*C rounded to B at most
// kSmallCMaxCs, F*dh an int. Assumes smallc_shape_reason(p) == nullptr.
const char* smallc_fold_reason(const core::ConvProblem& p, int64_t F);

// The cost model (bytes moved through memory, smaller is better):
//   cost(F) = N*P*Q * blocks(F) * 128        A bytes the wgmma kernel loads: blocks(F) = R' * Cs / B
//           + 2 * N*Hp*Q*Cs * elem_size      the pack writes xs, the kernel reads it
// Infinity for a fold smallc_fold_reason refuses.
double smallc_fold_cost(const core::ConvProblem& p, int64_t F);
// The F in [1, R] of least cost (the smaller F on a tie).
int64_t smallc_pick_fold(const core::ConvProblem& p);

// fold 0: smallc_pick_fold(p). fold must be valid for p (smallc_fold_reason).
SmallCGeom smallc_geom(const core::ConvProblem& p, int64_t fold = 0);
SmallCTaps smallc_taps(const SmallCGeom& g);
// The pack_x launch: chunks per packed row (blocks = N * Hp * chunks), for V-element vectors.
int64_t smallc_pack_chunks(const SmallCGeom& g, int V);

// The packed problem (xs, ws as above, the caller's y strides, math and compute types kept).
core::ConvProblem smallc_problem(const core::ConvProblem& p, int64_t fold = 0);

// Why the small-channel path does not take p (nullptr: it does), from the shape alone -- the
// device and math-type checks are the wgmma solver's, applied to smallc_problem(p), and the solver
// also leaves to tensorcore_wgmma what that one takes without a copy:
//   2-D, groups 1, a 16-bit or fp32 data type; S*C fits one reduction block (S*C <= 64 for 16-bit
//   data, 32 for fp32: more would multiply the copy without saving blocks); stride_h <= 8 (TMA
//   traversal stride); H + 2*ph and W + 2*pw below 2^30; the packed x below 2^31 pixels (for
//   every F: Hp is largest at F = 1).
const char* smallc_shape_reason(const core::ConvProblem& p);

// Workspace: xs, then ws at a 256-byte boundary, plus 256 bytes so that any caller pointer can be
// aligned up to 256 (TMA needs 16-byte aligned tensors). fold 0: smallc_pick_fold(p).
constexpr size_t kSmallCAlign = 256;
size_t smallc_x_bytes(const core::ConvProblem& p, int64_t fold = 0);
size_t smallc_w_bytes(const core::ConvProblem& p, int64_t fold = 0);
size_t smallc_workspace_bytes(const core::ConvProblem& p, int64_t fold = 0);

}  // namespace jhdnn::conv::tensorcore

#undef JHDNN_SMALLC_FN
