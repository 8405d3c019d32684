// GEMM convolution: lower x to a matrix (im2col) in the workspace, then one GEMM per chunk of
// images covers every (image, group) pair. See README.md for the two layouts and the limits.
#include "conv/gemm/conv_gemm.h"

#include <cstdint>
#include <cstring>

#include <cublas_v2.h>

#include "core/config.h"
#include "core/cuda_check.h"
#include "core/descriptors.h"
#include "gemm/gemm.h"

namespace jhdnn::conv {
namespace convgemm {
namespace {

using core::fail;

// The im2col buffer of one chunk of images may not exceed this (the workspace is one chunk);
// larger batches are processed in chunks. A single image needing more is refused.
constexpr int64_t kWorkspaceCap = int64_t(1) << 30;  // 1 GiB

// The cap in force: kWorkspaceCap, or a smaller positive byte count from JHDNN_CONV_GEMM_WS_CAP
// (core::config: read once; tests lower it with config::set_conv_gemm_ws_cap to force the chunked
// path on small problems).
int64_t workspace_cap() {
  const int64_t v = core::config::conv_gemm_ws_cap();
  return v > 0 && v < kWorkspaceCap ? v : kWorkspaceCap;
}
// make_plan's refusals for an image over the cap. A Verdict's reason is a literal (it cannot hold the
// number), so the two say which cap is in force; run() adds the byte counts.
constexpr const char* kOverDefaultCap = "the im2col matrix of one image exceeds the workspace cap (1 GiB)";
constexpr const char* kOverEnvCap =
    "the im2col matrix of one image exceeds the workspace cap set by JHDNN_CONV_GEMM_WS_CAP";
constexpr int kIm2colThreads = 256;

// The two GEMM shapes:
//   kNchw: per (image, group)  y(opq, k) = col(opq, red) * w(red, k);  col is [img][g][red][opq]
//   kNhwc: per group, all images at once  y(k, npq) = w(k, red) * col(red, npq); col is [npq][g][red]
// red runs over (c, t, r, s) in the filter's own order (c first for KCRS, c last for KRSC), so the
// filter is read in place as a (red x k) matrix with leading dimension C/G*T*R*S.
// y NHWC takes kNhwc, writing y in place. y NCHW takes kNchw, writing y in place, unless an image
// has so few output pixels that the per-image GEMMs (M = O*P*Q) would leave much of each 128-row
// tile idle (late ResNet layers: 7x7 = 49 rows); then it takes kNhwc into the workspace and a
// transposing pass writes y ("via_transpose").
enum class Form { kNchw, kNhwc };

struct Plan {
  Form form;
  bool via_transpose;   // kNhwc GEMM into the workspace, then transposed into NCHW y
  bool identity;        // 1x1, stride 1, no padding, x packed like y: x is already the matrix
  bool c_last;          // reduction order (t, r, s, c) for a KRSC filter
  int64_t red;          // C/G * T * R * S
  int64_t opq;          // O * P * Q
  int64_t chunk;        // images per im2col chunk
  int64_t col_per_img;  // elements of col per image
  int64_t tmp_per_img;  // elements of the transposition buffer per image (via_transpose)
};

// Fraction of the rows of 128-row tiles that m rows fill.
double tile_fill(int64_t m) {
  const int64_t tiles = (m + gemm::kTileM - 1) / gemm::kTileM;
  return double(m) / double(tiles * gemm::kTileM);
}

// JHDNN_CONV_GEMM_NCHW=per_image|transpose (core::config; tests cover both with
// config::set_conv_gemm_nchw) forces the NCHW strategy; unset or anything else chooses by tile fill.
core::config::NchwStrategy forced_nchw_mode() { return core::config::conv_gemm_nchw(); }

// nullptr and a filled plan when the problem is served, else the reason.
const char* make_plan(const core::ConvProblem& p, Plan* pl) {
  if (p.dtype != JHDNN_DATA_FLOAT) return "GEMM convolution serves FLOAT data only";
  if (p.compute_type != JHDNN_DATA_FLOAT) return "FLOAT data needs FLOAT compute type";
  if (p.N <= 0 || p.C <= 0 || p.K <= 0 || p.G <= 0) return "N, C, K and groups must be positive";
  if (p.C % p.G != 0 || p.K % p.G != 0) return "groups must divide C and K";
  if (p.O <= 0 || p.P <= 0 || p.Q <= 0) return "output spatial sizes must be positive";
  if (p.stride_d <= 0 || p.stride_h <= 0 || p.stride_w <= 0) return "strides must be positive";
  if (p.dil_d <= 0 || p.dil_h <= 0 || p.dil_w <= 0) return "dilations must be positive";
  if (p.pad_d < 0 || p.pad_h < 0 || p.pad_w < 0) return "paddings must be non-negative";
  for (int i = 0; i < 5; ++i)
    if (p.x_stride[i] < 0) return "negative x strides are not supported";
  if (p.y_packed_nchw()) pl->form = Form::kNchw;
  else if (p.y_packed_nhwc()) pl->form = Form::kNhwc;
  else return "y must be packed NCHW or NHWC (the GEMM writes y in place)";
  if (p.w_packed_kcrs()) pl->c_last = false;
  else if (p.w_packed_krsc()) pl->c_last = true;
  else return "w must be packed KCRS or KRSC (the GEMM reads w in place)";
  pl->red = p.reduction();
  pl->opq = p.O * p.P * p.Q;
  pl->via_transpose = false;
  if (pl->form == Form::kNchw) {
    using core::config::NchwStrategy;
    const NchwStrategy forced = forced_nchw_mode();
    if (forced == NchwStrategy::kTranspose || (forced == NchwStrategy::kAuto && tile_fill(pl->opq) < 0.8)) {
      pl->form = Form::kNhwc;
      pl->via_transpose = true;
    }
  }
  if (pl->red > INT32_MAX || p.k_per_group() > INT32_MAX) return "C/G*T*R*S and K/G must fit 31 bits";
  const bool one_by_one = p.T == 1 && p.R == 1 && p.S == 1 && p.stride_d == 1 && p.stride_h == 1 &&
                          p.stride_w == 1 && p.pad_d == 0 && p.pad_h == 0 && p.pad_w == 0;
  pl->identity = one_by_one && !pl->via_transpose &&
                 (pl->form == Form::kNchw ? p.x_packed_nchw() : p.x_packed_nhwc());
  pl->col_per_img = pl->opq * p.C * p.T * p.R * p.S;
  pl->tmp_per_img = pl->via_transpose ? pl->opq * p.K : 0;
  if (pl->identity) {
    pl->chunk = p.N;
    if (pl->form == Form::kNhwc && p.N * pl->opq > INT32_MAX) return "N*O*P*Q must fit 31 bits";
    if (pl->form == Form::kNchw && pl->opq > INT32_MAX) return "O*P*Q must fit 31 bits";
    return nullptr;
  }
  const int64_t per_img_bytes = (pl->col_per_img + pl->tmp_per_img) * int64_t(sizeof(float));
  const int64_t cap = workspace_cap();
  if (per_img_bytes > cap) return cap == kWorkspaceCap ? kOverDefaultCap : kOverEnvCap;
  pl->chunk = cap / per_img_bytes;
  if (pl->chunk > p.N) pl->chunk = p.N;
  return nullptr;
}

// Everything im2col needs, flat (kernel parameter space).
struct Im2colParams {
  int G, cpg, T, R, S, O, P, Q, D, H, W;
  int pad_d, pad_h, pad_w, stride_d, stride_h, stride_w, dil_d, dil_h, dil_w;
  int flip, c_last;
  int red, opq;
  int64_t xs[5];
};

// im2col. Each thread fixes one coordinate of col's fast index (decoded once, with divisions) and
// walks kRun consecutive values of the other, stepping its sub-indices with carries instead of
// dividing again: a division-heavy decode per element would cost more than the GEMM on large
// layers. Warps run along col's contiguous index, so the writes are coalesced. Every index fits
// 32 bits (the workspace cap keeps col below 2^28 elements); x offsets are 64-bit.
constexpr int kRun = 8;

// A reduction index as the filter orders it: (c, t, r, s) with s fastest (KCRS), or (t, r, s, c)
// with c fastest (KRSC).
struct Tap {
  int c, t, r, s;
  __device__ void decode(int red, const Im2colParams& p) {
    const int taps = p.T * p.R * p.S;
    int trs;
    if (p.c_last) { c = red % p.cpg; trs = red / p.cpg; }
    else          { c = red / taps;  trs = red % taps; }
    s = trs % p.S;
    r = (trs / p.S) % p.R;
    t = trs / (p.S * p.R);
  }
  __device__ void next(const Im2colParams& p) {  // red + 1
    if (p.c_last) {
      if (++c < p.cpg) return;
      c = 0;
      if (++s < p.S) return;
      s = 0;
      if (++r < p.R) return;
      r = 0;
      ++t;
    } else {
      if (++s < p.S) return;
      s = 0;
      if (++r < p.R) return;
      r = 0;
      if (++t < p.T) return;
      t = 0;
      ++c;
    }
  }
};

// x[img, g*cpg + c, o*sd - pd + t'*dd, ...] or 0 in the padding, with t' the mirrored tap in
// CONVOLUTION mode (the filter is read mirrored).
__device__ __forceinline__ float x_at(const Im2colParams& p, const float* __restrict__ x, int img, int g,
                                      const Tap& tp, int o, int p_, int q) {
  const int t = p.flip ? p.T - 1 - tp.t : tp.t;
  const int r = p.flip ? p.R - 1 - tp.r : tp.r;
  const int s = p.flip ? p.S - 1 - tp.s : tp.s;
  const int d = o * p.stride_d - p.pad_d + t * p.dil_d;
  const int h = p_ * p.stride_h - p.pad_h + r * p.dil_h;
  const int w = q * p.stride_w - p.pad_w + s * p.dil_w;
  if (d < 0 || d >= p.D || h < 0 || h >= p.H || w < 0 || w >= p.W) return 0.f;
  return x[img * p.xs[0] + int64_t(g * p.cpg + tp.c) * p.xs[1] + d * p.xs[2] + h * p.xs[3] + w * p.xs[4]];
}

// kNchw col, [img][g][red][opq]: threadIdx.x along opq (decoded once), kRun consecutive red per
// thread. Block (kAx, kAy); grid x over opq, y over runs of red, z over (img, g).
constexpr int kAx = 128, kAy = 2;
__global__ void __launch_bounds__(kAx * kAy)
    im2col_nchw_kernel(Im2colParams p, const float* __restrict__ x, float* __restrict__ col, int pairs) {
  const int opq = blockIdx.x * kAx + threadIdx.x;
  if (opq >= p.opq) return;  // no barriers below
  const int q = opq % p.Q, p_ = (opq / p.Q) % p.P, o = opq / (p.Q * p.P);
  const int runs = (p.red + kRun - 1) / kRun;
  for (int z = blockIdx.z; z < pairs; z += gridDim.z) {  // z = img * G + g
    const int img = z / p.G, g = z % p.G;
    for (int run = blockIdx.y * kAy + threadIdx.y; run < runs; run += gridDim.y * kAy) {
      const int red0 = run * kRun;
      Tap tp;
      tp.decode(red0, p);
      float* out = col + (int64_t(z) * p.red + red0) * p.opq + opq;
      for (int j = 0; j < kRun && red0 + j < p.red; ++j) {
        out[int64_t(j) * p.opq] = x_at(p, x, img, g, tp, o, p_, q);
        tp.next(p);
      }
    }
  }
}

// kNhwc col, [img*opq][g][red]: threadIdx.x along red (decoded once), kRun consecutive output
// pixels per thread. Block (kBx, kBy); grid x over red, y over runs of pixels, z over g.
constexpr int kBx = 32, kBy = 8;
__global__ void __launch_bounds__(kBx * kBy)
    im2col_nhwc_kernel(Im2colParams p, const float* __restrict__ x, float* __restrict__ col, int pixels) {
  const int red = blockIdx.x * kBx + threadIdx.x;
  if (red >= p.red) return;  // no barriers below
  Tap tp;
  tp.decode(red, p);
  const int runs = (pixels + kRun - 1) / kRun;
  for (int g = blockIdx.z; g < p.G; g += gridDim.z) {
    for (int run = blockIdx.y * kBy + threadIdx.y; run < runs; run += gridDim.y * kBy) {
      const int npq0 = run * kRun;
      int q = npq0 % p.Q, p_ = (npq0 / p.Q) % p.P, o = (npq0 / (p.Q * p.P)) % p.O, img = npq0 / p.opq;
      float* out = col + (int64_t(npq0) * p.G + g) * p.red + red;
      const int64_t step = int64_t(p.G) * p.red;
      for (int j = 0; j < kRun && npq0 + j < pixels; ++j) {
        out[j * step] = x_at(p, x, img, g, tp, o, p_, q);
        if (++q == p.Q) {  // next output pixel
          q = 0;
          if (++p_ == p.P) {
            p_ = 0;
            if (++o == p.O) {
              o = 0;
              ++img;
            }
          }
        }
      }
    }
  }
}

unsigned cap_grid(int64_t v, int64_t cap) { return unsigned(v < 1 ? 1 : v < cap ? v : cap); }

// im2col of nc images starting at xn into col.
Status launch_im2col(const Plan& pl, const Im2colParams& ip, const float* xn, float* col, int64_t nc, int64_t G,
                     cudaStream_t stream) {
  if (pl.form == Form::kNchw) {
    const int64_t runs = (pl.red + kRun - 1) / kRun;
    const dim3 grid(cap_grid((pl.opq + kAx - 1) / kAx, INT32_MAX), cap_grid((runs + kAy - 1) / kAy, 65535),
                    cap_grid(nc * G, 65535));
    im2col_nchw_kernel<<<grid, dim3(kAx, kAy), 0, stream>>>(ip, xn, col, int(nc * G));
  } else {
    const int64_t pixels = nc * pl.opq;
    const int64_t runs = (pixels + kRun - 1) / kRun;
    const dim3 grid(cap_grid((pl.red + kBx - 1) / kBx, INT32_MAX), cap_grid((runs + kBy - 1) / kBy, 65535),
                    cap_grid(G, 65535));
    im2col_nhwc_kernel<<<grid, dim3(kBx, kBy), 0, stream>>>(ip, xn, col, int(pixels));
  }
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

// y (packed NCHW, this chunk's images) = alpha * tmp + beta * y, where tmp holds the same outputs
// as [image][opq][k] (the kNhwc GEMM's C). One thread per y element, y order (coalesced writes;
// the strided reads of tmp hit L2, it is small when this path is taken).
__global__ void __launch_bounds__(kIm2colThreads)
    transpose_out_kernel(const float* __restrict__ tmp, float* __restrict__ y, int K, int opq, int total,
                         float alpha, float beta) {
  for (int i = blockIdx.x * kIm2colThreads + threadIdx.x; i < total; i += gridDim.x * kIm2colThreads) {
    const int q = i % opq, rest = i / opq;
    const int k = rest % K, img = rest / K;
    float v = alpha * tmp[(int64_t(img) * opq + q) * K + k];
    if (beta != 0.f) v += beta * y[i];  // beta == 0: y is never read (it may hold NaN)
    y[i] = v;
  }
}

unsigned blocks_for(int64_t total) {
  const int64_t want = (total + kIm2colThreads - 1) / kIm2colThreads;
  return unsigned(want < 65535 * 16 ? want : 65535 * 16);
}

Im2colParams im2col_params(const core::ConvProblem& p, const Plan& pl) {
  Im2colParams q{};
  q.G = int(p.G); q.cpg = int(p.c_per_group());
  q.T = int(p.T); q.R = int(p.R); q.S = int(p.S);
  q.O = int(p.O); q.P = int(p.P); q.Q = int(p.Q);
  q.D = int(p.D); q.H = int(p.H); q.W = int(p.W);
  q.pad_d = p.pad_d; q.pad_h = p.pad_h; q.pad_w = p.pad_w;
  q.stride_d = p.stride_d; q.stride_h = p.stride_h; q.stride_w = p.stride_w;
  q.dil_d = p.dil_d; q.dil_h = p.dil_h; q.dil_w = p.dil_w;
  q.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
  q.c_last = pl.c_last ? 1 : 0;
  q.red = int(pl.red);
  q.opq = int(pl.opq);
  for (int i = 0; i < 5; ++i) q.xs[i] = p.x_stride[i];
  return q;
}

// Input coordinates reach about out*stride + filt*dil + pad; 32-bit coordinates must hold them.
bool coords_fit(const core::ConvProblem& p) {
  auto fits = [](int64_t out, int st, int64_t f, int dil, int pad, int64_t in) {
    return out * st + f * dil + pad < INT32_MAX / 2 && in + pad < INT32_MAX / 2;
  };
  return fits(p.O, p.stride_d, p.T, p.dil_d, p.pad_d, p.D) && fits(p.P, p.stride_h, p.R, p.dil_h, p.pad_h, p.H) &&
         fits(p.Q, p.stride_w, p.S, p.dil_w, p.pad_w, p.W);
}

// The GEMM of images [n0, n0 + nc) as a GemmDesc (alpha, beta included); `mat` is col (or x).
// With tmp (via_transpose), C is tmp ([image][opq][K]) with alpha 1, beta 0.
gemm::GemmDesc chunk_gemm(const core::ConvProblem& p, const Plan& pl, const ConvArgs& a, const float* mat,
                          int64_t n0, int64_t nc, float* tmp) {
  const int64_t G = p.G, cpg = p.c_per_group(), kpg = p.k_per_group();
  const float* w = static_cast<const float*>(a.w);
  float* y = static_cast<float*>(a.y);
  gemm::GemmDesc d;
  d.alpha = float(a.alpha);
  d.beta = float(a.beta);
  d.k = pl.red;
  if (pl.form == Form::kNchw) {
    d.m = pl.opq;
    d.n = kpg;
    if (pl.identity) {  // x(opq, c) of image n: x + n*xs0 + c*xs1, packed spatial
      d.a = mat + n0 * p.x_stride[0];
      d.lda = p.x_stride[1];
      d.a_outer = p.x_stride[0];
      d.a_inner = cpg * p.x_stride[1];
      if (p.C == 1) d.lda = pl.opq;  // a size-1 dim's stride is arbitrary
      if (p.N == 1) d.a_outer = 0;
    } else {
      d.a = mat;
      d.lda = pl.opq;
      d.a_outer = G * pl.red * pl.opq;
      d.a_inner = pl.red * pl.opq;
    }
    d.b = w;  // (red x kpg), ld red
    d.ldb = pl.red;
    d.b_outer = 0;
    d.b_inner = kpg * pl.red;
    d.c = y + n0 * p.K * pl.opq;  // packed NCHW (y_stride[0] is arbitrary when N == 1)
    d.ldc = pl.opq;
    d.c_outer = p.K * pl.opq;
    d.c_inner = kpg * pl.opq;
    d.batch_outer = nc;
    d.batch_inner = G;
  } else {
    d.m = kpg;
    d.n = nc * pl.opq;
    d.a = w;  // stored (red x kpg), used transposed
    d.lda = pl.red;
    d.trans_a = true;
    d.a_inner = kpg * pl.red;
    if (pl.identity) {  // x(c, npq) at npq*C + c
      d.b = mat + n0 * pl.opq * p.C;
      d.ldb = p.C;
      d.b_inner = cpg;
    } else {
      d.b = mat;
      d.ldb = G * pl.red;
      d.b_inner = pl.red;
    }
    d.c = tmp != nullptr ? tmp : y + n0 * pl.opq * p.K;
    if (tmp != nullptr) d.alpha = 1.f, d.beta = 0.f;
    d.ldc = p.K;
    d.c_inner = kpg;
    d.batch_outer = 1;
    d.batch_inner = G;
  }
  return d;
}

// Runs d with cuBLAS: its strided batch has one level, so loop over the smaller level.
// h is the calling jhdnn handle's (one per jhdnn handle, used by one thread at a time); setting its
// stream each call is cheap and allocates nothing.
Status run_cublas(const gemm::GemmDesc& d, cublasHandle_t h, cudaStream_t stream) {
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS)
    return fail(JHDNN_STATUS_EXECUTION_FAILED_CUBLAS, "gemm_cublas: cublasSetStream failed");
  const bool loop_outer = d.batch_outer <= d.batch_inner;
  const int64_t loops = loop_outer ? d.batch_outer : d.batch_inner;
  const int64_t batch = loop_outer ? d.batch_inner : d.batch_outer;
  for (int64_t l = 0; l < loops; ++l) {
    const int64_t ao = loop_outer ? d.a_outer : d.a_inner, as = loop_outer ? d.a_inner : d.a_outer;
    const int64_t bo = loop_outer ? d.b_outer : d.b_inner, bs = loop_outer ? d.b_inner : d.b_outer;
    const int64_t co = loop_outer ? d.c_outer : d.c_inner, cs = loop_outer ? d.c_inner : d.c_outer;
    const cublasStatus_t st = cublasSgemmStridedBatched(
        h, d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, int(d.m), int(d.n),
        int(d.k), &d.alpha, d.a + l * ao, int(d.lda), as, d.b + l * bo, int(d.ldb), bs, &d.beta, d.c + l * co,
        int(d.ldc), cs, int(batch));
    if (st != CUBLAS_STATUS_SUCCESS)
      return fail(JHDNN_STATUS_EXECUTION_FAILED_CUBLAS, "gemm_cublas: cublasSgemmStridedBatched failed (%d)",
                  int(st));
  }
  return Status::success();
}

class ConvGemmSolver final : public ConvSolver {
 public:
  explicit ConvGemmSolver(bool use_cublas) : cublas_(use_cublas) {}
  const char* name() const override { return cublas_ ? "gemm_cublas" : "gemm_ours"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_GEMM; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    Plan pl;
    if (const char* why = make_plan(p, &pl)) return Verdict::no(why);
    if (!coords_fit(p)) return Verdict::no("input coordinates must fit 31 bits");
    if (cublas_ && (pl.opq * (pl.form == Form::kNhwc ? pl.chunk : 1) > INT32_MAX || p.K > INT32_MAX ||
                    p.C > INT32_MAX))
      return Verdict::no("cuBLAS takes 32-bit sizes and leading dimensions");
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem& p) const override {
    Plan pl;
    if (make_plan(p, &pl) != nullptr || pl.identity) return 0;
    return size_t(pl.chunk * (pl.col_per_img + pl.tmp_per_img)) * sizeof(float);
  }

  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    Plan pl;
    if (const char* why = make_plan(p, &pl)) {
      if (why == kOverDefaultCap || why == kOverEnvCap)  // pl's sizes are set: give the byte counts
        return fail(JHDNN_STATUS_NOT_SUPPORTED, "%s: %s (one image: %lld bytes, cap: %lld bytes)", name(), why,
                    (long long)((pl.col_per_img + pl.tmp_per_img) * int64_t(sizeof(float))),
                    (long long)workspace_cap());
      return fail(JHDNN_STATUS_NOT_SUPPORTED, "%s: %s", name(), why);
    }
    if (!a.x || !a.w || !a.y) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: x, w or y is null", name());
    if (cublas_ && (a.handle == nullptr || a.handle->cublas == nullptr))
      return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
                  "%s: no jhdnn handle came with the call (ConvArgs::handle); its cuBLAS handle is per jhdnn handle",
                  name());
    const size_t need = workspace_bytes(p);
    if (ws_bytes < need || (need > 0 && ws == nullptr))
      return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "%s: workspace of %zu bytes < %zu needed", name(),
                  ws_bytes, need);
    const float* x = static_cast<const float*>(a.x);
    float* col = static_cast<float*>(ws);
    float* tmp = pl.via_transpose ? col + pl.chunk * pl.col_per_img : nullptr;
    const Im2colParams ip = im2col_params(p, pl);
    for (int64_t n0 = 0; n0 < p.N; n0 += pl.chunk) {
      const int64_t nc = n0 + pl.chunk <= p.N ? pl.chunk : p.N - n0;
      const float* mat = x;
      if (!pl.identity) {
        JHDNN_TRY(launch_im2col(pl, ip, x + n0 * p.x_stride[0], col, nc, p.G, stream));
        mat = col;
      }
      const gemm::GemmDesc d = chunk_gemm(p, pl, a, mat, n0, nc, tmp);
      JHDNN_TRY(cublas_ ? run_cublas(d, a.handle->cublas, stream) : gemm::sgemm(d, stream));
      if (tmp != nullptr) {
        const int total = int(nc * pl.tmp_per_img);  // <= 2^28 by the workspace cap
        transpose_out_kernel<<<blocks_for(total), kIm2colThreads, 0, stream>>>(
            tmp, static_cast<float*>(a.y) + n0 * p.K * pl.opq, int(p.K), int(pl.opq), total, float(a.alpha),
            float(a.beta));
        JHDNN_LAUNCH_CHECK();
      }
    }
    return Status::success();
  }

  Status load_kernels() const override {
    cudaFuncAttributes attr;
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(im2col_nchw_kernel)));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(im2col_nhwc_kernel)));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(transpose_out_kernel)));
    if (cublas_) return Status::success();  // its cuBLAS handle comes with each jhdnn handle (jhdnnCreate)
    return gemm::load_kernels();
  }

 private:
  bool cublas_;
};

}  // namespace
}  // namespace convgemm

const ConvSolver& gemm_ours_solver() {
  static const auto& s = *new convgemm::ConvGemmSolver(false);  // leaked: see all_solvers() (registry.cpp)
  return s;
}
const ConvSolver& gemm_cublas_solver() {
  static const auto& s = *new convgemm::ConvGemmSolver(true);  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
