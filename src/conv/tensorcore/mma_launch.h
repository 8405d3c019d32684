// Host-side interface of the generation-1 (mma.sync) implicit-GEMM kernel, shared by the
// convolution solver and the tensor-core GEMM (a GEMM is a 1x1 convolution; see
// src/gemm/tensorcore/README.md). Kernels never see a ConvProblem: this flat block is all they get.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/device_info.h"
#include "core/status.h"
#include "jhdnn/jhdnn.h"

namespace jhdnn::conv::tensorcore {

// One group's implicit GEMM: M = N*O*P*Q rows, Kg columns, Kred = T*R*S*Cg reduction.
// Element strides of x (n, c, d, h, w), w (k, c, t, r, s), y (n, k, o, p, q); z has y's strides.
struct TcParams {
  int64_t M;
  int Kg, Cg, Kred;
  int D, H, W, T, R, S, O, P, Q;
  int pad_d, pad_h, pad_w, str_d, str_h, str_w, dil_d, dil_h, dil_w;
  int flip;
  int64_t xs[5], ws[5], ys[5];
  float alpha, beta, alpha2;
  const void* bias;  // Kg*G elements of the data type, or null
  const void* z;     // residual with y's strides, or null
  int relu;
};

// Launches the kernel for dtype (FLOAT = TF32, HALF, BFLOAT16) over groups G (gridDim.z); picks the
// tile width (128 or 64 output channels) and the loader (16-byte cp.async when channels are
// contiguous and 16-byte aligned, the general gather otherwise) from the parameters and pointers.
// The caller has validated the sizes (see check_problem in conv_mma.cu).
core::Status launch_mma(jhdnnDataType_t dtype, const TcParams& prm, int groups, const void* x, const void* w,
                        void* y, int sm_count, cudaStream_t stream);

// Loads every kernel variant and raises its dynamic shared-memory limit (once per device).
core::Status load_mma_kernels();

// The current device's properties, queried once per device and cached (nothing queried per call).
const core::DeviceInfo& cached_device_info();

}  // namespace jhdnn::conv::tensorcore
