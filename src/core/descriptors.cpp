#include "core/descriptors.h"

#include <algorithm>
#include <limits>

#include "core/conv_problem.h"

namespace jhdnn::core {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool known_dtype(jhdnnDataType_t t) { return int(t) >= JHDNN_DATA_FLOAT && int(t) <= JHDNN_DATA_COMPLEX_FP64; }

// Element size for any known type (descriptors may hold types no kernel computes with).
// Sub-byte types (INT4, UINT4, FP4) are counted as one byte: no jhDNN operation computes with them,
// so the size only has to be an upper bound.
int64_t elem_bytes(jhdnnDataType_t t) {
  switch (t) {
    case JHDNN_DATA_DOUBLE: case JHDNN_DATA_INT64: case JHDNN_DATA_COMPLEX_FP32: return 8;
    case JHDNN_DATA_COMPLEX_FP64: return 16;
    case JHDNN_DATA_FLOAT: case JHDNN_DATA_INT32: case JHDNN_DATA_UINT32: case JHDNN_DATA_INT8x4:
    case JHDNN_DATA_UINT8x4: return 4;
    case JHDNN_DATA_INT8x32: return 32;
    case JHDNN_DATA_HALF: case JHDNN_DATA_BFLOAT16: return 2;
    default: return 1;
  }
}

// a * b, false on int64 overflow (both non-negative).
bool mul_ok(int64_t a, int64_t b, int64_t* out) {
  if (a != 0 && b > kMax / a) return false;
  *out = a * b;
  return true;
}

}  // namespace

bool packed_strides(jhdnnTensorFormat_t format, int nb_dims, const int64_t* dims, int64_t* strides) {
  if (format == JHDNN_TENSOR_NCHW) {
    int64_t s = 1;
    for (int i = nb_dims - 1; i >= 0; --i) strides[i] = s, s *= dims[i];
    return true;
  }
  if (format == JHDNN_TENSOR_NHWC) {  // n, spatial..., c in memory order
    int64_t s = 1;
    strides[1] = s, s *= dims[1];
    for (int i = nb_dims - 1; i >= 2; --i) strides[i] = s, s *= dims[i];
    strides[0] = s;
    return true;
  }
  return false;
}

Status set_tensor(jhdnnTensorStruct* t, jhdnnDataType_t dtype, int nb_dims, const int64_t* dims,
                  const int64_t* strides) {
  if (!known_dtype(dtype)) return fail(JHDNN_STATUS_BAD_PARAM, "unknown data type %d", int(dtype));
  if (nb_dims < 3 || nb_dims > JHDNN_DIM_MAX)
    return fail(JHDNN_STATUS_BAD_PARAM, "nbDims (%d) must be in [3, %d]", nb_dims, JHDNN_DIM_MAX);
  int64_t elems = 1, last = 0;
  for (int i = 0; i < nb_dims; ++i) {
    if (dims[i] <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "dimension %d (%lld) must be > 0", i, (long long)dims[i]);
    if (strides[i] <= 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "stride %d (%lld) must be > 0", i, (long long)strides[i]);
    int64_t step;
    if (!mul_ok(elems, dims[i], &elems) || !mul_ok(dims[i] - 1, strides[i], &step) || last > kMax - step)
      return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "tensor size overflows 64-bit indexing");
    last += step;
  }
  int64_t bytes;
  if (last == kMax || !mul_ok(last + 1, elem_bytes(dtype), &bytes))
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "tensor size in bytes overflows 64 bits");
  t->dtype = dtype;
  t->nb_dims = nb_dims;
  std::fill(t->dims, t->dims + JHDNN_DIM_MAX, 0);
  std::fill(t->strides, t->strides + JHDNN_DIM_MAX, 0);
  std::copy(dims, dims + nb_dims, t->dims);
  std::copy(strides, strides + nb_dims, t->strides);
  t->is_set = true;
  return Status::success();
}

Status set_filter(jhdnnFilterStruct* f, jhdnnDataType_t dtype, jhdnnTensorFormat_t format, int nb_dims,
                  const int64_t* dims) {
  if (!known_dtype(dtype)) return fail(JHDNN_STATUS_BAD_PARAM, "unknown data type %d", int(dtype));
  if (format == JHDNN_TENSOR_NCHW_VECT_C)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "filter format NCHW_VECT_C is not supported (use NCHW or NHWC)");
  if (format != JHDNN_TENSOR_NCHW && format != JHDNN_TENSOR_NHWC)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown filter format %d", int(format));
  if (nb_dims < 3 || nb_dims > JHDNN_DIM_MAX)
    return fail(JHDNN_STATUS_BAD_PARAM, "nbDims (%d) must be in [3, %d]", nb_dims, JHDNN_DIM_MAX);
  int64_t elems = 1;
  for (int i = 0; i < nb_dims; ++i) {
    if (dims[i] <= 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "filter dimension %d (%lld) must be > 0", i, (long long)dims[i]);
    if (!mul_ok(elems, dims[i], &elems))
      return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "filter size overflows 64-bit indexing");
  }
  int64_t bytes;
  if (!mul_ok(elems, elem_bytes(dtype), &bytes))
    return fail(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "filter size in bytes overflows 64 bits");
  f->dtype = dtype;
  f->format = format;
  f->nb_dims = nb_dims;
  std::fill(f->dims, f->dims + JHDNN_DIM_MAX, 0);
  std::copy(dims, dims + nb_dims, f->dims);
  f->is_set = true;
  return Status::success();
}

