// GPU side of the test harness, shared by the tests, the benchmarks and the examples (so no Catch2
// here): is there a GPU, device buffers with guard bytes, RAII handles / streams, and jhDNN and
// cuDNN descriptor sets built from one core::ConvProblem, plus a runner for cuDNN's best
// algorithm so every jhDNN result can be checked against real cuDNN on the same inputs.
//
// Errors: every CUDA / cuDNN / jhDNN call is checked; a failure throws std::runtime_error (or a
// subclass below) whose text names the call, the status and, for jhDNN, jhdnnGetLastErrorString.
// Catch2 reports an escaping exception as a failure of the test case, with its message.
//
// Ordering: DeviceBuffer's poison / upload / download are synchronous (they finish on the legacy
// default stream before returning) and never synchronize the whole device, so they may be used
// while a non-blocking stream is held back on purpose (see the stream test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "core/conv_problem.h"
#include "jhdnn/jhdnn.h"

namespace jhdnn::test {

// ---------------------------------------------------------------- errors

struct CudaError : std::runtime_error {
  cudaError_t code;
  CudaError(cudaError_t c, const std::string& what) : std::runtime_error(what), code(c) {}
};
struct CudnnError : std::runtime_error {
  cudnnStatus_t status;
  CudnnError(cudnnStatus_t s, const std::string& what) : std::runtime_error(what), status(s) {}
};
struct JhdnnError : std::runtime_error {
  jhdnnStatus_t status;
  JhdnnError(jhdnnStatus_t s, const std::string& what) : std::runtime_error(what), status(s) {}
};

// Throw when the call failed; `what` is the stringified call.
void cuda_check(cudaError_t e, const char* what, const char* file, int line);
void cudnn_check(cudnnStatus_t s, const char* what, const char* file, int line);
// Adds jhdnnGetLastErrorString() to the message.
void jhdnn_check(jhdnnStatus_t s, const char* what, const char* file, int line);

// True for cuDNN's NOT_SUPPORTED and every NOT_SUPPORTED_* sub-code (category 3000).
bool cudnn_not_supported(cudnnStatus_t s);

}  // namespace jhdnn::test

#ifndef CUDA_CHECK
#define CUDA_CHECK(call) ::jhdnn::test::cuda_check((call), #call, __FILE__, __LINE__)
#endif
#ifndef CUDNN_CHECK
#define CUDNN_CHECK(call) ::jhdnn::test::cudnn_check((call), #call, __FILE__, __LINE__)
#endif
#ifndef JHDNN_CHECK
#define JHDNN_CHECK(call) ::jhdnn::test::jhdnn_check((call), #call, __FILE__, __LINE__)
#endif

namespace jhdnn::test {

// ---------------------------------------------------------------- device presence

// True when a CUDA device can be used (a device exists and a context can be created on it).
// Otherwise false, with the reason (the CUDA error text) in *why when why is not null.
// Probed once per process and cached.
bool gpu_available(std::string* why = nullptr);

// "NVIDIA H200 (sm_90, 132 SMs), CUDA runtime 13000, driver 13000, cuDNN 91400" -- for logs.
std::string gpu_description();

// A stream-ordered memory pool of `device`'s memory that keeps up to `keep_bytes` across synchronizations (the
// resident path's handed pool has these properties: dnn_resident.cu handed_pool). Throws on a failed CUDA call.
cudaMemPool_t new_device_pool(int device, uint64_t keep_bytes);

// ---------------------------------------------------------------- device buffers

// cudaMalloc'ed bytes followed by a guard region. The guard is filled with the poison byte at
// construction and by poison(); guard_intact() tells whether anything wrote past the end.
class DeviceBuffer {
 public:
  static constexpr size_t kDefaultGuardBytes = 4096;

