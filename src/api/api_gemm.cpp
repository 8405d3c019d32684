// GEMM shims: validate the public arguments, then run FLOAT FMA GEMMs on the column-major library
// GEMM (gemm.h) and tensor-core GEMMs (HALF, BFLOAT16, FLOAT as TF32) on the row-major tensor-core
// GEMM (gemm/tensorcore/gemm_tc.h), on the handle's stream.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime_api.h>

#include "api/api_common.h"
#include "conv/dispatch.h"
#include "core/cuda_check.h"
#include "core/device_info.h"
#include "core/descriptors.h"
#include "core/extent.h"
#include "core/env.h"
#include "gemm/gemm.h"
#include "gemm/tensorcore/gemm_tc.h"

using namespace jhdnn;
using core::fail;
using core::Status;
using core::extent;
using core::overlaps;

namespace {

bool is_tc_type(jhdnnDataType_t t) {
  return t == JHDNN_DATA_HALF || t == JHDNN_DATA_BFLOAT16 || t == JHDNN_DATA_FLOAT;
}

// The tensor-core path: the storage order maps onto the row-major tensor-core GEMM, one launch per
// batch (the kernels are persistent and fill the GPU on their own for any sizable matrix).
// Row-major C = op(A) op(B) as is; column-major C is the row-major C^T (n x m) = op(B)^T op(A)^T,
// where op(B)^T is B's storage read as a row-major n x k (K contiguous when transB == N) and
// op(A)^T is A's storage read as a row-major k x m, or m x k when transA == T ("N x K" storage).
Status tc_gemm(jhdnnDataType_t ab_type, jhdnnDataType_t c_type, bool row, bool op_a, bool op_b, int64_t m, int64_t n,
               int64_t k, float alpha, const void* A, int64_t lda, int64_t strideA, const void* B, int64_t ldb,
               int64_t strideB, float beta, void* C, int64_t ldc, int64_t strideC, int64_t batch,
               cudaStream_t stream) {
  gemm::tensorcore::TcKernel ceiling;
  JHDNN_TRY(gemm::tensorcore::tc_kernel_ceiling(&ceiling));
  const int64_t es_ab = int64_t(core::data_type_size(ab_type)), es_c = int64_t(core::data_type_size(c_type));
  // Row-major problem: M x N output, A' (trans_a: stored K x M), B' (trans_b: stored N x K).
  const int64_t M = row ? m : n, N = row ? n : m;
  const bool trans_a = row ? op_a : op_b, trans_b = row ? op_b : op_a;
  const char* a0 = static_cast<const char*>(row ? A : B);
  const char* b0 = static_cast<const char*>(row ? B : A);
  const int64_t lda2 = row ? lda : ldb, ldb2 = row ? ldb : lda;
  const int64_t sa = (row ? strideA : strideB) * es_ab, sb = (row ? strideB : strideA) * es_ab, sc = strideC * es_c;
  for (int64_t i = 0; i < batch; ++i) {
    void* c = static_cast<char*>(C) + i * sc;
    if (k == 0) {
      JHDNN_TRY(gemm::tensorcore::scale_c(c_type, M, N, beta, c, ldc, stream));
      continue;
    }
    JHDNN_TRY(gemm::tensorcore::gemm_ex(ab_type, c_type, trans_a, trans_b, M, N, k, alpha, a0 + i * sa, lda2,
                                        b0 + i * sb, ldb2, beta, c, ldc, ceiling, stream));
  }
  return Status::success();
}

// Every GEMM entry point. jhdnnGemm passes (dtype, dtype, FMA_MATH) for FLOAT and
// (dtype, dtype, DEFAULT_MATH) otherwise; jhdnnGemmEx passes the caller's types and math type.
Status gemm_impl(jhdnnHandle_t handle, jhdnnDataType_t ab_type, jhdnnDataType_t c_type, jhdnnMathType_t math,
                 jhdnnOrder_t order, jhdnnGemmOp_t ta, jhdnnGemmOp_t tb, int64_t m, int64_t n, int64_t k,
                 const void* alpha, const void* A, int64_t lda, int64_t strideA, const void* B, int64_t ldb,
                 int64_t strideB, const void* beta, void* C, int64_t ldc, int64_t strideC, int64_t batch) {
  JHDNN_CHECK_NULL(handle);
  if (order != JHDNN_ORDER_ROW && order != JHDNN_ORDER_COL)
    return fail(JHDNN_STATUS_BAD_PARAM, "order (%d) is not a jhdnnOrder_t", int(order));
  if ((ta != JHDNN_GEMM_OP_N && ta != JHDNN_GEMM_OP_T) || (tb != JHDNN_GEMM_OP_N && tb != JHDNN_GEMM_OP_T))
    return fail(JHDNN_STATUS_BAD_PARAM, "transA (%d) / transB (%d) is not a jhdnnGemmOp_t", int(ta), int(tb));
  if (!is_tc_type(ab_type))
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                "GEMM data type %s is not supported (FLOAT, HALF or BFLOAT16 for A and B)",
                core::data_type_name(ab_type));
  if (c_type != ab_type && !(c_type == JHDNN_DATA_FLOAT && ab_type != JHDNN_DATA_FLOAT))
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "GEMM C type %s with A/B type %s is not supported (C must be %s%s)",
                core::data_type_name(c_type), core::data_type_name(ab_type), core::data_type_name(ab_type),
                ab_type == JHDNN_DATA_FLOAT ? "" : " or FLOAT");
  if (math != JHDNN_DEFAULT_MATH && math != JHDNN_TENSOR_OP_MATH && math != JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
      math != JHDNN_FMA_MATH)
    return fail(JHDNN_STATUS_BAD_PARAM, "mathType (%d) is not a jhdnnMathType_t", int(math));
  if (math == JHDNN_FMA_MATH && ab_type != JHDNN_DATA_FLOAT)
    return fail(JHDNN_STATUS_NOT_SUPPORTED,
                "FMA_MATH never uses tensor cores, and jhDNN runs %s GEMMs on tensor cores only (use DEFAULT_MATH)",
                core::data_type_name(ab_type));
  if (m < 0 || n < 0 || k < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "m (%lld), n (%lld) and k (%lld) must be >= 0", (long long)m, (long long)n,
                (long long)k);
  if (batch < 0) return fail(JHDNN_STATUS_BAD_PARAM, "batchCount (%lld) must be >= 0", (long long)batch);
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "strideA, strideB and strideC must be >= 0");
  JHDNN_CHECK_NULL(alpha);
  JHDNN_CHECK_NULL(beta);

  // Stored shapes (rows x cols in the given order's sense) and the leading-dimension minimums.
  const bool row = order == JHDNN_ORDER_ROW;
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
  const int64_t es_ab = int64_t(core::data_type_size(ab_type)), es_c = int64_t(core::data_type_size(c_type));
  JHDNN_TRY(core::check_device_pointer(C, size_t(es_c), "C", handle->device));
  if (k > 0) {
    JHDNN_TRY(core::check_device_pointer(A, size_t(es_ab), "A", handle->device));
    JHDNN_TRY(core::check_device_pointer(B, size_t(es_ab), "B", handle->device));
    if (overlaps(C, ec * es_c, A, ea * es_ab)) return fail(JHDNN_STATUS_BAD_PARAM, "C overlaps A");
    if (overlaps(C, ec * es_c, B, eb * es_ab)) return fail(JHDNN_STATUS_BAD_PARAM, "C overlaps B");
  }
  const float alpha_f = *static_cast<const float*>(alpha), beta_f = *static_cast<const float*>(beta);

  // Tensor cores: HALF / BFLOAT16 always (FMA_MATH was refused above); FLOAT as TF32 unless the
  // math type, NVIDIA_TF32_OVERRIDE=0 or a pre-sm_80 GPU keeps it on the CUDA cores.
  const bool tensor_cores = ab_type != JHDNN_DATA_FLOAT ||
                            (math != JHDNN_FMA_MATH && core::tf32_allowed_by_env() && handle->device.sm() >= 80);
  if (tensor_cores) return tc_gemm(ab_type, c_type, row, ta == JHDNN_GEMM_OP_T, tb == JHDNN_GEMM_OP_T, m, n, k,
                                   alpha_f, A, lda, strideA, B, ldb, strideB, beta_f, C, ldc, strideC, batch,
                                   handle->stream);

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
  d.alpha = alpha_f;
  d.beta = beta_f;
  return gemm::sgemm(d, handle->stream);
}

}  // namespace

