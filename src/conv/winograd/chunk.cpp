// Images per chunk of the non-fused Winograd solvers (chunk.h).
#include "conv/winograd/chunk.h"

#include <algorithm>

namespace jhdnn::conv::winograd {

int64_t chunk_images(int64_t N, int64_t cap_images, int64_t forced) {
  const int64_t whole = std::max<int64_t>(1, std::min(N, cap_images));
  return forced > 0 ? std::min(whole, forced) : whole;
}

}  // namespace jhdnn::conv::winograd
