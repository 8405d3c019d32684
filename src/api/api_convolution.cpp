// Convolution shims: workspace query, algorithm queries (get / find) and the forward call.
#include <algorithm>
#include <vector>

#include <cuda_runtime_api.h>

#include "api/api_common.h"
#include "conv/dispatch.h"
#include "core/cuda_check.h"
#include "core/device_info.h"
#include "core/log.h"
#include "core/problem_string.h"

using namespace jhdnn;
using conv::ConvArgs;
using conv::ConvSolver;
using core::ConvProblem;
using core::fail;
using core::Status;

namespace {

// The order Get_v7 ranks algorithms in when nothing has been timed: GEMM-based and transform
// algorithms are usually faster than DIRECT on the layers people run.
constexpr jhdnnConvolutionFwdAlgo_t kHeuristicOrder[] = {
    JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
    JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,     JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
    JHDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,            JHDNN_CONVOLUTION_FWD_ALGO_FFT,
    JHDNN_CONVOLUTION_FWD_ALGO_GEMM,                  JHDNN_CONVOLUTION_FWD_ALGO_DIRECT,
};

Status problem_from(jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc, const jhdnnFilterDescriptor_t wDesc,
                    const jhdnnConvolutionDescriptor_t convDesc, const jhdnnTensorDescriptor_t yDesc,
                    ConvProblem* p) {
  JHDNN_CHECK_NULL(handle);
  JHDNN_CHECK_NULL(xDesc);
  JHDNN_CHECK_NULL(wDesc);
  JHDNN_CHECK_NULL(convDesc);
  JHDNN_CHECK_NULL(yDesc);
  return conv::make_problem(*xDesc, *wDesc, *convDesc, *yDesc, p);
}

// Scaling factors are float for every data type but DOUBLE (cuDNN's rule).
double read_scale(const void* s, jhdnnDataType_t dtype) {
  return dtype == JHDNN_DATA_DOUBLE ? *static_cast<const double*>(s) : double(*static_cast<const float*>(s));
}

bool ranges_overlap(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto lo_a = reinterpret_cast<uintptr_t>(a), lo_b = reinterpret_cast<uintptr_t>(b);
  return lo_a < lo_b + uintptr_t(b_bytes) && lo_b < lo_a + uintptr_t(a_bytes);
}

// Kernels launch on the current device: it must be the one the handle was created on.
Status check_current_device(const core::DeviceInfo& dev) {
  int current = -1;
  JHDNN_CUDA_TRY(cudaGetDevice(&current));
  if (current != dev.device)
    return fail(JHDNN_STATUS_BAD_PARAM, "the current device is %d but the handle was created on device %d",
                current, dev.device);
  return Status::success();
}

// Pointer checks shared by Forward and FindEx.
Status check_buffers(const ConvProblem& p, const core::DeviceInfo& dev, const void* x, const void* w,
                     const void* y) {
  JHDNN_TRY(check_current_device(dev));
  const size_t es = core::data_type_size(p.dtype);
  JHDNN_TRY(core::check_device_pointer(x, es, "x", dev));
  JHDNN_TRY(core::check_device_pointer(w, es, "w", dev));
  JHDNN_TRY(core::check_device_pointer(y, es, "y", dev));
  const int64_t xb = p.x_span() * int64_t(es), wb = p.w_span() * int64_t(es), yb = p.y_span() * int64_t(es);
  if (ranges_overlap(y, yb, x, xb)) return fail(JHDNN_STATUS_BAD_PARAM, "y overlaps x (in-place convolution is not supported)");
  if (ranges_overlap(y, yb, w, wb)) return fail(JHDNN_STATUS_BAD_PARAM, "y overlaps w");
  return Status::success();
}

jhdnnConvolutionFwdAlgoPerf_t perf_entry(const ConvProblem& p, const core::DeviceInfo& dev,
                                          jhdnnConvolutionFwdAlgo_t algo, const ConvSolver** solver) {
  jhdnnConvolutionFwdAlgoPerf_t r{};
  r.algo = algo;
  r.time = -1.0f;
  r.mathType = JHDNN_FMA_MATH;
  *solver = nullptr;
  const Status s = conv::select_solver(p, dev, algo, solver);
  r.status = s.code;
  if (s.ok()) {
    r.memory = (*solver)->workspace_bytes(p);
    r.determinism = (*solver)->deterministic() ? JHDNN_DETERMINISTIC : JHDNN_NON_DETERMINISTIC;
  }
  return r;
}

// Ranks: runnable entries first (by time when timed, else heuristic order), then the others.
void rank(std::vector<jhdnnConvolutionFwdAlgoPerf_t>& v) {
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    const bool ga = a.status == JHDNN_STATUS_SUCCESS, gb = b.status == JHDNN_STATUS_SUCCESS;
    if (ga != gb) return ga;
    if (ga && a.time >= 0 && b.time >= 0) return a.time < b.time;
    return false;
  });
}

