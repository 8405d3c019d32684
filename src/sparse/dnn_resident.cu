// The shared-memory-resident late layers of a Sparse DNN (jhdnnSparseDnnLayersForwardResident).
//
// When few images are alive (the challenge: ~950 of 60000 from layer ~14 on), ONE launch runs many
// layers and each CTA owns a small fixed slice of at most S images (S = 8 at n = 1024): the slice's
// features live in SHARED memory for the whole launch, double buffered (2 x (n + 1) x S floats: 64 KB
// at n = 1024, S = 8). Between layers there is only a __syncthreads: no grid barrier, no cluster, no
// global feature traffic except the first read and the final write of the survivors. An image whose
// output row is all zero leaves the slice's live list (CTA-local); a slice with none left stops.
//
// Weights. Every CTA streams each layer's rows from L2 in the row order, in chunks of 128 rows, with
// cp.async into a ring of kStages + 1 shared-memory stages, kStages chunks in flight. The rows come
// from the layer's PACKED copy (dnn_resident_pack.cu, layout in sparse.h: built once per descriptor,
// rows already in the row order, the "list-pack" layout since session 13: per chunk the rows' 144 bytes
// (32 weights, the output row, the flags, the byte offset of the row's list slot) and then each run of
// equal input lists ONCE, 128 bytes per slot), so a chunk is one contiguous block of rows x 144 + the
// layer's list bytes (19,456 bytes for the challenge's 16-row lists, at most 34,816 = a ring slot)
// and thread t copies its pieces t, t + 256, ... to the same offsets: no order ring, no per-piece
// address arithmetic. The weights do not depend on
// the data, so the ring runs straight across layer boundaries: the next layer's first chunks arrive
// while this layer finishes. Chunk g: copied in iteration g - P (ring of P + 1), consumed in
// iteration g; iteration i waits for the group of iteration i - P (cp.async.wait_group P - 1) and then
// __syncthreads, which also retires every read of the stage the new copies overwrite. (kBulk, measured
// faster on the H200 at 3f71f09 (~6.9 against ~7.8 us per late layer) and the copy of the 16-warp
// kernels below (pair, quad, duo -- duo the default, with its own ring of 8): the same ring, one
// cp.async.bulk per chunk from thread 0 completing on the stage's mbarrier;
// JHDNN_RESIDENT_KERNEL=packed gives the 8-warp cp.async copy back.)
//
// Compute. A warp takes 16 consecutive rows of a chunk (in the row order); a step covers 32 / S of
// them x S images, lane = (output o = lane / S, image q = lane % S), one (output, image) dot product
// per lane. Each lane holds the 32 features of its output's input list for its image in registers;
// when the next step's rows all have the list that is held (the challenge's 16 outputs per list are
// adjacent in the row order), nothing is reloaded: per list one 32-value gather from shared memory
// per image, then only the 8 16-byte weight broadcasts (ld.shared.v4) and 32 FMAs per output.
// Which steps reload is decided per warp and chunk from the packed rows' new-list flags (computed
// once, when the layer was packed): one ballot gives the warp's 16 flags, and a step reuses the
// held features iff none of its rows starts a new list and the previous step's rows all had one
// list. The first step of a warp in a chunk always gathers (held features never cross a chunk, so
// never a layer). Steps go in pairs: when a pair's 2 x 32 / S rows have one list, each lane computes
// two outputs as two independent fma chains (more ILP, half the per-step overhead).
// A gather reads the row's list-slot offset (word 34) and then the slot's 32 indices (8 x 16 bytes,
// one broadcast each when the step's rows share the list); rows that reuse never touch the slot.
// Padding needs no mask: its packed index is n (the feature buffers' row n is zero and never
// written) and its packed weight 0, so the term is fma(0, 0, acc) as in the reference.
//
// 16 warps: the pair kernel (kPair; JHDNN_RESIDENT_KERNEL=pair, the default in session 12; bulk copy
// only). The 8-warp kernel is issue/latency-bound (ncu at 3f71f09: IPC 1.62 with 2 warps
// per scheduler), and 512 threads x <= 128 registers still fit one CTA per SM next to the same ~205 KB
// of shared memory. So an iteration consumes two chunks of a layer, warps 0-7 the first and 8-15 the
// second, each half exactly as the 8-warp kernel (16 rows per warp, the 4-chain group, one gather per
// list and warp): the same instructions per row (~339 SASS per warp-chunk against 337), twice the
// warps. The price: with 4 ring slots, 2 chunks are consumed while the next 2 are copied (instead of 1
// and 3), so the copies have one iteration to land; and a layer with an odd chunk count runs its last
// chunk on warps 0-7 alone (JHDNN_RESIDENT_KERNEL=bulk gives the 8-warp kernel back).
// Measured on the H200 (trial 8ca56ea, bench/results/8ca56ea; N = 1024, 60000 images, L = 120 / 480 /
// 1920): pair 2.140 / 4.484 / 13.474 ms, 6.24 us per late layer, against the 8-warp bulk kernel's
// 2.241 / 4.720 / 14.668 ms, 6.91 us: 10% faster, but short of the 4.6-5.7 us predicted. ncu: IPC
// 1.86 (not the 2.6-3.2 assumed), L1/TEX (shared memory) throughput 73%, top stall MIO throttle (35%
// of the cycles between a warp's instructions): the shared-memory pipe, not issue, is now the limit;
// the ring is not (thread 0 waits 4.3% of a layer). A second shape, wide (16 warps x 8 rows of each
// chunk), measured 8.39 us per late layer (predicted 5.8-7.2): it ran 1.42x the instructions (each
// list gathered by twice the warps) at about the same IPC, and was deleted. src/sparse/README.md
// ("16 warps") has the counts, the predictions and the look back.
//
// Quad (kQuad, JHDNN_RESIDENT_KERNEL=quad: the default in session 13, at S = 8):
// pair's CTA, ring and schedule, but lane = (one row, 4 images): per input one ld.shared.v4 of the 4
// images' features and 4 FMAs, nothing held across rows. ncu's source counters of pair (93dd8b5)
// showed where its 136 shared wavefronts per warp-chunk go: the 32 weight ld.shared.v4 take 2 each
// (half-warps; 64), so a lane with one row loads each weight once for 4 images (8 + 8 ld.shared.v4
// of indices and weights, 32 of features: ~113 wavefronts, ~200 SASS in the compute against ~339).
// Measured (same binary, N = 1024, 60000 images, L = 120 / 480 / 1920, d568d49): 2.066 / 4.044 /
// 11.90 ms against pair's 2.159 / 4.452 / 13.456; with the feature rows permuted (resident_pos,
// sparse.h: the stores' bank conflicts 8-way -> 2-way) 2.103 / 4.065 / 11.72 against 2.156 / 4.131 /
// 11.96 unpermuted (ee8bd21): ~5.3 us per late layer. A two-row shape (duo: 8 warps of 32 rows, one
// feature load for both rows of a list) ran 21% fewer instructions but at IPC 1.57 and was no faster
// (262d32a); it was reverted. src/sparse/README.md ("Quad") has the numbers.
//
// Duo, 16 warps (kLaneRows 2, JHDNN_RESIDENT_KERNEL=duo or unset: the default since session 14): the
// two-row lane with quad's 16 warps. 16 warps of 32 rows take FOUR chunks per iteration (warps
// 4c .. 4c + 3 chunk c), so the ring needs 8 slots; on the list-pack layout a challenge chunk is
// 19,456 bytes, and 8 slots of the call's largest chunk (the slot size is a kernel argument) + the
// features fit: 221,440 bytes at n = 1024 (of 232,448). Thread 0 keeps every chunk up to g + 7 issued
// (chunk h: slot h & 7, mbarrier parity (h >> 3) & 1); a layer whose chunk count is not a multiple of
// 4 ends with an iteration of 1-3 chunks. A call whose 8 slots do not fit (rows with their own lists:
// 34,816-byte chunks) runs quad; S < 8 runs pair's shape, as quad. SASS (sm_90a) per 32 rows on the
// challenge layers ~439 in the compute (256 FFMA, 56 LDS.128) against quad's 2 x 264. Measured (trial
// ba5fa93, same binary, N = 1024, 60000 images, L = 120 / 480 / 1920, two runs each): 1.90-1.95 / 3.45-3.48 /
// 9.38-9.42 ms against quad's 2.06-2.08 / 4.04-4.08 / 11.75-11.80, ~4.1 us per late layer against 5.35
// (predicted 4.2-5.1); ncu of the first resident launch: 399 us against 520, 208 M instructions against
// 259 M, 55.4 M shared wavefronts against 87.5 M, IPC 2.05 against 1.96. Its layer end (session 31, with
// vals4w's): one barrier (layer_end_mask), and no iteration barrier right after it; per late layer 3.60 -> 3.54 us
// at N = 1024 (bench/results/97c15d6/).
//
// Vals (kLaneRows 3, S = 4; session 16, written without a GPU; measured at 918395d: ~17.7 us per late
// layer at N = 4096, spdnn_infer L = 120 / 480 6.65 / 13.02 ms against the graph path's 7.03 / 15.34):
// at n = 4096 the list-pack rings leave room for 2-image slices only (a ring slot is sized for 34,816-byte chunks, or
// 19,456 on the challenge layers), and 2-image slices lose to the graph path. The vals-pack layout
// (sparse.h; dnn_resident_pack.cu) stores each run of equal weight values once as well, so a challenge
// chunk is 3,200 bytes (3,328 since session 20's 144-byte list slots): a ring of 16 such slots (the call's
// largest chunk) and two S = 4 feature buffers take 184,608 bytes at n = 4096. 16 warps of 64 rows, lane = 2 rows x the 4 images (duo's
// lane at S = 4: per input one ld.shared.v4 of features for 8 FMAs), 2 warps per chunk, so EIGHT
// chunks per iteration and 8 in flight (chunk h: slot h & 15, mbarrier parity (h >> 4) & 1). SASS per
// warp-iteration (64 rows x 4 images, the shared path) ~443, as duo's ~439 for its 32 rows x 8 images.
// Chosen by dnn_resident where S = 4 does not fit the other rings (2905 < n with 232,448 bytes per block;
// and JHDNN_RESIDENT_KERNEL=vals anywhere) when its ring fits the call's layers; else the kernels as before. src/sparse/README.md,
// "Vals".
//
// Valsfan (kLaneRows 4; the default where vals ran by default since session 18, JHDNN_RESIDENT_KERNEL=valsfan
// anywhere vals would run; =vals keeps the thread-0 schedule for A/B): vals with
// thread 0's serial work off the iteration's critical path. The SASS count (README, "Where the vals late
// layer's time goes") puts ~1.3 k of a ~3.9 k-cycle iteration outside every throughput limit; the model:
// warp 0, whose thread 0 issues the iteration's 8 copies (385 SASS) before its own rows, is the last warp
// at every barrier, and every layer's end waits for thread 0's atomic round trip. Here lane 0 of warp w =
// 0..7 issues chunk g + 8 + w (the same chunks after the same barrier), and the survivor count is a RED
// before the last layer. Same results bit for bit.
//
// Vals4w (its own kernel, dnn_resident_vals4w_kernel, below; the default where valsfan was since session 20,
// JHDNN_RESIDENT_KERNEL=vals4w; =valsfan keeps valsfan): the same copies and slices with a lane of 4 rows x 4
// images, each warp a whole chunk, a ring of up to 32 slots refilled by the consuming warp and no barrier
// inside a layer. Vals4w8 (session 33; the same kernel with kWarpCount = 8, JHDNN_RESIDENT_KERNEL=vals4w8): two CTAs
// of one 4-image slice per SM, the default at n <= 1024 with sliceImages 0, where duo ran one CTA of an 8-image
// slice: the same 8 images per SM with twice duo's FMAs per feature load (N = 1024: a late layer 3.53 -> 2.99 us,
// bench/results/3af5541/).
//
// Exactness: per output, acc = fma(w_t, x_t, acc) for t = 0..31 from acc = 0 (padding: fma(0, 0, acc),
// its stored weight is never read: the packed copy holds 0), then min(max(acc + bias, 0), clampMax): the chain
// of layer_tile_reuse / dot32 and of the CPU reference, so survivors and features are bitwise those
// of the per-layer paths.
#include <algorithm>
#include <climits>
#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>

#include "core/config.h"
#include "core/cuda_check.h"
#include "core/log.h"
#include "sparse/smem_access.cuh"
#include "sparse/sparse.h"

