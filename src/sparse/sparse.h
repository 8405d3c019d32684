// Internal side of the sparse API: the descriptor and the launchers the extern "C" shims call.
// The launchers assume the shims have checked every argument (see api_sparse.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "jhdnn/jhdnn.h"
#include "sparse/resident_banks.h"
#include "sparse/resident_pack_list.h"

namespace jhdnn::sparse {
// What the Set* calls describe; each Set* resets all of it (assignment from {}).
struct SparseMatrixFields {
  bool is_set = false;
  jhdnnSparseFormat_t format = JHDNN_SPARSE_FORMAT_CSR;
  int64_t rows = 0, cols = 0;
  int64_t nnz = 0;    // CSR: stored entries; ELL: rows * width
  int64_t width = 0;  // ELL only
  int* row_ptr = nullptr;  // CSR only
  int* col_ind = nullptr;
  float* values = nullptr;
  const int* row_order = nullptr;  // optional processing order (jhdnnSetSparseMatrixRowOrder)
};
}  // namespace jhdnn::sparse

struct jhdnnSparseMatrixStruct : jhdnn::sparse::SparseMatrixFields {
  // The resident path's packed copies of this layer (dnn_resident_pack.cu): ceil(rows / 128) x 34,816
  // bytes of device memory per device that ran it (aux: the copy's list bytes per chunk), built by the first resident call on that device that uses the
  // descriptor (published once even when threads race: resident_pack_list.h) and released by
  // jhdnn::sparse::release_resident_pack (every Set* call and Destroy).
  jhdnn::sparse::ResidentPackList resident_pack;
  // The same layer in the "vals-pack" layout (sparse.h, kResidentVals*), built by the first call of
  // the vals kernel that uses it (aux: the copy's slot bytes per chunk); released with resident_pack.
  jhdnn::sparse::ResidentPackList resident_vals;
  // The tensor-core resident path's tables of this layer (dnn_resident_tc.cu, tc_tables.h): one allocation per
  // device, built by its first call that uses the descriptor; released with resident_pack.
  jhdnn::sparse::ResidentPackList resident_tc;
  // jhdnnSetSparseMatrixMathType (kept across Set* calls, like a convolution descriptor's).
  jhdnnMathType_t math_type = JHDNN_DEFAULT_MATH;
};

