// direct_naive: the textbook convolution, one thread per output element.
//
// Each thread walks the whole reduction (C/G input channels x T x R x S taps) for its output,
// reading x and w straight from global memory. Nothing is reused on chip except through the
// caches, so it is slow, but it is short enough to read in one sitting and serves every dtype
// (DOUBLE included), layout, group count and mode. It is the baseline the tiled kernel is
// measured against (see README.md).
#include "conv/direct/direct.h"

#include <cstdint>
#include <limits>

#include "conv/direct/direct_common.cuh"
#include "core/cuda_check.h"

namespace jhdnn::conv {
namespace direct {
namespace {

constexpr int kNaiveThreads = 256;  // a plain 1-D block; nothing here depends on its size

// Index is int when every offset the problem can form fits in 31 bits (cheaper integer
// division and multiplication), int64_t otherwise.
template <class T, class Index>
__global__ void __launch_bounds__(kNaiveThreads)
    direct_naive_kernel(DirectParams prm, const T* __restrict__ x, const T* __restrict__ w,
                        T* __restrict__ y, typename AccType<T>::type alpha,
                        typename AccType<T>::type beta) {
  using Acc = typename AccType<T>::type;
  const Index K = Index(prm.K), O = Index(prm.O), P = Index(prm.P), Q = Index(prm.Q);
  const Index D = Index(prm.D), H = Index(prm.H), W = Index(prm.W);
  const Index T_ = Index(prm.T), R = Index(prm.R), S = Index(prm.S);
  const Index cpg = Index(prm.cpg), kpg = Index(prm.kpg);
  const int64_t total = prm.N * prm.K * prm.O * prm.P * prm.Q;

  // Grid-stride loop: the grid is capped, and the loop counter stays 64-bit so that
  // i + stride cannot overflow even when Index is int.
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(blockDim.x) * gridDim.x) {
    // Output coordinate, q fastest (matches NCHW memory order, so neighbours write neighbours).
    Index rem = Index(i);
    const Index q = rem % Q; rem /= Q;
    const Index p = rem % P; rem /= P;
    const Index o = rem % O; rem /= O;
    const Index k = rem % K;
    const Index n = rem / K;
    const Index g = k / kpg;  // group of this output channel

    const T* xg = x + n * Index(prm.xs[0]) + g * cpg * Index(prm.xs[1]);  // x[n, g*C/G, ...]
    const T* wk = w + k * Index(prm.ws[0]);                               // w[k, ...]

    Acc acc = Acc(0);
    for (Index c = 0; c < cpg; ++c) {
      for (Index t = 0; t < T_; ++t) {
        const Index d = o * prm.stride_d - prm.pad_d + t * prm.dil_d;
        if (d < 0 || d >= D) continue;  // zero padding
        const Index tf = prm.flip ? T_ - 1 - t : t;
        for (Index r = 0; r < R; ++r) {
          const Index h = p * prm.stride_h - prm.pad_h + r * prm.dil_h;
          if (h < 0 || h >= H) continue;
          const Index rf = prm.flip ? R - 1 - r : r;
          for (Index s = 0; s < S; ++s) {
            const Index ww = q * prm.stride_w - prm.pad_w + s * prm.dil_w;
            if (ww < 0 || ww >= W) continue;
            const Index sf = prm.flip ? S - 1 - s : s;
            const Acc xv = to_acc<Acc>(xg[c * Index(prm.xs[1]) + d * Index(prm.xs[2]) +
                                          h * Index(prm.xs[3]) + ww * Index(prm.xs[4])]);
            const Acc wv = to_acc<Acc>(wk[c * Index(prm.ws[1]) + tf * Index(prm.ws[2]) +
                                          rf * Index(prm.ws[3]) + sf * Index(prm.ws[4])]);
            acc += xv * wv;
          }
        }
      }
    }
    T* yp = y + n * Index(prm.ys[0]) + k * Index(prm.ys[1]) + o * Index(prm.ys[2]) +
            p * Index(prm.ys[3]) + q * Index(prm.ys[4]);
    store_output(yp, acc, alpha, beta);
  }
}

template <class T, class Index>
Status launch_typed(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream) {
  using Acc = typename AccType<T>::type;
  const DirectParams prm = make_params(p);
  const unsigned blocks = grid_for(p.y_elems(), kNaiveThreads);
  direct_naive_kernel<T, Index><<<blocks, kNaiveThreads, 0, stream>>>(
      prm, static_cast<const T*>(a.x), static_cast<const T*>(a.w), static_cast<T*>(a.y),
      Acc(a.alpha), Acc(a.beta));
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

template <class T>
Status launch(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream) {
  // 32-bit indexing when the largest offset of every tensor, the output count and the
  // intermediate coordinates (which reach about span * stride) all fit comfortably.
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max() / 8;
  auto coord_fits = [&](int64_t out, int stride, int64_t filt, int dil, int pad, int64_t in) {
    return out * stride + filt * dil + pad < kLimit && in + pad < kLimit;
  };
  const bool small = p.x_span() < kLimit && p.w_span() < kLimit && p.y_span() < kLimit &&
                     p.y_elems() < kLimit &&
                     coord_fits(p.O, p.stride_d, p.T, p.dil_d, p.pad_d, p.D) &&
                     coord_fits(p.P, p.stride_h, p.R, p.dil_h, p.pad_h, p.H) &&
                     coord_fits(p.Q, p.stride_w, p.S, p.dil_w, p.pad_w, p.W);
  return small ? launch_typed<T, int>(p, a, stream) : launch_typed<T, int64_t>(p, a, stream);
}

class DirectNaiveSolver final : public ConvSolver {
 public:
  const char* name() const override { return "direct_naive"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_DIRECT; }

  Verdict can_implement(const ConvProblem& p, const DeviceInfo&) const override {
    if (const char* why = check_common(p, /*allow_double=*/true)) return Verdict::no(why);
    return Verdict::yes();
  }

  size_t workspace_bytes(const ConvProblem&) const override { return 0; }

  Status run(const ConvProblem& p, const ConvArgs& a, void*, size_t, cudaStream_t stream) const override {
    // Workspace: none needed, so any ws / ws_bytes is fine.
    if (const char* why = check_common(p, true))
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "direct_naive: %s", why);
    if (!a.x || !a.w || !a.y)
      return core::fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "direct_naive: x, w or y is null");
    switch (p.dtype) {
      case JHDNN_DATA_FLOAT: return launch<float>(p, a, stream);
      case JHDNN_DATA_DOUBLE: return launch<double>(p, a, stream);
      case JHDNN_DATA_HALF: return launch<__half>(p, a, stream);
      case JHDNN_DATA_BFLOAT16: return launch<__nv_bfloat16>(p, a, stream);
      default: break;
    }
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "direct_naive: unsupported data type");
  }

  Status load_kernels() const override {
    return direct::load_kernels(direct_naive_kernel<float, int32_t>, direct_naive_kernel<float, int64_t>,
                                direct_naive_kernel<double, int32_t>, direct_naive_kernel<double, int64_t>,
                                direct_naive_kernel<__half, int32_t>, direct_naive_kernel<__half, int64_t>,
                                direct_naive_kernel<__nv_bfloat16, int32_t>,
                                direct_naive_kernel<__nv_bfloat16, int64_t>);
  }
};

}  // namespace
}  // namespace direct

const ConvSolver& direct_naive_solver() {
  static const auto& s = *new direct::DirectNaiveSolver;  // leaked: see all_solvers() (registry.cpp)
  return s;
}

}  // namespace jhdnn::conv
