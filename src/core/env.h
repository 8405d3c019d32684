// Process-wide settings read from the environment once (core/config.h holds them all).
#pragma once

namespace jhdnn::core {

// False when NVIDIA_TF32_OVERRIDE=0, which turns TF32 off in every NVIDIA library. Read once, at
// first use (like those libraries, by core::config); shared by the GEMM API and the tensor-core convolution rules.
bool tf32_allowed_by_env();

}  // namespace jhdnn::core
