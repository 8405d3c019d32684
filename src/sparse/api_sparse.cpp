// extern "C" shims of the sparse section of jhdnn.h: every argument is checked here (with a message
// naming it) before a launcher in sparse/*.cu runs, so the kernels may assume well-formed input.
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "api/api_common.h"
#include "core/cuda_check.h"
#include "core/config.h"
#include "core/descriptors.h"
#include "core/extent.h"
#include "sparse/sparse.h"

using namespace jhdnn;
using core::fail;
using core::Status;

namespace {

Status check_device(jhdnnHandle_t h) {
  int current = -1;
  JHDNN_CUDA_TRY(cudaGetDevice(&current));
  if (current != h->device.device)
    return fail(JHDNN_STATUS_BAD_PARAM, "the current device is %d but the handle was created on device %d", current,
                h->device.device);
  return Status::success();
}

// A device-readable buffer, aligned to its elements, on the handle's device.
Status check_ptr(const void* p, size_t elem, const char* name, const core::DeviceInfo& dev) {
  return core::check_device_pointer(p, elem, name, dev);
}

// A descriptor's row order, if it has one, on the handle's device: jhdnnSetSparseMatrixRowOrder checked it against
// the device current at that time, which need not be the handle's.
Status check_row_order(const jhdnnSparseMatrixStruct& d, const std::string& name, const core::DeviceInfo& dev) {
  return d.row_order ? check_ptr(d.row_order, sizeof(int), (name + " row order").c_str(), dev) : Status::success();
}

// Aligned to `align` bytes (the resident path's weight arrays: whether the kernels may read them is checked where
// they are read, when a descriptor's packed copy is built; see jhdnnSparseDnnLayersForwardResidentTraced).
Status check_aligned(const void* p, size_t align, const char* name, int k) {
  if (reinterpret_cast<uintptr_t>(p) % align != 0)
    return fail(JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                "wtDescs[%d] %s (%p) is not %zu-byte aligned (resident path)", k, name, p, align);
  return Status::success();
}

Status check_value_type(jhdnnDataType_t t) {
  if (t != JHDNN_DATA_FLOAT)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "sparse values must be FLOAT (got %s)", core::data_type_name(t));
  return Status::success();
}

// The kernels walk a row's entries 32 at a time with int32 positions (a warp's lanes, one step ahead), so the
// largest CSR nnz and ELL width leave that much headroom below INT_MAX.
constexpr int64_t kMaxEntries = INT_MAX - 64;

Status check_dims(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "rows (%lld) and cols (%lld) must be > 0", (long long)rows, (long long)cols);
  if (rows >= INT_MAX || cols > INT_MAX)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "rows (%lld) and cols (%lld) must fit the int32 indices",
                (long long)rows, (long long)cols);
  return Status::success();
}

// The device a descriptor call without a handle checks pointers against: the current one, with no
// access to plain host memory assumed (so a host pointer is refused whatever the system allows).
core::DeviceInfo current_device_for_check() {
  core::DeviceInfo dev;
  if (cudaGetDevice(&dev.device) != cudaSuccess) {
    cudaGetLastError();
    dev.device = -1;  // no usable device: cudaPointerGetAttributes then refuses the pointer
  }
  dev.pageable_memory_access = false;
  return dev;
}

// Extents (elements) of a layer's x (n_in rows of ldx columns: any column below ldx may hold an
// image) and y (n_out rows, maxActive compact columns); -1 on int64 overflow.
struct LayerExtents {
  int64_t x, y;
};
LayerExtents layer_extents(int64_t n_in, int64_t ldx, int64_t n_out, int64_t ldy, int max_active) {
  return {core::extent(ldx, n_in, ldx, 0, 1), core::extent(max_active, n_out, ldy, 0, 1)};
}

// maxActive of the layer and compaction calls: >= 0, and its tiles (32 images) fit a grid's x dimension with
// int32 image positions (65535 x 32 x 1024 = 2^31 - 2^21).
Status check_max_active(int maxActive) {
  if (maxActive < 0) return fail(JHDNN_STATUS_BAD_PARAM, "maxActive (%d) < 0", maxActive);
  if (maxActive > int64_t(65535) * 32 * 1024)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "maxActive (%d) is too large (at most 65535 x 32 x 1024)",
                maxActive);
  return Status::success();
}

// A buffer a call reads or writes: its start and its extent in bytes.
struct Span {
  const void* p;
  int64_t bytes;
  const char* name;
};
// Every buffer a call writes must be its own: a written span that overlaps another written span or a read one is
// BAD_PARAM (the kernels write it while other blocks still read the other, so the result would be a race, not an
// error). Read spans may overlap each other.
Status check_written_apart(std::initializer_list<Span> written, std::initializer_list<Span> read) {
  for (auto w = written.begin(); w != written.end(); ++w) {
    for (auto v = w + 1; v != written.end(); ++v)
      if (core::overlaps(w->p, w->bytes, v->p, v->bytes))
        return fail(JHDNN_STATUS_BAD_PARAM, "%s overlaps %s (each output needs its own buffer)", w->name, v->name);
    for (const Span& r : read)
      if (core::overlaps(w->p, w->bytes, r.p, r.bytes))
        return fail(JHDNN_STATUS_BAD_PARAM, "%s overlaps %s (an output must not overlap an input)", w->name, r.name);
  }
  return Status::success();
}

#define CHECK_SP_SET(d) \
  if (!(d)->is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "%s was never set", #d)

}  // namespace

namespace jhdnn::sparse {
Status load_kernels() {
  JHDNN_TRY(load_dense_to_csr_kernels());
  JHDNN_TRY(load_spmm_kernels());
  JHDNN_TRY(load_dnn_resident_kernels());
  JHDNN_TRY(load_dnn_resident_pack_kernel());
  JHDNN_TRY(load_dnn_resident_tc_kernels());
  JHDNN_TRY(load_dnn_resident_tc_stream_kernel());
  JHDNN_TRY(load_dnn_resident_tc_planes_kernels());
  return load_dnn_kernels();
}
}  // namespace jhdnn::sparse