Status copy_out(const std::vector<jhdnnConvolutionFwdAlgoPerf_t>& v, int requested, int* returned,
                jhdnnConvolutionFwdAlgoPerf_t* out) {
  const int n = std::min<int>(requested, int(v.size()));
  std::copy(v.begin(), v.begin() + n, out);
  *returned = n;
  return Status::success();
}

Status check_request(int requestedAlgoCount, int* returnedAlgoCount, jhdnnConvolutionFwdAlgoPerf_t* perfResults) {
  if (requestedAlgoCount < 1)
    return fail(JHDNN_STATUS_BAD_PARAM, "requestedAlgoCount (%d) must be >= 1", requestedAlgoCount);
  JHDNN_CHECK_NULL(returnedAlgoCount);
  JHDNN_CHECK_NULL(perfResults);
  return Status::success();
}

// One timed run of s on the handle's stream, in milliseconds.
Status time_once(jhdnnHandle_t h, const ConvSolver& s, const ConvProblem& p, const ConvArgs& args, void* ws,
                 size_t ws_bytes, cudaEvent_t start, cudaEvent_t stop, float* ms) {
  JHDNN_CUDA_TRY(cudaEventRecord(start, h->stream));
  JHDNN_TRY(conv::run_solver(s, p, args, ws, ws_bytes, h->stream));
  JHDNN_CUDA_TRY(cudaEventRecord(stop, h->stream));
  JHDNN_CUDA_TRY(cudaEventSynchronize(stop));
  JHDNN_CUDA_TRY(cudaEventElapsedTime(ms, start, stop));
  return Status::success();
}

// Times every runnable algorithm on the given buffers: the median of a few runs after a warm-up.
// An algorithm whose run fails gets that status in its entry and the others are still timed, as
// cuDNN does; only a failure to create the timing events fails the whole call.
Status find_on(jhdnnHandle_t h, const ConvProblem& p, const ConvArgs& args, void* ws, size_t ws_bytes,
               std::vector<jhdnnConvolutionFwdAlgoPerf_t>* out) {
  constexpr int kRuns = 5;
  cudaEvent_t start = nullptr, stop = nullptr;
  Status result = JHDNN_CUDA_STATUS(cudaEventCreate(&start));
  if (result.ok()) result = JHDNN_CUDA_STATUS(cudaEventCreate(&stop));
  for (jhdnnConvolutionFwdAlgo_t algo : kHeuristicOrder) {
    if (!result.ok()) break;
    const ConvSolver* s = nullptr;
    jhdnnConvolutionFwdAlgoPerf_t r = perf_entry(p, h->device, algo, &s);
    if (s != nullptr && r.memory > ws_bytes) {
      if (s->workspace_optional())
        r.memory = 0;  // it runs without (tensorcore_wgmma_smallc -> tensorcore_mma): time that
      else
        r.status = JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT;
    }
    if (r.status == JHDNN_STATUS_SUCCESS) {
      float t[kRuns + 1];
      Status run;
      for (int i = 0; i <= kRuns && run.ok(); ++i)  // run 0 warms up
        run = time_once(h, *s, p, args, ws, ws_bytes, start, stop, &t[i]);
      if (run.ok()) {
        std::sort(t + 1, t + kRuns + 1);
        r.time = t[1 + kRuns / 2];
      } else {
        r.status = run.code;
      }
    }
    out->push_back(r);
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  return result;
}

}  // namespace

