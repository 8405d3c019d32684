// The tensor-core resident call of many layers (jhdnnSparseDnnLayersForwardResident* with more than kTcMaxLayers
// layers, every descriptor TENSOR_OP_MATH_ALLOW_CONVERSION; n <= 4096): the streamed kernel. dnn_resident_tc.cu's
// kernels hold a call's per-layer tables in shared memory and its weights in registers, which bounds a call to 8
// layers and, past n = 1024, spreads a tile over a cluster whose CTAs exchange about half of a late layer's outputs.
// This kernel is for the late layers, where few images are left and the call is long: one CTA takes a tile of 8
// list positions and keeps all n of its features in shared memory (two bf16 planes, n x 16 bytes each) through
// every layer of the call, and streams each layer's weights (the A fragments, n / 16 groups x 1 KiB) from the L2
// through a ring of 4 groups a warp (cp.async, three groups ahead). Each warp takes groups warp, warp + 16, ...: for
// each, two ldmatrix of the
// B operand (16 inputs x 8 images each) and two m16n8k16 MMAs with the bias as C's initial value, then ReLU and the
// clamp on the rounded bf16 pair, stored where the next layer reads it. A layer's destinations (its output rows'
// plane rows in the next layer's renamed order) are derived from the tables while the layer before runs. A tile
// whose images all died stops there. The last layer runs twice: once for the tile's survivors (from the fp32
// outputs), then again to write their fp32 features into y at their columns or slots.
//
// Per image this is the cluster kernel's arithmetic (the same fragments, MMAs, bias and rounding, in the same
// order), so an image's outputs are the same bits as a chain of dnn_resident_tc calls over the same layers
// (tests/test_sparse_tc.cpp checks it).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "conv/tensorcore/mma_sm80.cuh"
#include "core/cuda_check.h"
#include "core/status.h"
#include "sparse/smem_access.cuh"
#include "sparse/sparse.h"
#include "sparse/tc_pieces.cuh"
#include "sparse/tc_tables.h"

namespace jhdnn::sparse {
namespace {

constexpr int kT = 8;            // images of a tile (one m16n8k16 n-tile)
constexpr int kWarps = 16;       // a CTA's warps
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerThread = kTcStreamMaxN / kThreads;  // rows of a destination table a thread derives
constexpr int kRowBytes = kT * 2;                         // a plane row: 8 bf16 features

struct StreamArgs {
  // Per layer: its tables (dnn_resident_tc.cu, tc_tables_of: afrag, bcol, order, label, and for n > 1024 gbcol, the
  // blocks' renamed columns, where bcol holds the cluster's; afrag_of .. label_of below).
  const char* tables[kResidentMaxLayers];
  int layers, n;
  bool cluster_tables;  // n > 1024: the block columns at gbcol
  int max_active;
  float bias, clamp;
  int* counts;  // [0] the images on entry (read), [1 .. layers] added to
  const int* active_rows;
  const int* ids_in;
  const float* x;
  int64_t ldx;
  float* y;
  int64_t ldy;
  int* rows_out;  // NULL: the compacted output (survivor t's features in column t of y)
  int* ids_out;
};

// Layer l's arrays in its table allocation (the layout tc_tables_of builds).
__device__ __forceinline__ const uint4* afrag_of(const StreamArgs& a, int l) {
  return reinterpret_cast<const uint4*>(a.tables[l]);
}
__device__ __forceinline__ const int* bcol_of(const StreamArgs& a, int l) {
  const int groups = a.n / 16;
  const int* const bcol = reinterpret_cast<const int*>(a.tables[l] + size_t(groups) * kTcBlocks * 512);
  return a.cluster_tables ? bcol + groups * kTcBlocks + 2 * a.n : bcol;  // (gbcol: after bcol, order, label)
}
__device__ __forceinline__ const int* order_of(const StreamArgs& a, int l) {
  return reinterpret_cast<const int*>(a.tables[l] + size_t(a.n / 16) * kTcBlocks * 512) + (a.n / 16) * kTcBlocks;
}
__device__ __forceinline__ const int* label_of(const StreamArgs& a, int l) { return order_of(a, l) + a.n; }

// Shared memory: two planes (n rows of 8 bf16); two destination tables (layer l's in table l & 1: n 16-bit plane
// byte offsets, or the last layer's rows of y); two block tables (the groups' two blocks' plane byte offsets, 16 bits
// each); each warp's ring of kRing fragment slots (a group's two A fragments, 1 KiB); the survivor masks of three
// layers (l % 3: written in layer l, read after its barrier, cleared two layers on); the tile's first output slot.
constexpr int kRing = 4;  // a warp's groups in its ring: the one computed and three on their way from the L2
constexpr int kSlotBytes = kTcBlocks * 512;
struct StreamSmem {
  size_t plane, dst, bcol, ring, live, slot, total;
};
__host__ __device__ StreamSmem stream_smem(int n) {
  StreamSmem m{};
  m.plane = size_t(n) * kRowBytes;
  m.dst = 2 * m.plane;
  m.bcol = m.dst + 2 * size_t(n) * 2;
  m.ring = m.bcol + 2 * size_t(n / 16) * kTcBlocks * 2;
  m.live = m.ring + size_t(kWarps) * kRing * kSlotBytes;
  m.slot = m.live + 4 * 4;
  m.total = m.slot + 16;
  return m;
}

// Layer l's destination of its output row p: layer l + 1's renamed input of that row as a plane byte offset; the
// last layer's: the row itself (a row of y). `j` is order_of(l)[p]. Both below 2^16 (n <= 4096 rows of 16 bytes).
__device__ __forceinline__ int destination(const StreamArgs& a, int l, int j) {
  return l + 1 < a.layers ? plane_row(__ldg(label_of(a, l + 1) + j)) * kRowBytes : j;
}

// (the shared-window accesses lds_* / sts_*: smem_access.cuh)

// 16 bytes from global memory into the shared window, asynchronously (cp.async.cg: through the L2 only), and the end
// of a group of such copies; wait_ring: all but the newest kRing - 1 groups of this thread landed.
__device__ __forceinline__ void copy16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void wait_ring() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kRing - 1) : "memory");
}

