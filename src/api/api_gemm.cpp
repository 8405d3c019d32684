// GEMM shims: validate the public arguments, map the storage order onto the column-major library
// GEMM (gemm.h), run on the handle's stream.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "api/api_common.h"
#include "conv/dispatch.h"
#include "core/cuda_check.h"
#include "core/descriptors.h"
#include "gemm/gemm.h"

using namespace jhdnn;
using core::fail;
using core::Status;

namespace {

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto lo_a = reinterpret_cast<uintptr_t>(a), lo_b = reinterpret_cast<uintptr_t>(b);
  return lo_a < lo_b + uintptr_t(b_bytes) && lo_b < lo_a + uintptr_t(a_bytes);
}

// Elements from a stored (rows x cols, ld) matrix's start to its last element + 1, over the batch.
// -1 on int64 overflow.
int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
  int64_t s, t;
  if (rows == 0 || cols == 0) return 0;
  if (__builtin_mul_overflow(cols - 1, ld, &s) || __builtin_add_overflow(s, rows, &s)) return -1;
  if (__builtin_mul_overflow(batch - 1, stride, &t) || __builtin_add_overflow(s, t, &s)) return -1;
  return s;
}

Status gemm_impl(jhdnnHandle_t handle, jhdnnDataType_t dtype, jhdnnGemmOrder_t order, jhdnnGemmOp_t ta,
                 jhdnnGemmOp_t tb, int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, int64_t lda,
                 int64_t strideA, const void* B, int64_t ldb, int64_t strideB, const void* beta, void* C,
                 int64_t ldc, int64_t strideC, int64_t batch) {
  JHDNN_CHECK_NULL(handle);
  if (order != JHDNN_GEMM_ROW_MAJOR && order != JHDNN_GEMM_COL_MAJOR)
    return fail(JHDNN_STATUS_BAD_PARAM, "order (%d) is not a jhdnnGemmOrder_t", int(order));
  if ((ta != JHDNN_GEMM_OP_N && ta != JHDNN_GEMM_OP_T) || (tb != JHDNN_GEMM_OP_N && tb != JHDNN_GEMM_OP_T))
    return fail(JHDNN_STATUS_BAD_PARAM, "transA (%d) / transB (%d) is not a jhdnnGemmOp_t", int(ta), int(tb));
  if (dtype != JHDNN_DATA_FLOAT)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "GEMM data type %s is not supported (FLOAT only)",
                core::data_type_name(dtype));
  if (m < 0 || n < 0 || k < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "m (%lld), n (%lld) and k (%lld) must be >= 0", (long long)m, (long long)n,
                (long long)k);
  if (batch < 0) return fail(JHDNN_STATUS_BAD_PARAM, "batchCount (%lld) must be >= 0", (long long)batch);
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "strideA, strideB and strideC must be >= 0");
  JHDNN_CHECK_NULL(alpha);
  JHDNN_CHECK_NULL(beta);

  // Stored shapes (rows x cols in the given order's sense) and the leading-dimension minimums.
  const bool row = order == JHDNN_GEMM_ROW_MAJOR;
  const int64_t a_r = ta == JHDNN_GEMM_OP_N ? m : k, a_c = ta == JHDNN_GEMM_OP_N ? k : m;
  const int64_t b_r = tb == JHDNN_GEMM_OP_N ? k : n, b_c = tb == JHDNN_GEMM_OP_N ? n : k;
  auto min_ld = [&](int64_t r, int64_t c) { const int64_t v = row ? c : r; return v > 1 ? v : 1; };
  if (lda < min_ld(a_r, a_c))
    return fail(JHDNN_STATUS_BAD_PARAM, "lda (%lld) < %lld, the %s of stored A", (long long)lda,
                (long long)min_ld(a_r, a_c), row ? "columns" : "rows");
  if (ldb < min_ld(b_r, b_c))
    return fail(JHDNN_STATUS_BAD_PARAM, "ldb (%lld) < %lld, the %s of stored B", (long long)ldb,
                (long long)min_ld(b_r, b_c), row ? "columns" : "rows");
  if (ldc < min_ld(m, n))
    return fail(JHDNN_STATUS_BAD_PARAM, "ldc (%lld) < %lld, the %s of C", (long long)ldc,
                (long long)min_ld(m, n), row ? "columns" : "rows");
  if (m == 0 || n == 0 || batch == 0) return Status::success();

  // Extents in the column-major view: a row-major r x c matrix is a column-major c x r one.
  auto ext = [&](int64_t r, int64_t c, int64_t ld, int64_t stride) {
    return row ? extent(c, r, ld, stride, batch) : extent(r, c, ld, stride, batch);
  };
  const int64_t ea = k > 0 ? ext(a_r, a_c, lda, strideA) : 0, eb = k > 0 ? ext(b_r, b_c, ldb, strideB) : 0;
  const int64_t ec = ext(m, n, ldc, strideC);
  if (ea < 0 || eb < 0 || ec < 0 || ea > INT64_MAX / 4 || eb > INT64_MAX / 4 || ec > INT64_MAX / 4)
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "the matrices' extents overflow 64-bit byte offsets");
  if (batch > 1) {
    const int64_t one_c = ext(m, n, ldc, 0);
    if (strideC < one_c)
      return fail(JHDNN_STATUS_BAD_PARAM, "strideC (%lld) < %lld: batches of C would overlap", (long long)strideC,
                  (long long)one_c);
  }

  // Current device and buffers.
  int current = -1;
  JHDNN_CUDA_TRY(cudaGetDevice(&current));
  if (current != handle->device.device)
    return fail(JHDNN_STATUS_BAD_PARAM, "the current device is %d but the handle was created on device %d", current,
                handle->device.device);
  JHDNN_TRY(conv::check_buffer(C, sizeof(float), "C", handle->device));
  if (k > 0) {
    JHDNN_TRY(conv::check_buffer(A, sizeof(float), "A", handle->device));
    JHDNN_TRY(conv::check_buffer(B, sizeof(float), "B", handle->device));
    if (overlaps(C, ec * 4, A, ea * 4)) return fail(JHDNN_STATUS_BAD_PARAM, "C overlaps A");
    if (overlaps(C, ec * 4, B, eb * 4)) return fail(JHDNN_STATUS_BAD_PARAM, "C overlaps B");
  }

  gemm::GemmDesc d;
  const bool op_a = ta == JHDNN_GEMM_OP_T, op_b = tb == JHDNN_GEMM_OP_T;
  if (row) {  // C^T = op(B)^T op(A)^T in column-major terms
    d.m = n; d.n = m; d.k = k;
    d.a = static_cast<const float*>(B); d.lda = ldb; d.trans_a = op_b; d.a_outer = strideB;
    d.b = static_cast<const float*>(A); d.ldb = lda; d.trans_b = op_a; d.b_outer = strideA;
  } else {
    d.m = m; d.n = n; d.k = k;
    d.a = static_cast<const float*>(A); d.lda = lda; d.trans_a = op_a; d.a_outer = strideA;
    d.b = static_cast<const float*>(B); d.ldb = ldb; d.trans_b = op_b; d.b_outer = strideB;
  }
  d.c = static_cast<float*>(C);
  d.ldc = ldc;
  d.c_outer = strideC;
  d.batch_outer = batch;
  d.alpha = *static_cast<const float*>(alpha);
  d.beta = *static_cast<const float*>(beta);
  return gemm::sgemm(d, handle->stream);
}

}  // namespace

extern "C" {

jhdnnStatus_t jhdnnGemm(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnGemmOrder_t order,
                        jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n, int64_t k,
                        const void* alpha, const void* A, int64_t lda, const void* B, int64_t ldb,
                        const void* beta, void* C, int64_t ldc) {
  return api::guarded([&]() -> Status {
    return gemm_impl(handle, dataType, order, transA, transB, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc,
                     0, 1);
  });
}

jhdnnStatus_t jhdnnGemmStridedBatched(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnGemmOrder_t order,
                                      jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n,
                                      int64_t k, const void* alpha, const void* A, int64_t lda,
                                      int64_t strideA, const void* B, int64_t ldb, int64_t strideB,
                                      const void* beta, void* C, int64_t ldc, int64_t strideC,
                                      int64_t batchCount) {
  return api::guarded([&]() -> Status {
    return gemm_impl(handle, dataType, order, transA, transB, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                     beta, C, ldc, strideC, batchCount);
  });
}

}  // extern "C"
