// The list-blocked tile of the fused sparse-DNN layer (JHDNN_SPDNN_TILE=list; src/sparse/README.md,
// "List-blocked tile"). Included by dnn_layer.cu only, after its helpers (row_lane, store_if,
// ReuseSmem), into the same anonymous namespace.
//
// Idea: in the challenge's row order the 16 outputs of one input list are adjacent (aligned runs of 16
// positions). For 32 images that is a 16 x 32 (outputs x images) block of a tiny GEMM over the list's
// 32 inputs. The warp stages the list's features (32 inputs x 32 images, 4 KB) and the 16 rows'
// weights (2 KB, rows padded to 144 B) in its own shared buffers with cp.async, DOUBLE-BUFFERED: the
// next list block's copies are issued before the current block is computed, so their global latency
// (the top stall of the block tile, long scoreboard on the feature loads) overlaps the FMAs. Each lane then keeps a
// 4-output x 4-image accumulator block: lane l computes outputs 4 og .. 4 og + 3 (og = l / 8) for
// images 4 ig .. 4 ig + 3 (ig = l % 8); per 4 inputs 4 LDS.128 of weights (4 inputs of one output)
// and 4 LDS.128 of features (4 images of one input) feed 64 FFMA. Every accumulator is one chain
// acc = fma(w_t, x_t, acc), t = 0..31 in order from 0, then bias / ReLU / clamp: bitwise the block
// and single tiles and the CPU chain. SASS: 957 warp instructions per 16-output list step with 16-byte
// feature copies, 1060 with 4-byte gathers (512 FFMA); 128 registers, 2 blocks of 256 per SM.
#pragma once

namespace jhdnn::sparse {
namespace {

__device__ __forceinline__ unsigned smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
// 16 / 4 bytes global -> shared, asynchronous (completion: commit_group + wait_group by this thread;
// other lanes see the data after a __syncwarp that follows the wait). .ca: cached in L1 (the 4 warps
// of a crowded item that share a run read the same weight rows).
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Every group but the newest one has landed (for this thread).
__device__ __forceinline__ void cp_async_wait_all_but_newest() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }

// What a warp's list tile needs about its images and the layer (fixed for one item).
struct ListCtx {
  const int* wi_lane;   // wi + lane: lane t of row j at row_lane(wi_lane, j)
  const int* wi4_lane;  // wi + 4 (lane % 8): slots 4 (lane % 8) .. + 3
  const float* wv4_lane;
  const float* x;
  int64_t ldx;
  unsigned col;     // this lane's column of x (0 past the count)
  unsigned col4;    // contiguous columns: the column of image slot 4 (lane % 8)
  bool contig;      // the warp's 32 columns are col0 .. col0 + 31, 16-byte aligned rows: 16-byte copies
  float* buf;       // this warp's two stages (tile::kListWarpFloats floats)
};

// A list block's indices, loaded one pipeline step before list_issue reads them (so that the load's
// latency overlaps the previous block's FMAs): lane t holds input t of output 0 (i0); lane l holds
// slots 4 (l % 8) .. + 3 of outputs l / 8 + 4 h (iv[h]). ords: lane l holds the output of position
// 16 b + l % 16.
struct ListFetch {
  int i0;
  int4 iv[4];
};
__device__ __forceinline__ ListFetch list_fetch(int lane, int ords, const ListCtx& c) {
  ListFetch f;
  f.i0 = __ldg(row_lane(c.wi_lane, __shfl_sync(0xffffffffu, ords, 0)));
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const int jo = __shfl_sync(0xffffffffu, ords, (lane >> 3) + 4 * h);
    f.iv[h] = __ldg(reinterpret_cast<const int4*>(row_lane(c.wi4_lane, jo)));
  }
  return f;
}