// C = bias + the group's two blocks (A fragments af, plane byte offsets at0 / at1) times the tile (rows gid, gid + 8
// of the group; images 2 tig, 2 tig + 1). cur_lane: this lane's ldmatrix row in the current plane (lanes 0-7: rows
// k 0-7 of a block, lanes 8-15: rows 8-15; lanes 16-31: ignored by .x2, the same addresses).
__device__ __forceinline__ void group_mma(const uint4 (&af)[kTcBlocks], uint32_t at0, uint32_t at1, unsigned cur_lane,
                                          float bias, float (&c)[4]) {
  c[0] = c[1] = c[2] = c[3] = bias;
#pragma unroll
  for (int b = 0; b < kTcBlocks; ++b) {
    const unsigned addr = cur_lane + (b == 0 ? at0 : at1);
    uint32_t bf[2];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(bf[0]), "=r"(bf[1])
                 : "r"(addr));
    const uint32_t a4[4] = {af[b].x, af[b].y, af[b].z, af[b].w};
    jhdnn::tc::Mma<__nv_bfloat16>::run(c, a4, bf);
  }
}

// The images (bits 0-7) among this lane's two (2 tig, 2 tig + 1) whose OR-ed bits `lo` / `hi` are nonzero without
// the sign bit (a clamped output is +0, -0 or positive), OR-ed over the warp.
__device__ __forceinline__ unsigned warp_alive(uint32_t lo, uint32_t hi, int tig) {
  const unsigned mine = ((lo << 1) != 0u ? 1u : 0u) | ((hi << 1) != 0u ? 2u : 0u);
  return __reduce_or_sync(0xffffffffu, mine << (2 * tig));
}

