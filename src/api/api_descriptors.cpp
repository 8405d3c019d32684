// Descriptor shims: create/destroy/set/get for tensors, filters and convolutions.
#include <algorithm>
#include <climits>

#include "api/api_common.h"
#include "core/descriptors.h"

using namespace jhdnn;
using core::fail;
using core::Status;

namespace {

#define CHECK_SET(d, what) \
  if (!(d)->is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "%s descriptor was never set", what)

Status check_format(jhdnnTensorFormat_t format) {
  if (format == JHDNN_TENSOR_NCHW_VECT_C)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "tensor format NCHW_VECT_C is not supported (use NCHW or NHWC)");
  if (format != JHDNN_TENSOR_NCHW && format != JHDNN_TENSOR_NHWC)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown tensor format %d", int(format));
  return Status::success();
}

Status check_nb_dims(int nb_dims) {
  if (nb_dims < 3 || nb_dims > JHDNN_DIM_MAX)
    return fail(JHDNN_STATUS_BAD_PARAM, "nbDims (%d) must be in [3, %d]", nb_dims, JHDNN_DIM_MAX);
  return Status::success();
}

Status set_packed(jhdnnTensorStruct* t, jhdnnTensorFormat_t format, jhdnnDataType_t dtype, int nb_dims,
                  const int64_t* dims) {
  JHDNN_TRY(check_format(format));
  JHDNN_TRY(check_nb_dims(nb_dims));
  for (int i = 0; i < nb_dims; ++i)  // checked here too: packed strides of bad dims are meaningless
    if (dims[i] <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "dimension %d (%lld) must be > 0", i, (long long)dims[i]);
  int64_t strides[JHDNN_DIM_MAX];
  core::packed_strides(format, nb_dims, dims, strides);
  return core::set_tensor(t, dtype, nb_dims, dims, strides);
}

// Narrowing for the int-typed getters; descriptors set through the int API always fit.
Status to_int(int64_t v, int* out, const char* what) {
  if (v > INT_MAX) return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "%s (%lld) does not fit in int", what, (long long)v);
  *out = int(v);
  return Status::success();
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ tensors

jhdnnStatus_t jhdnnCreateTensorDescriptor(jhdnnTensorDescriptor_t* tensorDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    *tensorDesc = new jhdnnTensorStruct;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroyTensorDescriptor(jhdnnTensorDescriptor_t tensorDesc) {
  return api::guarded([&]() -> Status {
    delete tensorDesc;  // NULL is fine, as in cuDNN
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetTensor4dDescriptor(jhdnnTensorDescriptor_t tensorDesc, jhdnnTensorFormat_t format,
                                         jhdnnDataType_t dataType, int n, int c, int h, int w) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    const int64_t dims[4] = {n, c, h, w};
    return set_packed(tensorDesc, format, dataType, 4, dims);
  });
}

jhdnnStatus_t jhdnnSetTensor4dDescriptorEx(jhdnnTensorDescriptor_t tensorDesc, jhdnnDataType_t dataType,
                                           int n, int c, int h, int w, int nStride, int cStride,
                                           int hStride, int wStride) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    const int64_t dims[4] = {n, c, h, w};
    const int64_t strides[4] = {nStride, cStride, hStride, wStride};
    return core::set_tensor(tensorDesc, dataType, 4, dims, strides);
  });
}

jhdnnStatus_t jhdnnGetTensor4dDescriptor(const jhdnnTensorDescriptor_t tensorDesc, jhdnnDataType_t* dataType,
                                         int* n, int* c, int* h, int* w, int* nStride, int* cStride,
                                         int* hStride, int* wStride) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    CHECK_SET(tensorDesc, "tensor");
    if (tensorDesc->nb_dims != 4)
      return fail(JHDNN_STATUS_BAD_PARAM, "tensor has %d dims, not 4", tensorDesc->nb_dims);
    JHDNN_CHECK_NULL(dataType);
    JHDNN_CHECK_NULL(n); JHDNN_CHECK_NULL(c); JHDNN_CHECK_NULL(h); JHDNN_CHECK_NULL(w);
    JHDNN_CHECK_NULL(nStride); JHDNN_CHECK_NULL(cStride); JHDNN_CHECK_NULL(hStride); JHDNN_CHECK_NULL(wStride);
    const auto* t = tensorDesc;
    *dataType = t->dtype;
    int* dims[4] = {n, c, h, w};
    int* strides[4] = {nStride, cStride, hStride, wStride};
    for (int i = 0; i < 4; ++i) {
      JHDNN_TRY(to_int(t->dims[i], dims[i], "dimension"));
      JHDNN_TRY(to_int(t->strides[i], strides[i], "stride"));
    }
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetTensorNdDescriptor(jhdnnTensorDescriptor_t tensorDesc, jhdnnDataType_t dataType,
                                         int nbDims, const int dimA[], const int strideA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    JHDNN_TRY(check_nb_dims(nbDims));
    JHDNN_CHECK_NULL(dimA);
    JHDNN_CHECK_NULL(strideA);
    int64_t dims[JHDNN_DIM_MAX], strides[JHDNN_DIM_MAX];
    for (int i = 0; i < nbDims; ++i) dims[i] = dimA[i], strides[i] = strideA[i];
    return core::set_tensor(tensorDesc, dataType, nbDims, dims, strides);
  });
}

