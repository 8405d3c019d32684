// The tensor-core resident call past n = 4096 (jhdnnSparseDnnLayersForwardResident* with more than kTcMaxLayers
// layers, or whose tables the cluster kernel's shared memory cannot hold, every descriptor
// TENSOR_OP_MATH_ALLOW_CONVERSION): the planes kernels. Past n = 4096 a tile's features no longer fit one CTA's
// shared memory (the streamed kernel), and the cluster kernel sends about (C - 1) / C of a late layer's outputs to
// other CTAs and holds at most 8 layers' tables. Here the features live in device memory as two bf16 planes, one
// layer a launch: plane row r holds the feature of renamed input r (plane_row order, as the shared-memory planes) for
// every column of the call, 2 bytes a column, so a group's two input blocks are 2 x 16 rows of the plane. Each warp
// takes units of one group x 64 columns: the two blocks' 16 rows x 128 bytes into its shared memory (cp.async,
// swizzled so that ldmatrix reads them without bank conflicts), the two A fragments from the L2, per 8 columns two
// m16n8k16 MMAs with the bias as C's initial value, then ReLU and the clamp on the rounded bf16 pair, through a
// shared-memory stage to whole 128-byte rows at the output rows' next names; three units of a warp in flight (table
// entries two ahead, rows one ahead). Units run column-chunk by column-chunk (every group of chunk 0, then of chunk
// 1, ..), so that the two groups reading a block read it from the L2 close in time, and in the opposite direction
// every other layer, so that a layer first reads what the one before wrote last.
// A warp's units are runs of kRun consecutive groups of one chunk, so that the layer's live bits take one atomic a
// run.
//
// A late layer at n = 16384 and 1200 live columns moves ~28 MB from and ~40 MB to DRAM and took 29-32 us on the H200
// (ncu timelines, bench/results/d24bb3d3/; 36-41 us before the runs of groups below, session 58), where the exact
// graph path's, bound by its FFMA issue, takes ~60.
//
// Live columns: each layer ORs its outputs into a bit per column (alive_out; a column of all-zero outputs is dead, as
// everywhere in the sparse path) and skips the 8-column tiles whose inputs are all dead. After call layers 1, 2, 4, 8,
// .. (not the last) the live columns are compacted where that pays (a scan, then a gather into the other plane;
// planes_scan_kernel says when), so that the work shrinks with the survivors, as the pipeline's refreshes make it.
// The last layer runs twice, as in the streamed kernel: once for the survivors (from its fp32 outputs), whose list
// positions and ids a scan then writes in list order, then again to write their fp32 outputs into y.
//
// Per column this is the cluster kernel's arithmetic (the same fragments, MMAs, bias and rounding in the same order),
// so its outputs are the same bits as a chain of dnn_resident_tc calls over the same layers (tests/test_sparse_tc.cpp).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conv/tensorcore/mma_sm80.cuh"
#include "core/cuda_check.h"
#include "core/status.h"
#include "sparse/smem_access.cuh"
#include "sparse/sparse.h"
#include "sparse/tc_pieces.cuh"
#include "sparse/tc_tables.h"

