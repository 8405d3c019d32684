// Images per chunk of the non-fused Winograd solvers (chunk.h).
#include "conv/winograd/chunk.h"

#include <algorithm>

namespace jhdnn::conv::winograd {

int64_t chunk_images(const ChunkInputs& in) {
  const int64_t whole = std::max<int64_t>(1, std::min(in.N, in.cap_images));
  if (in.forced > 0) return std::min(whole, in.forced);
  // V + M of one image, bytes: elems * (C + K) * tiles floats. The caller checked that one image's
  // workspace fits 4 GiB, so this does not overflow.
  const int64_t per_img = in.elems * (in.C + in.K) * in.tiles_per_img * int64_t(sizeof(float));
  if (per_img <= 0 || whole * per_img <= kL2ChunkBytes) return whole;
  const int64_t fit = kL2ChunkBytes / per_img;  // images whose V + M stay in L2
  if (fit < 1) return whole;
  // CTAs of a fit-image chunk's GEMMs: ceil(T / 128) * ceil(K / 64) per GEMM, elems GEMMs.
  const int64_t ctas = (fit * in.tiles_per_img + 127) / 128 * ((in.K + 63) / 64) * in.elems;
  if (ctas < kMinGemmCtas) return whole;
  const int64_t chunks = (whole + fit - 1) / fit;
  return (whole + chunks - 1) / chunks;
}

}  // namespace jhdnn::conv::winograd
