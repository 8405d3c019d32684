// Winograd F(m x m, 3x3), non-fused (JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED), for m = 2 and
// m = 4: one templated kernel set, the transform matrices as data (README.md in this folder has the
// math, the layouts and the choice of interpolation points). With a = m + 2 and E = a * a, four
// steps on one stream, all through the workspace:
//   1. U[e][k][c] = (G g G^T)[e]        filter transform, g = w[k][c] (mirrored in CONVOLUTION mode)
//   2. V[e][c][t] = (B^T d B)[e]        input transform, d = the a x a input tile of tile t (zero padded)
//   3. M[e] = U[e] x V[e]               E GEMMs (K x C) x (C x T) in one strided-batched SGEMM
//   4. y = alpha * (A^T m A) + beta * y output transform, m[e] = M[e][k][t], m x m outputs per tile
// e = a * i + j indexes the a x a transform domain (i along H, j along W).
#include "conv/winograd/winograd.h"

#include <cstdint>
#include <cstdlib>

#include "conv/winograd/chunk.h"
#include "conv/winograd/transforms.h"
#include "core/config.h"
#include "core/cuda_check.h"
#include "gemm/gemm.h"

namespace jhdnn::conv {
namespace winograd {
namespace {

using core::fail;

// ---------------------------------------------------------------- the plan

// The workspace (U, V and M of one chunk of images) may not exceed this. Larger batches run in
// chunks of images; a problem whose single image exceeds it is refused.
constexpr int64_t kWorkspaceCap = int64_t(1) << 32;  // 4 GiB
constexpr const char* kOverCap = "the Winograd workspace (U, V and M) of one image exceeds the 4 GiB cap";
constexpr int kThreads = 256;
constexpr int64_t kAlign = 64;  // each workspace section starts on a 256-byte boundary (floats)

// Sizes of one problem's transform domain.
struct Plan {
  int64_t tiles_h, tiles_w;  // ceil(P / m), ceil(Q / m)
  int64_t chunk;             // images per chunk (the last one may have fewer)
  int64_t tiles;             // chunk * tiles_h * tiles_w: the GEMMs' long dimension for a full chunk
  int64_t u_off, v_off, m_off, total;  // floats: section offsets and the whole workspace
};

int64_t round_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// nullptr and a filled plan when the problem is served, else the reason (a literal). m: the output
// tile (2 or 4), E = (m + 2)^2 transform elements.
const char* make_plan(const core::ConvProblem& p, int m, Plan* pl) {
  const int64_t E = int64_t(m + 2) * (m + 2);
  if (p.dtype != JHDNN_DATA_FLOAT) return "Winograd serves FLOAT data only";
  if (p.compute_type != JHDNN_DATA_FLOAT) return "FLOAT data needs FLOAT compute type";
  if (p.spatial_dims != 2 || p.D != 1 || p.T != 1 || p.O != 1 || p.pad_d != 0)
    return "Winograd serves 2-D convolutions only";
  if (p.G != 1) return "Winograd serves groups = 1 only";
  if (p.R != 3 || p.S != 3) return "Winograd F(m x m, 3x3) needs 3x3 filters";
  if (p.stride_h != 1 || p.stride_w != 1) return "Winograd needs stride 1";
  if (p.dil_h != 1 || p.dil_w != 1) return "Winograd needs dilation 1";
  if (p.N <= 0 || p.C <= 0 || p.K <= 0 || p.H <= 0 || p.W <= 0) return "N, C, K, H and W must be positive";
  if (p.P <= 0 || p.Q <= 0) return "output spatial sizes must be positive";
  if (p.pad_h < 0 || p.pad_w < 0) return "paddings must be non-negative";
  for (int i = 0; i < 5; ++i)
    if (p.x_stride[i] < 0 || p.y_stride[i] < 0 || p.w_stride[i] < 0) return "negative strides are not supported";
  // Input coordinates m * tile - pad + m + 1 and output coordinates are 32-bit in the kernels.
  if (p.H + p.pad_h + 8 > INT32_MAX / 2 || p.W + p.pad_w + 8 > INT32_MAX / 2 || p.P > INT32_MAX / 2 ||
      p.Q > INT32_MAX / 2)
    return "spatial sizes must fit 30 bits";
  if (p.C > INT32_MAX || p.K > INT32_MAX) return "C and K must fit 31 bits";
  pl->tiles_h = (p.P + m - 1) / m;
  pl->tiles_w = (p.Q + m - 1) / m;
  // Every product below is checked: C, K and the tile counts may be huge even if each fits 31 bits.
  const int64_t limit = kWorkspaceCap / int64_t(sizeof(float));  // floats
  int64_t hw = 0, u = 0, v_img = 0, m_img = 0;
  if (__builtin_mul_overflow(pl->tiles_h, pl->tiles_w, &hw) || hw > limit) return kOverCap;
  if (__builtin_mul_overflow(p.K, p.C, &u) || u > limit / E || __builtin_mul_overflow(p.C, hw, &v_img) ||
      v_img > limit / E || __builtin_mul_overflow(p.K, hw, &m_img) || m_img > limit / E)
    return kOverCap;
  // Floats left for V and M after U and the alignment of the two sections.
  const int64_t room = limit - round_up(E * u) - 2 * kAlign;
  const int64_t per_img = E * (v_img + m_img);
  if (room < per_img) return kOverCap;
  pl->chunk = chunk_images(p.N, room / per_img, core::config::winograd_chunk());
  pl->tiles = pl->chunk * hw;
  pl->u_off = 0;
  pl->v_off = round_up(E * u);
  pl->m_off = pl->v_off + round_up(E * p.C * pl->tiles);
  pl->total = pl->m_off + round_up(E * p.K * pl->tiles);
  // total <= limit = 2^30 floats, so E * C * tiles, E * K * tiles and E * K * C are all < 2^30:
  // 32-bit thread indices suffice.
  return nullptr;
}

// ---------------------------------------------------------------- the transform-domain arrays

// U, V and M are E planes [e][..][..]: element (i, j) of a thread's a x a tile lies at
// base[(a * i + j) * plane], base = the thread's offset inside a plane, plane = the plane's size.
template <int a>
__device__ __forceinline__ void store_planes(float* dst, int64_t plane, const float (&tile)[a][a]) {
#pragma unroll
  for (int i = 0; i < a; ++i)
#pragma unroll
    for (int j = 0; j < a; ++j) dst[(a * i + j) * plane] = tile[i][j];
}
template <int a>
__device__ __forceinline__ void load_planes(const float* src, int64_t plane, float (&tile)[a][a]) {
#pragma unroll
  for (int i = 0; i < a; ++i)
#pragma unroll
    for (int j = 0; j < a; ++j) tile[i][j] = src[(a * i + j) * plane];
}

// ---------------------------------------------------------------- 1. filter transform

struct FilterParams {
  int K, C;
  int flip;        // CONVOLUTION mode: g[r][s] = w[2 - r][2 - s]
  int64_t ws[5];   // w strides (k, c, t, r, s)
};

// One thread per (k, c), c fastest (coalesced writes of U; the filter is small).
template <class F>
__global__ void __launch_bounds__(kThreads)
    filter_transform_kernel(FilterParams p, const float* __restrict__ w, float* __restrict__ U) {
  constexpr int a = F::m + 2;
  const int kc = blockIdx.x * kThreads + threadIdx.x;
  if (kc >= p.K * p.C) return;
  const int c = kc % p.C, k = kc / p.C;
  const float* src = w + int64_t(k) * p.ws[0] + int64_t(c) * p.ws[1];
  float g[3][3];
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int s = 0; s < 3; ++s) {
      const int rr = p.flip ? 2 - r : r, ss = p.flip ? 2 - s : s;
      g[r][s] = src[rr * p.ws[3] + ss * p.ws[4]];
    }
  float u[a][a];
  sandwich<typename F::G>(g, u);
  const int64_t plane = int64_t(p.K) * p.C;
  store_planes<a>(U + kc, plane, u);  // U[e][k][c] at e * K * C + k * C + c
}

// ---------------------------------------------------------------- 2. input transform

struct InputParams {
  int C, H, W, pad_h, pad_w;
  int tiles_h, tiles_w, tiles;  // tiles = images of the chunk * tiles_h * tiles_w
  int64_t xs[5];                // x strides (n, c, d, h, w)
};

// One thread per (c, tile), tile fastest: the E writes of V are coalesced; the a x a reads of x are
// m apart along W in NCHW (a warp covers a few rows, served by L1), C apart in NHWC.
template <class F>
__global__ void __launch_bounds__(kThreads)
    input_transform_kernel(InputParams p, const float* __restrict__ x, float* __restrict__ V) {
  constexpr int a = F::m + 2;
  const int ct = blockIdx.x * kThreads + threadIdx.x;
  if (ct >= p.C * p.tiles) return;
  const int t = ct % p.tiles, c = ct / p.tiles;
  const int tw = t % p.tiles_w, th = (t / p.tiles_w) % p.tiles_h, n = t / (p.tiles_w * p.tiles_h);
  const int h0 = F::m * th - p.pad_h, w0 = F::m * tw - p.pad_w;
  const float* src = x + int64_t(n) * p.xs[0] + int64_t(c) * p.xs[1];
  float d[a][a];
#pragma unroll
  for (int i = 0; i < a; ++i) {
    const int h = h0 + i;
    const bool row_in = h >= 0 && h < p.H;
#pragma unroll
    for (int j = 0; j < a; ++j) {
      const int ww = w0 + j;
      d[i][j] = row_in && ww >= 0 && ww < p.W ? src[int64_t(h) * p.xs[3] + int64_t(ww) * p.xs[4]] : 0.f;
    }
  }
  float v[a][a];
  sandwich<typename F::BT>(d, v);
  const int64_t plane = int64_t(p.C) * p.tiles;
  store_planes<a>(V + ct, plane, v);  // V[e][c][t] at e * C * tiles + c * tiles + t
}

// ---------------------------------------------------------------- 4. output transform

struct OutputParams {
  int K, P, Q;
  int tiles_h, tiles_w, tiles;
  int64_t ys[5];  // y strides (n, k, o, p, q)
  float alpha, beta;
};

// One thread per (k, tile), tile fastest: the E reads of M are coalesced. Writes the tile's m x m
// outputs that lie inside P x Q (the last tile row / column is cut when m does not divide P or Q),
// y = alpha * out + beta * y; beta == 0 never reads y (it may hold NaN).
template <class F>
__global__ void __launch_bounds__(kThreads)
    output_transform_kernel(OutputParams p, const float* __restrict__ M, float* __restrict__ y) {
  constexpr int a = F::m + 2;
  const int kt = blockIdx.x * kThreads + threadIdx.x;
  if (kt >= p.K * p.tiles) return;
  const int t = kt % p.tiles, k = kt / p.tiles;
  const int tw = t % p.tiles_w, th = (t / p.tiles_w) % p.tiles_h, n = t / (p.tiles_w * p.tiles_h);
  const int64_t plane = int64_t(p.K) * p.tiles;
  float mt[a][a];
  load_planes<a>(M + kt, plane, mt);  // M[e][k][t] at e * K * tiles + k * tiles + t
  float out[F::m][F::m];
  sandwich<typename F::AT>(mt, out);
  float* dst = y + int64_t(n) * p.ys[0] + int64_t(k) * p.ys[1];
#pragma unroll
  for (int i = 0; i < F::m; ++i) {
    const int oh = F::m * th + i;
    if (oh >= p.P) continue;
#pragma unroll
    for (int j = 0; j < F::m; ++j) {
      const int ow = F::m * tw + j;
      if (ow >= p.Q) continue;
      float* o = dst + int64_t(oh) * p.ys[3] + int64_t(ow) * p.ys[4];
      float v = p.alpha * out[i][j];
      if (p.beta != 0.f) v += p.beta * *o;
      *o = v;
    }
  }
}

unsigned blocks_for(int64_t threads) { return unsigned((threads + kThreads - 1) / kThreads); }

template <class F>
class WinogradNonfused final : public ConvSolver {
  static constexpr int kE = (F::m + 2) * (F::m + 2);

