#include "core/device_info.h"

#include <cstdint>
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

Status check_device_pointer(const void* p, size_t elem, const char* name, const DeviceInfo& dev) {
  if (p == nullptr) return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s is NULL", name);
  if (reinterpret_cast<uintptr_t>(p) % elem != 0)
    return fail(JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "%s (%p) is not aligned to its %zu-byte elements", name,
                p, elem);
  cudaPointerAttributes attr{};
  const cudaError_t e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fail(JHDNN_STATUS_BAD_PARAM, "%s (%p): cudaPointerGetAttributes failed: %s", name, p, cudaGetErrorString(e));
  }
  if (attr.type == cudaMemoryTypeUnregistered && !dev.pageable_memory_access)
    return fail(JHDNN_STATUS_BAD_PARAM, "%s (%p) is plain host memory, which this GPU cannot read", name, p);
  if (attr.type == cudaMemoryTypeDevice && attr.device != dev.device)
    return fail(JHDNN_STATUS_BAD_PARAM, "%s (%p) lives on device %d but the handle uses device %d", name, p,
                attr.device, dev.device);
  return Status::success();
}

}  // namespace jhdnn::core
