// Where the resident kernels keep features in shared memory, and which lane of vals4w / vals4w8 handles which row
// of a chunk: the two facts a row order or a neuron naming needs in order to spread those kernels' shared-memory
// accesses over the banks (tools/spdnn's bank_labels). No CUDA or jhDNN dependency, so host tools include it too.
#pragma once

#if defined(__CUDACC__)
#define JHDNN_RESIDENT_HD __host__ __device__ __forceinline__
#else
#define JHDNN_RESIDENT_HD inline
#endif
namespace jhdnn::sparse {

// Where feature i (0 <= i <= n) lives in the resident kernels' shared feature buffers: row
// resident_pos(i, n), a permutation of [0, n] that keeps row n (the zero padding row) and rows
// n & ~3 .. n - 1, and swaps rows only inside aligned groups of 4 below: i XOR (the 2-bit digits of
// i >> 2, XOR-folded). The packed copy stores these rows (indices and output row), the kernels load
// the features into them and write the survivors back from them. Why: a row holds S = 8 images x 4
// bytes, so rows i and i + 4 share their 8 banks; a warp-chunk's rows in the challenge's reuse order
// are j = r + M m (one list, M = N / 16 a power of 2 >= 4), all in one bank group unpermuted (the
// quad kernel's half-warp stores 8 of them: 8-way conflict, 16 wavefronts per warp-chunk); permuted,
// rows m = 4a .. 4a + 3 fall in the 4 groups (2-way for 8 rows, none for the pair kernel's 4).
JHDNN_RESIDENT_HD int resident_pos(int i, int n) {
  if (i >= (n & ~3)) return i;
  unsigned g = unsigned(i) >> 2, key = 0;
  while (g != 0) {
    key ^= g & 3u;
    g >>= 2;
  }
  return int(unsigned(i) ^ key);
}
// Lane p's row i (0..3) of a 128-row chunk in vals4w / vals4w8 (dnn_resident.cu): 4p + ((i + (p >> 1)) & 3).
// Headers are 16 bytes, so header r sits in bank group r & 7, and the 8 lanes of one wavefront then load 8 distinct
// groups for each i (rows 4p + i alone would hit 2 groups 4 times).
JHDNN_RESIDENT_HD int resident_vals4w_row(int lane, int i) { return 4 * lane + ((i + (lane >> 1)) & 3); }
// The bank group (of 8, 4 banks each) of feature i's 16-byte row of S = 4 images in vals4w / vals4w8's feature
// buffers, up to one rotation per buffer (the buffers start at some multiple of 16 bytes): two features of a
// shared-memory request cost separate wavefronts when they fall in the same group.
JHDNN_RESIDENT_HD int resident_bank_group(int i, int n) { return resident_pos(i, n) & 7; }

}  // namespace jhdnn::sparse
