// The resident path's packed layers (see sparse.h for the layout and dnn_resident.cu).
//
// Why packed: the resident kernel streams every layer's ELL rows into shared memory in the row order.
// Read from the descriptor's arrays, a 16-byte piece of a chunk needs the row's order value (a second
// ring), a 64-bit row * 32 and a select between the index and the weight array: ~200 of the ~390
// instructions per warp and chunk (SASS at bfbe89a). Packed once, rows already in the order, a chunk
// is one contiguous block that one bulk copy (or pieces at constant offsets) moves.
//
// Why the list-pack layout (session 13, issue 6; before it a packed row was 272 bytes: its 32
// indices, 32 weights, output row, flags, 2 spare): the kernel reads a row's indices only when the
// row starts a new list (it gathers the features once per list and holds them), and in the challenge
// layers 16 consecutive rows carry the same 32 indices. Storing each run of equal lists once per
// chunk cuts the bytes every CTA streams per layer (L2 reads and the TMA's shared-memory writes) from
// 34,816 to 19,456 per chunk at N = 1024 (-44%). A matrix with a new list on every row costs 34,816
// bytes per chunk, as before, so one layout serves every matrix (and the ring slots keep their size).
// Slots are per chunk (a list that straddles a chunk boundary is stored in both): the ring holds one
// chunk per slot, and the kernel's held features never cross a chunk.
// Indices stay int32. 16-bit indices (64-byte slots) were built first and measured in the SASS: the
// gather of 32 features grew from 74 to 136 instructions (each index unpacked: mask or shift, then
// the address), +62 per warp-chunk on the official layers, +18% per CTA-layer, to save 512 of
// 19,456 bytes per chunk; the kernel is not so bound by the pipe that that pays (README).
//
// Chunk c = rows c x 128 .. of the order, at byte c x kResidentChunkBytes of the copy:
//   row r (144 bytes): words 0..31 the weights of source row j = order[p] (p = 128 c + r; padding ->
//     0.0f, so every term is fma(w, x, acc) with no mask and a padding term is fma(0, 0, acc): the
//     reference chain's, bitwise), word 32 resident_pos(j, n) (the output's feature row, sparse.h),
//     word 33 flags (kResidentFlagNewList iff r == 0 or the 32 indices of j differ from those of
//     order[p - 1]: the row starts a slot), word 34 the byte offset of its list slot from the chunk's
//     start, word 35 zero;
//   slot m (128 bytes) at rows_c x 144 + 128 m: the m-th run of equal lists of the chunk, 32 int32
//     feature rows resident_pos(index, n) (padding -1 -> n, the kernel's zero feature row).
// Copied per chunk: rows_c x 144 + min(list_bytes, rows_c x 128), list_bytes = 128 x (the most slots of any of the
// layer's chunks): one byte count per layer, kept with the copy, so the kernel's copy path reads no
// table. A chunk with fewer slots copies a few zero bytes past its own (the copy is zeroed first).
// Cost: ceil(n / 128) x 34,816 bytes per descriptor and device (n x 272, as before), one memset, one
// kernel, an 8-byte read back (the slot count; whether an index was >= n, which refuses the layer) and one
// stream synchronize at the first resident call on that device that uses the descriptor; freed by the next Set*
// call on the descriptor or by its Destroy.
// Threads: calls from several host threads may share a descriptor (Set* / Destroy must not overlap
// them). Two first calls at once both build a copy; ResidentPackList::publish (resident_pack_list.h,
// one compare-exchange) keeps the first published and the other thread frees its own, so exactly one
// copy per device stays and nothing leaks. A copy is never replaced while the descriptor is
// unchanged (another thread may be using it); the copy of another device stays next to this one.
//
// The vals-pack layout (session 16, sparse.h: 16-byte row headers, each run of equal lists AND each run
// of equal weight values stored once per chunk) is a second copy per descriptor (resident_vals), built
// the same way by resident_vals_pack_kernel when the vals kernel is tried (n = 4096, or
// JHDNN_RESIDENT_KERNEL=vals): the challenge's chunks shrink to 3,328 bytes, so 4-image slices fit at
// n = 4096. Its chunk stride is kResidentValsChunkBytes (the worst case, 128 x (16 + 144 + 128) = 36,864 bytes:
// list slots are 144 bytes apart since session 20, see sparse.h), same publish.
#include "core/cuda_check.h"
#include "core/device_info.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