Status set_convolution(jhdnnConvolutionStruct* c, int spatial_dims, const int* pad, const int* stride,
                       const int* dilation, jhdnnConvolutionMode_t mode, jhdnnDataType_t compute_type) {
  if (spatial_dims < 1 || spatial_dims > JHDNN_DIM_MAX - 2)
    return fail(JHDNN_STATUS_BAD_PARAM, "arrayLength (%d) must be in [1, %d]", spatial_dims, JHDNN_DIM_MAX - 2);
  if (spatial_dims != 2 && spatial_dims != 3)
    return fail(JHDNN_STATUS_NOT_SUPPORTED_SHAPE,
                "jhDNN convolves 2 or 3 spatial dimensions, not %d", spatial_dims);
  static const char* axis2[] = {"h", "w"};
  static const char* axis3[] = {"d", "h", "w"};
  const char** axis = spatial_dims == 2 ? axis2 : axis3;
  for (int i = 0; i < spatial_dims; ++i) {
    if (pad[i] < 0) return fail(JHDNN_STATUS_BAD_PARAM, "pad_%s (%d) must be >= 0", axis[i], pad[i]);
    if (stride[i] <= 0) return fail(JHDNN_STATUS_BAD_PARAM, "stride_%s (%d) must be > 0", axis[i], stride[i]);
    if (dilation[i] <= 0)
      return fail(JHDNN_STATUS_BAD_PARAM, "dilation_%s (%d) must be > 0", axis[i], dilation[i]);
  }
  if (mode != JHDNN_CONVOLUTION && mode != JHDNN_CROSS_CORRELATION)
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown convolution mode %d", int(mode));
  if (!known_dtype(compute_type))
    return fail(JHDNN_STATUS_BAD_PARAM, "unknown compute type %d", int(compute_type));
  c->spatial_dims = spatial_dims;
  // Internally 2-D convolutions are 3-D with a unit depth axis; keep the user's values in [0, n).
  for (int i = 0; i < 3; ++i) c->pad[i] = 0, c->stride[i] = 1, c->dilation[i] = 1;
  for (int i = 0; i < spatial_dims; ++i) c->pad[i] = pad[i], c->stride[i] = stride[i], c->dilation[i] = dilation[i];
  c->mode = mode;
  c->compute_type = compute_type;
  c->is_set = true;
  return Status::success();
}

Status forward_output_dims(const jhdnnConvolutionStruct& conv, const jhdnnTensorStruct& x,
                           const jhdnnFilterStruct& w, int nb_dims, int64_t* out) {
  if (!conv.is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "convolution descriptor was never set");
  if (!x.is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "input tensor descriptor was never set");
  if (!w.is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "filter descriptor was never set");
  const int want = conv.spatial_dims + 2;
  if (x.nb_dims != want)
    return fail(JHDNN_STATUS_BAD_PARAM, "input has %d dims but the convolution needs %d (%d spatial + n, c)",
                x.nb_dims, want, conv.spatial_dims);
  if (w.nb_dims != want)
    return fail(JHDNN_STATUS_BAD_PARAM, "filter has %d dims but the convolution needs %d", w.nb_dims, want);
  if (nb_dims != want)
    return fail(JHDNN_STATUS_BAD_PARAM, "nbDims (%d) != %d for this convolution", nb_dims, want);
  const int64_t groups = conv.group_count;
  if (w.dims[1] * groups != x.dims[1])
    return fail(JHDNN_STATUS_BAD_PARAM, "filter C*groups (%lld) != input C (%lld)",
                (long long)(w.dims[1] * groups), (long long)x.dims[1]);
  if (w.dims[0] % groups != 0)
    return fail(JHDNN_STATUS_BAD_PARAM, "filter K (%lld) is not divisible by groups (%lld)",
                (long long)w.dims[0], (long long)groups);
  static const char* axis2[] = {"height", "width"};
  static const char* axis3[] = {"depth", "height", "width"};
  const char** axis = conv.spatial_dims == 2 ? axis2 : axis3;
  out[0] = x.dims[0];
  out[1] = w.dims[0];
  for (int i = 0; i < conv.spatial_dims; ++i) {
    const int64_t in = x.dims[2 + i], filt = w.dims[2 + i];
    const int64_t span = (filt - 1) * conv.dilation[i] + 1;
    const int64_t padded = in + 2 * int64_t(conv.pad[i]);
    if (span > padded)
      return fail(JHDNN_STATUS_BAD_PARAM, "dilated filter %s (%lld) > padded input %s (%lld)", axis[i],
                  (long long)span, axis[i], (long long)padded);
    out[2 + i] = conv_out_size(in, filt, conv.pad[i], conv.stride[i], conv.dilation[i]);
  }
  return Status::success();
}

int64_t tensor_span_bytes(const jhdnnTensorStruct& t) {
  int64_t last = 0;
  for (int i = 0; i < t.nb_dims; ++i) last += (t.dims[i] - 1) * t.strides[i];
  return (last + 1) * elem_bytes(t.dtype);
}

int64_t filter_bytes(const jhdnnFilterStruct& f) {
  int64_t n = 1;
  for (int i = 0; i < f.nb_dims; ++i) n *= f.dims[i];
  return n * elem_bytes(f.dtype);
}

}  // namespace jhdnn::core
