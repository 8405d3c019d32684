// The FIRST resident kernel (bfbe89a), kept only for A/B measurement of dnn_resident.cu's cuts: it runs
// instead of the packed kernel when JHDNN_RESIDENT_KERNEL=v1 (core/config.h; read once per process,
// or set_resident_kernel). Same results bit for bit; it reads the descriptors' arrays directly (no packed copy).
// Delete it once the packed kernel is measured faster on the GPU.
//
// The shared-memory-resident late layers of a Sparse DNN (jhdnnSparseDnnLayersForwardResident).
//
// When few images are alive (the challenge: ~950 of 60000 from layer ~14 on), ONE launch runs many
// layers and each CTA owns a small fixed slice of at most S images (S = 8 at n = 1024): the slice's
// features live in SHARED memory for the whole launch, double buffered (2 x n x S floats: 64 KB at
// n = 1024, S = 8). Between layers there is only a __syncthreads: no grid barrier, no cluster, no
// global feature traffic except the first read and the final write of the survivors. An image whose
// output row is all zero leaves the slice's live list (CTA-local); a slice with none left stops.
//
// Weights. Every CTA streams each layer's ELL rows (n rows x 32 (index, weight) pairs = 256 KB at
// n = 1024) from L2 in the row order (the descriptor's hint), in chunks of 128 rows (32 KB) with
// cp.async into a ring of kStages + 1 shared-memory stages, kStages chunks in flight. The weights and
// the order do not depend on the data, so the ring runs straight across layer boundaries: the next
// layer's first chunks arrive while this layer finishes. The order values of a chunk (the rows to
// gather) come into their own ring kStages chunks before the chunk itself, so no thread waits on a
// global load to form a copy address. Chunk g: order copied in iteration g - 2P (ring of 2P + 1),
// weights in iteration g - P (ring of P + 1), consumed in iteration g; iteration i waits for the
// group of iteration i - P (cp.async.wait_group P - 1) and then __syncthreads, which also retires
// every read of the stages the new copies overwrite (see the ring sizes).
//
// Compute. A warp takes 16 consecutive rows of a chunk (in the row order); a step covers 32 / S of
// them x S images, lane = (output o = lane / S, image q = lane % S), one (output, image) dot product
// per lane. Each lane holds the 32 features of its output's input list for its image in registers;
// when the next step's rows all have the list that is held (the challenge's 16 outputs per list are
// adjacent in the row order), nothing is reloaded: per list one 32-value gather from shared memory
// per image, then only the 8 16-byte weight broadcasts (ld.shared.v4) and 32 FMAs per output.
//
// Exactness: per output, acc = fma(w_t, x_t, acc) for t = 0..31 from acc = 0 (padding: fma(0, 0, acc),
// its stored weight is never used and may be NaN), then min(max(acc + bias, 0), clampMax): the chain
// of layer_tile_reuse / dot32 and of the CPU reference, so survivors and features are bitwise those
// of the per-layer paths.
#include <algorithm>
#include <atomic>

#include "core/cuda_check.h"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 16;                        // consecutive rows of a chunk per warp
constexpr int kChunkRows = kWarps * kRowsPerWarp;       // 128 rows = 32 KB of (index, weight) pairs
constexpr int kRowStride = 68;                          // floats per staged row: 32 indices, 32 weights, 4 pad
constexpr int kStages = 3;                              // chunks in flight (P)
constexpr int kWSlots = kStages + 1;                    // weight ring
constexpr int kOSlots = 2 * kStages + 1;                // order ring
constexpr int kMisc = 32;                               // ints: live list (8), flags (8), count, base

// The layer table travels as a kernel parameter (96 x 24 B, inside the classic 4 KB limit).
struct ResidentLayer {
  const int* wi;
  const float* wv;
  const int* order;  // null: natural order
};
struct ResidentTable {
  ResidentLayer layer[kResidentMaxLayers];
};
static_assert(sizeof(ResidentTable) + 128 <= 4096, "the table and the other parameters must fit 4 KB");