static_assert(kResidentRowWords * 4 % 16 == 0 && kResidentListBytes % 16 == 0, "16-byte pieces");
static_assert(kResidentChunkBytes == 34816, "128 x (144 + 128)");
constexpr int kPackThreads = kResidentChunkRows;  // one thread per row of a chunk, one block per chunk

// Index -> the feature buffers' row: padding (-1) -> n (the zero row), else resident_pos (sparse.h).
__device__ __forceinline__ int4 remap_rows(int4 a, int n) {
  a.x = a.x < 0 ? n : resident_pos(a.x, n);
  a.y = a.y < 0 ? n : resident_pos(a.y, n);
  a.z = a.z < 0 ? n : resident_pos(a.z, n);
  a.w = a.w < 0 ? n : resident_pos(a.w, n);
  return a;
}
// The vals-pack's list entries (sparse.h): the same rows as byte offsets in an S = 4 feature buffer.
__device__ __forceinline__ int4 row_offsets(int4 a) {
  return make_int4(a.x * kResidentValsRowBytes, a.y * kResidentValsRowBytes, a.z * kResidentValsRowBytes,
                   a.w * kResidentValsRowBytes);
}
__device__ __forceinline__ bool same4(int4 a, int4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }
// An index the kernels cannot read: >= n (a negative one is padding, as on every path). The pack kernels are the
// only reads of a layer's indices on the resident path, so they flag it (the copy's trailer, word 1) and the host
// refuses the layer; unchecked, resident_pos(index, n) would point past the shared feature buffers.
__device__ __forceinline__ bool beyond4(int4 a, int n) { return a.x >= n || a.y >= n || a.z >= n || a.w >= n; }

// Block c packs chunk c (the layout above). The slot of row r = (rows 0..r of the chunk that start a
// slot) - 1: a block-wide inclusive count from one ballot per warp. The source rows are 16-byte
// aligned (col_ind / values are, and a row is 128 B). out: the zeroed copy; max_slots: zeroed, gets
// the most slots of any chunk.
__global__ void __launch_bounds__(kPackThreads) resident_pack_kernel(const int* __restrict__ wi,
                                                                     const float* __restrict__ wv,
                                                                     const int* __restrict__ order, int n,
                                                                     unsigned char* __restrict__ out,
                                                                     int* __restrict__ max_slots) {
  __shared__ int s_warp[kPackThreads / 32];
  const int r = int(threadIdx.x), lane = r & 31, warp = r >> 5;
  const int p = int(blockIdx.x) * kResidentChunkRows + r;
  const bool valid = p < n;
  int j = 0;
  bool same = false, beyond = false;
  int4 idx[8];
  unsigned char* const chunk = out + int64_t(blockIdx.x) * kResidentChunkBytes;
  if (valid) {
    j = order ? order[p] : p;
    const int jp = p == 0 ? j : (order ? order[p - 1] : p - 1);
    const int4* si = reinterpret_cast<const int4*>(wi + int64_t(j) * 32);
    const int4* sp = reinterpret_cast<const int4*>(wi + int64_t(jp) * 32);
    const float4* sv = reinterpret_cast<const float4*>(wv + int64_t(j) * 32);
    float4* dst = reinterpret_cast<float4*>(chunk + r * (kResidentRowWords * 4));
    same = r > 0;  // a chunk's first row always starts a slot
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int4 a = si[u];
      same = same && same4(a, sp[u]);
      beyond = beyond || beyond4(a, n);
      idx[u] = remap_rows(a, n);
      const float4 v = sv[u];
      dst[u] = make_float4(a.x < 0 ? 0.f : v.x, a.y < 0 ? 0.f : v.y, a.z < 0 ? 0.f : v.z, a.w < 0 ? 0.f : v.w);
    }
  }
  const bool starts = valid && !same;
  const unsigned ballot = __ballot_sync(0xffffffffu, starts);
  if (lane == 0) s_warp[warp] = __popc(ballot);
  __syncthreads();
  int before = 0, total = 0;
