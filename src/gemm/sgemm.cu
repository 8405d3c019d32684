// Host side of the library SGEMM: argument checks, the choice between the cp.async kernel
// (sgemm_async.cu) and the general step-08 kernel, the transpose -> kernel-variant map, launch.
#include "gemm/gemm.h"

#include <climits>
#include <cstdint>

#include "core/cuda_check.h"
#include "gemm/sgemm_async.h"
#include "gemm/sgemm_kernel.cuh"
#include "gemm/sgemm_params.h"

namespace jhdnn::gemm {

static_assert(kernel::kBM == kTileM && kernel::kBN == kTileN, "gemm.h's tile constants describe the wide kernel");

namespace {

using core::fail;

thread_local SgemmRun t_last_run;  // what this thread's last sgemm call launched

// a * b + c without overflow, into *out; false when it does not fit int64.
bool mul_add(int64_t a, int64_t b, int64_t c, int64_t* out) {
  int64_t t;
  if (__builtin_mul_overflow(a, b, &t)) return false;
  return !__builtin_add_overflow(t, c, out);
}

// Largest element offset + 1 that a (rows x cols, column-major, ld) operand touches over all
// batches; false on int64 overflow.
bool span_of(int64_t rows, int64_t cols, int64_t ld, int64_t bo, int64_t so, int64_t bi, int64_t si,
             int64_t* out) {
  int64_t s = 0;
  if (!mul_add(cols - 1, ld, rows, &s)) return false;
  if (!mul_add(bo - 1, so, s, &s)) return false;
  return mul_add(bi - 1, si, s, out);
}

template <bool kA, bool kB, int kBn>
Status launch(kernel::Params prm, const LinearCombination& epi, cudaStream_t stream) {
  prm.tiles_n = int((int64_t(prm.n) + kBn - 1) / kBn);
  int64_t work;
  if (__builtin_mul_overflow(int64_t(prm.tiles_m) * prm.tiles_n, prm.batch_count, &work))
    return core::fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "sgemm: tile count overflows int64");
  const unsigned blocks = unsigned(work < INT_MAX ? work : INT_MAX);
  kernel::sgemm_kernel<kA, kB, kBn, LinearCombination><<<blocks, kernel::threads_for(kBn), 0, stream>>>(prm, epi);
  JHDNN_LAUNCH_CHECK();
  t_last_run = SgemmRun{SgemmPath::kFallback, kernel::kBM, kBn, 1};
  return Status::success();
}

// Fraction of the columns of bn-wide tiles that n columns fill.
double fill(int64_t n, int bn) { return double(n) / double((n + bn - 1) / bn * bn); }

template <bool kA, bool kB>
Status launch_tile(const kernel::Params& prm, const LinearCombination& epi, cudaStream_t stream) {
  // The narrow (128 x 64) tile when it wastes clearly less of its columns (n = 64, 192, ...): it
  // reuses each loaded element fewer times, so it only pays where the wide tile would idle.
  if (fill(prm.n, kernel::kBN / 2) >= fill(prm.n, kernel::kBN) + 0.15)
    return launch<kA, kB, kernel::kBN / 2>(prm, epi, stream);
  return launch<kA, kB, kernel::kBN>(prm, epi, stream);
}

}  // namespace

Status sgemm(const GemmDesc& d, cudaStream_t stream) { return sgemm_path(d, SgemmPath::kAuto, 0, stream); }

SgemmRun last_sgemm_run() { return t_last_run; }

