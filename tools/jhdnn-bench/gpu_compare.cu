#include "gpu_compare.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace jhdnn::bench {
namespace {

__device__ double to_double(float v) { return v; }
__device__ double to_double(double v) { return v; }
__device__ double to_double(__half v) { return __half2float(v); }
__device__ double to_double(__nv_bfloat16 v) { return __bfloat162float(v); }

// Non-negative doubles order like their bit patterns, so atomicMax on the bits is a max.
__device__ void atomic_max_nonneg(double* addr, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(__double_as_longlong(v)));
}

// Grid-stride loop; each thread folds its elements locally, then one atomic per statistic.
template <class T>
__global__ void compare_kernel(const T* __restrict__ got, const T* __restrict__ ref, int64_t n, double atol,
                               double rtol, GpuCompare* out) {
  unsigned long long bad = 0, nonfinite = 0, first = ~0ull;
  double max_diff = 0, max_ref = 0, d2 = 0, r2 = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double g = to_double(got[i]), r = to_double(ref[i]);
    const bool gf = isfinite(g), rf = isfinite(r);
    if (!gf) ++nonfinite;
    if (!gf || !rf) {
      ++bad;
      if (first == ~0ull) first = static_cast<unsigned long long>(i);
      continue;
    }
    const double d = fabs(g - r);
    if (!(d <= atol + rtol * fabs(r))) {
      ++bad;
      if (first == ~0ull) first = static_cast<unsigned long long>(i);
    }
    max_diff = fmax(max_diff, d);
    max_ref = fmax(max_ref, fabs(r));
    d2 += d * d;
    r2 += r * r;
  }
  if (bad) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&out->n_bad), bad);
    atomicMin(reinterpret_cast<unsigned long long*>(&out->first_bad), first);
  }
  if (nonfinite) atomicAdd(reinterpret_cast<unsigned long long*>(&out->n_nonfinite), nonfinite);
  atomic_max_nonneg(&out->max_abs_diff, max_diff);
  atomic_max_nonneg(&out->max_abs_ref, max_ref);
  atomicAdd(&out->sum_diff2, d2);
  atomicAdd(&out->sum_ref2, r2);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string("gpu_compare: ") + what + ": " + cudaGetErrorString(e));
  }
}

}  // namespace

GpuCompare gpu_compare(const void* got, const void* ref, int64_t n, jhdnnDataType_t dt, double atol, double rtol,
                       cudaStream_t stream) {
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "64-bit counters");
  GpuCompare init, result;
  GpuCompare* d = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof(GpuCompare), stream), "cudaMallocAsync");
  check(cudaMemcpyAsync(d, &init, sizeof init, cudaMemcpyHostToDevice, stream), "upload");
  const int threads = 256;
  const int blocks = int(std::min<int64_t>((n + threads - 1) / threads, 4096));
  if (n > 0) {
    switch (dt) {
      case JHDNN_DATA_FLOAT:
        compare_kernel<<<blocks, threads, 0, stream>>>(static_cast<const float*>(got), static_cast<const float*>(ref), n, atol, rtol, d);
        break;
      case JHDNN_DATA_DOUBLE:
        compare_kernel<<<blocks, threads, 0, stream>>>(static_cast<const double*>(got), static_cast<const double*>(ref), n, atol, rtol, d);
        break;
      case JHDNN_DATA_HALF:
        compare_kernel<<<blocks, threads, 0, stream>>>(static_cast<const __half*>(got), static_cast<const __half*>(ref), n, atol, rtol, d);
        break;
      case JHDNN_DATA_BFLOAT16:
        compare_kernel<<<blocks, threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(got), static_cast<const __nv_bfloat16*>(ref), n, atol, rtol, d);
        break;
      default: cudaFreeAsync(d, stream); throw std::runtime_error("gpu_compare: unsupported data type");
    }
    check(cudaGetLastError(), "launch");
  }
  check(cudaMemcpyAsync(&result, d, sizeof result, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaFreeAsync(d, stream), "cudaFreeAsync");
  check(cudaStreamSynchronize(stream), "sync");
  return result;
}

}  // namespace jhdnn::bench
