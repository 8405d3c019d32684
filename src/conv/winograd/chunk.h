// How many images one chunk of the non-fused Winograd solvers holds (README.md in this folder,
// "Workspace and chunks"). A pure function of the problem's sizes, host-only, tested on the CPU
// (tests/test_conv_winograd.cpp, "[cpu]").
#pragma once

#include <cstdint>

namespace jhdnn::conv::winograd {

// Images per chunk (>= 1, <= N; the last chunk may hold fewer):
//  - JHDNN_WINOGRAD_CHUNK caps it (after the 4 GiB cap): the override for tests and benchmarks;
//  - else the whole batch, as far as the 4 GiB workspace cap allows.
// Why not chunks whose V + M stay in L2: tried, and slower everywhere it was measured (H200,
// 6641414, ResNet-50 b32 3x3 layers, F(4x4) / F(2x2), us): chunks of 4 / 8 / the L2 rule's 5-16 /
// the whole batch took c2 178 / 150 / 182 / 122 and 231 / 197 / 253 / 172; c3 212 / 169 / 167 / 97;
// c4 198 / 155 / 136 / 109; c5 464 / 244 / - / 131. Each chunk is three more launches of a
// smaller grid (the GEMMs of a 5-image chunk fill barely one wave), which costs more than the DRAM
// traffic an L2-resident V and M save (README.md, "Workspace and chunks").
// N: images in the batch; cap_images: most images whose workspace fits the 4 GiB cap (>= 1);
// forced: JHDNN_WINOGRAD_CHUNK (core::config::winograd_chunk(), > 0) or 0 when unset.
int64_t chunk_images(int64_t N, int64_t cap_images, int64_t forced);

}  // namespace jhdnn::conv::winograd