// Shared-memory layout (bytes; every part a multiple of 16): weight ring, order ring, the warps'
// held lists, the small CTA state, then the two feature buffers (n x S floats each, x(i, slot) at
// i * S + slot).
constexpr size_t kWBytes = size_t(kWSlots) * kChunkRows * kRowStride * 4;
constexpr size_t kOBytes = size_t(kOSlots) * kChunkRows * 4;
constexpr size_t kHBytes = size_t(kWarps) * 32 * 4;
constexpr size_t kFixedBytes = kWBytes + kOBytes + kHBytes + kMisc * 4;

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned s = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
// Copies `bytes` (< 16 allowed) and zero-fills the rest of the 16: never reads past the array.
__device__ __forceinline__ void cp_async16_n(void* dst, const void* src, int bytes) {
  const unsigned s = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// The optional trace (jhdnnSparseDnnLayersForwardResidentTraced; kTrace = a buffer was given: its own
// instantiation, so the plain kernel carries no trace code). Thread 0 of CTA b writes records
// [b * kTraceRecords, (b + 1) * kTraceRecords); each event has its own fixed record (entry 0, loaded 1,
// first chunk 2, end of layer k 3 + k, exit 3 + 96), so the buffer never overflows and an unwritten
// record stays zero (event 0; the launch zeroes the CTAs' records first). Times: %globaltimer (ns,
// comparable across SMs) and clock64 (the SM's cycles); a layer record also carries the cycles thread
// 0 spent in that layer's cp.async waits + barriers (weights late, or the other warps still busy).
constexpr int kTraceRecords = JHDNN_SPARSE_DNN_RESIDENT_TRACE_RECORDS;
static_assert(kTraceRecords == kResidentMaxLayers + 4, "entry, loaded, first chunk, the layers, exit");
static_assert(sizeof(jhdnnSparseDnnResidentTraceRecord_t) == 32, "the record layout of jhdnn.h");

__device__ __forceinline__ void trace_record(jhdnnSparseDnnResidentTraceRecord_t* trace, int index, int event,
                                             int layer, int live, unsigned wait_clk = 0) {
  unsigned long long ns;
  unsigned sm;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  jhdnnSparseDnnResidentTraceRecord_t r;
  r.ns = ns;
  r.clk = (unsigned long long)clock64();
  r.sm = (unsigned short)sm;
  r.event = (unsigned short)event;
  r.layer = short(layer);
  r.live = short(live);
  r.waitClk = wait_clk;
  r.reserved = 0;
  trace[int64_t(blockIdx.x) * kTraceRecords + index] = r;
}

__device__ __forceinline__ bool eq4(int4 a, int4 b) { return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w; }

// The order values of chunk g (rows c * 128 .. of layer g / chunks) into order slot g % kOSlots:
// threads 0..31 copy 4 each (the descriptor's order), or store the identity (no order).
__device__ __forceinline__ void issue_order(const ResidentTable& table, int g, int total, int chunks, int n,
                                            int* ostage) {
  if (g >= total || threadIdx.x >= kChunkRows / 4) return;
  const int k = g / chunks, first = (g % chunks) * kChunkRows + int(threadIdx.x) * 4;
  if (first >= n) return;
  int* dst = ostage + (g % kOSlots) * kChunkRows + threadIdx.x * 4;
  const int* order = table.layer[k].order;
  if (order) {
    cp_async16_n(dst, order + first, min(4, n - first) * 4);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) dst[e] = first + e;
  }
}

// The (index, weight) rows of chunk g into weight slot g % kWSlots: 128 rows x 16 pieces of 16 B,
// 8 per thread; staged row r = 32 indices, 32 weights (as stored: padding values may be NaN), pad.
__device__ __forceinline__ void issue_weights(const ResidentTable& table, int g, int total, int chunks, int n,
                                              const int* ostage, float* wstage) {
  if (g >= total) return;
  const int k = g / chunks, c = g % chunks;
  const int rows_here = min(kChunkRows, n - c * kChunkRows);
  const int* os = ostage + (g % kOSlots) * kChunkRows;
  float* ws = wstage + (g % kWSlots) * (kChunkRows * kRowStride);
  const int* wi = table.layer[k].wi;
  const float* wv = table.layer[k].wv;
#pragma unroll
  for (int m = 0; m < kChunkRows * 16 / kThreads; ++m) {
    const int p = int(threadIdx.x) + m * kThreads;
    const int row = p >> 4, part = p & 15;
    if (row < rows_here) {
      const int64_t j = os[row];
      const void* src = part < 8 ? static_cast<const void*>(wi + j * 32 + part * 4)
                                 : static_cast<const void*>(wv + j * 32 + (part - 8) * 4);
      cp_async16(ws + row * kRowStride + part * 4, src);
    }
  }
}

