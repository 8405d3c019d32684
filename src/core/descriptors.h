// The opaque descriptor objects behind the public handles. Plain data: the API shims validate
// every setter's arguments, so a descriptor that is "set" always holds a consistent state.
#pragma once

#include <cstdint>

#include "core/device_info.h"
#include "jhdnn/jhdnn.h"

struct cublasContext;  // cublas_v2.h: typedef struct cublasContext* cublasHandle_t

struct jhdnnContext {
  cudaStream_t stream = nullptr;
  jhdnn::core::DeviceInfo device;
  // The gemm_cublas solver's cuBLAS handle, created by jhdnnCreate on the handle's device and
  // destroyed by jhdnnDestroy. One per jhdnn handle: a jhdnn handle, like a cuDNN one, is used by
  // one thread at a time, so setting its stream per call does not race.
  cublasContext* cublas = nullptr;
};

struct jhdnnTensorStruct {
  bool is_set = false;
  jhdnnDataType_t dtype = JHDNN_DATA_FLOAT;
  int nb_dims = 0;
  int64_t dims[JHDNN_DIM_MAX] = {};     // n, c, spatial...
  int64_t strides[JHDNN_DIM_MAX] = {};  // in elements
};

struct jhdnnFilterStruct {
  bool is_set = false;
  jhdnnDataType_t dtype = JHDNN_DATA_FLOAT;
  jhdnnTensorFormat_t format = JHDNN_TENSOR_NCHW;
  int nb_dims = 0;
  int64_t dims[JHDNN_DIM_MAX] = {};  // k, c (per group), spatial... (logical order, whatever the format)
};

struct jhdnnConvolutionStruct {
  bool is_set = false;
  int spatial_dims = 0;  // 2 or 3
  int pad[3] = {};
  int stride[3] = {1, 1, 1};
  int dilation[3] = {1, 1, 1};
  jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION;
  jhdnnDataType_t compute_type = JHDNN_DATA_FLOAT;
  jhdnnMathType_t math_type = JHDNN_DEFAULT_MATH;
  int group_count = 1;
};

namespace jhdnn::core {

// Element strides of a packed tensor of the given logical dims (n, c, spatial...) in format.
// Returns false when the format is not NCHW or NHWC.
bool packed_strides(jhdnnTensorFormat_t format, int nb_dims, const int64_t* dims, int64_t* strides);

// Validating setters shared by the 4d / Nd entry points.
Status set_tensor(jhdnnTensorStruct* t, jhdnnDataType_t dtype, int nb_dims, const int64_t* dims,
                  const int64_t* strides);
Status set_filter(jhdnnFilterStruct* f, jhdnnDataType_t dtype, jhdnnTensorFormat_t format, int nb_dims,
                  const int64_t* dims);
Status set_convolution(jhdnnConvolutionStruct* c, int spatial_dims, const int* pad, const int* stride,
                       const int* dilation, jhdnnConvolutionMode_t mode, jhdnnDataType_t compute_type);

// Output dims (n, k, spatial...) of a forward convolution; checks that the three descriptors fit.
Status forward_output_dims(const jhdnnConvolutionStruct& conv, const jhdnnTensorStruct& x,
                           const jhdnnFilterStruct& w, int nb_dims, int64_t* out_dims);

// Bytes spanned by a tensor / a filter.
int64_t tensor_span_bytes(const jhdnnTensorStruct& t);
int64_t filter_bytes(const jhdnnFilterStruct& f);

}  // namespace jhdnn::core
