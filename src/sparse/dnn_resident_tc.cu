// The resident call on tensor cores (jhdnnSparseDnnLayersForwardResident* with descriptors whose math type is
// TENSOR_OP_MATH or TENSOR_OP_MATH_ALLOW_CONVERSION; jhdnnSetSparseMatrixMathType says what that promises). One
// launch runs the call's K layers on tiles of 16 consecutive list positions: a CTA keeps its tile's features in
// shared memory through all K layers, so only layer 1's input is read from DRAM and only the last layer's survivors
// are written. Its design was worked out as tools/spdnn/spdnn_tchead_probe variant 4 (docs/perf-notes.md sessions
// 49-50); src/sparse/README.md "dnn_resident_tc.cu" explains it and what it measured (bench/results/95ba0b0/: not
// yet faster than the exact path with three pieces).
//
// A layer is block-ELL (tc_tables.h): its rows in groups of 16 (reuse order), each reading two aligned blocks of 16
// renamed inputs with a dense 16 x 16 bf16 weight block each, the A operand of mma.sync m16n8k16 held in registers
// (a warp owns 4 groups, their fragments loaded a whole layer ahead). The features of a tile live as kPieces bf16
// planes, neuron-major (a row of 16 images, 32 bytes), and each fp32 feature is split into its pieces once, by the
// epilogue that writes it: the B operands of both 8-image halves come from one ldmatrix.x4.trans per block and piece.
// Layer l writes its outputs into the planes of layer l + 1's renamed inputs; the last layer keeps its outputs in
// registers until the tile's survivors are known, then writes those images' columns of y and appends them to the
// output list. Dead images are computed on (their features stay zero: bias <= 0), so there is no pruning inside the
// K layers: the call is for the first few layers, where most images are alive.
//
// Past n = 1024 a tile's features do not fit one SM, and the kernel runs as a thread-block cluster of n / 1024 CTAs
// (sm_90; session 52): CTA r computes its 64 groups of every layer (tc_tables.h, TcClusterSlots) and holds only the
// input blocks they read, each at a slot of its own. An epilogue writes each output into every CTA that reads it:
// its own buffer, or another's through distributed shared memory with st.async, which counts the bytes on the
// reader's transaction barrier (mbarrier) for that layer; the reader waits there, not the writer. A relaxed cluster
// barrier, arrived at once a CTA has read a buffer and waited on a layer later, keeps a writer from overwriting a
// buffer another CTA still reads.
// With groups in contiguous runs of the tables' order few outputs cross (tools/spdnn/spdnn_cluster_model: 1.6% of
// layer 2's inputs, doubling a layer). At the tile's last layer each CTA hands its survivor masks to the others (the
// tile's mask is their OR); CTA 0 counts them and takes the tile's output slot; every CTA writes its own rows of y.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "conv/tensorcore/mma_sm80.cuh"
#include "core/cuda_check.h"
#include "core/device_info.h"
#include "core/status.h"
#include "sparse/sparse.h"
#include "sparse/tc_pieces.cuh"
#include "sparse/tc_tables.h"

namespace jhdnn::sparse {
namespace {

constexpr int kT = 16;             // images of a tile
constexpr int kNT = kT / 8;        // 8-image n-tiles
constexpr int kW = kTcBlocks;      // blocks a group reads
constexpr int kGroupsPerWarp = 4;  // groups a warp owns (its A fragments in registers: 4 x 2 x 4 x 2 registers)
constexpr int kMaxWarps = 16;      // a CTA's rows <= 16 x 4 x 16 = 1024
constexpr int kCtaRows = kMaxWarps * kGroupsPerWarp * 16;
static_assert(kCtaRows == kTcCtaRows, "sparse.h's kTcCtaRows is this kernel's CTA");
constexpr int kMaskBar = kTcMaxLayers, kSlotBar = kTcMaxLayers + 1;  // a cluster's tile barriers, after the layer ones

struct TcLayer {
  const uint4* afrag;  // groups x 2 x 32 lanes (tc_tables.h)
  const int* bcol;     // groups x 2: the block's first renamed column (a cluster: its first row in the CTA's buffer)
  const int* order;    // n: row order[16 g + r] is row r of group g
  const int* label;    // n: input i's renamed column
  const int* gbcol;    // groups x 2: the blocks' renamed columns (bcol itself without a cluster)
  // A cluster only (TcClusterSlots): the input at each renamed column (label's inverse), each CTA's slot of each
  // class of 16 renamed columns (ctas x classes, -1: not read there) and the class at each slot (ctas x max_slots).
  const int* inv;
  const int* slot;
  const int* cls;
  int max_slots;
};

struct TcArgs {
  TcLayer layer[kTcMaxLayers];
  int layers, n, groups, max_active;
  int ctas;       // the cluster's CTAs (1: one CTA a tile)
  int slot_rows;  // a cluster: the most rows of any layer's input buffer in a CTA (16 x max_slots)
  float bias, clamp;
  int* counts;  // [0] the images on entry (read), [1 .. layers] added to
  const int* active_rows;
  const int* ids_in;
  const float* x;
  int64_t ldx;
  bool x_vec;  // x 16-byte aligned and ldx a multiple of 4: 16-byte copies where 4 list positions are adjacent
  float* y;
  int64_t ldy;
  int* rows_out;  // NULL: the compacted output (survivor t's features in column t of y)
  int* ids_out;
};

// Shared memory after the two feature buffers: per layer its fragments' address, block columns and output
// destinations (plane offsets; a cluster also the other CTAs' destinations); layer 1's plane offsets (a cluster: the
// inputs of the raw rows instead, raw row k at plane row k); per layer the tile's survivor mask and this CTA's
// survivor count; the tile's first output slot and its survivors' positions (write_tile_survivors). A CTA computes
// `rows` rows of a layer (n, or 1024 in a cluster); its buffers hold `slot_rows` rows of planes (a cluster: 16 x the
// most slots of a layer; else n), `raw_rows` rows of the raw fp32 tile (a cluster: 16 x layer 1's most slots; else n)
// or the last layer's stage.
struct SmemLayout {
  size_t span, heads, mbar, incoming, bcol, dst, rdst, row, in, live, masks, count, slot, total;
};
__host__ __device__ SmemLayout smem_layout(int pieces, int n, int layers, int ctas, int slot_rows, int raw_rows) {
  SmemLayout m{};
  const int rows = n / ctas;
  const size_t planes = size_t(pieces) * slot_rows * 32, raw = size_t(kT) * raw_rows * 4, stage = size_t(kT) * rows * 4;
  m.span = planes > raw ? planes : raw;  // the planes, or the raw fp32 tile, or the stage
  m.span = m.span > stage ? m.span : stage;
  m.heads = 2 * m.span;
  // (a cluster: per layer the transaction barrier of the copies other CTAs write here, and their bytes a tile)
  m.mbar = m.heads + kTcMaxLayers * sizeof(void*);
  m.incoming = m.mbar + (ctas > 1 ? (kTcMaxLayers + 2) * 8 : 0);  // (and the tile's: kMaskBar, kSlotBar)
  m.bcol = m.incoming + (ctas > 1 ? kTcMaxLayers * 4 : 0);
  m.dst = m.bcol + size_t(layers) * (rows / 16) * kW * 4;
  m.rdst = m.dst + size_t(layers) * rows * 4;
  m.row = m.rdst + (ctas > 1 ? size_t(layers) * rows * 4 : 0);
  m.in = m.row + (ctas > 1 ? 0 : size_t(raw_rows) * 4);  // (a cluster's raw row k: plane row k, no table)
  m.live = m.in + (ctas > 1 ? size_t(raw_rows) * 4 : 0);
  m.masks = m.live + kTcMaxLayers * 4;  // (a cluster: every CTA's masks of the tile, ctas x kTcMaxLayers)
  m.count = m.masks + (ctas > 1 ? size_t(ctas) * kTcMaxLayers * 4 : 0);
  m.slot = m.count + kTcMaxLayers * 4;
  m.total = m.slot + (1 + kT) * 4;
  return m;
}
__host__ __device__ SmemLayout smem_layout(int pieces, const TcArgs& a) {
  return a.ctas > 1 ? smem_layout(pieces, a.n, a.layers, a.ctas, a.slot_rows, 16 * a.layer[0].max_slots)
                    : smem_layout(pieces, a.n, a.layers, 1, a.n, a.n);
}

// Distributed shared memory (a cluster; PTX ISA "Parallel synchronization and communication"):
// - cluster_addr: this CTA's shared address p in CTA `rank`'s window; cluster_add: an add there (ordered for its
//   readers by a release / acquire barrier);
// - push, push16: a store there that completes 4 / 16 bytes of the transaction barrier `mbar` (in the same CTA's
//   window): its reader waits on that barrier (mbar_expect: the bytes a phase takes; mbar_wait: a phase's end), and
//   the writer does not wait at all;
// - cluster_sync: the barrier of all the cluster's threads, release / acquire (its release is a MEMBAR.ALL.GPU in
//   SASS: ~9% of the stall samples when every layer ended with one, session 52's ncu): only at the start and the
//   end; and its two halves without the release, for the layers: cluster_arrive once a CTA has read a buffer,
//   cluster_wait before writing into another CTA's copy of it, a layer later.
__device__ __forceinline__ unsigned cluster_addr(const void* p, unsigned rank) {
  unsigned d;
  const unsigned a = unsigned(__cvta_generic_to_shared(p));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(rank));
  return d;
}
__device__ __forceinline__ void cluster_add(unsigned addr, unsigned v) {
  asm volatile("red.shared::cluster.add.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void push(unsigned addr, uint32_t v, unsigned mbar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(addr), "r"(v),
               "r"(mbar)
               : "memory");
}
__device__ __forceinline__ void push16(unsigned addr, uint4 v, unsigned mbar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n"
               ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(mbar)
               : "memory");
}
__device__ __forceinline__ void mbar_init(uint64_t* m) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(unsigned(__cvta_generic_to_shared(m))) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t* m, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(unsigned(__cvta_generic_to_shared(m))),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* m, unsigned parity) {
  const unsigned a = unsigned(__cvta_generic_to_shared(m));
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(a), "r"(parity)
        : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory"); }

// cp.async of `size` (4 or 16) bytes, zero-filled where src_bytes is 0.
template <int kSize>
__device__ __forceinline__ void copy_async(void* dst, const float* src, int src_bytes) {
  const unsigned d = unsigned(__cvta_generic_to_shared(dst));
  if constexpr (kSize == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes) : "memory");
}