// One CTA = one slice of at most `slice` (<= S) images of the input list: positions r0 .. r0 + mine - 1.
// Layer k of the table reads feature buffer k & 1 and writes the other; counts[k + 1] += the slice's
// survivors of layer k. After the last layer the survivors' features go to y at column r (their
// position in the input list), and (rows_out, ids_out) get (r, ids_in[r]) at slots from the atomic
// on counts[layer_count] (the fused path's convention; slots at or past max_active are dropped).
template <int S, bool kTrace>
__global__ void __launch_bounds__(kThreads, 1)
dnn_resident_kernel(const __grid_constant__ ResidentTable table, int layer_count, int n, float bias, float clamp_max,
                    int* __restrict__ counts, const int* __restrict__ rows_in, const int* __restrict__ ids_in,
                    const float* __restrict__ x, int64_t ldx, float* __restrict__ y, int64_t ldy,
                    int* __restrict__ rows_out, int* __restrict__ ids_out, int slice, int max_active,
                    jhdnnSparseDnnResidentTraceRecord_t* __restrict__ trace) {
  if (kTrace && threadIdx.x == 0) trace_record(trace, 0, JHDNN_RESIDENT_TRACE_ENTRY, -1, 0);
  extern __shared__ __align__(16) unsigned char smem[];
  float* wstage = reinterpret_cast<float*>(smem);
  int* ostage = reinterpret_cast<int*>(smem + kWBytes);
  int* held_all = reinterpret_cast<int*>(smem + kWBytes + kOBytes);
  int* misc = reinterpret_cast<int*>(smem + kWBytes + kOBytes + kHBytes);
  int* s_live = misc;       // [8]: the live images' slots, in slot order
  int* s_flag = misc + 8;   // [8]: slot has a nonzero output in the current layer
  int* s_cnt = misc + 16;   // live images after the last compaction
  int* s_base = misc + 17;  // the first output slot of this CTA's survivors
  float* xbuf = reinterpret_cast<float*>(smem + kFixedBytes);

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int count = min(counts[0], max_active);  // written before this launch (kernel boundary)
  const int r0 = int(blockIdx.x) * slice;
  if (r0 >= count) {  // no image for this CTA (max_active bounds the count; the count may be smaller)
    if (kTrace && threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, -1, 0);
    return;
  }
  const int mine = min(slice, count - r0);

  // The slice's features: x(i, rows_in[r0 + q]) -> buffer 0 at i * S + q (slots >= mine: 0).
  if (threadIdx.x < S) {
    const int q = threadIdx.x;
    s_live[q] = q;
    s_flag[q] = 0;
    misc[24 + q] = q < mine ? rows_in[r0 + q] : -1;  // the column of slot q in x
  }
  if (threadIdx.x == 0) *s_cnt = mine;
  for (int e = threadIdx.x; e < kWarps * 32; e += kThreads) held_all[e] = -2;  // no list held (never read
                                                                                // before held_ok, but defined)
  __syncthreads();
  // 32 scattered reads per thread at n = 1024: unrolled so that 8 are in flight at once.
#pragma unroll 8
  for (int e = threadIdx.x; e < n * S; e += kThreads) {
    const int i = e / S, q = e % S;
    const int col = misc[24 + q];
    xbuf[e] = col >= 0 ? x[int64_t(i) * ldx + col] : 0.f;
  }

  const int chunks = (n + kChunkRows - 1) / kChunkRows;
  const int total = layer_count * chunks;
  // Prologue: the order of chunks 0 .. P-1 (waited for at once), then the groups of "iterations"
  // -P .. -1: weights of chunk m and order of chunk P + m.
  for (int m = 0; m < kStages; ++m) issue_order(table, m, total, chunks, n, ostage);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();  // also: the features and the small state are in place
  if (kTrace && threadIdx.x == 0) trace_record(trace, 1, JHDNN_RESIDENT_TRACE_LOADED, -1, mine);
  for (int m = 0; m < kStages; ++m) {
    issue_weights(table, m, total, chunks, n, ostage, wstage);
    issue_order(table, kStages + m, total, chunks, n, ostage);
    cp_async_commit();
  }

  constexpr int kOuts = 32 / S;  // outputs per warp step
  const int o = lane / S, q = lane % S;
  int* held = held_all + warp * 32;  // the input list whose features this warp's lanes hold
  bool held_ok = false;              // warp-uniform
  uint32_t pad = 0;                  // bit t: entry t of the held list is padding
  float xv[32];
#pragma unroll
  for (int t = 0; t < 32; ++t) xv[t] = 0.f;
  int cnt = mine, cur = 0;
  bool alive = false;  // this lane's image had a nonzero output in the current layer
  long long wait_t0 = 0;     // trace only (thread 0): the clock before this chunk's wait
  unsigned wait_clk = 0;     // trace only (thread 0): wait + barrier cycles in the current layer

  for (int g = 0; g < total; ++g) {
    if (kTrace && threadIdx.x == 0) wait_t0 = clock64();
    cp_async_wait<kStages - 1>();  // the group of iteration g - P: weights of chunk g, order of g + P
    __syncthreads();               // ... for every thread's copies; and chunk g - 1 is consumed
    if (kTrace && threadIdx.x == 0) {
      wait_clk += unsigned(clock64() - wait_t0);
      if (g == 0) trace_record(trace, 2, JHDNN_RESIDENT_TRACE_FIRST_CHUNK, 0, mine);
    }
    issue_weights(table, g + kStages, total, chunks, n, ostage, wstage);
    issue_order(table, g + 2 * kStages, total, chunks, n, ostage);
    cp_async_commit();

    const int k = g / chunks, c = g % chunks;
    if (c == 0) held_ok = false;  // a new layer: the held features are stale
    const int rows_here = min(kChunkRows, n - c * kChunkRows);
    const float* st = wstage + (g % kWSlots) * (kChunkRows * kRowStride);
    const int* os = ostage + (g % kOSlots) * kChunkRows;
    const float* xin = xbuf + cur * (n * S);
    float* xout = xbuf + (cur ^ 1) * (n * S);
    const bool img_ok = q < cnt;
    const int slot = img_ok ? s_live[q] : 0;

#pragma unroll 1
    for (int step = 0; step < kRowsPerWarp / kOuts; ++step) {
      const int row0 = warp * kRowsPerWarp + step * kOuts;
      if (row0 >= rows_here) break;  // warp-uniform
      const int row = row0 + o;
      const bool row_ok = row < rows_here;
      // A row past the chunk's end reads row0 (staged, valid indices); its result is not stored.
      const float* srow = st + (row_ok ? row : row0) * kRowStride;
      const int4* sidx = reinterpret_cast<const int4*>(srow);
      const int4* sidx0 = reinterpret_cast<const int4*>(st + row0 * kRowStride);
      const int4* hidx = reinterpret_cast<const int4*>(held);
      bool eq_held = true, eq_row0 = true;
#pragma unroll
      for (int h = 0; h < 8 / S; ++h) {
        const int ch = q + h * S;  // this lane checks index chunks q, q + S, ... of its row
        const int4 a = sidx[ch];
        eq_held = eq_held && eq4(a, hidx[ch]);
        eq_row0 = eq_row0 && eq4(a, sidx0[ch]);
      }
      const bool reuse = __all_sync(0xffffffffu, eq_held) && held_ok;
      if (!reuse) {  // gather this row's list for this lane's image from shared memory
        pad = 0;
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const int4 id = sidx[u];
          const int ii[4] = {id.x, id.y, id.z, id.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int i = ii[e];
            xv[4 * u + e] = (img_ok && i >= 0) ? xin[i * S + slot] : 0.f;
            pad |= uint32_t(i < 0) << (4 * u + e);
          }
        }
        // Keep the list for the next steps only if every row of this step has it (then every lane
        // holds that list's features for its image); lanes of output 0 write it.
        held_ok = __all_sync(0xffffffffu, eq_row0);  // also orders the reads of `held` above
        if (held_ok && o == 0) {
#pragma unroll
          for (int h = 0; h < 8 / S; ++h) reinterpret_cast<int4*>(held)[q + h * S] = sidx0[q + h * S];
        }
        __syncwarp();
      }
      const float4* sw = reinterpret_cast<const float4*>(srow + 32);
      float acc = 0.f;
      if (pad == 0u) {
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const float4 w = sw[u];  // lanes of one output read one address: a broadcast
          acc = __fmaf_rn(w.x, xv[4 * u + 0], acc);
          acc = __fmaf_rn(w.y, xv[4 * u + 1], acc);
          acc = __fmaf_rn(w.z, xv[4 * u + 2], acc);
          acc = __fmaf_rn(w.w, xv[4 * u + 3], acc);
        }
      } else {  // padding entries: weight 0 (the stored value is never used), feature 0
#pragma unroll
        for (int u = 0; u < 8; ++u) {
          const float4 w = sw[u];
          acc = __fmaf_rn((pad >> (4 * u + 0)) & 1u ? 0.f : w.x, xv[4 * u + 0], acc);
          acc = __fmaf_rn((pad >> (4 * u + 1)) & 1u ? 0.f : w.y, xv[4 * u + 1], acc);
          acc = __fmaf_rn((pad >> (4 * u + 2)) & 1u ? 0.f : w.z, xv[4 * u + 2], acc);
          acc = __fmaf_rn((pad >> (4 * u + 3)) & 1u ? 0.f : w.w, xv[4 * u + 3], acc);
        }
      }
      const float v = fminf(fmaxf(acc + bias, 0.f), clamp_max);
      if (row_ok && img_ok) {
        xout[os[row] * S + slot] = v;
        alive |= v != 0.f;
      }
    }

    if (c == chunks - 1) {  // the layer is done in this CTA once every warp is here
      if (alive) s_flag[slot] = 1;  // benign race: every writer writes 1
      alive = false;
      __syncthreads();
      if (threadIdx.x == 0) {
        int m = 0;
        for (int t = 0; t < cnt; ++t) {
          const int sl = s_live[t];
          if (s_flag[sl]) s_live[m++] = sl;  // in place: m <= t
          s_flag[sl] = 0;
        }
        *s_cnt = m;
        const int old = m > 0 ? atomicAdd(counts + k + 1, m) : 0;
        if (k == layer_count - 1) *s_base = old;
      }
      __syncthreads();
      cnt = *s_cnt;
      cur ^= 1;
      if (kTrace && threadIdx.x == 0) {
        trace_record(trace, 3 + k, JHDNN_RESIDENT_TRACE_LAYER, k, cnt, wait_clk);
        wait_clk = 0;
      }
      if (cnt == 0) {  // block-uniform: the slice is empty, nothing more to compute or write
        cp_async_wait<0>();
        if (kTrace && threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, k, 0);
        return;
      }
    }
  }
  cp_async_wait<0>();

  // Write-out: the survivors' features (buffer cur) to y at column r0 + slot, and the next list.
  const float* xfin = xbuf + cur * (n * S);
  for (int e = threadIdx.x; e < n * cnt; e += kThreads) {
    const int i = e / cnt, t = e % cnt;
    const int sl = s_live[t];
    y[int64_t(i) * ldy + r0 + sl] = xfin[i * S + sl];
  }
  if (threadIdx.x < cnt) {
    const int sl = s_live[threadIdx.x];
    const int pos = *s_base + int(threadIdx.x);
    if (pos < max_active) {
      rows_out[pos] = r0 + sl;
      ids_out[pos] = ids_in[r0 + sl];
    }
  }
  if constexpr (kTrace) {  // the exit once every thread's share of the write-out is issued
    __syncthreads();
    if (threadIdx.x == 0)
      trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, layer_count - 1, cnt);
  }
}