namespace jhdnn::sparse {

using core::Status;

// Loads the sparse kernels into the current context (cudaFuncGetAttributes on each), so that no
// lazy module load happens inside a later call; jhdnnCreate runs it. CUB's scan kernels still load
// on first use.
Status load_kernels();
Status load_dense_to_csr_kernels();
Status load_spmm_kernels();
Status load_dnn_kernels();

// Dense to CSR (row-major dense, FLOAT).
size_t dense_to_csr_workspace(int64_t rows);
Status dense_to_csr_analysis(cudaStream_t s, int64_t rows, int64_t cols, const float* a, int64_t lda,
                             int* row_ptr, int64_t* nnz, void* ws, size_t ws_size);
Status dense_to_csr_convert(cudaStream_t s, int64_t rows, int64_t cols, const float* a, int64_t lda,
                            const int* row_ptr, int* col_ind, float* values, int64_t nnz);

// C = alpha * A * B + beta * C. ws: ws_size bytes, 256-byte aligned, used by TRANSPOSE_B with a
// column-major B (at least spmm_workspace_bytes; the shim checks it), otherwise ignored.
Status spmm(cudaStream_t s, jhdnnSpMMAlg_t algo, float alpha, const jhdnnSparseMatrixStruct& a, int64_t n,
            jhdnnOrder_t order, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, void* ws,
            size_t ws_size);
// Workspace bytes that `algo` needs for an A with k columns (0: none; -1: the size overflows int64).
// DEFAULT reports TRANSPOSE_B's size for a column-major B (it uses the transposed path when given it).
int64_t spmm_workspace_bytes(jhdnnSpMMAlg_t algo, int64_t k, int64_t n, jhdnnOrder_t order);
// The algorithm DEFAULT resolves to for this shape and workspace (others are returned unchanged).
jhdnnSpMMAlg_t spmm_choose(jhdnnSpMMAlg_t algo, int64_t k, int64_t n, jhdnnOrder_t order, size_t ws_size);

// Fused challenge layer and the compaction after it.
Status dnn_layer(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct& wt, float bias, float clamp_max,
                 int max_active, const int* active_count, const int* active_rows, const float* x, int64_t ldx,
                 float* y, int64_t ldy, int* row_nonzero);
size_t compact_workspace(int max_active);
Status compact(cudaStream_t s, int max_active, const int* flags, const int* ids_in, int* rows_out, int* ids_out,
               int* count_out, void* ws, size_t ws_size);

// The fused layer + compaction (one launch, shape independent of the host; see dnn_layer.cu).
size_t fused_workspace(int max_active);
// The zero-piece mask of a layer's input features (jhdnnSparseDnnLayerForwardCompactMasked): bit (c % 128) / 4 of
// x[i * x_ld + c / 128] is 0 only if x(i, c - c % 4 .. + 3) are four +0.0f (null: none); x_ld: words per feature
// row, (the buffer's column capacity + 127) / 128.
struct PieceMasks {
  const unsigned* x = nullptr;
  unsigned x_ld = 0;
};
// Words per feature row of a piece mask for a buffer of `columns` columns.
constexpr int64_t piece_mask_ld(int64_t columns) { return (columns + 127) / 128; }
// layout: JHDNN_SPARSE_DNN_FEATURES_TILED128 runs late4all's items in every layer (the API checks what they need).
Status dnn_layer_compact(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct& wt, float bias,
                         float clamp_max, int max_active, const int* active_count, const int* active_rows,
                         const int* ids_in, jhdnnSparseDnnFeatureLayout_t layout, const float* x, int64_t ldx,
                         float* y, int64_t ldy, int* rows_out, int* ids_out, int* count_out, void* ws,
                         const PieceMasks& masks = PieceMasks{});

// Several fused layers in ONE cooperative launch, grid barrier between layers (see dnn_layer.cu).
// wts: layer_count host pointers to set ELL descriptors, all n x n (n = rows of the first).
size_t multi_workspace(int max_active);
Status dnn_layers_compact(cudaStream_t s, int sm_count, const jhdnnSparseMatrixStruct* const* wts, int layer_count,
                          float bias, float clamp_max, int max_active, int* counts, int* rows0, int* ids0, float* x0,
                          int* rows1, int* ids1, float* x1, int64_t ld, void* ws);

}  // namespace jhdnn::sparse