extern "C" {

jhdnnStatus_t jhdnnCreateSparseMatrixDescriptor(jhdnnSparseMatrixDescriptor_t* spDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    *spDesc = new jhdnnSparseMatrixStruct;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroySparseMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    sparse::release_resident_pack(*spDesc);
    delete spDesc;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetCsrMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc, int64_t rows, int64_t cols,
                                          int64_t nnz, int* rowPtr, int* colInd, void* values,
                                          jhdnnDataType_t valueType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    JHDNN_TRY(check_dims(rows, cols));
    JHDNN_TRY(check_value_type(valueType));
    if (nnz < 0 || nnz > rows * cols)
      return fail(JHDNN_STATUS_BAD_PARAM, "nnz (%lld) must be in [0, rows * cols]", (long long)nnz);
    if (nnz > kMaxEntries)
      return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "nnz (%lld) must be <= INT_MAX - 64 (int32 positions)",
                  (long long)nnz);
    JHDNN_CHECK_NULL(rowPtr);
    if (nnz > 0) {
      JHDNN_CHECK_NULL(colInd);
      JHDNN_CHECK_NULL(values);
    }
    sparse::release_resident_pack(*spDesc);  // the resident path's packed copy is of the old matrix
    static_cast<sparse::SparseMatrixFields&>(*spDesc) = sparse::SparseMatrixFields{};
    spDesc->is_set = true;
    spDesc->format = JHDNN_SPARSE_FORMAT_CSR;
    spDesc->rows = rows;
    spDesc->cols = cols;
    spDesc->nnz = nnz;
    spDesc->row_ptr = rowPtr;
    spDesc->col_ind = colInd;
    spDesc->values = static_cast<float*>(values);
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetEllMatrixDescriptor(jhdnnSparseMatrixDescriptor_t spDesc, int64_t rows, int64_t cols,
                                          int64_t width, int* colInd, void* values, jhdnnDataType_t valueType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    JHDNN_TRY(check_dims(rows, cols));
    JHDNN_TRY(check_value_type(valueType));
    if (width <= 0 || width > cols)
      return fail(JHDNN_STATUS_BAD_PARAM, "ELL width (%lld) must be in [1, cols = %lld]", (long long)width,
                  (long long)cols);
    if (width > kMaxEntries)
      return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "ELL width (%lld) must be <= INT_MAX - 64 (int32 positions)",
                  (long long)width);
    JHDNN_CHECK_NULL(colInd);
    JHDNN_CHECK_NULL(values);
    sparse::release_resident_pack(*spDesc);  // the resident path's packed copy is of the old matrix
    static_cast<sparse::SparseMatrixFields&>(*spDesc) = sparse::SparseMatrixFields{};
    spDesc->is_set = true;
    spDesc->format = JHDNN_SPARSE_FORMAT_ELL;
    spDesc->rows = rows;
    spDesc->cols = cols;
    spDesc->width = width;
    spDesc->nnz = rows * width;
    spDesc->col_ind = colInd;
    spDesc->values = static_cast<float*>(values);
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetSparseMatrixRowOrder(jhdnnSparseMatrixDescriptor_t spDesc, const int* rowOrder) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    CHECK_SP_SET(spDesc);
    sparse::release_resident_pack(*spDesc);  // packed in the old order
    if (rowOrder == nullptr) {
      spDesc->row_order = nullptr;
      return Status::success();
    }
    // Device memory of the current device (a plain host pointer is refused).
    JHDNN_TRY(check_ptr(rowOrder, sizeof(int), "rowOrder", current_device_for_check()));
    // One copy to the host so a bad order is refused here instead of leaving outputs unwritten. The
    // copy is synchronous; later changes to rowOrder are not checked again.
    std::vector<int> host(size_t(spDesc->rows));
    JHDNN_CUDA_TRY(cudaMemcpy(host.data(), rowOrder, host.size() * sizeof(int), cudaMemcpyDefault));
    std::vector<char> seen(host.size(), 0);
    for (size_t t = 0; t < host.size(); ++t) {
      const int r = host[t];
      if (r < 0 || int64_t(r) >= spDesc->rows || seen[r])
        return fail(JHDNN_STATUS_BAD_PARAM, "rowOrder is not a permutation of 0..%lld (entry %zu is %d)",
                    (long long)(spDesc->rows - 1), t, r);
      seen[r] = 1;
    }
    spDesc->row_order = rowOrder;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetSparseMatrixMathType(jhdnnSparseMatrixDescriptor_t spDesc, jhdnnMathType_t mathType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    if (mathType != JHDNN_DEFAULT_MATH && mathType != JHDNN_FMA_MATH && mathType != JHDNN_TENSOR_OP_MATH &&
        mathType != JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      return fail(JHDNN_STATUS_BAD_PARAM, "mathType (%d) is not a jhdnnMathType_t", int(mathType));
    spDesc->math_type = mathType;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetSparseMatrixMathType(const jhdnnSparseMatrixDescriptor_t spDesc, jhdnnMathType_t* mathType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    JHDNN_CHECK_NULL(mathType);
    *mathType = spDesc->math_type;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetSparseMatrixDescriptor(const jhdnnSparseMatrixDescriptor_t spDesc, jhdnnSparseFormat_t* format,
                                             int64_t* rows, int64_t* cols, int64_t* nnz) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(spDesc);
    CHECK_SP_SET(spDesc);
    if (format) *format = spDesc->format;
    if (rows) *rows = spDesc->rows;
    if (cols) *cols = spDesc->cols;
    if (nnz) *nnz = spDesc->nnz;
    return Status::success();
  });
}

namespace {
// The dense-to-CSR shapes the kernels take (check_dims first): nnz must fit the int32 row pointers.
Status check_dense_shape(int64_t rows, int64_t cols) {
  if (rows * cols > INT_MAX)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "rows * cols (%lld) must be <= INT_MAX so nnz fits int32",
                (long long)(rows * cols));
  return Status::success();
}
}  // namespace

jhdnnStatus_t jhdnnGetDenseToCsrWorkspaceSize(jhdnnHandle_t handle, int64_t rows, int64_t cols, size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(sizeInBytes);
    JHDNN_TRY(check_dims(rows, cols));
    JHDNN_TRY(check_dense_shape(rows, cols));
    *sizeInBytes = sparse::dense_to_csr_workspace(rows);
    return Status::success();
  });
}

namespace {
Status check_dense_source(jhdnnHandle_t handle, int64_t rows, int64_t cols, const void* A, int64_t lda) {
  JHDNN_CHECK_NULL(handle);
  JHDNN_TRY(check_dims(rows, cols));
  JHDNN_TRY(check_dense_shape(rows, cols));
  if (lda < cols)
    return fail(JHDNN_STATUS_BAD_PARAM, "lda (%lld) < cols (%lld)", (long long)lda, (long long)cols);
  const int64_t extent = core::extent(cols, rows, lda, 0, 1);  // row-major rows x cols = column-major cols x rows
  if (extent < 0 || extent > INT64_MAX / 4)
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "A (lda %lld) overflows 64-bit byte offsets", (long long)lda);
  JHDNN_TRY(check_device(handle));
  return check_ptr(A, sizeof(float), "A", handle->device);
}
}  // namespace