// A tile's columns: lane r < 16 of every warp gets list position tile x 16 + r's column of x (-1 past the count).
// Loaded a tile ahead, for load_raw (session 53: loaded in it, its latency stalled every warp's first shuffle, 3.7%
// of the cluster kernel's stall samples).
__device__ __forceinline__ int tile_col(const TcArgs& a, int tile, int count) {
  const int lane = int(threadIdx.x & 31), r = tile * kT + lane;
  return lane < kT && r < count ? __ldg(a.active_rows + r) : -1;
}

// The tile's input, raw: for each raw row k the 16 list positions' features of input k (a cluster: of input in[k])
// (64 bytes, zero past the count), read at their columns (my_col: tile_col's) of x. A warp's lanes 0-15 hold the 16
// columns; item q is row q / 4's columns c .. c + 3, c = 4 (q % 4), the same c in all of a thread's items (the
// block is a multiple of 4 threads), so each thread takes its 4 columns once: 4 adjacent ones starting at a multiple
// of 4 are one 16-byte copy, others four 4-byte ones.
__device__ __forceinline__ void load_raw(const TcArgs& a, int my_col, int raw_rows, const int* in, float* raw) {
  const int c = 4 * int(threadIdx.x & 3);
  int col[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) col[e] = __shfl_sync(0xffffffffu, my_col, c + e);
  const bool vec = a.x_vec && col[0] >= 0 && (col[0] & 3) == 0 && col[1] == col[0] + 1 && col[2] == col[0] + 2 &&
                   col[3] == col[0] + 3;
  for (int k = int(threadIdx.x >> 2); k < raw_rows; k += int(blockDim.x >> 2)) {
    const float* const xi = a.x + size_t(in != nullptr ? in[k] : k) * size_t(a.ldx);
    float* const dst = raw + k * kT + c;
    if (vec) {
      copy_async<16>(dst, xi + col[0], 16);
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) copy_async<4>(dst + e, col[e] >= 0 ? xi + col[e] : a.x, col[e] >= 0 ? 4 : 0);
    }
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// The last layer's outputs of the tile's live images (mask, not 0; after the barrier that completed it) to y, and
// their list entries. A lane's C values c (its warp's groups g0 .., local rows p = 16 (g0 + q) + gid, + 8, rows
// dst[p] of y; images 8 nt + 2 tig, + 1) are first staged in `stage` (the buffer the layer read: local row p's live
// images at their ranks, stage[16 p + rank]) while thread 0 takes the tile's first slot (s_slot[0]) and threads 0-15
// note the positions of the live images by rank (s_slot[1 + rank]); after a barrier the block writes y from the
// stage, consecutive threads consecutive columns of a row: one store per feature, not one per lane and C value
// whether its image lives or not (session 51: the old per-lane stores were 7.5% of the stall samples, lg throttle).
// Columns: r0 + the image's position in the tile, or with rows_out NULL the slot itself (none at or past
// max_active). A cluster (kCluster): CTA 0 takes the slot and hands it to every CTA's s_slot[0] by st.async on their
// slot barriers (one phase a tile with survivors: slot_phase), and writes the list; each CTA writes its own rows.
template <bool kCluster, int kNT>
__device__ __forceinline__ void write_tile_survivors(const TcArgs& a, const float (&c)[kGroupsPerWarp][kNT][4],
                                                     const int* dst, int g0, int lane, int tile, unsigned mask,
                                                     unsigned rank, float* stage, int* s_slot, uint64_t* slot_bar,
                                                     unsigned& slot_phase) {
  const int gid = lane >> 2, tig = lane & 3, r0 = tile * kT, cnt = __popc(mask), rows = a.n / a.ctas;
  if constexpr (kCluster)
    if (threadIdx.x == 0) mbar_expect(slot_bar, 4u);  // (CTA 0's 4 bytes: the slot)
  if (threadIdx.x == 0 && rank == 0) {
    const int slot = atomicAdd(a.counts + a.layers, cnt);
    if constexpr (kCluster) {
      for (int r = 0; r < a.ctas; ++r)
        push(cluster_addr(s_slot, unsigned(r)), uint32_t(slot), cluster_addr(slot_bar, unsigned(r)));
    } else {
      s_slot[0] = slot;
    }
  }
  if (threadIdx.x < unsigned(kT) && ((mask >> threadIdx.x) & 1u))
    s_slot[1 + __popc(mask & ((1u << threadIdx.x) - 1u))] = int(threadIdx.x);
#pragma unroll
  for (int q = 0; q < kGroupsPerWarp; ++q) {
    const int p0 = (g0 + q) * 16 + gid, p1 = p0 + 8;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int t = 8 * nt + 2 * tig + e;
        if (!((mask >> t) & 1u)) continue;
        const int rank_t = __popc(mask & ((1u << t) - 1u));
        stage[p0 * kT + rank_t] = c[q][nt][e];
        stage[p1 * kT + rank_t] = c[q][nt][2 + e];
      }
  }
  __syncthreads();
  if constexpr (kCluster) {
    mbar_wait(slot_bar, slot_phase);
    slot_phase ^= 1u;
  }
  const int slot = s_slot[0];
  if (rank == 0 && threadIdx.x < unsigned(cnt) && slot + int(threadIdx.x) < a.max_active) {
    const int r = r0 + s_slot[1 + threadIdx.x];
    if (a.rows_out != nullptr) a.rows_out[slot + threadIdx.x] = r;
    a.ids_out[slot + threadIdx.x] = a.ids_in[r];
  }
  // item e: local row p = e / cnt, its k-th live image. (e + 0.5) / cnt lies at least 1 / 32 from an integer and the
  // float product's error is below 16384 x 2^-23 (e < rows x 16 <= 2^14): the floor is exact.
  const float inv = 1.f / float(cnt);
  for (int e = int(threadIdx.x); e < rows * cnt; e += int(blockDim.x)) {
    const int p = int(__fmul_rn(float(e) + 0.5f, inv)), k = e - p * cnt;
    const int col = a.rows_out != nullptr ? r0 + s_slot[1 + k] : slot + k;
    if (col < a.max_active) a.y[size_t(dst[p]) * size_t(a.ldy) + size_t(col)] = stage[p * kT + k];
  }
}

