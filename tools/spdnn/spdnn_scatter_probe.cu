// How fast a challenge network's FIRST layer runs when it is computed from the sparse input images (session 48), not
// from the dense feature map the fused layer calls read. The images are ~10% nonzero (N = 1024: ~102 of 1024
// pixels), so a layer that scatters each nonzero pixel's out-edges into the image's accumulators does ~1/10 of the
// fused call's multiply-adds and reads ~1/5 of its bytes; what is left is writing the dense output. Exactness: every
// output is the library's fma chain over its row's entries in stored order (rows ascending here, as the challenge's
// and the generator's are), and a warp takes an image's pixels in ascending order, so each accumulator sees its
// nonzero terms in the chain's order; the terms it skips are fma(w, 0, acc), which leave acc as it is for finite w
// (the sign of a zero acc aside, which acc + bias removes for bias != -0.0f). The probe checks that bit for bit.
//
// The kernel: a CTA holds `tile` images' accumulators in shared memory (tile x (n + 1) floats: the +1 spreads a
// column of images over the banks for the write-out; within an image, acc_slot's swizzle spreads an input's
// out-edges), each warp an image at a time. Per 32 pixels, lane k loads
// pixel k and its out-edge range (the transposed layer, built here on the host); then per pixel the warp's lanes
// update its out-edges (32 in the challenge: one per lane), the next pixel's edges loaded before this pixel's
// update, a __syncwarp between pixels (two pixels may share an output). Then bias, ReLU, clamp, and the outputs
// written neuron-major (y[j * ld + image]): a warp writes `tile` images of a row, 4 x tile contiguous bytes.
//
//   spdnn_scatter_probe [--width 1024] [--images 60000] [--tile 0] [--warps 8] [--reps 20]
// --tile: images per CTA, a power of 2 <= 32 (0: the most that fit 64 KB of accumulators, three CTAs per SM);
// --warps 4, 8 or 16. Prints one line: width, images, tile, warps, CTAs per SM, the median time of a layer (us),
// the output's write rate (GB/s), survivors, and the bitwise comparison with the fp32 CPU chain over all images.
//
// GPU only; exits 1 with the reason without one (a failed CUDA call: its message). Not a test: a measurement, whose
// output a GPU script keeps. Inputs: data/spdnn's first 1200 images scaled to the width and tiled (spdnn_infer's
// inputs); the layer: generate_layer_ell(n, 1, 42), which at N = 1024 is the official layer 1.
//
// Measured (session 48, bench/results/b7102e5/README.md): exact, and 2.4x / 7.5x / 25x SLOWER than the fused call
// at N = 1024 / 4096 / 16384 (503 us against 206-213 at N = 1024): every pixel step fetches its 256 bytes of edges
// from L2 and no two images share them, and an image's updates form one dependent chain.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/gpu_util.h"  // CUDA_CHECK
#include "spdnn/cli_args.h"
#include "spdnn/probe_util.cuh"