jhdnnStatus_t jhdnnDenseToCsrAnalysis(jhdnnHandle_t handle, int64_t rows, int64_t cols, const void* A, int64_t lda,
                                      int* csrRowPtr, int64_t* nnz, void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_TRY(check_dense_source(handle, rows, cols, A, lda));
    JHDNN_CHECK_NULL(nnz);
    JHDNN_TRY(check_ptr(csrRowPtr, sizeof(int), "csrRowPtr", handle->device));
    const size_t need = sparse::dense_to_csr_workspace(rows);
    if (workSpaceSizeInBytes < need)
      return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of %zu bytes < %zu needed",
                  workSpaceSizeInBytes, need);
    JHDNN_TRY(check_ptr(workSpace, 256, "workSpace", handle->device));
    return sparse::dense_to_csr_analysis(handle->stream, rows, cols, static_cast<const float*>(A), lda, csrRowPtr,
                                         nnz, workSpace, workSpaceSizeInBytes);
  });
}

jhdnnStatus_t jhdnnDenseToCsrConvert(jhdnnHandle_t handle, const void* A, int64_t lda,
                                     jhdnnSparseMatrixDescriptor_t csrDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(csrDesc);
    CHECK_SP_SET(csrDesc);
    if (csrDesc->format != JHDNN_SPARSE_FORMAT_CSR)
      return fail(JHDNN_STATUS_BAD_PARAM, "csrDesc is not a CSR descriptor");
    JHDNN_TRY(check_dense_source(handle, csrDesc->rows, csrDesc->cols, A, lda));
    JHDNN_TRY(check_ptr(csrDesc->row_ptr, sizeof(int), "csrDesc rowPtr", handle->device));
    if (csrDesc->nnz > 0) {
      JHDNN_TRY(check_ptr(csrDesc->col_ind, sizeof(int), "csrDesc colInd", handle->device));
      JHDNN_TRY(check_ptr(csrDesc->values, sizeof(float), "csrDesc values", handle->device));
    }
    return sparse::dense_to_csr_convert(handle->stream, csrDesc->rows, csrDesc->cols, static_cast<const float*>(A),
                                        lda, csrDesc->row_ptr, csrDesc->col_ind, csrDesc->values, csrDesc->nnz);
  });
}

namespace {
// Every check of jhdnnSpMM / jhdnnSpMMWithWorkspace, then the launch.
Status spmm_checked(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo, const void* alpha,
                    const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order, const void* B,
                    int64_t ldb, const void* beta, void* C, int64_t ldc, void* ws, size_t ws_size) {
  JHDNN_CHECK_NULL(handle);
  JHDNN_CHECK_NULL(alpha);
  JHDNN_CHECK_NULL(beta);
  JHDNN_CHECK_NULL(aDesc);
  CHECK_SP_SET(aDesc);
  if (aDesc->format != JHDNN_SPARSE_FORMAT_CSR)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "SpMM takes a CSR matrix (aDesc is ELL)");
  if (int(algo) < 0 || algo >= JHDNN_SPMM_ALG_COUNT)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown SpMM algorithm %d", int(algo));
  if (order != JHDNN_ORDER_ROW && order != JHDNN_ORDER_COL)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown dense order %d", int(order));
  if (n <= 0 || n > INT_MAX) return fail(JHDNN_STATUS_BAD_PARAM, "n (%lld) must be in [1, INT_MAX]", (long long)n);
  const int64_t m = aDesc->rows, k = aDesc->cols;
  const int64_t need_ldb = order == JHDNN_ORDER_ROW ? n : k, need_ldc = order == JHDNN_ORDER_ROW ? n : m;
  if (ldb < need_ldb)
    return fail(JHDNN_STATUS_BAD_PARAM, "ldb (%lld) < %lld", (long long)ldb, (long long)need_ldb);
  if (ldc < need_ldc)
    return fail(JHDNN_STATUS_BAD_PARAM, "ldc (%lld) < %lld", (long long)ldc, (long long)need_ldc);
  // Extents in the column-major view (a row-major r x c matrix is a column-major c x r one).
  const bool row = order == JHDNN_ORDER_ROW;
  const int64_t eb = row ? core::extent(n, k, ldb, 0, 1) : core::extent(k, n, ldb, 0, 1);
  const int64_t ec = row ? core::extent(n, m, ldc, 0, 1) : core::extent(m, n, ldc, 0, 1);
  if (eb < 0 || ec < 0 || eb > INT64_MAX / 4 || ec > INT64_MAX / 4)
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "B (ldb %lld) or C (ldc %lld) overflows 64-bit byte offsets",
                (long long)ldb, (long long)ldc);
  // The workspace: only TRANSPOSE_B (or DEFAULT resolved to it) with a column-major B reads it.
  const int64_t need = sparse::spmm_workspace_bytes(algo, k, n, order);
  if (need < 0)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "the transposed B (%lld x %lld) overflows 64-bit byte offsets",
                (long long)k, (long long)n);
  if (ws_size > 0 && ws == nullptr)
    return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "workSpace is NULL with workSpaceSizeInBytes %zu", ws_size);
  const jhdnnSpMMAlg_t chosen = sparse::spmm_choose(algo, k, n, order, ws_size);
  const bool uses_ws = chosen == JHDNN_SPMM_ALG_TRANSPOSE_B && !row;
  if (uses_ws && ws_size < uint64_t(need))
    return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT,
                "TRANSPOSE_B with a column-major B needs a workspace of %lld bytes (got %zu; "
                "jhdnnGetSpMMWorkspaceSize, jhdnnSpMMWithWorkspace)",
                (long long)need, ws_size);
  JHDNN_TRY(check_device(handle));
  JHDNN_TRY(check_ptr(aDesc->row_ptr, sizeof(int), "aDesc rowPtr", handle->device));
  if (aDesc->nnz > 0) {
    JHDNN_TRY(check_ptr(aDesc->col_ind, sizeof(int), "aDesc colInd", handle->device));
    JHDNN_TRY(check_ptr(aDesc->values, sizeof(float), "aDesc values", handle->device));
  }
  JHDNN_TRY(check_row_order(*aDesc, "aDesc", handle->device));
  JHDNN_TRY(check_ptr(B, sizeof(float), "B", handle->device));
  JHDNN_TRY(check_ptr(C, sizeof(float), "C", handle->device));
  if (core::overlaps(C, ec * 4, B, eb * 4)) return fail(JHDNN_STATUS_BAD_PARAM, "C overlaps B");
  if (uses_ws) {
    JHDNN_TRY(check_ptr(ws, 256, "workSpace", handle->device));
    if (core::overlaps(ws, need, B, eb * 4) || core::overlaps(ws, need, C, ec * 4))
      return fail(JHDNN_STATUS_BAD_PARAM, "workSpace overlaps B or C");
  }
  // alpha and beta: host floats (FLOAT is the only value type), as in every other call.
  return sparse::spmm(handle->stream, chosen, *static_cast<const float*>(alpha), *aDesc, n, order,
                      static_cast<const float*>(B), ldb, *static_cast<const float*>(beta), static_cast<float*>(C), ldc,
                      uses_ws ? ws : nullptr, uses_ws ? ws_size : 0);
}
}  // namespace

