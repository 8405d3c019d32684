// How fast a challenge network's first layer runs on tensor cores (session 48's perf-notes, "Where the head could go
// next"), and how far its values land from the library's fp32 chains. Not a library path: a probe for a decision.
//
// The layer as block-ELL: its outputs in groups of 16 with equal input lists (reuse_order), its inputs renamed so
// that the inputs one group reads are whole aligned blocks of 16 (reader_group_labels; exact like every renaming,
// spdnn.h), each group then a few dense 16 x 16 weight blocks (2 in the challenge, no zeros). A warp computes one
// group for 32 images: per block, its bf16 weights as an m16n8k16 A fragment (the host checks that every weight is a
// bf16 value: 1/16 is) and, per 8 images, the 16 x 8 features as B, each fp32 feature split into three bf16 pieces
// (hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid)), three mma.sync into fp32. Then bias, ReLU, clamp, and
// the outputs written neuron-major in the original names (y[j * ld + image]). A tensor core sums in its own order, so
// the values are compared with the fp32 chain (acc = fma(w, x, acc) over the row in stored order) as counts of
// outputs that differ, the largest difference, and the survivors, not required to match bit for bit.
//
//   spdnn_blockell_probe [--width 1024] [--images 60000] [--layer 1] [--reps 20] [--random 0] [--pieces 3]
// --pieces 1: each feature rounded to one bf16 piece (one MMA instead of three; its bound below is 2^-7).
// --layer L: layer L of the generated network (= the official one in cycle 0 at N = 1024), its input the fp32
// chain's output of layers 1 .. L-1 on the live images at their columns (a gathered list, as in the driver).
// Layer 1 on the challenge's data: every partial sum is a multiple of 1/16 (the images are ones, the weights 1/16), exact in
// any order, so the outputs must equal the chain's bit for bit; that cannot catch a swapped fragment half, as every
// weight and row of a group is the same. --random 1 replaces the weights by random bf16 values and the image values
// by random fp32 ones (the same structure), which every fragment mistake changes by ~1 (a CPU emulation of the
// kernel, session 48's review). Then, and at any later layer, the outputs must be within 1e-5 of the largest
// |out| + |bias|, and the line reports how many outputs and survivors differ from the chain's.
// Prints one line: width, images, the median layer time (us), the DRAM rate its input read + output write would take
// (GB/s), survivors against the CPU chain's, outputs that differ from the chain, the largest absolute difference, and
// ok or DEFECT (exit 1).
//
// Run in session 49 (bench/results/a081e7e/README.md, the command there): every line ok, layer 1 bit for bit at
// N = 1024 / 4096, but not faster than the fused call (223 / 1019 us against 208-219 / 689-702; predicted 130-160 /
// 520-650): L2-bound, each block fetched by two groups as 4-byte loads. Reviewed before that by a helper with a CPU
// emulation of every lane's loads and MMAs (the PTX layouts).
// GPU only; exits 1 with the reason without one (a failed CUDA call: its message) or on DEFECT, 2 on a bad option or
// a weight that is not a bf16 value. Inputs as spdnn_scatter_probe's.
#include <cuda_bf16.h>
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
#include "conv/tensorcore/mma_sm80.cuh"
#include "spdnn/cli_args.h"
#include "spdnn/probe_util.cuh"