// The shared-memory-resident late layers (see dnn_resident.cu): ONE launch runs up to
// kResidentMaxLayers layers, each CTA keeping a slice of at most 8 images in shared memory.
namespace jhdnn::sparse {
constexpr int kResidentMaxLayers = 1024;  // = JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS
// Shared memory of one CTA for an n-output network and slices of s images (the instantiation's S).
size_t resident_smem_bytes(int64_t n, int s);
// The largest slice (8, 4 or 2) whose CTA fits in smem_optin bytes of shared memory; 0 if none.
int resident_slice_max(int64_t n, size_t smem_optin);
// Loads the resident kernels, and creates and primes the current device's pool for the handed schedule.
Status load_dnn_resident_kernels();
// The bytes the handed schedule's pool of `device` holds now (cudaMemPoolAttrReservedMemCurrent; 0 without one).
size_t handed_pool_reserved_bytes(int device);
// One allocation of 2 MiB from `pool` and its free on a private stream, synchronized (a new pool's first allocation
// is slow: dnn_resident.cu kHandedPoolPrime). This thread's capture mode is relaxed meanwhile, so that a stream
// capture in progress (of this thread or another) is not broken by these calls. A failure is cleared and ignored:
// the pool then pays its first allocation later.
void prime_pool(cudaMemPool_t pool);
// wts: layer_count (1..kResidentMaxLayers) host pointers to set width-32 ELL descriptors, n x n.
// slice: images per CTA, 1..resident_slice_max, or 0 (that maximum).
// The descriptors are not const: each gets its packed copy at its first call (resident_pack, which checks the
// arrays it reads; pageable_ok: the device may read plain host memory). image_major: x(i, c) at x[c * ldx + i] and y
// alike (ldx, ldy: the image strides, multiples of 4, x and y 16-byte aligned: the API's checks); else neuron-major.
Status dnn_resident(cudaStream_t s, int device, size_t smem_optin, jhdnnSparseMatrixStruct* const* wts,
                    int layer_count, float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                    const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                    int* ids_out, int slice, jhdnnSparseDnnResidentTraceRecord_t* trace = nullptr,
                    bool pageable_ok = false, bool image_major = false);
Status load_dnn_resident_pack_kernel();

// The resident call on tensor cores (dnn_resident_tc.cu): the call's layers (1..kTcMaxLayers, every descriptor with
// a tensor-op math type; pieces: 3 for TENSOR_OP_MATH, 1 where every layer allows conversion) in one launch of
// 16-image tiles. Arguments as dnn_resident's (neuron-major, no trace; checked by the shim); sms: the grid.
// NOT_SUPPORTED(_SHAPE) with the reason where the path cannot run these layers (n not a multiple of 64 up to 1024,
// too many layers for shared memory, a layer build_tc_tables refuses, a first call inside a stream capture).
constexpr int kTcMaxLayers = 8;
Status dnn_resident_tc(cudaStream_t s, int device, size_t smem_optin, int sms, bool pageable_ok,
                       jhdnnSparseMatrixStruct* const* wts, int layer_count, int pieces, float bias, float clamp_max,
                       int max_active, int* counts, const int* rows_in, const int* ids_in, const float* x,
                       int64_t ldx, float* y, int64_t ldy, int* rows_out, int* ids_out);
size_t resident_tc_smem_bytes(int pieces, int64_t n, int layer_count);
// Calls of more than kTcMaxLayers layers (one piece only, n <= kTcStreamMaxN): the streamed kernel
// (dnn_resident_tc_stream.cu), 8-image tiles of one CTA, the layers' weights streamed from the L2. `tables`: each
// layer's table allocation (dnn_resident_tc.cu's tc_tables_of); kTcCtaRows: the most rows of a CTA of the cluster
// kernel, past which the tables hold the cluster's block columns and the renamed ones after them.
constexpr int kTcStreamMaxN = 4096;
constexpr int kTcCtaRows = 1024;
size_t resident_tc_stream_smem_bytes(int64_t n);
Status dnn_resident_tc_stream(cudaStream_t s, int sms, const char* const* tables, int layer_count, int64_t n,
                              float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                              const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                              int* ids_out);
Status load_dnn_resident_tc_stream_kernel();
// Past n = kTcStreamMaxN, calls of more than kTcMaxLayers layers, and calls whose tables the cluster kernel's shared
// memory cannot hold (one piece only; every call past kTcCtaRows x kTcMaxClusterCtas rows): the planes kernels
// (dnn_resident_tc_planes.cu), one launch a layer, the features in two bf16 planes in device memory (n x maxActive x 2
// bytes each, and 12.5 bytes a column of lists, stream-ordered from the device's current memory pool). tables:
// each layer's afrag, its blocks' renamed columns (a cluster's tables: gbcol), order and label (tc_tables.h).
struct TcPlanesTables {
  const uint4* afrag;
  const int* bcol;
  const int* order;
  const int* label;
};
constexpr int kTcPlanesMaxStages = 16;  // the live span after 0, 1, 2, .. compactions (after call layers 1, 2, 4, ..)
Status dnn_resident_tc_planes(cudaStream_t s, int sms, const TcPlanesTables* tables, int layer_count, int64_t n,
                              float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                              const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                              int* ids_out);
Status load_dnn_resident_tc_planes_kernels();
// The shape checks of dnn_resident_tc (the shim runs them before it returns for maxActive 0, as for the other kernels).
Status resident_tc_supported(int64_t n, int layer_count, int pieces, size_t smem_optin);
Status load_dnn_resident_tc_kernels();
// The duo kernel (JHDNN_RESIDENT_KERNEL=duo, S = 8): a ring of 8 slots, each the call's largest chunk
// (resident_chunk_bytes of min(n, 128) rows, over the layers' list bytes), next to the misc ints and
// the two feature buffers. A call whose resident_duo_smem_bytes exceeds the block's shared memory
// runs quad instead.
size_t resident_duo_slot_bytes(int64_t n, const int* list_bytes, int layer_count);
size_t resident_duo_smem_bytes(int64_t n, size_t slot_bytes);
}  // namespace jhdnn::sparse