#pragma unroll
  for (int w = 0; w < kPackThreads / 32; ++w) {
    before += w < warp ? s_warp[w] : 0;
    total += s_warp[w];
  }
  const int slot = before + __popc(ballot & (0xffffffffu >> (31 - lane))) - 1;  // rows 0..r that start one, - 1
  if (valid) {
    const int rows_c = min(kResidentChunkRows, n - int(blockIdx.x) * kResidentChunkRows);
    const int list_off = rows_c * (kResidentRowWords * 4) + slot * kResidentListBytes;
    float4* dst = reinterpret_cast<float4*>(chunk + r * (kResidentRowWords * 4));
    dst[8] = make_float4(__int_as_float(resident_pos(j, n)), __int_as_float(starts ? kResidentFlagNewList : 0),
                         __int_as_float(list_off), 0.f);
    if (starts) {  // the slot's 32 indices
      int4* ld = reinterpret_cast<int4*>(chunk + list_off);
#pragma unroll
      for (int u = 0; u < 8; ++u) ld[u] = idx[u];
    }
  }
  if (r == 0) atomicMax(max_slots, total);
  if (beyond) atomicOr(max_slots + 1, 1);
}


// The vals-pack layout (sparse.h, kResidentVals*; its list entries are byte offsets of feature rows, 16 x the
// list-pack's): block c packs chunk c, thread = row. A row starts a
// list slot when r == 0 or its 32 indices differ from the previous row's, a value slot when r == 0 or
// its 32 stored weights (padding -> 0.0f) differ from the previous row's bit for bit. List slot of row
// r = (rows 0..r that start one) - 1, at base + 144 x that; value slot = (rows 0..r that start a value slot) - 1,
// at base + 144 x the chunk's list slots + 128 x that: block-wide counts from one ballot per warp each. out: the
// zeroed copy (chunk stride kResidentValsChunkBytes; a list slot's 16 padding bytes stay zero); max_slots: zeroed,
// gets the most slot bytes (144 x lists + 128 x values) of any chunk.
__device__ __forceinline__ float stored_weight(int index, float v) { return index < 0 ? 0.f : v; }
__global__ void __launch_bounds__(kPackThreads) resident_vals_pack_kernel(const int* __restrict__ wi,
                                                                          const float* __restrict__ wv,
                                                                          const int* __restrict__ order, int n,
                                                                          unsigned char* __restrict__ out,
                                                                          int* __restrict__ max_slots) {
  __shared__ int s_lists[kPackThreads / 32], s_vals[kPackThreads / 32];
  const int r = int(threadIdx.x), lane = r & 31, warp = r >> 5;
  const int p = int(blockIdx.x) * kResidentChunkRows + r;
  const bool valid = p < n;
  int j = 0;
  bool same_list = false, same_vals = false, beyond = false;
  int4 idx[8];
  float4 val[8];
  unsigned char* const chunk = out + int64_t(blockIdx.x) * kResidentValsChunkBytes;
  if (valid) {
    j = order ? order[p] : p;
    const int jp = p == 0 ? j : (order ? order[p - 1] : p - 1);
    const int4* si = reinterpret_cast<const int4*>(wi + int64_t(j) * 32);
    const int4* sp = reinterpret_cast<const int4*>(wi + int64_t(jp) * 32);
    const float4* sv = reinterpret_cast<const float4*>(wv + int64_t(j) * 32);
    const float4* spv = reinterpret_cast<const float4*>(wv + int64_t(jp) * 32);
    same_list = same_vals = r > 0;  // a chunk's first row always starts both slots
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int4 a = si[u], ap = sp[u];
      same_list = same_list && same4(a, ap);
      beyond = beyond || beyond4(a, n);
      idx[u] = row_offsets(remap_rows(a, n));
      const float4 v = sv[u], vp = spv[u];
      val[u] = make_float4(stored_weight(a.x, v.x), stored_weight(a.y, v.y), stored_weight(a.z, v.z),
                           stored_weight(a.w, v.w));
      const float4 q = make_float4(stored_weight(ap.x, vp.x), stored_weight(ap.y, vp.y), stored_weight(ap.z, vp.z),
                                   stored_weight(ap.w, vp.w));
      same_vals = same_vals && __float_as_int(val[u].x) == __float_as_int(q.x) &&
                  __float_as_int(val[u].y) == __float_as_int(q.y) && __float_as_int(val[u].z) == __float_as_int(q.z) &&
                  __float_as_int(val[u].w) == __float_as_int(q.w);
    }
  }
  const bool new_list = valid && !same_list, new_vals = valid && !same_vals;
  const unsigned bl = __ballot_sync(0xffffffffu, new_list), bv = __ballot_sync(0xffffffffu, new_vals);
  if (lane == 0) {
    s_lists[warp] = __popc(bl);
    s_vals[warp] = __popc(bv);
  }
  __syncthreads();
  int lists_before = 0, lists = 0, vals_before = 0, vals = 0;