namespace {

constexpr int kWarps = 8;    // groups per CTA (one per warp)
constexpr int kNTiles = 4;   // 8-image tiles per warp: 32 images

struct BlockEllArgs {
  const uint4* afrag;        // (group, block): 32 lanes x 4 registers of bf16 pairs, m16n8k16's A layout
  const int* bcol;           // (group, block): the block's first input (renamed), a multiple of 16
  const int* out_row;        // groups x 16: the original output of each group row
  const float* x;            // renamed inputs, neuron-major: x[i * ld + column]
  const int* cols;           // the active list: list entry t reads column cols[t] of x (layer 1: t itself)
  int groups, width, images; // images: the list's length; y and alive are by list entry
  long long ld;
  float bias, clamp;
  float* y;                  // original outputs, neuron-major
  int* alive;                // per image: 1 where an output is nonzero
};

__device__ __forceinline__ uint32_t pack_bf16(__nv_bfloat16 lo_k, __nv_bfloat16 hi_k) {
  return uint32_t(__bfloat16_as_ushort(lo_k)) | (uint32_t(__bfloat16_as_ushort(hi_k)) << 16);
}

// x as three bf16 pieces: x = hi + mid + lo (each remainder is exact in fp32; lo keeps what is left to 8 bits).
__device__ __forceinline__ void split3(float x, __nv_bfloat16 (&p)[3]) {
  p[0] = __float2bfloat16_rn(x);
  const float r1 = x - __bfloat162float(p[0]);
  p[1] = __float2bfloat16_rn(r1);
  p[2] = __float2bfloat16_rn(r1 - __bfloat162float(p[1]));
}

// kPieces 3: x as hi + mid + lo (three MMAs per tile); 1: x rounded to bf16 (one MMA: spdnn_order_model says the
// challenge's categories survive that, its features do not stay within 1e-5).
template <int kPieces>
__global__ void __launch_bounds__(kWarps * 32) blockell_layer(BlockEllArgs a) {
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const int g = int(blockIdx.x) * kWarps + warp;
  if (g >= a.groups) return;
  const int img0 = int(blockIdx.y) * 8 * kNTiles;
  const int gid = lane >> 2, tig = lane & 3;  // m16n8k16: row / column group of the lane
  float c[kNTiles][4] = {};
  for (int b = 0; b < a.width; ++b) {
    const uint4 af = a.afrag[(size_t(g) * a.width + b) * 32 + lane];
    const uint32_t afr[4] = {af.x, af.y, af.z, af.w};
    const float* xb = a.x + (long long)(a.bcol[g * a.width + b] + 2 * tig) * a.ld;
#pragma unroll
    for (int t = 0; t < kNTiles; ++t) {
      const int img = img0 + 8 * t + gid;
      float v[4] = {0.f, 0.f, 0.f, 0.f};  // B rows 2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9 of column gid
      if (img < a.images) {
        const int col = a.cols[img];  // gathered where the list has gaps (layers after the first)
        v[0] = xb[col];
        v[1] = xb[a.ld + col];
        v[2] = xb[8 * a.ld + col];
        v[3] = xb[9 * a.ld + col];
      }
      __nv_bfloat16 p[4][3];
#pragma unroll
      for (int e = 0; e < 4; ++e) split3(v[e], p[e]);
#pragma unroll
      for (int piece = 0; piece < kPieces; ++piece) {
        const uint32_t bfr[2] = {pack_bf16(p[0][piece], p[1][piece]), pack_bf16(p[2][piece], p[3][piece])};
        jhdnn::tc::Mma<__nv_bfloat16>::run(c[t], afr, bfr);
      }
    }
  }
  const int j0 = a.out_row[g * 16 + gid], j1 = a.out_row[g * 16 + gid + 8];
#pragma unroll
  for (int t = 0; t < kNTiles; ++t) {
    const int img = img0 + 8 * t + 2 * tig;  // C: rows gid, gid + 8; columns 2 tig, 2 tig + 1
    if (img >= a.images) continue;
    float o[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) o[e] = fminf(fmaxf(c[t][e] + a.bias, 0.f), a.clamp);
    const bool two = img + 1 < a.images;
    if (two) {
      *reinterpret_cast<float2*>(a.y + j0 * a.ld + img) = make_float2(o[0], o[1]);
      *reinterpret_cast<float2*>(a.y + j1 * a.ld + img) = make_float2(o[2], o[3]);
    } else {
      a.y[j0 * a.ld + img] = o[0];
      a.y[j1 * a.ld + img] = o[2];
    }
    if (o[0] != 0.f || o[2] != 0.f) a.alive[img] = 1;  // benign race: every writer writes 1
    if (two && (o[1] != 0.f || o[3] != 0.f)) a.alive[img + 1] = 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using spdnn::cli::arg_int;
  using spdnn::probe::upload;
  const int n = arg_int(argc, argv, "--width", 1024);
  const int images = arg_int(argc, argv, "--images", 60000);
  const int reps = arg_int(argc, argv, "--reps", 20);
  const int random = arg_int(argc, argv, "--random", 0);
  const int pieces = arg_int(argc, argv, "--pieces", 3);
  const int layer = arg_int(argc, argv, "--layer", 1);
  if (!spdnn::generator_width_ok(n) || n % 16 != 0 || images < 1 || images > 65535 * 8 * kNTiles || reps < 1 ||
      (random != 0 && random != 1) || layer < 1 || layer > 120 || (pieces != 1 && pieces != 3)) {
    std::fprintf(stderr, "spdnn_blockell_probe: bad option (--width a generator width, --images 1..%d, --reps >= 1, "
                         "--random 0 | 1, --layer 1..120, --pieces 1 | 3)\n", 65535 * 8 * kNTiles);
    return 2;
  }
  try {
    spdnn::Csr first;
    if (!spdnn::cli::read_first_images("spdnn_blockell_probe", &first)) return 1;
    spdnn::Ell e = spdnn::generate_layer_ell(n, layer, 42);
    if (random == 1) {  // --random: values that exercise every fragment position and all three pieces (above)
      spdnn::probe::RandomValues rnd;
      for (float& w : e.val) w = rnd.weight();
      // The 1200 source images' values (before scaling and tiling, so column r still holds image r mod 1200). The
      // layers before --layer keep their weights; the survivors they leave are those of the random images.
      for (float& v : first.val) v = rnd.value();
    }
    const float bias = spdnn::challenge_bias(n), clamp = 32.f;
    // The layer's input for each of the 1200 source images (scaled to the width): the image itself for layer 1, else
    // the fp32 chain's output of layers 1 .. layer - 1 (chain() below: the library's order). Column r of the
    // 60000-wide map holds image r mod 1200, and the active list is the columns whose image is alive, in order (the
    // driver's lists keep survivors at their columns: layers after the first gather).
    const spdnn::Csr src = spdnn::scale_images(first, n);
    const int64_t distinct = std::min<int64_t>(src.rows, images);
    auto chain = [&](const spdnn::Ell& el, const std::vector<float>& in, std::vector<float>* out) {
      bool any = false;
      for (int64_t j = 0; j < n; ++j) {
        (*out)[size_t(j)] = spdnn::probe::chain_output(el, j, in.data(), bias, clamp);
        any = any || (*out)[size_t(j)] != 0.f;
      }
      return any;
    };
    std::vector<std::vector<float>> feat(static_cast<size_t>(distinct), std::vector<float>(static_cast<size_t>(n)));
    std::vector<char> live(static_cast<size_t>(distinct), 1);
    for (int64_t s = 0; s < distinct; ++s)
      for (int64_t p = src.ptr[size_t(s)]; p < src.ptr[size_t(s) + 1]; ++p)
        feat[size_t(s)][size_t(src.idx[size_t(p)])] = src.val[size_t(p)];
    for (int l = 1; l < layer; ++l) {
      const spdnn::Ell before = spdnn::generate_layer_ell(n, l, 42);
      std::vector<float> out(static_cast<size_t>(n));
      for (int64_t s = 0; s < distinct; ++s)
        if (live[size_t(s)]) {
          live[size_t(s)] = chain(before, feat[size_t(s)], &out) ? 1 : 0;
          feat[size_t(s)].swap(out);
        }
    }
    std::vector<int> cols;
    for (int64_t r = 0; r < images; ++r)
      if (live[size_t(r % distinct)]) cols.push_back(int(r));
    const int active = int(cols.size());
    if (active == 0) {
      std::fprintf(stderr, "spdnn_blockell_probe: no image is alive before layer %d\n", layer);
      return 2;
    }
    // Groups: 16 consecutive rows of reuse_order (in the challenge, rows with equal lists); inputs renamed by reader
    // groups. A group's blocks: the aligned 16-input blocks any of its rows reads (general block-ELL: a row's
    // missing entries in a block are zeros).
    const std::vector<int> order = spdnn::reuse_order(e);
    const std::vector<int> label = spdnn::reader_group_labels(e, order);  // label[old input] = new
    const int groups = n / 16;
    std::vector<int> out_row(order.begin(), order.end());
    std::vector<std::vector<int>> blocks(static_cast<size_t>(groups));
    for (int g = 0; g < groups; ++g)
      for (int q = 0; q < 16; ++q) {
        const int64_t r = order[size_t(g) * 16 + size_t(q)];
        for (int64_t k = 0; k < e.width; ++k) {
          const int i = e.idx[size_t(r * e.width + k)];
          if (i < 0) continue;
          const int blk = label[size_t(i)] / 16 * 16;
          if (std::find(blocks[size_t(g)].begin(), blocks[size_t(g)].end(), blk) == blocks[size_t(g)].end())
            blocks[size_t(g)].push_back(blk);
        }
      }
    int width = 0;
    for (const auto& b : blocks) width = std::max(width, int(b.size()));
    // A fragments: A[row][col] = W(output out_row[16 g + row], renamed input bcol + col), zero where no entry.
    std::vector<uint4> afrag(static_cast<size_t>(groups) * width * 32);
    std::vector<int> bcol(static_cast<size_t>(groups) * width, 0);
    long long filled = 0;
    for (int g = 0; g < groups; ++g)
      for (int b = 0; b < width; ++b) {
        float dense[16][16] = {};
        if (b < int(blocks[size_t(g)].size())) {
          bcol[size_t(g) * width + b] = blocks[size_t(g)][size_t(b)];
          for (int row = 0; row < 16; ++row) {
            const int j = out_row[size_t(g) * 16 + row];
            for (int64_t k = 0; k < e.width; ++k) {
              const int i = e.idx[size_t(j * e.width + k)];
              if (i < 0 || label[size_t(i)] / 16 * 16 != blocks[size_t(g)][size_t(b)]) continue;
              const float w = e.val[size_t(j * e.width + k)];
              if (!spdnn::probe::is_bf16(w)) {
                std::fprintf(stderr, "spdnn_blockell_probe: weight %g is not a bf16 value\n", double(w));
                return 2;
              }
              dense[row][label[size_t(i)] % 16] += w;  // (a repeated entry: its sum)
              ++filled;
            }
          }
        }
        for (int lane = 0; lane < 32; ++lane)
          afrag[(size_t(g) * width + b) * 32 + lane] = spdnn::probe::mma_a_fragment(dense, lane);
      }
    const long long ld = (static_cast<long long>(images) + 127) / 128 * 128;
    std::vector<float> x(static_cast<size_t>(ld) * static_cast<size_t>(n), 0.f);  // renamed rows
    for (int64_t i = 0; i < n; ++i) {  // row by row (column by column took 40 s at N = 16384)
      float* row = x.data() + size_t(label[size_t(i)]) * size_t(ld);
      for (const int r : cols) row[r] = feat[size_t(r % distinct)][size_t(i)];
    }
    BlockEllArgs a{};
    a.afrag = upload(afrag);
    a.bcol = upload(bcol);
    a.out_row = upload(out_row);
    a.x = upload(x);
    a.cols = upload(cols);
    a.groups = groups;
    a.width = width;
    a.images = active;
    a.ld = ld;
    a.bias = bias;
    a.clamp = clamp;
    a.y = spdnn::probe::poisoned(size_t(ld) * size_t(n));
    CUDA_CHECK(cudaMalloc(&a.alive, size_t(active) * 4));
    const dim3 grid(unsigned((groups + kWarps - 1) / kWarps), unsigned((active + 8 * kNTiles - 1) / (8 * kNTiles)));
    const double med = spdnn::probe::median_us(
        reps, [&] { CUDA_CHECK(cudaMemset(a.alive, 0, size_t(active) * 4)); },
        [&] {
          if (pieces == 3) blockell_layer<3><<<grid, kWarps * 32>>>(a);
          else blockell_layer<1><<<grid, kWarps * 32>>>(a);
        });
    std::vector<float> y(static_cast<size_t>(ld) * static_cast<size_t>(n));
    CUDA_CHECK(cudaMemcpy(y.data(), a.y, y.size() * 4, cudaMemcpyDeviceToHost));
    std::vector<int> alive(static_cast<size_t>(active));
    CUDA_CHECK(cudaMemcpy(alive.data(), a.alive, alive.size() * 4, cudaMemcpyDeviceToHost));
    // The fp32 chain of this layer in the original names for each live source image (want[j * distinct + s]), then
    // y swept in order against it (list entry t holds image cols[t] mod 1200).
    std::vector<float> want(static_cast<size_t>(n) * static_cast<size_t>(distinct), 0.f);
    std::vector<char> want_alive(static_cast<size_t>(distinct), 0);
    double max_ref = 0.0;
    {
      std::vector<float> out(static_cast<size_t>(n));
      for (int64_t s = 0; s < distinct; ++s) {
        if (!live[size_t(s)]) continue;
        want_alive[size_t(s)] = chain(e, feat[size_t(s)], &out) ? 1 : 0;
        for (int64_t j = 0; j < n; ++j) {
          want[size_t(j * distinct + s)] = out[size_t(j)];
          max_ref = std::max(max_ref, std::fabs(double(out[size_t(j)])) + std::fabs(double(bias)));
        }
      }
    }
    long long differ = 0, alive_differ = 0;
    double max_abs = 0.0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t t = 0; t < active; ++t) {
        const float got = y[size_t(j * ld + t)], w = want[size_t(j * distinct + cols[size_t(t)] % distinct)];
        if (!(got == w)) {
          ++differ;
          max_abs = std::max(max_abs, std::isnan(got) ? INFINITY : std::fabs(double(got) - double(w)));
        }
      }
    int survivors = 0, want_survivors = 0;
    for (int64_t t = 0; t < active; ++t) {
      const bool w = want_alive[size_t(cols[size_t(t)] % distinct)] != 0;
      survivors += alive[size_t(t)] != 0;
      want_survivors += w;
      alive_differ += (alive[size_t(t)] != 0) != w;
    }
    // Layer 1 on the real data: every partial sum is a multiple of 1/16 (ones times 1/16), exact in any order: no
    // difference is allowed. Later layers and --random: ~1e-7 of the largest |out| + |bias| from the tensor core's
    // order, more is a defect; whether a survivor differs is what the contract question is about (reported).
    const bool bitwise = layer == 1 && random == 0;
    // --pieces 1 rounds each feature to 8 significant bits (at most 2^-8 of it): with the challenge's positive
    // weights a sum's error is at most 2^-8 of the sum, so 2^-7 of the largest |out| + |bias| is the bound (not
    // meant for --random's mixed signs).
    const double bound = pieces == 3 ? 1e-5 : 0.0078125;
    const bool ok = bitwise ? differ == 0 && alive_differ == 0 : max_abs <= bound * max_ref;
    std::printf("width %d layer %d pieces %d images %d active %d random %d groups %d blocks_per_group %d weights %lld "
                "layer_us %.2f rw_GBps %.0f survivors %d (chain %d, %lld images differ) outputs_differ %lld "
                "max_abs_diff %.3g (of %.3g) %s\n",
                n, layer, pieces, images, active, random, groups, width, filled, med, 2.0 * double(active) * n * 4 / med / 1e3,
                survivors, want_survivors, alive_differ, differ, max_abs, max_ref, ok ? "ok" : "DEFECT");
    return ok ? 0 : 1;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "spdnn_blockell_probe: %s\n", ex.what());
    return 1;
  }
}
