// float64 CPU reference convolution. See reference.h for the contract.
#include "common/reference.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace jhdnn::test {
namespace {

// A strided 5-D tensor (dims n, c, d, h, w) copied packed as n, d, h, w, c; with mirror, the three
// spatial axes are read reversed (the CONVOLUTION-mode filter flip).
std::vector<double> pack_channels_last(const double* src, const int64_t dims[5], const int64_t st[5], bool mirror) {
  std::vector<double> out(static_cast<size_t>(dims[0] * dims[1] * dims[2] * dims[3] * dims[4]));
  size_t i = 0;
  for (int64_t n = 0; n < dims[0]; ++n)
    for (int64_t d = 0; d < dims[2]; ++d)
      for (int64_t h = 0; h < dims[3]; ++h)
        for (int64_t w = 0; w < dims[4]; ++w) {
          const int64_t ds = mirror ? dims[2] - 1 - d : d, hs = mirror ? dims[3] - 1 - h : h,
                        ws = mirror ? dims[4] - 1 - w : w;
          const double* at = src + n * st[0] + ds * st[2] + hs * st[3] + ws * st[4];
          for (int64_t c = 0; c < dims[1]; ++c) out[i++] = at[c * st[1]];
        }
  return out;
}


// The filter taps [lo, hi) of one spatial dimension that land inside the input for output index
// `out`: in = out*stride - pad + tap*dil must satisfy 0 <= in < in_size. Computing these once per
// output coordinate takes every bounds check out of the inner loops.
struct TapRange {
  int64_t lo, hi;
};

std::vector<TapRange> tap_ranges(int64_t out_size, int64_t in_size, int64_t filt, int pad, int stride,
                                 int dil) {
  std::vector<TapRange> r(static_cast<size_t>(out_size));
  for (int64_t o = 0; o < out_size; ++o) {
    const int64_t base = o * stride - pad;  // input coordinate of tap 0
    int64_t lo = base >= 0 ? 0 : (-base + dil - 1) / dil;
    int64_t hi = base > in_size - 1 ? 0 : std::min<int64_t>(filt, (in_size - 1 - base) / dil + 1);
    if (hi < lo) hi = lo;
    r[static_cast<size_t>(o)] = {lo, hi};
  }
  return r;
}

// Dot product of two contiguous runs. Four partial sums break the floating-point add chain
// (the loop is latency bound otherwise); in double the reordering costs nothing measurable.
inline double dot(const double* a, const double* b, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

void check_problem(const core::ConvProblem& p) {
  if (p.N < 0 || p.C < 0 || p.K < 0 || p.D < 0 || p.H < 0 || p.W < 0 || p.T < 0 || p.R < 0 ||
      p.S < 0 || p.O < 0 || p.P < 0 || p.Q < 0)
    throw std::invalid_argument("conv reference: negative size");
  if (p.G <= 0 || p.C % p.G != 0 || p.K % p.G != 0)
    throw std::invalid_argument("conv reference: C and K must be multiples of G > 0");
  if (p.stride_d <= 0 || p.stride_h <= 0 || p.stride_w <= 0 || p.dil_d <= 0 || p.dil_h <= 0 ||
      p.dil_w <= 0)
    throw std::invalid_argument("conv reference: stride and dilation must be positive");
}

}  // namespace

void conv_fwd_reference(const core::ConvProblem& p, const double* x, const double* w, double* y,
                        double alpha, double beta) {
  check_problem(p);
  if (p.y_elems() == 0) return;
  const int64_t N = p.N, C = p.C, K = p.K, D = p.D, H = p.H, W = p.W, T = p.T, R = p.R, S = p.S,
                O = p.O, P = p.P, Q = p.Q;
  const int64_t Cg = p.c_per_group(), Kg = p.k_per_group();
  const bool flip = p.mode == JHDNN_CONVOLUTION;

  // x repacked as N x D x H x W x C (channels last): one group's channels of one pixel are contiguous.
  const int64_t xd[5] = {N, C, D, H, W};
  const std::vector<double> xp = pack_channels_last(x, xd, p.x_stride, false);
  // w repacked as K x T x R x S x Cg, with the CONVOLUTION flip applied here so the loops below
  // are always a cross-correlation.
  const int64_t wd[5] = {K, Cg, T, R, S};
  const std::vector<double> wp = pack_channels_last(w, wd, p.w_stride, flip);

  const std::vector<TapRange> tr_d = tap_ranges(O, D, T, p.pad_d, p.stride_d, p.dil_d);
  const std::vector<TapRange> tr_h = tap_ranges(P, H, R, p.pad_h, p.stride_h, p.dil_h);
  const std::vector<TapRange> tr_w = tap_ranges(Q, W, S, p.pad_w, p.stride_w, p.dil_w);

  // One "row" = the Q outputs of one (n, k, o, p).
  const int64_t rows = N * K * O * P;
  auto do_rows = [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row) {
      int64_t rem = row;
      const int64_t pp = rem % P; rem /= P;
      const int64_t o = rem % O; rem /= O;
      const int64_t k = rem % K;
      const int64_t n = rem / K;
      const int64_t c0 = (k / Kg) * Cg;  // first input channel of k's group
      const double* wk = wp.data() + k * T * R * S * Cg;
      const TapRange td = tr_d[static_cast<size_t>(o)], th = tr_h[static_cast<size_t>(pp)];
      const int64_t d0 = o * p.stride_d - p.pad_d, h0 = pp * p.stride_h - p.pad_h;
      double* yrow = y + n * p.y_stride[0] + k * p.y_stride[1] + o * p.y_stride[2] + pp * p.y_stride[3];
      for (int64_t q = 0; q < Q; ++q) {
        const TapRange tw = tr_w[static_cast<size_t>(q)];
        const int64_t w0 = q * p.stride_w - p.pad_w;
        double acc = 0;
        for (int64_t t = td.lo; t < td.hi; ++t) {
          const int64_t id = d0 + t * p.dil_d;
          for (int64_t r = th.lo; r < th.hi; ++r) {
            const int64_t ih = h0 + r * p.dil_h;
            const double* xrow = xp.data() + ((n * D + id) * H + ih) * W * C + c0;  // (W, C) of one input row
            const double* wrow = wk + (t * R + r) * S * Cg;                         // (S, Cg) of one filter row
            for (int64_t s = tw.lo; s < tw.hi; ++s) {
              const int64_t iw = w0 + s * p.dil_w;
              acc += dot(xrow + iw * C, wrow + s * Cg, Cg);
            }
          }
        }
        double& out = yrow[q * p.y_stride[4]];
        // beta == 0: y is write-only (it may hold NaN).
        out = beta == 0.0 ? alpha * acc : alpha * acc + beta * out;
      }
    }
  };

