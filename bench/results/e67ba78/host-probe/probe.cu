// Host cost of the CUDA runtime queries a resident call makes (session 41 probe; not part of the library).
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(512, 1) big(float* p) { extern __shared__ float s[]; s[threadIdx.x] = 1; p[threadIdx.x] = s[threadIdx.x ^ 1]; }
__global__ void __launch_bounds__(256, 2) big8(float* p) { extern __shared__ float s[]; s[threadIdx.x] = 1; p[threadIdx.x] = s[threadIdx.x ^ 1]; }
struct Table { int4 v[1024]; };  // 16 KB, as ResidentTable
__global__ void __launch_bounds__(512, 1) big_table(const __grid_constant__ Table t, float* p) { extern __shared__ float s[]; s[threadIdx.x] = t.v[threadIdx.x].x; p[threadIdx.x] = s[threadIdx.x ^ 1]; }
template <typename F> double us(const char* what, int reps, F f) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  double r = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
  std::printf("%-60s %8.3f us\n", what, r);
  return r;
}
int main() {
  cudaSetDevice(0);
  float* d; cudaMalloc(&d, 1 << 20);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  size_t smem = 200 * 1024, smem8 = 110 * 1024;
  cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  cudaFuncSetAttribute(big8, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem8));
  int v = 0;
  us("cudaOccupancyMaxActiveBlocksPerMultiprocessor (512 thr, 200 KB)", 1000, [&] { cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, big, 512, smem); });
  us("cudaOccupancyMaxActiveBlocksPerMultiprocessor (256 thr, 110 KB)", 1000, [&] { cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, big8, 256, smem8); });
  us("cudaDeviceGetAttribute (SM count)", 10000, [&] { cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0); });
  us("cudaDeviceGetAttribute (smem per SM)", 10000, [&] { cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0); });
  cudaStreamCaptureStatus cs;
  us("cudaStreamIsCapturing", 10000, [&] { cudaStreamIsCapturing(s, &cs); });
  cudaPointerAttributes pa;
  us("cudaPointerGetAttributes (device memory)", 10000, [&] { cudaPointerGetAttributes(&pa, d + 64); });
  us("cudaGetDevice", 10000, [&] { cudaGetDevice(&v); });
  us("cudaFuncSetAttribute (same value again)", 1000, [&] { cudaFuncSetAttribute(big, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)); });
  us("cudaMemsetAsync 1 KB", 1000, [&] { cudaMemsetAsync(d, 0, 1024, s); });
  cudaStreamSynchronize(s);
  us("launch big<<<263, 512, 200 KB>>>", 200, [&] { big<<<263, 512, smem, s>>>(d); });
  cudaStreamSynchronize(s);
  cudaFuncSetAttribute(big_table, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  static Table tab{};
  us("launch big_table<<<263, 512, 200 KB>>> (16 KB parameter)", 200, [&] { big_table<<<263, 512, smem, s>>>(tab, d); });
  cudaStreamSynchronize(s);
  us("launch big<<<263, 512, 200 KB>>> again", 200, [&] { big<<<263, 512, smem, s>>>(d); });
  cudaStreamSynchronize(s);
  us("cudaGetLastError", 10000, [&] { (void)cudaGetLastError(); });
  cudaMemPool_t pool; cudaDeviceGetDefaultMemPool(&pool, 0);
  void* m = nullptr;
  us("cudaMallocFromPoolAsync + cudaFreeAsync (1 MB)", 1000, [&] { cudaMallocFromPoolAsync(&m, 1 << 20, pool, s); cudaFreeAsync(m, s); });
  cudaStreamSynchronize(s);
  std::printf("done\n");
  return 0;
}