// The destinations of layer l's output rows in a cluster (the CTA's rows p, row order[rows x rank + p]): its input
// slot in each CTA whose groups read it in layer l + 1, as a plane offset. This CTA's in dst[p] (-1: none), the
// others' in rdst[p], two 16-bit halves (rank << 12 | offset / 16; 0xffff: none). The last layer's: the row of y.
__device__ void cluster_destinations(const TcArgs& a, int l, unsigned rank, int rows, int* dst, unsigned* rdst) {
  const TcLayer& L = a.layer[l];
  const bool last = l + 1 == a.layers;
  const TcLayer& next = a.layer[last ? l : l + 1];
  const int classes = a.n / 16;
  for (int p = int(threadIdx.x); p < rows; p += int(blockDim.x)) {
    const int j = L.order[int(rank) * rows + p];
    if (last) {
      dst[p] = j;
      rdst[p] = ~0u;
      continue;
    }
    int ranks[2], at[2];
    const int to = tc_cluster_destinations(next.label[j], a.ctas, classes, next.slot, ranks, at);
    int here = -1;
    unsigned there = ~0u;
    for (int d = 0, half = 0; d < to; ++d) {
      const int off = plane_offset(plane_row(at[d]), 0);
      if (ranks[d] == int(rank)) {
        here = off;
      } else {
        there = (there & ~(0xffffu << (16 * half))) | (unsigned(ranks[d] << 12 | off >> 4) << (16 * half));
        ++half;
      }
    }
    dst[p] = here;
    rdst[p] = there;
  }
}

