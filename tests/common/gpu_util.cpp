#include "common/gpu_util.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <mutex>

namespace jhdnn::test {

// ---------------------------------------------------------------- errors

namespace {

std::string where(const char* what, const char* file, int line) {
  return std::string(what) + " at " + file + ":" + std::to_string(line);
}

}  // namespace

void cuda_check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next check does not see it again
  throw CudaError(e, where(what, file, line) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void cudnn_check(cudnnStatus_t s, const char* what, const char* file, int line) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  char msg[1024] = {};
  cudnnGetLastErrorString(msg, sizeof msg);
  throw CudnnError(s, where(what, file, line) + " failed: " + cudnnGetErrorString(s) + (msg[0] ? ": " : "") + msg);
}

void jhdnn_check(jhdnnStatus_t s, const char* what, const char* file, int line) {
  if (s == JHDNN_STATUS_SUCCESS) return;
  char msg[1024] = {};
  jhdnnGetLastErrorString(msg, sizeof msg);
  throw JhdnnError(s, where(what, file, line) + " failed: " + jhdnnGetErrorString(s) + (msg[0] ? ": " : "") + msg);
}

bool cudnn_not_supported(cudnnStatus_t s) { return int(s) / 1000 * 1000 == int(CUDNN_STATUS_NOT_SUPPORTED); }

// ---------------------------------------------------------------- device presence

bool gpu_available(std::string* why) {
  static std::once_flag once;
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [] {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
      cudaGetLastError();
      reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
      return;
    }
    if (n == 0) {
      reason = "cudaGetDeviceCount found 0 devices";
      return;
    }
    e = cudaFree(nullptr);  // creates the primary context: fails on a broken driver / busy GPU
    if (e != cudaSuccess) {
      cudaGetLastError();
      reason = std::string("creating a CUDA context failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
      return;
    }
    ok = true;
  });
  if (why) *why = reason;
  return ok;
}

cudaMemPool_t new_device_pool(int device, uint64_t keep_bytes) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t keep = keep_bytes;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return pool;
}

std::string gpu_description() {
  std::string why;
  if (!gpu_available(&why)) return "no GPU (" + why + ")";
  int dev = 0, rt = 0, drv = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.1f GiB), CUDA runtime %d, driver %d, cuDNN %zu (built with %d)",
                prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                double(prop.totalGlobalMem) / double(1ull << 30), rt, drv, cudnnGetVersion(), int(CUDNN_VERSION));
  return buf;
}

// ---------------------------------------------------------------- device buffers

DeviceBuffer::DeviceBuffer(size_t bytes, size_t guard_bytes) : bytes_(bytes), guard_(guard_bytes) {
  const size_t total = std::max<size_t>(bytes + guard_bytes, 1);
  const cudaError_t e = cudaMalloc(&ptr_, total);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    cudaGetLastError();
    throw CudaError(e, "cudaMalloc of " + std::to_string(bytes) + " + " + std::to_string(guard_bytes) +
                           " guard bytes failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
  }
  poison(0xFF);
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(o.ptr_), bytes_(o.bytes_), guard_(o.guard_), guard_byte_(o.guard_byte_) {
  o.ptr_ = nullptr;
  o.bytes_ = o.guard_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = o.ptr_, bytes_ = o.bytes_, guard_ = o.guard_, guard_byte_ = o.guard_byte_;
    o.ptr_ = nullptr;
    o.bytes_ = o.guard_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_) cudaFree(ptr_);  // errors here are sticky ones reported elsewhere; never throw from a destructor
  ptr_ = nullptr;
  bytes_ = guard_ = 0;
}

void DeviceBuffer::poison(uint8_t byte) {
  if (!ptr_) throw std::logic_error("DeviceBuffer::poison on an empty buffer");
  // The legacy stream, then a sync of only that stream: never waits for non-blocking streams.
  CUDA_CHECK(cudaMemsetAsync(ptr_, byte, bytes_ + guard_, cudaStreamLegacy));
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  guard_byte_ = byte;
}