 public:
  const char* name() const override { return F::name; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    Plan pl;
    if (const char* why = make_plan(p, F::m, &pl)) return Verdict::no(why);
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem& p) const override {
    Plan pl;
    if (make_plan(p, F::m, &pl) != nullptr) return 0;
    return size_t(pl.total) * sizeof(float);
  }

  Status run(const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes, cudaStream_t stream) const override {
    Plan pl;
    if (const char* why = make_plan(p, F::m, &pl)) return fail(JHDNN_STATUS_NOT_SUPPORTED, "%s: %s", name(), why);
    if (!a.x || !a.w || !a.y) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: x, w or y is null", name());
    const size_t need = size_t(pl.total) * sizeof(float);
    if (ws_bytes < need || ws == nullptr)
      return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "%s: workspace of %zu bytes < %zu needed", name(),
                  ws_bytes, need);
    float* U = static_cast<float*>(ws) + pl.u_off;
    float* V = static_cast<float*>(ws) + pl.v_off;
    float* M = static_cast<float*>(ws) + pl.m_off;

    FilterParams fp{};
    fp.K = int(p.K);
    fp.C = int(p.C);
    fp.flip = p.mode == JHDNN_CONVOLUTION ? 1 : 0;
    for (int i = 0; i < 5; ++i) fp.ws[i] = p.w_stride[i];
    filter_transform_kernel<F><<<blocks_for(p.K * p.C), kThreads, 0, stream>>>(fp, static_cast<const float*>(a.w), U);
    JHDNN_LAUNCH_CHECK();

