// The one set of thin inline-PTX wrappers for the sm_90a pieces of every Hopper kernel (the wgmma
// GEMM of src/gemm/hopper, the tensor-core GEMM of src/gemm/tensorcore, the wgmma convolution of
// src/conv/tensorcore): mbarriers (init, arrive, arrive.expect_tx, try_wait.parity and two waits),
// TMA tile loads (2-D, 3-D, 4-D), the wgmma fence / commit / wait, the shared-memory matrix
// descriptors, setmaxnreg, and the cluster helpers. Each wrapper is one PTX instruction with the
// operands spelled out, so the kernel reads like the PTX ISA's own pseudocode. The wgmma.mma_async
// wrappers themselves are generated (wgmma.cuh, gen_wgmma.py); the tensor-map encoder is in
// tensor_map.{h,cpp}.
//
// Where the kernels were verified with two different forms of one primitive (a "memory" clobber or
// not, a different watchdog), both forms are kept under two names, so every call site compiles to
// exactly what it did before; the comments say which kernel uses which and why. The wrappers both
// kinds of kernel share (arrive, arrive.expect_tx, try_wait, fence.mbarrier_init, the 2-D TMA load,
// the wgmma fence / commit / wait, the K-major descriptor) had the same instruction, operands and clobbers in both
// copies; the copies differed only in a trailing "\n" in the asm string, which changes nothing in
// the PTX but a line break.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a 128-byte opaque struct; no driver library is linked)

// 1 in the device pass of an sm_90a build (wgmma, setmaxnreg and TMA exist), else 0; the kernels
// compile an empty body otherwise.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define JHDNN_WGMMA_OK 1
#else
#define JHDNN_WGMMA_OK 0
#endif

// Watchdog on mbar_wait (the Hopper GEMM's wait; mbar_wait_clock has its own). A wrong transaction
// byte count or a lost arrive makes an mbarrier wait spin forever, which hangs the process (and
// ctest until its timeout). With the watchdog, a wait that has not completed after ~10 s of GPU
// time traps: the launch fails with cudaErrorLaunchFailure ("unspecified launch failure") instead
// of hanging. (No printf: a call in the kernel makes ptxas serialize the wgmma pipeline, C7510.)
// The check only runs on the retry path (every 1024 failed try_waits), so it costs nothing while
// the pipeline flows; it is on by default; build with -DJHDNN_HOPPER_WATCHDOG=0 to remove it.
#ifndef JHDNN_HOPPER_WATCHDOG
#define JHDNN_HOPPER_WATCHDOG 1
#endif

namespace jhdnn::sm90 {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------- mbarrier

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrive_count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrive_count) : "memory");
}
// The same instruction without the "memory" clobber, as the tensor-core GEMM and the wgmma
// convolution were verified with (their init is followed by an explicit fence.mbarrier_init and a
// __syncthreads, which order it). Kept apart so their code stays what it was.
__device__ __forceinline__ void mbar_init_no_clobber(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// Makes the initialized barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// One arrive plus "expect `bytes` more transaction bytes in this phase" (the TMA loads that
// follow complete them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Waits until the phase with the given parity has completed. Parity convention: a fresh barrier
// is in phase 0, so waiting for parity 1 returns at once ("the previous phase completed"); that is
// how the producer's first pass over the empty barriers goes through.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if JHDNN_HOPPER_WATCHDOG
  uint32_t spins = 0;
  uint64_t t0 = 0;
  while (!mbar_try_wait(bar, parity)) {
    if ((++spins & 0x3FFu) == 0) {
      const uint64_t now = global_timer_ns();
      if (t0 == 0) {
        t0 = now;
      } else if (now - t0 > 10000000000ull) {
        __trap();
      }
    }
  }
#else
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}

// The wait of the tensor-core GEMM and the wgmma convolution: the same try_wait, with a different
// watchdog (always on, not switched by JHDNN_HOPPER_WATCHDOG): it reads clock64 on every failed
// try_wait and traps after ~2^34 cycles (about 9 s), so a pipeline bug (a byte count that never
// arrives) fails the launch instead of hanging the GPU. Kept apart from mbar_wait because those
// kernels were verified with this loop.
__device__ __forceinline__ void mbar_wait_clock(uint32_t bar, uint32_t parity) {
  const long long start = clock64();
  for (;;) {
    if (mbar_try_wait(bar, parity)) return;
    if (clock64() - start > (1LL << 34)) __trap();
  }
}