void DeviceBuffer::upload(const std::vector<unsigned char>& host) {
  if (host.size() != bytes_)
    throw std::invalid_argument("DeviceBuffer::upload: " + std::to_string(host.size()) + " host bytes for a " +
                                std::to_string(bytes_) + "-byte buffer");
  upload(host.data(), host.size(), 0);
}

void DeviceBuffer::upload(const void* src, size_t n, size_t offset) {
  if (offset > bytes_ || n > bytes_ - offset)
    throw std::out_of_range("DeviceBuffer::upload: range [" + std::to_string(offset) + ", +" + std::to_string(n) +
                            ") outside " + std::to_string(bytes_) + " bytes");
  if (n == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(ptr_) + offset, src, n, cudaMemcpyHostToDevice, cudaStreamLegacy));
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));  // pageable copies may return before the DMA lands
}

std::vector<unsigned char> DeviceBuffer::download() const {
  std::vector<unsigned char> host(bytes_);
  download(host.data(), bytes_, 0);
  return host;
}

void DeviceBuffer::download(void* dst, size_t n, size_t offset) const {
  if (offset > bytes_ || n > bytes_ - offset)
    throw std::out_of_range("DeviceBuffer::download: range [" + std::to_string(offset) + ", +" + std::to_string(n) +
                            ") outside " + std::to_string(bytes_) + " bytes");
  if (n == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<const char*>(ptr_) + offset, n, cudaMemcpyDeviceToHost,
                             cudaStreamLegacy));
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

bool DeviceBuffer::guard_intact() const {
  if (guard_ == 0) return true;
  std::vector<unsigned char> g(guard_);
  CUDA_CHECK(cudaMemcpyAsync(g.data(), static_cast<const char*>(ptr_) + bytes_, guard_, cudaMemcpyDeviceToHost,
                             cudaStreamLegacy));
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  return std::all_of(g.begin(), g.end(), [&](unsigned char b) { return b == guard_byte_; });
}

// ---------------------------------------------------------------- RAII handles

CudaStream::CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
CudaStream::~CudaStream() {
  if (s_) cudaStreamDestroy(s_);
}
void CudaStream::sync() const { CUDA_CHECK(cudaStreamSynchronize(s_)); }

JhdnnHandle::JhdnnHandle() { JHDNN_CHECK(jhdnnCreate(&h_)); }
JhdnnHandle::~JhdnnHandle() {
  if (h_) jhdnnDestroy(h_);
}

CudnnHandle::CudnnHandle() { CUDNN_CHECK(cudnnCreate(&h_)); }
CudnnHandle::~CudnnHandle() {
  if (h_) cudnnDestroy(h_);
}

// ---------------------------------------------------------------- descriptors from a problem

namespace {

int to_int_dim(int64_t v, const char* what) {
  if (v <= 0 || v > INT_MAX)
    throw std::invalid_argument(std::string("descriptor ") + what + " (" + std::to_string(v) + ") does not fit in a positive int");
  return int(v);
}

// A stride for the int-typed setters. A size-1 dimension's stride is never multiplied by a
// non-zero index, so an out-of-range one (a > 2^31-element tensor's n stride, or a 0) is replaced.
int to_int_stride(int64_t stride, int64_t dim, const char* what) {
  if (stride > 0 && stride <= INT_MAX) return int(stride);
  if (dim == 1) return stride > INT_MAX ? INT_MAX : 1;
  throw std::invalid_argument(std::string("descriptor stride of ") + what + " (" + std::to_string(stride) +
                              ") does not fit in a positive int");
}

}  // namespace

