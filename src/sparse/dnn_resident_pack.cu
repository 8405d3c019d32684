// The resident path's packed layers (see sparse.h and dnn_resident.cu).
//
// Why: the resident kernel streams every layer's ELL rows into shared memory in the row order. Read
// from the descriptor's arrays, a 16-byte piece of a chunk needs the row's order value (a second
// ring), a 64-bit row * 32 and a select between the index and the weight array: ~200 of the ~390
// instructions per warp and chunk (SASS at bfbe89a). Packed once, rows already in the order and in
// the staged 272-byte layout, a chunk is one contiguous block: piece p of the chunk goes to byte
// 16 p of the stage, and the output row number and the list-boundary flag travel in the row's 4
// spare words.
//
// Packed row p (kResidentRowFloats = 68 floats) = source row j = order[p] (p without an order):
//   words 0..31  indices of j, padding (-1) -> n (the kernel's feature buffers have a zero row n),
//   words 32..63 weights of j, padding -> 0.0f (so every entry is fma(w, x, acc) with no mask, and a
//                padding entry is fma(0, 0, acc): the reference chain's padding term, bitwise),
//   word 64      j (the output row), word 65 flags (kResidentFlagNewList: p == 0 or the 32 indices
//                of j differ from those of order[p - 1]), words 66, 67 zero.
// Cost: rows x 272 bytes per descriptor and device (the weights again, +6%), one kernel and one
// stream synchronize at the first resident call on that device that uses the descriptor; freed by
// the next Set* call on the descriptor or by its Destroy.
// Threads: calls from several host threads may share a descriptor (Set* / Destroy must not overlap
// them). Two first calls at once both build a copy; ResidentPackList::publish (resident_pack_list.h,
// one compare-exchange) keeps the first published and the other thread frees its own, so exactly one
// copy per device stays and nothing leaks. A copy is never replaced while the descriptor is
// unchanged (another thread may be using it); the copy of another device stays next to this one.
#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

static_assert(kResidentRowFloats * 4 == 272 && kResidentRowFloats % 4 == 0, "17 pieces of 16 bytes per row");

// Index -> the feature buffers' row: padding (-1) -> n (the zero row), else resident_pos (sparse.h).
__device__ __forceinline__ int4 remap_rows(int4 a, int n) {
  a.x = a.x < 0 ? n : resident_pos(a.x, n);
  a.y = a.y < 0 ? n : resident_pos(a.y, n);
  a.z = a.z < 0 ? n : resident_pos(a.z, n);
  a.w = a.w < 0 ? n : resident_pos(a.w, n);
  return a;
}
__device__ __forceinline__ bool same4(int4 a, int4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }

// One thread per packed row (the rows are 16-byte aligned: col_ind / values are, and a row is 128 B).
__global__ void resident_pack_kernel(const int* __restrict__ wi, const float* __restrict__ wv,
                                     const int* __restrict__ order, int n, float4* __restrict__ out) {
  const int p = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (p >= n) return;
  const int j = order ? order[p] : p;
  const int jp = p == 0 ? j : (order ? order[p - 1] : p - 1);
  const int4* si = reinterpret_cast<const int4*>(wi + int64_t(j) * 32);
  const int4* sp = reinterpret_cast<const int4*>(wi + int64_t(jp) * 32);
  const float4* sv = reinterpret_cast<const float4*>(wv + int64_t(j) * 32);
  float4* dst = out + int64_t(p) * (kResidentRowFloats / 4);
  bool same = p > 0;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int4 a = si[u];
    same = same && same4(a, sp[u]);
    const int4 m = remap_rows(a, n);
    dst[u] = make_float4(__int_as_float(m.x), __int_as_float(m.y), __int_as_float(m.z), __int_as_float(m.w));
    const float4 v = sv[u];
    dst[8 + u] = make_float4(a.x < 0 ? 0.f : v.x, a.y < 0 ? 0.f : v.y, a.z < 0 ? 0.f : v.z, a.w < 0 ? 0.f : v.w);
  }
  dst[16] = make_float4(__int_as_float(resident_pos(j, n)), __int_as_float(same ? 0 : kResidentFlagNewList), 0.f,
                        0.f);
}

}  // namespace

void release_resident_pack(jhdnnSparseMatrixStruct& d) {
  d.resident_pack.release([](int device, float* p) {
    int cur = -1;
    const bool switch_dev = cudaGetDevice(&cur) == cudaSuccess && cur != device;
    if (switch_dev && cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    if (cudaFree(p) != cudaSuccess) cudaGetLastError();
    if (switch_dev && cudaSetDevice(cur) != cudaSuccess) cudaGetLastError();
  });
}

Status resident_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, const float** packed) {
  if (const float* p = d.resident_pack.find(device)) {
    *packed = p;
    return Status::success();
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  JHDNN_CUDA_TRY(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED,
                      "the resident path packs each layer (rows x 272 bytes) at its first call, which cannot run "
                      "inside a stream capture: make one call with these descriptors outside the capture first");
  const int n = int(d.rows);
  float* p = nullptr;
  const size_t bytes = size_t(n) * kResidentRowFloats * sizeof(float);
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                      "the resident path's packed copy of a layer (%zu bytes) could not be allocated", bytes);
  }
  resident_pack_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(d.col_ind, d.values, d.row_order, n,
                                                                 reinterpret_cast<float4*>(p));
  // Synchronized before it is published, so that a call on another stream or thread never reads a
  // copy still being written.
  Status st = JHDNN_CUDA_STATUS(cudaGetLastError());
  if (st.ok()) st = JHDNN_CUDA_STATUS(cudaStreamSynchronize(s));
  if (!st.ok()) {
    cudaFree(p);
    return st;
  }
  // Another thread may have built and published the same copy meanwhile (both found none): the
  // first one published is the one every call uses, and this thread frees its own (same bytes, never
  // seen by any other thread). See resident_pack_list.h.
  float* const winner = d.resident_pack.publish(device, p);
  if (winner != p && cudaFree(p) != cudaSuccess) cudaGetLastError();
  if (winner == nullptr)
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                      "the resident path's packed copy of a layer could not be recorded (host allocation failed)");
  *packed = winner;
  return Status::success();
}

Status load_dnn_resident_pack_kernel() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, resident_pack_kernel));
  return Status::success();
}

}  // namespace jhdnn::sparse
