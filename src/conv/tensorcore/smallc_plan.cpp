// Host-only planning of tensorcore_wgmma_smallc (see smallc.h and README.md, "Round 6", section 1):
// the fold F, the packed problem, the tap table of the pack pass, the workspace.
#include "conv/tensorcore/smallc.h"

#include <algorithm>
#include <climits>
#include <limits>

namespace jhdnn::conv::tensorcore {

namespace {

int64_t elem_size(jhdnnDataType_t dt) { return dt == JHDNN_DATA_FLOAT ? 4 : 2; }
int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t resolve(const core::ConvProblem& p, int64_t fold) { return fold > 0 ? fold : smallc_pick_fold(p); }
// The packed sizes for fold F (smallc.h).
int64_t packed_channels(const core::ConvProblem& p, int64_t F) { return round_up(F * p.S * p.C, smallc_block_elems(p.dtype)); }
int64_t packed_filter_rows(const core::ConvProblem& p, int64_t F) { return ceil_div(p.R, F); }
int64_t packed_rows(const core::ConvProblem& p, int64_t F) {
  return (p.P - 1) * p.stride_h + (packed_filter_rows(p, F) - 1) * F * p.dil_h + 1;
}

}  // namespace

int64_t smallc_block_elems(jhdnnDataType_t dt) { return 128 / elem_size(dt); }

const char* smallc_fold_reason(const core::ConvProblem& p, int64_t F) {
  if (F < 1 || F > p.R) return "the fold F must be in [1, R]";
  if (F * p.S * p.C > kSmallCMaxCs || packed_channels(p, F) > kSmallCMaxCs)
    return "F*S*C rounded up to a 128-byte block is more than the pack pass's 128-element table";
  if (F * p.dil_h > INT_MAX) return "F*dil_h does not fit an int";
  return nullptr;
}

double smallc_fold_cost(const core::ConvProblem& p, int64_t F) {
  if (smallc_fold_reason(p, F) != nullptr) return std::numeric_limits<double>::infinity();
  const double blocks = double(packed_filter_rows(p, F)) * double(packed_channels(p, F) / smallc_block_elems(p.dtype));
  const double a_bytes = double(p.N) * double(p.P) * double(p.Q) * blocks * 128.0;
  const double xs_bytes = double(p.N) * double(packed_rows(p, F)) * double(p.Q) * double(packed_channels(p, F)) *
                          double(elem_size(p.dtype));
  return a_bytes + 2.0 * xs_bytes;
}

int64_t smallc_pick_fold(const core::ConvProblem& p) {
  int64_t best = 1;
  double best_cost = smallc_fold_cost(p, 1);
  for (int64_t F = 2; F <= p.R; ++F) {
    const double c = smallc_fold_cost(p, F);
    if (c < best_cost) best = F, best_cost = c;
  }
  return best;
}

SmallCGeom smallc_geom(const core::ConvProblem& p, int64_t fold) {
  const int64_t F = resolve(p, fold);
  SmallCGeom g{};
  g.N = p.N, g.C = p.C, g.H = p.H, g.W = p.W, g.K = p.K, g.R = p.R, g.S = p.S, g.Q = p.Q;
  g.F = F, g.Rf = packed_filter_rows(p, F), g.Hp = packed_rows(p, F), g.Cs = packed_channels(p, F);
  g.pad_h = p.pad_h, g.pad_w = p.pad_w, g.str_w = p.stride_w, g.dil_h = p.dil_h, g.dil_w = p.dil_w;
  g.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  for (int i = 0; i < 5; ++i) g.xs[i] = p.x_stride[i], g.wst[i] = p.w_stride[i];
  return g;
}

SmallCTaps smallc_taps(const SmallCGeom& g) {
  SmallCTaps t{};
  for (int64_t j = 0; j < kSmallCMaxCs; ++j) {
    SmallCTap& tp = t.tap[j];
    if (j < g.F * g.S * g.C) {
      const int64_t tt = j / (g.S * g.C), s = (j / g.C) % g.S, c = j % g.C;
      tp.dh = int32_t(tt * g.dil_h), tp.dw = int32_t(s * g.dil_w);
      tp.off = c * g.xs[1] + int64_t(tp.dh) * g.xs[3] + int64_t(tp.dw) * g.xs[4];
    } else {
      tp.off = 0, tp.dh = -int32_t(kSmallCCoordLimit), tp.dw = 0;  // a zero channel: the h check fails
    }
  }
  return t;
}

SmallCRowTaps smallc_row_taps(const SmallCGeom& g, int64_t pitch) {
  SmallCRowTaps t{};
  for (int64_t j = 0; j < kSmallCMaxCs; ++j) {
    if (j < g.F * g.S * g.C) {
      const int64_t tt = j / (g.S * g.C), s = (j / g.C) % g.S, c = j % g.C;
      t.dw[j] = int32_t(s * g.dil_w);  // < 2^30: (S-1)*dil_w < W + 2*pad_w since Q >= 1
      t.soff[j] = uint32_t(uint64_t(tt * g.dil_h * pitch + s * g.dil_w * g.C + c));  // modulo 2^32 (smallc.h)
    } else {
      t.dw[j] = -int32_t(kSmallCCoordLimit), t.soff[j] = 0;  // a zero channel: the w check fails
    }
  }
  return t;
}

namespace {

// The bank model's sample (smallc_stage_wavefronts): the first 2 warps of a block, V loads each,
// lane by lane the staged row (i + t*dh) and column (w*C + c) it reads, row -1 for none (an idle
// thread, a zero channel, w outside the image). Divisions here, once per launch, not per pitch.
constexpr int kBankWarps = 2;
struct BankSample {
  int64_t row[kBankWarps][16][32], col[kBankWarps][16][32];
};

void bank_sample(const SmallCGeom& g, int64_t elem_bytes, BankSample& b) {
  const int64_t V = 16 / elem_bytes, vp = g.Cs / V, ppi = kSmallCPackThreads / vp, fsc = g.F * g.S * g.C;
  for (int64_t warp = 0; warp < kBankWarps; ++warp)
    for (int64_t e = 0; e < V; ++e)
      for (int64_t lane = 0; lane < 32; ++lane) {
        int64_t& row = b.row[warp][e][lane];
        row = -1;
        const int64_t t = warp * 32 + lane, slot = t / vp, j = (t % vp) * V + e;
        if (slot >= ppi || j >= fsc) continue;
        const int64_t px = g.Q / 2 + slot, i = px / g.Q, q = px % g.Q;  // pixels from the middle of row 0
        const int64_t tt = j / (g.S * g.C), ss = (j / g.C) % g.S, c = j % g.C;
        const int64_t w = q * g.str_w - g.pad_w + ss * g.dil_w;
        if (w < 0 || w >= g.W) continue;
        row = i + tt * g.dil_h, b.col[warp][e][lane] = w * g.C + c;
      }
}

// Wavefronts of the sample at this pitch: per load, the distinct 4-byte words of the busiest bank.
int64_t bank_wavefronts(const BankSample& b, int64_t elem_bytes, int64_t pitch) {
  int64_t total = 0;
  for (int warp = 0; warp < kBankWarps; ++warp)
    for (int64_t e = 0; e < 16 / elem_bytes; ++e) {
      int64_t words[32][32];
      int count[32] = {}, busiest = 0;
      for (int lane = 0; lane < 32; ++lane) {
        if (b.row[warp][e][lane] < 0) continue;
        const int64_t word = (b.row[warp][e][lane] * pitch + b.col[warp][e][lane]) * elem_bytes / 4, bank = word % 32;
        bool seen = false;
        for (int k = 0; k < count[bank]; ++k) seen = seen || words[bank][k] == word;
        if (!seen) words[bank][count[bank]++] = word, busiest = std::max(busiest, count[bank]);
      }
      total += busiest;
    }
  return total;
}

}  // namespace

int64_t smallc_stage_wavefronts(const SmallCGeom& g, int64_t elem_bytes, int64_t pitch) {
  BankSample b;
  bank_sample(g, elem_bytes, b);
  return bank_wavefronts(b, elem_bytes, pitch);
}

int64_t smallc_stage_pitch(const SmallCGeom& g, int64_t elem_bytes) {
  BankSample b;
  bank_sample(g, elem_bytes, b);
  const int64_t V = 16 / elem_bytes, base = round_up(g.W * g.C, V);
  int64_t best = base, best_w = bank_wavefronts(b, elem_bytes, base);
  for (int64_t d = 1; d < 128 / 16; ++d) {
    const int64_t w = bank_wavefronts(b, elem_bytes, base + d * V);
    if (w < best_w) best = base + d * V, best_w = w;
  }
  return best;
}

int64_t smallc_rows_per_block(const SmallCGeom& g, int64_t elem_bytes) {
  return smallc_rows_per_block(g, elem_bytes, smallc_stage_pitch(g, elem_bytes));
}

int64_t smallc_rows_per_block(const SmallCGeom& g, int64_t elem_bytes, int64_t pitch) {
  // About 512 pixels per block: ResNet-50 conv1 (Q = 112) k = 4, VGG-16 conv1_1 (Q = 224) k = 2 --
  // the staging and the barrier amortized over ~14 16-byte stores per thread, while the grid keeps
  // > 3 waves of resident blocks on 132 SMs (README, "Passes").
  int64_t k = std::max<int64_t>(1, std::min<int64_t>({kSmallCRowPixels / g.Q, kSmallCRowsPerBlockMax, g.Hp}));
  const int64_t extra = (g.F - 1) * g.dil_h;
  // Neither a row nor the extra rows alone may pass the limit (before the pitch's bank model; F*dh
  // is an int, so no product below overflows).
  if (g.W * g.C * elem_bytes > kSmallCRowBytes || extra >= kSmallCRowBytes) return 0;
  const int64_t row_bytes = pitch * elem_bytes;
  while (k > 0 && (k + extra) * row_bytes > kSmallCRowBytes) --k;
  return k;
}

bool smallc_stage_vectorized(const SmallCGeom& g, int V) {
  return g.xs[1] == 1 && g.xs[4] == g.C && g.xs[0] % V == 0 && g.xs[3] % V == 0 && (g.W * g.C) % V == 0;
}

int64_t smallc_pack_chunks(const SmallCGeom& g, int V) {
  const int64_t per_block = int64_t(kSmallCPackThreads) / (g.Cs / V) * kSmallCPackIters;  // pixels
  return ceil_div(g.Q, per_block);
}

core::ConvProblem smallc_problem(const core::ConvProblem& p, int64_t fold) {
  const int64_t F = resolve(p, fold);
  core::ConvProblem q = core::make_problem_2d(p.dtype, /*nhwc=*/true, p.N, packed_channels(p, F), packed_rows(p, F), p.Q,
                                              p.K, packed_filter_rows(p, F), /*S=*/1, /*pad_h=*/0, /*pad_w=*/0,
                                              p.stride_h, /*stride_w=*/1, int(F * p.dil_h), /*dil_w=*/1, /*G=*/1,
                                              JHDNN_CROSS_CORRELATION);
  q.compute_type = p.compute_type;
  q.math_type = p.math_type;
  for (int i = 0; i < 5; ++i) q.y_stride[i] = p.y_stride[i];
  return q;
}

const char* smallc_shape_reason(const core::ConvProblem& p) {
  if (p.dtype != JHDNN_DATA_HALF && p.dtype != JHDNN_DATA_BFLOAT16 && p.dtype != JHDNN_DATA_FLOAT)
    return "HALF, BFLOAT16 or FLOAT data only";
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1) return "2-D convolutions only";
  if (p.G != 1) return "groups are served by tensorcore_mma";
  if (p.N < 1 || p.C < 1 || p.H < 1 || p.W < 1 || p.K < 1 || p.R < 1 || p.S < 1 || p.P < 1 || p.Q < 1)
    return "empty problem";
  if (p.pad_h < 0 || p.pad_w < 0 || p.stride_h < 1 || p.stride_w < 1 || p.dil_h < 1 || p.dil_w < 1)
    return "negative padding or non-positive stride / dilation";
  if (p.S * p.C * elem_size(p.dtype) > 128)
    return "S*C is more than one 128-byte reduction block (the packed copy would not save blocks)";
  if (p.stride_h > 8) return "TMA traversal strides are at most 8";
  if (p.H + 2 * int64_t(p.pad_h) >= kSmallCCoordLimit || p.W + 2 * int64_t(p.pad_w) >= kSmallCCoordLimit)
    return "H + 2*pad_h and W + 2*pad_w must be below 2^30";
  // Hp is largest at F = 1 ((ceil(R/F) - 1) * F <= R - 1), so this bounds every fold.
  if (p.N * packed_rows(p, 1) * p.Q >= (int64_t(1) << 31)) return "the packed x has 2^31 pixels or more";
  return nullptr;
}

size_t smallc_x_bytes(const core::ConvProblem& p, int64_t fold) {
  const int64_t F = resolve(p, fold);
  return size_t(round_up(p.N * packed_rows(p, F) * p.Q * packed_channels(p, F) * elem_size(p.dtype), int64_t(kSmallCAlign)));
}

size_t smallc_w_bytes(const core::ConvProblem& p, int64_t fold) {
  const int64_t F = resolve(p, fold);
  return size_t(round_up(p.K * packed_filter_rows(p, F) * packed_channels(p, F) * elem_size(p.dtype), int64_t(kSmallCAlign)));
}

size_t smallc_workspace_bytes(const core::ConvProblem& p, int64_t fold) {
  return smallc_x_bytes(p, fold) + smallc_w_bytes(p, fold) + kSmallCAlign;
}

}  // namespace jhdnn::conv::tensorcore