// Per device and instantiation: the dynamic shared-memory limit has been raised (0 = not yet).
constexpr int kMaxDevices = 64;
std::atomic<size_t> g_smem_set_v1[kMaxDevices][6];  // [S 2 / 4 / 8] + 3 x traced

template <int S>
Status launch(cudaStream_t s, int device, const ResidentTable& table, int layer_count, int n, float bias,
              float clamp_max, int* counts, const int* rows_in, const int* ids_in, const float* x, int64_t ldx,
              float* y, int64_t ldy, int* rows_out, int* ids_out, int slice, int max_active,
              jhdnnSparseDnnResidentTraceRecord_t* trace) {
  const size_t smem = resident_v1_smem_bytes(n, S);
  // The traced instantiation only when a trace buffer is given: the plain one has no trace code at all.
  auto kernel = trace ? dnn_resident_kernel<S, true> : dnn_resident_kernel<S, false>;
  const int which = (S == 2 ? 0 : S == 4 ? 1 : 2) + (trace ? 3 : 0);
  const bool cached = device >= 0 && device < kMaxDevices;
  if (!cached || g_smem_set_v1[device][which].load(std::memory_order_relaxed) < smem) {
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    if (cached) g_smem_set_v1[device][which].store(smem, std::memory_order_relaxed);
  }
  const unsigned grid = unsigned((int64_t(max_active) + slice - 1) / slice);
  if (trace)  // records of this launch's CTAs start at zero (event 0: not reached)
    JHDNN_CUDA_TRY(cudaMemsetAsync(trace, 0, size_t(grid) * kTraceRecords * sizeof(*trace), s));
  kernel<<<grid, kThreads, smem, s>>>(table, layer_count, n, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy,
                                      rows_out, ids_out, slice, max_active, trace);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

}  // namespace