// Stage the list block (ords, its fetched indices f) into stage `s`: returns (warp-uniform) whether
// the block is a list step, i.e. all 16 outputs have output 0's 32 indices and none is padding; only
// then are its copies issued. Always commits one cp.async group (possibly empty), so that "all but
// the newest group" is always the previous block. The row-pointer buffer sm.rows is written after a
// __syncwarp (its previous readers are done) and read after another.
__device__ __forceinline__ bool list_issue(int lane, int ords, const ListFetch& f, const ListCtx& c, int s,
                                           ReuseSmem& sm) {
  const int q8 = lane & 7, o0 = lane >> 3;
  const int rx = __shfl_sync(0xffffffffu, f.i0, 4 * q8 + 0), ry = __shfl_sync(0xffffffffu, f.i0, 4 * q8 + 1);
  const int rz = __shfl_sync(0xffffffffu, f.i0, 4 * q8 + 2), rw = __shfl_sync(0xffffffffu, f.i0, 4 * q8 + 3);
  bool ok = f.i0 >= 0;  // every slot of output 0 is some lane's i0: no padding anywhere in the list
#pragma unroll
  for (int h = 0; h < 4; ++h)
    ok = ok && f.iv[h].x == rx && f.iv[h].y == ry && f.iv[h].z == rz && f.iv[h].w == rw;
  if (!__all_sync(0xffffffffu, ok)) {
    cp_async_commit();  // an empty group: the accounting stays one group per block
    return false;
  }
  float* const st = c.buf + s * tile::kListStageFloats;
  // Weights: lane l copies chunk q8 (inputs 4 q8 .. + 3) of outputs o0 + 4 h to their padded rows.
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const int jo = __shfl_sync(0xffffffffu, ords, o0 + 4 * h);
    cp_async16(smem_addr(st + tile::list_w_index(o0 + 4 * h, 4 * q8)),
               reinterpret_cast<const float*>(row_lane(c.wv4_lane, jo)));
  }
  __syncwarp();  // every lane has read sm.rows of the previous list (list stage or block step)
  sm.rows[lane] = reinterpret_cast<unsigned long long>(c.x + int64_t(f.i0) * c.ldx);  // input t = lane's row
  __syncwarp();
  if (c.contig) {
    // Features as 16-byte pieces: input t = o0 + 4 k, images 4 q8 .. 4 q8 + 3 (8 per lane, 256 in all).
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int t = o0 + 4 * k;
      const float* row = reinterpret_cast<const float*>(sm.rows[t]);
      cp_async16(smem_addr(st + tile::list_f_index(t, 4 * q8)), row + c.col4);
    }
  } else {
    // Gathered columns: 4-byte pieces, lane q copies its own image's feature of every input.
    const ulonglong2* rows2 = reinterpret_cast<const ulonglong2*>(sm.rows);
#pragma unroll
    for (int t = 0; t < 32; t += 2) {
      const ulonglong2 p = rows2[t / 2];  // a broadcast
      cp_async4(smem_addr(st + tile::list_f_index(t, lane)), reinterpret_cast<const float*>(p.x) + c.col);
      cp_async4(smem_addr(st + tile::list_f_index(t + 1, lane)), reinterpret_cast<const float*>(p.y) + c.col);
    }
  }
  cp_async_commit();
  return true;
}

// The 16 x 32 block of stage `s` (landed and visible: wait + __syncwarp done by the caller): outputs
// `ords` (as in list_fetch) for the images r0 .. r0 + 31 of y. Lane l: outputs 4 og + u (og = l / 8,
// u = 0..3), images r0 + 4 ig + i (ig = l % 8, i = 0..3). A 16-byte store when the 4 images are
// valid and y's rows are 16-byte aligned (vec), else 4 predicated stores. alive4[i]: running max of
// |v| of image 4 ig + i.
__device__ __forceinline__ void list_compute(int lane, int ords, const ListCtx& c, int s, float bias, float clamp_max,
                                             char* y_r0, uint64_t ldy_bytes, int valid_n, bool vec,
                                             float (&alive4)[4]) {
  const int og = lane >> 3, ig = lane & 7;
  const float* const st = c.buf + s * tile::kListStageFloats;
  float acc[4][4];
#pragma unroll
  for (int u = 0; u < 4; ++u)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[u][i] = 0.f;
#pragma unroll
  for (int k = 0; k < 8; ++k) {  // inputs 4 k .. 4 k + 3, in order
    float4 w[4], f[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)  // weights 4 k .. 4 k + 3 of output 4 og + u: one chunk
      w[u] = *reinterpret_cast<const float4*>(st + tile::list_w_index(4 * og + u, 4 * k));
#pragma unroll
    for (int e = 0; e < 4; ++e)  // input 4 k + e of images 4 ig .. 4 ig + 3
      f[e] = *reinterpret_cast<const float4*>(st + tile::list_f_index(4 * k + e, 4 * ig));
#pragma unroll
    for (int e = 0; e < 4; ++e)
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float wt = e == 0 ? w[u].x : e == 1 ? w[u].y : e == 2 ? w[u].z : w[u].w;
        acc[u][0] = __fmaf_rn(wt, f[e].x, acc[u][0]);
        acc[u][1] = __fmaf_rn(wt, f[e].y, acc[u][1]);
        acc[u][2] = __fmaf_rn(wt, f[e].z, acc[u][2]);
        acc[u][3] = __fmaf_rn(wt, f[e].w, acc[u][3]);
      }
  }
  const int q0 = 4 * ig;  // first image slot of this lane
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    float v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[i] = fminf(fmaxf(acc[u][i] + bias, 0.f), clamp_max);
      alive4[i] = fmaxf(alive4[i], fabsf(v[i]));  // read only for valid images
    }
    const int j = __shfl_sync(0xffffffffu, ords, 4 * og + u);  // j >= 0
    float* const p = reinterpret_cast<float*>(y_r0 + uint64_t(unsigned(j)) * ldy_bytes) + q0;
    if (vec && q0 + 4 <= valid_n) {
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) store_if(p + i, v[i], q0 + i < valid_n);
    }
  }
}