NdDescArrays nd_desc_arrays(const core::ConvProblem& p) {
  if (p.spatial_dims != 2 && p.spatial_dims != 3)
    throw std::invalid_argument("spatial_dims must be 2 or 3, not " + std::to_string(p.spatial_dims));
  NdDescArrays a;
  const bool three = p.spatial_dims == 3;
  a.nb_dims = p.spatial_dims + 2;
  a.conv_dims = p.spatial_dims;
  // Which of the five ConvProblem axes (n, c, d, h, w) the descriptor has.
  const int axes3[5] = {0, 1, 2, 3, 4};
  const int axes2[4] = {0, 1, 3, 4};
  const int* axes = three ? axes3 : axes2;
  const int64_t xd[5] = {p.N, p.C, p.D, p.H, p.W};
  const int64_t yd[5] = {p.N, p.K, p.O, p.P, p.Q};
  const int64_t wd[5] = {p.K, p.c_per_group(), p.T, p.R, p.S};
  for (int i = 0; i < a.nb_dims; ++i) {
    const int ax = axes[i];
    a.x_dims[i] = to_int_dim(xd[ax], "x dim");
    a.x_strides[i] = to_int_stride(p.x_stride[ax], xd[ax], "x");
    a.y_dims[i] = to_int_dim(yd[ax], "y dim");
    a.y_strides[i] = to_int_stride(p.y_stride[ax], yd[ax], "y");
    a.w_dims[i] = to_int_dim(wd[ax], "w dim");
  }
  // When both packings describe w (C/G == 1, or a 1x1 filter with K == 1) the format follows x,
  // so cuDNN sees the consistent channels-last (or channels-first) set its kernels expect.
  const bool x_channels_last = p.C > 1 && p.x_stride[core::kC] == 1;
  if (p.w_packed_kcrs() && !(x_channels_last && p.w_packed_krsc())) {
    a.w_nhwc = false;
  } else if (p.w_packed_krsc()) {
    a.w_nhwc = true;
  } else {
    throw std::invalid_argument("filter must be packed KCRS or KRSC for a filter descriptor: " + p.key());
  }
  const int pad[3] = {p.pad_d, p.pad_h, p.pad_w};
  const int stride[3] = {p.stride_d, p.stride_h, p.stride_w};
  const int dil[3] = {p.dil_d, p.dil_h, p.dil_w};
  const int first = three ? 0 : 1;  // 2-D: (h, w) only
  for (int i = 0; i < a.conv_dims; ++i) {
    a.pad[i] = pad[first + i];
    a.stride[i] = stride[first + i];
    a.dilation[i] = dil[first + i];
  }
  return a;
}

JhdnnConvDescs::JhdnnConvDescs(const core::ConvProblem& p) : dtype(p.dtype) {
  try {
    const NdDescArrays a = nd_desc_arrays(p);
    JHDNN_CHECK(jhdnnCreateTensorDescriptor(&x));
    JHDNN_CHECK(jhdnnCreateFilterDescriptor(&w));
    JHDNN_CHECK(jhdnnCreateConvolutionDescriptor(&conv));
    JHDNN_CHECK(jhdnnCreateTensorDescriptor(&y));
    JHDNN_CHECK(jhdnnSetTensorNdDescriptor(x, p.dtype, a.nb_dims, a.x_dims, a.x_strides));
    JHDNN_CHECK(jhdnnSetFilterNdDescriptor(w, p.dtype, a.w_nhwc ? JHDNN_TENSOR_NHWC : JHDNN_TENSOR_NCHW,
                                           a.nb_dims, a.w_dims));
    JHDNN_CHECK(jhdnnSetConvolutionNdDescriptor(conv, a.conv_dims, a.pad, a.stride, a.dilation, p.mode,
                                                p.compute_type));
    JHDNN_CHECK(jhdnnSetConvolutionGroupCount(conv, to_int_dim(p.G, "group count")));
    JHDNN_CHECK(jhdnnSetConvolutionMathType(conv, p.math_type));
    JHDNN_CHECK(jhdnnSetTensorNdDescriptor(y, p.dtype, a.nb_dims, a.y_dims, a.y_strides));
  } catch (...) {
    release();  // a throwing constructor runs no destructor: free what was created, then rethrow
    throw;
  }
}