  DeviceBuffer() = default;
  // Allocates bytes + guard_bytes (a zero-byte buffer still gets a valid pointer and its guard)
  // and poisons everything with 0xFF.
  explicit DeviceBuffer(size_t bytes, size_t guard_bytes = kDefaultGuardBytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  size_t guard_bytes() const { return guard_; }

  // Fills the data and the guard with byte (0xFF: NaN in every float type); the guard keeps
  // that value as its expected content.
  void poison(uint8_t byte = 0xFF);
  // Host -> device; host.size() must equal bytes(). The guard is not touched.
  void upload(const std::vector<unsigned char>& host);
  void upload(const void* src, size_t n, size_t offset = 0);
  // Device -> host, the data only (not the guard).
  std::vector<unsigned char> download() const;
  void download(void* dst, size_t n, size_t offset = 0) const;
  // True when every guard byte still holds the poison byte.
  bool guard_intact() const;
  // Frees the memory now (also done by the destructor).
  void reset();

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  size_t guard_ = 0;
  uint8_t guard_byte_ = 0xFF;
};

// A host vector's copy in a new DeviceBuffer, and the first n elements of a buffer back (the sparse tests' shorthands).
template <class T>
DeviceBuffer to_dev(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}
template <class T>
std::vector<T> from_dev(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  if (n) b.download(v.data(), n * sizeof(T));
  return v;
}

// ---------------------------------------------------------------- RAII handles

// A stream created with cudaStreamNonBlocking (no implicit synchronization with the legacy
// default stream).
class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const;

 private:
  cudaStream_t s_ = nullptr;
};

class JhdnnHandle {
 public:
  JhdnnHandle();  // jhdnnCreate; throws on failure
  ~JhdnnHandle();
  JhdnnHandle(const JhdnnHandle&) = delete;
  JhdnnHandle& operator=(const JhdnnHandle&) = delete;
  jhdnnHandle_t get() const { return h_; }

 private:
  jhdnnHandle_t h_ = nullptr;
};

class CudnnHandle {
 public:
  CudnnHandle();  // cudnnCreate; throws on failure
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
};

// ---------------------------------------------------------------- descriptors from a problem

// The int arrays the Nd descriptor setters take for one problem. x / y: {N, C, (D,) H, W} with
// the problem's real element strides (so NCHW, NHWC and padded 4dEx-style layouts all come
// through); a stride wider than int is accepted only on a size-1 dimension, where it is never
// multiplied by a non-zero index and is clamped to INT_MAX. Filter: {K, C/G, (T,) R, S} with
// format NCHW when w is packed KCRS, else NHWC (w must be packed one way or the other; when both
// describe it, e.g. depthwise, the format follows x: NHWC when x has unit channel stride). Conv:
// pad / stride / dilation over (h, w) or (d, h, w). Throws std::invalid_argument otherwise.
struct NdDescArrays {
  int nb_dims = 0;  // 4 for spatial_dims 2, 5 for 3
  int x_dims[5] = {}, x_strides[5] = {};
  int y_dims[5] = {}, y_strides[5] = {};
  int w_dims[5] = {};
  bool w_nhwc = false;
  int conv_dims = 0;  // spatial_dims
  int pad[3] = {}, stride[3] = {}, dilation[3] = {};
};
NdDescArrays nd_desc_arrays(const core::ConvProblem& p);

// jhDNN descriptors of p: x and y via jhdnnSetTensorNdDescriptor, w via jhdnnSetFilterNdDescriptor,
// conv via jhdnnSetConvolutionNdDescriptor + jhdnnSetConvolutionGroupCount +
// jhdnnSetConvolutionMathType. Throws JhdnnError (with the library's message) when a setter fails.
struct JhdnnConvDescs {
  explicit JhdnnConvDescs(const core::ConvProblem& p);
  ~JhdnnConvDescs();
  JhdnnConvDescs(const JhdnnConvDescs&) = delete;
  JhdnnConvDescs& operator=(const JhdnnConvDescs&) = delete;