jhdnnStatus_t jhdnnSpMM(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo, const void* alpha,
                        const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order, const void* B,
                        int64_t ldb, const void* beta, void* C, int64_t ldc) {
  return api::guarded(
      [&]() -> Status { return spmm_checked(handle, algo, alpha, aDesc, n, order, B, ldb, beta, C, ldc, nullptr, 0); });
}

jhdnnStatus_t jhdnnSpMMWithWorkspace(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo, const void* alpha,
                                     const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order,
                                     const void* B, int64_t ldb, const void* beta, void* C, int64_t ldc,
                                     void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    return spmm_checked(handle, algo, alpha, aDesc, n, order, B, ldb, beta, C, ldc, workSpace, workSpaceSizeInBytes);
  });
}

jhdnnStatus_t jhdnnGetSpMMWorkspaceSize(jhdnnHandle_t handle, jhdnnSpMMAlg_t algo,
                                        const jhdnnSparseMatrixDescriptor_t aDesc, int64_t n, jhdnnOrder_t order,
                                        size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(aDesc);
    JHDNN_CHECK_NULL(sizeInBytes);
    CHECK_SP_SET(aDesc);
    if (aDesc->format != JHDNN_SPARSE_FORMAT_CSR)  // as jhdnnSpMM: no size for a call that would be refused
      return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "SpMM takes a CSR matrix (aDesc is ELL)");
    if (int(algo) < 0 || algo >= JHDNN_SPMM_ALG_COUNT)
      return fail(JHDNN_STATUS_BAD_PARAM, "unknown SpMM algorithm %d", int(algo));
    if (order != JHDNN_ORDER_ROW && order != JHDNN_ORDER_COL)
      return fail(JHDNN_STATUS_BAD_PARAM, "unknown dense order %d", int(order));
    if (n <= 0 || n > INT_MAX) return fail(JHDNN_STATUS_BAD_PARAM, "n (%lld) must be in [1, INT_MAX]", (long long)n);
    const int64_t need = sparse::spmm_workspace_bytes(algo, aDesc->cols, n, order);
    if (need < 0)
      return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "the transposed B (%lld x %lld) overflows 64-bit byte offsets",
                  (long long)aDesc->cols, (long long)n);
    *sizeInBytes = size_t(need);
    return Status::success();
  });
}

namespace {
// What the tiled feature layout needs beyond the neuron-major call's checks (jhdnn.h): late4's items in every
// layer, so their weights' form, the tile switch and 32-bit column offsets of x.
Status check_tiled_layout(const jhdnnSparseMatrixDescriptor_t wtDesc, int64_t ldx, int64_t ldy) {
  // The same statuses as the resident call's for the same needs (session 33): a width other than 32
  // NOT_SUPPORTED_SHAPE, weights not 16-byte aligned MISALIGNED_POINTER.
  if (wtDesc->width != 32)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "the tiled feature layout takes width-32 layers (wtDesc width %lld)",
                (long long)wtDesc->width);
  if (((reinterpret_cast<uintptr_t>(wtDesc->col_ind) | reinterpret_cast<uintptr_t>(wtDesc->values)) & 15u) != 0)
    return fail(JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                "the tiled feature layout needs 16-byte aligned colInd (%p) and values (%p)", wtDesc->col_ind,
                wtDesc->values);
  const core::config::SpdnnTile t = core::config::spdnn_tile();
  if (t != core::config::SpdnnTile::kAuto && t != core::config::SpdnnTile::kLate4All &&
      t != core::config::SpdnnTile::kInvalid)
    return fail(JHDNN_STATUS_NOT_SUPPORTED,
                "the tiled feature layout runs late4all's kernel: JHDNN_SPDNN_TILE must be unset, auto or late4all");
  if (ldx % 128 != 0 || ldy % 128 != 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "the tiled feature layout needs ldx (%lld) and ldy (%lld) multiples of 128",
                (long long)ldx, (long long)ldy);
  if (ldx > (int64_t(1) << 32) / wtDesc->cols)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                "the tiled feature layout addresses x with 32-bit offsets: ldx (%lld) x %lld neurons > 2^32 floats",
                (long long)ldx, (long long)wtDesc->cols);
  return Status::success();
}