Status sgemm_path(const GemmDesc& d, SgemmPath path, int split, cudaStream_t stream) {
  t_last_run = SgemmRun{};
  if (path != SgemmPath::kAuto && path != SgemmPath::kFallback && path != SgemmPath::kAsync)
    return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: unknown kernel path %d", int(path));
  if (split != 0 && split != 1 && split != 2 && split != 4 && split != 8)
    return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: split (%d) must be 0 (choose), 1, 2, 4 or 8", split);
  if (d.m < 0 || d.n < 0 || d.k < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: m (%lld), n (%lld), k (%lld) must be >= 0", (long long)d.m,
                (long long)d.n, (long long)d.k);
  if (d.m > INT_MAX || d.n > INT_MAX || d.k > INT_MAX)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sgemm: m, n and k must each be <= %d", INT_MAX);
  if (d.batch_outer < 0 || d.batch_inner < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: batch counts must be >= 0");
  if (d.m == 0 || d.n == 0 || d.batch_outer == 0 || d.batch_inner == 0) return Status::success();

  const int64_t a_rows = d.trans_a ? d.k : d.m, a_cols = d.trans_a ? d.m : d.k;
  const int64_t b_rows = d.trans_b ? d.n : d.k, b_cols = d.trans_b ? d.k : d.n;
  if (d.ldc < d.m || d.ldc < 1) return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: ldc (%lld) < m (%lld)", (long long)d.ldc, (long long)d.m);
  if (d.c == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "sgemm: C is NULL");
  int64_t span = 0, batches = 0;
  if (__builtin_mul_overflow(d.batch_outer, d.batch_inner, &batches))
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "sgemm: batch count overflows int64");
  if (!span_of(d.m, d.n, d.ldc, d.batch_outer, d.c_outer, d.batch_inner, d.c_inner, &span))
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "sgemm: C's extent overflows int64");
  if (d.k > 0) {
    if (d.lda < a_rows || d.lda < 1)
      return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: lda (%lld) < rows of stored A (%lld)", (long long)d.lda, (long long)a_rows);
    if (d.ldb < b_rows || d.ldb < 1)
      return fail(JHDNN_STATUS_BAD_PARAM, "sgemm: ldb (%lld) < rows of stored B (%lld)", (long long)d.ldb, (long long)b_rows);
    if (d.a == nullptr || d.b == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "sgemm: A or B is NULL");
    if (!span_of(a_rows, a_cols, d.lda, d.batch_outer, d.a_outer, d.batch_inner, d.a_inner, &span) ||
        !span_of(b_rows, b_cols, d.ldb, d.batch_outer, d.b_outer, d.batch_inner, d.b_inner, &span))
      return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "sgemm: A's or B's extent overflows int64");
  }

  // The cp.async kernel (series step 10) when the operands allow its copies and every output
  // tile gets its own CTA (ceil(m/64) ceil(n/64) batches bounds every tile variant's count);
  // otherwise, or when forced, the general kernel.
  const bool async_ok = async::supported(d);
  if (path == SgemmPath::kAsync && !async_ok)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                "sgemm: the cp.async kernel needs a transposed B 16-byte aligned with ldb and its batch strides "
                "multiples of 4 (and the same of A when B is transposed)");
  const int64_t tiles64 = (d.m + 63) / 64 * ((d.n + 63) / 64);  // < 2^50
  int64_t max_work = 0;
  const bool fits = !__builtin_mul_overflow(tiles64, batches, &max_work) && max_work <= INT_MAX;
  if (path == SgemmPath::kAsync && !fits)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sgemm: the cp.async kernel takes at most %d output tiles", INT_MAX);
  if (path == SgemmPath::kAsync || (path == SgemmPath::kAuto && async_ok && fits && d.k > 0))
    return async::launch(d, batches, split, &t_last_run, stream);

  kernel::Params prm{};
  set_problem_params(prm, d, batches);
  prm.tiles_m = int((d.m + kernel::kBM - 1) / kernel::kBM);
  prm.tiles_n = 0;  // set by launch() for the tile width it picks
  prm.c_vec = reinterpret_cast<uintptr_t>(d.c) % 16 == 0 && d.ldc % 4 == 0 && d.c_outer % 4 == 0 &&
              d.c_inner % 4 == 0;

  LinearCombination epi;
  epi.alpha = d.alpha;
  epi.beta = d.beta;
  // A is K-major (contiguous along k) when transposed; B when not transposed.
  if (!d.trans_a && !d.trans_b) return launch_tile<false, true>(prm, epi, stream);
  if (!d.trans_a && d.trans_b) return launch_tile<false, false>(prm, epi, stream);
  if (d.trans_a && !d.trans_b) return launch_tile<true, true>(prm, epi, stream);
  return launch_tile<true, false>(prm, epi, stream);
}

Status load_kernels() {
  cudaFuncAttributes attr;
  using E = LinearCombination;
  constexpr int kW = kernel::kBN, kN = kernel::kBN / 2;
  const void* ks[] = {
      reinterpret_cast<const void*>(kernel::sgemm_kernel<false, true, kW, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<false, false, kW, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<true, true, kW, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<true, false, kW, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<false, true, kN, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<false, false, kN, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<true, true, kN, E>),
      reinterpret_cast<const void*>(kernel::sgemm_kernel<true, false, kN, E>),
  };
  for (const void* k : ks) JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, k));
  return async::load_kernels();
}

}  // namespace jhdnn::gemm
