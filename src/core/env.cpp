#include "core/env.h"

#include "core/config.h"

namespace jhdnn::core {

bool tf32_allowed_by_env() { return config::tf32_allowed(); }

}  // namespace jhdnn::core
