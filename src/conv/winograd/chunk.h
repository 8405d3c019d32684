// How many images one chunk of the non-fused Winograd solvers holds (README.md in this folder,
// "Workspace and chunks"). A pure function of the problem's sizes, host-only, tested on the CPU
// (tests/test_conv_winograd.cpp, "[cpu]").
#pragma once

#include <cstdint>

namespace jhdnn::conv::winograd {

// The V + M bytes of one chunk that count as "L2-resident": ~40% of the H200's 50 MB L2, leaving
// the rest for x, y, U and for the L2's two partitions (an SM reads the far half more slowly, and
// lines may be held in both halves).
constexpr int64_t kL2ChunkBytes = int64_t(20) << 20;  // 20 MiB
// A chunk must still give the GEMM at least one full wave of CTAs on the H200's 132 SMs (estimated
// with 128 x 64 CTA tiles), else the launches of many small chunks cost more than the traffic saved.
constexpr int64_t kMinGemmCtas = 132;

struct ChunkInputs {
  int64_t N;              // images in the batch
  int64_t tiles_per_img;  // ceil(P / m) * ceil(Q / m)
  int64_t elems;          // transform elements per tile: (m + 2)^2, the number of GEMMs
  int64_t C, K;           // channels
  int64_t cap_images;     // most images whose workspace fits the 4 GiB cap (>= 1)
  int64_t forced;         // JHDNN_WINOGRAD_CHUNK (> 0), or 0 when unset
};

// Images per chunk (>= 1, <= N; the last chunk may hold fewer):
//  - JHDNN_WINOGRAD_CHUNK caps it (after the 4 GiB cap): the override for tests and benchmarks;
//  - when the whole batch's V + M fits kL2ChunkBytes, or not even one image's does, or the largest
//    chunk that fits would give the GEMM fewer than kMinGemmCtas CTAs: the whole batch (as far as
//    the 4 GiB cap allows): chunking would not keep V and M in L2, or would starve the GEMM;
//  - else the fewest chunks whose V + M fit kL2ChunkBytes, of equal size (N = 32 with 10 images
//    fitting: 4 chunks of 8, not 10 + 10 + 10 + 2).
int64_t chunk_images(const ChunkInputs& in);

}  // namespace jhdnn::conv::winograd