__global__ void __launch_bounds__(kThreads, 1) resident_tc_stream_kernel(const __grid_constant__ StreamArgs a) {
  extern __shared__ float4 smem4[];
  char* const base = reinterpret_cast<char*>(smem4);
  const StreamSmem m = stream_smem(a.n);
  uint16_t* const s_dst = reinterpret_cast<uint16_t*>(base + m.dst);
  uint16_t* const s_bcol = reinterpret_cast<uint16_t*>(base + m.bcol);
  unsigned* const s_live = reinterpret_cast<unsigned*>(base + m.live);
  int* const s_slot = reinterpret_cast<int*>(base + m.slot);
  const int n = a.n, groups = n / 16, blocks = groups * kTcBlocks;
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5), gid = lane >> 2, tig = lane & 3;
  const int count = min(a.counts[0], a.max_active);
  const int tiles = (count + kT - 1) / kT;
  const __nv_bfloat162 clamp2 = __float2bfloat162_rn(a.clamp);
  const unsigned smem_base = unsigned(__cvta_generic_to_shared(base));
  const unsigned ring_lane = smem_base + unsigned(m.ring + warp * kRing * kSlotBytes + lane * 16);
  const int iters = warp < groups ? (groups - warp + kWarps - 1) / kWarps : 0;  // groups warp, warp + 16, ..
  // The ring: group j (the warp's j-th of a layer) goes to slot j % kRing, this lane's 16 bytes of each A fragment.
  // Every ring step commits one group of copies (empty past the warp's groups), so that wait_ring finds group k.
  // start(l): layer l's groups from the first; issue(): the next one.
  const uint4* src = nullptr;
  int j_next = 0;
  auto start = [&](int l) {
    src = afrag_of(a, l) + warp * kTcBlocks * 32 + lane;
    j_next = 0;
  };
  auto issue = [&] {
    if (j_next < iters) {
      const unsigned dst = ring_lane + unsigned((j_next % kRing) * kSlotBytes);
      copy16(dst, src);
      copy16(dst + 512, src + 32);
    }
    src += kWarps * kTcBlocks * 32;
    ++j_next;
    commit_copies();
  };
  for (int tile = int(blockIdx.x); tile < tiles; tile += int(gridDim.x)) {
    const int r0 = tile * kT;
    const unsigned valid = count - r0 >= kT ? 0xffu : (1u << (count - r0)) - 1u;  // the tile's list positions
    asm volatile("cp.async.wait_all;\n" ::: "memory");  // (a tile that stopped early may have left copies in flight)
    __syncthreads();  // (the tile before is done with the planes, the tables, the masks and s_slot)
    if (threadIdx.x < 3) s_live[threadIdx.x] = 0u;
    start(0);  // (layer 0's first groups while the input comes in)
    for (int j = 0; j < kRing - 1; ++j) issue();
    {  // the tile's input: x's rows at their columns (zero past the count) into plane 0 at layer 0's renamed rows,
       // and layer 0's destinations and blocks into table 0
      int col[kT];
#pragma unroll
      for (int t = 0; t < kT; ++t) col[t] = r0 + t < count ? __ldg(a.active_rows + r0 + t) : -1;
      bool vec = (reinterpret_cast<uintptr_t>(a.x) & 15u) == 0 && a.ldx % 4 == 0 && col[0] >= 0 && (col[0] & 3) == 0;
#pragma unroll
      for (int t = 1; t < kT; ++t) vec = vec && col[t] == col[0] + t;
      const int* const label0 = label_of(a, 0);
      const int* const order0 = order_of(a, 0);
      for (int i = int(threadIdx.x); i < n; i += kThreads) {
        const float* const xi = a.x + size_t(i) * size_t(a.ldx);
        *reinterpret_cast<uint4*>(base + plane_row(__ldg(label0 + i)) * kRowBytes) = load8_bf16(xi, col, vec);
        s_dst[i] = uint16_t(destination(a, 0, __ldg(order0 + i)));
      }
      const int* const bcol0 = bcol_of(a, 0);
      for (int t = int(threadIdx.x); t < blocks; t += kThreads) s_bcol[t] = uint16_t(__ldg(bcol0 + t) * kRowBytes);
    }
    __syncthreads();
    int in = 0;
    bool primed = true;  // (the ring holds the layer's first kRing - 1 groups already)
    for (int l = 0; l < a.layers; ++l) {
      const bool last = l + 1 == a.layers;
      // Shared-window addresses: this lane's ldmatrix row of the current plane, its 4 bytes of a row of the other,
      // its first destination (row 16 g + gid of the layer's table: + 512 a step of g by 16 warps, + 16: row + 8),
      // its warp's first group's blocks (+ 64 a step).
      const unsigned cur_lane = smem_base + unsigned(in * m.plane) + unsigned((lane & 15) * kRowBytes);
      const unsigned other_tig = smem_base + unsigned((in ^ 1) * m.plane) + unsigned(4 * tig);
      const unsigned dst_lane = smem_base + unsigned(m.dst + (l & 1) * n * 2 + warp * 32 + gid * 2);
      const unsigned bcol_warp = smem_base + unsigned(m.bcol + (l & 1) * blocks * 2 + warp * 4);
      // Layer l + 1's destinations and blocks, derived while this layer runs: its rows' order and its blocks now,
      // the rows' next names halfway.
      int nj[kRowsPerThread];
      int nb = 0;
      if (!last) {
        const int* const order1 = order_of(a, l + 1);
#pragma unroll
        for (int k = 0; k < kRowsPerThread; ++k) {
          const int p = int(threadIdx.x) + k * kThreads;
          nj[k] = p < n ? __ldg(order1 + p) : 0;
        }
        if (int(threadIdx.x) < blocks) nb = __ldg(bcol_of(a, l + 1) + threadIdx.x);  // (blocks <= 512 = kThreads)
      }
      auto derive = [&] {  // (layer l + 1's destinations from the rows loaded above)
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q)
          if (int(threadIdx.x) + q * kThreads < n) nj[q] = destination(a, l + 1, nj[q]);
      };
      // The warp's groups through the ring. kMode 0: a layer before the last, its outputs rounded into the other
      // plane at their destinations and OR-ed into `acc`; 1: the last layer, its fp32 outputs OR-ed into lo / hi
      // (the survivors); 2: the last layer again, its live images' outputs written to y at cols[] (their rows: the
      // last layer's destinations).
      uint32_t acc = 0u, lo = 0u, hi = 0u;
      int cols[2] = {-1, -1};
      auto run_groups = [&](auto mode) {
        constexpr int kMode = decltype(mode)::value;
        if (!primed) {
          start(l);
          for (int j = 0; j < kRing - 1; ++j) issue();
        }
        primed = false;
        for (int k = 0; k < iters; ++k) {
          issue();  // (group k + kRing - 1)
          if constexpr (kMode == 0)
            if (k == iters / 2) derive();
          wait_ring();  // (group k is in: each lane reads only the 16 bytes it copied)
          const unsigned slot = ring_lane + unsigned((k % kRing) * kSlotBytes);
          const uint4 af[kTcBlocks] = {lds_v4_u32(slot), lds_v4_u32(slot + 512)};
          const uint32_t at = lds_u32(bcol_warp + unsigned(k * kWarps * 4));
          float c[4];
          group_mma(af, at & 0xffffu, at >> 16, cur_lane, a.bias, c);
          const unsigned d = dst_lane + unsigned(k * kWarps * 32);
          if constexpr (kMode == 0) {
            const uint32_t w0 = relu_clamp_pair(c[0], c[1], clamp2), w1 = relu_clamp_pair(c[2], c[3], clamp2);
            sts_u32(other_tig + lds_u16(d), w0);
            sts_u32(other_tig + lds_u16(d + 16), w1);
            acc |= w0 | w1;
          } else {
#pragma unroll
            for (int e = 0; e < 4; ++e) c[e] = fminf(fmaxf(c[e], 0.f), a.clamp);
            if constexpr (kMode == 1) {
              lo |= __float_as_uint(c[0]) | __float_as_uint(c[2]);
              hi |= __float_as_uint(c[1]) | __float_as_uint(c[3]);
            } else {
              const size_t j0 = lds_u16(d), j1 = lds_u16(d + 16);
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (cols[e] >= 0) {
                  a.y[j0 * size_t(a.ldy) + size_t(cols[e])] = c[e];
                  a.y[j1 * size_t(a.ldy) + size_t(cols[e])] = c[2 + e];
                }
            }
          }
        }
      };
      if (last) {
        run_groups(std::integral_constant<int, 1>());
      } else {
        run_groups(std::integral_constant<int, 0>());
        if (iters == 0) derive();
        // the next layer's first groups into the ring (its slots are free: this warp has read them), across the barrier
        start(l + 1);
        for (int j = 0; j < kRing - 1; ++j) issue();
        primed = true;
        lo = acc << 16;  // (image 2 tig: the pairs' low halves; 2 tig + 1: the high ones)
        hi = acc & 0xffff0000u;
      }
      const unsigned alive = warp_alive(lo, hi, tig);
      if (lane == 0 && alive != 0u) atomicOr(s_live + l % 3, alive);
      if (!last) {
        uint16_t* const next = s_dst + ((l + 1) & 1) * n;
#pragma unroll
        for (int q = 0; q < kRowsPerThread; ++q) {
          const int p = int(threadIdx.x) + q * kThreads;
          if (p < n) next[p] = uint16_t(nj[q]);
        }
        if (int(threadIdx.x) < blocks) s_bcol[((l + 1) & 1) * blocks + int(threadIdx.x)] = uint16_t(nb * kRowBytes);
      }
      __syncthreads();
      const unsigned mask = s_live[l % 3] & valid;
      if (threadIdx.x == 0) s_live[(l + 2) % 3] = 0u;  // (layer l - 1's: read by every thread before this barrier)
      if (last) {
        if (mask != 0u) {
          if (threadIdx.x == 0) s_slot[0] = atomicAdd(a.counts + a.layers, __popc(mask));
          __syncthreads();
          const int slot = s_slot[0];
          if (threadIdx.x < unsigned(kT) && ((mask >> threadIdx.x) & 1u)) {
            const int pos = slot + __popc(mask & ((1u << threadIdx.x) - 1u));
            if (pos < a.max_active) {
              if (a.rows_out != nullptr) a.rows_out[pos] = r0 + int(threadIdx.x);
              a.ids_out[pos] = __ldg(a.ids_in + r0 + threadIdx.x);
            }
          }
          // The layer again, its live images' fp32 outputs into y (column: the list position, or the slot).
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int t = 2 * tig + e;
            const int col = a.rows_out != nullptr ? r0 + t : slot + __popc(mask & ((1u << t) - 1u));
            cols[e] = ((mask >> t) & 1u) && col < a.max_active ? col : -1;
          }
          run_groups(std::integral_constant<int, 2>());
        }
      } else {
        if (threadIdx.x == 0 && mask != 0u) atomicAdd(a.counts + l + 1, __popc(mask));
        if (mask == 0u) break;  // (block-uniform) every image of the tile died: the later layers keep it zero
      }
      in ^= 1;
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");  // (no copy outlives the CTA's shared memory)
}

}  // namespace

