// What solvers may ask about the GPU, read once when a handle is created.
#pragma once

#include <cstddef>

#include "core/status.h"

namespace jhdnn::core {

struct DeviceInfo {
  int device = -1;
  int cc_major = 0, cc_minor = 0;   // compute capability
  int sm_count = 0;
  size_t smem_per_block_optin = 0;  // bytes a block may use after cudaFuncSetAttribute
  size_t smem_per_sm = 0;
  size_t l2_bytes = 0;
  bool pageable_memory_access = false;  // kernels may read plain host memory (HMM / ATS)
  char name[256] = {};

  int sm() const { return cc_major * 10 + cc_minor; }  // 90 for Hopper
};

// Reads the current device. NOT_INITIALIZED when no device can be used.
Status query_device(DeviceInfo* info);

// A buffer that kernels on dev may read: not NULL (BAD_PARAM_NULL_POINTER), aligned to elem bytes
// (BAD_PARAM_MISALIGNED_POINTER), and by cudaPointerGetAttributes device memory of dev.device, managed or
// registered memory, or plain host memory where dev.pageable_memory_access (else BAD_PARAM). name goes into the
// message. One driver query: every call's user-buffer checks (convolution, GEMM, sparse).
Status check_device_pointer(const void* p, size_t elem, const char* name, const DeviceInfo& dev);

}  // namespace jhdnn::core
