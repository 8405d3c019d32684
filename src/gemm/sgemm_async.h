// Host side of the cp.async SGEMM kernel (sgemm_async.cuh): when it applies, the tile and
// split-K choice, the launch. Internal to src/gemm (sgemm.cu calls it after checking arguments).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "gemm/gemm.h"

namespace jhdnn::gemm::async {

// True when the kernel can copy the operands: every operand contiguous along m / n (A not
// transposed, B transposed) has a 16-byte aligned start, ld % 4 == 0 and (for a batch level of
// more than one) a stride % 4 == 0, or A and B are both untransposed (A then by 4-byte copies);
// all operands 4-byte aligned.
bool supported(const GemmDesc& d);

// Launches the kernel for d, already validated by sgemm_path (m, n, batches > 0; offsets fit
// int64). batches = batch_outer * batch_inner. split: 0 = choose, 1 = none, 2 / 4 / 8 = forced.
// Records what ran in *run.
Status launch(const GemmDesc& d, int64_t batches, int split, SgemmRun* run, cudaStream_t stream);

// Sets the shared-memory attributes of every instantiation on the current device.
Status load_kernels();

}  // namespace jhdnn::gemm::async
