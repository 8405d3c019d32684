// TMA tensor-map encoding for the Hopper kernels: cuTensorMapEncodeTiled, fetched from the driver
// through cudaGetDriverEntryPointByVersion (the library does not link libcuda). Encoding is a
// host-only computation (~1 us), so maps are built per call and passed to the kernel by value as
// __grid_constant__ parameters; nothing needs caching or freeing.
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime_api.h>

#include "core/status.h"

namespace jhdnn::sm90 {

// cuTensorMapEncodeTiled from the driver, looked up once (thread-safe) for the whole process;
// nullptr when the driver lacks it, with the lookup's error and query result in *err / *q when
// given. A failed lookup's error is cleared from the runtime's last-error slot.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(cudaError_t* err = nullptr,
                                                    cudaDriverEntryPointQueryResult* q = nullptr);

// A 2-D row-major matrix of `elem_bytes`-byte elements: `rows` rows of `cols` elements, rows `ld`
// elements apart, read as boxes of box_rows x box_cols with the 128-byte swizzle (box_cols *
// elem_bytes must be 128) and zero fill outside the matrix. base must be 16-byte aligned and
// ld * elem_bytes a multiple of 16. (The Hopper GEMM's maps; the tensor-core GEMM and the
// convolution call tensor_map_encoder() with their own box shapes.)
core::Status encode_tma_2d(CUtensorMap* map, CUtensorMapDataType type, uint32_t elem_bytes, const void* base,
                           uint64_t rows, uint64_t cols, uint64_t ld, uint32_t box_rows, uint32_t box_cols);

}  // namespace jhdnn::sm90
