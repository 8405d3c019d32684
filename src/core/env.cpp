#include "core/env.h"

#include <cstdlib>
#include <cstring>

namespace jhdnn::core {

bool tf32_allowed_by_env() {
  static const bool allowed = [] {
    const char* v = std::getenv("NVIDIA_TF32_OVERRIDE");
    return !(v != nullptr && std::strcmp(v, "0") == 0);
  }();
  return allowed;
}

}  // namespace jhdnn::core
