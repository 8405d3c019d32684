// Turning CUDA runtime errors into Status values. Every CUDA call in the library goes through
// JHDNN_CUDA_TRY (functions returning Status) so no error is dropped.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"

namespace jhdnn::core {

inline Status cuda_status(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return Status::success();
  return fail(JHDNN_STATUS_EXECUTION_FAILED_CUDART, "%s failed: %s (%s) at %s:%d", what,
              cudaGetErrorName(e), cudaGetErrorString(e), file, line);
}

}  // namespace jhdnn::core

#define JHDNN_CUDA_STATUS(call) ::jhdnn::core::cuda_status((call), #call, __FILE__, __LINE__)
#define JHDNN_CUDA_TRY(call) JHDNN_TRY(JHDNN_CUDA_STATUS(call))
// After a kernel launch: catches bad launch configurations without synchronizing.
#define JHDNN_LAUNCH_CHECK() JHDNN_CUDA_TRY(cudaGetLastError())
