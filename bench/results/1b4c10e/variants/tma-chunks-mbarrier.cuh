// mbarrier and 1-D bulk-copy (TMA) helpers for the sparse kernels (sm_90). Included inside an anonymous
// namespace of jhdnn::sparse by the translation units that use them.
//
// A phase of an mbarrier initialised with count 1 completes when its one arrival (mbar_arrive_expect_tx, which
// also adds the bytes to expect) has happened and every byte of the bulk copies that complete on it has landed;
// waiting threads poll mbar_try_wait with the phase's parity (0, 1, 0, ... for its successive phases).
#pragma once

namespace jhdnn::sparse {
namespace {

__device__ __forceinline__ void mbar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
// After mbar_init and before any bulk copy completes on the barrier: the init is visible to the async proxy.
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// Before reusing the barrier's 8 bytes for anything else (every phase waited for).
__device__ __forceinline__ void mbar_inval(unsigned bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Orders this thread's earlier generic-proxy accesses of shared memory before its later async-proxy ones (a bulk
// copy into memory that was read or written by ordinary loads and stores).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// bytes (a multiple of 16; both addresses 16-byte aligned) global -> shared by the TMA, completing on bar.
__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

}  // namespace
}  // namespace jhdnn::sparse