// Blocks c0 .. c1 - 1 (c1 - c0 <= 32, all list blocks of the run) as a pipeline. Iteration b: stage
// block b + 1 (list_issue on the indices fetched one iteration earlier: its copies go in flight),
// fetch block b + 2's indices, load block b + 3's order entries, then compute block b if it is a list
// step. So each global round trip (order -> indices -> features and weights) has one block's FMAs
// to land in. One cp.async group per staged block (empty when it is not a list step, and in the last
// iteration, where nothing is staged): "all but the newest group landed" is then exactly block b.
// Returns the blocks that are NOT list steps (bit b - c0), for the caller to run as block steps;
// sets row_nonzero for the images with a nonzero output here.
__device__ __forceinline__ unsigned list_pipeline(int lane, int c0, int c1, const ListCtx& c, ReuseSmem& sm,
                                                  const int* __restrict__ order, float bias, float clamp_max,
                                                  char* y_r0, uint64_t ldy_bytes, int valid_n, bool vec,
                                                  int* __restrict__ row_nonzero_r0) {
  auto ord_at = [&](int b) {  // lane l: the output at position 16 b + l % 16 (b < c1: inside the run)
    const int t = b * tile::kListOutputs + (lane & 15);
    return order ? __ldg(order + t) : t;
  };
  float alive4[4] = {0.f, 0.f, 0.f, 0.f};  // images 4 (lane % 8) + i
  unsigned rest = 0u;
  int ord_cur = ord_at(c0);                        // block b
  int ord_nxt = c0 + 1 < c1 ? ord_at(c0 + 1) : 0;  // block b + 1
  int ord_nn = c0 + 2 < c1 ? ord_at(c0 + 2) : 0;   // block b + 2
  ListFetch f_nxt = list_fetch(lane, ord_cur, c);  // block c0, staged right away
  bool list_cur = list_issue(lane, ord_cur, f_nxt, c, 0, sm);
  if (c0 + 1 < c1) f_nxt = list_fetch(lane, ord_nxt, c);  // from here on: block b + 1's indices
  for (int b = c0; b < c1; ++b) {
    const int s = (b - c0) & 1;
    bool list_nxt = false;
    if (b + 1 < c1) list_nxt = list_issue(lane, ord_nxt, f_nxt, c, s ^ 1, sm);  // commits a group
    else cp_async_commit();  // nothing to stage: an empty group keeps the count
    if (b + 2 < c1) f_nxt = list_fetch(lane, ord_nn, c);
    const int ord_n3 = b + 3 < c1 ? ord_at(b + 3) : 0;
    if (list_cur) {
      cp_async_wait_all_but_newest();  // block b's copies (this lane's)
      __syncwarp();                    // ... and every other lane's
      list_compute(lane, ord_cur, c, s, bias, clamp_max, y_r0, ldy_bytes, valid_n, vec, alive4);
    } else {
      rest |= 1u << (b - c0);
    }
    __syncwarp();  // every lane has read stage s before block b + 2's copies overwrite it
    list_cur = list_nxt;
    ord_cur = ord_nxt;
    ord_nxt = ord_nn;
    ord_nn = ord_n3;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int q = 4 * (lane & 7) + i;
    if (q < valid_n && alive4[i] != 0.f) row_nonzero_r0[q] = 1;  // benign race: every writer writes 1
  }
  return rest;
}