// kCluster: a.ctas > 1 CTAs a tile, launched as a cluster of that size (the CTA's rank: blockIdx.x % ctas).
template <int kPieces, bool kCluster>
__global__ void __launch_bounds__(kMaxWarps * 32, 1) resident_tc_kernel(TcArgs a) {
  extern __shared__ float4 smem4[];
  char* const base = reinterpret_cast<char*>(smem4);
  const SmemLayout m = smem_layout(kPieces, a);
  const int span = int(m.span), groups = a.groups;  // (a CTA's groups)
  const int rows = groups * 16, plane = (kCluster ? a.slot_rows : a.n) * 32;
  const unsigned rank = kCluster ? blockIdx.x % unsigned(a.ctas) : 0u;
  const uint4** const s_afrag = reinterpret_cast<const uint4**>(base + m.heads);
  uint64_t* const s_mbar = reinterpret_cast<uint64_t*>(base + m.mbar);
  unsigned* const s_incoming = reinterpret_cast<unsigned*>(base + m.incoming);
  int* const s_bcol = reinterpret_cast<int*>(base + m.bcol);
  int* const s_dst = reinterpret_cast<int*>(base + m.dst);
  unsigned* const s_rdst = reinterpret_cast<unsigned*>(base + m.rdst);
  int* const s_row = reinterpret_cast<int*>(base + m.row);
  int* const s_in = reinterpret_cast<int*>(base + m.in);
  unsigned* const s_live = reinterpret_cast<unsigned*>(base + m.live);
  unsigned* const s_masks = reinterpret_cast<unsigned*>(base + m.masks);
  int* const s_count = reinterpret_cast<int*>(base + m.count);
  int* const s_slot = reinterpret_cast<int*>(base + m.slot);
  // The tables: layer l's output row order[16 g + r] goes to layer l + 1's renamed input label[that row], kept as
  // that input's byte offset in a plane, plane_offset(plane_row(label), 0) (the other half's: ^ 16), so that the
  // epilogue does no index arithmetic (session 51); the last layer's to its own name, a row of y. Layer 1's input i
  // at plane_offset(plane_row(label[i]), 0) (s_row). A cluster: the CTA's groups and rows only, its block columns
  // in its own buffer, the destinations in every CTA (cluster_destinations), and its raw rows: layer 1's slots'
  // inputs in slot order (s_in), raw row k at plane row k (no s_row: its 4 bytes a raw row decide whether a call
  // that starts at a layer of 96 slots fits, session 54). (Static layer indices: a parameter array indexed at run
  // time would be copied to the stack.)
  int raw_rows = a.n;
#pragma unroll
  for (int l = 0; l < kTcMaxLayers; ++l) {
    if (l >= a.layers) break;
    const TcLayer& L = a.layer[l];
    const int first = int(rank) * groups;  // (the CTA's first group)
    if (threadIdx.x == 0) s_afrag[l] = L.afrag + size_t(first) * kW * 32;
    for (int t = int(threadIdx.x); t < groups * kW; t += int(blockDim.x))
      s_bcol[l * groups * kW + t] = L.bcol[first * kW + t] * 32;  // (the block's first plane row, in bytes)
    if constexpr (kCluster) {
      cluster_destinations(a, l, rank, rows, s_dst + l * rows, s_rdst + l * rows);
      if (l == 0) {
        const int* const cls = L.cls + int(rank) * L.max_slots;
        int slots = 0;
        while (slots < L.max_slots && cls[slots] >= 0) ++slots;
        raw_rows = 16 * slots;
        for (int k = int(threadIdx.x); k < raw_rows; k += int(blockDim.x)) s_in[k] = L.inv[16 * cls[k >> 4] + (k & 15)];
      }
    } else {
      const int* const next_label = l + 1 < a.layers ? a.layer[(l + 1) % kTcMaxLayers].label : nullptr;
      for (int t = int(threadIdx.x); t < a.n; t += int(blockDim.x)) {
        const int j = L.order[t];
        s_dst[l * a.n + t] = next_label != nullptr ? plane_offset(plane_row(next_label[j]), 0) : j;
      }
      if (l == 0)
        for (int i = int(threadIdx.x); i < a.n; i += int(blockDim.x))
          s_row[i] = plane_offset(plane_row(L.label[i]), 0);
    }
  }
  if (int(threadIdx.x) < kTcMaxLayers) {
    s_live[threadIdx.x] = 0u;
    s_count[threadIdx.x] = 0;
  }
  if constexpr (kCluster) {  // the transaction barriers, and the bytes the other CTAs' copies bring each a tile
    if (int(threadIdx.x) < kTcMaxLayers) s_incoming[threadIdx.x] = 0u;
    if (threadIdx.x == 0) {
      for (int l = 0; l + 1 < a.layers; ++l) mbar_init(s_mbar + l);
      mbar_init(s_mbar + kMaskBar);
      mbar_init(s_mbar + kSlotBar);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    cluster_sync();  // (every CTA's counts zero and barriers set before another adds to them)
    for (int l = 0; l + 1 < a.layers; ++l)  // (32 bytes a row and piece: 16 images of 2 bytes)
      for (int p = int(threadIdx.x); p < rows; p += int(blockDim.x))
        for (int h = 0; h < 2; ++h) {
          const unsigned e = (s_rdst[l * rows + p] >> (16 * h)) & 0xffffu;
          if (e != 0xffffu) cluster_add(cluster_addr(s_incoming + l, e >> 12), 32u * kPieces);
        }
  }
  // (a CTA without a tile reaches no other barrier before thread 0 flushes s_count; a cluster's CTAs all have
  // started, and CTA 0's masks are zero, before any writes into another's shared memory)
  if constexpr (kCluster) cluster_sync();
  else __syncthreads();
  const int* const raw_in = kCluster ? s_in : nullptr;
  const int count = min(a.counts[0], a.max_active);
  const int tiles = (count + kT - 1) / kT;
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int gid = lane >> 2, tig = lane & 3, g0 = warp * kGroupsPerWarp;
  // This lane's ldmatrix row: matrix lane / 8 (bit 0: k + 8, bit 1: images 8-15), row lane % 8.
  // A block starts at a multiple of 16 rows, so its row k's offset is the block's plus plane_offset(k, half).
  const int ld_off = plane_offset((lane & 7) + 8 * ((lane >> 3) & 1), lane >> 4);
  uint4 af[kGroupsPerWarp][kW];
  auto load_frags = [&](const uint4* afrag, uint4 (&f)[kGroupsPerWarp][kW]) {
#pragma unroll
    for (int q = 0; q < kGroupsPerWarp; ++q)
#pragma unroll
      for (int b = 0; b < kW; ++b) {
        // (asm volatile: the compiler keeps it after the MMAs' asm that read f. ptxas still schedules it: called
        // right after the MMAs, the cluster kernel's loads went above them into other registers, moved over after,
        // so the caller issues them after the layer's barrier)
        const uint4* const src = afrag + (size_t(g0 + q) * kW + b) * 32 + lane;
        asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(f[q][b].x), "=r"(f[q][b].y), "=r"(f[q][b].z), "=r"(f[q][b].w)
                     : "l"(src));
      }
  };
  load_frags(s_afrag[0], af);
  const __nv_bfloat162 clamp2 = __float2bfloat162_rn(a.clamp);  // (one piece's epilogue: relu_clamp_pair)
  // A cluster: bit l set where a row of this warp's in layer l has no reader in this CTA but one in another (none in
  // the challenge's layers), so that the epilogue tests for those copies only in such layers (session 53: the test
  // a group was ~5% of the instructions).
  unsigned remote_only = 0u;
  if constexpr (kCluster) {
    for (int l = 0; l + 1 < a.layers; ++l)
      for (int p = g0 * 16 + lane; p < (g0 + kGroupsPerWarp) * 16; p += 32)
        if (s_dst[l * rows + p] < 0 && s_rdst[l * rows + p] != ~0u) remote_only |= 1u << l;
    remote_only = __reduce_or_sync(0xffffffffu, remote_only);
  }
  // A cluster takes the tiles cluster, cluster + clusters, ...; its CTAs the same ones.
  const int step = int(gridDim.x) / (kCluster ? a.ctas : 1);
  int tile = int(blockIdx.x) / (kCluster ? a.ctas : 1);
  if (tile < tiles) load_raw(a, tile_col(a, tile, count), raw_rows, raw_in, reinterpret_cast<float*>(base));
  int in = 0;  // the buffer holding the raw tile, then the current layer's input
  unsigned phase = 0u;  // a cluster: the tile's phase of the transaction barriers (each completes one a tile)
  unsigned slot_phase = 0u;  // (the slot barrier's: one a tile with survivors)
  for (; tile < tiles; tile += step) {
    // (the next tile's list positions' columns, for its load_raw in this tile's last layer)
    const int next_col = tile + step < tiles ? tile_col(a, tile + step, count) : -1;
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    __syncthreads();  // (the first time also the tables)
    if constexpr (kCluster)
      if (threadIdx.x == 0) {
        for (int l = 0; l + 1 < a.layers; ++l) mbar_expect(s_mbar + l, s_incoming[l]);
        // (the masks: every CTA's last word, and at CTA 0 every CTA's words of all the layers)
        mbar_expect(s_mbar + kMaskBar, 4u * unsigned(a.ctas) * (rank == 0 ? unsigned(a.layers) : 1u));
      }
    {  // the raw tile split into layer 1's planes in the other buffer: raw row k at s_row[k] (a cluster: at plane row
       // k); item q = row k's half h (images 8 h .. 8 h + 7), two 16-byte loads and one 16-byte store a piece
       // (session 51: a pair of images an item took 12.9% of the instructions)
      const float4* const raw = reinterpret_cast<const float4*>(base + in * span);
      char* const planes = base + (in ^ 1) * span;
      for (int q = int(threadIdx.x); q < raw_rows * 2; q += int(blockDim.x)) {
        const float4 v0 = raw[2 * q], v1 = raw[2 * q + 1];  // (row q / 2's images 8 (q & 1) ..: float4 2 q, 2 q + 1)
        uint32_t p[4][kPieces];
        split_pair<kPieces>(v0.x, v0.y, p[0]);
        split_pair<kPieces>(v0.z, v0.w, p[1]);
        split_pair<kPieces>(v1.x, v1.y, p[2]);
        split_pair<kPieces>(v1.z, v1.w, p[3]);
        const int off = (kCluster ? plane_offset(plane_row(q >> 1), 0) : s_row[q >> 1]) ^ ((q & 1) << 4);
#pragma unroll
        for (int piece = 0; piece < kPieces; ++piece)
          *reinterpret_cast<uint4*>(planes + piece * plane + off) = make_uint4(p[0][piece], p[1][piece], p[2][piece],
                                                                               p[3][piece]);
      }
      in ^= 1;
      __syncthreads();
      if constexpr (kCluster) cluster_arrive();  // (this CTA has read its raw tile: layer 1 may write there)
    }
    for (int l = 0; l < a.layers; ++l) {
      const bool last = l + 1 == a.layers;
      const char* const cur = base + in * span;
      char* const other = base + (in ^ 1) * span;
      // The last layer writes no buffer: the other one takes the next tile's raw input meanwhile.
      if (last && tile + step < tiles)
        load_raw(a, next_col, raw_rows, raw_in, reinterpret_cast<float*>(other));
      const int* const bcol = s_bcol + l * groups * kW;
      const unsigned cur_addr = unsigned(__cvta_generic_to_shared(cur));
      if constexpr (kCluster)  // (the other CTAs' copies of the inputs: written in the layer before)
        if (l > 0) mbar_wait(s_mbar + l - 1, phase);
      // One piece: the bias is C's initial value, so that the tensor cores add it (one quad of registers for every
      // first MMA, where adding it after took an FADD a value; the sum is rounded in another order, as one piece
      // allows). `pairs`: one piece and not the last layer, the epilogue below.
      const bool pairs = kPieces == 1 && !last;
      const float c_init = kPieces == 1 ? a.bias : 0.f;  // (one piece's last layer too)
      float c[kGroupsPerWarp][kNT][4];
#pragma unroll
      for (int q = 0; q < kGroupsPerWarp; ++q)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) c[q][nt][e] = c_init;
#pragma unroll
      for (int q = 0; q < kGroupsPerWarp; ++q)
#pragma unroll
        for (int b = 0; b < kW; ++b) {
          const uint32_t afr[4] = {af[q][b].x, af[q][b].y, af[q][b].z, af[q][b].w};
          const unsigned at = cur_addr + unsigned(bcol[(g0 + q) * kW + b] + ld_off);
#pragma unroll
          for (int piece = 0; piece < kPieces; ++piece) {
            const unsigned addr = at + unsigned(piece * plane);
            uint32_t r0, r1, r2, r3;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                         : "r"(addr));
            const uint32_t b0[2] = {r0, r1}, b1[2] = {r2, r3};  // images 0-7, 8-15
            jhdnn::tc::Mma<__nv_bfloat16>::run(c[q][0], afr, b0);
            jhdnn::tc::Mma<__nv_bfloat16>::run(c[q][1], afr, b1);
          }
        }
      // A cluster: every CTA has read the buffer this layer's copies go to (its raw tile or the layer before's
      // input), and this one has read this layer's input (its reads are in registers).
      if constexpr (kCluster) {
        cluster_wait();
        if (!last) cluster_arrive();
      }
      // The next layer's fragments (after the last: the next tile's first), into the registers the MMAs have just
      // read: their load hides behind the epilogue and the layer's barriers. (Loaded into a second set before the
      // MMAs, as until session 53, the set took 32 registers of the 128 and 32 moves a layer to swap; loaded just
      // after the MMAs, ptxas hoisted the loads above them into other registers and moved them over.)
      load_frags(s_afrag[last ? 0 : l + 1], af);
      const int* const dst = s_dst + l * rows;
      // this lane's images' outputs OR-ed as bits (image 8 nt + 2 tig + e: live[nt][e]; the sign bit dropped at the
      // end: a clamped output is +0, -0 or positive)
      uint32_t live[kNT][2] = {};
      // One piece and not the last layer: ReLU and the clamp on the rounded pairs (relu_clamp_pair: the bits of
      // clamping in fp32, in fewer instructions), kept in pair[] for the copies below; live[nt][0] then ORs the
      // pairs' bits (split into live[nt][0], [1] after the loop). Such a layer's live bits count its rows only
      // (s_count): an output below bf16's least denormal (~2^-134) is a zero there, as it is in the next layer's
      // input. The last layer's survivors are taken from the fp32 outputs.
      uint32_t pair[kGroupsPerWarp][kNT][2];
      // C: rows gid, gid + 8 of group g0 + q; images 8 nt + 2 tig, + 1. Not the last layer: the rows' plane offsets
      // (the tables), the half nt's at ^ 16 nt; a cluster: -1 where this CTA does not read the row (the other CTAs'
      // copies below). The two forms in loops of their own: a test of `pairs` inside the unrolled loop made a branch
      // region for each (group, n-tile) (59d91a8's SASS: +33 M branch instructions).
      if (pairs) {
#pragma unroll
        for (int q = 0; q < kGroupsPerWarp; ++q) {
          const int p0 = (g0 + q) * 16 + gid, d0 = dst[p0], d1 = dst[p0 + 8];
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            const float* const o = c[q][nt];
            const uint32_t w0 = relu_clamp_pair(o[0], o[1], clamp2);  // (the bias: in C)
            const uint32_t w1 = relu_clamp_pair(o[2], o[3], clamp2);
            pair[q][nt][0] = w0;
            pair[q][nt][1] = w1;
            live[nt][0] |= w0 | w1;
            if (!kCluster || d0 >= 0) *reinterpret_cast<uint32_t*>(other + 4 * tig + (d0 ^ (nt << 4))) = w0;
            if (!kCluster || d1 >= 0) *reinterpret_cast<uint32_t*>(other + 4 * tig + (d1 ^ (nt << 4))) = w1;
          }
        }
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {  // (image 2 tig's bf16 is the pair's low half, 2 tig + 1's the high one)
          live[nt][1] = live[nt][0] & 0xffff0000u;
          live[nt][0] <<= 16;
        }
      } else {
#pragma unroll
        for (int q = 0; q < kGroupsPerWarp; ++q) {
          // (one piece comes here in its last layer only: `pairs` takes the others, so its stores are compiled out)
          constexpr bool kStores = kPieces > 1;
          const int p0 = (g0 + q) * 16 + gid;
          const int d0 = !kStores || last ? 0 : dst[p0], d1 = !kStores || last ? 0 : dst[p0 + 8];
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            float* const o = c[q][nt];
#pragma unroll
            for (int e = 0; e < 4; ++e) o[e] = fminf(fmaxf(kPieces == 1 ? o[e] : o[e] + a.bias, 0.f), a.clamp);
            live[nt][0] |= __float_as_uint(o[0]) | __float_as_uint(o[2]);
            live[nt][1] |= __float_as_uint(o[1]) | __float_as_uint(o[3]);
            if (kStores && !last) {
              uint32_t p0v[kPieces], p1v[kPieces];
              split_pair<kPieces>(o[0], o[1], p0v);
              split_pair<kPieces>(o[2], o[3], p1v);
              if (!kCluster || d0 >= 0)
#pragma unroll
                for (int piece = 0; piece < kPieces; ++piece)
                  *reinterpret_cast<uint32_t*>(other + piece * plane + 4 * tig + (d0 ^ (nt << 4))) = p0v[piece];
              if (!kCluster || d1 >= 0)
#pragma unroll
                for (int piece = 0; piece < kPieces; ++piece)
                  *reinterpret_cast<uint32_t*>(other + piece * plane + 4 * tig + (d1 ^ (nt << 4))) = p1v[piece];
            }
          }
        }
      }
      // A cluster: the copies for the other CTAs that read these rows next, of the rows this CTA does not read
      // itself (none in the challenge's layers: tools/spdnn/spdnn_cluster_model), in the layers where this warp has
      // any (remote_only), one test a group: the pieces (split again from the clamped C values, or one piece's
      // pairs), each 4-byte store counted on the reader's barrier of this layer. The rows this CTA also reads are
      // copied from its buffer after the layer's barrier, below.
      if constexpr (kCluster)
        if (!last && ((remote_only >> l) & 1u))