namespace jhdnn::sparse {
namespace {

constexpr int kThreads = 256;                           // the 8-warp kernels (bulk, packed); pair: 512
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = 16;                        // consecutive rows of a chunk per warp
constexpr int kChunkRows = kWarps * kRowsPerWarp;       // 128 rows per chunk (a ring slot: kChunkFloats)
// The CTA shapes (the kernel's kPair): 8 warps x 16 rows of each chunk (bulk, packed); and the pair
// schedule (JHDNN_RESIDENT_KERNEL=pair, and quad): 16 warps (512 threads), same ring, same
// shared-memory layout, bulk copy only; an iteration consumes TWO chunks of a layer, warps 0-7 the
// first and 8-15 the second, each half exactly as the 8-warp kernel's warps (16 rows each).
constexpr int cta_threads(bool pair) { return pair ? 2 * kThreads : kThreads; }
static_assert(kChunkRows == kResidentChunkRows, "the packed copy's chunks (sparse.h)");
constexpr int kRowStride = kResidentRowWords;          // 36 words per row: 32 weights, j, flags, list offset, 0
// A ring slot (and the packed copy's chunk stride): the largest chunk, 128 rows of 144 bytes + 128
// list slots of 128 (every row its own list) = 8704 floats = 34,816 bytes = 2176 pieces of 16 B; the
// challenge's chunks use 19,456 of it (8 slots).
constexpr int kChunkFloats = kResidentChunkBytes / 4;
constexpr int kStages = 3;                              // chunks in flight (P)
constexpr int kWSlots = kStages + 1;                    // weight ring (a power of 2: slot = g & 3)
constexpr int kMisc = 48;  // ints: live list (8), flags (8), count, base, columns (8); 32..47: the mbarriers
static_assert((kWSlots & (kWSlots - 1)) == 0, "slot = g & (kWSlots - 1)");
// The duo shape (kLaneRows 2, JHDNN_RESIDENT_KERNEL=duo): 16 warps, an iteration consumes FOUR chunks
// of a layer (warps 4c .. 4c + 3 chunk c, 32 rows each), so its ring has 8 slots (chunk h: slot h & 7,
// mbarrier parity (h >> 3) & 1) of a runtime size, the call's largest chunk (the list-pack layout's
// chunks are 19,456 bytes on the challenge layers: 8 of them fit next to the features; 8 x 34,816 do
// not). Its shared memory: 8 slots, the misc ints, the feature buffers (resident_duo_smem_bytes).
constexpr int kDuoSlots = 8;
constexpr int kDuoChunkWarps = 4;                               // warps on one chunk
constexpr int kDuoIterChunks = 2 * kWarps / kDuoChunkWarps;     // chunks per iteration: 16 warps / 4
static_assert(kDuoIterChunks == 4 && kDuoSlots == 2 * kDuoIterChunks, "4 consumed + 4 in flight");
static_assert(32 + 2 * kDuoSlots <= kMisc && 32 + 2 * kWSlots <= kMisc, "the mbarriers (8 bytes each) fit misc");
static_assert(kDuoChunkWarps * 2 * kRowsPerWarp == kChunkRows, "duo: 4 warps x 32 rows per chunk");
// The vals shape (kLaneRows 3, JHDNN_RESIDENT_KERNEL=vals, and the default where S = 4 does not fit the
// other rings: n = 4096): S = 4 on the vals-pack layout (sparse.h). 16 warps of 64 rows (lane = 2 rows x
// the 4 images), so 2 warps per chunk and EIGHT chunks per iteration from a ring of 16 slots of the
// call's largest chunk (chunk h: slot h & 15, mbarrier parity (h >> 4) & 1); the 16 mbarriers need
// misc ints 32..63.
constexpr int kValsSlots = kResidentValsSlots;
constexpr int kValsChunkWarps = 2;
constexpr int kValsIterChunks = 2 * kWarps / kValsChunkWarps;  // 8
constexpr int kValsRowsPerWarp = kChunkRows / kValsChunkWarps;  // 64
constexpr int kValsMisc = 64;
static_assert(kValsIterChunks == 8 && kValsSlots == 2 * kValsIterChunks, "8 consumed + 8 in flight");
static_assert(32 + 2 * kValsSlots <= kValsMisc, "the vals ring's mbarriers fit its misc ints");
static_assert(kValsRowsPerWarp == 2 * 32, "vals: a lane's two rows");

// The layer table travels as a kernel parameter: 1024 x 16 B (session 37; 96 layers, inside the classic 4 KB limit,
// before), within the 32,764 bytes of parameters CUDA 12.1 and later allow a kernel on sm_70 and newer. Fewer calls
// mean fewer call boundaries: the slices' features loaded, the first chunks, the survivors written; measured ~14 us
// a boundary at N = 1024 and ~58 us at N = 4096 (bench/results/5f8012b/).
struct ResidentLayer {
  const float* pack;  // the packed chunks (dnn_resident_pack.cu, sparse.h), chunk c at c x kChunkFloats
                      // (the vals-pack copy: c x kResidentValsChunkBytes / 4)
  int list_bytes;     // bytes of list slots copied per chunk (after its rows x 144 bytes; vals-pack: the
                      // list + value slot bytes, after its rows x 16)
};
struct ResidentTable {
  ResidentLayer layer[kResidentMaxLayers];
  // 1: x and y are image-major (JHDNN_SPARSE_DNN_FEATURES_IMAGE_MAJOR: x(i, c) at x[c x ldx + i], ldx here the
  // image stride, a multiple of 4; load_slice_features / write_survivors), 0: neuron-major (x(i, c) at x[i x ldx + c]).
  int image_major;
};
static_assert(sizeof(ResidentTable) + 128 <= 32764, "the table and the other parameters must fit 32,764 bytes");

// Shared-memory layout (bytes; every part a multiple of 16): weight ring, the small CTA state, then the two feature buffers ((n + 1) x S floats each, x(i, slot) at i * S + slot;
// row n is zero: the packed padding index).
constexpr size_t kWBytes = size_t(kWSlots) * kChunkFloats * 4;
constexpr size_t kFixedBytes = kWBytes + kMisc * 4;

// (the shared-window accesses lds_* / sts_*: smem_access.cuh)

// The two-row block of the duo and vals lanes: rows a and b (list slots at byte addresses lsa / lsb,
// weights at wa / wb) for the 4 images whose 16-byte feature rows sit at xin + (i << kShift) (duo:
// kShift 5, a half of an 8-image row; vals: 0, its list entries are byte offsets already). When every lane's two rows read one list (`one`,
// warp-uniform by __all_sync) each feature load feeds both rows' 4 FMAs, else each row loads its own
// indices (unroll 2). Per output the chain t = 0..31 from the caller's zeros: acc = fma(w_t, x_t, acc).
template <int kShift>
__device__ __forceinline__ void two_row_block(bool one, unsigned lsa, unsigned lsb, unsigned wa_s, unsigned wb_s,
                                              unsigned xin, float (&a)[4], float (&b)[4]) {
  auto fma4 = [](float (&acc)[4], float w, float4 xf) {
    acc[0] = __fmaf_rn(w, xf.x, acc[0]);
    acc[1] = __fmaf_rn(w, xf.y, acc[1]);
    acc[2] = __fmaf_rn(w, xf.z, acc[2]);
    acc[3] = __fmaf_rn(w, xf.w, acc[3]);
  };
  auto feat = [&](int i) { return lds_v4_f32(xin + (unsigned(i) << kShift)); };
  if (__all_sync(0xffffffffu, one)) {  // every lane: one list for both rows
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int4 id = lds_v4_s32(lsa + 16u * u);
      const float4 wa = lds_v4_f32(wa_s + 16u * u), wb = lds_v4_f32(wb_s + 16u * u);
      const float4 x0 = feat(id.x), x1 = feat(id.y), x2 = feat(id.z), x3 = feat(id.w);
      fma4(a, wa.x, x0);
      fma4(b, wb.x, x0);
      fma4(a, wa.y, x1);
      fma4(b, wb.y, x1);
      fma4(a, wa.z, x2);
      fma4(b, wb.z, x2);
      fma4(a, wa.w, x3);
      fma4(b, wb.w, x3);
    }
  } else {
#pragma unroll 2
    for (int u = 0; u < 8; ++u) {
      const int4 ia = lds_v4_s32(lsa + 16u * u), ib = lds_v4_s32(lsb + 16u * u);
      const float4 wa = lds_v4_f32(wa_s + 16u * u), wb = lds_v4_f32(wb_s + 16u * u);
      fma4(a, wa.x, feat(ia.x));
      fma4(b, wb.x, feat(ib.x));
      fma4(a, wa.y, feat(ia.y));
      fma4(b, wb.y, feat(ib.y));
      fma4(a, wa.z, feat(ia.z));
      fma4(b, wb.z, feat(ib.z));
      fma4(a, wa.w, feat(ia.w));
      fma4(b, wb.w, feat(ib.w));
    }
  }
}
// The bulk-copy variant (JHDNN_RESIDENT_KERNEL=bulk, kBulk): thread 0 copies a whole chunk with ONE
// cp.async.bulk (the TMA's 1-D copy) that completes on the stage's mbarrier; every thread waits on
// that mbarrier's phase instead of cp.async.wait_group. Chunk h uses stage h & 3 for the (h >> 2)-th
// time, so it waits for phase parity (h >> 2) & 1.
__device__ __forceinline__ void mbar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
// An arrival without a copy: completes the barrier's current phase (count 1, nothing in flight).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
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
// The bytes of a chunk of rows_here rows: its rows, then the layer's list bytes, but no more slots
// than rows (a short last chunk; so a layer never moves more bytes than its n x 272 of old). A
// multiple of 16, at most kChunkFloats x 4 (vals-pack: kResidentValsChunkBytes).
// kVals: the vals-pack layout's chunk (list_bytes holds the layer's list + value slot bytes).
template <bool kVals = false>
__device__ __forceinline__ unsigned chunk_bytes(const ResidentLayer& layer, int rows_here) {
  if constexpr (kVals) return unsigned(resident_vals_chunk_bytes(rows_here, layer.list_bytes));
  return unsigned(resident_chunk_bytes(rows_here, layer.list_bytes));
}
// Thread 0 only: chunk c of a packed layer (rows_here rows) into the stage at dst, completing on bar.
// The cross-proxy fence orders the generic-proxy reads of the stage's previous chunk (all threads,
// before the __syncthreads that precedes this call) before the async-proxy writes.
template <bool kVals = false>
__device__ __forceinline__ void bulk_chunk(const ResidentLayer& layer, int c, int rows_here, unsigned dst,
                                           unsigned bar) {
  const float* src = layer.pack + int64_t(c) * (kVals ? kResidentValsChunkBytes / 4 : kChunkFloats);  // the stride
  const unsigned bytes = chunk_bytes<kVals>(layer, rows_here);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
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

// Records of slice `unit` (vals4w: the slice, whichever CTA runs it; the other kernels: blockIdx.x, trace_record).
__device__ __forceinline__ void trace_record_at(jhdnnSparseDnnResidentTraceRecord_t* trace, int unit, int index,
                                                int event, int layer, int live, unsigned wait_clk = 0,
                                                unsigned reserved = 0) {
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
  r.reserved = reserved;
  trace[int64_t(unit) * kTraceRecords + index] = r;
}
__device__ __forceinline__ void trace_record(jhdnnSparseDnnResidentTraceRecord_t* trace, int index, int event,
                                             int layer, int live, unsigned wait_clk = 0) {
  trace_record_at(trace, int(blockIdx.x), index, event, layer, live, wait_clk);
}


// Chunk c of a packed layer (rows_here rows from row c * 128) into a weight stage: piece p (16 bytes)
// of the chunk to byte 16 p of the stage, pieces t, t + 256, ... by thread t. The per-thread source
// and destination are formed once; piece m is then [address + constant] on both sides (immediates).
template <int M>
__device__ __forceinline__ void issue_pieces(unsigned dst, const float* src, int left) {
  if constexpr (M < (kChunkFloats / 4 + kThreads - 1) / kThreads) {
    if (M * kThreads < left)
      asm volatile("cp.async.cg.shared.global [%0+%2], [%1+%2], 16;\n" ::"r"(dst), "l"(src), "n"(M * kThreads * 16)
                   : "memory");
    issue_pieces<M + 1>(dst, src, left);
  }
}
__device__ __forceinline__ void issue_chunk(const ResidentLayer& layer, int c, int rows_here, float* stage) {
  const int t = int(threadIdx.x);
  const float* src = layer.pack + int64_t(c) * kChunkFloats + 4 * t;
  const unsigned dst = unsigned(__cvta_generic_to_shared(stage)) + 16u * unsigned(t);
  issue_pieces<0>(dst, src, int(chunk_bytes(layer, rows_here) / 16) - t);  // left: pieces from this thread's first on
}

// The pieces every resident kernel shares (inlined; the per-kernel code around them differs).
// Item e of the slice's feature copies (load and write-out): slot q = e % S of the aligned quad of feature rows
// 4a .. 4a + 3, a = e / S (S a power of 2: shifts). A warp's copy of row 4a + j then covers 32 / S quads x S slots,
// one 16- or 32-byte piece of each of 32 / S rows where the slots' columns are consecutive (as spdnn's are). The
// quad's rows lie at 4a + (j ^ key) in the buffer (resident_pos, sparse.h), key = resident_pos(4a, n) - 4a, found
// once per item. Rows from 4 (n / 4) on (n % 4 rows and the padding row n) go one feature at a time.
template <int S>
__device__ __forceinline__ int quad_key(int a, int n) {
  static_assert(S == 2 || S == 4 || S == 8, "slots per slice: a power of 2");
  return resident_pos(4 * a, n) - 4 * a;
}
// The slice's features: x(i, column of slot q) -> the buffer at resident_pos(i, n) * S + q (slots without an
// image and row n: 0). cols: the slots' columns in x (-1: no image), in shared memory. kBatch items per thread are
// loaded before any is stored: 16 loads in flight per thread (at n = 4096, S = 4, 512 threads: all 8 items of a
// thread in two batches). Until session 38 each thread took one feature at a time (resident_pos's loop between a
// load and its store kept ~1 load in flight): 17-22 us per CTA at n = 4096, of a 4.8 us layer (the resident trace,
// bench/results/62dd319/).
template <int S, int kCtaThreads>
__device__ __forceinline__ void load_slice_features_neuron(float* xbuf, const int* cols, const float* __restrict__ x,
                                                           int64_t ldx, int n) {
  constexpr int kBatch = 4;
  const int quads = n >> 2, items = quads * S;
  for (int e0 = int(threadIdx.x); e0 < items; e0 += kBatch * kCtaThreads) {
    float v[kBatch][4];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kCtaThreads, a = e / S, col = cols[e % S];
      const bool in = e < items && col >= 0;
      const float* src = x + int64_t(4 * a) * ldx + col;
#pragma unroll
      for (int j = 0; j < 4; ++j) v[u][j] = in ? src[j * ldx] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int e = e0 + u * kCtaThreads, a = e / S, q = e % S;
      if (e < items) {
        const int key = quad_key<S>(a, n);
#pragma unroll
        for (int j = 0; j < 4; ++j) xbuf[(4 * a + (j ^ key)) * S + q] = v[u][j];
      }
    }
  }
  for (int e = 4 * quads * S + int(threadIdx.x); e < (n + 1) * S; e += kCtaThreads) {  // rows 4 (n / 4) .. n
    const int i = e / S, q = e % S, col = cols[q];  // resident_pos(i, n) = i here
    xbuf[i * S + q] = col >= 0 && i < n ? x[int64_t(i) * ldx + col] : 0.f;
  }
}
// Component j (0..3, a constant after unrolling) of a float4.
__device__ __forceinline__ float f4_at(const float4& v, int j) { return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w; }
// The image-major load (session 46): image q is the n floats from x + cols[q] x ld (ld, the image stride, a multiple
// of 4; x 16-byte aligned: the API checks both), so thread t takes quads a = t, t + threads, ...: one 16-byte load
// per slot (a warp reads 512 contiguous bytes of each image) and, for each of the quad's 4 rows, the S slots'
// features stored together (the buffer's row holds the slice's S images: a register transpose, no staging). kBatch
// quads per thread are loaded before any is stored: 8 16-byte loads in flight per thread (S = 2, 4), 8 at S = 8.
// In the neuron-major layout a slice is one 4-byte piece per row and image, N rows apart: 13 us per 64 KB slice at
// n = 4096 against ~4.4 us of a layer's arithmetic (the resident trace, bench/results/2be439b/slice-check/).
template <int S, int kCtaThreads>
__device__ __forceinline__ void load_slice_features_image(float* xbuf, const int* cols, const float* __restrict__ x,
                                                          int64_t ld, int n) {
  constexpr int kBatch = S >= 8 ? 1 : 8 / S;
  const int quads = n >> 2;
  int col[S];
#pragma unroll
  for (int q = 0; q < S; ++q) col[q] = cols[q];
  for (int a0 = int(threadIdx.x); a0 < quads; a0 += kBatch * kCtaThreads) {
    float4 v[kBatch][S];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int a = a0 + u * kCtaThreads;
#pragma unroll
      for (int q = 0; q < S; ++q)
        v[u][q] = a < quads && col[q] >= 0 ? *reinterpret_cast<const float4*>(x + int64_t(col[q]) * ld + 4 * a)
                                           : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int a = a0 + u * kCtaThreads;
      if (a < quads) {
        const int key = quad_key<S>(a, n);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          float* row = xbuf + (4 * a + (j ^ key)) * S;  // the row's S slots: 4 S bytes, 4 S-byte aligned
          if constexpr (S == 2) {
            *reinterpret_cast<float2*>(row) = make_float2(f4_at(v[u][0], j), f4_at(v[u][1], j));
          } else {
#pragma unroll
            for (int h = 0; h < S; h += 4)
              *reinterpret_cast<float4*>(row + h) =
                  make_float4(f4_at(v[u][h], j), f4_at(v[u][h + 1], j), f4_at(v[u][h + 2], j), f4_at(v[u][h + 3], j));
          }
        }
      }
    }
  }
  for (int e = 4 * quads * S + int(threadIdx.x); e < (n + 1) * S; e += kCtaThreads) {  // rows 4 (n / 4) .. n
    const int i = e / S, q = e % S, c = cols[q];  // resident_pos(i, n) = i here (c from shared: q is not a constant)
    xbuf[i * S + q] = c >= 0 && i < n ? x[int64_t(c) * ld + i] : 0.f;
  }
}
template <int S, int kCtaThreads>
__device__ __forceinline__ void load_slice_features(float* xbuf, const int* cols, const float* __restrict__ x,
                                                    int64_t ldx, int n, int image_major) {
  if (image_major)
    load_slice_features_image<S, kCtaThreads>(xbuf, cols, x, ldx, n);
  else
    load_slice_features_neuron<S, kCtaThreads>(xbuf, cols, x, ldx, n);
}
// Threads q < S: the slice's state in misc (live list = slots 0..S - 1, flags 0 at misc 8.., the column of slot q
// in x at misc 24 + q, -1 past the slice's `mine` images) and row n of feature buffer 1 (the padding row; buffer
// 0's is written by load_slice_features).
template <int S>
__device__ __forceinline__ void init_slice_state(int* misc, float* xbuf, int n, const int* __restrict__ rows_in, int r0,
                                                 int mine) {
  if (threadIdx.x < S) {
    const int q = threadIdx.x;
    misc[q] = q;
    misc[8 + q] = 0;
    misc[24 + q] = q < mine ? rows_in[r0 + q] : -1;
    xbuf[(n + 1) * S + n * S + q] = 0.f;
  }
}
// Warp 0 at a layer end (cnt <= S <= 8 live slots, one lane each): the live list keeps the slots whose flag is
// set, in place and in slot order (lane t's slot goes to its rank among the kept ones, <= t), every flag cleared;
// returns the survivors in every lane. Every lane's reads precede the ballot, its writes follow it (and the
// __syncwarp orders them for the other lanes). Before session 30 thread 0 ran this as a serial loop of dependent
// shared loads, ~8 x 2 round trips a layer, while the block waited at the barrier after it (ncu at N = 1024:
// ~14% of the duo kernel's stall samples on the instruction after that barrier, bench/results/efaccd4/).
__device__ __forceinline__ int compact_live_warp(int* s_live, int* s_flag, int cnt) {
  const int t = int(threadIdx.x & 31u);
  const bool in = t < cnt;
  const int sl = in ? s_live[t] : 0;
  const bool keep = in && s_flag[sl] != 0;
  const unsigned kept = __ballot_sync(0xffffffffu, keep);
  __syncwarp();
  if (keep) s_live[__popc(kept & ((1u << t) - 1u))] = sl;
  if (in) s_flag[sl] = 0;
  return __popc(kept);
}
// Thread 0 at a layer end: the layer's survivors m added to counts[k + 1]. Before the last layer the old value is
// not used, so the add is a fire-and-forget RED and the barrier after it does not wait for a global atomic's round
// trip; the last layer's old value is the survivors' output slots (*s_base). (valsfan and vals4w since session 18;
// every resident kernel since session 30: duo waited for the round trip every layer.)
__device__ __forceinline__ void count_survivors(int* counts, int k, int layer_count, int m, int* s_base) {
  if (k == layer_count - 1)
    *s_base = m > 0 ? atomicAdd(counts + k + 1, m) : 0;
  else if (m > 0)
    atomicAdd(counts + k + 1, m);
}
// The layer end of duo and vals4w since session 31: one barrier, no list kept between layers. ncu at ec5fb73
// (N = 1024, duo): 4.2% of the stall samples after the second barrier of compact_live_warp's end, where 15 warps
// waited for warp 0's compaction (two dependent shared loads, a ballot, the stores) and the count's load.
//  - Before the barrier, each warp ORs its lanes' nonzero slots (bit s: slot s; the lane's 4 slots from slot0) into
//    the layer's mask word s_flag[m3]: one shared atomic per warp.
//  - After it, every thread ANDs the word into `live`, its mask of the live slots (a dead slot is computed too, so
//    its bit is masked off); the survivors are popc of that, in every thread; thread 0 adds them to the count
//    (count_survivors).
//  - The words rotate over three (m3 = k mod 3): thread 0 clears the word of layer k + 2 (= k - 1's) after layer k's
//    barrier. Every thread read it after layer k - 1's barrier, before arriving at layer k's; no warp writes it
//    before passing layer k + 1's, which thread 0 reaches after the clear.
//  - The live list (s_live, slot order, as the compaction kept it) is formed from the mask after the last layer
//    only, for the write-out, with a barrier before it (*s_base too).
// Returns the survivors. Every thread of the block calls it (the barriers).
template <int S>
__device__ __forceinline__ int layer_end_mask(float (&alive4)[4], int slot0, int* s_flag, int& m3, unsigned& live,
                                              int* counts, int k, int layer_count, int* s_base, int* s_live) {
  unsigned bits = 0u;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    bits |= unsigned(alive4[e] != 0.f) << (slot0 + e);
    alive4[e] = 0.f;
  }
  bits = __reduce_or_sync(0xffffffffu, bits);
  if ((threadIdx.x & 31u) == 0 && bits != 0u) atomicOr(s_flag + m3, int(bits));
  __syncthreads();
  live &= unsigned(s_flag[m3]);
  if (threadIdx.x == 0) s_flag[m3 == 0 ? 2 : m3 - 1] = 0;  // layer k + 2's word
  m3 = m3 == 2 ? 0 : m3 + 1;
  const int cnt = __popc(live);
  if (threadIdx.x == 0) count_survivors(counts, k, layer_count, cnt, s_base);
  if (k == layer_count - 1) {  // block-uniform: the write-out's list and *s_base
    const unsigned t = threadIdx.x;
    if (t < unsigned(S) && ((live >> t) & 1u) != 0u) s_live[__popc(live & ((1u << t) - 1u))] = int(t);
    __syncthreads();
  }
  return cnt;
}
// After the last layer: the survivors' features (xfin, slot sl's feature i at resident_pos(i, n) * S + sl) to y
// at column r0 + sl, and (rows_out, ids_out) at the slots from *s_base (dropped at or past max_active). rows_out
// NULL (the compacted output, jhdnnSparseDnnLayersForwardResidentEx): survivor t's features to column *s_base + t
// instead, none at or past max_active. The items are load_slice_features's, t = e % S the survivor (s_live[t],
// t < cnt). Until session 38 each thread took one feature at a time with a division by cnt and resident_pos's loop:
// ~10 us per CTA at n = 4096 to issue.
template <int S, int kCtaThreads>
__device__ __forceinline__ void write_survivors(const float* xfin, const int* s_live, int cnt, const int* s_base, int n,
                                                int r0, float* __restrict__ y, int64_t ldy, const int* ids_in,
                                                int* rows_out, int* ids_out, int max_active, int image_major) {
  const int quads = n >> 2, items = quads * S;
  // survivor t's column of y, or -1 where a compacted slot is dropped
  auto column = [&](int t) {
    if (rows_out != nullptr) return r0 + s_live[t];
    const int pos = *s_base + t;
    return pos < max_active ? pos : -1;
  };
  if (image_major) {  // survivor t's quad a as one 16-byte store at y + column(t) x ldy + 4 a (ldy: the stride)
    for (int a = int(threadIdx.x); a < quads; a += kCtaThreads) {
      const int key = quad_key<S>(a, n);
#pragma unroll
      for (int t = 0; t < S; ++t)
        if (t < cnt && column(t) >= 0) {
          const int sl = s_live[t];
          const float4 v = make_float4(xfin[(4 * a + (0 ^ key)) * S + sl], xfin[(4 * a + (1 ^ key)) * S + sl],
                                       xfin[(4 * a + (2 ^ key)) * S + sl], xfin[(4 * a + (3 ^ key)) * S + sl]);
          *reinterpret_cast<float4*>(y + int64_t(column(t)) * ldy + 4 * a) = v;
        }
    }
    for (int e = 4 * quads * S + int(threadIdx.x); e < n * S; e += kCtaThreads) {  // rows 4 (n / 4) .. n - 1
      const int i = e / S, t = e % S;
      if (t < cnt && column(t) >= 0) y[int64_t(column(t)) * ldy + i] = xfin[i * S + s_live[t]];
    }
  }
  for (int e = int(threadIdx.x); !image_major && e < items; e += kCtaThreads) {
    const int a = e / S, t = e % S;
    if (t < cnt && column(t) >= 0) {
      const int sl = s_live[t], key = quad_key<S>(a, n);
      float* dst = y + int64_t(4 * a) * ldy + column(t);
#pragma unroll
      for (int j = 0; j < 4; ++j) dst[j * ldy] = xfin[(4 * a + (j ^ key)) * S + sl];
    }
  }
  for (int e = 4 * quads * S + int(threadIdx.x); !image_major && e < n * S; e += kCtaThreads) {  // rows 4 (n / 4) ..
    const int i = e / S, t = e % S;  // resident_pos(i, n) = i here
    if (t < cnt && column(t) >= 0) y[int64_t(i) * ldy + column(t)] = xfin[i * S + s_live[t]];
  }
  if (threadIdx.x < unsigned(cnt)) {  // (cnt >= 0)
    const int sl = s_live[threadIdx.x];
    const int pos = *s_base + int(threadIdx.x);
    if (pos < max_active) {
      if (rows_out != nullptr) rows_out[pos] = r0 + sl;
      ids_out[pos] = ids_in[r0 + sl];
    }
  }
}