// The checks shared by the two layer calls (everything but the flags / compaction outputs). tiled: the
// JHDNN_SPARSE_DNN_FEATURES_TILED128 layout (y then spans whole blocks of 128 columns).
Status check_layer(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc, float bias, float clampMax,
                   int maxActive, const int* activeCount, const int* activeRows, const void* x, int64_t ldx,
                   const void* y, int64_t ldy, bool tiled = false, LayerExtents* extents = nullptr,
                   int64_t image_stride = 0) {
  JHDNN_CHECK_NULL(handle);
  JHDNN_CHECK_NULL(wtDesc);
  CHECK_SP_SET(wtDesc);
  if (wtDesc->format != JHDNN_SPARSE_FORMAT_ELL)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "the layer takes W transposed in ELL form (wtDesc is CSR)");
  if (tiled) JHDNN_TRY(check_tiled_layout(wtDesc, ldx, ldy));
  if (!(bias <= 0.f))
    return fail(JHDNN_STATUS_BAD_PARAM, "bias (%g) must be <= 0 (a zero row must stay zero for pruning)",
                double(bias));
  if (!(clampMax > 0.f)) return fail(JHDNN_STATUS_BAD_PARAM, "clampMax (%g) must be > 0", double(clampMax));
  if (maxActive < 0) return fail(JHDNN_STATUS_BAD_PARAM, "maxActive (%d) < 0", maxActive);
  if (ldx < 1)
    return fail(JHDNN_STATUS_BAD_PARAM, "ldx (%lld) must be >= 1", (long long)ldx);
  if (ldy < maxActive) return fail(JHDNN_STATUS_BAD_PARAM, "ldy (%lld) < maxActive (%d)", (long long)ldy, maxActive);
  LayerExtents ext = layer_extents(wtDesc->cols, ldx, wtDesc->rows, ldy, maxActive);
  if (image_stride > 0)  // image-major (the resident call): ldx / ldy images of image_stride floats, the last one n long
    ext = {core::extent(wtDesc->cols, ldx, image_stride, 0, 1), core::extent(wtDesc->rows, maxActive, image_stride, 0, 1)};
  if (tiled) {  // y: ceil(maxActive / 128) whole blocks of rows x 128 floats (x's ldx * cols is the formula above)
    const int64_t block = core::extent(128, wtDesc->rows, 128, 0, 1);
    ext.y = block < 0 ? -1 : core::extent(block, (int64_t(maxActive) + 127) / 128, block, 0, 1);
  }
  if (ext.x < 0 || ext.y < 0 || ext.x > INT64_MAX / 4 || ext.y > INT64_MAX / 4)
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "x (ldx %lld) or y (ldy %lld) overflows 64-bit byte offsets",
                (long long)ldx, (long long)ldy);
  JHDNN_TRY(check_max_active(maxActive));
  JHDNN_TRY(check_device(handle));
  JHDNN_TRY(check_ptr(activeCount, sizeof(int), "activeCount", handle->device));
  if (maxActive == 0) return Status::success();
  JHDNN_TRY(check_ptr(activeRows, sizeof(int), "activeRows", handle->device));
  JHDNN_TRY(check_ptr(x, sizeof(float), "x", handle->device));
  JHDNN_TRY(check_ptr(y, sizeof(float), "y", handle->device));
  JHDNN_TRY(check_ptr(wtDesc->col_ind, sizeof(int), "wtDesc colInd", handle->device));
  JHDNN_TRY(check_ptr(wtDesc->values, sizeof(float), "wtDesc values", handle->device));
  JHDNN_TRY(check_row_order(*wtDesc, "wtDesc", handle->device));
  if (core::overlaps(y, ext.y * 4, x, ext.x * 4))
    return fail(JHDNN_STATUS_BAD_PARAM, "y overlaps x (in-place is not supported; x spans wtDesc cols * ldx floats)");
  if (extents) *extents = ext;
  return Status::success();
}
}  // namespace

jhdnnStatus_t jhdnnSparseDnnLayerForward(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc, float bias,
                                         float clampMax, int maxActive, const int* activeCount,
                                         const int* activeRows, const void* x, int64_t ldx, void* y, int64_t ldy,
                                         int* rowNonzero) {
  return api::guarded([&]() -> Status {
    LayerExtents ext{};
    JHDNN_TRY(
        check_layer(handle, wtDesc, bias, clampMax, maxActive, activeCount, activeRows, x, ldx, y, ldy, false, &ext));
    if (maxActive == 0) return Status::success();
    JHDNN_TRY(check_ptr(rowNonzero, sizeof(int), "rowNonzero", handle->device));
    const int64_t list = int64_t(maxActive) * int64_t(sizeof(int));
    // (the launcher clears rowNonzero before the kernel: over activeCount it would leave no image to compute)
    JHDNN_TRY(check_written_apart({{y, ext.y * 4, "y"}, {rowNonzero, list, "rowNonzero"}},
                                  {{activeCount, int64_t(sizeof(int)), "activeCount"},
                                   {activeRows, list, "activeRows"},
                                   {x, ext.x * 4, "x"}}));
    return sparse::dnn_layer(handle->stream, handle->device.sm_count, *wtDesc, bias, clampMax, maxActive, activeCount,
                             activeRows, static_cast<const float*>(x), ldx, static_cast<float*>(y), ldy, rowNonzero);
  });
}

jhdnnStatus_t jhdnnGetSparseDnnLayerForwardCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive, size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(sizeInBytes);
    JHDNN_TRY(check_max_active(maxActive));
    *sizeInBytes = sparse::fused_workspace(maxActive);
    return Status::success();
  });
}

namespace {
Status layer_compact_checked(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc, float bias,
                             float clampMax, int maxActive, const int* activeCount, const int* activeRows,
                             const int* idsIn, jhdnnSparseDnnFeatureLayout_t layout, const void* x, int64_t ldx,
                             void* y, int64_t ldy, int* rowsOut, int* idsOut, int* countOut, void* workSpace,
                             size_t workSpaceSizeInBytes, const unsigned* xMask = nullptr) {
  if (layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR)
    return fail(JHDNN_STATUS_NOT_SUPPORTED,
                "the image-major feature layout is the resident call's (jhdnnSparseDnnLayersForwardResidentEx); the "
                "layer calls take NEURON_MAJOR or TILED128");
  if (layout != JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR && layout != JHDNN_SPARSE_DNN_FEATURES_TILED128)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown feature layout %d", int(layout));
  const bool tiled = layout == JHDNN_SPARSE_DNN_FEATURES_TILED128;
  LayerExtents ext{};
  JHDNN_TRY(
      check_layer(handle, wtDesc, bias, clampMax, maxActive, activeCount, activeRows, x, ldx, y, ldy, tiled, &ext));
  JHDNN_TRY(check_ptr(countOut, sizeof(int), "countOut", handle->device));
  const int64_t one = int64_t(sizeof(int));
  if (maxActive == 0)  // only *countOut is written (the survivors: 0)
    return check_written_apart({{countOut, one, "countOut"}}, {{activeCount, one, "activeCount"}});
  JHDNN_TRY(check_ptr(idsIn, sizeof(int), "idsIn", handle->device));
  JHDNN_TRY(check_ptr(rowsOut, sizeof(int), "rowsOut", handle->device));
  JHDNN_TRY(check_ptr(idsOut, sizeof(int), "idsOut", handle->device));
  const size_t need = sparse::fused_workspace(maxActive);
  if (workSpaceSizeInBytes < need)
    return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of %zu bytes < %zu needed",
                workSpaceSizeInBytes, need);
  JHDNN_TRY(check_ptr(workSpace, 256, "workSpace", handle->device));
  // x's piece mask (jhdnnSparseDnnLayerForwardCompactMasked): n_in rows of ceil(ldx / 128) words.
  sparse::PieceMasks pm;
  pm.x = xMask;
  pm.x_ld = unsigned(sparse::piece_mask_ld(ldx));
  const int64_t x_mask_bytes = xMask ? wtDesc->cols * int64_t(pm.x_ld) * 4 : 0;
  if (xMask) JHDNN_TRY(check_ptr(xMask, sizeof(unsigned), "xMask", handle->device));
  const int64_t list = int64_t(maxActive) * one;
  JHDNN_TRY(check_written_apart({{y, ext.y * 4, "y"},
                                 {rowsOut, list, "rowsOut"},
                                 {idsOut, list, "idsOut"},
                                 {countOut, one, "countOut"},
                                 {workSpace, int64_t(need), "workSpace"}},
                                {{activeCount, one, "activeCount"},
                                 {activeRows, list, "activeRows"},
                                 {idsIn, list, "idsIn"},
                                 {x, ext.x * 4, "x"},
                                 {xMask, x_mask_bytes, "xMask"}}));
  return sparse::dnn_layer_compact(handle->stream, handle->device.sm_count, *wtDesc, bias, clampMax, maxActive,
                                   activeCount, activeRows, idsIn, layout, static_cast<const float*>(x), ldx,
                                   static_cast<float*>(y), ldy, rowsOut, idsOut, countOut, workSpace, pm);
}
}  // namespace