#pragma unroll
          for (int q = 0; q < kGroupsPerWarp; ++q) {
            const int p0 = (g0 + q) * 16 + gid;
            const unsigned rd[2] = {dst[p0] < 0 ? s_rdst[l * rows + p0] : ~0u,
                                    dst[p0 + 8] < 0 ? s_rdst[l * rows + p0 + 8] : ~0u};
            if ((rd[0] & rd[1]) == ~0u) continue;
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
              for (int r = 0; r < 2; ++r) {
                uint32_t v[kPieces];
                if constexpr (kPieces == 1) v[0] = pair[q][nt][r];
                else split_pair<kPieces>(c[q][nt][2 * r], c[q][nt][2 * r + 1], v);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const unsigned e = (rd[r] >> (16 * h)) & 0xffffu;
                  if (e == 0xffffu) continue;
                  const int off = int((e & 0xfffu) << 4) ^ (nt << 4);
                  const unsigned mbar = cluster_addr(s_mbar + l, e >> 12);
#pragma unroll
                  for (int piece = 0; piece < kPieces; ++piece)
                    push(cluster_addr(other + piece * plane + 4 * tig + off, e >> 12), v[piece], mbar);
                }
              }
          }
      unsigned alive = 0u;  // bit 8 nt + e for image 8 nt + 2 tig + e
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) alive |= (live[nt][e] << 1) != 0u ? 1u << (8 * nt + e) : 0u;
      alive = __reduce_or_sync(0xffffffffu, alive << (2 * tig));
      if (lane == 0 && alive != 0u) atomicOr(s_live + l, alive);
      if (last) {  // the tile's mask is complete after the barrier, and `cur` free: only the live images written
        unsigned mask;
        if constexpr (kCluster) {
          // Thread r hands this CTA's masks to CTA r by st.async on its mask barrier: the last layer's to every CTA,
          // the others' to CTA 0 (which counts them at the tile's end); the tile's mask is the OR of all CTAs'.
          __syncthreads();
          if (threadIdx.x < unsigned(a.ctas))
            for (int k = threadIdx.x == 0 ? 0 : l; k <= l; ++k)
              push(cluster_addr(s_masks + rank * kTcMaxLayers + k, threadIdx.x), s_live[k],
                   cluster_addr(s_mbar + kMaskBar, threadIdx.x));
          mbar_wait(s_mbar + kMaskBar, phase);
          mask = 0u;
          for (int r = 0; r < a.ctas; ++r) mask |= s_masks[r * kTcMaxLayers + l];
        } else {
          __syncthreads();
          mask = s_live[l];
        }
        if (mask != 0u)  // (block-uniform; a cluster: the same in every CTA)
          write_tile_survivors<kCluster>(a, c, dst, g0, lane, tile, mask, rank,
                                         reinterpret_cast<float*>(base + in * span), s_slot, s_mbar + kSlotBar,
                                         slot_phase);
      }
      if constexpr (kCluster) {
        if (!last) {  // (this CTA's own outputs; the other CTAs' copies: their transaction barrier)
          __syncthreads();
          // The other CTAs' copies of the rows this CTA reads too, from its buffer: thread t the rows t, t + 512, ..,
          // a row's 32 bytes a piece as two 16-byte stores (the same bytes at the reader's row: a block's swizzle
          // depends only on the row within it). Spread over every warp, where the epilogue left them to the few
          // warps whose groups the other CTAs read (session 52's ncu: the layer's barrier waited for those).
          for (int p = int(threadIdx.x); p < rows; p += int(blockDim.x)) {
            const int here = dst[p];
            const unsigned rd = s_rdst[l * rows + p];
            if (here < 0 || rd == ~0u) continue;
            for (int h = 0; h < 2; ++h) {
              const unsigned e = (rd >> (16 * h)) & 0xffffu;
              if (e == 0xffffu) continue;
              const unsigned to = e >> 12, mbar = cluster_addr(s_mbar + l, to);
              const int at = int((e & 0xfffu) << 4) & ~31;
#pragma unroll
              for (int piece = 0; piece < kPieces; ++piece)
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                  char* const row = other + piece * plane + 16 * half;
                  push16(cluster_addr(row + at, to), *reinterpret_cast<const uint4*>(row + (here & ~31)), mbar);
                }
            }
          }
        } else {  // CTA 0 counts the tile's layers (all CTAs' masks); the masks' next writes are the next tile's
          __syncthreads();
          if (threadIdx.x == 0) {
            for (int k = 0; rank == 0 && k < l; ++k) {
              unsigned any = 0u;
              for (int r = 0; r < a.ctas; ++r) any |= s_masks[r * kTcMaxLayers + k];
              s_count[k] += __popc(any);
            }
            for (int k = 0; k <= l; ++k) s_live[k] = 0u;
          }
        }
      } else {
        __syncthreads();
        if (threadIdx.x == 0) {  // (this mask's next write is the next tile's layer l, barriers later)
          if (!last) s_count[l] += __popc(s_live[l]);
          s_live[l] = 0u;
        }
      }
      in ^= 1;
    }
    phase ^= 1u;
  }
  if (threadIdx.x == 0 && rank == 0)
    for (int l = 0; l + 1 < a.layers; ++l)
      if (s_count[l] != 0) atomicAdd(a.counts + l + 1, s_count[l]);
  if constexpr (kCluster) cluster_sync();  // (no CTA leaves while another may still write into its shared memory)
}