jhdnnStatus_t jhdnnSetTensorNdDescriptorEx(jhdnnTensorDescriptor_t tensorDesc, jhdnnTensorFormat_t format,
                                           jhdnnDataType_t dataType, int nbDims, const int dimA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    JHDNN_TRY(check_nb_dims(nbDims));
    JHDNN_CHECK_NULL(dimA);
    int64_t dims[JHDNN_DIM_MAX];
    for (int i = 0; i < nbDims; ++i) dims[i] = dimA[i];
    return set_packed(tensorDesc, format, dataType, nbDims, dims);
  });
}

jhdnnStatus_t jhdnnGetTensorNdDescriptor(const jhdnnTensorDescriptor_t tensorDesc, int nbDimsRequested,
                                         jhdnnDataType_t* dataType, int* nbDims, int dimA[], int strideA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    CHECK_SET(tensorDesc, "tensor");
    if (nbDimsRequested < 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "nbDimsRequested (%d) must be >= 0", nbDimsRequested);
    JHDNN_CHECK_NULL(dataType);
    JHDNN_CHECK_NULL(nbDims);
    const int n = nbDimsRequested < tensorDesc->nb_dims ? nbDimsRequested : tensorDesc->nb_dims;
    if (n > 0) {
      JHDNN_CHECK_NULL(dimA);
      JHDNN_CHECK_NULL(strideA);
    }
    *dataType = tensorDesc->dtype;
    *nbDims = tensorDesc->nb_dims;
    for (int i = 0; i < n; ++i) {
      JHDNN_TRY(to_int(tensorDesc->dims[i], &dimA[i], "dimension"));
      JHDNN_TRY(to_int(tensorDesc->strides[i], &strideA[i], "stride"));
    }
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetTensorSizeInBytes(const jhdnnTensorDescriptor_t tensorDesc, size_t* size) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(tensorDesc);
    JHDNN_CHECK_NULL(size);
    CHECK_SET(tensorDesc, "tensor");
    *size = size_t(core::tensor_span_bytes(*tensorDesc));
    return Status::success();
  });
}

// ------------------------------------------------------------------ filters

jhdnnStatus_t jhdnnCreateFilterDescriptor(jhdnnFilterDescriptor_t* filterDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    *filterDesc = new jhdnnFilterStruct;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroyFilterDescriptor(jhdnnFilterDescriptor_t filterDesc) {
  return api::guarded([&]() -> Status {
    delete filterDesc;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetFilter4dDescriptor(jhdnnFilterDescriptor_t filterDesc, jhdnnDataType_t dataType,
                                         jhdnnTensorFormat_t format, int k, int c, int h, int w) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    const int64_t dims[4] = {k, c, h, w};
    return core::set_filter(filterDesc, dataType, format, 4, dims);
  });
}

jhdnnStatus_t jhdnnGetFilter4dDescriptor(const jhdnnFilterDescriptor_t filterDesc, jhdnnDataType_t* dataType,
                                         jhdnnTensorFormat_t* format, int* k, int* c, int* h, int* w) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    CHECK_SET(filterDesc, "filter");
    if (filterDesc->nb_dims != 4)
      return fail(JHDNN_STATUS_BAD_PARAM, "filter has %d dims, not 4", filterDesc->nb_dims);
    JHDNN_CHECK_NULL(dataType); JHDNN_CHECK_NULL(format);
    JHDNN_CHECK_NULL(k); JHDNN_CHECK_NULL(c); JHDNN_CHECK_NULL(h); JHDNN_CHECK_NULL(w);
    *dataType = filterDesc->dtype;
    *format = filterDesc->format;
    int* dims[4] = {k, c, h, w};
    for (int i = 0; i < 4; ++i) JHDNN_TRY(to_int(filterDesc->dims[i], dims[i], "dimension"));
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetFilterNdDescriptor(jhdnnFilterDescriptor_t filterDesc, jhdnnDataType_t dataType,
                                         jhdnnTensorFormat_t format, int nbDims, const int filterDimA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    JHDNN_TRY(check_nb_dims(nbDims));
    JHDNN_CHECK_NULL(filterDimA);
    int64_t dims[JHDNN_DIM_MAX];
    for (int i = 0; i < nbDims; ++i) dims[i] = filterDimA[i];
    return core::set_filter(filterDesc, dataType, format, nbDims, dims);
  });
}

