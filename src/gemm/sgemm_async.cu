// Host side of the cp.async SGEMM kernel: eligibility, tile variant, split-K, launch.
#include "gemm/sgemm_async.h"

#include <atomic>
#include <climits>
#include <cstdint>

#include "core/cuda_check.h"
#include "gemm/sgemm_async.cuh"
#include "gemm/sgemm_params.h"

namespace jhdnn::gemm::async {
namespace {

using core::fail;
using Epi = LinearCombination;

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Raises the kernel's dynamic shared memory limit (above the default 48 KiB) and asks for the
// largest shared-memory carveout, once per device and instantiation. Concurrent first calls
// just set the same attributes twice.
template <bool kA, bool kB, int kWm, int kWn, bool kSplit, int kAVec = 4>
Status prepare() {
  static std::atomic<uint64_t> done{0};
  int dev = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t(1) << dev : 0;
  if (bit != 0 && (done.load(std::memory_order_acquire) & bit) != 0) return Status::success();
  auto* k = sgemm_async_kernel<kA, kB, kWm, kWn, kSplit, Epi, kAVec>;
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes(kWm, kWn)));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                      int(cudaSharedmemCarveoutMaxShared)));
  done.fetch_or(bit, std::memory_order_acq_rel);
  return Status::success();
}

// Split-K is compiled for the 128-thread tiles only (64 x 128 and 128 x 64): a problem with so few
// output tiles that it needs split-K also prefers the smaller tile.
constexpr bool splits(int wm, int wn) { return wm * wn == 4; }

// K slices per output tile. Auto: double while the grid still fits in one wave of resident CTAs
// and every slice keeps >= 4 K tiles (64 k) to amortize its pipeline fill and the reduction.
// Powers of two up to 8 (the portable cluster size), which divide every tile for the reduction.
int choose_split(int req, int64_t work, int k_tiles, int k, int wave) {
  if (req == 1 || k > INT_MAX / 2) return 1;  // k_begin + k_per_split stays in int
  int s = 1;
  if (req >= 2) {
    s = req >= 8 ? 8 : (req >= 4 ? 4 : 2);
    while (s > 1 && k_tiles < s) s /= 2;  // at least one K tile per slice
  } else {
    while (s < 8 && work * 2 * s <= wave && k_tiles >= 2 * s * 4) s *= 2;
  }
  if (work * s > INT_MAX) return 1;
  return s;
}

template <bool kA, bool kB, int kWm, int kWn, int kAVec>
Status launch_variant(Params prm, int64_t batches, int split_req, int sms, const Epi& epi, SgemmRun* run,
                      cudaStream_t stream) {
  constexpr int kBM = tile_m(kWm), kBN = tile_n(kWn), kT = threads(kWm, kWn), kSmem = smem_bytes(kWm, kWn);
  prm.tiles_m = int((int64_t(prm.m) + kBM - 1) / kBM);
  prm.tiles_n = int((int64_t(prm.n) + kBN - 1) / kBN);
  int64_t work;
  if (__builtin_mul_overflow(int64_t(prm.tiles_m) * prm.tiles_n, batches, &work))
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "sgemm: tile count overflows int64");
  if (work > INT_MAX)  // one CTA per work item (sgemm_path only comes here when it fits)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sgemm: the cp.async kernel takes at most %d output tiles", INT_MAX);
  const int k_tiles = prm.k / kBK + (prm.k % kBK != 0);

  if constexpr (splits(kWm, kWn)) {
    const int split = choose_split(split_req, work, k_tiles, prm.k, sms * min_blocks(kWm, kWn));
    if (split > 1) {
      JHDNN_TRY((prepare<kA, kB, kWm, kWn, true, kAVec>()));
      prm.split = split;
      prm.k_per_split = (k_tiles + split - 1) / split * kBK;
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(unsigned(work * split));
      cfg.blockDim = dim3(kT);
      cfg.dynamicSmemBytes = kSmem;
      cfg.stream = stream;
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = unsigned(split);
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      if (cudaLaunchKernelEx(&cfg, sgemm_async_kernel<kA, kB, kWm, kWn, true, Epi, kAVec>, prm, epi) == cudaSuccess) {
        *run = SgemmRun{SgemmPath::kAsync, kBM, kBN, split, kAVec == 1};
        return Status::success();
      }
      // A cluster this device cannot schedule (a launch-configuration error, not sticky): clear
      // it and run unsplit, which is always possible. last_sgemm_run() then shows split 1.
      (void)cudaGetLastError();
    }
  }
  JHDNN_TRY((prepare<kA, kB, kWm, kWn, false, kAVec>()));
  prm.split = 1;
  prm.k_per_split = 0;
  sgemm_async_kernel<kA, kB, kWm, kWn, false, Epi, kAVec><<<unsigned(work), kT, kSmem, stream>>>(prm, epi);
  JHDNN_LAUNCH_CHECK();
  *run = SgemmRun{SgemmPath::kAsync, kBM, kBN, 1, kAVec == 1};
  return Status::success();
}