#pragma unroll
  for (int w = 0; w < kPackThreads / 32; ++w) {
    lists_before += w < warp ? s_lists[w] : 0;
    lists += s_lists[w];
    vals_before += w < warp ? s_vals[w] : 0;
    vals += s_vals[w];
  }
  const unsigned upto = 0xffffffffu >> (31 - lane);  // lanes 0..lane
  const int list_slot = lists_before + __popc(bl & upto) - 1;
  const int val_slot = vals_before + __popc(bv & upto) - 1;
  if (valid) {
    const int rows_c = min(kResidentChunkRows, n - int(blockIdx.x) * kResidentChunkRows);
    const int base = rows_c * kResidentValsHeadBytes;
    const int list_off = base + list_slot * kResidentValsListStride;
    const int val_off = base + lists * kResidentValsListStride + val_slot * kResidentListBytes;
    *reinterpret_cast<int4*>(chunk + r * kResidentValsHeadBytes) =
        make_int4(resident_pos(j, n), (new_list ? kResidentFlagNewList : 0) | (new_vals ? kResidentFlagNewVals : 0),
                  list_off, val_off);
    if (new_list) {
      int4* ld = reinterpret_cast<int4*>(chunk + list_off);
#pragma unroll
      for (int u = 0; u < 8; ++u) ld[u] = idx[u];
    }
    if (new_vals) {
      float4* vd = reinterpret_cast<float4*>(chunk + val_off);
#pragma unroll
      for (int u = 0; u < 8; ++u) vd[u] = val[u];
    }
  }
  if (r == 0) atomicMax(max_slots, lists * kResidentValsListStride + vals * kResidentListBytes);
  if (beyond) atomicOr(max_slots + 1, 1);
}

}  // namespace