jhdnnStatus_t jhdnnGetFilterNdDescriptor(const jhdnnFilterDescriptor_t filterDesc, int nbDimsRequested,
                                         jhdnnDataType_t* dataType, jhdnnTensorFormat_t* format, int* nbDims,
                                         int filterDimA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    CHECK_SET(filterDesc, "filter");
    if (nbDimsRequested < 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "nbDimsRequested (%d) must be >= 0", nbDimsRequested);
    JHDNN_CHECK_NULL(dataType); JHDNN_CHECK_NULL(format); JHDNN_CHECK_NULL(nbDims);
    const int n = nbDimsRequested < filterDesc->nb_dims ? nbDimsRequested : filterDesc->nb_dims;
    if (n > 0) JHDNN_CHECK_NULL(filterDimA);
    *dataType = filterDesc->dtype;
    *format = filterDesc->format;
    *nbDims = filterDesc->nb_dims;
    for (int i = 0; i < n; ++i) JHDNN_TRY(to_int(filterDesc->dims[i], &filterDimA[i], "dimension"));
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetFilterSizeInBytes(const jhdnnFilterDescriptor_t filterDesc, size_t* size) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(filterDesc);
    JHDNN_CHECK_NULL(size);
    CHECK_SET(filterDesc, "filter");
    *size = size_t(core::filter_bytes(*filterDesc));
    return Status::success();
  });
}

// ------------------------------------------------------------------ convolution descriptors

