// The sm_80 tensor-core building blocks shared by the generation-1 convolution and GEMM kernels:
// cp.async (global -> shared without registers), ldmatrix (shared -> mma fragments) and mma.sync.
// Thin PTX wrappers; each says which fragment layout it produces (PTX ISA, "Matrix fragments for
// mma.m16n8k16" and "mma.m16n8k8").
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace jhdnn::tc {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1 (.cg). src_bytes 0 writes 16 zero bytes and reads nothing
// (the zero-fill form: padding and tile tails cost no branch around the copy); src must still be a
// valid address, so callers pass the tensor's base pointer then.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most n of this thread's committed groups are still in flight.
template <int n>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
}

// Four 8x8 b16 matrices; lane i supplies the row address of row i%8 of matrix i/8, and receives in
// register j the two b16 elements (row lane/4, columns 2*(lane%4), +1) of matrix j.
__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D = A * B + D on a 16x8 fp32 tile. A: 16 x k row-major fragment, B: k x 8 "col" (n-major)
// fragment. One k-step of the kernels is 32 bytes of k: k16 for 16-bit types, k8 for TF32.
template <class T>
struct Mma;

template <>
struct Mma<__half> {
  __device__ __forceinline__ static void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static uint32_t prep(uint32_t v) { return v; }
};

template <>
struct Mma<__nv_bfloat16> {
  __device__ __forceinline__ static void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static uint32_t prep(uint32_t v) { return v; }
};

// fp32 data on TF32 tensor cores. The hardware would ignore the low 13 mantissa bits (truncation);
// prep() rounds to nearest (ties away) first, as cuBLAS / cuDNN do, halving the product error.
template <>
struct Mma<float> {
  __device__ __forceinline__ static void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __device__ __forceinline__ static uint32_t prep(uint32_t v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(v)));
    return r;
  }
};

// Element <-> fp32.
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Two adjacent elements as one 4- or 8-byte access (the epilogue's paired stores).
template <class T> struct Pair;
template <> struct Pair<__half> {
  using type = __half2;
  __device__ __forceinline__ static float2 to_f32(type v) { return __half22float2(v); }
  __device__ __forceinline__ static type from_f32(float a, float b) { return __floats2half2_rn(a, b); }
};
template <> struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  __device__ __forceinline__ static float2 to_f32(type v) { return __bfloat1622float2(v); }
  __device__ __forceinline__ static type from_f32(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <> struct Pair<float> {
  using type = float2;
  __device__ __forceinline__ static float2 to_f32(type v) { return v; }
  __device__ __forceinline__ static type from_f32(float a, float b) { return make_float2(a, b); }
};

}  // namespace jhdnn::tc