JhdnnConvDescs::~JhdnnConvDescs() { release(); }

void JhdnnConvDescs::release() noexcept {
  if (x) jhdnnDestroyTensorDescriptor(x);
  if (w) jhdnnDestroyFilterDescriptor(w);
  if (conv) jhdnnDestroyConvolutionDescriptor(conv);
  if (y) jhdnnDestroyTensorDescriptor(y);
  x = nullptr, w = nullptr, conv = nullptr, y = nullptr;
}

CudnnConvDescs::CudnnConvDescs(const core::ConvProblem& p)
    : dtype(static_cast<cudnnDataType_t>(p.dtype)), math(static_cast<cudnnMathType_t>(p.math_type)) {
  try {
    const NdDescArrays a = nd_desc_arrays(p);
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(x, dtype, a.nb_dims, a.x_dims, a.x_strides));
    CUDNN_CHECK(cudnnSetFilterNdDescriptor(w, dtype, a.w_nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, a.nb_dims,
                                           a.w_dims));
    CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(conv, a.conv_dims, a.pad, a.stride, a.dilation,
                                                static_cast<cudnnConvolutionMode_t>(p.mode),
                                                static_cast<cudnnDataType_t>(p.compute_type)));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, to_int_dim(p.G, "group count")));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(y, dtype, a.nb_dims, a.y_dims, a.y_strides));
  } catch (...) {
    release();
    throw;
  }
}

CudnnConvDescs::~CudnnConvDescs() { release(); }

void CudnnConvDescs::release() noexcept {
  if (x) cudnnDestroyTensorDescriptor(x);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
  if (y) cudnnDestroyTensorDescriptor(y);
  x = nullptr, w = nullptr, conv = nullptr, y = nullptr;
}

// ---------------------------------------------------------------- cuDNN's best algorithm

namespace {

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "FMA";
    default: return "?";
  }
}

}  // namespace

