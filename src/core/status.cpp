#include "core/status.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace jhdnn::core {

Status fail(jhdnnStatus_t code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return Status{code, buf};
}

namespace {
// A plain character array, not a std::string: a thread_local with a destructor is destroyed when
// its thread exits -- for the main thread, before any static object's destructor runs -- and a
// jhDNN call made after that (jhdnnDestroy from a static object's destructor is the common case)
// would assign into the destroyed string, writing into its freed heap buffer. This array has no
// destructor and no heap memory, so a call at any point of a thread's teardown is safe.
constexpr size_t kLastErrorCapacity = 2048;  // fail() messages are < 1024 bytes; longer ones are cut
thread_local char t_last_error[kLastErrorCapacity];
}  // namespace

void set_last_error(const std::string& message) {
  const size_t n = std::min(message.size(), kLastErrorCapacity - 1);
  std::memcpy(t_last_error, message.data(), n);
  t_last_error[n] = '\0';
}
const char* last_error() { return t_last_error; }

const char* status_name(jhdnnStatus_t s) {
  switch (s) {
#define NAME(x) \
  case JHDNN_STATUS_##x: return "JHDNN_STATUS_" #x;
    NAME(SUCCESS)
    NAME(NOT_INITIALIZED)
    NAME(SUBLIBRARY_VERSION_MISMATCH)
    NAME(SERIALIZATION_VERSION_MISMATCH)
    NAME(DEPRECATED)
    NAME(LICENSE_ERROR)
    NAME(RUNTIME_IN_PROGRESS)
    NAME(RUNTIME_FP_OVERFLOW)
    NAME(SUBLIBRARY_LOADING_FAILED)
    NAME(BAD_PARAM)
    NAME(INVALID_VALUE)
    NAME(BAD_PARAM_NULL_POINTER)
    NAME(BAD_PARAM_MISALIGNED_POINTER)
    NAME(BAD_PARAM_NOT_FINALIZED)
    NAME(BAD_PARAM_OUT_OF_BOUND)
    NAME(BAD_PARAM_SIZE_INSUFFICIENT)
    NAME(BAD_PARAM_STREAM_MISMATCH)
    NAME(BAD_PARAM_SHAPE_MISMATCH)
    NAME(BAD_PARAM_DUPLICATED_ENTRIES)
    NAME(BAD_PARAM_ATTRIBUTE_TYPE)
    NAME(BAD_PARAM_CUDA_GRAPH_MISMATCH)
    NAME(BAD_PARAM_DESCRIPTOR_TYPE)
    NAME(NOT_SUPPORTED)
    NAME(NOT_SUPPORTED_GRAPH_PATTERN)
    NAME(NOT_SUPPORTED_SHAPE)
    NAME(NOT_SUPPORTED_DATA_TYPE)
    NAME(NOT_SUPPORTED_LAYOUT)
    NAME(NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    NAME(NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    NAME(NOT_SUPPORTED_ARCH_MISMATCH)
    NAME(NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    NAME(NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    NAME(NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    NAME(NOT_SUPPORTED_PADDING)
    NAME(NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    NAME(NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    NAME(NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    NAME(INTERNAL_ERROR)
    NAME(INTERNAL_ERROR_COMPILATION_FAILED)
    NAME(INTERNAL_ERROR_UNEXPECTED_VALUE)
    NAME(INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    NAME(INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    NAME(INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    NAME(INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    NAME(EXECUTION_FAILED)
    NAME(EXECUTION_FAILED_CUDA_DRIVER)
    NAME(EXECUTION_FAILED_CUBLAS)
    NAME(EXECUTION_FAILED_CUDART)
    NAME(EXECUTION_FAILED_CURAND)
#undef NAME
  }
  return "JHDNN_STATUS_UNKNOWN";
}

const char* data_type_name(jhdnnDataType_t t) {
  switch (t) {
#define NAME(x) \
  case JHDNN_DATA_##x: return #x;
    NAME(FLOAT)
    NAME(DOUBLE)
    NAME(HALF)
    NAME(INT8)
    NAME(INT32)
    NAME(INT8x4)
    NAME(UINT8)
    NAME(UINT8x4)
    NAME(INT8x32)
    NAME(BFLOAT16)
    NAME(INT64)
    NAME(BOOLEAN)
    NAME(FP8_E4M3)
    NAME(FP8_E5M2)
    NAME(FAST_FLOAT_FOR_FP8)
    NAME(FP8_E8M0)
    NAME(FP4_E2M1)
    NAME(INT4)
    NAME(UINT4)
    NAME(UINT32)
    NAME(COMPLEX_FP32)
    NAME(COMPLEX_FP64)
#undef NAME
  }
  return "UNKNOWN";
}

const char* algo_name(jhdnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case JHDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case JHDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case JHDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case JHDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case JHDNN_CONVOLUTION_FWD_ALGO_COUNT: break;
  }
  return "UNKNOWN";
}

size_t data_type_size(jhdnnDataType_t t) {
  switch (t) {
    case JHDNN_DATA_FLOAT: return 4;
    case JHDNN_DATA_DOUBLE: return 8;
    case JHDNN_DATA_HALF:
    case JHDNN_DATA_BFLOAT16: return 2;
    default: return 0;
  }
}

}  // namespace jhdnn::core
