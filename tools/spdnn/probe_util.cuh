// What the layer probes of tools/spdnn (spdnn_scatter_probe, spdnn_blockell_probe) share: uploads, a poisoned output
// buffer, the median time of a kernel, and the library's fp32 chain on the CPU that they are checked against.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/gpu_util.h"  // CUDA_CHECK
#include "spdnn/spdnn.h"

namespace spdnn::probe {

template <typename T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(T)));
  if (!v.empty()) CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// floats of device memory filled with NaN (0xff bytes), so that an output never written shows.
inline float* poisoned(size_t floats) {
  float* d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, floats * 4));
  CUDA_CHECK(cudaMemset(d, 0xff, floats * 4));
  return d;
}

// The median time in us of `reps` launches after 2 untimed ones; reset() runs before each launch, off the clock.
template <class Reset, class Launch>
double median_us(int reps, Reset&& reset, Launch&& launch) {
  cudaEvent_t t0, t1;
  CUDA_CHECK(cudaEventCreate(&t0));
  CUDA_CHECK(cudaEventCreate(&t1));
  std::vector<float> ms;
  for (int r = 0; r < reps + 2; ++r) {
    reset();
    CUDA_CHECK(cudaEventRecord(t0));
    launch();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(t1));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float m = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&m, t0, t1));
    if (r >= 2) ms.push_back(m);
  }
  CUDA_CHECK(cudaEventDestroy(t0));
  CUDA_CHECK(cudaEventDestroy(t1));
  std::sort(ms.begin(), ms.end());
  return double(ms[ms.size() / 2]) * 1000.0;
}

// Output j of the library's fp32 chain: acc = fma(w, x, acc) over row j's entries in stored order from 0 (padding:
// fma(0, 0, acc)), then min(max(acc + bias, 0), clamp). x: the dense input (e.cols floats).
inline float chain_output(const Ell& e, int64_t j, const float* x, float bias, float clamp) {
  float acc = 0.f;
  for (int64_t k = 0; k < e.width; ++k) {
    const int i = e.idx[size_t(j * e.width + k)];
    acc = std::fma(e.val[size_t(j * e.width + k)], i >= 0 ? x[size_t(i)] : 0.f, acc);
  }
  return std::fmin(std::fmax(acc + bias, 0.f), clamp);
}

}  // namespace spdnn::probe
