// Why the resident path's first handed call could take ~6-9 ms of host time (session 44: spdnn's head graph, then the
// first cudaMallocFromPoolAsync from the handed schedule's pool, dnn_resident.cu handed_pool), and whether priming
// the pool removes it. One process is one measurement (a pool's first allocation happens once), so a GPU script runs
// this several times per setting:
//   1. creates a stream and a pool with the handed pool's properties (device memory, release threshold 64 MiB);
//   2. --prime BYTES: one allocation of BYTES and its free on a private stream, synchronized (0: none);
//   3. --before none | kernels | graph: what the stream is given right before each allocation: nothing, K spinning
//      kernels launched one by one, or the same K kernels as one CUDA graph (built, uploaded and run once first);
//   4. allocates --first BYTES, frees it in stream order, synchronizes; then --second BYTES (more than the pool holds:
//      it grows), then --first again; each after its own --before.
// Prints one line: the settings and the host microseconds of the three cudaMallocFromPoolAsync calls.
//
//   spdnn_pool_probe [--before graph] [--kernels 5] [--spin-us 40] [--prime 0] [--first 17825792]
//                    [--second 50331648]
//
// GPU only; exits 1 with the reason without one (a failed CUDA call: its message). Not a test: a measurement, whose
// output a GPU script keeps.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "common/gpu_util.h"  // CUDA_CHECK
#include "spdnn/cli_args.h"

namespace {

// Spins for about `ns` nanoseconds of %globaltimer, so that the stream is busy while the host allocates.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

double elapsed_us(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  const std::string before = spdnn::cli::arg_str(argc, argv, "--before", "graph");
  const int kernels = arg_int(argc, argv, "--kernels", 5);
  const int spin_us = arg_int(argc, argv, "--spin-us", 40);
  const int prime = arg_int(argc, argv, "--prime", 0);
  const int first = arg_int(argc, argv, "--first", 17 << 20);
  const int second = arg_int(argc, argv, "--second", 48 << 20);
  if ((before != "none" && before != "kernels" && before != "graph") || kernels < 1 || spin_us < 0 || prime < 0 ||
      first < 1 || second < 1) {
    std::fprintf(stderr, "spdnn_pool_probe: bad option (--before none|kernels|graph, --kernels >= 1, sizes >= 1)\n");
    return 2;
  }
  try {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaFree(nullptr));  // the context
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaMemPool_t pool = jhdnn::test::new_device_pool(device, uint64_t(64) << 20);
    if (prime > 0) {
      cudaStream_t p = nullptr;
      CUDA_CHECK(cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking));
      void* m = nullptr;
      CUDA_CHECK(cudaMallocFromPoolAsync(&m, size_t(prime), pool, p));
      CUDA_CHECK(cudaFreeAsync(m, p));
      CUDA_CHECK(cudaStreamSynchronize(p));
      CUDA_CHECK(cudaStreamDestroy(p));
    }
    const unsigned long long ns = static_cast<unsigned long long>(spin_us) * 1000ull;
    spin_kernel<<<1, 32, 0, s>>>(ns);  // loads the module
    CUDA_CHECK(cudaGetLastError());
    cudaGraphExec_t exec = nullptr;
    if (before == "graph") {
      cudaGraph_t graph = nullptr;
      CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int k = 0; k < kernels; ++k) spin_kernel<<<132, 128, 0, s>>>(ns);
      CUDA_CHECK(cudaStreamEndCapture(s, &graph));
      CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_CHECK(cudaGraphDestroy(graph));
      CUDA_CHECK(cudaGraphUpload(exec, s));
      CUDA_CHECK(cudaGraphLaunch(exec, s));  // as spdnn's warm-up runs its head graph
    }
    CUDA_CHECK(cudaStreamSynchronize(s));
    double us[3] = {0, 0, 0};
    const int sizes[3] = {first, second, first};
    for (int i = 0; i < 3; ++i) {
      if (before == "graph") {
        CUDA_CHECK(cudaGraphLaunch(exec, s));
      } else if (before == "kernels") {
        for (int k = 0; k < kernels; ++k) spin_kernel<<<132, 128, 0, s>>>(ns);
        CUDA_CHECK(cudaGetLastError());
      }
      void* m = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      CUDA_CHECK(cudaMallocFromPoolAsync(&m, size_t(sizes[i]), pool, s));
      us[i] = elapsed_us(t0);
      CUDA_CHECK(cudaMemsetAsync(m, 0, 256, s));
      CUDA_CHECK(cudaFreeAsync(m, s));
      CUDA_CHECK(cudaStreamSynchronize(s));
    }
    std::printf("before %s kernels %d spin_us %d prime %d first %d second %d: alloc_us %.1f %.1f %.1f\n",
                before.c_str(), kernels, spin_us, prime, first, second, us[0], us[1], us[2]);
    if (exec) CUDA_CHECK(cudaGraphExecDestroy(exec));
    CUDA_CHECK(cudaMemPoolDestroy(pool));
    CUDA_CHECK(cudaStreamDestroy(s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spdnn_pool_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