// The cluster's CTAs at width n: one up to 1024 rows, else n / 1024 (each the single-CTA kernel's 64 groups).
int tc_ctas(int64_t n) { return n <= kCtaRows ? 1 : int(n / kCtaRows); }
// The CTAs a layer's tables are split for: tc_ctas, or 1 past a cluster's most rows (only the planes kernels run there,
// and they read the blocks' renamed columns).
int tc_table_ctas(int64_t n) { return tc_ctas(n) <= kTcMaxClusterCtas ? tc_ctas(n) : 1; }

// A descriptor's tables on `device` (built and published by the first call that needs them; resident_pack_list.h),
// or why they cannot be built. One allocation: afrag (groups x 2 x 512 bytes), bcol, order, label, and for a
// cluster (tc_ctas > 1) gbcol (groups x 2: the blocks' renamed columns, as bcol is without a cluster), inv, slot
// (ctas x classes) and cls (ctas x max_slots; published as the copy's aux).
Status tc_tables_of(cudaStream_t s, int device, bool pageable_ok, jhdnnSparseMatrixStruct& d, TcLayer* out) {
  const int n = int(d.rows), groups = n / 16, ctas = tc_table_ctas(n), classes = n / 16;
  const size_t afrag_bytes = size_t(groups) * kW * 32 * 16, bcol_bytes = size_t(groups) * kW * 4;
  auto carve = [&](float* p, int max_slots) {
    char* const b = reinterpret_cast<char*>(p);
    out->afrag = reinterpret_cast<const uint4*>(b);
    out->bcol = reinterpret_cast<const int*>(b + afrag_bytes);
    out->order = out->bcol + groups * kW;
    out->label = out->order + n;
    out->gbcol = ctas > 1 ? out->label + n : out->bcol;
    // (a cluster: gbcol, the blocks' renamed columns, which the cluster's bcol replaces; read by the streamed kernel)
    out->inv = ctas > 1 ? out->label + n + groups * kW : nullptr;
    out->slot = ctas > 1 ? out->inv + n : nullptr;
    out->cls = ctas > 1 ? out->slot + ctas * classes : nullptr;
    out->max_slots = max_slots;
  };
  int aux = 0;
  if (float* p = d.resident_tc.find(device, &aux)) {
    carve(p, aux);
    return Status::success();
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  JHDNN_CUDA_TRY(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED,
                      "the tensor-core resident path builds each layer's tables at its first call that uses it, "
                      "which cannot run inside a stream capture: make one call with these descriptors outside the "
                      "capture first");
  core::DeviceInfo dev;  // (the arrays' only reads on this path: checked as the packed copies' builds check them)
  dev.device = device;
  dev.pageable_memory_access = pageable_ok;
  JHDNN_TRY(core::check_device_pointer(d.col_ind, 4, "a layer's colInd", dev));
  JHDNN_TRY(core::check_device_pointer(d.values, 4, "a layer's values", dev));
  std::vector<int> idx(size_t(d.rows * d.width));
  std::vector<float> val(idx.size());
  JHDNN_CUDA_TRY(cudaMemcpyAsync(idx.data(), d.col_ind, idx.size() * 4, cudaMemcpyDefault, s));
  JHDNN_CUDA_TRY(cudaMemcpyAsync(val.data(), d.values, val.size() * 4, cudaMemcpyDefault, s));
  JHDNN_CUDA_TRY(cudaStreamSynchronize(s));
  for (int v : idx)
    if (v >= n)
      return core::fail(JHDNN_STATUS_BAD_PARAM, "a layer's colInd holds an index (%d) >= n = %d", v, n);
  TcLayerTables t;
  std::string why = build_tc_tables(d.rows, d.cols, d.width, idx.data(), val.data(), &t);
  TcClusterSlots cs;
  std::vector<int> inv;
  std::vector<int> gbcol;
  if (why.empty() && ctas > 1) {
    why = build_tc_cluster_slots(d.cols, ctas, t, &cs);
    gbcol = t.bcol;
    t.bcol = cs.bcol;  // (the blocks' rows in their CTA's buffer)
    inv.assign(size_t(n), 0);
    for (int i = 0; i < n; ++i) inv[size_t(t.label[size_t(i)])] = i;
  }
  if (!why.empty())
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED, "a layer does not fit the tensor-core resident path: %s",
                      why.c_str());
  // The device copy: t's arrays, then inv, slot, cls for a cluster (each a whole number of ints).
  std::vector<std::pair<const void*, size_t>> parts = {{t.afrag.data(), afrag_bytes},
                                                       {t.bcol.data(), bcol_bytes},
                                                       {t.order.data(), size_t(n) * 4},
                                                       {t.label.data(), size_t(n) * 4}};
  if (ctas > 1) {
    parts.push_back({gbcol.data(), gbcol.size() * 4});
    parts.push_back({inv.data(), inv.size() * 4});
    parts.push_back({cs.slot.data(), cs.slot.size() * 4});
    parts.push_back({cs.cls.data(), cs.cls.size() * 4});
  }
  size_t bytes = 0;
  for (const auto& part : parts) bytes += part.second;
  float* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                      "the tensor-core tables of a layer (%zu bytes) could not be allocated", bytes);
  }
  Status st = Status::success();
  size_t at = 0;
  for (const auto& part : parts) {
    if (st.ok())
      st = JHDNN_CUDA_STATUS(
          cudaMemcpyAsync(reinterpret_cast<char*>(p) + at, part.first, part.second, cudaMemcpyHostToDevice, s));
    at += part.second;
  }
  if (st.ok()) st = JHDNN_CUDA_STATUS(cudaStreamSynchronize(s));  // (complete before it is published)
  if (!st.ok()) {
    cudaFree(p);
    return st;
  }
  const int max_slots = ctas > 1 ? cs.max_slots : 0;
  float* const winner = d.resident_tc.publish(device, p, max_slots, &aux);
  if (winner != p && cudaFree(p) != cudaSuccess) cudaGetLastError();
  if (winner == nullptr)
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                      "the tensor-core tables of a layer could not be recorded (host allocation failed)");
  carve(winner, aux);
  return Status::success();
}