namespace jhdnn::sparse {
namespace {

constexpr int kChunk = 64;              // columns of a unit: 8 n-tiles of m16n8k16
constexpr int kWarps = 4;               // a CTA's warps (each on units of its own)
constexpr int kThreads = kWarps * 32;
constexpr int kBlockBytes = 16 * kChunk * 2;           // a block's 16 plane rows x 64 columns (2 KiB)
constexpr int kInBytes = kTcBlocks * kBlockBytes;      // a unit's rows (two buffers a warp: one computed, one coming)
constexpr int kStageBytes = kBlockBytes;               // the unit's 16 output rows x 64 columns
constexpr int kUnitBytes = 2 * kInBytes + kStageBytes;  // 10 KiB of shared memory a warp
constexpr int kScanThreads = 1024;      // the scans' one CTA
constexpr int kGatherRows = 16;         // the input's conversion and the gathers: rows of a warp's item
// A warp takes runs of kRun consecutive groups of one chunk, their live bits OR-ed in registers and added to the
// layer's alive words by one atomic a run: a late layer's live columns are a few words on one or two L2 lines, which
// every unit read and OR-ed into before (session 59). n is a multiple of 64: the groups a multiple of kRun.
constexpr int kRun = 4;

// Where the call's state lives in its allocation (planes_layout).
struct PlanesLayout {
  size_t plane[2], alive[3], pos[2], src, base, ncols, phase, total;
};
PlanesLayout planes_layout(int64_t n, int64_t ld, int stages) {
  PlanesLayout m{};
  const size_t words = size_t(ld / 32);
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t p = at;
    at += (bytes + 255) / 256 * 256;
    return p;
  };
  for (size_t& p : m.plane) p = take(size_t(n) * size_t(ld) * 2);
  for (size_t& p : m.alive) p = take(words * 4);
  for (size_t& p : m.pos) p = take(size_t(ld) * 4);
  m.src = take(size_t(ld) * 4);
  m.base = take(words * 4);
  m.ncols = take(size_t(stages) * 4);
  m.phase = take(4);
  m.total = at;
  return m;
}

// One launch of a layer. kMode 0: a layer before the last, its outputs rounded into `out` at their next names;
// 1: the last layer, its live columns into alive_out only; 2: the last layer again, its survivors' fp32 outputs into
// y (their rows: the layer's rows themselves).
struct LayerArgs {
  const uint4* afrag;      // groups x 2 x 32 lanes (tc_tables.h)
  const int* bcol;         // groups x 2: the blocks' first renamed columns
  const int* order;        // n: row order[16 g + r] is row r of group g
  const int* next_label;   // kMode 0: the next layer's renaming
  int groups;
  int64_t ld;              // a plane row's columns (a multiple of kChunk)
  const int* ncols;        // the planes' live span (columns 0 .. *ncols - 1)
  bool reverse;            // chunks in descending order
  __nv_bfloat16* planes[2];  // the input is planes[cur ^ *phase], the output the other
  int cur;
  const int* phase;          // 1 where an odd number of compactions were skipped (planes_scan_kernel)
  const unsigned* alive_in;  // the input's live columns
  unsigned* alive_out;       // kMode 0 / 1: OR-ed into (zeroed before); kMode 2: the survivors
  unsigned* alive_clear;     // zeroed by CTA 0 (the array two layers on writes), or null
  int words;                 // ld / 32
  int* count_add;            // CTA 0 adds the input's live columns (the previous layer's survivors), or null
  float bias, clamp;
  float* y;                  // kMode 2
  int64_t ldy;
  const int* pos;            // kMode 2: each column's list position
  const int* base;           // kMode 2: each word's first survivor slot
  bool compacted;            // kMode 2: survivor s in column s of y (rowsOut NULL), else in its list position's
  int max_active;            // kMode 2: columns of y at or past it are not written
};

__device__ __forceinline__ void copy16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

// CTA 0's bookkeeping: clear the alive array two layers on, and count the input's live columns.
__device__ void layer_bookkeeping(const LayerArgs& a) {
  __shared__ int total;
  if (a.alive_clear != nullptr)
    for (int w = int(threadIdx.x); w < a.words; w += kThreads) a.alive_clear[w] = 0u;
  if (a.count_add == nullptr) return;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  int mine = 0;
  for (int w = int(threadIdx.x); w < a.words; w += kThreads) mine += __popc(__ldcg(a.alive_in + w));
  mine = __reduce_add_sync(0xffffffffu, mine);
  if ((threadIdx.x & 31) == 0 && mine != 0) atomicAdd(&total, mine);
  __syncthreads();
  if (threadIdx.x == 0 && total != 0) atomicAdd(a.count_add, total);
}

// A unit's table entries, loaded two units ahead (planes_layer_kernel): its columns and group, its blocks' first plane
// rows, its output rows.
struct UnitAhead {
  int c0 = 0, g = -1;  // g < 0: past the warp's units
  int r0 = 0, r1 = 0, j0 = 0, j1 = 0;
};
// The unit one ahead: what its compute reads besides its rows (the A fragments, the live columns of its input; kMode
// 0: the next labels of its rows, kMode 2: its two words' first survivor slots), loaded while the unit before it
// computes. (The labels are turned into plane rows where they are used, so that no instruction of the issuing code
// waits for their loads; session 59 measured no gain from it: the wait moved to the unit's end, where the loads of the
// unit one ahead are still not back.)
struct UnitNext {
  uint4 af0, af1;
  unsigned live0 = 0u, live1 = 0u;
  int p0 = 0, p1 = 0;
};

template <int kMode>
__global__ void __launch_bounds__(kThreads) planes_layer_kernel(const __grid_constant__ LayerArgs a) {
  __shared__ __align__(128) char smem[kWarps * kUnitBytes];
  if (blockIdx.x == 0) layer_bookkeeping(a);
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5), gid = lane >> 2, tig = lane & 3;
  const int64_t ld = a.ld;
  const int ncols = *a.ncols;
  const int chunks = (ncols + kChunk - 1) / kChunk;
  const int runs_per_chunk = a.groups / kRun, runs = chunks * runs_per_chunk;
  const unsigned wbase = unsigned(__cvta_generic_to_shared(smem)) + unsigned(warp * kUnitBytes);
  const unsigned stage = wbase + unsigned(2 * kInBytes);
  const __nv_bfloat162 clamp2 = __float2bfloat162_rn(a.clamp);
  const unsigned* const live_words = kMode == 2 ? a.alive_out : a.alive_in;
  const int ph = *a.phase;
  const __nv_bfloat16* const in = a.planes[a.cur ^ ph];
  __nv_bfloat16* const out = a.planes[a.cur ^ ph ^ 1];
  // This lane's ldmatrix row (lanes 0-15: rows 0-15 of a block at n-tile q; 16-31: the same rows at q + 1).
  const int lrow = lane & 15, lhalf = lane >> 4;
  const int wg = int(blockIdx.x) * kWarps + warp, stride = int(gridDim.x) * kWarps;
  // The warp's unit k: group kRun r + k % kRun of run r = wg + (k / kRun) stride (runs chunk by chunk). Three units of
  // a warp in flight: the table entries of unit k + 2 load while the rows of unit k + 1 come into one shared buffer
  // (cp.async) and unit k computes from the other, so no dependent load waits in a unit's path.
  auto load_ahead = [&](int k, UnitAhead& x) {
    const int run = wg + (k / kRun) * stride;
    if (run >= runs) {
      x.g = -1;
      return;
    }
    int chunk = run / runs_per_chunk;
    x.g = (run - chunk * runs_per_chunk) * kRun + k % kRun;
    if (a.reverse) chunk = chunks - 1 - chunk;
    x.c0 = chunk * kChunk;
    x.r0 = __ldg(a.bcol + 2 * x.g);
    x.r1 = __ldg(a.bcol + 2 * x.g + 1);
    x.j0 = __ldg(a.order + 16 * x.g + gid);
    x.j1 = __ldg(a.order + 16 * x.g + gid + 8);
  };
  // The unit's two blocks' 16 rows x 128 bytes into buffer `buf` (copy k = lane + 32 m: block m / 4, row k / 8 % 16,
  // 16 bytes k % 8, at 16-byte slot (k % 8) ^ (row % 8) of its row), unless all its columns are dead; one commit
  // group either way.
  auto issue = [&](const UnitAhead& x, unsigned buf, UnitNext& y) {
    if (x.g >= 0) {
      // (read-only in this launch: through the L1, where the SM's other warps find the same two words)
      const uint2 lv = __ldg(reinterpret_cast<const uint2*>(live_words + x.c0 / 32));
      y.live0 = lv.x;
      y.live1 = lv.y;
      y.af0 = __ldg(a.afrag + (2 * x.g) * 32 + lane);
      y.af1 = __ldg(a.afrag + (2 * x.g + 1) * 32 + lane);
      if constexpr (kMode == 0) {
        y.p0 = __ldg(a.next_label + x.j0);
        y.p1 = __ldg(a.next_label + x.j1);
      } else if constexpr (kMode == 2) {
        if (a.compacted) {
          const int2 bw = __ldg(reinterpret_cast<const int2*>(a.base + x.c0 / 32));
          y.p0 = bw.x;
          y.p1 = bw.y;
        }
      }
#pragma unroll
      for (int m = 0; m < 8; ++m) {
        const int k = lane + 32 * m, b = m >> 2, row = (k >> 3) & 15, c = k & 7;
        const __nv_bfloat16* src = in + size_t((b == 0 ? x.r0 : x.r1) + row) * size_t(ld) + size_t(x.c0 + 8 * c);
        copy16(buf + unsigned(b * kBlockBytes + row * 128 + ((c ^ (row & 7)) << 4)), src);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  };
  UnitAhead cur, nxt, far;
  UnitNext cn, nn;
  load_ahead(0, cur);
  load_ahead(1, nxt);
  issue(cur, wbase, cn);
  unsigned run0 = 0u, run1 = 0u;  // kMode 0 / 1: this lane's live outputs in the run so far (columns c0 + 0..63)
  for (int k = 0; cur.g >= 0; ++k) {
    load_ahead(k + 2, far);
    issue(nxt, wbase + unsigned(((k + 1) & 1) * kInBytes), nn);
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");  // (unit k's rows: all but the newest group)
    __syncwarp();
    const unsigned buf = wbase + unsigned((k & 1) * kInBytes);
    const int c0 = cur.c0;
    const unsigned live0 = cn.live0, live1 = cn.live1;
    if ((live0 | live1) != 0u) {  // (warp-uniform) else every column of the chunk dead
      const uint32_t a0[4] = {cn.af0.x, cn.af0.y, cn.af0.z, cn.af0.w}, a1[4] = {cn.af1.x, cn.af1.y, cn.af1.z, cn.af1.w};
      const size_t d0 = size_t(cur.j0) * size_t(a.ldy), d1 = size_t(cur.j1) * size_t(a.ldy);  // (kMode 2: y's rows)
      unsigned bits0 = 0u, bits1 = 0u;  // kMode 0 / 1: this lane's live outputs in the unit
#pragma unroll
      for (int q = 0; q < 8; q += 2) {
        const unsigned lw = q < 4 ? live0 : live1;
        const unsigned pair = (lw >> (8 * (q & 3))) & 0xffffu;  // (the tiles q, q + 1's input columns)
        if (pair == 0u) continue;  // (warp-uniform)
        uint32_t bf[kTcBlocks][4];
#pragma unroll
        for (int b = 0; b < kTcBlocks; ++b) {
          const int c = q + lhalf;
          const unsigned addr = buf + unsigned(b * kBlockBytes + lrow * 128 + ((c ^ (lrow & 7)) << 4));
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                       : "=r"(bf[b][0]), "=r"(bf[b][1]), "=r"(bf[b][2]), "=r"(bf[b][3])
                       : "r"(addr));
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int t = q + h;  // the n-tile: columns c0 + 8 t .. + 7
          if (((pair >> (8 * h)) & 0xffu) == 0u) continue;
          float c[4] = {a.bias, a.bias, a.bias, a.bias};
          const uint32_t b0[2] = {bf[0][2 * h], bf[0][2 * h + 1]}, b1[2] = {bf[1][2 * h], bf[1][2 * h + 1]};
          jhdnn::tc::Mma<__nv_bfloat16>::run(c, a0, b0);
          jhdnn::tc::Mma<__nv_bfloat16>::run(c, a1, b1);
          const int col = c0 + 8 * t + 2 * tig;
          const int shift = 8 * (t & 3) + 2 * tig;  // (this lane's two columns' bits in their word)
          unsigned mine = 0u;
          if constexpr (kMode == 0) {  // (into the stage: rows gid, gid + 8, 16-byte piece t at slot t ^ row % 8)
            const uint32_t w0 = relu_clamp_pair(c[0], c[1], clamp2), w1 = relu_clamp_pair(c[2], c[3], clamp2);
            const unsigned at = stage + unsigned(((t ^ gid) << 4) + 4 * tig);
            sts_u32(at + unsigned(gid * 128), w0);
            sts_u32(at + unsigned((gid + 8) * 128), w1);
            const uint32_t o = w0 | w1;  // (a clamped output is +0, -0 or positive: the sign bit does not count)
            mine = ((o & 0x7fffu) != 0u ? 1u : 0u) | ((o & 0x7fff0000u) != 0u ? 2u : 0u);
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) c[e] = fminf(fmaxf(c[e], 0.f), a.clamp);
            if constexpr (kMode == 1) {
              mine = (((__float_as_uint(c[0]) | __float_as_uint(c[2])) << 1) != 0u ? 1u : 0u) |
                     (((__float_as_uint(c[1]) | __float_as_uint(c[3])) << 1) != 0u ? 2u : 0u);
            } else {  // kMode 2: the survivors among this lane's two columns
              const unsigned lwt = t < 4 ? live0 : live1;
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                if (((lwt >> (shift + e)) & 1u) == 0u) continue;
                const int cc = col + e;
                const int out_col = a.compacted ? (t < 4 ? cn.p0 : cn.p1) + __popc(lwt & ((1u << (shift + e)) - 1u))
                                                : __ldg(a.pos + cc);
                if (out_col >= a.max_active) continue;
                a.y[d0 + size_t(out_col)] = c[e];
                a.y[d1 + size_t(out_col)] = c[2 + e];
              }
            }
          }
          if constexpr (kMode != 2) {
            if (t < 4) bits0 |= mine << shift;
            else bits1 |= mine << shift;
          }
        }
      }
      if constexpr (kMode == 0) {
        // The stage to the plane: lane l's 16-byte piece l % 8 of rows l / 8 + 4 m (m = 0..3: 128 bytes a row, one
        // line a request), where its tile computed something; the row's plane row from the lane that computed it.
        __syncwarp();
#pragma unroll
        for (int m = 0; m < 4; ++m) {
          const int row = (lane >> 3) + 4 * m, piece = lane & 7;
          const int prow = plane_row(__shfl_sync(0xffffffffu, m < 2 ? cn.p0 : cn.p1, (row & 7) << 2));
          const unsigned lw = piece < 4 ? live0 : live1;
          if (((lw >> (8 * (piece & 3))) & 0xffu) == 0u) continue;
          const uint4 v = lds_v4_u32(stage + unsigned(row * 128 + ((piece ^ (row & 7)) << 4)));
          *reinterpret_cast<uint4*>(out + size_t(prow) * size_t(ld) + size_t(c0 + 8 * piece)) = v;
        }
      }
      run0 |= bits0;
      run1 |= bits1;
    }
    if constexpr (kMode != 2) {
      if (k % kRun == kRun - 1) {  // (warp-uniform) the run's last unit: its columns' live bits to the layer's words
        // A column lives on when any output of it is nonzero, and only if it was live on input (a dead column's
        // outputs are bias-only, and pruned columns stay pruned, as in every path).
        const unsigned b0 = __reduce_or_sync(0xffffffffu, run0) & live0;
        const unsigned b1 = __reduce_or_sync(0xffffffffu, run1) & live1;
        if (lane == 0 && (b0 | b1) != 0u)
          atomicOr(reinterpret_cast<unsigned long long*>(a.alive_out + c0 / 32),
                   (static_cast<unsigned long long>(b1) << 32) | b0);
        run0 = run1 = 0u;
      }
    }
    __syncwarp();  // (every lane's ldmatrix and stage reads done before the next unit's writes)
    cur = nxt;
    nxt = far;
    cn = nn;
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");  // (no copy outlives the CTA's shared memory)
}