// Vals4w's slices handed between CTAs (resident_vals4w_block_layers, sparse.h): a slice's feature buffer, (n + 1) x S
// floats as the layer loop left it (resident_pos order, row n zero), parked in device memory after one of its blocks
// of layers and put back before the next, by whichever CTA takes that. 16-byte pieces, kBatch loads in flight per
// thread; L2 only (.cg): another SM wrote what a CTA unparks, and this SM's L1 may still hold an older park of it.
template <int kCtaThreads>
__device__ __forceinline__ void park_features(float* __restrict__ dst, const float* xfin, int floats) {
  const float4* src = reinterpret_cast<const float4*>(xfin);
  float4* d = reinterpret_cast<float4*>(dst);
  for (int e = int(threadIdx.x); e < floats / 4; e += kCtaThreads) __stcg(d + e, src[e]);
}
template <int kCtaThreads>
__device__ __forceinline__ void unpark_features(float* xbuf, const float* __restrict__ src, int floats) {
  constexpr int kBatch = 4;
  const float4* s4 = reinterpret_cast<const float4*>(src);
  float4* d = reinterpret_cast<float4*>(xbuf);
  const int pieces = floats / 4;
  for (int e0 = int(threadIdx.x); e0 < pieces; e0 += kBatch * kCtaThreads) {
    float4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (e0 + u * kCtaThreads < pieces) v[u] = __ldcg(s4 + e0 + u * kCtaThreads);
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (e0 + u * kCtaThreads < pieces) d[e0 + u * kCtaThreads] = v[u];
  }
}
// A slice's progress word in the handed schedule: (blocks done) << 8 | the live slots after them (bit s: slot s); a
// slice that emptied writes (all blocks) << 8 | 0. Released by thread 0 after the CTA's park (a barrier, then a
// fence), acquired by thread 0 of the CTA that takes the slice's next block.
__device__ __forceinline__ void publish_progress(int* word, int value) {
  __threadfence();
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(word), "r"(value) : "memory");
}
// The handed schedule's blocks chosen on the device (block_layers < 0): resident_vals4w_block_layers's model (sparse.h)
// with the call's real slice count, its candidates B = 2..layers spread over the CTA's threads, the least time (then
// the largest K) by a warp reduction and a shared atomicMin; one block (the whole call: no park) where the model
// takes none. Every thread calls it (barriers); every CTA computes the same K. *s_best: 8 bytes of shared memory.
template <int kCtaThreads>
__device__ __forceinline__ int device_block_layers(int units, int ctas, int layers, unsigned long long* s_best) {
  if (threadIdx.x == 0) *s_best = ~0ull;
  __syncthreads();
  unsigned long long best = ~0ull;  // time << 11 | (2047 - K): K <= 1024
  for (int b = 2 + int(threadIdx.x); b <= layers; b += kCtaThreads) {
    const int k = (layers + b - 1) / b;
    const unsigned long long t = (unsigned long long)resident_vals4w_blocks_time(units, ctas, layers, k);
    best = min(best, t << 11 | unsigned(2047 - k));
  }
  for (int o = 16; o > 0; o >>= 1) best = min(best, __shfl_xor_sync(0xffffffffu, best, o));
  if ((threadIdx.x & 31u) == 0 && best != ~0ull) atomicMin(s_best, best);
  __syncthreads();
  const unsigned long long got = *s_best;
  // The host's test (resident_vals4w_blocks_gain); the 300-slice GPU test checks that the two choices agree.
  if (got == ~0ull || !resident_vals4w_blocks_gain(int64_t(got >> 11), units, ctas, layers)) return layers;
  return 2047 - int(got & 2047u);
}
__device__ __forceinline__ int acquire_progress(const int* word) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(word) : "memory");
  return v;
}