jhdnnStatus_t jhdnnSparseDnnLayerForwardCompact(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc,
                                                float bias, float clampMax, int maxActive, const int* activeCount,
                                                const int* activeRows, const int* idsIn, const void* x, int64_t ldx,
                                                void* y, int64_t ldy, int* rowsOut, int* idsOut, int* countOut,
                                                void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    return layer_compact_checked(handle, wtDesc, bias, clampMax, maxActive, activeCount, activeRows, idsIn,
                                 JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x, ldx, y, ldy, rowsOut, idsOut, countOut,
                                 workSpace, workSpaceSizeInBytes);
  });
}

jhdnnStatus_t jhdnnSparseDnnLayerForwardCompactEx(jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc,
                                                  float bias, float clampMax, int maxActive, const int* activeCount,
                                                  const int* activeRows, const int* idsIn,
                                                  jhdnnSparseDnnFeatureLayout_t layout, const void* x, int64_t ldx,
                                                  void* y, int64_t ldy, int* rowsOut, int* idsOut, int* countOut,
                                                  void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    return layer_compact_checked(handle, wtDesc, bias, clampMax, maxActive, activeCount, activeRows, idsIn, layout, x,
                                 ldx, y, ldy, rowsOut, idsOut, countOut, workSpace, workSpaceSizeInBytes);
  });
}

jhdnnStatus_t jhdnnSparseDnnLayerForwardCompactMasked(
    jhdnnHandle_t handle, const jhdnnSparseMatrixDescriptor_t wtDesc, float bias, float clampMax, int maxActive,
    const int* activeCount, const int* activeRows, const int* idsIn, jhdnnSparseDnnFeatureLayout_t layout,
    const void* x, int64_t ldx, const unsigned* xMask, void* y, int64_t ldy, int* rowsOut, int* idsOut,
    int* countOut, void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    return layer_compact_checked(handle, wtDesc, bias, clampMax, maxActive, activeCount, activeRows, idsIn, layout, x,
                                 ldx, y, ldy, rowsOut, idsOut, countOut, workSpace, workSpaceSizeInBytes, xMask);
  });
}

jhdnnStatus_t jhdnnGetSparseDnnCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive, size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(sizeInBytes);
    JHDNN_TRY(check_max_active(maxActive));
    *sizeInBytes = sparse::compact_workspace(maxActive);
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSparseDnnCompact(jhdnnHandle_t handle, int maxActive, const int* rowNonzero, const int* idsIn,
                                    int* rowsOut, int* idsOut, int* countOut, void* workSpace,
                                    size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_TRY(check_max_active(maxActive));
    JHDNN_TRY(check_device(handle));
    JHDNN_TRY(check_ptr(countOut, sizeof(int), "countOut", handle->device));
    if (maxActive > 0) {
      JHDNN_TRY(check_ptr(rowNonzero, sizeof(int), "rowNonzero", handle->device));
      JHDNN_TRY(check_ptr(idsIn, sizeof(int), "idsIn", handle->device));
      JHDNN_TRY(check_ptr(rowsOut, sizeof(int), "rowsOut", handle->device));
      JHDNN_TRY(check_ptr(idsOut, sizeof(int), "idsOut", handle->device));
      const size_t need = sparse::compact_workspace(maxActive);
      if (workSpaceSizeInBytes < need)
        return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of %zu bytes < %zu needed",
                    workSpaceSizeInBytes, need);
      JHDNN_TRY(check_ptr(workSpace, 256, "workSpace", handle->device));
      const int64_t list = int64_t(maxActive) * int64_t(sizeof(int));
      JHDNN_TRY(check_written_apart({{rowsOut, list, "rowsOut"},
                                     {idsOut, list, "idsOut"},
                                     {countOut, int64_t(sizeof(int)), "countOut"},
                                     {workSpace, int64_t(need), "workSpace"}},
                                    {{rowNonzero, list, "rowNonzero"}, {idsIn, list, "idsIn"}}));
    }
    return sparse::compact(handle->stream, maxActive, rowNonzero, idsIn, rowsOut, idsOut, countOut, workSpace,
                           workSpaceSizeInBytes);
  });
}