namespace {

struct ScatterArgs {
  const int* img_ptr;  // images + 1
  const int* img_idx;  // the nonzero pixels, ascending in each image
  const float* img_val;
  const int* cp;       // n + 1: input i's out-edges at [cp[i], cp[i + 1])
  const int2* edge;    // (output j, the weight's bits)
  int images, n, tile;
  long long ldy;
  float bias, clamp;
  float* y;
  int* count;
};

// Output j's accumulator within its image's row: j with its low 5 bits XORed by bits 5-9, 10-14 and 15-19, a
// permutation of each aligned group of 32 (so a row needs n floats, n a multiple of 32). The challenge's input i
// feeds outputs r + kM (k = 0..15, M = N / 16) and r' + kM: unswizzled, all 16 of a class sit in one bank (a
// 16-way conflict on every update: measured 1.02 ms at N = 1024 against 0.21 for the fused call); swizzled, the
// k's differ in bits 5-9 at N = 1024 (2k), in bits 5-14 at 4096 (8k and k / 4), and so on.
__device__ __forceinline__ int acc_slot(int j) { return j ^ (((j >> 5) ^ (j >> 10) ^ (j >> 15)) & 31); }

template <int kWarps>
__global__ void __launch_bounds__(kWarps * 32) scatter_layer(ScatterArgs a) {
  extern __shared__ float acc[];  // tile x (n + 1)
  __shared__ int alive[32];
  const int r0 = int(blockIdx.x) * a.tile;
  const int tcount = min(a.tile, a.images - r0);
  const int stride = a.n + 1;
  for (int e = int(threadIdx.x); e < a.tile * stride; e += kWarps * 32) acc[e] = 0.f;
  if (threadIdx.x < 32) alive[threadIdx.x] = 0;
  __syncthreads();
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  constexpr unsigned kFull = 0xffffffffu;
  for (int t = warp; t < tcount; t += kWarps) {
    float* mine = acc + t * stride;
    const int beg = a.img_ptr[r0 + t], end = a.img_ptr[r0 + t + 1];
    for (int p0 = beg; p0 < end; p0 += 32) {
      const int cnt = min(32, end - p0);
      int eb = 0, ee = 0;
      float pv = 0.f;
      if (lane < cnt) {
        const int pi = a.img_idx[p0 + lane];
        pv = a.img_val[p0 + lane];
        if (pi >= 0 && pi < a.n) {
          eb = a.cp[pi];
          ee = a.cp[pi + 1];
        }
      }
      int b = __shfl_sync(kFull, eb, 0), d = __shfl_sync(kFull, ee, 0) - b;
      int2 cur = lane < d ? a.edge[b + lane] : make_int2(0, 0);
      for (int k = 0; k < cnt; ++k) {
        const float xv = __shfl_sync(kFull, pv, k);
        const int bn = __shfl_sync(kFull, eb, (k + 1) & 31), dn = __shfl_sync(kFull, ee, (k + 1) & 31) - bn;
        const int2 nxt = k + 1 < cnt && lane < dn ? a.edge[bn + lane] : make_int2(0, 0);
        if (lane < d) {
          float* p = mine + acc_slot(cur.x);
          *p = __fmaf_rn(__int_as_float(cur.y), xv, *p);
        }
        for (int e = lane + 32; e < d; e += 32) {  // out-degree above 32 (not in the challenge's layers): one pixel's
          const int2 ex = a.edge[b + e];
          float* p = mine + acc_slot(ex.x);
          *p = __fmaf_rn(__int_as_float(ex.y), xv, *p);  // outputs are distinct: no order
        }
        __syncwarp();  // the next pixel may update the same outputs
        cur = nxt;
        b = bn;
        d = dn;
      }
    }
  }
  __syncthreads();
  // Output j of image t: consecutive threads take consecutive images of a row (tile a power of 2).
  const int shift = __ffs(a.tile) - 1;
  for (int e = int(threadIdx.x); e < a.n * a.tile; e += kWarps * 32) {
    const int j = e >> shift, t = e & (a.tile - 1);
    if (t < tcount) {
      const float v = fminf(fmaxf(acc[t * stride + acc_slot(j)] + a.bias, 0.f), a.clamp);
      a.y[j * a.ldy + r0 + t] = v;
      if (v != 0.f) alive[t] = 1;  // benign race: every writer writes 1
    }
  }
  __syncthreads();
  if (int(threadIdx.x) < tcount && alive[threadIdx.x]) atomicAdd(a.count, 1);
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  using spdnn::probe::upload;
  const int n = arg_int(argc, argv, "--width", 1024);
  const int images = arg_int(argc, argv, "--images", 60000);
  int tile = arg_int(argc, argv, "--tile", 0);
  const int warps = arg_int(argc, argv, "--warps", 8);
  const int reps = arg_int(argc, argv, "--reps", 20);
  if (!spdnn::generator_width_ok(n) || images < 1 || tile < 0 || tile > 32 || (tile & (tile - 1)) != 0 ||
      (warps != 4 && warps != 8 && warps != 16) || reps < 1) {
    std::fprintf(stderr, "spdnn_scatter_probe: bad option (--width a generator width, --images >= 1, --tile a power "
                         "of 2 <= 32 or 0, --warps 4 | 8 | 16, --reps >= 1)\n");
    return 2;
  }
  if (tile == 0) {
    tile = 32;
    while (tile > 1 && size_t(tile) * size_t(n + 1) * 4 > (64u << 10) + 64u) tile /= 2;
  }
  try {
    spdnn::Csr first;
    if (!spdnn::cli::read_first_images("spdnn_scatter_probe", &first)) return 1;
    const spdnn::Csr img = spdnn::tile_rows(spdnn::scale_images(first, n), images);
    if (img.nnz() >= (int64_t(1) << 31)) {
      std::fprintf(stderr, "spdnn_scatter_probe: %lld nonzeros do not fit int offsets\n",
                   static_cast<long long>(img.nnz()));
      return 2;
    }
    const spdnn::Ell e = spdnn::generate_layer_ell(n, 1, 42);
    const float bias = spdnn::challenge_bias(n), clamp = 32.f;
    // The transposed layer: input i's out-edges (j ascending, which the chains do not need: one edge per output).
    std::vector<int> cp(size_t(n) + 1, 0);
    for (int64_t j = 0; j < e.rows; ++j)
      for (int64_t k = 0; k < e.width; ++k)
        if (e.idx[size_t(j * e.width + k)] >= 0) ++cp[size_t(e.idx[size_t(j * e.width + k)]) + 1];
    for (int i = 0; i < n; ++i) cp[size_t(i) + 1] += cp[size_t(i)];
    std::vector<int2> edge(static_cast<size_t>(cp[size_t(n)]));
    std::vector<int> fill(cp.begin(), cp.end() - 1);
    for (int64_t j = 0; j < e.rows; ++j)
      for (int64_t k = 0; k < e.width; ++k) {
        const int i = e.idx[size_t(j * e.width + k)];
        if (i < 0) continue;
        float w = e.val[size_t(j * e.width + k)];
        int bits = 0;
        std::memcpy(&bits, &w, 4);
        edge[size_t(fill[size_t(i)]++)] = make_int2(int(j), bits);
      }
    std::vector<int> ptr(img.ptr.begin(), img.ptr.end());
    const long long ldy = (static_cast<long long>(images) + 127) / 128 * 128;
    ScatterArgs a{};
    a.img_ptr = upload(ptr);
    a.img_idx = upload(img.idx);
    a.img_val = upload(img.val);
    a.cp = upload(cp);
    a.edge = upload(edge);
    a.images = images;
    a.n = n;
    a.tile = tile;
    a.ldy = ldy;
    a.bias = bias;
    a.clamp = clamp;
    a.y = spdnn::probe::poisoned(size_t(ldy) * size_t(n));
    CUDA_CHECK(cudaMalloc(&a.count, 4));
    const size_t smem = size_t(tile) * size_t(n + 1) * 4;
    auto kernel = warps == 4 ? scatter_layer<4> : warps == 8 ? scatter_layer<8> : scatter_layer<16>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
    if (per_sm < 1) {
      std::fprintf(stderr, "spdnn_scatter_probe: %zu bytes of accumulators do not fit a CTA\n", smem);
      return 2;
    }
    const int grid = (images + tile - 1) / tile;
    const double med = spdnn::probe::median_us(
        reps, [&] { CUDA_CHECK(cudaMemset(a.count, 0, 4)); }, [&] { kernel<<<grid, warps * 32, smem>>>(a); });
    int survivors = 0;
    CUDA_CHECK(cudaMemcpy(&survivors, a.count, 4, cudaMemcpyDeviceToHost));
    // The library's fp32 chain (probe_util.cuh) for each distinct image, against every column that holds it.
    std::vector<float> y(static_cast<size_t>(ldy) * static_cast<size_t>(n));
    CUDA_CHECK(cudaMemcpy(y.data(), a.y, y.size() * 4, cudaMemcpyDeviceToHost));
    const int64_t distinct = std::min<int64_t>(first.rows, images);
    long long mismatches = 0, zero_sign = 0;
    int want_survivors = 0;
    std::vector<char> image_alive(size_t(distinct), 0);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t s = 0; s < distinct; ++s) {
      std::fill(x.begin(), x.end(), 0.f);
      for (int64_t p = img.ptr[size_t(s)]; p < img.ptr[size_t(s) + 1]; ++p)
        x[size_t(img.idx[size_t(p)])] = img.val[size_t(p)];
      for (int64_t j = 0; j < n; ++j) {
        const float want = spdnn::probe::chain_output(e, j, x.data(), bias, clamp);
        if (want != 0.f) image_alive[size_t(s)] = 1;
        uint32_t wb = 0;
        std::memcpy(&wb, &want, 4);
        for (int64_t r = s; r < images; r += distinct) {
          uint32_t gb = 0;
          std::memcpy(&gb, &y[size_t(j * ldy + r)], 4);
          if (gb != wb) ++((gb | wb) == 0x80000000u ? zero_sign : mismatches);
        }
      }
    }
    for (int64_t r = 0; r < images; ++r) want_survivors += image_alive[size_t(r % distinct)];
    std::printf("width %d images %d tile %d warps %d ctas_per_sm %d layer_us %.2f write_GBps %.0f survivors %d "
                "(want %d) mismatches %lld zero_sign_only %lld %s\n",
                n, images, tile, warps, per_sm, med, double(images) * n * 4 / med / 1e3, survivors, want_survivors,
                mismatches, zero_sign, mismatches == 0 && zero_sign == 0 && survivors == want_survivors ? "exact"
                                                                                                       : "DIFFERS");
    return mismatches == 0 && zero_sign == 0 && survivors == want_survivors ? 0 : 1;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "spdnn_scatter_probe: %s\n", ex.what());
    return 1;
  }
}