size_t resident_tc_stream_smem_bytes(int64_t n) { return stream_smem(int(n)).total; }

Status load_dnn_resident_tc_stream_kernel() {
  int device = 0, optin = 0;
  JHDNN_CUDA_TRY(cudaGetDevice(&device));
  JHDNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  JHDNN_CUDA_TRY(cudaFuncSetAttribute(resident_tc_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  return Status::success();
}

Status dnn_resident_tc_stream(cudaStream_t s, int sms, const char* const* tables, int layer_count, int64_t n,
                              float bias, float clamp_max, int max_active, int* counts, const int* rows_in,
                              const int* ids_in, const float* x, int64_t ldx, float* y, int64_t ldy, int* rows_out,
                              int* ids_out) {
  StreamArgs a{};
  for (int l = 0; l < layer_count; ++l) a.tables[l] = tables[l];
  a.layers = layer_count;
  a.n = int(n);
  a.cluster_tables = n > kTcCtaRows;
  a.max_active = max_active;
  a.bias = bias;
  a.clamp = clamp_max;
  a.counts = counts;
  a.active_rows = rows_in;
  a.ids_in = ids_in;
  a.x = x;
  a.ldx = ldx;
  a.y = y;
  a.ldy = ldy;
  a.rows_out = rows_out;
  a.ids_out = ids_out;
  const int tiles = int((int64_t(max_active) + kT - 1) / kT);
  // Persistent: one CTA an SM (its shared memory), each looping over the tiles of the count it reads on the device.
  resident_tc_stream_kernel<<<unsigned(std::min(sms, tiles)), kThreads, stream_smem(a.n).total, s>>>(a);
  return JHDNN_CUDA_STATUS(cudaGetLastError());
}

}  // namespace jhdnn::sparse
