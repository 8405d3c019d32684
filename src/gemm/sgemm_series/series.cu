// The step table and the argument check every step shares.
#include "gemm/sgemm_series/series.h"

namespace jhdnn::gemm::series {

const char* check_basic(const Args& a) {
  if (a.m < 0 || a.n < 0 || a.k < 0) return "m, n and k must be >= 0";
  if (a.lda < (a.m > 1 ? a.m : 1) || a.ldb < (a.k > 1 ? a.k : 1) || a.ldc < (a.m > 1 ? a.m : 1))
    return "lda >= m, ldb >= k and ldc >= m are required (column-major, no transposes)";
  if (a.m > 0 && a.n > 0 && (a.c == nullptr || (a.k > 0 && (a.a == nullptr || a.b == nullptr))))
    return "A, B or C is NULL";
  return nullptr;
}

const std::vector<Step>& steps() {
  static const std::vector<Step> s = {
      {1, "naive", "any shape", run_01_naive},
      {2, "coalesced", "any shape", run_02_coalesced},
      {3, "smem_tiling", "m, n, k multiples of 32", run_03_smem_tiling},
      {4, "blocktile_1d", "m, n multiples of 64, k of 8", run_04_blocktile_1d},
      {5, "blocktile_2d", "m, n multiples of 128, k of 8", run_05_blocktile_2d},
      {6, "vectorized", "m, n multiples of 128, k of 8; lda, ldb multiples of 4; A, B 16-byte aligned",
       run_06_vectorized},
      {7, "warptile", "m, n multiples of 128, k of 8; lda, ldb multiples of 4; A, B 16-byte aligned",
       run_07_warptile},
      {8, "double_buffer", "any shape (the library's general kernel)", run_08_double_buffer},
      {9, "cp_async", "m, n multiples of 128, k of 8; lda a multiple of 4; A 16-byte aligned", run_09_cp_async},
      {10, "async_bk16", "any m, n, k; lda a multiple of 4; A 16-byte aligned (the library's fast kernel)",
       run_10_async_bk16},
  };
  return s;
}

}  // namespace jhdnn::gemm::series
