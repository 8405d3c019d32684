#include "core/sm90/tensor_map.h"

#include <mutex>

namespace jhdnn::sm90 {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(cudaError_t* err, cudaDriverEntryPointQueryResult* q) {
  static std::once_flag once;
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static cudaError_t e = cudaSuccess;
  static cudaDriverEntryPointQueryResult qr = cudaDriverEntryPointSuccess;
  std::call_once(once, [] {
    void* p = nullptr;
    e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &qr);
    if (e == cudaSuccess && qr == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    else
      cudaGetLastError();  // the failed lookup must not surface as a later launch's error
  });
  if (err != nullptr) *err = e;
  if (q != nullptr) *q = qr;
  return fn;
}

core::Status encode_tma_2d(CUtensorMap* map, CUtensorMapDataType type, uint32_t elem_bytes, const void* base,
                           uint64_t rows, uint64_t cols, uint64_t ld, uint32_t box_rows, uint32_t box_cols) {
  cudaError_t err;
  cudaDriverEntryPointQueryResult q;
  PFN_cuTensorMapEncodeTiled_v12000 fn = tensor_map_encoder(&err, &q);
  if (fn == nullptr)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER,
                      "hopper gemm: cuTensorMapEncodeTiled not available from the driver (%s, query result %d)",
                      cudaGetErrorString(err), int(q));
  // Dimension 0 is the contiguous one (columns), dimension 1 the rows.
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {ld * elem_bytes};  // bytes between rows
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = fn(map, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return core::fail(JHDNN_STATUS_BAD_PARAM,
                      "hopper gemm: cuTensorMapEncodeTiled failed (CUresult %d) for %llu x %llu, ld %llu, box %u x %u",
                      int(r), (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)ld,
                      box_rows, box_cols);
  return core::Status::success();
}

}  // namespace jhdnn::sm90