// The item loop of the input's conversion and the gathers: a warp takes items of 256 columns (8 a lane) x
// kGatherRows rows over the chunks that hold `count` columns, so that a lane loads its 8 columns' sources once an item
// (list[t], -1 from `count` on: the lane writes zeros there) and writes 16 bytes a row: row(i, t0, cols, consecutive)
// for each row i of the item, t0 the lane's first column, `consecutive` whether cols are 8 consecutive sources.
template <typename Row>
__device__ __forceinline__ void planes_items(int n, const int* list, int count, Row row) {
  const int span = (count + kChunk - 1) / kChunk * kChunk;  // (the chunks the layers read: zero past the count)
  const int lane = int(threadIdx.x & 31);
  const int tiles = (span + 255) / 256, row_blocks = (n + kGatherRows - 1) / kGatherRows;
  const int warps = int(gridDim.x) * kWarps;
  for (int item = int(blockIdx.x) * kWarps + int(threadIdx.x >> 5); item < tiles * row_blocks; item += warps) {
    const int tile = item % tiles, rb = item / tiles;
    const int t0 = tile * 256 + 8 * lane;
    if (t0 >= span) continue;
    int cols[8];
    bool consecutive = true;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      cols[e] = t0 + e < count ? __ldg(list + t0 + e) : -1;
      consecutive = consecutive && cols[e] == cols[0] + e;
    }
    const int i1 = min(n, (rb + 1) * kGatherRows);
    for (int i = rb * kGatherRows; i < i1; ++i) row(i, t0, cols, consecutive);
  }
}