// A warp's run [t_begin, t_end) in list mode (the per-layer fused kernel: x is read-only for the
// launch). The run is cut into its head [t_begin, 16 b0), the list blocks b0 .. b1 - 1 wholly inside
// it (tile::list_blocks), and its tail [16 b1, t_end). The list blocks run through list_pipeline in
// chunks of up to 32; the head, the tail and every list block that is not a list step then run as
// block steps (reuse_range), outside the pipeline, so that its registers and the block steps' do not
// add up. One call site of each. y_r0: y + r0 (r0 = the warp's first image position); valid_n =
// count - r0; vec: y's rows are 16-byte aligned (16-byte stores). alive: this lane's image, block steps.
__device__ __forceinline__ void list_run(int lane, int warp, bool valid, unsigned col, int t_begin, int t_end,
                                         const int* __restrict__ wi, const float* __restrict__ wv, float bias,
                                         float clamp_max, const float* __restrict__ x, int64_t ldx, char* y_r0,
                                         char* y_lane, uint64_t ldy_bytes, int valid_n, bool vec,
                                         const int* __restrict__ order, ReuseSmem& sm, float* list_buf,
                                         int* __restrict__ row_nonzero_r0, float& alive) {
  int b0, b1;
  tile::list_blocks(t_begin, t_end, &b0, &b1);
  const int m0 = b0 < b1 ? b0 * tile::kListOutputs : t_end;  // no list block: the head is the whole run
  const int m1 = b0 < b1 ? b1 * tile::kListOutputs : t_end;
  ListCtx c;
  c.wi_lane = wi + lane;
  c.wi4_lane = wi + 4 * (lane & 7);
  c.wv4_lane = wv + 4 * (lane & 7);
  c.x = x;
  c.ldx = ldx;
  c.col = col;
  const unsigned col0 = __shfl_sync(0xffffffffu, col, 0);
  // 16-byte feature pieces need the warp's 32 columns contiguous (lanes past the count hold column 0,
  // so a partial group gathers) and every row's piece 16-byte aligned.
  c.contig = __all_sync(0xffffffffu, col == col0 + unsigned(lane)) && (col0 & 3u) == 0 && (ldx & 3) == 0 &&
             (reinterpret_cast<uintptr_t>(x) & 15u) == 0;
  c.col4 = col0 + 4u * unsigned(lane & 7);
  c.buf = list_buf + warp * tile::kListWarpFloats;
  // Pieces for block steps: the head, then per chunk of list blocks its non-list blocks, then the tail.
  int next = b0, chunk0 = b0;  // next chunk of list blocks; the chunk `rest` refers to
  unsigned rest = 0u;
  bool head = true, tail = true;
  for (;;) {
    int lo, hi;
    if (head) {
      head = false;
      lo = t_begin;
      hi = m0;
    } else if (rest != 0u) {
      lo = (chunk0 + __ffs(int(rest)) - 1) * tile::kListOutputs;
      hi = lo + tile::kListOutputs;
      rest &= rest - 1u;
    } else if (next < b1) {
      const int c1 = min(b1, next + 32);
      rest = list_pipeline(lane, next, c1, c, sm, order, bias, clamp_max, y_r0, ldy_bytes, valid_n, vec,
                           row_nonzero_r0);
      chunk0 = next;
      next = c1;
      continue;
    } else if (tail) {
      tail = false;
      lo = m1;
      hi = t_end;
    } else {
      break;
    }
    if (lo < hi)
      reuse_range<false>(lane, valid, col, lo, hi, wi, wv, bias, clamp_max, x, ldx, y_lane, ldy_bytes, order, sm,
                         true, alive);
  }
}

}  // namespace
}  // namespace jhdnn::sparse
