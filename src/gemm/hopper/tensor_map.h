// TMA tensor-map encoding for the wgmma GEMM: cuTensorMapEncodeTiled, fetched from the driver
// through cudaGetDriverEntryPointByVersion (the library does not link libcuda). Encoding is a
// host-only computation (~1 us), so maps are built per call and passed to the kernel by value as
// __grid_constant__ parameters; nothing needs caching or freeing.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "core/status.h"

namespace jhdnn::gemm::hopper {

// A 2-D row-major matrix of `elem_bytes`-byte elements: `rows` rows of `cols` elements, rows `ld`
// elements apart, read as boxes of box_rows x box_cols with the 128-byte swizzle (box_cols *
// elem_bytes must be 128) and zero fill outside the matrix. base must be 16-byte aligned and
// ld * elem_bytes a multiple of 16.
core::Status encode_tma_2d(CUtensorMap* map, CUtensorMapDataType type, uint32_t elem_bytes, const void* base,
                           uint64_t rows, uint64_t cols, uint64_t ld, uint32_t box_rows, uint32_t box_cols);

}  // namespace jhdnn::gemm::hopper