extern "C" {

jhdnnStatus_t jhdnnGemm(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnOrder_t order,
                        jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n, int64_t k,
                        const void* alpha, const void* A, int64_t lda, const void* B, int64_t ldb,
                        const void* beta, void* C, int64_t ldc) {
  return api::guarded([&]() -> Status {
    const jhdnnMathType_t math = dataType == JHDNN_DATA_FLOAT ? JHDNN_FMA_MATH : JHDNN_DEFAULT_MATH;
    return gemm_impl(handle, dataType, dataType, math, order, transA, transB, m, n, k, alpha, A, lda, 0, B, ldb, 0,
                     beta, C, ldc, 0, 1);
  });
}

jhdnnStatus_t jhdnnGemmStridedBatched(jhdnnHandle_t handle, jhdnnDataType_t dataType, jhdnnOrder_t order,
                                      jhdnnGemmOp_t transA, jhdnnGemmOp_t transB, int64_t m, int64_t n,
                                      int64_t k, const void* alpha, const void* A, int64_t lda,
                                      int64_t strideA, const void* B, int64_t ldb, int64_t strideB,
                                      const void* beta, void* C, int64_t ldc, int64_t strideC,
                                      int64_t batchCount) {
  return api::guarded([&]() -> Status {
    const jhdnnMathType_t math = dataType == JHDNN_DATA_FLOAT ? JHDNN_FMA_MATH : JHDNN_DEFAULT_MATH;
    return gemm_impl(handle, dataType, dataType, math, order, transA, transB, m, n, k, alpha, A, lda, strideA, B, ldb,
                     strideB, beta, C, ldc, strideC, batchCount);
  });
}

jhdnnStatus_t jhdnnGemmEx(jhdnnHandle_t handle, jhdnnOrder_t order, jhdnnGemmOp_t transA, jhdnnGemmOp_t transB,
                          int64_t m, int64_t n, int64_t k, const void* alpha, const void* A, int64_t lda,
                          const void* B, int64_t ldb, jhdnnDataType_t abType, const void* beta, void* C, int64_t ldc,
                          jhdnnDataType_t cType, jhdnnMathType_t mathType) {
  return api::guarded([&]() -> Status {
    return gemm_impl(handle, abType, cType, mathType, order, transA, transB, m, n, k, alpha, A, lda, 0, B, ldb, 0,
                     beta, C, ldc, 0, 1);
  });
}

jhdnnStatus_t jhdnnGemmStridedBatchedEx(jhdnnHandle_t handle, jhdnnOrder_t order, jhdnnGemmOp_t transA,
                                        jhdnnGemmOp_t transB, int64_t m, int64_t n, int64_t k, const void* alpha,
                                        const void* A, int64_t lda, int64_t strideA, const void* B, int64_t ldb,
                                        int64_t strideB, jhdnnDataType_t abType, const void* beta, void* C,
                                        int64_t ldc, int64_t strideC, jhdnnDataType_t cType,
                                        jhdnnMathType_t mathType, int64_t batchCount) {
  return api::guarded([&]() -> Status {
    return gemm_impl(handle, abType, cType, mathType, order, transA, transB, m, n, k, alpha, A, lda, strideA, B, ldb,
                     strideB, beta, C, ldc, strideC, batchCount);
  });
}

}  // extern "C"