// One CTA = one slice of at most `slice` (<= S) images of the input list: positions r0 .. r0 + mine - 1.
// Layer k of the table reads feature buffer k & 1 and writes the other; counts[k + 1] += the slice's
// survivors of layer k. After the last layer the survivors' features go to y at column r (their
// position in the input list), and (rows_out, ids_out) get (r, ids_in[r]) at slots from the atomic
// on counts[layer_count] (the fused path's convention; slots at or past max_active are dropped).
// kLaneRows: the lane's rows (S = 8, the 16-warp kernels only): 0 one image per lane (pair, bulk,
// packed), 1 quad (one row x 4 images), 2 duo (two rows x 4 images, 4 chunks per iteration, its own
// ring: slot_bytes, the bytes of each of its 8 slots; ignored by the others), 3 vals (S = 4, two rows x
// 4 images, 8 chunks per iteration, a ring of 16 slot_bytes slots), 4 valsfan (vals, copies issued by
// 8 warps).
template <int S, bool kTrace, bool kBulk, bool kPair, int kLaneRows>
__global__ void __launch_bounds__(cta_threads(kPair), 1)
dnn_resident_kernel(const __grid_constant__ ResidentTable table, int layer_count, int n, float bias, float clamp_max,
                    int* __restrict__ counts, const int* __restrict__ rows_in, const int* __restrict__ ids_in,
                    const float* __restrict__ x, int64_t ldx, float* __restrict__ y, int64_t ldy,
                    int* __restrict__ rows_out, int* __restrict__ ids_out, int slice, int max_active,
                    unsigned slot_bytes, jhdnnSparseDnnResidentTraceRecord_t* __restrict__ trace) {
  // The 16-warp kernel exists only with the bulk copy: the cp.async copy (issue_chunk) splits a chunk
  // into pieces for 256 threads, and the pair shape's ring is written for the mbarrier waits.
  static_assert(!kPair || kBulk, "the 16-warp kernel is instantiated with the bulk copy only");
  // kLaneRows 4 (valsfan): the vals kernel whose ring copies are issued by lane 0 of warps 0..7, one
  // chunk each, instead of by thread 0 alone (kFan; "Valsfan" in src/sparse/README.md).
  constexpr bool kQuad = kLaneRows == 1, kDuo = kLaneRows == 2, kVals = kLaneRows == 3 || kLaneRows == 4;
  constexpr bool kFan = kLaneRows == 4;
  // The layer end with one barrier and a mask of live slots (layer_end_mask): every kernel whose lanes compute all
  // of the slice's slots (quad, duo, vals, valsfan since session 32; duo's alone in session 31). The one-image
  // kernels (pair, bulk, packed) map lane q to the live slot s_live[q], so they keep the list in every layer
  // (compact_live_warp).
  constexpr bool kLiveMask = kQuad || kDuo || kVals;
  static_assert(kLaneRows >= 0 && kLaneRows <= 4, "one image, quad, duo, vals or valsfan");
  static_assert(S <= 32, "compact_live_warp: one lane of warp 0 per slot");
  static_assert(kLaneRows == 0 || (kPair && (kVals ? S == kResidentValsS : S == 8)),
                "the quad and duo shapes use the 16-warp CTA at S = 8, vals at S = 4");
  constexpr bool kRuntimeSlot = kDuo || kVals;  // the ring slot is the call's largest chunk (slot_bytes)
  constexpr int kCtaThreads = cta_threads(kPair);
  // The ring: kRing slots of slot_b bytes (pair / quad / 8-warp: 4 x 34,816; duo: 8 x slot_bytes),
  // then the misc ints, then the two feature buffers.
  constexpr int kRing = kDuo ? kDuoSlots : kVals ? kValsSlots : kWSlots;
  constexpr int kChunkWarps = kDuo ? kDuoChunkWarps : kVals ? kValsChunkWarps : kWarps;  // warps on one chunk
  constexpr int kMiscInts = kVals ? kValsMisc : kMisc;
  const unsigned slot_b = kRuntimeSlot ? slot_bytes : unsigned(kChunkFloats * 4);
  const unsigned w_bytes = kRuntimeSlot ? unsigned(kRing) * slot_bytes : unsigned(kWBytes);
  if (kTrace && threadIdx.x == 0) trace_record(trace, 0, JHDNN_RESIDENT_TRACE_ENTRY, -1, 0);
  extern __shared__ __align__(16) unsigned char smem[];
  float* wstage = reinterpret_cast<float*>(smem);
  int* misc = reinterpret_cast<int*>(smem + w_bytes);
  int* s_live = misc;       // [8]: the live images' slots, in slot order (kLiveMask: after the last layer only)
  int* s_flag = misc + 8;   // [8]: slot has a nonzero output in the current layer (kLiveMask: [3], the mask words)
  int* s_cnt = misc + 16;   // live images after the last compaction (one-image kernels)
  int* s_base = misc + 17;  // the first output slot of this CTA's survivors
  float* xbuf = reinterpret_cast<float*>(smem + w_bytes + kMiscInts * 4);
  unsigned smem_a = unsigned(__cvta_generic_to_shared(smem));  // the stages' byte address
  asm volatile("" : "+r"(smem_a));  // opaque: kept in a register (else re-formed from %cgactaid per use)
  const unsigned xbuf_a = smem_a + w_bytes + unsigned(kMiscInts * 4);
  const unsigned bar_a = smem_a + w_bytes + 32u * 4u;  // kBulk: stage s's mbarrier at bar_a + 8 s
  const int xstride = (n + 1) * S;  // floats per feature buffer (row n: zero, the padding index)

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int count = min(counts[0], max_active);  // written before this launch (kernel boundary)
  const int r0 = int(blockIdx.x) * slice;
  if (r0 >= count) {  // no image for this CTA (max_active bounds the count; the count may be smaller)
    if (kTrace && threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, -1, 0);
    return;
  }
  const int mine = min(slice, count - r0);

  // The slice's features: x(i, rows_in[r0 + q]) -> buffer 0 at i * S + q (slots >= mine: 0).
  init_slice_state<S>(misc, xbuf, n, rows_in, r0, mine);
  if (threadIdx.x == 0) {
    if constexpr (!kLiveMask) *s_cnt = mine;
    if constexpr (kBulk) {
      for (int st = 0; st < kRing; ++st) mbar_init(bar_a + 8u * unsigned(st));
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy
    }
  }
  __syncthreads();
  load_slice_features<S, kCtaThreads>(xbuf, misc + 24, x, ldx, n, table.image_major);

  const int chunks = (n + kChunkRows - 1) / kChunkRows;
  const int last_rows = n - (chunks - 1) * kChunkRows;  // rows of a layer's last chunk
  // Prologue: chunks 0 .. P - 1, one group each ("iterations" -P .. -1). (ik, ic): the next chunk to
  // copy; no divisions in the loop. The pair shape fills all 4 slots (its first iteration consumes
  // two chunks at once; see the loop); ni: the next chunk to copy, global (pair shape, thread 0).
  constexpr int kPrologue = kPair ? kRing : kStages;
  int ik = 0, ic = 0, ni = kPrologue;
  for (int m = 0; m < kPrologue; ++m) {
    if constexpr (kBulk) {
      if (ik < layer_count && threadIdx.x == 0)
        bulk_chunk<kVals>(table.layer[ik], ic, ic == chunks - 1 ? last_rows : kChunkRows,
                          smem_a + unsigned(m & (kRing - 1)) * slot_b, bar_a + 8u * unsigned(m & (kRing - 1)));
    } else {
      if (ik < layer_count) issue_chunk(table.layer[ik], ic, ic == chunks - 1 ? last_rows : kChunkRows,
                                        wstage + (m & (kWSlots - 1)) * kChunkFloats);
      cp_async_commit();
    }
    if (++ic == chunks) ic = 0, ++ik;
  }
  __syncthreads();  // the features and the small state are in place
  if (kTrace && threadIdx.x == 0) trace_record(trace, 1, JHDNN_RESIDENT_TRACE_LOADED, -1, mine);

  constexpr int kOuts = 32 / S;  // outputs per warp step
  const int o = lane / S, q = lane % S;
  float xv[32];
#pragma unroll
  for (int t = 0; t < 32; ++t) xv[t] = 0.f;
  int cnt = mine, cur = 0;
  unsigned live = (1u << mine) - 1u;  // kLiveMask: the live slots (bit s: slot s; mine <= S <= 8)
  int m3 = 0;                         // kLiveMask: the layer's mask word, s_flag[m3] (layer_end_mask)
  float alive = 0.f;  // max of this lane's outputs in the current layer (all >= 0): nonzero = alive
  float alive4[4] = {0.f, 0.f, 0.f, 0.f};  // quad shape: the same for each of the lane's 4 slots
  long long wait_t0 = 0;     // trace only (thread 0): the clock before this chunk's wait
  unsigned wait_clk = 0;     // trace only (thread 0): wait + barrier cycles in the current layer

  // Pair shape: iteration g consumes chunks g and g + 1 when both belong to layer k (nch = 2; warps
  // 0-7 compute the first, 8-15 the second, as the 8-warp kernel's warps 0-7 do), else chunk g alone
  // (a layer with an odd chunk count: its last chunk; warps 8-15 wait at the barriers only). Each
  // thread waits for the chunk that its warp reads. Other shapes: nch = 1, half = 0, wrow = warp.
  // Duo: iteration g consumes chunks g .. g + nch - 1 of layer k, nch = min(4, the layer's chunks left):
  // warps 4c .. 4c + 3 chunk g + c (32 rows each); a layer whose chunk count is not a multiple of 4
  // ends with an iteration of 1-3 chunks (the other warps meet the barriers only).
  const int half = kPair ? warp / kChunkWarps : 0;  // which chunk of the iteration this warp computes
  const int wrow = kPair ? warp % kChunkWarps : warp;  // the warp's place in its chunk
  int k = 0, c = 0;  // the (first) chunk of iteration g: layer k, chunk c
  for (int g = 0; k < layer_count;) {
    const int nch = kDuo    ? min(kDuoIterChunks, chunks - c)
                    : kVals ? min(kValsIterChunks, chunks - c)
                    : kPair && c + 1 < chunks ? 2 : 1;
    const bool computes = half < nch;  // warp-uniform
    const int gm = g + half;           // this warp's chunk (global index)
    if (kTrace && threadIdx.x == 0) wait_t0 = clock64();
    if constexpr (kBulk) {
      if (computes)
        mbar_wait(bar_a + 8u * unsigned(gm & (kRing - 1)), unsigned(gm / kRing) & 1u);  // chunk gm landed
    } else {
      cp_async_wait<kStages - 1>();  // the group of iteration g - P: chunk g
    }
    // ... for every thread's copies; and the chunks before g are consumed. The kLiveMask kernels (bulk copies:
    // each warp waits for its own chunk above) skip it in a layer's first iteration (c = 0): the layer end's
    // barrier (or the prologue's) came last, after every warp had consumed every chunk before g. (Duo since
    // session 31, quad and the vals family since session 32.)
    if (!kLiveMask || c != 0) __syncthreads();
    if (kTrace && threadIdx.x == 0) {
      wait_clk += unsigned(clock64() - wait_t0);
      if (g == 0) trace_record(trace, 2, JHDNN_RESIDENT_TRACE_FIRST_CHUNK, 0, mine);
    }
    // Chunk g + P into the stage of chunk g - 1. Pair shape: every chunk up to g + 3 (its slot's
    // previous chunk, h - 4 <= g - 1, was consumed before the barrier above): the two chunks of the
    // next iteration, copied while this one computes.
    // Duo: every chunk up to g + 7 (its slot's previous chunk, h - 8 <= g - 1, was consumed before the
    // barrier above): the 4 chunks in flight beyond the (up to) 4 being consumed.
    // (Thread 0 alone tracks ni, ik, ic here; after this, ni = g + kRing always.)
    // Valsfan (kFan): the same chunks (ni .. g + 15, at most 8, all > g + 7), but chunk g + 8 + w by
    // lane 0 of warp w = 0..7, in parallel: thread 0's 8 copies in a row (~47 SASS each, a MEMBAR and an
    // mbarrier arrive through the MIO queue that the other warps' loads fill) delay warp 0's own rows,
    // and the barrier waits for warp 0. Every thread keeps ni (block-uniform: g, k, c are); the chunk's
    // layer and index come from (k, c), the iteration's first chunk, moved on by 8 + w chunks.
    if constexpr (kFan) {
      if (warp < kValsIterChunks && lane == 0) {
        const int h = g + kValsIterChunks + warp;  // <= g + 15: its slot's chunk h - 16 <= g - 1 was consumed
        if (h >= ni) {                             // not issued yet (the prologue or an earlier iteration)
          int hk = k, hc = c + kValsIterChunks + warp;
#pragma unroll 1
          while (hc >= chunks) hc -= chunks, ++hk;  // (one step at n = 4096; up to 15 for a 1-chunk layer)
          if (hk < layer_count)
            bulk_chunk<true>(table.layer[hk], hc, hc == chunks - 1 ? last_rows : kChunkRows,
                             smem_a + unsigned(h & (kRing - 1)) * slot_b, bar_a + 8u * unsigned(h & (kRing - 1)));
        }
      }
      ni = g + kRing;  // every chunk up to g + 15 is issued now (or past the last layer)
    } else if constexpr (kPair) {
      if (threadIdx.x == 0) {
#pragma unroll 1
        for (; ni <= g + kRing - 1; ++ni) {  // pair: 2 chunks, 1 after a layer's odd last chunk; duo: nch
          if (ik < layer_count)
            bulk_chunk<kVals>(table.layer[ik], ic, ic == chunks - 1 ? last_rows : kChunkRows,
                              smem_a + unsigned(ni & (kRing - 1)) * slot_b, bar_a + 8u * unsigned(ni & (kRing - 1)));
          if (++ic == chunks) ic = 0, ++ik;
        }
      }
    } else if constexpr (kBulk) {
      if (ik < layer_count && threadIdx.x == 0)
        bulk_chunk(table.layer[ik], ic, ic == chunks - 1 ? last_rows : kChunkRows,
                   smem_a + unsigned(((g + kStages) & (kWSlots - 1)) * kChunkFloats * 4),
                   bar_a + 8u * unsigned((g + kStages) & (kWSlots - 1)));
    } else {
      if (ik < layer_count) issue_chunk(table.layer[ik], ic, ic == chunks - 1 ? last_rows : kChunkRows,
                                        wstage + ((g + kStages) & (kWSlots - 1)) * kChunkFloats);
      cp_async_commit();
    }
    if constexpr (!kPair) {
      if (++ic == chunks) ic = 0, ++ik;
    }

    const int rows_here = c + half == chunks - 1 ? last_rows : kChunkRows;  // of this warp's chunk
    const bool img_ok = q < cnt;
    // (one-image kernels; a lane without an image computes slot 0's, not stored. The kLiveMask kernels compute
    // every slot and do not use it; gating this load on !kLiveMask moved duo from 97 to 101 registers, so it stays.)
    const int slot = img_ok ? s_live[q] : 0;
    // Byte addresses in the shared window: the chunk's stage; this lane's image in the input and
    // output buffers (feature i at xin_q + (i << kShift)).
    unsigned st_a = smem_a + unsigned(gm & (kRing - 1)) * slot_b;
    asm volatile("" : "+r"(st_a));
    const unsigned xin_q = xbuf_a + unsigned((cur * xstride + slot) * 4);
    unsigned xout_q = xbuf_a + unsigned(((cur ^ 1) * xstride + slot) * 4);
    asm volatile("" : "+r"(xout_q));  // formed here once, not per store
    constexpr unsigned kShift = S == 8 ? 5 : S == 4 ? 4 : 3;  // log2(S * 4 bytes)
    constexpr unsigned kRowBytes = kRowStride * 4;

    // The warp's new-list flags: bit r = row kRowsPerWarp w + r starts a new list (rows past the chunk
    // or the warp's rows: 0); bit 0 forced, so the first step gathers. Warp-uniform, like everything
    // derived from it.
    const int my_row = wrow * kRowsPerWarp + lane;
    const bool new_list = kLaneRows == 0 && computes && lane < kRowsPerWarp && my_row < rows_here &&
                          (lds_s32(st_a + unsigned(my_row) * kRowBytes + kResidentWordFlags * 4) &
                           kResidentFlagNewList) != 0;
    const uint32_t starts = kLaneRows != 0 ? 1u : __ballot_sync(0xffffffffu, new_list) | 1u;
    // Step s covers rows kRowsPerWarp w + s * kOuts + (0 .. kOuts - 1); its flags are bits s * kOuts + ...
    // A step reuses the held features iff none of its rows starts a list and the previous step's
    // rows after its first did not either (then after that step every lane held one list).
    constexpr int kSteps = kRowsPerWarp / kOuts;
    constexpr uint32_t kMask = (1u << kOuts) - 1u;
    auto step_flags = [&](int s) { return (starts >> (s * kOuts)) & kMask; };
    auto reuses = [&](int s) { return s > 0 && step_flags(s) == 0u && (step_flags(s - 1) >> 1) == 0u; };

    // Gathers the list of the row at srow for this lane's image (padding: row n, zero): the row's list
    // slot (its byte offset from the stage's start in word 34), 8 x 16 bytes of int32 indices.
    auto gather = [&](unsigned srow) {
      const unsigned lst = st_a + unsigned(lds_s32(srow + kResidentWordList * 4));
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int4 id = lds_v4_s32(lst + 16u * u);
        xv[4 * u + 0] = lds_f32(xin_q + (unsigned(id.x) << kShift));
        xv[4 * u + 1] = lds_f32(xin_q + (unsigned(id.y) << kShift));
        xv[4 * u + 2] = lds_f32(xin_q + (unsigned(id.z) << kShift));
        xv[4 * u + 3] = lds_f32(xin_q + (unsigned(id.w) << kShift));
      }
    };
    // Bias, ReLU, clamp and the store of one output (row at srow) for this lane's image.
    auto act = [&](float acc) { return fminf(fmaxf(acc + bias, 0.f), clamp_max); };  // bias, ReLU, clamp
    auto finish = [&](unsigned srow, float acc, bool ok) {
      const float v = act(acc);
      if (ok) {
        const unsigned j = unsigned(lds_s32(srow + kResidentWordRow * 4));  // the output row
        sts_f32(xout_q + (j << kShift), v);
        alive = fmaxf(alive, v);  // one FMNMX (v is clamped to [0, clamp_max], so max != 0 iff some v != 0)
      }
    };
    // One step: output row0 + o, one fma chain t = 0..31.
    auto single = [&](int s) {
      const int row0 = wrow * kRowsPerWarp + s * kOuts;
      if (row0 >= rows_here) return;  // warp-uniform
      const int row = row0 + o;
      const bool row_ok = row < rows_here;
      // A row past the chunk's end reads row0 (staged, valid indices); its result
      // is not stored.
      const unsigned srow = st_a + unsigned(row_ok ? row : row0) * kRowBytes;
      if (!reuses(s)) gather(srow);
      float acc = 0.f;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const float4 w = lds_v4_f32(srow + 16u * u);  // lanes of one output: one address, a broadcast
        acc = __fmaf_rn(w.x, xv[4 * u + 0], acc);
        acc = __fmaf_rn(w.y, xv[4 * u + 1], acc);
        acc = __fmaf_rn(w.z, xv[4 * u + 2], acc);
        acc = __fmaf_rn(w.w, xv[4 * u + 3], acc);
      }
      finish(srow, acc, row_ok && img_ok);
    };

    // Steps in groups of G (4 or 2): when the group's G x kOuts rows have one list (every step after
    // its first reuses) and all lie in the chunk, each lane computes rows row0 + o, row0 + kOuts + o,
    // ... as G independent chains, interleaved (each still fma t = 0..31 in order: bitwise the
    // single-step results) on the same held features: more ILP against the FMA latency and 1 / G of
    // the per-step overhead. Otherwise smaller groups, down to single steps (S = 2: one step per warp).
    // Steps s .. s + g - 1 share one list (= every step after the first reuses: no flag in their
    // g x kOuts rows but the first row's) and all their rows are in the chunk.
    auto one_list_run = [&](int s, int g) {
      const uint32_t bits = (starts >> (s * kOuts)) & (g * kOuts >= 32 ? ~0u : (1u << (g * kOuts)) - 1u);
      return wrow * kRowsPerWarp + (s + g) * kOuts <= rows_here && (bits >> 1) == 0u;
    };
    auto chains = [&](auto g_tag, int s) {
      constexpr int G = decltype(g_tag)::value;
      const unsigned srow0 = st_a + unsigned(wrow * kRowsPerWarp + s * kOuts + o) * kRowBytes;
      if (!reuses(s)) gather(srow0);
      float acc[G];
#pragma unroll
      for (int r = 0; r < G; ++r) acc[r] = 0.f;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        float4 w[G];
#pragma unroll
        for (int r = 0; r < G; ++r) w[r] = lds_v4_f32(srow0 + unsigned(r * kOuts) * kRowBytes + 16u * u);
#pragma unroll
        for (int r = 0; r < G; ++r) acc[r] = __fmaf_rn(w[r].x, xv[4 * u + 0], acc[r]);
#pragma unroll
        for (int r = 0; r < G; ++r) acc[r] = __fmaf_rn(w[r].y, xv[4 * u + 1], acc[r]);
#pragma unroll
        for (int r = 0; r < G; ++r) acc[r] = __fmaf_rn(w[r].z, xv[4 * u + 2], acc[r]);
#pragma unroll
        for (int r = 0; r < G; ++r) acc[r] = __fmaf_rn(w[r].w, xv[4 * u + 3], acc[r]);
      }