// The call's input: x's listed columns (rows_in[t], t < count) rounded to bf16 into plane 0 at layer 0's names, zero
// past the count up to its last chunk; the input's alive words set for t < count, layer 0's output's cleared;
// pos[t] = t; the live span; the phase 0. In planes_items' items a lane takes per row two 16-byte loads where its 8
// columns are consecutive in x and aligned (as the first call of a run gives them), else 8 loads, and one 16-byte
// store. (A lane of the first version moved two
// columns a row: 8.8 ms at n = 65536 and 60000 columns, 2.7 TB/s; session 59.)
__global__ void __launch_bounds__(kThreads) planes_in_kernel(const int* label, int n, int64_t ld, const float* x,
                                                             int64_t ldx, const int* rows_in, const int* counts,
                                                             int max_active, __nv_bfloat16* plane, unsigned* alive_in,
                                                             unsigned* alive0, int* pos, int* ncols, int* phase) {
  const int count = min(counts[0], max_active);
  planes_items(n, rows_in, count, [&](int i, int t0, const int (&xc)[8], bool consecutive) {
    const float* const xi = x + size_t(i) * size_t(ldx);
    const uint4 w = load8_bf16(xi, xc, consecutive && (reinterpret_cast<uintptr_t>(xi + xc[0]) & 15u) == 0u);
    *reinterpret_cast<uint4*>(plane + size_t(plane_row(__ldg(label + i))) * size_t(ld) + size_t(t0)) = w;
  });
  const int64_t gstride = int64_t(gridDim.x) * kThreads, g0 = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  const int words = int(ld / 32);
  for (int64_t w = g0; w < words; w += gstride) {
    const int lo = int(w) * 32;
    alive_in[w] = count >= lo + 32 ? 0xffffffffu : count > lo ? (1u << (count - lo)) - 1u : 0u;
    alive0[w] = 0u;
  }
  for (int64_t t = g0; t < ld; t += gstride) pos[t] = int(t);
  if (g0 == 0) {
    *ncols = count;
    *phase = 0;
  }
}