void release_resident_pack(jhdnnSparseMatrixStruct& d) {
  auto free_on = [](int device, float* p) {
    int cur = -1;
    const bool switch_dev = cudaGetDevice(&cur) == cudaSuccess && cur != device;
    if (switch_dev && cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    if (cudaFree(p) != cudaSuccess) cudaGetLastError();
    if (switch_dev && cudaSetDevice(cur) != cudaSuccess) cudaGetLastError();
  };
  d.resident_pack.release(free_on);
  d.resident_vals.release(free_on);
  d.resident_tc.release(free_on);
}

namespace {
// The two layouts' shared build-and-publish (see the file comment): `vals` picks the layout, its pack
// kernel and its list; *bytes gets the copy's per-chunk slot bytes (list-pack: the list bytes).
Status build_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, bool vals, const float** packed,
                  int* bytes_out, bool pageable_ok) {
  ResidentPackList& list = vals ? d.resident_vals : d.resident_pack;
  int aux = 0;
  if (const float* p = list.find(device, &aux)) {
    *packed = p;
    *bytes_out = aux;
    return Status::success();
  }
  // The arrays this copy is built from, the only reads of them on the resident path (its kernels read the copy).
  core::DeviceInfo dev;
  dev.device = device;
  dev.pageable_memory_access = pageable_ok;
  JHDNN_TRY(core::check_device_pointer(d.col_ind, 16, "a layer's colInd (resident path: 16-byte aligned)", dev));
  JHDNN_TRY(core::check_device_pointer(d.values, 16, "a layer's values (resident path: 16-byte aligned)", dev));
  if (d.row_order)
    JHDNN_TRY(core::check_device_pointer(d.row_order, 16, "a layer's row order (resident path: 16-byte aligned)", dev));
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  JHDNN_CUDA_TRY(cudaStreamIsCapturing(s, &capture));
  const int n = int(d.rows);
  const int chunks = (n + kResidentChunkRows - 1) / kResidentChunkRows;
  const size_t copy_bytes = size_t(chunks) * (vals ? kResidentValsChunkBytes : kResidentChunkBytes);
  if (capture != cudaStreamCaptureStatusNone)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED,
                      "the resident path packs each layer (%zu bytes, the %s layout) at its first call that uses "
                      "it, which cannot run inside a stream capture: make one call with these descriptors outside "
                      "the capture first, with the same kernel and sliceImages (the vals kernel has its own copy)",
                      copy_bytes, vals ? "vals-pack" : "list-pack");
  // One allocation: the copy, then 16 bytes: the slot counter and the bad-index flag.
  const size_t bytes = copy_bytes + 16;
  float* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                      "the resident path's packed copy of a layer (%zu bytes) could not be allocated", bytes);
  }
  unsigned char* const base = reinterpret_cast<unsigned char*>(p);
  int* const max_slots = reinterpret_cast<int*>(base + copy_bytes);  // [0] the slot count, [1] an index >= n
  int back[2] = {0, 0};
  // Synchronized before it is published, so that a call on another stream or thread never reads a
  // copy still being written (and the slot count is read back).
  Status st = JHDNN_CUDA_STATUS(cudaMemsetAsync(p, 0, bytes, s));
  if (st.ok()) {
    if (vals)
      resident_vals_pack_kernel<<<unsigned(chunks), kPackThreads, 0, s>>>(d.col_ind, d.values, d.row_order, n, base,
                                                                          max_slots);
    else
      resident_pack_kernel<<<unsigned(chunks), kPackThreads, 0, s>>>(d.col_ind, d.values, d.row_order, n, base,
                                                                     max_slots);
    st = JHDNN_CUDA_STATUS(cudaGetLastError());
  }
  if (st.ok()) st = JHDNN_CUDA_STATUS(cudaMemcpyAsync(back, max_slots, sizeof back, cudaMemcpyDeviceToHost, s));
  if (st.ok()) st = JHDNN_CUDA_STATUS(cudaStreamSynchronize(s));
  const int slots = back[0];
  if (st.ok() && back[1] != 0)
    st = core::fail(JHDNN_STATUS_BAD_PARAM,
                    "a layer's colInd holds an index >= n = %d (ELL entries are -1 for padding or in [0, n)): "
                    "found while packing it for the resident path",
                    n);
  // list-pack: slots, 1..128; vals-pack: the slot bytes, 144 + 128 .. 128 x (144 + 128)
  const int least = vals ? kResidentValsListStride + kResidentListBytes : 1;
  const int most = vals ? kResidentChunkRows * (kResidentValsListStride + kResidentListBytes) : kResidentChunkRows;
  if (st.ok() && (slots < least || slots > most))
    st = core::fail(JHDNN_STATUS_INTERNAL_ERROR, "the resident pack counted %d slot%s in a chunk", slots,
                    vals ? " bytes" : "s");
  if (!st.ok()) {
    cudaFree(p);
    return st;
  }
  const int lb = vals ? slots : slots * kResidentListBytes;
  // Another thread may have built and published the same copy meanwhile (both found none): the
  // first one published is the one every call uses, and this thread frees its own (same bytes, never
  // seen by any other thread). See resident_pack_list.h.
  int winner_lb = 0;
  float* const winner = list.publish(device, p, lb, &winner_lb);
  if (winner != p && cudaFree(p) != cudaSuccess) cudaGetLastError();
  if (winner == nullptr)
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                      "the resident path's packed copy of a layer could not be recorded (host allocation failed)");
  *packed = winner;
  *bytes_out = winner_lb;
  return Status::success();
}
}  // namespace

Status resident_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, const float** packed, int* list_bytes,
                     bool pageable_ok) {
  return build_pack(s, device, d, false, packed, list_bytes, pageable_ok);
}

Status resident_vals_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, const float** packed,
                          int* slot_bytes, bool pageable_ok) {
  return build_pack(s, device, d, true, packed, slot_bytes, pageable_ok);
}

Status load_dnn_resident_pack_kernel() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, resident_pack_kernel));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, resident_vals_pack_kernel));
  return Status::success();
}

}  // namespace jhdnn::sparse