#pragma unroll
      for (int r = 0; r < G; ++r) finish(srow0 + unsigned(r * kOuts) * kRowBytes, acc[r], img_ok);
    };
    auto pair = [&](int s) {
      if (one_list_run(s, 2))  // warp-uniform
        chains(std::integral_constant<int, 2>{}, s);
      else {
        single(s);
        single(s + 1);
      }
    };
    // Quad shape (kQuad: the pair kernel's 16 warps and ring, S = 8). Lane = (row o = lane >> 1 of
    // the warp's 16, the 4 slots 4h .. 4h + 3, h = lane & 1): per input t one ld.shared.v4 of the
    // 4 slots' features x(i_t, 4h .. 4h + 3) and 4 FMAs, so nothing is held across rows (no list
    // flags, no groups; rows with different lists cost the same instructions). Per warp-chunk: 8 +
    // 8 ld.shared.v4 of the row's indices and weights (8 rows per half-warp: 128 B, one wavefront
    // each; on the list-pack layout the indices come from the row's list slot, found through its
    // word 34, one broadcast when the warp's rows share their list) and 32 of features (one 32-byte
    // row per half-warp when the rows share their list), 128 FFMA, one st.shared.v4: ~113 shared wavefronts against the pair shape's 136 (ncu source
    // counters at 93dd8b5: its 32 weight ld.shared.v4 per warp-chunk take 2 wavefronts each, 64 of
    // the 136). Measured: 116 (d568d49), 106 with the permuted feature rows (ee8bd21). Every slot is
    // computed, live or not: a dead slot's column is never read as live (layer_end_mask ANDs the
    // layer's mask into the live slots, the write-out reads only live slots), and its values stay finite
    // (clamped). Each output is the same chain t = 0..31 as the other shapes.
    auto quad = [&]() {
      const int row0 = wrow * kRowsPerWarp;
      if (row0 >= rows_here) return;  // warp-uniform
      const int row = row0 + (lane >> 1);
      const bool row_ok = row < rows_here;
      const unsigned srow = st_a + unsigned(row_ok ? row : row0) * kRowBytes;
      const unsigned hb = unsigned(lane & 1) * 16u;
      const unsigned xin_h = xbuf_a + unsigned(cur * xstride * 4) + hb;
      // The row's list slot (list-pack layout, sparse.h): all rows of a run read the same slot.
      const unsigned lst = st_a + unsigned(lds_s32(srow + kResidentWordList * 4));
      float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
      auto fma4 = [&](float w, float4 xf) {
        a0 = __fmaf_rn(w, xf.x, a0);
        a1 = __fmaf_rn(w, xf.y, a1);
        a2 = __fmaf_rn(w, xf.z, a2);
        a3 = __fmaf_rn(w, xf.w, a3);
      };
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int4 id = lds_v4_s32(lst + 16u * u);
        const float4 w = lds_v4_f32(srow + 16u * u);
        const float4 x0 = lds_v4_f32(xin_h + (unsigned(id.x) << 5));
        const float4 x1 = lds_v4_f32(xin_h + (unsigned(id.y) << 5));
        const float4 x2 = lds_v4_f32(xin_h + (unsigned(id.z) << 5));
        const float4 x3 = lds_v4_f32(xin_h + (unsigned(id.w) << 5));
        fma4(w.x, x0);
        fma4(w.y, x1);
        fma4(w.z, x2);
        fma4(w.w, x3);
      }
      if (row_ok) {
        const float4 v = make_float4(act(a0), act(a1), act(a2), act(a3));
        const unsigned j = unsigned(lds_s32(srow + kResidentWordRow * 4));  // the output's feature row
        sts_v4_f32(xbuf_a + unsigned((cur ^ 1) * xstride * 4) + hb + (j << 5), v);
        alive4[0] = fmaxf(alive4[0], v.x);
        alive4[1] = fmaxf(alive4[1], v.y);
        alive4[2] = fmaxf(alive4[2], v.z);
        alive4[3] = fmaxf(alive4[3], v.w);
      }
    };
    // Duo shape (kDuo: 16 warps, 4 per chunk, 32 rows each; S = 8). Lane = (row pair p = lane >> 1:
    // rows 2p and 2p + 1 of the warp's 32, slots 4h .. 4h + 3, h = lane & 1). When both rows read the
    // same list slot (word 34 equal: the challenge's 16-row lists never split an aligned pair), one
    // ld.shared.v4 of features per input feeds 8 FMAs (quad: 4); the warp takes that path only when
    // every lane's pair shares its list (warp-uniform: no divergent loads), else each row loads its
    // own. Per warp and chunk on the challenge layers: 8 index + 16 weight + 32 feature ld.shared.v4
    // and 256 FFMA for 32 rows (quad: 96 ld.shared.v4 and 256 FFMA for the same rows). Dead slots are
    // computed as quad's are (never read as live). Per output the same chain t = 0..31.
    // Which row of the pair is "a" (the first weight load): 2p + 1 when bit 2 of p is set, else 2p.
    // Rows are 144 bytes (36 words) apart, so row r's 16-byte piece u sits in bank group (r + u) & 7;
    // a half-warp's 8 pairs then load rows 2p + ((p >> 2) & 1) = 8 distinct groups (one wavefront),
    // where the 8 even rows 2p would hit 4 groups twice (two). The chains are unchanged (each output
    // its own accumulator, t = 0..31), only which register holds which row.
    auto duo = [&]() {
      const int row0 = wrow * 2 * kRowsPerWarp;
      if (row0 >= rows_here) return;  // warp-uniform
      const int pr = lane >> 1;
      const int ra = row0 + 2 * pr + ((pr >> 2) & 1), rb = ra ^ 1;  // row0 is even: rb is the pair's other row
      const bool a_ok = ra < rows_here, b_ok = rb < rows_here;  // a row past the chunk reads row0's, not stored
      const unsigned sa = st_a + unsigned(a_ok ? ra : row0) * kRowBytes;
      const unsigned sb = st_a + unsigned(b_ok ? rb : row0) * kRowBytes;
      const unsigned la = unsigned(lds_s32(sa + kResidentWordList * 4));
      const unsigned lb = unsigned(lds_s32(sb + kResidentWordList * 4));
      // b absent: its (unstored) result may use a's list; a absent (rb = 2p valid, ra = 2p + 1 past
      // the chunk): a computes row0's, and b takes a's list only if it is b's own (la == lb).
      const bool one = !b_ok || la == lb;
      const unsigned hb = unsigned(lane & 1) * 16u;
      const unsigned xin_h = xbuf_a + unsigned(cur * xstride * 4) + hb;
      float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
      two_row_block<5>(one, st_a + la, st_a + lb, sa, sb, xin_h, a, b);
      const unsigned xout_h = xbuf_a + unsigned((cur ^ 1) * xstride * 4) + hb;
      auto put = [&](bool ok, unsigned srow, const float (&acc)[4]) {
        if (!ok) return;
        const float4 v = make_float4(act(acc[0]), act(acc[1]), act(acc[2]), act(acc[3]));
        sts_v4_f32(xout_h + (unsigned(lds_s32(srow + kResidentWordRow * 4)) << 5), v);  // the output's row
        alive4[0] = fmaxf(alive4[0], v.x);
        alive4[1] = fmaxf(alive4[1], v.y);
        alive4[2] = fmaxf(alive4[2], v.z);
        alive4[3] = fmaxf(alive4[3], v.w);
      };
      put(a_ok, sa, a);
      put(b_ok, sb, b);
    };
    // Vals shape (kVals: 16 warps, 2 per chunk, 64 rows each; S = 4; the vals-pack layout). Lane p =
    // rows 2p and 2p + 1 of the warp's 64 (in either order, below), all 4 images: per input one ld.shared.v4 of the 4 images'
    // features (a 16-byte feature row at S = 4) feeds both rows' 4 FMAs, as duo's lane does at S = 8.
    // A row's 16-byte header (output row, flags, list-slot and value-slot offsets) comes in one
    // ld.shared.v4; its weights from its value slot (the challenge's chunks have one: a broadcast).
    // When every lane's two rows read one list slot (warp-uniform, __all_sync), one index load per 4
    // inputs serves both, else each row loads its own (unroll 2). A row past the chunk computes the
    // other row's (or row0's) values and is not stored. Dead slots are computed like live ones (never
    // read as live). Per output the same chain t = 0..31 from 0, then bias, ReLU, clamp.
    auto vals = [&]() {
      const int row0 = wrow * kValsRowsPerWarp;
      if (row0 >= rows_here) return;  // warp-uniform
      // Row a (the first header load) is 2p + 1 when bit 2 of p is set, else 2p: headers are 16 bytes,
      // so header r sits in bank group r & 7, and a half-warp's 16 first loads then cover the 8 groups
      // twice (2 wavefronts) where 16 even rows would cover 4 groups 4 times (4). Only which register
      // holds which row changes.
      const int ra = row0 + 2 * lane + ((lane >> 2) & 1), rb = ra ^ 1;  // row0 is even: the pair's other row
      const bool a_ok = ra < rows_here, b_ok = rb < rows_here;
      // A row past the chunk computes another row's values (not stored): a absent, row0's; b absent, a's.
      // The shared-list path below is taken only when both headers name one list slot, so b never uses
      // a list that is not its own.
      const int4 ha = lds_v4_s32(st_a + unsigned((a_ok ? ra : row0) * kResidentValsHeadBytes));
      const int4 hb = b_ok ? lds_v4_s32(st_a + unsigned(rb * kResidentValsHeadBytes)) : ha;
      const unsigned va = st_a + unsigned(ha.w), vb = st_a + unsigned(hb.w);  // value slots
      const unsigned xin = xbuf_a + unsigned(cur * xstride * 4);
      float a[4] = {0.f, 0.f, 0.f, 0.f}, b[4] = {0.f, 0.f, 0.f, 0.f};
      two_row_block<0>(ha.z == hb.z, st_a + unsigned(ha.z), st_a + unsigned(hb.z), va, vb, xin, a, b);
      const unsigned xout = xbuf_a + unsigned((cur ^ 1) * xstride * 4);
      auto put = [&](bool ok, int frow, const float (&acc)[4]) {
        if (!ok) return;
        const float4 v = make_float4(act(acc[0]), act(acc[1]), act(acc[2]), act(acc[3]));
        sts_v4_f32(xout + (unsigned(frow) << 4), v);  // the output's feature row
        alive4[0] = fmaxf(alive4[0], v.x);
        alive4[1] = fmaxf(alive4[1], v.y);
        alive4[2] = fmaxf(alive4[2], v.z);
        alive4[3] = fmaxf(alive4[3], v.w);
      };
      put(a_ok, ha.x, a);
      put(b_ok, hb.x, b);
    };
    // The plan per warp-chunk (tests/test_sparse_resident.cpp emulates it, emulate_resident):
    //   8 warps x 16 rows: S = 8 four steps (a 4-chain group, else two pairs), S = 4 one pair,
    //                      S = 2 one step;
    //   pair: each half as the 8-warp kernel on its chunk; warps 8-15 skip a layer's odd last chunk;
    //   quad: each half's 8 warps x 16 rows, one row per lane pair (emulated lane by lane);
    //   duo: each quarter's 4 warps x 32 rows, a row pair per lane pair (emulated lane by lane).
    if constexpr (kQuad) {
      if (computes) quad();
    } else if constexpr (kDuo) {
      if (computes) duo();
    } else if constexpr (kVals) {
      if (computes) vals();
    } else if (computes) {          // warp-uniform; true but for the pair shape's idle half
      if constexpr (kSteps == 4) {  // S = 8
        if (one_list_run(0, 4))     // the official layers: every warp-chunk
          chains(std::integral_constant<int, 4>{}, 0);
        else {
          pair(0);
          pair(2);
        }
      } else if constexpr (kSteps == 2) {  // S = 4
        pair(0);
      } else {  // S = 2
        static_assert(kSteps == 1, "S is 2, 4 or 8");
        single(0);
      }
    }

    if (kPair ? c + nch == chunks : c == chunks - 1) {  // the layer is done in this CTA once every warp is here
      // kLiveMask: one barrier (layer_end_mask). The lane's 4 slots: quad and duo 4h .. 4h + 3 with h = lane & 1
      // (S = 8), vals and valsfan all 4 (S = 4).
      if constexpr (kLiveMask) {
        cnt = layer_end_mask<S>(alive4, kVals ? 0 : 4 * (lane & 1), s_flag, m3, live, counts, k, layer_count, s_base,
                                s_live);
      } else {  // one image per lane: its slot is s_live[q], so the list is kept in every layer
        if (alive != 0.f) s_flag[slot] = 1;  // benign race: every writer writes 1
        alive = 0.f;
        __syncthreads();
        if (threadIdx.x < 32) {  // warp 0: the compaction, then thread 0 the count
          const int m = compact_live_warp(s_live, s_flag, cnt);
          if (threadIdx.x == 0) {
            *s_cnt = m;
            count_survivors(counts, k, layer_count, m, s_base);
          }
        }
        __syncthreads();
        cnt = *s_cnt;
      }
      cur ^= 1;
      if (kTrace && threadIdx.x == 0) {
        trace_record(trace, 3 + k, JHDNN_RESIDENT_TRACE_LAYER, k, cnt, wait_clk);
        wait_clk = 0;
      }
      if (cnt == 0) {  // block-uniform: the slice is empty, nothing more to compute or write
        if constexpr (kPair) {  // the chunks in flight (g + nch .. g + kRing - 1, those issued) land before the exit
          const int total = layer_count * chunks;
          for (int h = g + nch; h < g + kRing && h < total; ++h)
            mbar_wait(bar_a + 8u * unsigned(h & (kRing - 1)), unsigned(h / kRing) & 1u);
        } else if constexpr (kBulk) {  // the chunks in flight (g + 1 .. g + P, those issued) land before the exit
          const int total = layer_count * chunks;
          for (int h = g + 1; h <= g + kStages && h < total; ++h)
            mbar_wait(bar_a + 8u * unsigned(h & (kWSlots - 1)), unsigned(h / kWSlots) & 1u);
        } else {
          cp_async_wait<0>();
        }
        if (kTrace && threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, k, 0);
        return;
      }
    }
    if constexpr (kPair) {
      g += nch;
      c += nch;
      if (c == chunks) c = 0, ++k;
    } else {
      ++g;
      if (++c == chunks) c = 0, ++k;
    }
  }
  if constexpr (!kBulk) cp_async_wait<0>();  // (empty groups only: every chunk was consumed)

  // Write-out: the survivors' features (buffer cur) to y at column r0 + slot, and the next list.
  write_survivors<S, kCtaThreads>(xbuf + cur * xstride, s_live, cnt, s_base, n, r0, y, ldy, ids_in, rows_out, ids_out,
                                  max_active, table.image_major);
  if constexpr (kTrace) {  // the exit once every thread's share of the write-out is issued
    __syncthreads();
    if (threadIdx.x == 0)
      trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, layer_count - 1, cnt);
  }
}

// Four +0.0f that no code writes (static storage: zero), read by vals4w as the starts of its rows' chains where a
// lane's 4 rows share one list and one value slot: being loaded, they keep ptxas from computing equal rows once.
__device__ float4 g_resident_row_zeros;

