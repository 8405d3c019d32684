#include <memory>

#include <cublas_v2.h>

#include "api/api_common.h"
#include "conv/solver.h"
#include "core/descriptors.h"
#include "sparse/sparse.h"

using namespace jhdnn;
using core::Status;

extern "C" {

jhdnnStatus_t jhdnnCreate(jhdnnHandle_t* handle) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    *handle = nullptr;
    core::DeviceInfo info;
    JHDNN_TRY(core::query_device(&info));
    JHDNN_TRY(conv::load_all_kernels(info.device));
    JHDNN_TRY(sparse::load_kernels());
    auto h = std::make_unique<jhdnnContext>();
    h->device = info;
    // The gemm_cublas solver's handle, on the handle's (current) device: created here so that no
    // forward call pays for cublasCreate.
    const cublasStatus_t cs = cublasCreate(&h->cublas);
    if (cs != CUBLAS_STATUS_SUCCESS) {
      h->cublas = nullptr;
      return core::fail(JHDNN_STATUS_EXECUTION_FAILED_CUBLAS, "jhdnnCreate: cublasCreate failed (%d)", int(cs));
    }
    *handle = h.release();
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroy(jhdnnHandle_t handle) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    const cublasStatus_t cs = handle->cublas != nullptr ? cublasDestroy(handle->cublas) : CUBLAS_STATUS_SUCCESS;
    delete handle;
    if (cs != CUBLAS_STATUS_SUCCESS)
      return core::fail(JHDNN_STATUS_EXECUTION_FAILED_CUBLAS, "jhdnnDestroy: cublasDestroy failed (%d)", int(cs));
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetStream(jhdnnHandle_t handle, cudaStream_t streamId) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    handle->stream = streamId;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetStream(jhdnnHandle_t handle, cudaStream_t* streamId) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(streamId);
    *streamId = handle->stream;
    return Status::success();
  });
}

}  // extern "C"