// Block-wide exclusive prefix of each thread's `v` (kScanThreads threads), and the total.
__device__ int block_prefix(int v, int* total) {
  __shared__ int warp_sums[kScanThreads / 32];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  int inc = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  if (lane == 31) warp_sums[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    int s = warp_sums[lane];
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += y;
    }
    warp_sums[lane] = s;  // (inclusive over the warps)
  }
  __syncthreads();
  const int before = (warp > 0 ? warp_sums[warp - 1] : 0) + inc - v;
  *total = warp_sums[kScanThreads / 32 - 1];
  __syncthreads();  // (warp_sums free for the next call)
  return before;
}

// One CTA over the alive words of a layer's output (words <= ld / 32): each word's first slot into base[], and
// kCompact: where the gather pays (below), each live column's source into src[slot], its list position into
// pos_out[slot], the new live span into ncols_out, the words rewritten as the compacted span's (every column below it
// live); else the columns stay where they are: ncols_out = ncols_in, pos_out = pos, and *phase flipped, so that the
// layers read the plane they would have read before the gather planned. The gather pays where the columns that died
// times the `gap` layers (passes) that would read them before the next compaction outnumber the survivors it moves:
// a gather moves a survivor about as a layer does (a read and a write of its 2 bytes a row), while a layer at the
// old span moves the dead columns too. (Session 59's timeline at n = 65536: the gather after layer 1, 60000 -> 50850
// columns, cost more than the one layer at the smaller span saved.) Else (the survivors of the call's last layer):
// rows_out / ids_out at each slot from `slot0` (counts[layers] on entry), the count added.
template <bool kCompact>
__global__ void __launch_bounds__(kScanThreads) planes_scan_kernel(unsigned* alive, int words, int* base,
                                                                   const int* pos, int* src, int* pos_out,
                                                                   int* ncols_out, int* count, int max_active,
                                                                   const int* ids_in, int* rows_out, int* ids_out,
                                                                   const int* ncols_in, int* phase, int gap) {
  __shared__ int slot0;
  if (!kCompact && threadIdx.x == 0) slot0 = *count;  // (the compacted output's first slot)
  const int per = (words + kScanThreads - 1) / kScanThreads;
  const int w0 = int(threadIdx.x) * per, w1 = min(w0 + per, words);
  int mine = 0;
  for (int w = w0; w < w1; ++w) mine += __popc(alive[w]);
  int total = 0;
  int at = block_prefix(mine, &total);  // (its barriers also publish slot0)
  if constexpr (!kCompact) at += slot0;
  if constexpr (kCompact) {
    const int span_in = *ncols_in;
    if (!tc_planes_gather_pays(span_in, total, gap)) {  // (block-uniform)
      for (int t = int(threadIdx.x); t < span_in; t += kScanThreads) pos_out[t] = pos[t];
      if (threadIdx.x == 0) {
        *ncols_out = span_in;
        *phase ^= 1;
      }
      return;
    }
  }
  for (int w = w0; w < w1; ++w) {
    const unsigned bits = alive[w];
    base[w] = at;
    for (unsigned b = bits; b != 0u; b &= b - 1u) {
      const int t = w * 32 + __ffs(int(b)) - 1;
      const int p = pos[t];
      if constexpr (kCompact) {
        src[at] = t;
        pos_out[at] = p;
      } else if (at < max_active) {
        if (rows_out != nullptr) rows_out[at] = p;
        ids_out[at] = __ldg(ids_in + p);
      }
      ++at;
    }
  }
  if constexpr (kCompact) {
    __syncthreads();  // (every word read before any is rewritten)
    for (int w = int(threadIdx.x); w < words; w += kScanThreads) {
      const int lo = w * 32;
      alive[w] = total >= lo + 32 ? 0xffffffffu : total > lo ? (1u << (total - lo)) - 1u : 0u;
    }
    if (threadIdx.x == 0) *ncols_out = total;
  } else {
    if (threadIdx.x == 0 && total != 0) atomicAdd(count, total);
  }
}