// The resident path's packed layers (dnn_resident_pack.cu), the "list-pack" layout: the ELL matrix's
// rows in its row order, in chunks of kResidentChunkRows rows, each chunk at a fixed stride of
// kResidentChunkBytes bytes in the copy:
//   rows block:  chunk row r at byte r x 144 (kResidentRowWords words): 32 weights (padding -> 0.0f),
//                word 32 the output's feature row resident_pos(j, n), word 33 flags (bit 0,
//                kResidentFlagNewList: the row starts a list slot: first row of the chunk, or its 32
//                indices differ from the previous row's in the order), word 34 the byte offset of its
//                list slot from the chunk's start, 35 zero;
//   lists block: from byte rows_c x 144, one 128-byte slot per run of consecutive rows with the same
//                32 indices inside the chunk (32 int32: the feature rows resident_pos(index, n), padding
//                -1 -> n).
// Copied per chunk: rows_c x 144 + min(list_bytes, rows_c x 128), list_bytes = 128 x the most slots of any chunk of the
// layer (one byte count per layer: no per-chunk table on the kernel's copy path). The challenge
// layers (16 rows per list, aligned): 8 slots, 19,456 instead of 34,816 bytes per chunk (-44%);
// every row its own list: 128 slots, 34,816 bytes (as before, and the ring slot's size).
namespace jhdnn::sparse {
constexpr int kResidentChunkRows = 128;
constexpr int kResidentRowWords = 36;    // 144 bytes = 9 pieces of 16
constexpr int kResidentWordRow = 32;     // the output's feature row, resident_pos(j, n)
constexpr int kResidentWordFlags = 33;   // kResidentFlagNewList
constexpr int kResidentWordList = 34;    // the list slot's byte offset from the chunk's start
constexpr int kResidentListBytes = 128;  // 32 x int32
constexpr int kResidentChunkBytes = kResidentChunkRows * (kResidentRowWords * 4 + kResidentListBytes);  // 34,816
constexpr int kResidentFlagNewList = 1;
// The bytes one copy moves for a chunk of `rows` rows of a layer with list_bytes (its rows, then the
// list slots, but no more slots than rows: a short last chunk): a multiple of 16, at most
// kResidentChunkBytes. The kernels' copies, duo's ring slot and the host emulation use it.
JHDNN_RESIDENT_HD int resident_chunk_bytes(int rows, int list_bytes) {
  const int most = rows * kResidentListBytes;
  return rows * (kResidentRowWords * 4) + (list_bytes < most ? list_bytes : most);
}
// Builds d's packed copy on stream s if it has none for `device` (a memset and one kernel, then a
// stream synchronize so that calls on other streams see it; refused inside a stream capture), and
// returns it with its list bytes per chunk (a multiple of 128, 128..16384). Before building, d's col_ind, values
// and row order (if set) are checked as the arrays it reads (core::check_device_pointer, 16-byte aligned;
// pageable_ok: plain host memory is readable): the resident calls check them only here.
Status resident_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, const float** packed, int* list_bytes,
                     bool pageable_ok = false);