// Vals4w (JHDNN_RESIDENT_KERNEL=vals4w; session 20): S = 4 on the vals-pack copies, like vals, but a lane
// holds 4 rows x the 4 images (one 16-byte feature load per input feeds 16 FMAs, vals' 8) and each of the
// 16 warps consumes a whole 128-row chunk, so a layer of 32 chunks is two chunks per warp. The ring has R
// slots (16 <= R <= 32, as many as fit next to the features: 30 for the challenge's 3,328-byte chunks at
// n = 4096), chunk h in slot h % R, and the warp that consumed chunk h refills its slot with chunk h + R:
// there is no barrier inside a layer, only the layer end's (layer_end_mask), so a warp that finishes
// its chunk early starts its next one instead of waiting for the slowest warp (vals: a barrier per 8
// chunks). In layer k warp w takes chunk w, then chunk 16 + ((w + R) & 15): chunks c and c + R of one
// layer, which share a slot, are then read by the same warp (c < 16 <= c + R < 32 gives warp c both), so
// every slot's reads and its next copy stay in one warp inside a layer, and across layers the layer
// end's barrier orders them. The mbarrier phases cannot run ahead: chunk h + R is copied only after
// chunk h was waited for and consumed, and its consumer (the same warp, or a warp after the layer end)
// waits after that. Same chains as every kernel: each output acc = fma(w_t, x_t, acc), t = 0..31 from 0.
//
// kWarpCount (session 33): 16, or 8 for vals4w8 (JHDNN_RESIDENT_KERNEL=vals4w8; the default at n <= 1024 with
// sliceImages 0 since session 33). With 8 warps the CTA holds one 4-image slice and two CTAs share an SM (<= 128 registers, the ring
// sized to half the SM's shared memory: resident_vals4w8_budget), so an SM still holds 8 images, as duo's one CTA
// does, but every warp computes a whole chunk for 4 images with a lane of 4 rows x 4 images (duo: 2 x 4). The
// order above holds for any power-of-two W = kWarpCount and R >= W: warp w takes chunk w, then chunk
// W + ((w + R) & (W - 1)); chunks c1 < c2 of a layer share a slot only if c2 = c1 + R (a layer has <= 2W <= 2R
// chunks), so c1 < W is warp c1's first chunk and c2, in [W, 2W), its second.
//
// kHanded (session 41): the handed schedule's item loop compiled in (block_layers != 0 runs it; see "Vals4w: slices
// handed between CTAs" in src/sparse/README.md). The untraced launches of one CTA per slice (block_layers 0: every
// call whose slices fit the CTAs at once, as at N = 1024) run the instantiation without it: under the 128-register
// cap ptxas then holds what the item loop made it recompute in every pass (the ring's barrier base, the pass-0
// chunk), 6 SASS instructions fewer per kW1 warp-chunk. Traced launches always run kHanded's (one instantiation
// fewer; the trace is for tests and diagnostics).
template <bool kTrace, int kWarpCount, bool kHanded>
__global__ void __launch_bounds__(32 * kWarpCount, 16 / kWarpCount)
dnn_resident_vals4w_kernel(const __grid_constant__ ResidentTable table, int layer_count, int n, float bias,
                           float clamp_max, int* __restrict__ counts, const int* __restrict__ rows_in,
                           const int* __restrict__ ids_in, const float* __restrict__ x, int64_t ldx,
                           float* __restrict__ y, int64_t ldy, int* __restrict__ rows_out, int* __restrict__ ids_out,
                           int slice, int max_active, unsigned slot_bytes, int ring, int block_layers,
                           int* __restrict__ sched, float* __restrict__ park,
                           jhdnnSparseDnnResidentTraceRecord_t* __restrict__ trace) {
  constexpr int S = kResidentValsS;
  constexpr int kCtaThreads = 32 * kWarpCount;  // 16 warps (vals4w) or 8 (vals4w8)
  constexpr int kWarpsHere = kWarpCount;
  static_assert((kWarpsHere == 16 || kWarpsHere == 8) && kResidentVals4wMaxChunks >= 2 * kWarpsHere,
                "at most two chunks per warp and layer");
  static_assert(32 + 2 * kResidentVals4wMaxSlots <= kResidentVals4wMisc, "the mbarriers fit the misc ints");
  if (kTrace && block_layers == 0 && threadIdx.x == 0) trace_record(trace, 0, JHDNN_RESIDENT_TRACE_ENTRY, -1, 0);
  extern __shared__ __align__(16) unsigned char smem[];
  const unsigned w_bytes = unsigned(ring) * slot_bytes;
  int* misc = reinterpret_cast<int*>(smem + w_bytes);
  int* s_live = misc;       // [4]: the survivors' slots after the last layer, in slot order (layer_end_mask)
  int* s_flag = misc + 8;   // [3]: the layers' mask words (layer_end_mask; zeroed by init_slice_state)
  int* s_base = misc + 17;  // the first output slot of this CTA's survivors
  float* xbuf = reinterpret_cast<float*>(smem + w_bytes + kResidentVals4wMisc * 4);
  unsigned smem_a = unsigned(__cvta_generic_to_shared(smem));
  asm volatile("" : "+r"(smem_a));
  const unsigned xbuf_a = smem_a + w_bytes + unsigned(kResidentVals4wMisc * 4);
  const unsigned bar_a = smem_a + w_bytes + 32u * 4u;  // slot s's mbarrier at bar_a + 8 s
  const int xstride = (n + 1) * S;

  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int count = min(counts[0], max_active);
  const int units = count / slice + (count % slice != 0 ? 1 : 0);  // the slices with images (no overflow)
  // The schedule: one CTA per slice for the whole call (block_layers 0), or the call's layers in blocks of
  // block_layers (< 0: chosen here, device_block_layers), each (slice, block) an item that the CTAs take in turn
  // (handed; resident_vals4w_block_layers).
  const bool handed = kHanded && block_layers != 0;
  const int bl = !kHanded           ? layer_count
                 : block_layers > 0 ? block_layers
                 : block_layers < 0
                     ? device_block_layers<kCtaThreads>(units, int(gridDim.x), layer_count,
                                                        reinterpret_cast<unsigned long long*>(misc + 22))
                     : layer_count;
  const int blocks = (layer_count + bl - 1) / bl;
  if (kTrace && handed && threadIdx.x == 0)  // the slices without images: their records as the one-CTA schedule's
    for (int e = units + int(blockIdx.x); e < (max_active + slice - 1) / slice; e += int(gridDim.x)) {
      trace_record_at(trace, e, 0, JHDNN_RESIDENT_TRACE_ENTRY, -1, 0);
      trace_record_at(trace, e, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, -1, 0);
    }
  if (!handed && int(blockIdx.x) >= units) {
    if (kTrace && threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, -1, 0);
    return;
  }
  const int chunks = (n + kChunkRows - 1) / kChunkRows;
  const int last_rows = n - (chunks - 1) * kChunkRows;
  // Handed: [0] the item thread 0 took, [1] its slice's progress word, [2] the slices (units)
  int* s_claim = misc + 18;
  if (threadIdx.x == 0) {
    s_claim[2] = units;
    // The ring's mbarriers, once: every item starts each slot at an even phase (the item end below pads a slot
    // whose phases in the item were odd), so the phase arithmetic starts from 0 in every item.
    for (int st = 0; st < ring; ++st) mbar_init(bar_a + 8u * unsigned(st));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }  // (the first item's barrier after init_slice_state orders them before any use)
  for (int item = int(blockIdx.x);;) {
    int word = 0;  // the slice's progress word: (blocks done) << 8 | live slots (handed, blocks after the first)
    if (handed) {
      // Thread 0 takes the next item (block-major: every slice's block b before any block b + 1) and waits until
      // the slice's block before it is done: that item was taken earlier by a running CTA (taking means running),
      // which waits only for items taken before it, so the waits end whether or not all CTAs fit at once.
      __syncthreads();  // every thread is done with the previous item (its reads of s_claim, misc and the ring)
      if (threadIdx.x == 0) {
        const int it = atomicAdd(sched, 1);
        if (it < units * blocks && it >= units)
          while (((word = acquire_progress(sched + 1 + it % units)) >> 8) < it / units) __nanosleep(256);
        s_claim[0] = it;
        s_claim[1] = word;
      }
      __syncthreads();
      item = s_claim[0];
      word = s_claim[1];
      if (item >= units * blocks) return;
    }
    const int b = item / units, u = item - b * units;  // (one CTA per slice: b = 0, u = blockIdx.x)
    const int r0 = u * slice, mine = min(slice, count - r0);
    // k0 and kn through a warp reduction (REDUX: a uniform register), so that the layer loop below stays uniform
    // for ptxas and xin stays in the feature loads' [R + UR] address (item came from shared memory).
    const int k0 = __reduce_min_sync(0xffffffffu, b * bl);
    const int kn = __reduce_min_sync(0xffffffffu, min(bl, layer_count - k0));
    unsigned live = b == 0 ? (1u << mine) - 1u : unsigned(word) & 0xffu;  // the live slots (bit s: slot s)
    if (live == 0u) continue;  // block-uniform (handed): the slice emptied in an earlier block
    if (kTrace && handed && b == 0 && threadIdx.x == 0)
      trace_record_at(trace, u, 0, JHDNN_RESIDENT_TRACE_ENTRY, -1, 0, 0, unsigned(bl));
    init_slice_state<S>(misc, xbuf, n, rows_in, r0, mine);
    __syncthreads();
    const int total = kn * chunks;
    // Prologue: the item's chunk t by thread t < R (slot t, its first phase), while the features load.
    if (int(threadIdx.x) < ring && int(threadIdx.x) < total) {
      const int hk = int(threadIdx.x) / chunks, hc = int(threadIdx.x) - hk * chunks;
      bulk_chunk<true>(table.layer[k0 + hk], hc, hc == chunks - 1 ? last_rows : kChunkRows,
                       smem_a + unsigned(threadIdx.x) * slot_bytes, bar_a + 8u * unsigned(threadIdx.x));
    }
    if (b == 0)
      load_slice_features<S, kCtaThreads>(xbuf, misc + 24, x, ldx, n, table.image_major);
    else
      unpark_features<kCtaThreads>(xbuf, park + int64_t(u) * xstride, xstride);
    __syncthreads();
    if (kTrace && b == 0 && threadIdx.x == 0) trace_record_at(trace, u, 1, JHDNN_RESIDENT_TRACE_LOADED, -1, mine);
    // Lane p's rows of a chunk: r_i = 4p + ((i + (p >> 1)) & 3), i = 0..3, resident_vals4w_row (resident_banks.h says
    // why that order; tools/spdnn's bank_labels names neurons by it). Written out here: through the helper, ptxas 13.0
    // compiled vals4w8's plain instantiation differently (the same arithmetic; the SASS compared with cmp).
    // Their headers' byte offsets in the slot, 16 r_i, computed once: held in registers (opaque to ptxas, which
    // otherwise recomputed them from the thread index in every pass's header and again in its epilogue: a kW1
    // warp-chunk's header 69 -> 52 and epilogue 158 -> 144 SASS instructions with them held, bench/results/cb207c6/).
    unsigned hoff[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      asm volatile("mov.b32 %0, %1;"
                   : "=r"(hoff[i])
                   : "r"(unsigned(4 * lane + ((i + (lane >> 1)) & 3)) * unsigned(kResidentValsHeadBytes)));
    const float4 zero4 = g_resident_row_zeros;  // +0.0f x 4, opaque to ptxas (the shared-values path, below)
    const float zero[4] = {zero4.x, zero4.y, zero4.z, zero4.w};
    const int c_second = kWarpsHere + ((warp + ring) & (kWarpsHere - 1));  // the warp's second chunk of a layer
    // Per pass, held as hoff (ptxas recomputed them from the thread index in every pass): the chunk and its last
    // header's offset, 16 (rows - 1).
    unsigned cp[2], hlp[2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int cc = p == 0 ? warp : c_second;
      asm volatile("mov.b32 %0, %1;" : "=r"(cp[p]) : "r"(unsigned(cc)));
      asm volatile("mov.b32 %0, %1;"
                   : "=r"(hlp[p])
                   : "r"(unsigned((cc == chunks - 1 ? last_rows : kChunkRows) - 1) * unsigned(kResidentValsHeadBytes)));
    }
    auto act = [&](float acc) { return fminf(fmaxf(acc + bias, 0.f), clamp_max); };
    auto fma4 = [](float (&acc)[4], float w, float4 xf) {
      acc[0] = __fmaf_rn(w, xf.x, acc[0]);
      acc[1] = __fmaf_rn(w, xf.y, acc[1]);
      acc[2] = __fmaf_rn(w, xf.z, acc[2]);
      acc[3] = __fmaf_rn(w, xf.w, acc[3]);
    };
    // The warp's two chunks c of a layer (pass 0: warp, pass 1: c_second): chunk h = k x chunks + c waits in slot
    // h % ring for phase h / ring, kept here from layer to layer (+ chunks: dq phases and dr slots, one carry), and
    // its refill h + ring is chunk hc of layer k + q, q and hc fixed per pass. Dividing by the runtime ring and chunks
    // in every layer cost ~54 instructions per warp-chunk, 0.10 per FFMA (vals4w8's ncu, bench/results/cf4bae7/).
    const int dq = chunks / ring, dr = chunks - dq * ring;
    // The refill's layer offset q, chunk hc and that chunk's rows, per pass, held as cp.
    unsigned qp[2], hcp[2], hrp[2];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const int cc = (p == 0 ? warp : c_second) + ring, q = cc / chunks, hc = cc - q * chunks;
      asm volatile("mov.b32 %0, %1;" : "=r"(qp[p]) : "r"(unsigned(q)));
      asm volatile("mov.b32 %0, %1;" : "=r"(hcp[p]) : "r"(unsigned(hc)));
      asm volatile("mov.b32 %0, %1;" : "=r"(hrp[p]) : "r"(unsigned(hc == chunks - 1 ? last_rows : kChunkRows)));
    }
    int sl0 = warp % ring, use0 = warp / ring, sl1 = c_second % ring, use1 = c_second / ring;
    int cnt = __popc(live), cur = 0;
    int m3 = 0;                              // the layer's mask word, s_flag[m3] (layer_end_mask)
    float alive4[4] = {0.f, 0.f, 0.f, 0.f};  // per image slot: the max of this lane's outputs in the layer
    unsigned wait_clk = 0;                   // trace only (thread 0): wait + barrier cycles in the layer
    int k_done = kn;                         // the layers run (+ 1 past the one where the slice emptied)
    for (int k = 0; k < kn; ++k) {
      const unsigned xin = xbuf_a + unsigned(cur * xstride * 4);
      const unsigned xout = xbuf_a + unsigned((cur ^ 1) * xstride * 4);
      unsigned xo;  // xout, held (ptxas recomputed it from the parameters for each row's store)
      asm volatile("mov.b32 %0, %1;" : "=r"(xo) : "r"(xout));
#pragma unroll 1
      for (int pass = 0; pass < 2; ++pass) {
        const int c = int(pass == 0 ? cp[0] : cp[1]);
        if (c >= chunks) continue;  // warp-uniform
        const int use = pass == 0 ? use0 : use1, sl = pass == 0 ? sl0 : sl1;
        const int hk = k + int(pass == 0 ? qp[0] : qp[1]), hc = int(pass == 0 ? hcp[0] : hcp[1]);  // the refill's
        const int hrows = int(pass == 0 ? hrp[0] : hrp[1]);                                          // layer, chunk, rows
        const unsigned st_a = smem_a + unsigned(sl) * slot_bytes, bar = bar_a + 8u * unsigned(sl);
        long long t0 = 0;
        if (kTrace && threadIdx.x == 0) t0 = clock64();
        mbar_wait(bar, unsigned(use) & 1u);  // chunk h landed
        if (kTrace && threadIdx.x == 0) {
          wait_clk += unsigned(clock64() - t0);
          if (k0 + k == 0 && pass == 0) trace_record_at(trace, u, 2, JHDNN_RESIDENT_TRACE_FIRST_CHUNK, 0, mine);
        }
        // The 4 headers (a row past the chunk reads the chunk's last row: computed, not stored).
        int4 hd[4];
        bool ok[4];
        const unsigned hlast = pass == 0 ? hlp[0] : hlp[1];  // the chunk's last header, 16 (rows_here - 1)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          ok[i] = hoff[i] <= hlast;
          hd[i] = lds_v4_s32(st_a + min(hoff[i], hlast));
        }
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[i][e] = 0.f;
        // The list entries are byte offsets (sparse.h, the vals-pack layout): with xin block-uniform, ptxas folds it
        // into the load's [R + UR] address, so a feature load needs no address instruction (a LEA each before).
        auto feat = [&](int off) { return lds_v4_f32(xin + unsigned(off)); };
        const bool one = hd[0].z == hd[1].z && hd[0].z == hd[2].z && hd[0].z == hd[3].z;
        // The 4 rows' weights from one value slot too (the vals pack stores a run of consecutive rows with bitwise
        // equal values once: the challenge's chunks have one slot). Then one broadcast ld.shared.v4 per 4 inputs serves
        // all 4 rows: 8 per warp-chunk instead of 32, 16 shared wavefronts instead of 64 of the ~236 (vals4w8's ncu,
        // bench/results/cf4bae7/). The FMAs are the same, in the same order: bitwise the 4-slot path.
        const bool one_w = hd[0].w == hd[1].w && hd[0].w == hd[2].w && hd[0].w == hd[3].w;
        // Every lane's 4 rows on one list (kW1: and one value slot).
        // Group u + 1's indices and weights are loaded in the source right after group u's features, before
        // group u's 64 FMAs, so that group u + 1's feature loads find their addresses ready. ptxas interleaves
        // the loads with the FMAs by itself: this order changed ~10 of the kernel's 2,424 SASS instructions
        // (e067f59 against 840b282), and it is the code measured since (bench/results/05f80af/, 5be2222/).
        auto one_list = [&](auto w1_tag) {
          constexpr bool kW1 = decltype(w1_tag)::value;
          constexpr int kW = kW1 ? 1 : 4;  // weight rows loaded per group
          if constexpr (kW1) {
            // With one list and one value slot the 4 rows' chains are equal, and ptxas, seeing the same registers,
            // computes one of them (128 FFMA a warp-chunk, not 512: seen in the SASS). That is the equal-row
            // reduction (docs/sparse.md), a question to the issue's filer and not the default's. So row i's chains
            // start from zero[i], zeros ptxas cannot see through (g_resident_row_zeros), and every row is computed,
            // as for any other rows: fma(w, x, +0) is fma(w, x, 0.f), bitwise.
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[i][e] = zero[i];
          }
          const unsigned ls = st_a + unsigned(hd[0].z);
          int4 id = lds_v4_s32(ls);
          float4 w[kW];
#pragma unroll
          for (int i = 0; i < kW; ++i) w[i] = lds_v4_f32(st_a + unsigned(hd[i].w));
#pragma unroll
          for (int u = 0; u < 8; ++u) {
            const float4 x0 = feat(id.x), x1 = feat(id.y), x2 = feat(id.z), x3 = feat(id.w);
            float4 wn[kW];
            if (u < 7) {
              id = lds_v4_s32(ls + 16u * (u + 1));
#pragma unroll
              for (int i = 0; i < kW; ++i) wn[i] = lds_v4_f32(st_a + unsigned(hd[i].w) + 16u * (u + 1));
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) fma4(acc[i], w[kW1 ? 0 : i].x, x0);
#pragma unroll
            for (int i = 0; i < 4; ++i) fma4(acc[i], w[kW1 ? 0 : i].y, x1);
#pragma unroll
            for (int i = 0; i < 4; ++i) fma4(acc[i], w[kW1 ? 0 : i].z, x2);
#pragma unroll
            for (int i = 0; i < 4; ++i) fma4(acc[i], w[kW1 ? 0 : i].w, x3);
            if (u < 7) {
#pragma unroll
              for (int i = 0; i < kW; ++i) w[i] = wn[i];
            }
          }
        };
        if (__all_sync(0xffffffffu, one && one_w)) {  // warp-uniform, as the two below
          one_list(std::true_type{});
        } else if (__all_sync(0xffffffffu, one)) {
          one_list(std::false_type{});
        } else {  // each row its own list
#pragma unroll
          for (int i = 0; i < 4; ++i) {
#pragma unroll 2
            for (int u = 0; u < 8; ++u) {
              const int4 id = lds_v4_s32(st_a + unsigned(hd[i].z) + 16u * u);
              const float4 w = lds_v4_f32(st_a + unsigned(hd[i].w) + 16u * u);
              fma4(acc[i], w.x, feat(id.x));
              fma4(acc[i], w.y, feat(id.y));
              fma4(acc[i], w.z, feat(id.z));
              fma4(acc[i], w.w, feat(id.w));
            }
          }
        }
        // Every lane's reads of the slot are done: lane 0 refills it with chunk h + R (chunk hc of layer hk;
        // nothing past the last layer). The cross-proxy fence in bulk_chunk orders the
        // warp's generic reads (made visible to lane 0 by the __syncwarp) before the async copy's writes.
        __syncwarp();
        // (The test is h + R < total, equal to hk < layer_count: with hk in the test too, ptxas 13.0 stopped folding
        // xin into the feature loads' [R + UR] address, 32 IADD3 a warp-chunk more, since 58bafbf.)
        if (lane == 0 && k * chunks + c + ring < total)
          bulk_chunk<true>(table.layer[k0 + hk], hc, hrows, st_a, bar);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if (!ok[i]) continue;
          const float4 v = make_float4(act(acc[i][0]), act(acc[i][1]), act(acc[i][2]), act(acc[i][3]));
          sts_v4_f32(xo + (unsigned(hd[i].x) << 4), v);  // the output's feature row
          alive4[0] = fmaxf(alive4[0], v.x);
          alive4[1] = fmaxf(alive4[1], v.y);
          alive4[2] = fmaxf(alive4[2], v.z);
          alive4[3] = fmaxf(alive4[3], v.w);
        }
      }
      // The layer end: one barrier, as duo's (layer_end_mask; the lane's 4 slots are the slice's 4), the count a
      // fire-and-forget RED before the last layer (valsfan's).
      long long tb = 0;
      if (kTrace && threadIdx.x == 0) tb = clock64();
      // (cnt through REDUX, uniform: with the break below on it, ptxas otherwise took the loop for divergent.)
      cnt = __reduce_max_sync(0xffffffffu,
                              layer_end_mask<S>(alive4, 0, s_flag, m3, live, counts + k0, k, layer_count - k0, s_base,
                                                s_live));
      cur ^= 1;
      sl0 += dr, use0 += dq, sl1 += dr, use1 += dq;  // the next layer's chunks: h + chunks
      if (sl0 >= ring) sl0 -= ring, ++use0;
      if (sl1 >= ring) sl1 -= ring, ++use1;
      if (kTrace && threadIdx.x == 0) {
        wait_clk += unsigned(clock64() - tb);
        trace_record_at(trace, u, 3 + k0 + k, JHDNN_RESIDENT_TRACE_LAYER, k0 + k, cnt, wait_clk);
        wait_clk = 0;
      }
      if (cnt == 0) {  // block-uniform: the slice is empty; the chunks in flight land before it ends
        const int h = (k + 1) * chunks + int(threadIdx.x);  // every chunk up to (k + 1) * chunks + R - 1 is issued
        if (int(threadIdx.x) < ring && h < total) {
          const int use = h / ring;
          mbar_wait(bar_a + 8u * unsigned(h - use * ring), unsigned(use) & 1u);
        }
        if (kTrace && threadIdx.x == 0)
          trace_record_at(trace, u, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, k0 + k, 0);
        k_done = k + 1;
        break;
      }
    }
    // Handed: the item's last phase of every slot is complete and waited (the last layer end's barrier, or, where
    // the slice emptied, warp 0's waits above). Thread t < R pads slot t with one arrival where the item used it an
    // odd number of times, so the next item finds every slot at an even phase. (Re-initializing the mbarriers per
    // item, mbarrier.inval + init, as session 40 did, makes compute-sanitizer's racecheck forget the copies'
    // completions and report every next copy into a slot: bench/results/4b73367/.) The chunks issued: all below
    // total, or, where the slice emptied in layer k, those below (k + 1) x chunks + R.
    if (handed && warp == 0) {
      __syncwarp();  // warp 0's waits for the chunks in flight (an emptied slice) before any slot moves on
      const int issued = resident_vals4w_issued(total, chunks, ring, cnt == 0, k_done);
      if (int(threadIdx.x) < ring && resident_vals4w_pad_slot(issued, ring, int(threadIdx.x)))
        mbar_arrive(bar_a + 8u * unsigned(threadIdx.x));
    }
    if (!handed) {
      if (cnt > 0)
        write_survivors<S, kCtaThreads>(xbuf + cur * xstride, s_live, cnt, s_base, n, r0, y, ldy, ids_in, rows_out,
                                        ids_out, max_active, table.image_major);
      if (kTrace && cnt > 0) {
        __syncthreads();
        if (threadIdx.x == 0) trace_record(trace, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, layer_count - 1, cnt);
      }
      return;
    }
    // Handed: the item again from shared memory (its values are not held across the layers: registers are at the
    // 128 of 512 threads, and ptxas would recompute the loop's held values instead).
    const int hit = *reinterpret_cast<volatile int*>(s_claim), hunits = s_claim[2];
    const int hb = hit / hunits, hu = hit - hb * hunits;
    if (cnt == 0) {
      if (threadIdx.x == 0) publish_progress(sched + 1 + hu, blocks << 8);  // its later blocks find it empty
    } else if ((hb + 1) * bl >= layer_count) {  // the call's last layer
      write_survivors<S, kCtaThreads>(xbuf + cur * xstride, s_live, cnt, s_base, n, hu * slice, y, ldy, ids_in,
                                      rows_out, ids_out, max_active, table.image_major);
      if constexpr (kTrace) {
        __syncthreads();
        if (threadIdx.x == 0)
          trace_record_at(trace, hu, kTraceRecords - 1, JHDNN_RESIDENT_TRACE_EXIT, layer_count - 1, cnt);
      }
    } else {  // the features to the slice's park, then its progress (blocks done, live slots) for the next block's CTA
      park_features<kCtaThreads>(park + int64_t(hu) * xstride, xbuf + cur * xstride, xstride);
      __syncthreads();
      if (threadIdx.x == 0) publish_progress(sched + 1 + hu, ((hb + 1) << 8) | int(live));
    }
  }
}