// The compaction's gather: column s of the other plane (every row) is column src[s] of the layer's output,
// planes[cur ^ *phase], s below the new span, zero past it to the span's last chunk; nothing where the scan kept the
// columns (the span the same). In planes_items' items a lane takes per row 8 two-byte loads through the L1 (a
// survivor's neighbours in the source row are mostly on the same lines) and one 16-byte store, where a lane of the
// first version moved one column a row with a 2-byte load and store (149 us for 3350 columns at n = 16384, session
// 59's timeline).
__global__ void __launch_bounds__(kThreads) planes_gather_kernel(int n, int64_t ld, const int* ncols_in,
                                                                 const int* ncols, const int* src, __nv_bfloat16* p0,
                                                                 __nv_bfloat16* p1, int cur, const int* phase) {
  const int span = *ncols;
  if (span == *ncols_in) return;
  const unsigned short* const from = reinterpret_cast<const unsigned short*>((cur ^ *phase) == 0 ? p0 : p1);
  __nv_bfloat16* const to = ((cur ^ *phase) == 0) ? p1 : p0;
  planes_items(n, src, span, [&](int i, int s0, const int (&from_col)[8], bool) {
    const unsigned short* const f = from + size_t(i) * size_t(ld);
    uint32_t w[4];
#pragma unroll
    for (int e = 0; e < 8; e += 2) {
      const uint32_t lo = from_col[e] >= 0 ? __ldg(f + from_col[e]) : 0u;
      const uint32_t hi = from_col[e + 1] >= 0 ? __ldg(f + from_col[e + 1]) : 0u;
      w[e / 2] = lo | (hi << 16);
    }
    *reinterpret_cast<uint4*>(to + size_t(i) * size_t(ld) + size_t(s0)) = make_uint4(w[0], w[1], w[2], w[3]);
  });
}