jhdnnStatus_t jhdnnCreateConvolutionDescriptor(jhdnnConvolutionDescriptor_t* convDesc) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    *convDesc = new jhdnnConvolutionStruct;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnDestroyConvolutionDescriptor(jhdnnConvolutionDescriptor_t convDesc) {
  return api::guarded([&]() -> Status {
    delete convDesc;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetConvolutionMathType(jhdnnConvolutionDescriptor_t convDesc, jhdnnMathType_t mathType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    if (mathType != JHDNN_DEFAULT_MATH && mathType != JHDNN_TENSOR_OP_MATH &&
        mathType != JHDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != JHDNN_FMA_MATH)
      return fail(JHDNN_STATUS_BAD_PARAM, "unknown math type %d", int(mathType));
    convDesc->math_type = mathType;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolutionMathType(jhdnnConvolutionDescriptor_t convDesc, jhdnnMathType_t* mathType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    JHDNN_CHECK_NULL(mathType);
    *mathType = convDesc->math_type;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetConvolutionGroupCount(jhdnnConvolutionDescriptor_t convDesc, int groupCount) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    if (groupCount < 1) return fail(JHDNN_STATUS_BAD_PARAM, "groupCount (%d) must be >= 1", groupCount);
    convDesc->group_count = groupCount;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolutionGroupCount(jhdnnConvolutionDescriptor_t convDesc, int* groupCount) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    JHDNN_CHECK_NULL(groupCount);
    *groupCount = convDesc->group_count;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetConvolution2dDescriptor(jhdnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u,
                                              int v, int dilation_h, int dilation_w, jhdnnConvolutionMode_t mode,
                                              jhdnnDataType_t computeType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    const int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
    return core::set_convolution(convDesc, 2, pad, stride, dil, mode, computeType);
  });
}

jhdnnStatus_t jhdnnGetConvolution2dDescriptor(const jhdnnConvolutionDescriptor_t convDesc, int* pad_h, int* pad_w,
                                              int* u, int* v, int* dilation_h, int* dilation_w,
                                              jhdnnConvolutionMode_t* mode, jhdnnDataType_t* computeType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    CHECK_SET(convDesc, "convolution");
    if (convDesc->spatial_dims != 2)
      return fail(JHDNN_STATUS_BAD_PARAM, "convolution has %d spatial dims, not 2", convDesc->spatial_dims);
    JHDNN_CHECK_NULL(pad_h); JHDNN_CHECK_NULL(pad_w); JHDNN_CHECK_NULL(u); JHDNN_CHECK_NULL(v);
    JHDNN_CHECK_NULL(dilation_h); JHDNN_CHECK_NULL(dilation_w); JHDNN_CHECK_NULL(mode);
    JHDNN_CHECK_NULL(computeType);
    *pad_h = convDesc->pad[0], *pad_w = convDesc->pad[1];
    *u = convDesc->stride[0], *v = convDesc->stride[1];
    *dilation_h = convDesc->dilation[0], *dilation_w = convDesc->dilation[1];
    *mode = convDesc->mode;
    *computeType = convDesc->compute_type;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnSetConvolutionNdDescriptor(jhdnnConvolutionDescriptor_t convDesc, int arrayLength,
                                              const int padA[], const int filterStrideA[], const int dilationA[],
                                              jhdnnConvolutionMode_t mode, jhdnnDataType_t computeType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    JHDNN_CHECK_NULL(padA);
    JHDNN_CHECK_NULL(filterStrideA);
    JHDNN_CHECK_NULL(dilationA);
    return core::set_convolution(convDesc, arrayLength, padA, filterStrideA, dilationA, mode, computeType);
  });
}

jhdnnStatus_t jhdnnGetConvolutionNdDescriptor(const jhdnnConvolutionDescriptor_t convDesc, int arrayLengthRequested,
                                              int* arrayLength, int padA[], int strideA[], int dilationA[],
                                              jhdnnConvolutionMode_t* mode, jhdnnDataType_t* computeType) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    CHECK_SET(convDesc, "convolution");
    if (arrayLengthRequested < 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "arrayLengthRequested (%d) must be >= 0", arrayLengthRequested);
    JHDNN_CHECK_NULL(arrayLength); JHDNN_CHECK_NULL(mode); JHDNN_CHECK_NULL(computeType);
    const int n = arrayLengthRequested < convDesc->spatial_dims ? arrayLengthRequested : convDesc->spatial_dims;
    if (n > 0) {
      JHDNN_CHECK_NULL(padA); JHDNN_CHECK_NULL(strideA); JHDNN_CHECK_NULL(dilationA);
    }
    *arrayLength = convDesc->spatial_dims;
    for (int i = 0; i < n; ++i)
      padA[i] = convDesc->pad[i], strideA[i] = convDesc->stride[i], dilationA[i] = convDesc->dilation[i];
    *mode = convDesc->mode;
    *computeType = convDesc->compute_type;
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolution2dForwardOutputDim(const jhdnnConvolutionDescriptor_t convDesc,
                                                    const jhdnnTensorDescriptor_t inputTensorDesc,
                                                    const jhdnnFilterDescriptor_t filterDesc, int* n, int* c,
                                                    int* h, int* w) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    JHDNN_CHECK_NULL(inputTensorDesc);
    JHDNN_CHECK_NULL(filterDesc);
    JHDNN_CHECK_NULL(n); JHDNN_CHECK_NULL(c); JHDNN_CHECK_NULL(h); JHDNN_CHECK_NULL(w);
    int64_t out[4];
    JHDNN_TRY(core::forward_output_dims(*convDesc, *inputTensorDesc, *filterDesc, 4, out));
    int* dst[4] = {n, c, h, w};
    for (int i = 0; i < 4; ++i) JHDNN_TRY(to_int(out[i], dst[i], "output dimension"));
    return Status::success();
  });
}

jhdnnStatus_t jhdnnGetConvolutionNdForwardOutputDim(const jhdnnConvolutionDescriptor_t convDesc,
                                                    const jhdnnTensorDescriptor_t inputTensorDesc,
                                                    const jhdnnFilterDescriptor_t filterDesc, int nbDims,
                                                    int tensorOuputDimA[]) {
  return api::guarded([&]() -> Status {
    JHDNN_CHECK_NULL(convDesc);
    JHDNN_CHECK_NULL(inputTensorDesc);
    JHDNN_CHECK_NULL(filterDesc);
    JHDNN_CHECK_NULL(tensorOuputDimA);
    int64_t out[JHDNN_DIM_MAX];
    JHDNN_TRY(core::forward_output_dims(*convDesc, *inputTensorDesc, *filterDesc, nbDims, out));
    int dims[JHDNN_DIM_MAX];
    for (int i = 0; i < nbDims; ++i) JHDNN_TRY(to_int(out[i], &dims[i], "output dimension"));
    std::copy(dims, dims + nbDims, tensorOuputDimA);  // written only when every dim fits
    return Status::success();
  });
}

}  // extern "C"
