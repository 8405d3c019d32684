// racecheck probe (session 41): one thread copies global -> shared with cp.async.bulk twice into the same bytes,
// waiting on the mbarrier after each copy; mode 1 invalidates and re-initializes the mbarrier between the copies
// (as vals4w's handed schedule does between items), mode 0 keeps it and waits for the next phase. Race-free by
// construction (one thread, each copy waited before the next is issued).
#include <cstdio>
#include <cuda_runtime.h>
__device__ __forceinline__ void wait_phase(unsigned bar, unsigned parity) {
  unsigned ok = 0;
  while (!ok)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void copy(unsigned dst, const float* src, unsigned bytes, unsigned bar) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__global__ void probe(const float* src, float* out, int mode) {
  __shared__ __align__(128) float buf[256];
  __shared__ __align__(8) unsigned long long mbar;
  const unsigned b = unsigned(__cvta_generic_to_shared(&mbar)), d = unsigned(__cvta_generic_to_shared(buf));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    copy(d, src, 1024, b);
    wait_phase(b, 0);
    out[0] = buf[1];
    unsigned parity = 1;
    if (mode == 1) {
      asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(b) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      parity = 0;
    }
    copy(d, src + 256, 1024, b);
    wait_phase(b, parity);
    out[1] = buf[1];
  }
}
int main(int argc, char** argv) {
  const int mode = argc > 1 ? atoi(argv[1]) : 0;
  float *src, *out;
  cudaMalloc(&src, 2048);
  cudaMalloc(&out, 8);
  float h[512];
  for (int i = 0; i < 512; ++i) h[i] = float(i);
  cudaMemcpy(src, h, 2048, cudaMemcpyHostToDevice);
  probe<<<1, 32>>>(src, out, mode);
  float r[2];
  cudaError_t e = cudaMemcpy(r, out, 8, cudaMemcpyDeviceToHost);
  std::printf("mode %d (%s): %s, read %g then %g (want 1 then 257)\n", mode,
              mode ? "inval + init between the copies" : "the next phase", cudaGetErrorString(e), r[0], r[1]);
  return e != cudaSuccess;
}