// What this host thread's last vals4w / vals4w8 launch ran (resident_last_vals4w_schedule, sparse.h).
thread_local ResidentSchedule g_last_vals4w_schedule{};

// Per device and instantiation: the dynamic shared-memory limit has been raised (0 = not yet).
constexpr int kMaxDevices = 64;
// [S 2 / 4 / 8] + 3 x traced + 6 x bulk + 6 x pair; 18-19 quad, 20-21 duo, 22-23 vals, 24-25 valsfan, 26-27 vals4w,
// 28-29 vals4w8, 30-31 vals4w / vals4w8 without the item loop
std::atomic<size_t> g_smem_set[kMaxDevices][32];
// Held while the attribute is raised, so that it only ever rises: two first calls racing with
// different sizes (duo's depends on the call's layers, every kernel's on n) would otherwise both set
// it, and the smaller, set last, would make the other call's launch fail.
std::mutex g_smem_raise;

// Raises kernel's dynamic shared-memory limit to smem on this device, once per size (which: its g_smem_set entry).
template <typename Kernel>
Status raise_smem_limit(Kernel kernel, int device, int which, size_t smem) {
  const bool cached = device >= 0 && device < kMaxDevices;
  if (!cached || g_smem_set[device][which].load(std::memory_order_acquire) < smem) {
    const std::lock_guard<std::mutex> lock(g_smem_raise);
    if (!cached || g_smem_set[device][which].load(std::memory_order_relaxed) < smem) {  // not raised meanwhile
      JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      // All of the SM's unified memory as shared memory: the one-CTA kernels need ~227 KB anyway, and vals4w8's two
      // CTAs per SM need the whole carveout (its ring is sized to half of it), not what the driver might pick.
      JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          int(cudaSharedmemCarveoutMaxShared)));
      if (cached) g_smem_set[device][which].store(smem, std::memory_order_release);
    }
  }
  return Status::success();
}

// smem: the block's dynamic shared memory (resident_smem_bytes, duo: resident_duo_smem_bytes);
// slot_bytes: duo's ring slot (0 for the others).
template <int S, bool kBulk, bool kPair, int kLaneRows>
Status launch(cudaStream_t s, int device, const ResidentTable& table, int layer_count, int n, float bias,
              float clamp_max, int* counts, const int* rows_in, const int* ids_in, const float* x, int64_t ldx,
              float* y, int64_t ldy, int* rows_out, int* ids_out, int slice, int max_active, size_t smem,
              unsigned slot_bytes, jhdnnSparseDnnResidentTraceRecord_t* trace) {
  // The traced instantiation only when a trace buffer is given: the plain one has no trace code at all.
  auto kernel = trace ? dnn_resident_kernel<S, true, kBulk, kPair, kLaneRows>
                       : dnn_resident_kernel<S, false, kBulk, kPair, kLaneRows>;
  const int which = kLaneRows != 0 ? 16 + 2 * kLaneRows + (trace ? 1 : 0)
                          : (S == 2 ? 0 : S == 4 ? 1 : 2) + (trace ? 3 : 0) + (kBulk ? 6 : 0) + (kPair ? 6 : 0);
  JHDNN_TRY(raise_smem_limit(kernel, device, which, smem));
  const unsigned grid = unsigned((int64_t(max_active) + slice - 1) / slice);
  if (trace)  // records of this launch's CTAs start at zero (event 0: not reached)
    JHDNN_CUDA_TRY(cudaMemsetAsync(trace, 0, size_t(grid) * kTraceRecords * sizeof(*trace), s));
  kernel<<<grid, cta_threads(kPair), smem, s>>>(table, layer_count, n, bias, clamp_max, counts, rows_in, ids_in, x,
                                                ldx, y, ldy, rows_out, ids_out, slice, max_active, slot_bytes, trace);
  JHDNN_LAUNCH_CHECK();
  return Status::success();
}

// The handed schedule's memory: a stream-ordered pool per device, created on first use and kept for the process (as
// the packed copies), that keeps up to kHandedPoolKeep bytes across synchronizations. The device's default pool
// gives its memory back at every synchronization (release threshold 0), so each first call after one mapped its
// ~17 MB again: ~0.2 ms of host time while the GPU waited (N = 4096 L = 120, session 40: 4.35 -> 4.61 ms). Not the
// default pool's threshold: that is the application's.
constexpr uint64_t kHandedPoolKeep = uint64_t(64) << 20;
// A new pool's first allocation takes ~8-11 ms of host time, whatever ran on the stream before it; after one
// allocation of 2 MiB, a 17 MiB one takes ~5-13 us and growing to 48 MiB ~45-100 us (tools/spdnn/spdnn_pool_probe,
// H200, session 45; session 44 had seen it as the resident path's first handed call taking 6-9 ms after spdnn's head
// graph). So the pool is created and primed with one such allocation when the kernels load (jhdnnCreate), once per
// device and process, not in the first handed call.
constexpr size_t kHandedPoolPrime = size_t(2) << 20;
std::mutex g_handed_pool_mutex;
cudaMemPool_t g_handed_pool[kMaxDevices] = {};

}  // namespace

void prime_pool(cudaMemPool_t pool) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  cudaStream_t p = nullptr;
  if (cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking) == cudaSuccess) {
    void* mem = nullptr;
    if (cudaMallocFromPoolAsync(&mem, kHandedPoolPrime, pool, p) == cudaSuccess) (void)cudaFreeAsync(mem, p);
    (void)cudaStreamSynchronize(p);
    (void)cudaStreamDestroy(p);
  }
  (void)cudaGetLastError();
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

namespace {

// The pool of `device`, created and primed at its first use (nullptr where the device has no memory pools or one
// cannot be made: the caller runs the one-CTA-per-slice schedule).
cudaMemPool_t handed_pool(int device) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  const std::lock_guard<std::mutex> lock(g_handed_pool_mutex);
  if (g_handed_pool[device] == nullptr) {
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess || pools == 0) {
      (void)cudaGetLastError();
      return nullptr;
    }
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    uint64_t keep = kHandedPoolKeep;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
      (void)cudaGetLastError();
      (void)cudaMemPoolDestroy(pool);
      return nullptr;
    }
    prime_pool(pool);
    g_handed_pool[device] = pool;
  }
  return g_handed_pool[device];
}

// vals4w: ring slots of slot_bytes each (resident_vals4w_slots), 32 x kWarpCount threads (512, or 256 for vals4w8).
// The schedule (resident_vals4w_block_layers, JHDNN_RESIDENT_BLOCKS): one CTA per slice, or the layers in blocks
// handed between persistent CTAs, as many as fit at once (the occupancy of this kernel at smem bytes). Those need,
// for this launch only, a stream-ordered allocation (handed_pool, freed after the launch in stream order): the
// item counter and each slice's progress word, zeroed first, and each slice's park, (n + 1) x 4 floats.
template <int kWarpCount>
Status launch_vals4w(cudaStream_t s, int device, const ResidentTable& table, int layer_count, int n, float bias,
                     float clamp_max, int* counts, const int* rows_in, const int* ids_in, const float* x, int64_t ldx,
                     float* y, int64_t ldy, int* rows_out, int* ids_out, int slice, int max_active, size_t slot_bytes,
                     int ring, size_t smem, jhdnnSparseDnnResidentTraceRecord_t* trace) {
  auto kernel = trace ? dnn_resident_vals4w_kernel<true, kWarpCount, true>
                      : dnn_resident_vals4w_kernel<false, kWarpCount, true>;
  JHDNN_TRY(raise_smem_limit(kernel, device, (kWarpCount == 16 ? 26 : 28) + (trace ? 1 : 0), smem));
  const int forced = core::config::resident_blocks();  // (checked valid by dnn_resident)
  const int units = int((int64_t(max_active) + slice - 1) / slice);
  int block_layers = 0, ctas = 0;
  cudaMemPool_t pool = nullptr;
  // Not inside a stream capture: the pool's memory would be allocation / free nodes in the caller's graph, which
  // restrict it (one instance at a time, no clone, ...); and the pool may not be created while capturing.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  JHDNN_CUDA_TRY(cudaStreamIsCapturing(s, &capturing));
  if (forced != 0 && units > 1 && capturing == cudaStreamCaptureStatusNone) {
    int per_sm = 0, sms = 0;
    JHDNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kWarpCount, smem));
    JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    ctas = per_sm * sms;
    if (forced > 0 || units > ctas) pool = handed_pool(device);
    // Auto: handed where the slices may outnumber the CTAs, its blocks chosen on the device from the real count;
    // but one CTA per slice where the parks would pass what the pool keeps across synchronizations (kHandedPoolKeep):
    // many waves of slices balance by themselves, and the pool would grow to the parks (~1 GB for 60000 images at
    // n = 4096) and trim back at the caller's next synchronization, every call (session 47, image-major calls from
    // layer 1 on 60000 images: L = 12 at n = 4096 3.40 ms one CTA per slice against 4.64-5.01 auto, ~1.2-1.5 ms of
    // host time in the call; bench/results/4dd6c65/image-major/).
    const bool parks_fit = size_t(units) * size_t(n + 1) * kResidentValsS * sizeof(float) <= kHandedPoolKeep;
    if (pool != nullptr)
      block_layers = forced > 0                        ? resident_vals4w_block_layers(units, ctas, layer_count, forced)
                     : units > ctas && (parks_fit || layer_count == 1) ? -1
                                                                       : 0;
    // The item counter runs to units x blocks + CTAs - 1 in an int (the device's choice: at most layer_count blocks).
    const int64_t most_blocks = block_layers > 0 ? (layer_count + block_layers - 1) / block_layers : layer_count;
    if (int64_t(units) * most_blocks + ctas > int64_t(INT_MAX)) block_layers = 0;
  }
  const int64_t xfloats = int64_t(n + 1) * kResidentValsS;
  const size_t sched_bytes = (size_t(units) + 1) * sizeof(int);
  const size_t park_at = (sched_bytes + 255) / 256 * 256;
  void* mem = nullptr;
  if (block_layers != 0) {
    // One block (a one-layer call, or block_layers >= layer_count): no park. A one-layer call on 60000 images at
    // n = 4096 would otherwise take ~1 GB from the pool, which grows to it and trims back to kHandedPoolKeep at the
    // next synchronization, every call (session 46: 4.6-4.8 -> 3.8 ms for one such call without it, bench/results/2be439b/).
    const bool parks = layer_count > 1 && (block_layers < 0 || block_layers < layer_count);
    const size_t bytes = park_at + (parks ? size_t(units) * size_t(xfloats) * sizeof(float) : 0);
    const cudaError_t got = cudaMallocFromPoolAsync(&mem, bytes, pool, s);
    if (got != cudaSuccess) {
      (void)cudaGetLastError();  // (not sticky) the call runs the one-CTA-per-slice schedule: same results
      if (core::log_enabled())
        core::log_line("jhdnnSparseDnnLayersForwardResident: cudaMallocFromPoolAsync of " + std::to_string(bytes) +
                       " bytes for the handed schedule: " + cudaGetErrorString(got) + "; one CTA per slice");
      mem = nullptr;
      block_layers = 0;
    }
  }
  g_last_vals4w_schedule = ResidentSchedule{units, ctas, block_layers};
  if (core::log_enabled())
    core::log_line("jhdnnSparseDnnLayersForwardResident: vals4w" + std::string(kWarpCount == 8 ? "8" : "") + ", " +
                   std::to_string(layer_count) + " layers, " + std::to_string(units) + " slices, " +
                   std::to_string(ctas) + " CTAs at once: " +
                   (block_layers > 0   ? "handed, blocks of " + std::to_string(block_layers) + " layers"
                    : block_layers < 0 ? std::string("handed, blocks chosen on the device")
                                       : std::string("one CTA per slice")));
  int* sched = static_cast<int*>(mem);
  float* park = mem != nullptr ? reinterpret_cast<float*>(static_cast<char*>(mem) + park_at) : nullptr;
  const unsigned grid = unsigned(block_layers != 0 ? std::min(units, ctas) : units);
  // One CTA per slice, untraced: the instantiation without the item loop (kHanded false; same results, bitwise).
  const bool plain = block_layers == 0 && trace == nullptr;
  if (plain)
    JHDNN_TRY(raise_smem_limit(dnn_resident_vals4w_kernel<false, kWarpCount, false>, device, kWarpCount == 16 ? 30 : 31,
                               smem));
  // From here every path frees mem (in stream order), and the first error is the one returned.
  cudaError_t err = mem != nullptr ? cudaMemsetAsync(mem, 0, sched_bytes, s) : cudaSuccess;
  if (err == cudaSuccess && trace) err = cudaMemsetAsync(trace, 0, size_t(units) * kTraceRecords * sizeof(*trace), s);
  if (err == cudaSuccess) {
    (plain ? dnn_resident_vals4w_kernel<false, kWarpCount, false> : kernel)<<<grid, 32 * kWarpCount, smem, s>>>(
        table, layer_count, n, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy, rows_out, ids_out, slice,
        max_active, unsigned(slot_bytes), ring, block_layers, sched, park, trace);
    err = cudaGetLastError();
  }
  const cudaError_t freed = mem != nullptr ? cudaFreeAsync(mem, s) : cudaSuccess;
  JHDNN_CUDA_TRY(err);
  JHDNN_CUDA_TRY(freed);
  return Status::success();
}

}  // namespace

size_t resident_smem_bytes(int64_t n, int s) { return kFixedBytes + 2 * size_t(n + 1) * size_t(s) * sizeof(float); }