jhdnnStatus_t jhdnnGetSparseDnnLayersForwardCompactWorkspaceSize(jhdnnHandle_t handle, int maxActive,
                                                                 size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(sizeInBytes);
    JHDNN_TRY(check_max_active(maxActive));
    *sizeInBytes = sparse::multi_workspace(maxActive);
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSparseDnnLayersForwardCompact(jhdnnHandle_t handle, int layerCount,
                                                 const jhdnnSparseMatrixDescriptor_t* wtDescs, float bias,
                                                 float clampMax, int maxActive, int* counts, int* rows0, int* ids0,
                                                 void* x0, int* rows1, int* ids1, void* x1, int64_t ld,
                                                 void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    if (layerCount < 0) return fail(JHDNN_STATUS_BAD_PARAM, "layerCount (%d) < 0", layerCount);
    if (layerCount == 0) return Status::success();
    JHDNN_CHECK_NULL(wtDescs);
    if (ld < maxActive) return fail(JHDNN_STATUS_BAD_PARAM, "ld (%lld) < maxActive (%d)", (long long)ld, maxActive);
    // Layer 0 gets the single-layer checks with x = set 0, y = set 1 (the sets swap roles, and the
    // checks are symmetric in them); every other layer the checks that depend on its descriptor
    // (set, ELL, n x n with the first layer's n, its device arrays): the buffers are the same.
    for (int k = 0; k < layerCount; ++k) {
      const jhdnnSparseMatrixDescriptor_t d = wtDescs[k];
      if (d == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "wtDescs[%d] is NULL", k);
      if (k == 0) {
        JHDNN_TRY(check_layer(handle, d, bias, clampMax, maxActive, counts, rows0, x0, ld, x1, ld));
      } else {
        CHECK_SP_SET(d);
        if (d->format != JHDNN_SPARSE_FORMAT_ELL)
          return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "wtDescs[%d] is CSR (the layer takes ELL)", k);
        if (maxActive > 0) {
          const std::string name = "wtDescs[" + std::to_string(k) + "]";
          JHDNN_TRY(check_ptr(d->col_ind, sizeof(int), (name + " colInd").c_str(), handle->device));
          JHDNN_TRY(check_ptr(d->values, sizeof(float), (name + " values").c_str(), handle->device));
          JHDNN_TRY(check_row_order(*d, name, handle->device));
        }
      }
      if (d->rows != d->cols || d->rows != wtDescs[0]->rows)
        return fail(JHDNN_STATUS_BAD_PARAM, "wtDescs[%d] is %lld x %lld; every layer must be n x n with n = %lld", k,
                    (long long)d->rows, (long long)d->cols, (long long)wtDescs[0]->rows);
    }
    if (maxActive == 0) return Status::success();
    JHDNN_TRY(check_ptr(counts + layerCount, sizeof(int), "counts[layerCount]", handle->device));
    JHDNN_TRY(check_ptr(rows1, sizeof(int), "rows1", handle->device));
    JHDNN_TRY(check_ptr(ids0, sizeof(int), "ids0", handle->device));
    JHDNN_TRY(check_ptr(ids1, sizeof(int), "ids1", handle->device));
    const size_t need = sparse::multi_workspace(maxActive);
    if (workSpaceSizeInBytes < need)
      return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of %zu bytes < %zu needed",
                  workSpaceSizeInBytes, need);
    JHDNN_TRY(check_ptr(workSpace, 256, "workSpace", handle->device));
    // Every buffer the layers write or read across the barrier must be its own: the two sets swap roles every
    // layer, so each is written by some layer, and a partial overlap would corrupt a later layer's input without
    // an error. x0 / x1 span n * ld floats (n features, feature-major); the lists maxActive ints; counts
    // layerCount + 1 ints; the workspace `need` bytes.
    const int64_t x_bytes = wtDescs[0]->rows * ld * int64_t(sizeof(float));
    const int64_t list_bytes = int64_t(maxActive) * int64_t(sizeof(int));
    JHDNN_TRY(check_written_apart({{rows0, list_bytes, "rows0"},
                                   {ids0, list_bytes, "ids0"},
                                   {rows1, list_bytes, "rows1"},
                                   {ids1, list_bytes, "ids1"},
                                   {counts, (int64_t(layerCount) + 1) * int64_t(sizeof(int)), "counts"},
                                   {x0, x_bytes, "x0"},
                                   {x1, x_bytes, "x1"},
                                   {workSpace, int64_t(need), "workSpace"}},
                                  {}));
    return sparse::dnn_layers_compact(handle->stream, handle->device.sm_count, wtDescs, layerCount, bias, clampMax,
                                      maxActive, counts, rows0, ids0, static_cast<float*>(x0), rows1, ids1,
                                      static_cast<float*>(x1), ld, workSpace);
  });
}

jhdnnStatus_t jhdnnSparseDnnLayersForwardResident(jhdnnHandle_t handle, int layerCount,
                                                  const jhdnnSparseMatrixDescriptor_t* wtDescs, float bias,
                                                  float clampMax, int maxActive, int* counts, const int* activeRows,
                                                  const int* idsIn, const void* x, int64_t ldx, void* y, int64_t ldy,
                                                  int* rowsOut, int* idsOut, int sliceImages) {
  return jhdnnSparseDnnLayersForwardResidentEx(handle, layerCount, wtDescs, bias, clampMax, maxActive, counts,
                                               activeRows, idsIn, JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x, ldx, y,
                                               ldy, rowsOut, idsOut, sliceImages, nullptr, 0);
}

jhdnnStatus_t jhdnnSparseDnnLayersForwardResidentTraced(
    jhdnnHandle_t handle, int layerCount, const jhdnnSparseMatrixDescriptor_t* wtDescs, float bias, float clampMax,
    int maxActive, int* counts, const int* activeRows, const int* idsIn, const void* x, int64_t ldx, void* y,
    int64_t ldy, int* rowsOut, int* idsOut, int sliceImages, void* trace, size_t traceBytes) {
  return jhdnnSparseDnnLayersForwardResidentEx(handle, layerCount, wtDescs, bias, clampMax, maxActive, counts,
                                               activeRows, idsIn, JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR, x, ldx, y,
                                               ldy, rowsOut, idsOut, sliceImages, trace, traceBytes);
}