// ---------------------------------------------------------------- TMA

__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Loads the box at (c0 = innermost coordinate, c1) of `map` into shared memory at dst; the bytes
// are counted on barrier bar (complete_tx). Out-of-bounds elements are written as zeros and are
// counted too, so every load completes exactly the box size.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0,
                                            int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The 3-D and 4-D boxes of the convolution (filter KRSC and input NHWC tensor maps), coordinates
// innermost first.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                            int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// ---------------------------------------------------------------- wgmma

// Orders this thread's register / shared-memory accesses before the wgmma.mma_async that follow.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most N committed wgmma groups of this thread are still pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads / writes of an accumulator register across the fences
// above (the registers are written asynchronously by the tensor cores between issue and wait).
__device__ __forceinline__ void reg_fence(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format" of wgmma):
//   bits  0-13  start address >> 4
//   bits 16-29  leading dimension byte offset >> 4 (unused by K-major swizzled layouts; 1)
//   bits 32-45  stride dimension byte offset >> 4 (K-major: bytes from one 8-row group to the next)
//   bits 49-51  base offset (0: the swizzle pattern starts at a 1024-byte aligned address)
//   bits 62-63  layout: 1 = 128-byte swizzle
// For the K-major 128B-swizzled tiles written by TMA (rows of 64 16-bit elements = 128 bytes,
// 8-row / 1024-byte swizzle atoms stacked densely), SBO = 1024.
__device__ __forceinline__ uint64_t make_desc_k_sw128(uint32_t smem_byte_addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((smem_byte_addr & 0x3FFFFu) >> 4);
  d |= static_cast<uint64_t>(1) << 16;
  d |= static_cast<uint64_t>(1024 >> 4) << 32;
  d |= static_cast<uint64_t>(1) << 62;
  return d;
}

// The same descriptor for an MN-major 128B-swizzled tile (B given K x N, N contiguous): TMA writes
// it as chunks of 64 N-elements (128-byte rows), one row per k, 8-row / 1024-byte swizzle atoms.
// The canonical MN-major SW128 layout is ((8 x 16 B, m chunks), (8 rows, k groups)) with strides
// ((16 B, LBO), (128 B, SBO)): LBO = bytes from one 64-element N chunk to the next,
// SBO = bytes from one 8-row k group to the next (1024 when the rows are dense).
__device__ __forceinline__ uint64_t make_desc_mn_sw128(uint32_t smem_byte_addr, uint32_t chunk_bytes) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((smem_byte_addr & 0x3FFFFu) >> 4);
  d |= static_cast<uint64_t>((chunk_bytes >> 4) & 0x3FFFu) << 16;
  d |= static_cast<uint64_t>(1024 >> 4) << 32;
  d |= static_cast<uint64_t>(1) << 62;
  return d;
}

// ---------------------------------------------------------------- clusters

// The split-K convolution kernel: this CTA's rank in its cluster, the cluster's index, distributed
// shared memory, and the cluster-wide barrier.
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_id_x() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
// The address of the same shared-memory location in CTA `rank` of this cluster.
__device__ __forceinline__ uint32_t mapa_shared(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ float2 ld_cluster_f2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}
// Every thread of every CTA of the cluster; release / acquire orders the shared-memory writes before
// it with the (remote) reads after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// ---------------------------------------------------------------- register reallocation

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// ---------------------------------------------------------------- TMA stores (bulk async-groups)

// Stores the box at (c0 = innermost coordinate, c1, c2, c3) of `map` from shared memory at src
// (laid out as a load of the same box would leave it, swizzle included). Elements outside the
// tensor are not written (the hardware clips the box). Completion is tracked per thread in bulk
// async-groups: bulk_commit_group closes one, bulk_wait_group_read<N> waits until at most N of
// this thread's groups still read shared memory, bulk_wait_group<N> until at most N are incomplete.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
// Closes a bulk async-group (an empty one when no bulk copy was issued since the last commit).
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace jhdnn::sm90
