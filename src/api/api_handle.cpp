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
    auto* h = new jhdnnContext;
    h->device = info;
    *handle = h;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroy(jhdnnHandle_t handle) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    delete handle;
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