template <class K>
Status grid_of(K kernel, int sms, int* grid) {
  int per_sm = 0;
  JHDNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  *grid = std::max(per_sm, 1) * sms;
  return Status::success();
}

}  // namespace

Status load_dnn_resident_tc_planes_kernels() {
  for (const void* k : {reinterpret_cast<const void*>(planes_layer_kernel<0>),
                        reinterpret_cast<const void*>(planes_layer_kernel<1>),
                        reinterpret_cast<const void*>(planes_layer_kernel<2>),
                        reinterpret_cast<const void*>(planes_in_kernel),
                        reinterpret_cast<const void*>(planes_scan_kernel<true>),
                        reinterpret_cast<const void*>(planes_scan_kernel<false>),
                        reinterpret_cast<const void*>(planes_gather_kernel)}) {
    cudaFuncAttributes attr{};
    JHDNN_CUDA_TRY(cudaFuncGetAttributes(&attr, k));
  }
  return Status::success();
}

Status dnn_resident_tc_planes(cudaStream_t s, int sms, const TcPlanesTables* tables, int layer_count, int64_t n,
                              float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                              const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                              int* ids_out) {
  const int64_t ld = (int64_t(max_active) + kChunk - 1) / kChunk * kChunk;
  const int words = int(ld / 32);
  const PlanesLayout m = planes_layout(n, ld, kTcPlanesMaxStages);
  // The planes and the lists, stream-ordered from the device's current memory pool (the application's: its release
  // threshold says whether the memory stays reserved between calls; jhdnn.h).
  void* mem = nullptr;
  const cudaError_t got = cudaMallocAsync(&mem, m.total, s);
  if (got != cudaSuccess) {
    (void)cudaGetLastError();
    return core::fail(JHDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                      "the tensor-core resident path past n = %d needs %zu bytes of device memory for its bf16 "
                      "planes (2 x n x maxActive x 2 bytes and the lists); cudaMallocAsync: %s",
                      kTcStreamMaxN, m.total, cudaGetErrorString(got));
  }
  char* const b = static_cast<char*>(mem);
  __nv_bfloat16* plane[2] = {reinterpret_cast<__nv_bfloat16*>(b + m.plane[0]),
                             reinterpret_cast<__nv_bfloat16*>(b + m.plane[1])};
  unsigned* alive[3];
  for (int k = 0; k < 3; ++k) alive[k] = reinterpret_cast<unsigned*>(b + m.alive[k]);
  int* pos[2] = {reinterpret_cast<int*>(b + m.pos[0]), reinterpret_cast<int*>(b + m.pos[1])};
  int* const src = reinterpret_cast<int*>(b + m.src);
  int* const base = reinterpret_cast<int*>(b + m.base);
  int* const ncols = reinterpret_cast<int*>(b + m.ncols);
  int* const phase = reinterpret_cast<int*>(b + m.phase);
  // From here every path frees mem (in stream order), and the first error is the one returned.
  auto run = [&]() -> Status {
    int grid = 0;
    JHDNN_TRY(grid_of(planes_layer_kernel<0>, sms, &grid));
    // alive[(l + 2) % 3] is layer l's input (l = 0: the call's), alive[l % 3] its output.
    planes_in_kernel<<<unsigned(sms * 8), kThreads, 0, s>>>(tables[0].label, int(n), ld, x, ldx, rows_in, counts,
                                                             max_active, plane[0], alive[2], alive[0], pos[0], ncols,
                                                             phase);
    JHDNN_CUDA_TRY(cudaGetLastError());
    int cur = 0, cur_pos = 0, stage = 0;
    LayerArgs a{};
    a.groups = int(n / 16);
    a.ld = ld;
    a.words = words;
    a.bias = bias;
    a.clamp = clamp_max;
    a.y = y;
    a.ldy = ldy;
    a.base = base;
    a.compacted = rows_out == nullptr;
    a.max_active = max_active;
    a.planes[0] = plane[0];
    a.planes[1] = plane[1];
    a.phase = phase;
    for (int l = 0; l < layer_count; ++l) {
      const bool last = l + 1 == layer_count;
      a.afrag = tables[l].afrag;
      a.bcol = tables[l].bcol;
      a.order = tables[l].order;
      a.next_label = last ? nullptr : tables[l + 1].label;
      a.ncols = ncols + stage;
      a.reverse = (l & 1) != 0;
      a.cur = cur;
      a.alive_in = alive[(l + 2) % 3];
      a.alive_out = alive[l % 3];
      a.alive_clear = last ? nullptr : alive[(l + 1) % 3];
      a.count_add = l > 0 ? counts + l : nullptr;
      if (!last) {
        planes_layer_kernel<0><<<unsigned(grid), kThreads, 0, s>>>(a);
        JHDNN_CUDA_TRY(cudaGetLastError());
        cur ^= 1;
        const int done = l + 1;
        if ((done & (done - 1)) == 0 && stage + 1 < kTcPlanesMaxStages) {
          // the live columns compacted (where it pays): layer l's output gathered into the other plane
          const int gap = tc_planes_gap(done, stage, layer_count, kTcPlanesMaxStages);
          planes_scan_kernel<true><<<1, kScanThreads, 0, s>>>(alive[l % 3], words, base, pos[cur_pos], src,
                                                              pos[cur_pos ^ 1], ncols + stage + 1, nullptr, 0,
                                                              nullptr, nullptr, nullptr, ncols + stage, phase, gap);
          JHDNN_CUDA_TRY(cudaGetLastError());
          planes_gather_kernel<<<unsigned(sms * 16), kThreads, 0, s>>>(int(n), ld, ncols + stage, ncols + stage + 1,
                                                                      src, plane[0], plane[1], cur, phase);
          JHDNN_CUDA_TRY(cudaGetLastError());
          cur ^= 1;
          cur_pos ^= 1;
          ++stage;
        }
      } else {
        planes_layer_kernel<1><<<unsigned(grid), kThreads, 0, s>>>(a);
        JHDNN_CUDA_TRY(cudaGetLastError());
        planes_scan_kernel<false><<<1, kScanThreads, 0, s>>>(alive[l % 3], words, base, pos[cur_pos], nullptr,
                                                             nullptr, nullptr, counts + layer_count, max_active,
                                                             ids_in, rows_out, ids_out, nullptr, nullptr, 0);
        JHDNN_CUDA_TRY(cudaGetLastError());
        a.pos = pos[cur_pos];
        a.count_add = nullptr;
        a.alive_clear = nullptr;
        planes_layer_kernel<2><<<unsigned(grid), kThreads, 0, s>>>(a);
        JHDNN_CUDA_TRY(cudaGetLastError());
      }
    }
    return Status::success();
  };
  const Status st = run();
  const cudaError_t freed = cudaFreeAsync(mem, s);
  JHDNN_TRY(st);
  JHDNN_CUDA_TRY(freed);
  return Status::success();
}

}  // namespace jhdnn::sparse