  // Threads only when there is enough work to amortize starting them (~4M multiply-adds each).
  const double macs = double(p.y_elems()) * double(std::max<int64_t>(p.reduction(), 1));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t by_work = static_cast<int64_t>(macs / 4.0e6);
  const int64_t nthreads = std::max<int64_t>(1, std::min<int64_t>({int64_t(hw), by_work, rows}));
  if (nthreads == 1) {
    do_rows(0, rows);
    return;
  }
  // Dynamic chunks: border rows (padding) are cheaper than interior ones.
  const int64_t chunk = std::max<int64_t>(1, rows / (nthreads * 16));
  std::atomic<int64_t> next{0};
  auto worker = [&]() {
    for (;;) {
      const int64_t b = next.fetch_add(chunk);
      if (b >= rows) break;
      do_rows(b, std::min(rows, b + chunk));
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(nthreads - 1));
  for (int64_t i = 1; i < nthreads; ++i) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

double conv_reference_at(const core::ConvProblem& prob, const double* x, const double* w, int64_t n,
                         int64_t k, int64_t o, int64_t p, int64_t q) {
  check_problem(prob);
  if (n < 0 || n >= prob.N || k < 0 || k >= prob.K || o < 0 || o >= prob.O || p < 0 || p >= prob.P ||
      q < 0 || q >= prob.Q)
    throw std::out_of_range("conv_reference_at: output index outside y");
  const int64_t Cg = prob.c_per_group();
  const int64_t g = k / prob.k_per_group();
  const bool flip = prob.mode == JHDNN_CONVOLUTION;
  const int64_t* xs = prob.x_stride;
  const int64_t* ws = prob.w_stride;
  double sum = 0;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t t = 0; t < prob.T; ++t)
      for (int64_t r = 0; r < prob.R; ++r)
        for (int64_t s = 0; s < prob.S; ++s) {
          const int64_t id = o * prob.stride_d - prob.pad_d + t * prob.dil_d;
          const int64_t ih = p * prob.stride_h - prob.pad_h + r * prob.dil_h;
          const int64_t iw = q * prob.stride_w - prob.pad_w + s * prob.dil_w;
          if (id < 0 || id >= prob.D || ih < 0 || ih >= prob.H || iw < 0 || iw >= prob.W) continue;
          const int64_t wt = flip ? prob.T - 1 - t : t;
          const int64_t wr = flip ? prob.R - 1 - r : r;
          const int64_t wsi = flip ? prob.S - 1 - s : s;
          const double xv = x[n * xs[0] + (g * Cg + c) * xs[1] + id * xs[2] + ih * xs[3] + iw * xs[4]];
          const double wv = w[k * ws[0] + c * ws[1] + wt * ws[2] + wr * ws[3] + wsi * ws[4]];
          sum += xv * wv;
        }
  return sum;
}

}  // namespace jhdnn::test
