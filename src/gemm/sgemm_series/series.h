// The numbered SGEMM teaching series (see ../README.md). Every step computes the same thing,
//   C = alpha * A * B + beta * C,   A m x k, B k x n, C m x n, all column-major, no transposes,
// and each step changes one idea. Steps refuse (NOT_SUPPORTED_SHAPE, with the reason) the shapes
// they do not handle; the library GEMM (gemm.h) handles everything.
#pragma once

#include <vector>

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace jhdnn::gemm::series {

using core::Status;

struct Args {
  int m = 0, n = 0, k = 0;
  float alpha = 1.f;
  const float* a = nullptr;
  int lda = 0;
  const float* b = nullptr;
  int ldb = 0;
  float beta = 0.f;
  float* c = nullptr;
  int ldc = 0;
};

using RunFn = Status (*)(const Args&, cudaStream_t);

struct Step {
  int number;          // 1, 2, ...: the benchmark selects steps by it
  const char* name;    // e.g. "naive"
  const char* limits;  // what the step requires of the shape
  RunFn run;
};

// Every step, in order.
const std::vector<Step>& steps();

Status run_01_naive(const Args&, cudaStream_t);
Status run_02_coalesced(const Args&, cudaStream_t);
Status run_03_smem_tiling(const Args&, cudaStream_t);
Status run_04_blocktile_1d(const Args&, cudaStream_t);
Status run_05_blocktile_2d(const Args&, cudaStream_t);
Status run_06_vectorized(const Args&, cudaStream_t);
Status run_07_warptile(const Args&, cudaStream_t);
Status run_08_double_buffer(const Args&, cudaStream_t);
Status run_09_cp_async(const Args&, cudaStream_t);
Status run_10_async_bk16(const Args&, cudaStream_t);

// Shared argument check: sizes >= 0, ld >= rows, non-null pointers; nullptr when fine.
const char* check_basic(const Args& a);

}  // namespace jhdnn::gemm::series