jhdnnStatus_t jhdnnSparseDnnLayersForwardResidentEx(
    jhdnnHandle_t handle, int layerCount, const jhdnnSparseMatrixDescriptor_t* wtDescs, float bias, float clampMax,
    int maxActive, int* counts, const int* activeRows, const int* idsIn, jhdnnSparseDnnFeatureLayout_t layout,
    const void* x, int64_t ldx, void* y, int64_t ldy, int* rowsOut, int* idsOut, int sliceImages, void* trace,
    size_t traceBytes) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    if (layout == JHDNN_SPARSE_DNN_FEATURES_TILED128)
      return fail(JHDNN_STATUS_NOT_SUPPORTED, "the resident call takes NEURON_MAJOR or IMAGE_MAJOR features, not TILED128");
    if (layout != JHDNN_SPARSE_DNN_FEATURES_NEURON_MAJOR && layout != JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR)
      return fail(JHDNN_STATUS_BAD_PARAM, "unknown feature layout %d", int(layout));
    const bool image_major = layout == JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR;
    if (layerCount < 1 || layerCount > sparse::kResidentMaxLayers)
      return fail(JHDNN_STATUS_BAD_PARAM, "layerCount (%d) must be 1..%d (call again for more layers)", layerCount,
                  sparse::kResidentMaxLayers);
    JHDNN_CHECK_NULL(wtDescs);
    if (sliceImages < 0) return fail(JHDNN_STATUS_BAD_PARAM, "sliceImages (%d) < 0", sliceImages);
    // Layer 0: the single-layer checks (x read at activeRows with ldx, y written with ldy); every
    // layer: set, ELL of width 32, n x n with layer 0's n, 16-byte aligned arrays (cp.async copies).
    LayerExtents ext{};
    for (int k = 0; k < layerCount; ++k) {
      const jhdnnSparseMatrixDescriptor_t d = wtDescs[k];
      if (d == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "wtDescs[%d] is NULL", k);
      if (k == 0)  // image-major: images of n floats rounded up to a multiple of 4 (16-byte loads and stores)
        JHDNN_TRY(check_layer(handle, d, bias, clampMax, maxActive, counts, activeRows, x, ldx, y, ldy, false, &ext,
                              image_major ? (d->rows + 3) / 4 * 4 : 0));
      CHECK_SP_SET(d);
      if (d->format != JHDNN_SPARSE_FORMAT_ELL)
        return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "wtDescs[%d] is CSR (the layer takes ELL)", k);
      if (d->width != 32)
        return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "wtDescs[%d] has ELL width %lld; the resident path takes 32", k,
                    (long long)d->width);
      if (d->rows != d->cols || d->rows != wtDescs[0]->rows)
        return fail(JHDNN_STATUS_BAD_PARAM, "wtDescs[%d] is %lld x %lld; every layer must be n x n with n = %lld", k,
                    (long long)d->rows, (long long)d->cols, (long long)wtDescs[0]->rows);
      // The kernels read only the layers' packed copies; the arrays themselves are read when a copy is built (a
      // descriptor's first call on a device) and checked there (sparse::resident_pack: one cudaPointerGetAttributes
      // each). Checking them here cost ~3 driver queries per layer on every call, 96 layers before the launch
      // (session 27).
      if (maxActive > 0) {
        JHDNN_TRY(check_aligned(d->col_ind, 16, "colInd", k));
        JHDNN_TRY(check_aligned(d->values, 16, "values", k));
        if (d->row_order) JHDNN_TRY(check_aligned(d->row_order, 16, "row order", k));
      }
    }
    // Tensor cores where every layer's math type allows them (jhdnnSetSparseMatrixMathType): all or none.
    int tensor_layers = 0, convert_layers = 0;
    for (int k = 0; k < layerCount; ++k) {
      const jhdnnMathType_t mt = wtDescs[k]->math_type;
      tensor_layers += mt == JHDNN_TENSOR_OP_MATH || mt == JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      convert_layers += mt == JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    }
    const bool tensor = tensor_layers > 0;
    if (tensor && tensor_layers < layerCount)
      return fail(JHDNN_STATUS_NOT_SUPPORTED,
                  "%d of the %d layers allow tensor-op math: the tensor-core resident path runs all of a call's "
                  "layers (split the call where the math type changes)",
                  tensor_layers, layerCount);
    if (tensor && image_major)
      return fail(JHDNN_STATUS_NOT_SUPPORTED, "the tensor-core resident path takes NEURON_MAJOR features");
    if (tensor && trace)
      return fail(JHDNN_STATUS_NOT_SUPPORTED, "the tensor-core resident path writes no trace");
    const int64_t n = wtDescs[0]->rows;
    const int smax = tensor ? 1 : sparse::resident_slice_limit(n, handle->device.smem_per_block_optin);
    if (smax == 0)
      return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                  "n = %lld: a slice of 2 images does not fit in shared memory (%zu of %zu bytes per block)",
                  (long long)n, sparse::resident_smem_bytes(n, 2), handle->device.smem_per_block_optin);
    // (The vals kernel's 4-image slices: its ring depends on the layers' packs, so dnn_resident refuses a
    // slice of 3-4 images itself when its ring does not fit these layers.)
    if (!tensor && sliceImages > smax)
      return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sliceImages (%d) > %d, the most that fit in shared memory at n = %lld",
                  sliceImages, smax, (long long)n);
    const int pieces = convert_layers == layerCount ? 1 : 3;  // (3 where any layer asks for TENSOR_OP_MATH)
    if (tensor)
      JHDNN_TRY(sparse::resident_tc_supported(n, layerCount, pieces, handle->device.smem_per_block_optin));
    if (maxActive == 0) return Status::success();
    if (image_major && ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) & 15u) != 0)
      return fail(JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                  "image-major features need 16-byte aligned x (%p) and y (%p)", x, y);
    using TraceRecord = jhdnnSparseDnnResidentTraceRecord_t;
    if (trace) {  // one set of records per possible CTA (ceil(maxActive / slice) <= maxActive)
      const size_t need = size_t(maxActive) * JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS * sizeof(TraceRecord);
      if (traceBytes < need)
        return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT,
                    "traceBytes (%zu) < %zu (maxActive x %d records of %zu bytes)", traceBytes, need,
                    JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS, sizeof(TraceRecord));
      JHDNN_TRY(check_ptr(trace, 8, "trace", handle->device));
    }
    JHDNN_TRY(check_ptr(counts + layerCount, sizeof(int), "counts[layerCount]", handle->device));
    JHDNN_TRY(check_ptr(idsIn, sizeof(int), "idsIn", handle->device));
    if (rowsOut) JHDNN_TRY(check_ptr(rowsOut, sizeof(int), "rowsOut", handle->device));  // (NULL: compacted)
    JHDNN_TRY(check_ptr(idsOut, sizeof(int), "idsOut", handle->device));
    // The output lists are written while other CTAs still read the inputs; y while others read x; counts[1..] per
    // layer (counts[0] is read, so the whole array counts as written).
    const int64_t list = int64_t(maxActive) * int64_t(sizeof(int));
    JHDNN_TRY(check_written_apart({{y, ext.y * 4, "y"},
                                   {rowsOut, rowsOut ? list : 0, "rowsOut"},
                                   {idsOut, list, "idsOut"},
                                   {counts, (int64_t(layerCount) + 1) * int64_t(sizeof(int)), "counts"},
                                   {trace, trace ? int64_t(traceBytes) : 0, "trace"}},
                                  {{activeRows, list, "activeRows"}, {idsIn, list, "idsIn"}, {x, ext.x * 4, "x"}}));
    std::vector<jhdnnSparseMatrixStruct*> wts(wtDescs, wtDescs + layerCount);
    if (tensor)  // (16-image tiles whatever sliceImages says)
      return sparse::dnn_resident_tc(handle->stream, handle->device.device, handle->device.smem_per_block_optin,
                                     handle->device.sm_count, handle->device.pageable_memory_access, wts.data(),
                                     layerCount, pieces, bias, clampMax, maxActive, counts,
                                     activeRows, idsIn, static_cast<const float*>(x), ldx, static_cast<float*>(y), ldy,
                                     rowsOut, idsOut);
    // The kernels take strides: image-major, the image stride; neuron-major, ldx / ldy themselves.
    const int64_t stride = (n + 3) / 4 * 4;
    return sparse::dnn_resident(handle->stream, handle->device.device, handle->device.smem_per_block_optin,
                                wts.data(), layerCount, bias, clampMax, maxActive, counts, activeRows, idsIn,
                                static_cast<const float*>(x), image_major ? stride : ldx, static_cast<float*>(y),
                                image_major ? stride : ldy, rowsOut, idsOut, sliceImages,
                                static_cast<TraceRecord*>(trace), handle->device.pageable_memory_access, image_major);
  });
}

}  // extern "C"