    // Per chunk of images: input transform, the E GEMMs, output transform (U is shared). The chunks
    // reuse one V and one M. By default there is one chunk (the whole batch, chunk.h); more only over
    // the 4 GiB workspace cap or when JHDNN_WINOGRAD_CHUNK asks.
    const float* x = static_cast<const float*>(a.x);
    float* y = static_cast<float*>(a.y);
    for (int64_t n0 = 0; n0 < p.N; n0 += pl.chunk) {
      const int64_t nc = n0 + pl.chunk <= p.N ? pl.chunk : p.N - n0;
      const int64_t tiles = nc * pl.tiles_h * pl.tiles_w;  // this chunk's GEMM length

      InputParams ip{};
      ip.C = int(p.C);
      ip.H = int(p.H);
      ip.W = int(p.W);
      ip.pad_h = p.pad_h;
      ip.pad_w = p.pad_w;
      ip.tiles_h = int(pl.tiles_h);
      ip.tiles_w = int(pl.tiles_w);
      ip.tiles = int(tiles);
      for (int i = 0; i < 5; ++i) ip.xs[i] = p.x_stride[i];
      input_transform_kernel<F><<<blocks_for(p.C * tiles), kThreads, 0, stream>>>(ip, x + n0 * p.x_stride[0], V);
      JHDNN_LAUNCH_CHECK();

      // Row-major M[e] (K x T) = U[e] (K x C) V[e] (C x T) is the column-major
      // M[e]^T (T x K, ld T) = V[e]^T (T x C, ld T) U[e]^T (C x K, ld C): no transposes, the long
      // dimension T on m (128-row tiles) and K on n (the library takes a 64-column tile for K = 64).
      gemm::GemmDesc d;
      d.m = tiles;
      d.n = p.K;
      d.k = p.C;
      d.a = V;
      d.lda = tiles;
      d.b = U;
      d.ldb = p.C;
      d.c = M;
      d.ldc = tiles;
      d.batch_outer = 1;
      d.batch_inner = kE;
      d.a_inner = p.C * tiles;
      d.b_inner = p.K * p.C;
      d.c_inner = p.K * tiles;
      d.alpha = 1.f;
      d.beta = 0.f;
      JHDNN_TRY(gemm::sgemm(d, stream));

      OutputParams op{};
      op.K = int(p.K);
      op.P = int(p.P);
      op.Q = int(p.Q);
      op.tiles_h = int(pl.tiles_h);
      op.tiles_w = int(pl.tiles_w);
      op.tiles = int(tiles);
      for (int i = 0; i < 5; ++i) op.ys[i] = p.y_stride[i];
      op.alpha = float(a.alpha);
      op.beta = float(a.beta);
      output_transform_kernel<F><<<blocks_for(p.K * tiles), kThreads, 0, stream>>>(op, M, y + n0 * p.y_stride[0]);
      JHDNN_LAUNCH_CHECK();
    }
    return Status::success();
  }

  Status load_kernels() const override {
    cudaFuncAttributes attr;
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(filter_transform_kernel<F>)));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(input_transform_kernel<F>)));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(output_transform_kernel<F>)));
    return gemm::load_kernels();
  }
};

}  // namespace
}  // namespace winograd

const ConvSolver& winograd_nonfused_2x2_solver() {
  static const auto& s = *new winograd::WinogradNonfused<winograd::F2>;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

const ConvSolver& winograd_nonfused_4x4_solver() {
  static const auto& s = *new winograd::WinogradNonfused<winograd::F4>;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
