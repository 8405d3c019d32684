// TMA tensor-map encoding for the wgmma GEMM: cuTensorMapEncodeTiled, fetched from the driver
// through cudaGetDriverEntryPointByVersion (the library does not link libcuda). Encoding is a
// host-only computation (~1 us), so maps are built per call and passed to the kernel by value as
// __grid_constant__ parameters; nothing needs caching or freeing.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "core/status.h"

namespace jhdnn::gemm::hopper {

// A 2-D row-major matrix of 16-bit elements: `rows` rows of `cols` elements, rows `ld` elements
// apart, read as boxes of box_rows x box_cols with the 128-byte swizzle (box_cols * 2 must be
// 128) and zero fill outside the matrix. base must be 16-byte aligned and ld * 2 a multiple of 16.
core::Status encode_tma_2d_16bit(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                                 uint64_t rows, uint64_t cols, uint64_t ld, uint32_t box_rows,
                                 uint32_t box_cols);

}  // namespace jhdnn::gemm::hopper