// Frees d's packed copy, if any (the descriptor changed or is destroyed). Never fails: a free error
// is cleared (the memory of a device that was reset is gone anyway).
void release_resident_pack(jhdnnSparseMatrixStruct& d);
}  // namespace jhdnn::sparse

// The "vals-pack" layout (session 16; dnn_resident_pack.cu, the vals kernel of dnn_resident.cu): the
// list-pack layout with each run of equal weight values stored once as well, so that the challenge's
// chunks shrink from 19,456 to 3,328 bytes and a ring of 16 of them fits next to S = 4 feature buffers
// at n = 4096. Per 128-row chunk of the row order, at the fixed stride kResidentValsChunkBytes:
//   headers:    chunk row r at byte 16 r: word 0 the output's feature row resident_pos(j, n), word 1
//               flags (kResidentFlagNewList: the row's 32 indices differ from the previous row's in the
//               chunk, or r = 0; kResidentFlagNewVals: the same for its 32 stored weights, compared
//               bit for bit after padding -> 0.0f), word 2 the byte offset of its list slot from the
//               chunk's start, word 3 the byte offset of its value slot;
//   slots:      from byte base = rows_c x 16, the chunk's list slots in row order, 144 bytes apart (32 int32
//               BYTE OFFSETS of feature rows in an S = 4 feature buffer, 16 x resident_pos(i, n), padding -> 16 n
//               (since session 31: the kernels add them to the buffer's address with no shift, so ptxas folds the
//               base into the load's [R + UR] address; rows before), then 16 zero bytes: lists that a warp reads at the same offset then
//               start in different shared-memory bank groups, (144 ls / 16) % 8 = ls % 8, where a 128-byte
//               stride put all of them in one: 8 wavefronts for a vals4w index load instead of 1; session
//               20), then its value slots (32 floats, padding -> 0.0f), 128 bytes apart, from base + 144 lists_c.
// Copied per chunk: rows_c x 16 + min(slot_bytes, rows_c x 272), slot_bytes = the most, over the layer's chunks,
// of 144 x lists_c + 128 x values_c (one byte count per layer, the pack list's aux). Worst case (every row its
// own list and values) 128 x (16 + 144 + 128) = 36,864 bytes: the vals-pack copy's chunk stride
// (kResidentValsChunkBytes; the list-pack layout's is kResidentChunkBytes).
// Every output is still its own chain fma(w_t, x_t, acc), t = 0..31 from 0 (padding fma(0, 0, acc)).
namespace jhdnn::sparse {
constexpr int kResidentValsHeadBytes = 16;
constexpr int kResidentValsWordRow = 0, kResidentValsWordFlags = 1, kResidentValsWordList = 2,
              kResidentValsWordVals = 3;
constexpr int kResidentFlagNewVals = 2;
constexpr int kResidentValsRowBytes = 16;  // a feature row of an S = 4 buffer: a list entry is row x 16 (above)
constexpr int kResidentValsListStride = kResidentListBytes + 16;  // a list slot and its 16 bytes of padding
constexpr int kResidentValsChunkBytes =
    kResidentChunkRows * (kResidentValsHeadBytes + kResidentValsListStride + kResidentListBytes);  // 36,864
static_assert(kResidentValsChunkBytes % 16 == 0 && kResidentValsChunkBytes == 36864, "the vals-pack chunk stride");
// The bytes one copy of a vals-pack chunk of `rows` rows moves (slot_bytes: the layer's, above): a
// multiple of 16, at most kResidentValsChunkBytes. The kernels' copies, their ring slots and the emulations use it.
JHDNN_RESIDENT_HD int resident_vals_chunk_bytes(int rows, int slot_bytes) {
  const int most = rows * (kResidentValsListStride + kResidentListBytes);
  return rows * kResidentValsHeadBytes + (slot_bytes < most ? slot_bytes : most);
}
// Builds d's vals-pack copy as resident_pack does (the same rules: once per device, a memset, one
// kernel, one synchronize, refused inside a capture, published once when threads race, the arrays checked
// before) and returns it with its slot bytes per chunk (a multiple of 16, 272..34,816).
Status resident_vals_pack(cudaStream_t s, int device, jhdnnSparseMatrixStruct& d, const float** packed,
                          int* slot_bytes, bool pageable_ok = false);
// The vals kernel (S = 4, 16 warps of 64 rows, 8 chunks per iteration from a ring of 16 slots of the
// call's largest chunk): its ring slot, and its block's shared memory (the ring, 64 misc ints, two
// feature buffers of (n + 1) x 4 floats). A call runs it when this fits the block's opt-in shared
// memory (dnn_resident.cu says when it is chosen).
constexpr int kResidentValsSlots = 16;
constexpr int kResidentValsS = 4;
size_t resident_vals_slot_bytes(int64_t n, const int* slot_bytes, int layer_count);
size_t resident_vals_smem_bytes(int64_t n, size_t slot_bytes);
// The vals4w kernel (session 20; S = 4 on the vals-pack copies, 16 warps, each warp a whole 128-row
// chunk, lane = 4 rows x the 4 images): a ring of R slots of the call's largest chunk (slot_bytes, as
// vals'), chunk h in slot h % R, refilled with chunk h + R by the warp that consumed chunk h. A layer's
// chunk c runs on warp c (c < 16) or warp (c - 16 - R) & 15 (16 <= c < 32), so chunks c and c + R of one
// layer are read by one warp. resident_vals4w_slots: R, the most slots (at most 32) that fit next to
// kResidentVals4wMisc ints and two feature buffers of (n + 1) x 4 floats in smem_optin bytes; 0 when
// fewer than 16 fit or a layer has more than 32 chunks (n > 4096): the call then runs valsfan.
// warps = 8: vals4w8 (session 33), the same kernel with 8 warps, two CTAs per SM: R >= 8 slots in the call's
// min(smem_optin, resident_vals4w8_budget) (half the SM's shared memory less the per-block reservation), <= 16
// chunks (n <= 2048).
constexpr int kResidentVals4wMaxSlots = 32;
constexpr int kResidentVals4wMinSlots = 16;
constexpr int kResidentVals4w8MinSlots = 8;
constexpr int kResidentVals4wMaxChunks = 32;
constexpr int kResidentVals4wMisc = 32 + 2 * kResidentVals4wMaxSlots;  // ints: the CTA state, then the mbarriers
size_t resident_vals4w_smem_bytes(int64_t n, size_t slot_bytes, int slots);
int resident_vals4w_slots(int64_t n, size_t slot_bytes, size_t smem_optin, int warps = 16);
size_t resident_vals4w8_budget(size_t smem_per_sm, size_t reserved_per_block);
// Vals4w's slices handed between CTAs (session 40; src/sparse/README.md, "Vals4w: slices handed between CTAs"). A
// call's `layers` go in blocks of K layers; each (slice, block) is an item, taken in turn by `ctas` persistent CTAs
// (all that fit at once), items in the order block-major (block b of every slice before block b + 1 of any), a
// slice's features parked in device memory between its blocks. With `units` slices and c = ceil(units / ctas) > 1,
// the one-CTA-per-slice schedule takes c x layers layer-times, though the work is units / ctas x layers: at N =
// 4096, 238 slices of 950 images on 132 SMs take 2 x layers where 1.8 would do. With blocks of K layers a CTA takes
// at most ceil(units x ceil(layers / K) / ctas) items of K layers, each with a park and a reload:
// resident_vals4w_blocks_time, in tenths of a layer-time, a swap counted as kResidentSwapTenths.
// resident_vals4w_block_layers: `forced` (JHDNN_RESIDENT_BLOCKS) 0 = none (returns 0), B >= 1 = B blocks (K =
// ceil(layers / min(B, layers))); else the model: K = ceil(layers / B) for the B in 2..layers of the least time (the
// largest K among equals), taken where that time is below kResidentHandedTakePercent of the one-CTA schedule's
// (a margin: at 96-97% the measured gain was inside the spread, session 40), else 0 (also when units,
// ctas or layers are <= 0). The kernel runs the same model on the device with the call's real slice count
// (counts[0]), which the host does not know (maxActive only bounds it).
constexpr int kResidentSwapTenths = 17;  // 1.7 layer-times: measured at N = 4096 (session 40, bench/results/83baf79)
constexpr int kResidentHandedTakePercent = 95;
JHDNN_RESIDENT_HD int64_t resident_vals4w_blocks_time(int units, int ctas, int layers, int k) {
  const int64_t items = (int64_t(units) * ((layers + k - 1) / k) + ctas - 1) / ctas;  // the most per CTA
  return items * (10 * int64_t(k) + kResidentSwapTenths);
}
// Whether the model's least time t (tenths of a layer-time) takes blocks: below kResidentHandedTakePercent of the
// one-CTA schedule's ceil(units / ctas) x layers (the host's resident_vals4w_block_layers and the kernel's choice).
JHDNN_RESIDENT_HD bool resident_vals4w_blocks_gain(int64_t t, int units, int ctas, int layers) {
  const int64_t waves = (int64_t(units) + ctas - 1) / ctas;
  return waves >= 2 && 100 * t < kResidentHandedTakePercent * 10 * waves * int64_t(layers);
}
int resident_vals4w_block_layers(int units, int ctas, int layers, int forced = -1);
// The handed schedule's ring phases (session 41): the mbarriers are set up once per CTA, and every item starts each
// slot at an even phase. An item of `total` chunks (its layers x chunks) issues chunk h into slot h % ring: all of
// them, or, where its slice emptied in layer k (k_done = k + 1 < the item's layers), those below k_done x chunks +
// ring (each consumed chunk h had issued h + ring). resident_vals4w_issued gives that count; the item's end pads
// slot t with one arrival where it used it an odd number of times (resident_vals4w_pad_slot), so the next item's
// chunk t again waits for parity 0. Emulated against a brute-force count in tests/test_sparse_resident.cpp.
JHDNN_RESIDENT_HD int resident_vals4w_issued(int total, int chunks, int ring, bool emptied, int k_done) {
  return emptied && k_done * chunks + ring < total ? k_done * chunks + ring : total;
}
JHDNN_RESIDENT_HD bool resident_vals4w_pad_slot(int issued, int ring, int slot) {
  return slot < issued && (((issued - 1 - slot) / ring) & 1) == 0;  // (issued - 1 - slot) / ring + 1 uses: odd
}
// What the calling host thread's last vals4w / vals4w8 launch ran (tests, diagnostics): its slices (ceil(maxActive /
// slice): the launch's bound), the CTAs that fit at once (0: not asked), and the block's layers: 0 one CTA per slice
// (also where the handed schedule's memory could not be had), K > 0 forced, -1 the device's model (the trace's
// ENTRY records carry the K it chose).
struct ResidentSchedule {
  int units = 0, ctas = 0, block_layers = 0;
};
ResidentSchedule resident_last_vals4w_schedule();
// The largest slice any resident kernel might take at n (the argument check): resident_slice_max, or
// 4 when the vals ring of the smallest chunks (one list and one value slot each) fits; 0 if none. The
// call itself knows whether vals fits its layers.
int resident_slice_limit(int64_t n, size_t smem_optin);
}  // namespace jhdnn::sparse