// The shared memory of a cluster's CTA with `slots` blocks in its busiest layer's buffer and layer 1's.
size_t cluster_smem_bytes(int pieces, int64_t n, int layer_count, int slots, int slots1) {
  return smem_layout(pieces, int(n), layer_count, tc_ctas(n), 16 * slots, 16 * slots1).total;
}

}  // namespace

size_t resident_tc_smem_bytes(int pieces, int64_t n, int layer_count) {
  const int ctas = tc_ctas(n);
  // (a cluster: the least its tables can need, each CTA's buffer holding its own 64 blocks; dnn_resident_tc checks
  // the tables' own need once they are built)
  return ctas > 1 ? cluster_smem_bytes(pieces, n, layer_count, 64, 64)
                  : smem_layout(pieces, int(n), layer_count, 1, int(n), int(n)).total;
}

// Loads the instantiations and raises their shared-memory limit to the block's most, once (jhdnnCreate): a limit
// set per call could be lowered by another thread's call between this call's set and its launch. The cluster kernel
// may run in clusters of up to 16 CTAs (non-portable past 8: the launch asks whether one fits).
Status load_dnn_resident_tc_kernels() {
  int device = 0, optin = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&device));
  JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  for (auto kernel : {resident_tc_kernel<1, false>, resident_tc_kernel<3, false>, resident_tc_kernel<1, true>}) {
    cudaFuncAttributes attr{};
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, kernel));
    JHDNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  }
  int major = 0;
  JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major >= 9)
    JHDNN_CUDA_TRY(
        cudaFuncSetAttribute(resident_tc_kernel<1, true>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  return Status::success();
}

// How many clusters of the cluster kernel fit at once. cudaOccupancyMaxActiveClusters took ~40 us a call (session
// 52: spdnn's API host time 0.23 ms with the head against 0.19 without); its answer depends only on the device, the
// cluster size and the shared memory, so each answer is kept (a handful of shapes in practice; forgotten past 64).
Status max_active_clusters(const cudaLaunchConfig_t& cfg, int device, int* clusters) {
  struct Fit {
    int device, ctas;
    size_t smem;
    int clusters;
  };
  static std::mutex mutex;
  static std::vector<Fit> fits;
  const int ctas = int(cfg.attrs[0].val.clusterDim.x);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const Fit& f : fits)
      if (f.device == device && f.ctas == ctas && f.smem == cfg.dynamicSmemBytes) {
        *clusters = f.clusters;
        return Status::success();
      }
  }
  JHDNN_CUDA_TRY(cudaOccupancyMaxActiveClusters(clusters, resident_tc_kernel<1, true>, &cfg));
  const std::lock_guard<std::mutex> lock(mutex);
  if (fits.size() >= 64) fits.clear();
  fits.push_back({device, ctas, cfg.dynamicSmemBytes, *clusters});
  return Status::success();
}

// Whether the streamed kernel can take a call at width n (one piece, n <= kTcStreamMaxN, its shared memory): it runs
// calls of more than kTcMaxLayers layers, and those whose tables the other kernels' shared memory cannot hold.
bool stream_fits(int64_t n, int pieces, size_t smem_optin) {
  return pieces == 1 && n <= kTcStreamMaxN && resident_tc_stream_smem_bytes(n) <= smem_optin;
}

// Whether the planes kernels (dnn_resident_tc_planes.cu) can take a call at width n: one piece, past the streamed
// kernel's widths. They run its calls of more than kTcMaxLayers layers, those whose tables the cluster kernel's shared
// memory cannot hold, and every call past a cluster's rows.
bool planes_fit(int64_t n, int pieces) { return pieces == 1 && n > kTcStreamMaxN; }

