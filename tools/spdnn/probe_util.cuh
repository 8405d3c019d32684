// What the layer probes of tools/spdnn (spdnn_scatter_probe, spdnn_blockell_probe, spdnn_tchead_probe) share: uploads,
// a poisoned output buffer, the median time of a kernel, the library's fp32 chain on the CPU that they are checked
// against, and for the tensor-core probes bf16 weights as mma.sync A fragments and their --random values.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
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

// w rounded to bf16, as bits; whether w is a bf16 value (then the rounding is exact).
inline uint16_t bf16_bits(float w) { return __bfloat16_as_ushort(__float2bfloat16_rn(w)); }
inline bool is_bf16(float w) {
  const uint32_t wide = uint32_t(bf16_bits(w)) << 16;
  float back = 0.f;
  std::memcpy(&back, &wide, 4);
  return back == w;
}

// Lane `lane`'s A fragment of mma.sync m16n8k16 bf16 for the 16 x 16 block a[row][k] (PTX layout; gid = lane / 4,
// tig = lane % 4): registers (gid, 2 tig), (gid + 8, 2 tig), (gid, 2 tig + 8), (gid + 8, 2 tig + 8), each the pair of
// k and k + 1, the lower k in the low half.
inline uint4 mma_a_fragment(const float (&a)[16][16], int lane) {
  const int gid = lane >> 2, tig = lane & 3;
  auto pair = [&](int row, int k) {
    return uint32_t(bf16_bits(a[row][k])) | (uint32_t(bf16_bits(a[row][k + 1])) << 16);
  };
  return make_uint4(pair(gid, 2 * tig), pair(gid + 8, 2 * tig), pair(gid, 2 * tig + 8), pair(gid + 8, 2 * tig + 8));
}

// The tensor-core probes' --random 1 values (one xorshift stream): weights, bf16 values in (-1, 1) (8 significant
// bits, so every weight reaches every fragment position exactly), and image values in [0.5, 1.5) with full fp32
// mantissas (so all three bf16 pieces of a feature are nonzero): what a fragment or renaming mistake changes by ~1.
class RandomValues {
 public:
  float weight() { return float(int(next() % 511) - 255) / 256.f; }
  float value() { return 0.5f + float(next() % (1u << 23)) / float(1u << 23); }

 private:
  uint64_t next() {
    st_ ^= st_ << 13;
    st_ ^= st_ >> 7;
    st_ ^= st_ << 17;
    return st_;
  }
  uint64_t st_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace spdnn::probe
