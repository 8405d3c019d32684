#include "core/device_info.h"

#include <cstdio>

#include <cuda_runtime_api.h>

namespace jhdnn::core {

Status query_device(DeviceInfo* info) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    const char* why = e != cudaSuccess ? cudaGetErrorString(e) : "no devices";
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return fail(JHDNN_STATUS_NOT_INITIALIZED, "no usable CUDA device: %s", why);
  }
  int dev = 0;
  if ((e = cudaGetDevice(&dev)) != cudaSuccess)
    return fail(JHDNN_STATUS_NOT_INITIALIZED, "cudaGetDevice failed: %s", cudaGetErrorString(e));
  cudaDeviceProp prop{};
  if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess)
    return fail(JHDNN_STATUS_NOT_INITIALIZED, "cudaGetDeviceProperties failed: %s", cudaGetErrorString(e));
  info->device = dev;
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  info->sm_count = prop.multiProcessorCount;
  info->smem_per_block_optin = prop.sharedMemPerBlockOptin;
  info->smem_per_sm = prop.sharedMemPerMultiprocessor;
  info->l2_bytes = size_t(prop.l2CacheSize);
  info->pageable_memory_access = prop.pageableMemoryAccess != 0;
  std::snprintf(info->name, sizeof info->name, "%s", prop.name);
  return Status::success();
}

}  // namespace jhdnn::core