size_t resident_v1_smem_bytes(int64_t n, int s) { return kFixedBytes + 2 * size_t(n) * size_t(s) * sizeof(float); }


Status load_dnn_resident_v1_kernels() {
  cudaFuncAttributes attr;
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<2, false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<2, true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, true>));
  return Status::success();
}

Status dnn_resident_v1(cudaStream_t s, int device, size_t smem_optin, const jhdnnSparseMatrixStruct* const* wts,
                    int layer_count, float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                    const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                    int* ids_out, int slice, jhdnnSparseDnnResidentTraceRecord_t* trace) {
  if (max_active == 0 || layer_count == 0) return Status::success();
  const int64_t n = wts[0]->rows;
  int smax = 0;  // this kernel's own limit (its fixed shared memory differs from the packed kernel's)
  for (int sm : {8, 4, 2})
    if (smax == 0 && resident_v1_smem_bytes(n, sm) <= smem_optin) smax = sm;
  if (smax == 0)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "n = %lld: two feature buffers of 2 images do not fit in shared memory (%zu bytes per block)",
                      (long long)n, smem_optin);
  if (slice == 0) slice = smax;
  if (slice > smax)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sliceImages %d > %d, the most that fit at n = %lld", slice,
                      smax, (long long)n);
  // The smallest instantiation that holds the slice (fewer outputs per step otherwise idle).
  const int S = slice <= 2 ? 2 : slice <= 4 ? 4 : 8;
  ResidentTable table{};
  for (int k = 0; k < layer_count; ++k) table.layer[k] = ResidentLayer{wts[k]->col_ind, wts[k]->values, wts[k]->row_order};
  const int nn = int(n);
  switch (S) {
    case 2:
      return launch<2>(s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy,
                       rows_out, ids_out, slice, max_active, trace);
    case 4:
      return launch<4>(s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy,
                       rows_out, ids_out, slice, max_active, trace);
    default:
      return launch<8>(s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy,
                       rows_out, ids_out, slice, max_active, trace);
  }
}

}  // namespace jhdnn::sparse