  jhdnnTensorDescriptor_t x = nullptr;
  jhdnnFilterDescriptor_t w = nullptr;
  jhdnnConvolutionDescriptor_t conv = nullptr;
  jhdnnTensorDescriptor_t y = nullptr;
  jhdnnDataType_t dtype = JHDNN_DATA_FLOAT;

 private:
  void release() noexcept;
};

// The same with cuDNN's calls (enum values are identical by design, so they are cast). Throws
// CudnnError when cuDNN refuses a descriptor (its status tells NOT_SUPPORTED from BAD_PARAM).
struct CudnnConvDescs {
  explicit CudnnConvDescs(const core::ConvProblem& p);
  ~CudnnConvDescs();
  CudnnConvDescs(const CudnnConvDescs&) = delete;
  CudnnConvDescs& operator=(const CudnnConvDescs&) = delete;

  cudnnTensorDescriptor_t x = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnTensorDescriptor_t y = nullptr;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // the problem's math type (restored after each try)

 private:
  void release() noexcept;
};

// ---------------------------------------------------------------- cuDNN's best algorithm

enum class CudnnPick {
  kHeuristic,  // cudnnGetConvolutionForwardAlgorithm_v7's ranking: cheap, for correctness tests
  kFind,       // cudnnFindConvolutionForwardAlgorithm's timed ranking: for benchmarks
};

struct CudnnRun {
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;  // SUCCESS when an algorithm ran
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;  // math type the algorithm ran with
  size_t workspace_bytes = 0;
  float find_ms = -1.0f;  // cuDNN's own timing (kFind only)
  std::string log;        // every candidate tried and what it answered, e.g. "6/TENSOR_OP: NOT_SUPPORTED; 1: ok"
  bool ok() const { return status == CUDNN_STATUS_SUCCESS; }
  bool not_supported() const { return cudnn_not_supported(status); }
};

// y = alpha * conv(x, w) + beta * y with the first of cuDNN's ranked algorithms (kHeuristic or
// kFind) that runs, on the handle's stream (enqueued only: the caller synchronizes). For each
// candidate whose perf status is SUCCESS: the conv descriptor gets the candidate's math type, a
// workspace of cudnnGetConvolutionForwardWorkspaceSize bytes is taken from `workspace` (grown as
// needed; a temporary one when null), candidates needing more than max_workspace are passed over,
// then cudnnConvolutionForward is called; the first SUCCESS wins. Otherwise the result carries
// NOT_SUPPORTED when no candidate was usable or every one answered a NOT_SUPPORTED code, else the
// last failure. alpha / beta are passed as float, or double for DOUBLE data (cuDNN's rule).
// Never throws for cuDNN statuses (they are the result); throws CudaError if a workspace
// allocation fails for reasons other than memory exhaustion.
//
// algo_mask: bit (1 << algo) set for each cuDNN algorithm that may be used; the others are passed
// over (and named in the log). kCudnnDotProductAlgos keeps the algorithms that compute each
// output as a plain dot product (the error model of conv_tolerance), leaving out FFT and Winograd,
// whose larger, norm-wise errors would need their own bounds.
constexpr uint32_t kCudnnAllAlgos = 0xFFu;
constexpr uint32_t kCudnnDotProductAlgos =
    (1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) | (1u << CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) |
    (1u << CUDNN_CONVOLUTION_FWD_ALGO_GEMM) | (1u << CUDNN_CONVOLUTION_FWD_ALGO_DIRECT);
CudnnRun cudnn_best_forward(cudnnHandle_t handle, const CudnnConvDescs& d, const void* x, const void* w,
                            void* y, double alpha = 1.0, double beta = 0.0,
                            CudnnPick pick = CudnnPick::kHeuristic, DeviceBuffer* workspace = nullptr,
                            size_t max_workspace = size_t(1) << 31, uint32_t algo_mask = kCudnnAllAlgos);

// Readable names, for messages.
const char* cudnn_algo_name(cudnnConvolutionFwdAlgo_t a);
const char* jhdnn_algo_name(jhdnnConvolutionFwdAlgo_t a);

}  // namespace jhdnn::test