CudnnRun cudnn_best_forward(cudnnHandle_t handle, const CudnnConvDescs& d, const void* x, const void* w, void* y,
                            double alpha, double beta, CudnnPick pick, DeviceBuffer* workspace,
                            size_t max_workspace, uint32_t algo_mask) {
  CudnnRun r;
  auto note = [&](const std::string& s) { r.log += (r.log.empty() ? "" : "; ") + s; };

  int max_count = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count);
  if (s != CUDNN_STATUS_SUCCESS) {
    r.status = s;
    note(std::string("GetConvolutionForwardAlgorithmMaxCount: ") + cudnnGetErrorString(s));
    return r;
  }
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(size_t(std::max(max_count, 1)));
  int returned = 0;
  if (pick == CudnnPick::kFind)
    s = cudnnFindConvolutionForwardAlgorithm(handle, d.x, d.w, d.conv, d.y, int(perf.size()), &returned, perf.data());
  else
    s = cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, int(perf.size()), &returned,
                                               perf.data());
  if (s != CUDNN_STATUS_SUCCESS) {
    r.status = s;
    note(std::string(pick == CudnnPick::kFind ? "FindConvolutionForwardAlgorithm: " : "GetConvolutionForwardAlgorithm_v7: ") +
         cudnnGetErrorString(s));
    return r;
  }

  cudaStream_t stream = nullptr;
  s = cudnnGetStream(handle, &stream);
  if (s != CUDNN_STATUS_SUCCESS) {
    r.status = s;
    note(std::string("cudnnGetStream: ") + cudnnGetErrorString(s));
    return r;
  }

  const float alpha_f = float(alpha), beta_f = float(beta);
  const bool dbl = d.dtype == CUDNN_DATA_DOUBLE;
  const void* alpha_p = dbl ? static_cast<const void*>(&alpha) : static_cast<const void*>(&alpha_f);
  const void* beta_p = dbl ? static_cast<const void*>(&beta) : static_cast<const void*>(&beta_f);

  bool every_failure_not_supported = true;
  cudnnStatus_t last_failure = CUDNN_STATUS_NOT_SUPPORTED;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& c = perf[size_t(i)];
    const std::string tag = std::string(cudnn_algo_name(c.algo)) + "/" + math_name(c.mathType);
    if (c.status != CUDNN_STATUS_SUCCESS) {
      note(tag + ": " + cudnnGetErrorString(c.status));
      continue;
    }
    if (int(c.algo) < 0 || int(c.algo) >= 32 || !(algo_mask & (1u << int(c.algo)))) {
      note(tag + ": passed over (not in algo_mask)");
      continue;
    }
    if (c.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && d.math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      note(tag + ": passed over (would narrow the data; the problem's math type does not allow it)");
      continue;
    }
    s = cudnnSetConvolutionMathType(d.conv, c.mathType);
    size_t ws_bytes = 0;
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, c.algo, &ws_bytes);
    if (s != CUDNN_STATUS_SUCCESS) {
      cudnnSetConvolutionMathType(d.conv, d.math);
      note(tag + ": workspace query " + cudnnGetErrorString(s));
      every_failure_not_supported = every_failure_not_supported && cudnn_not_supported(s);
      last_failure = s;
      continue;
    }
    ws_bytes = std::max(ws_bytes, c.memory);
    if (ws_bytes > max_workspace) {
      cudnnSetConvolutionMathType(d.conv, d.math);
      note(tag + ": needs " + std::to_string(ws_bytes) + " workspace bytes > " + std::to_string(max_workspace));
      continue;
    }
    DeviceBuffer temp;
    void* ws = nullptr;
    if (ws_bytes > 0) {
      try {
        if (workspace != nullptr) {
          if (workspace->bytes() < ws_bytes) {
            CUDA_CHECK(cudaStreamSynchronize(stream));  // the old workspace may still be in use
            workspace->reset();
            *workspace = DeviceBuffer(ws_bytes, 0);
          }
          ws = workspace->get();
        } else {
          temp = DeviceBuffer(ws_bytes, 0);
          ws = temp.get();
        }
      } catch (const CudaError& e) {
        if (e.code != cudaErrorMemoryAllocation) {
          cudnnSetConvolutionMathType(d.conv, d.math);
          throw;
        }
        cudnnSetConvolutionMathType(d.conv, d.math);
        note(tag + ": could not allocate " + std::to_string(ws_bytes) + " workspace bytes");
        continue;
      }
    }
    s = cudnnConvolutionForward(handle, alpha_p, d.x, x, d.w, w, d.conv, c.algo, ws, ws_bytes, beta_p, d.y, y);
    // A temporary workspace is freed when this iteration ends: let the kernel finish first.
    cudaError_t sync_err = cudaSuccess;
    if (temp.get() != nullptr) sync_err = cudaStreamSynchronize(stream);
    cudnnSetConvolutionMathType(d.conv, d.math);
    CUDA_CHECK(sync_err);
    if (s == CUDNN_STATUS_SUCCESS) {
      r.status = s;
      r.algo = c.algo;
      r.math = c.mathType;
      r.workspace_bytes = ws_bytes;
      r.find_ms = pick == CudnnPick::kFind ? c.time : -1.0f;
      note(tag + ": ran");
      return r;
    }
    note(tag + ": ConvolutionForward " + cudnnGetErrorString(s));
    every_failure_not_supported = every_failure_not_supported && cudnn_not_supported(s);
    last_failure = s;
  }
  r.status = every_failure_not_supported ? CUDNN_STATUS_NOT_SUPPORTED : last_failure;
  if (returned == 0) note("no algorithm returned");
  return r;
}

const char* cudnn_algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "UNKNOWN_ALGO";
  }
}

const char* jhdnn_algo_name(jhdnnConvolutionFwdAlgo_t a) {
  return cudnn_algo_name(static_cast<cudnnConvolutionFwdAlgo_t>(a));  // same values by design
}

}  // namespace jhdnn::test