extern "C" {

jhdnnStatus_t jhdnnGetConvolutionForwardAlgorithmMaxCount(jhdnnHandle_t handle, int* count) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(handle);
    JHDNN_CHECK_NULL(count);
    *count = JHDNN_CONVOLUTION_FWD_ALGO_COUNT;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolutionForwardWorkspaceSize(jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc,
                                                      const jhdnnFilterDescriptor_t wDesc,
                                                      const jhdnnConvolutionDescriptor_t convDesc,
                                                      const jhdnnTensorDescriptor_t yDesc,
                                                      jhdnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  return api::guarded([&]() -> Status {
    ConvProblem p;
    JHDNN_TRY(problem_from(handle, xDesc, wDesc, convDesc, yDesc, &p));
    JHDNN_CHECK_NULL(sizeInBytes);
    const ConvSolver* s = nullptr;
    JHDNN_TRY(conv::select_solver(p, handle->device, algo, &s));
    *sizeInBytes = s->workspace_bytes(p);
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolutionForwardAlgorithm_v7(jhdnnHandle_t handle, const jhdnnTensorDescriptor_t srcDesc,
                                                     const jhdnnFilterDescriptor_t filterDesc,
                                                     const jhdnnConvolutionDescriptor_t convDesc,
                                                     const jhdnnTensorDescriptor_t destDesc,
                                                     const int requestedAlgoCount, int* returnedAlgoCount,
                                                     jhdnnConvolutionFwdAlgoPerf_t* perfResults) {
  return api::guarded([&]() -> Status {
    ConvProblem p;
    JHDNN_TRY(problem_from(handle, srcDesc, filterDesc, convDesc, destDesc, &p));
    JHDNN_TRY(check_request(requestedAlgoCount, returnedAlgoCount, perfResults));
    std::vector<jhdnnConvolutionFwdAlgoPerf_t> v;
    for (jhdnnConvolutionFwdAlgo_t algo : kHeuristicOrder) {
      const ConvSolver* s;
      v.push_back(perf_entry(p, handle->device, algo, &s));
    }
    rank(v);
    return copy_out(v, requestedAlgoCount, returnedAlgoCount, perfResults);
  });
}

jhdnnStatus_t jhdnnFindConvolutionForwardAlgorithm(jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc,
                                                   const jhdnnFilterDescriptor_t wDesc,
                                                   const jhdnnConvolutionDescriptor_t convDesc,
                                                   const jhdnnTensorDescriptor_t yDesc, const int requestedAlgoCount,
                                                   int* returnedAlgoCount, jhdnnConvolutionFwdAlgoPerf_t* perfResults) {
  return api::guarded([&]() -> Status {
    ConvProblem p;
    JHDNN_TRY(problem_from(handle, xDesc, wDesc, convDesc, yDesc, &p));
    if (core::log_enabled()) core::log_line(std::string("jhdnnFindConvolutionForwardAlgorithm: ") + core::bench_command(p, "all"));
    JHDNN_TRY(check_request(requestedAlgoCount, returnedAlgoCount, perfResults));
    JHDNN_TRY(check_current_device(handle->device));
    // Buffers of our own: x and w filled with a small non-zero pattern (0x3c bytes: about 0.01 in
    // FLOAT and BFLOAT16, about 1.06 in HALF) so timings are those of real data, not of zeros.
    const size_t es = core::data_type_size(p.dtype);
    size_t ws_bytes = 0;
    for (jhdnnConvolutionFwdAlgo_t algo : kHeuristicOrder) {
      const ConvSolver* s;
      if (perf_entry(p, handle->device, algo, &s).status == JHDNN_STATUS_SUCCESS)
        ws_bytes = std::max(ws_bytes, s->workspace_bytes(p));
    }
    const size_t sizes[4] = {size_t(p.x_span()) * es, size_t(p.w_span()) * es, size_t(p.y_span()) * es, ws_bytes};
    void* buf[4] = {};
    Status s;
    for (int i = 0; i < 4 && s.ok(); ++i) {
      if (sizes[i] == 0) continue;
      if (cudaMalloc(&buf[i], sizes[i]) != cudaSuccess) {
        cudaGetLastError();
        s = fail(JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "cudaMalloc of %zu bytes failed", sizes[i]);
      } else if (i < 2) {
        s = JHDNN_CUDA_STATUS(cudaMemsetAsync(buf[i], 0x3c, sizes[i], handle->stream));
      }
    }
    std::vector<jhdnnConvolutionFwdAlgoPerf_t> v;
    if (s.ok()) s = find_on(handle, p, ConvArgs{buf[0], buf[1], buf[2], 1.0, 0.0, handle}, buf[3], ws_bytes, &v);
    for (void* b : buf) cudaFree(b);
    JHDNN_TRY(s);
    rank(v);
    return copy_out(v, requestedAlgoCount, returnedAlgoCount, perfResults);
  });
}

jhdnnStatus_t jhdnnFindConvolutionForwardAlgorithmEx(
    jhdnnHandle_t handle, const jhdnnTensorDescriptor_t xDesc, const void* x, const jhdnnFilterDescriptor_t wDesc,
    const void* w, const jhdnnConvolutionDescriptor_t convDesc, const jhdnnTensorDescriptor_t yDesc, void* y,
    const int requestedAlgoCount, int* returnedAlgoCount, jhdnnConvolutionFwdAlgoPerf_t* perfResults,
    void* workSpace, size_t workSpaceSizeInBytes) {
  return api::guarded([&]() -> Status {
    ConvProblem p;
    JHDNN_TRY(problem_from(handle, xDesc, wDesc, convDesc, yDesc, &p));
    if (core::log_enabled()) core::log_line(std::string("jhdnnFindConvolutionForwardAlgorithmEx: ") + core::bench_command(p, "all"));
    JHDNN_TRY(check_request(requestedAlgoCount, returnedAlgoCount, perfResults));
    JHDNN_TRY(check_buffers(p, handle->device, x, w, y));
    if (workSpace == nullptr) workSpaceSizeInBytes = 0;
    std::vector<jhdnnConvolutionFwdAlgoPerf_t> v;
    JHDNN_TRY(find_on(handle, p, ConvArgs{x, w, y, 1.0, 0.0, handle}, workSpace, workSpaceSizeInBytes, &v));
    rank(v);
    return copy_out(v, requestedAlgoCount, returnedAlgoCount, perfResults);
  });
}

jhdnnStatus_t jhdnnConvolutionForward(jhdnnHandle_t handle, const void* alpha, const jhdnnTensorDescriptor_t xDesc,
                                      const void* x, const jhdnnFilterDescriptor_t wDesc, const void* w,
                                      const jhdnnConvolutionDescriptor_t convDesc, jhdnnConvolutionFwdAlgo_t algo,
                                      void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
                                      const jhdnnTensorDescriptor_t yDesc, void* y) {
  return api::guarded([&]() -> Status {
    ConvProblem p;
    JHDNN_TRY(problem_from(handle, xDesc, wDesc, convDesc, yDesc, &p));
    JHDNN_CHECK_NULL(alpha);
    JHDNN_CHECK_NULL(beta);
    const ConvSolver* s = nullptr;
    const Status sel = conv::select_solver(p, handle->device, algo, &s);
    conv::log_dispatch("jhdnnConvolutionForward", p, handle->device, algo, s, sel);
    JHDNN_TRY(sel);
    JHDNN_TRY(check_buffers(p, handle->device, x, w, y));
    const ConvArgs args{x, w, y, read_scale(alpha, p.dtype), read_scale(beta, p.dtype), handle};
    return conv::run_solver(*s, p, args, workSpace, workSpaceSizeInBytes, handle->stream);
  });
}

}  // extern "C"