template <int kWm, int kWn>
Status launch_tile(const GemmDesc& d, bool a_4byte, const Params& prm, int64_t batches, int split, int sms,
                   const Epi& epi, SgemmRun* run, cudaStream_t stream) {
  // 4-byte copies of an m-contiguous A: compiled for A and B not transposed only (see mode()).
  if (a_4byte) return launch_variant<false, true, kWm, kWn, 1>(prm, batches, split, sms, epi, run, stream);
  // A is K-major (contiguous along k) when transposed; B when not transposed.
  if (!d.trans_a && !d.trans_b) return launch_variant<false, true, kWm, kWn, 4>(prm, batches, split, sms, epi, run, stream);
  if (!d.trans_a && d.trans_b) return launch_variant<false, false, kWm, kWn, 4>(prm, batches, split, sms, epi, run, stream);
  if (d.trans_a && !d.trans_b) return launch_variant<true, true, kWm, kWn, 4>(prm, batches, split, sms, epi, run, stream);
  return launch_variant<true, false, kWm, kWn, 4>(prm, batches, split, sms, epi, run, stream);
}

// Fraction of the columns of bn-wide tiles that n columns fill.
double fill(int64_t n, int bn) { return double(n) / double((n + bn - 1) / bn * bn); }

template <int kWm, int kWn, bool kSplit>
Status load_tile() {
  JHDNN_TRY((prepare<false, true, kWm, kWn, kSplit, 1>()));
  JHDNN_TRY((prepare<false, true, kWm, kWn, kSplit>()));
  JHDNN_TRY((prepare<false, false, kWm, kWn, kSplit>()));
  JHDNN_TRY((prepare<true, true, kWm, kWn, kSplit>()));
  return prepare<true, false, kWm, kWn, kSplit>();
}

}  // namespace

namespace {

enum class Mode { kNone, kVec16, kA4Byte };

// kVec16: every m/n-contiguous operand can be copied as 16-byte vectors. kA4Byte: A is
// m-contiguous without that alignment and B is k-contiguous (the column-major NN and row-major NN
// shapes with an odd m, e.g. m = 1 or 8191): A by 4-byte copies. kNone: the general kernel.
Mode mode(const GemmDesc& d) {
  auto mn_major_ok = [&](const float* p, int64_t ld, int64_t so, int64_t si) {
    return aligned(p, 16) && ld % 4 == 0 && (d.batch_outer <= 1 || so % 4 == 0) && (d.batch_inner <= 1 || si % 4 == 0);
  };
  const bool a_ok = d.trans_a ? aligned(d.a, 4) : mn_major_ok(d.a, d.lda, d.a_outer, d.a_inner);
  const bool b_ok = d.trans_b ? mn_major_ok(d.b, d.ldb, d.b_outer, d.b_inner) : aligned(d.b, 4);
  if (a_ok && b_ok) return Mode::kVec16;
  if (!d.trans_a && !d.trans_b && aligned(d.a, 4) && aligned(d.b, 4)) return Mode::kA4Byte;
  return Mode::kNone;
}

}  // namespace

bool supported(const GemmDesc& d) { return mode(d) != Mode::kNone; }

Status launch(const GemmDesc& d, int64_t batches, int split, SgemmRun* run, cudaStream_t stream) {
  Params prm{};
  set_problem_params(prm, d, batches);
  prm.split = 1;
  prm.c_vec = aligned(d.c, 16) && d.ldc % 4 == 0 && (d.batch_outer <= 1 || d.c_outer % 4 == 0) &&
              (d.batch_inner <= 1 || d.c_inner % 4 == 0);
  Epi epi;
  epi.alpha = d.alpha;
  epi.beta = d.beta;
  int dev = 0, sms = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&dev));
  JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  // m <= 64: a 64 x 128 tile (half of the 128-row tile would idle). A narrow 128 x 64 tile when n
  // <= 64 or it fills clearly more of its columns (n = 192, 320, ...), or when 128 x 128 tiles
  // would not fill half a wave (one per SM; it may then also split k); else 128 x 128.
  const bool a4 = mode(d) == Mode::kA4Byte;
  if (d.m <= 64) return launch_tile<1, 4>(d, a4, prm, batches, split, sms, epi, run, stream);
  const int64_t wide_tiles = (d.m + 127) / 128 * ((d.n + 127) / 128);  // < 2^48
  const bool few_tiles = split >= 2 || (split == 0 && batches <= sms && wide_tiles * batches <= sms);
  if (d.n <= 64 || fill(d.n, 64) >= fill(d.n, 128) + 0.15 || few_tiles)
    return launch_tile<2, 2>(d, a4, prm, batches, split, sms, epi, run, stream);
  return launch_tile<2, 4>(d, a4, prm, batches, split, sms, epi, run, stream);
}

Status load_kernels() {
  JHDNN_TRY((load_tile<1, 4, false>()));
  JHDNN_TRY((load_tile<1, 4, true>()));
  JHDNN_TRY((load_tile<2, 2, false>()));
  JHDNN_TRY((load_tile<2, 2, true>()));
  return load_tile<2, 4, false>();
}

}  // namespace jhdnn::gemm::async