size_t resident_duo_slot_bytes(int64_t n, const int* list_bytes, int layer_count) {
  const int rows = int(std::min<int64_t>(n, kChunkRows));  // the largest chunk's rows
  size_t most = 0;
  for (int k = 0; k < layer_count; ++k) most = std::max(most, size_t(resident_chunk_bytes(rows, list_bytes[k])));
  return (most + 15) / 16 * 16;  // a multiple of 16 already (rows x 144 + slots x 128); kept for the TMA
}

size_t resident_duo_smem_bytes(int64_t n, size_t slot_bytes) {
  return size_t(kDuoSlots) * slot_bytes + kMisc * 4 + 2 * size_t(n + 1) * 8 * sizeof(float);
}

size_t resident_vals_slot_bytes(int64_t n, const int* slot_bytes, int layer_count) {
  const int rows = int(std::min<int64_t>(n, kChunkRows));  // the largest chunk's rows
  size_t most = 0;
  for (int k = 0; k < layer_count; ++k)
    most = std::max(most, size_t(resident_vals_chunk_bytes(rows, slot_bytes[k])));
  return (most + 15) / 16 * 16;  // a multiple of 16 already (rows x 16 + slots x 128); kept for the TMA
}

size_t resident_vals_smem_bytes(int64_t n, size_t slot_bytes) {
  return size_t(kValsSlots) * slot_bytes + kValsMisc * 4 + 2 * size_t(n + 1) * kResidentValsS * sizeof(float);
}

size_t resident_vals4w_smem_bytes(int64_t n, size_t slot_bytes, int slots) {
  return size_t(slots) * slot_bytes + kResidentVals4wMisc * 4 + 2 * size_t(n + 1) * kResidentValsS * sizeof(float);
}

int resident_vals4w_slots(int64_t n, size_t slot_bytes, size_t smem_optin, int warps) {
  if (warps != 16 && warps != 8) return 0;
  if (slot_bytes == 0 || (n + kChunkRows - 1) / kChunkRows > 2 * warps) return 0;
  const size_t fixed = resident_vals4w_smem_bytes(n, 0, 0);
  if (fixed >= smem_optin) return 0;
  const size_t r = std::min<size_t>((smem_optin - fixed) / slot_bytes, kResidentVals4wMaxSlots);
  return r >= size_t(warps == 16 ? kResidentVals4wMinSlots : kResidentVals4w8MinSlots) ? int(r) : 0;
}

ResidentSchedule resident_last_vals4w_schedule() { return g_last_vals4w_schedule; }

int resident_vals4w_block_layers(int units, int ctas, int layers, int forced) {
  if (units <= 0 || ctas <= 0 || layers <= 0 || forced == 0) return 0;
  if (forced > 0) {
    const int b = std::min(forced, layers);
    return (layers + b - 1) / b;
  }
  const int64_t waves = (int64_t(units) + ctas - 1) / ctas;
  if (waves < 2) return 0;  // every slice has its own CTA at once: nothing to balance
  int64_t best = -1;
  int best_k = 0;
  for (int b = 2; b <= layers; ++b) {  // K descending: the first of equal times is the largest K
    const int k = (layers + b - 1) / b;
    const int64_t t = resident_vals4w_blocks_time(units, ctas, layers, k);
    if (best < 0 || t < best) best = t, best_k = k;
  }
  return best_k > 0 && resident_vals4w_blocks_gain(best, units, ctas, layers) ? best_k : 0;
}

size_t resident_vals4w8_budget(size_t smem_per_sm, size_t reserved_per_block) {
  return smem_per_sm / 2 > reserved_per_block ? smem_per_sm / 2 - reserved_per_block : 0;
}

// The vals ring of the smallest chunks (one list and one value slot each): below this nothing fits.
static size_t resident_vals_min_smem_bytes(int64_t n) {
  const int rows = int(std::min<int64_t>(n, kChunkRows));
  return resident_vals_smem_bytes(n, size_t(resident_vals_chunk_bytes(rows, kResidentValsListStride + kResidentListBytes)));
}

int resident_slice_limit(int64_t n, size_t smem_optin) {
  const int s = resident_slice_max(n, smem_optin);
  return s == 0 ? 0 : std::max(s, resident_vals_min_smem_bytes(n) <= smem_optin ? kResidentValsS : 0);
}

int resident_slice_max(int64_t n, size_t smem_optin) {
  for (int s : {8, 4, 2})
    if (resident_smem_bytes(n, s) <= smem_optin) return s;
  return 0;
}

Status load_dnn_resident_kernels() {
  cudaFuncAttributes attr;
  auto load_all = [&](auto s_tag) -> Status {
    constexpr int S = decltype(s_tag)::value;
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, false, true, true, 0>));  // pair
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, true, true, true, 0>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, false, true, false, 0>));  // bulk
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, true, true, false, 0>));
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, false, false, false, 0>));  // packed
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<S, true, false, false, 0>));
    return Status::success();
  };
  JHDNN_TRY(load_all(std::integral_constant<int, 2>{}));
  JHDNN_TRY(load_all(std::integral_constant<int, 4>{}));
  JHDNN_TRY(load_all(std::integral_constant<int, 8>{}));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, false, true, true, 1>));  // quad (S = 8 only)
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, true, true, true, 1>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, false, true, true, 2>));  // duo (S = 8 only)
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<8, true, true, true, 2>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, false, true, true, 3>));  // vals (S = 4 only)
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, true, true, true, 3>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, false, true, true, 4>));  // valsfan
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_kernel<4, true, true, true, 4>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<false, 16, true>));  // vals4w
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<true, 16, true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<false, 16, false>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<false, 8, true>));  // vals4w8
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<true, 8, true>));
  JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, dnn_resident_vals4w_kernel<false, 8, false>));
  // The handed schedule's pool, created and primed here rather than in the first handed call (kHandedPoolPrime).
  int device = 0;
  if (cudaGetDevice(&device) == cudaSuccess)
    (void)handed_pool(device);
  else
    (void)cudaGetLastError();
  return Status::success();
}

size_t handed_pool_reserved_bytes(int device) {
  cudaMemPool_t pool = nullptr;
  if (device >= 0 && device < kMaxDevices) {
    const std::lock_guard<std::mutex> lock(g_handed_pool_mutex);
    pool = g_handed_pool[device];
  }
  uint64_t bytes = 0;
  if (pool != nullptr && cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    bytes = 0;
  }
  return size_t(bytes);
}

Status dnn_resident(cudaStream_t s, int device, size_t smem_optin, jhdnnSparseMatrixStruct* const* wts,
                    int layer_count, float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                    const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                    int* ids_out, int slice, jhdnnSparseDnnResidentTraceRecord_t* trace, bool pageable_ok,
                    bool image_major) {
  if (max_active == 0 || layer_count == 0) return Status::success();
  if (core::config::resident_blocks() == core::config::kResidentBlocksInvalid)
    return core::fail(JHDNN_STATUS_BAD_PARAM, "JHDNN_RESIDENT_BLOCKS = '%s' is not auto or a count 0..%d",
                      core::config::resident_blocks_bad_value(), core::config::kResidentMaxBlocks);
  // JHDNN_RESIDENT_KERNEL (core/config.h): duo (default), quad, pair, bulk, packed, vals, valsfan, vals4w or
  // vals4w8; all exact.
  const core::config::ResidentKernel env_kernel = core::config::resident_kernel();
  // =vals4w8 where vals4w8 does not run: as duo (every choice below).
  const core::config::ResidentKernel which =
      env_kernel == core::config::ResidentKernel::kVals4w8 ? core::config::ResidentKernel::kDuo : env_kernel;
  if (which == core::config::ResidentKernel::kInvalid)
    return core::fail(JHDNN_STATUS_BAD_PARAM,
                      "JHDNN_RESIDENT_KERNEL = '%s' is not duo, quad, pair, bulk, packed, vals, valsfan, vals4w or "
                      "vals4w8",
                      core::config::resident_kernel_bad_value());
  const int64_t n = wts[0]->rows;
  const int nn = int(n);
  ResidentTable table{};
  table.image_major = image_major ? 1 : 0;
  // The vals-pack copies of the call's layers (built by a descriptor's first use) and the ring slot they need.
  auto pack_vals = [&](size_t* slot) -> Status {
    int sbs[kResidentMaxLayers];
    for (int k = 0; k < layer_count; ++k) {
      JHDNN_TRY(resident_vals_pack(s, device, *wts[k], &table.layer[k].pack, &table.layer[k].list_bytes,
                                   pageable_ok));
      sbs[k] = table.layer[k].list_bytes;
    }
    *slot = resident_vals_slot_bytes(n, sbs, layer_count);
    return Status::success();
  };
  // vals4w8 (session 33): vals4w with 8 warps and two CTAs per SM, each CTA a 4-image slice, so an SM holds duo's 8
  // images with vals4w's lane of 4 rows x 4 images. The default where duo would run its 8-image slices (sliceImages
  // 0) at n <= 1024 (the challenge's N = 1024, where it was measured); =vals4w8 wherever it fits (slices of 0 / 1..4
  // images, n <= 2048). Where its ring of >= 8 slots does not fit half the SM, the call goes on as below.
  const bool w8 = slice <= kResidentValsS && n <= int64_t(kChunkRows) * 2 * 8 &&  // <= 16 chunks: no copy for nothing
                  (env_kernel == core::config::ResidentKernel::kVals4w8 ||
                   (env_kernel == core::config::ResidentKernel::kDuo && slice == 0 && n <= kChunkRows * 8));
  if (w8) {
    int per_sm = 0, reserved = 0;
    JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
    const size_t budget = std::min(smem_optin, resident_vals4w8_budget(size_t(per_sm), size_t(reserved)));
    size_t slot = 0;
    JHDNN_TRY(pack_vals(&slot));
    const int ring = resident_vals4w_slots(n, slot, budget, 8);
    if (ring > 0)
      return launch_vals4w<8>(s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y,
                              ldy, rows_out, ids_out, slice == 0 ? kResidentValsS : slice, max_active, slot, ring,
                              resident_vals4w_smem_bytes(n, slot, ring), trace);
  }
  // The vals kernel (S = 4 on the vals-pack layout, a ring of 16 slots of the call's largest chunk):
  // tried when JHDNN_RESIDENT_KERNEL=vals (any n), or by default (duo) where the list-pack rings leave
  // no room for S = 4 (n > 2,048 or so: n = 4096), for slices of 0 (= 4) to 4 images. It runs when its
  // ring and features fit the block's shared memory, which the layers' packs say (the challenge's
  // chunks: 3,328 bytes); otherwise the call goes on as below (duo / quad / pair; same results).
  const int s_list = resident_slice_max(n, smem_optin);  // the list-pack kernels' largest slice
  // valsfan (the vals kernel with its copies issued by 8 warps; tried exactly where =vals tries vals) is
  // what the default runs there: 32.7 against vals' 38.7 ms at N = 4096 L = 1920 (H200, session 18).
  // =vals keeps the thread-0 copies for A/B runs.
  // vals4w (a lane of 4 rows, each warp a whole chunk, a ring refilled by the consuming warps; tried where
  // valsfan is, run where its ring of >= 16 slots fits and a layer has <= 32 chunks, else valsfan) is what the
  // default runs there since session 20; =valsfan keeps valsfan for A/B runs.
  const bool w4 = which == core::config::ResidentKernel::kVals4w ||
                  (which == core::config::ResidentKernel::kDuo && s_list < 4);
  const bool fan = w4 || which == core::config::ResidentKernel::kValsFan;
  const bool try_vals = slice <= kResidentValsS && (which == core::config::ResidentKernel::kVals || fan ||
                                                   (which == core::config::ResidentKernel::kDuo && s_list < 4));
  size_t vals_smem = 0;  // tried and did not fit: what the vals call needed (for the refusal below)
  if (try_vals && resident_vals_min_smem_bytes(n) <= smem_optin) {
    size_t slot = 0;
    JHDNN_TRY(pack_vals(&slot));
    const size_t smem = resident_vals_smem_bytes(n, slot);
    if (smem <= smem_optin) {
      if (slice == 0) slice = kResidentValsS;
      const int ring = w4 ? resident_vals4w_slots(n, slot, smem_optin) : 0;
      if (ring > 0)
        return launch_vals4w<16>(s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx,
                                 y, ldy, rows_out, ids_out, slice, max_active, slot, ring,
                                 resident_vals4w_smem_bytes(n, slot, ring), trace);
      if (fan)
        return launch<kResidentValsS, true, true, 4>(s, device, table, layer_count, nn, bias, clamp_max, counts,
                                                     rows_in, ids_in, x, ldx, y, ldy, rows_out, ids_out, slice,
                                                     max_active, smem, unsigned(slot), trace);
      return launch<kResidentValsS, true, true, 3>(s, device, table, layer_count, nn, bias, clamp_max, counts,
                                                   rows_in, ids_in, x, ldx, y, ldy, rows_out, ids_out, slice,
                                                   max_active, smem, unsigned(slot), trace);
    }
    vals_smem = smem;
  }
  const int smax = s_list;
  if (smax == 0)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "n = %lld: two feature buffers of 2 images do not fit in shared memory (%zu bytes per block)",
                      (long long)n, smem_optin);
  if (slice == 0) slice = smax;
  if (slice > smax && vals_smem != 0)  // the argument check allowed it for vals (resident_slice_limit)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "sliceImages %d > %d, the most that fit at n = %lld with these layers: the vals kernel's "
                      "4-image slices need %zu bytes of shared memory for their largest chunk (%zu per block)",
                      slice, smax, (long long)n, vals_smem, smem_optin);
  if (slice > smax)  // (slices of 3-4 get here only from a kernel that does not try vals)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "sliceImages %d > %d, the most that fit at n = %lld%s", slice,
                      smax, (long long)n,
                      slice <= kResidentValsS ? " with this kernel (4-image slices here need the vals kernel: "
                                                "JHDNN_RESIDENT_KERNEL duo or vals)"
                                              : "");
  // The smallest instantiation that holds the slice (fewer outputs per step otherwise idle).
  const int S = slice <= 2 ? 2 : slice <= 4 ? 4 : 8;
  for (int k = 0; k < layer_count; ++k)
    JHDNN_TRY(resident_pack(s, device, *wts[k], &table.layer[k].pack, &table.layer[k].list_bytes, pageable_ok));
  // Duo's ring: 8 slots of the call's largest chunk (the layers' list bytes are known now). When they
  // and the features do not fit the block's shared memory (e.g. layers whose rows all have their own
  // lists: 34,816-byte chunks), the call runs quad instead (same results). (vals, where it did not
  // apply, counts as duo.)
  size_t duo_slot = 0, duo_smem = 0;
  if ((which == core::config::ResidentKernel::kDuo || which == core::config::ResidentKernel::kVals || fan) && S == 8) {
    int lbs[kResidentMaxLayers];
    for (int k = 0; k < layer_count; ++k) lbs[k] = table.layer[k].list_bytes;
    duo_slot = resident_duo_slot_bytes(n, lbs, layer_count);
    duo_smem = resident_duo_smem_bytes(n, duo_slot);
  }
  const bool duo = duo_smem != 0 && duo_smem <= smem_optin;
  auto run = [&](auto s_tag) {
    constexpr int kS = decltype(s_tag)::value;
    auto go = [&](auto bulk_tag, auto pair_tag, auto rows_tag) {
      constexpr int kRows = decltype(rows_tag)::value;
      const size_t smem = kRows == 2 ? duo_smem : resident_smem_bytes(n, kS);
      static_assert(kRows <= 2, "vals launches above");
      return launch<kS, decltype(bulk_tag)::value, decltype(pair_tag)::value, kRows>(
          s, device, table, layer_count, nn, bias, clamp_max, counts, rows_in, ids_in, x, ldx, y, ldy, rows_out,
          ids_out, slice, max_active, smem, unsigned(kRows == 2 ? duo_slot : 0), trace);
    };
    using F = std::false_type;
    using T = std::true_type;
    using R0 = std::integral_constant<int, 0>;  // one image per lane
    using R1 = std::integral_constant<int, 1>;  // quad
    using R2 = std::integral_constant<int, 2>;  // duo
    switch (which) {
      case core::config::ResidentKernel::kBulk:
        return go(T{}, F{}, R0{});
      case core::config::ResidentKernel::kPacked:
        return go(F{}, F{}, R0{});
      case core::config::ResidentKernel::kPair:
        return go(T{}, T{}, R0{});
      case core::config::ResidentKernel::kQuad:  // S = 8 only (n <= 1024 with slices of 5-8 images); else pair
        if constexpr (kS == 8) return go(T{}, T{}, R1{});
        return go(T{}, T{}, R0{});
      default:  // kDuo (and kVals / kValsFan where it did not apply): S = 8 only, when its ring fits; else quad (S = 8) or pair
        if constexpr (kS == 8) {
          if (duo) return go(T{}, T{}, R2{});
          return go(T{}, T{}, R1{});
        }
        return go(T{}, T{}, R0{});
    }
  };
  switch (S) {
    case 2:
      return run(std::integral_constant<int, 2>{});
    case 4:
      return run(std::integral_constant<int, 4>{});
    default:
      return run(std::integral_constant<int, 8>{});
  }
}

}  // namespace jhdnn::sparse