Status resident_tc_supported(int64_t n, int layer_count, int pieces, size_t smem_optin) {
  const int64_t most_cluster = int64_t(kCtaRows) * kTcMaxClusterCtas;
  if (n % 64 != 0 || (n > kCtaRows && n <= most_cluster && n % kCtaRows != 0))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "the tensor-core resident path takes n a multiple of 64 up to %d (16 warps of 4 groups of 16 "
                      "rows), a multiple of %d up to %lld (a cluster of CTAs of %d rows), or a multiple of 64 past "
                      "it; n = %lld",
                      kCtaRows, kCtaRows, (long long)most_cluster, kCtaRows, (long long)n);
  if (n > kCtaRows && pieces != 1)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "the tensor-core resident path runs n = %lld > %d on one bf16 piece a feature only (every layer "
                      "TENSOR_OP_MATH_ALLOW_CONVERSION): three pieces' planes do not fit in a CTA's shared memory "
                      "beside its tables", (long long)n, kCtaRows);
  if (n > most_cluster || (layer_count > kTcMaxLayers && planes_fit(n, pieces))) return Status::success();
  if (layer_count > kTcMaxLayers) {  // the streamed kernel (dnn_resident_tc_stream.cu)
    if (pieces != 1)
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                        "the tensor-core resident path runs more than %d layers in a call (%d given) on one bf16 piece "
                        "a feature only (every layer TENSOR_OP_MATH_ALLOW_CONVERSION): call again for more",
                        kTcMaxLayers, layer_count);
    const size_t stream_smem = resident_tc_stream_smem_bytes(n);
    if (stream_smem > smem_optin)
      return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                        "the tensor-core resident path needs %zu bytes of shared memory for more than %d layers at "
                        "n = %lld (%zu per block): call with at most %d layers",
                        stream_smem, kTcMaxLayers, (long long)n, smem_optin, kTcMaxLayers);
    return Status::success();
  }
  const size_t smem = resident_tc_smem_bytes(pieces, n, layer_count);
  if (smem > smem_optin && !stream_fits(n, pieces, smem_optin) && !planes_fit(n, pieces))
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "the tensor-core resident path needs %zu bytes of shared memory for %d layers at n = %lld "
                      "with %d bf16 piece%s a feature (%zu per block): call with fewer layers",
                      smem, layer_count, (long long)n, pieces, pieces == 1 ? "" : "s", smem_optin);
  return Status::success();
}

Status dnn_resident_tc(cudaStream_t s, int device, size_t smem_optin, int sms, bool pageable_ok,
                       jhdnnSparseMatrixStruct* const* wts, int layer_count, int pieces, float bias, float clamp_max,
                       int max_active, int* counts, const int* rows_in, const int* ids_in, const float* x,
                       int64_t ldx, float* y, int64_t ldy, int* rows_out, int* ids_out) {
  const int64_t n = wts[0]->rows;
  JHDNN_TRY(resident_tc_supported(n, layer_count, pieces, smem_optin));
  if (max_active == 0) return Status::success();
  // The streamed kernel (dnn_resident_tc_stream.cu) for more than kTcMaxLayers layers, and where the others' shared
  // memory cannot hold these layers' tables (checked below once they are built).
  auto streamed = [&]() -> Status {
    std::vector<const char*> tables(size_t(layer_count), nullptr);
    for (int l = 0; l < layer_count; ++l) {
      TcLayer t{};
      JHDNN_TRY(tc_tables_of(s, device, pageable_ok, *wts[l], &t));
      tables[size_t(l)] = reinterpret_cast<const char*>(t.afrag);  // (the allocation's start)
    }
    return dnn_resident_tc_stream(s, sms, tables.data(), layer_count, n, bias, clamp_max, max_active, counts, rows_in,
                                  ids_in, x, ldx, y, ldy, rows_out, ids_out);
  };
  // The planes kernels (dnn_resident_tc_planes.cu) past kTcStreamMaxN where the others cannot run these layers.
  auto planes = [&]() -> Status {
    std::vector<TcPlanesTables> tables(static_cast<size_t>(layer_count));
    for (int l = 0; l < layer_count; ++l) {
      TcLayer t{};
      JHDNN_TRY(tc_tables_of(s, device, pageable_ok, *wts[l], &t));
      tables[size_t(l)] = TcPlanesTables{t.afrag, t.gbcol, t.order, t.label};
    }
    return dnn_resident_tc_planes(s, sms, tables.data(), layer_count, n, bias, clamp_max, max_active, counts, rows_in,
                                  ids_in, x, ldx, y, ldy, rows_out, ids_out);
  };
  if (n > int64_t(kCtaRows) * kTcMaxClusterCtas || (layer_count > kTcMaxLayers && planes_fit(n, pieces)))
    return planes();
  if (layer_count > kTcMaxLayers) return streamed();  // (one piece, n <= kTcStreamMaxN: resident_tc_supported)
  TcArgs a{};
  for (int l = 0; l < layer_count; ++l) JHDNN_TRY(tc_tables_of(s, device, pageable_ok, *wts[l], &a.layer[l]));
  a.layers = layer_count;
  a.n = int(n);
  a.ctas = tc_ctas(n);
  a.groups = int(n / 16) / a.ctas;
  int slots = 0;
  for (int l = 0; l < layer_count; ++l) slots = std::max(slots, a.layer[l].max_slots);
  a.slot_rows = 16 * slots;
  a.max_active = max_active;
  a.bias = bias;
  a.clamp = clamp_max;
  a.counts = counts;
  a.active_rows = rows_in;
  a.ids_in = ids_in;
  a.x = x;
  a.ldx = ldx;
  a.x_vec = (reinterpret_cast<uintptr_t>(x) & 15u) == 0 && ldx % 4 == 0;
  a.y = y;
  a.ldy = ldy;
  a.rows_out = rows_out;
  a.ids_out = ids_out;
  const size_t smem = smem_layout(pieces, a).total;
  if (smem > smem_optin && stream_fits(n, pieces, smem_optin)) return streamed();
  if (smem > smem_optin && planes_fit(n, pieces)) return planes();
  const int tiles = (max_active + kT - 1) / kT;
  // (the kernels' shared-memory limit: load_dnn_resident_tc_kernels)
  if (a.ctas == 1) {
    auto kernel = pieces == 3 ? resident_tc_kernel<3, false> : resident_tc_kernel<1, false>;
    // Persistent: one CTA an SM (its shared memory), each looping over the tiles of the count it reads on the device.
    kernel<<<unsigned(std::min(sms, tiles)), unsigned(n / 64 * 32), smem, s>>>(a);
    return JHDNN_CUDA_STATUS(cudaGetLastError());
  }
  if (smem > smem_optin)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "the tensor-core resident path needs %zu bytes of shared memory per CTA for these %d layers at "
                      "n = %lld (a CTA's busiest layer reads %d blocks of 16 inputs; %zu per block): call with fewer "
                      "layers", smem, layer_count, (long long)n, slots, smem_optin);
  // Persistent clusters: as many as fit at once (one CTA an SM), each looping over its tiles.
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = unsigned(a.ctas);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.blockDim = dim3(kMaxWarps * 32);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.gridDim = dim3(unsigned(a.ctas));
  int clusters = 0;
  JHDNN_TRY(max_active_clusters(cfg, device, &clusters));
  if (clusters < 1)
    return core::fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                      "the tensor-core resident path at n = %lld runs clusters of %d CTAs of %zu bytes of shared "
                      "memory, and none fits on this device", (long long)n, a.ctas, smem);
  cfg.gridDim = dim3(unsigned(std::min(clusters, tiles) * a.ctas));
  return JHDNN_CUDA_STATUS(cudaLaunchKernelEx(&cfg, resident_tc_kernel<1, true>, a));
}

}  // namespace jhdnn::sparse
