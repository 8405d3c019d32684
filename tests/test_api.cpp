// API tests: every bad input gets the right status and a message naming what was wrong.
//
// Most rows need no GPU (descriptors, shape logic, dispatch decisions) and run on CI. Rows that need
// a handle run only where a GPU is present; elsewhere they SKIP with the reason.
//
// JHDNN_PRINT_BAD_INPUTS=1 prints every row as "status | message | input", the table quoted in
// issue notes.
#include <catch2/catch_test_macros.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "common/catch_gpu.h"
#include "common/host_fakes.h"
#include "conv/direct/direct.h"
#include "conv/dispatch.h"
#include "core/config.h"
#include "core/descriptors.h"
#include "jhdnn/jhdnn.h"

using namespace jhdnn;
using Status = core::Status;

namespace {

std::string last_error() {
  char buf[1024];
  jhdnnGetLastErrorString(buf, sizeof buf);
  return buf;
}

// One bad input: what it is, the call, the status and a piece of the message we expect.
struct Row {
  std::string input;
  std::function<jhdnnStatus_t()> call;
  jhdnnStatus_t want;
  std::string msg;  // substring of jhdnnGetLastErrorString()
};

void check_rows(const std::vector<Row>& rows) {
  const bool print = std::getenv("JHDNN_PRINT_BAD_INPUTS") != nullptr;
  for (const Row& r : rows) {
    INFO("input: " << r.input);
    const jhdnnStatus_t got = r.call();
    const std::string m = last_error();
    if (print) std::printf("BAD-INPUT | %-45s | %s | %s\n", jhdnnGetErrorString(got), m.c_str(), r.input.c_str());
    CHECK(std::string(jhdnnGetErrorString(got)) == jhdnnGetErrorString(r.want));
    CHECK(m.find(r.msg) != std::string::npos);
    CHECK(!m.empty());
  }
}

// Descriptors owned by a test.
struct Descs {
  jhdnnTensorDescriptor_t x = nullptr, y = nullptr;
  jhdnnFilterDescriptor_t w = nullptr;
  jhdnnConvolutionDescriptor_t conv = nullptr;
  Descs() {
    REQUIRE(jhdnnCreateTensorDescriptor(&x) == JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnCreateTensorDescriptor(&y) == JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnCreateFilterDescriptor(&w) == JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnCreateConvolutionDescriptor(&conv) == JHDNN_STATUS_SUCCESS);
  }
  ~Descs() {
    jhdnnDestroyTensorDescriptor(x);
    jhdnnDestroyTensorDescriptor(y);
    jhdnnDestroyFilterDescriptor(w);
    jhdnnDestroyConvolutionDescriptor(conv);
  }
  // A valid 2-D problem: N=2, C=64, 14x14, K=32, 3x3, pad 1, stride 1, in the given type.
  void set_valid(jhdnnDataType_t dt = JHDNN_DATA_FLOAT, jhdnnTensorFormat_t f = JHDNN_TENSOR_NCHW) {
    REQUIRE(jhdnnSetTensor4dDescriptor(x, f, dt, 2, 64, 14, 14) == JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnSetFilter4dDescriptor(w, dt, f, 32, 64, 3, 3) == JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION,
                                            dt == JHDNN_DATA_DOUBLE ? JHDNN_DATA_DOUBLE : JHDNN_DATA_FLOAT) ==
            JHDNN_STATUS_SUCCESS);
    REQUIRE(jhdnnSetTensor4dDescriptor(y, f, dt, 2, 32, 14, 14) == JHDNN_STATUS_SUCCESS);
  }
  Status problem(core::ConvProblem* p) const { return conv::make_problem(*x, *w, *conv, *y, p); }
};

jhdnnStatus_t code_of(const Status& s) {
  core::set_last_error(s.message);
  return s.code;
}

}  // namespace

TEST_CASE("status strings, version and the last-error message", "[api]") {
  CHECK(std::string(jhdnnGetErrorString(JHDNN_STATUS_SUCCESS)) == "JHDNN_STATUS_SUCCESS");
  CHECK(std::string(jhdnnGetErrorString(JHDNN_STATUS_BAD_PARAM_NULL_POINTER)) == "JHDNN_STATUS_BAD_PARAM_NULL_POINTER");
  CHECK(std::string(jhdnnGetErrorString(JHDNN_STATUS_NOT_SUPPORTED)) == "JHDNN_STATUS_NOT_SUPPORTED");
  CHECK(std::string(jhdnnGetErrorString(jhdnnStatus_t(12345))) == "JHDNN_STATUS_UNKNOWN");
  // cuDNN 9's numbering, value for value.
  CHECK(JHDNN_STATUS_NOT_INITIALIZED == 1001);
  CHECK(JHDNN_STATUS_BAD_PARAM == 2000);
  CHECK(JHDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH == 2008);
  CHECK(JHDNN_STATUS_NOT_SUPPORTED_LAYOUT == 3004);
  CHECK(JHDNN_STATUS_INTERNAL_ERROR == 4000);
  CHECK(JHDNN_STATUS_EXECUTION_FAILED == 5000);
  CHECK(JHDNN_DATA_BFLOAT16 == 9);
  CHECK(JHDNN_DATA_COMPLEX_FP64 == 21);
  CHECK(JHDNN_STATUS_CATEGORY(JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND) == JHDNN_STATUS_BAD_PARAM);
  CHECK(jhdnnGetVersion() == JHDNN_VERSION);

  jhdnnTensorDescriptor_t t;
  REQUIRE(jhdnnCreateTensorDescriptor(&t) == JHDNN_STATUS_SUCCESS);
  CHECK(jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 1, -3, 4, 4) == JHDNN_STATUS_BAD_PARAM);
  CHECK(last_error() == "dimension 1 (-3) must be > 0");
  char small[8];
  jhdnnGetLastErrorString(small, sizeof small);  // truncated, NUL-terminated
  CHECK(std::string(small) == "dimensi");
  jhdnnGetLastErrorString(nullptr, 10);  // ignored, no crash
  CHECK(jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 1, 3, 4, 4) == JHDNN_STATUS_SUCCESS);
  CHECK(last_error().empty());  // a success clears it
  jhdnnDestroyTensorDescriptor(t);
}

TEST_CASE("tensor descriptors: layouts, strides and sizes", "[api]") {
  jhdnnTensorDescriptor_t t;
  REQUIRE(jhdnnCreateTensorDescriptor(&t) == JHDNN_STATUS_SUCCESS);
  jhdnnDataType_t dt;
  int n, c, h, w, ns, cs, hs, ws;

  REQUIRE(jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_HALF, 2, 3, 5, 7) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == JHDNN_STATUS_SUCCESS);
  CHECK((dt == JHDNN_DATA_HALF && n == 2 && c == 3 && h == 5 && w == 7));
  CHECK((ns == 105 && cs == 35 && hs == 7 && ws == 1));
  size_t bytes = 0;
  REQUIRE(jhdnnGetTensorSizeInBytes(t, &bytes) == JHDNN_STATUS_SUCCESS);
  CHECK(bytes == 2 * 105 * 2);

  REQUIRE(jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NHWC, JHDNN_DATA_FLOAT, 2, 3, 5, 7) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws) == JHDNN_STATUS_SUCCESS);
  CHECK((ns == 105 && cs == 1 && hs == 21 && ws == 3));

  // Padded rows (4dEx): the size spans the padding.
  REQUIRE(jhdnnSetTensor4dDescriptorEx(t, JHDNN_DATA_FLOAT, 1, 2, 3, 4, 40, 20, 6, 1) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetTensorSizeInBytes(t, &bytes) == JHDNN_STATUS_SUCCESS);
  CHECK(bytes == (1 + 20 + 2 * 6 + 3) * 4);

  // Nd, 5-D NDHWC.
  const int dims5[5] = {1, 4, 2, 3, 5};
  REQUIRE(jhdnnSetTensorNdDescriptorEx(t, JHDNN_TENSOR_NHWC, JHDNN_DATA_BFLOAT16, 5, dims5) == JHDNN_STATUS_SUCCESS);
  int nb = 0, got_dims[8], got_strides[8];
  REQUIRE(jhdnnGetTensorNdDescriptor(t, 8, &dt, &nb, got_dims, got_strides) == JHDNN_STATUS_SUCCESS);
  CHECK(nb == 5);
  CHECK((got_strides[0] == 120 && got_strides[1] == 1 && got_strides[2] == 60 && got_strides[3] == 20 &&
         got_strides[4] == 4));
  // More than 2^31 elements is a valid descriptor (kernels index with 64 bits).
  REQUIRE(jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 2, 1, 65536, 65536) ==
          JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetTensorSizeInBytes(t, &bytes) == JHDNN_STATUS_SUCCESS);
  CHECK(bytes == size_t(2) * 65536 * 65536 * 4);
  jhdnnDestroyTensorDescriptor(t);
}

TEST_CASE("descriptor bad inputs", "[api]") {
  jhdnnTensorDescriptor_t t;
  jhdnnFilterDescriptor_t f;
  jhdnnConvolutionDescriptor_t cv;
  REQUIRE(jhdnnCreateTensorDescriptor(&t) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnCreateFilterDescriptor(&f) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnCreateConvolutionDescriptor(&cv) == JHDNN_STATUS_SUCCESS);
  jhdnnTensorDescriptor_t unset_t;  // created, never set
  jhdnnFilterDescriptor_t unset_f;
  REQUIRE(jhdnnCreateTensorDescriptor(&unset_t) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnCreateFilterDescriptor(&unset_f) == JHDNN_STATUS_SUCCESS);
  const int d4[4] = {2, 3, 4, 5}, s4[4] = {60, 20, 5, 1};
  const int big[8] = {2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 2, 2};
  const int big_s[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  const int pad2[2] = {1, 1}, one2[2] = {1, 1}, zero2[2] = {0, 0};
  jhdnnDataType_t dt;
  int i1, i2, i3, i4, i5, i6, i7, i8;
  jhdnnConvolutionMode_t mode;
  jhdnnTensorFormat_t fmt;

  std::vector<Row> rows = {
      {"jhdnnCreateTensorDescriptor(NULL)", [&] { return jhdnnCreateTensorDescriptor(nullptr); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorDesc is NULL"},
      {"jhdnnSetTensor4dDescriptor(NULL desc)",
       [&] { return jhdnnSetTensor4dDescriptor(nullptr, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 1, 1, 1, 1); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "tensorDesc is NULL"},
      {"tensor n = 0", [&] { return jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 0, 1, 1, 1); },
       JHDNN_STATUS_BAD_PARAM, "dimension 0 (0) must be > 0"},
      {"tensor w = -5", [&] { return jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NHWC, JHDNN_DATA_FLOAT, 1, 1, 1, -5); },
       JHDNN_STATUS_BAD_PARAM, "dimension 3 (-5) must be > 0"},
      {"tensor stride 0 (4dEx)",
       [&] { return jhdnnSetTensor4dDescriptorEx(t, JHDNN_DATA_FLOAT, 1, 2, 3, 4, 24, 12, 4, 0); },
       JHDNN_STATUS_BAD_PARAM, "stride 3 (0) must be > 0"},
      {"tensor negative stride",
       [&] { return jhdnnSetTensor4dDescriptorEx(t, JHDNN_DATA_FLOAT, 1, 2, 3, 4, 24, -12, 4, 1); },
       JHDNN_STATUS_BAD_PARAM, "stride 1 (-12) must be > 0"},
      {"tensor unknown data type 77",
       [&] { return jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW, jhdnnDataType_t(77), 1, 1, 1, 1); },
       JHDNN_STATUS_BAD_PARAM, "unknown data type 77"},
      {"tensor format NCHW_VECT_C",
       [&] { return jhdnnSetTensor4dDescriptor(t, JHDNN_TENSOR_NCHW_VECT_C, JHDNN_DATA_FLOAT, 1, 4, 1, 1); },
       JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "NCHW_VECT_C is not supported"},
      {"tensor unknown format 9",
       [&] { return jhdnnSetTensor4dDescriptor(t, jhdnnTensorFormat_t(9), JHDNN_DATA_FLOAT, 1, 1, 1, 1); },
       JHDNN_STATUS_BAD_PARAM, "unknown tensor format 9"},
      {"tensor nbDims = 2", [&] { return jhdnnSetTensorNdDescriptor(t, JHDNN_DATA_FLOAT, 2, d4, s4); },
       JHDNN_STATUS_BAD_PARAM, "nbDims (2) must be in [3, 8]"},
      {"tensor nbDims = 9", [&] { return jhdnnSetTensorNdDescriptor(t, JHDNN_DATA_FLOAT, 9, d4, s4); },
       JHDNN_STATUS_BAD_PARAM, "nbDims (9) must be in [3, 8]"},
      {"tensor dimA NULL", [&] { return jhdnnSetTensorNdDescriptor(t, JHDNN_DATA_FLOAT, 4, nullptr, s4); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "dimA is NULL"},
      {"tensor element count overflows int64 (8 dims of 2^31-1)",
       [&] { return jhdnnSetTensorNdDescriptor(t, JHDNN_DATA_FLOAT, 8, big, big_s); },
       JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "overflows 64-bit indexing"},
      {"get4d on a never-set tensor",
       [&] { return jhdnnGetTensor4dDescriptor(unset_t, &dt, &i1, &i2, &i3, &i4, &i5, &i6, &i7, &i8); },
       JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "tensor descriptor was never set"},
      {"get4d on a 5-D tensor",
       [&] {
         const int d5[5] = {1, 2, 3, 4, 5};
         jhdnnSetTensorNdDescriptorEx(t, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 5, d5);
         return jhdnnGetTensor4dDescriptor(t, &dt, &i1, &i2, &i3, &i4, &i5, &i6, &i7, &i8);
       },
       JHDNN_STATUS_BAD_PARAM, "tensor has 5 dims, not 4"},
      {"tensor size with NULL size", [&] { return jhdnnGetTensorSizeInBytes(t, nullptr); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "size is NULL"},

      {"filter k = 0", [&] { return jhdnnSetFilter4dDescriptor(f, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 0, 3, 3, 3); },
       JHDNN_STATUS_BAD_PARAM, "filter dimension 0 (0) must be > 0"},
      {"filter r = -1", [&] { return jhdnnSetFilter4dDescriptor(f, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 8, 3, -1, 3); },
       JHDNN_STATUS_BAD_PARAM, "filter dimension 2 (-1) must be > 0"},
      {"filter format NCHW_VECT_C",
       [&] { return jhdnnSetFilter4dDescriptor(f, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW_VECT_C, 8, 4, 3, 3); },
       JHDNN_STATUS_NOT_SUPPORTED_LAYOUT, "NCHW_VECT_C is not supported"},
      {"filter unknown data type", [&] { return jhdnnSetFilter4dDescriptor(f, jhdnnDataType_t(-1), JHDNN_TENSOR_NCHW, 8, 4, 3, 3); },
       JHDNN_STATUS_BAD_PARAM, "unknown data type -1"},
      {"filter nbDims = 10", [&] { return jhdnnSetFilterNdDescriptor(f, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 10, d4); },
       JHDNN_STATUS_BAD_PARAM, "nbDims (10) must be in [3, 8]"},
      {"filter element count overflows int64",
       [&] { return jhdnnSetFilterNdDescriptor(f, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 8, big); },
       JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "overflows 64-bit indexing"},
      {"get filter on a never-set filter",
       [&] { return jhdnnGetFilter4dDescriptor(unset_f, &dt, &fmt, &i1, &i2, &i3, &i4); },
       JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "filter descriptor was never set"},

      {"conv pad_h = -1",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, -1, 0, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "pad_h (-1) must be >= 0"},
      {"conv stride_w = 0",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, 0, 0, 1, 0, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "stride_w (0) must be > 0"},
      {"conv stride_h = -2",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, 0, 0, -2, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "stride_h (-2) must be > 0"},
      {"conv dilation_h = 0",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, 0, 0, 1, 1, 0, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "dilation_h (0) must be > 0"},
      {"conv unknown mode 5",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, 0, 0, 1, 1, 1, 1, jhdnnConvolutionMode_t(5), JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "unknown convolution mode 5"},
      {"conv unknown compute type 42",
       [&] { return jhdnnSetConvolution2dDescriptor(cv, 0, 0, 1, 1, 1, 1, JHDNN_CONVOLUTION, jhdnnDataType_t(42)); },
       JHDNN_STATUS_BAD_PARAM, "unknown compute type 42"},
      {"conv arrayLength = 1 (1-D convolution)",
       [&] { return jhdnnSetConvolutionNdDescriptor(cv, 1, pad2, one2, one2, JHDNN_CONVOLUTION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_NOT_SUPPORTED_SHAPE, "2 or 3 spatial dimensions, not 1"},
      {"conv arrayLength = 0",
       [&] { return jhdnnSetConvolutionNdDescriptor(cv, 0, pad2, one2, one2, JHDNN_CONVOLUTION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "arrayLength (0) must be in [1, 6]"},
      {"conv Nd padA NULL",
       [&] { return jhdnnSetConvolutionNdDescriptor(cv, 2, nullptr, one2, one2, JHDNN_CONVOLUTION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "padA is NULL"},
      {"conv Nd dilation 0",
       [&] { return jhdnnSetConvolutionNdDescriptor(cv, 2, pad2, one2, zero2, JHDNN_CONVOLUTION, JHDNN_DATA_FLOAT); },
       JHDNN_STATUS_BAD_PARAM, "dilation_h (0) must be > 0"},
      {"group count 0", [&] { return jhdnnSetConvolutionGroupCount(cv, 0); }, JHDNN_STATUS_BAD_PARAM,
       "groupCount (0) must be >= 1"},
      {"math type 17", [&] { return jhdnnSetConvolutionMathType(cv, jhdnnMathType_t(17)); }, JHDNN_STATUS_BAD_PARAM,
       "unknown math type 17"},
      {"get2d on a never-set convolution",
       [&] { return jhdnnGetConvolution2dDescriptor(cv, &i1, &i2, &i3, &i4, &i5, &i6, &mode, &dt); },
       JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "convolution descriptor was never set"},
  };
  check_rows(rows);
  jhdnnDestroyTensorDescriptor(unset_t);
  jhdnnDestroyFilterDescriptor(unset_f);
  jhdnnDestroyTensorDescriptor(t);
  jhdnnDestroyFilterDescriptor(f);
  jhdnnDestroyConvolutionDescriptor(cv);
}

TEST_CASE("convolution descriptor round trips and output dims", "[api]") {
  Descs d;
  REQUIRE(jhdnnSetConvolution2dDescriptor(d.conv, 2, 3, 2, 1, 2, 1, JHDNN_CONVOLUTION, JHDNN_DATA_FLOAT) ==
          JHDNN_STATUS_SUCCESS);
  int ph, pw, u, v, dh, dw;
  jhdnnConvolutionMode_t mode;
  jhdnnDataType_t ct;
  REQUIRE(jhdnnGetConvolution2dDescriptor(d.conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &ct) == JHDNN_STATUS_SUCCESS);
  CHECK((ph == 2 && pw == 3 && u == 2 && v == 1 && dh == 2 && dw == 1 && mode == JHDNN_CONVOLUTION &&
         ct == JHDNN_DATA_FLOAT));
  REQUIRE(jhdnnSetConvolutionGroupCount(d.conv, 4) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnSetConvolutionMathType(d.conv, JHDNN_FMA_MATH) == JHDNN_STATUS_SUCCESS);
  int g;
  jhdnnMathType_t mt;
  REQUIRE(jhdnnGetConvolutionGroupCount(d.conv, &g) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetConvolutionMathType(d.conv, &mt) == JHDNN_STATUS_SUCCESS);
  CHECK((g == 4 && mt == JHDNN_FMA_MATH));

  // x 2x8x15x20, w 12x2x3x5 (groups 4): P = (15+4-5)/2+1 = 8, Q = (20+6-5)/1+1 = 22.
  REQUIRE(jhdnnSetTensor4dDescriptor(d.x, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 2, 8, 15, 20) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 12, 2, 3, 5) == JHDNN_STATUS_SUCCESS);
  int n, c, h, w;
  REQUIRE(jhdnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w) == JHDNN_STATUS_SUCCESS);
  CHECK((n == 2 && c == 12 && h == 8 && w == 22));
  int out[4];
  REQUIRE(jhdnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, 4, out) == JHDNN_STATUS_SUCCESS);
  CHECK((out[0] == 2 && out[1] == 12 && out[2] == 8 && out[3] == 22));

  // 3-D: x 1x2x5x6x7, w 4x2x3x3x3, pad 1, stride (1,2,1): out 1x4x5x3x7.
  jhdnnTensorDescriptor_t x5;
  jhdnnFilterDescriptor_t w5;
  jhdnnConvolutionDescriptor_t c5;
  jhdnnCreateTensorDescriptor(&x5);
  jhdnnCreateFilterDescriptor(&w5);
  jhdnnCreateConvolutionDescriptor(&c5);
  const int xd[5] = {1, 2, 5, 6, 7}, wd[5] = {4, 2, 3, 3, 3}, pad[3] = {1, 1, 1}, st[3] = {1, 2, 1}, dl[3] = {1, 1, 1};
  REQUIRE(jhdnnSetTensorNdDescriptorEx(x5, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 5, xd) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnSetFilterNdDescriptor(w5, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 5, wd) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnSetConvolutionNdDescriptor(c5, 3, pad, st, dl, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT) ==
          JHDNN_STATUS_SUCCESS);
  int out5[5];
  REQUIRE(jhdnnGetConvolutionNdForwardOutputDim(c5, x5, w5, 5, out5) == JHDNN_STATUS_SUCCESS);
  CHECK((out5[0] == 1 && out5[1] == 4 && out5[2] == 5 && out5[3] == 3 && out5[4] == 7));
  int len, pa[3], sa[3], da[3];
  REQUIRE(jhdnnGetConvolutionNdDescriptor(c5, 3, &len, pa, sa, da, &mode, &ct) == JHDNN_STATUS_SUCCESS);
  CHECK((len == 3 && sa[1] == 2 && pa[0] == 1));
  jhdnnDestroyTensorDescriptor(x5);
  jhdnnDestroyFilterDescriptor(w5);
  jhdnnDestroyConvolutionDescriptor(c5);
}

TEST_CASE("problem validation bad inputs (no GPU needed)", "[api]") {
  Descs d;
  core::ConvProblem p;
  std::vector<Row> rows = {
      {"filter C*groups != input C (C=64, filter c=48, groups 2)",
       [&] {
         d.set_valid();
         jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 32, 48, 3, 3);
         jhdnnSetConvolutionGroupCount(d.conv, 2);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "filter C*groups (96) != input C (64)"},
      {"K (30) not divisible by groups (4)",
       [&] {
         d.set_valid();
         jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 30, 16, 3, 3);
         jhdnnSetConvolutionGroupCount(d.conv, 4);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "filter K (30) is not divisible by groups (4)"},
      {"wrong output dims (y 2x32x12x12 for a padded 14x14 -> 14x14 conv)",
       [&] {
         d.set_valid();
         jhdnnSetConvolutionGroupCount(d.conv, 1);
         jhdnnSetTensor4dDescriptor(d.y, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 2, 32, 12, 12);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "y dims (2,32,12,12) != expected output dims (2,32,14,14)"},
      {"wrong output channels (y has K=16, filter K=32)",
       [&] {
         d.set_valid();
         jhdnnSetTensor4dDescriptor(d.y, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 2, 16, 14, 14);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "(2,16,14,14) != expected output dims (2,32,14,14)"},
      {"filter larger than padded input (11x11 dilation 2 on 14x14 pad 1)",
       [&] {
         d.set_valid();
         jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 32, 64, 11, 11);
         jhdnnSetConvolution2dDescriptor(d.conv, 1, 1, 1, 1, 2, 2, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "dilated filter height (21) > padded input height (16)"},
      {"mixed data types (x FLOAT, w HALF)",
       [&] {
         d.set_valid();
         jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_HALF, JHDNN_TENSOR_NCHW, 32, 64, 3, 3);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "data types differ: x FLOAT, w HALF, y FLOAT"},
      {"mixed data types (y BFLOAT16)",
       [&] {
         d.set_valid();
         jhdnnSetTensor4dDescriptor(d.y, JHDNN_TENSOR_NCHW, JHDNN_DATA_BFLOAT16, 2, 32, 14, 14);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "y BFLOAT16"},
      {"INT8 data",
       [&] {
         d.set_valid(JHDNN_DATA_INT8);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "data type INT8 is not supported for convolution"},
      {"FP8_E4M3 data (a cuDNN 9 type no jhDNN kernel computes with yet)",
       [&] {
         d.set_valid(JHDNN_DATA_FP8_E4M3);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "data type FP8_E4M3 is not supported for convolution"},
      {"FLOAT data with HALF compute",
       [&] {
         d.set_valid();
         jhdnnSetConvolution2dDescriptor(d.conv, 1, 1, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_HALF);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "compute type HALF is not supported for FLOAT data"},
      {"DOUBLE data with FLOAT compute",
       [&] {
         d.set_valid(JHDNN_DATA_DOUBLE);
         jhdnnSetConvolution2dDescriptor(d.conv, 1, 1, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "compute type FLOAT is not supported for DOUBLE data"},
      {"overlapping y strides (w stride 1, h stride 2 for width 14)",
       [&] {
         d.set_valid();
         jhdnnSetTensor4dDescriptorEx(d.y, JHDNN_DATA_FLOAT, 2, 32, 14, 14, 32 * 196, 196, 2, 1);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "overlap"},
      {"x 5-D with a 2-D convolution",
       [&] {
         d.set_valid();
         const int d5[5] = {2, 64, 3, 14, 14};
         jhdnnSetTensorNdDescriptorEx(d.x, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 5, d5);
         return code_of(d.problem(&p));
       },
       JHDNN_STATUS_BAD_PARAM, "input has 5 dims but the convolution needs 4"},
      {"never-set output descriptor",
       [&] {
         jhdnnTensorDescriptor_t y;
         jhdnnCreateTensorDescriptor(&y);
         d.set_valid();
         const Status s = conv::make_problem(*d.x, *d.w, *d.conv, *y, &p);
         jhdnnDestroyTensorDescriptor(y);
         return code_of(s);
       },
       JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "output tensor descriptor was never set"},
      {"output dim query with wrong nbDims",
       [&] {
         d.set_valid();
         int out[5];
         return jhdnnGetConvolutionNdForwardOutputDim(d.conv, d.x, d.w, 5, out);
       },
       JHDNN_STATUS_BAD_PARAM, "nbDims (5) != 4 for this convolution"},
      {"output height past INT_MAX (1000x1000 input, 1x1 filter, pad_h 2^30)",
       [&] {
         jhdnnSetTensor4dDescriptor(d.x, JHDNN_TENSOR_NCHW, JHDNN_DATA_FLOAT, 1, 1, 1000, 1000);
         jhdnnSetFilter4dDescriptor(d.w, JHDNN_DATA_FLOAT, JHDNN_TENSOR_NCHW, 1, 1, 1, 1);
         jhdnnSetConvolutionGroupCount(d.conv, 1);
         jhdnnSetConvolution2dDescriptor(d.conv, 1 << 30, 0, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, JHDNN_DATA_FLOAT);
         int n = 7, c = 7, h = 7, w = 7;
         const jhdnnStatus_t st = jhdnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w);
         return h == 7 ? st : JHDNN_STATUS_INTERNAL_ERROR;  // nothing written on failure
       },
       JHDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "output dimension (2147484648) does not fit in int"},
      {"output dim query with NULL filter",
       [&] {
         int n, c, h, w;
         return jhdnnGetConvolution2dForwardOutputDim(d.conv, d.x, nullptr, &n, &c, &h, &w);
       },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "filterDesc is NULL"},
  };
  check_rows(rows);
}

TEST_CASE("true-half compute types are accepted and served by both DIRECT solvers", "[api]") {
  core::DeviceInfo h200;
  h200.cc_major = 9;
  for (jhdnnDataType_t dt : {JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16}) {
    Descs d;
    d.set_valid(dt, JHDNN_TENSOR_NHWC);
    REQUIRE(jhdnnSetConvolution2dDescriptor(d.conv, 1, 1, 1, 1, 1, 1, JHDNN_CROSS_CORRELATION, dt) ==
            JHDNN_STATUS_SUCCESS);
    core::ConvProblem p;
    REQUIRE(d.problem(&p).ok());
    CHECK(p.compute_type == dt);
    CHECK(conv::direct_tiled_solver().can_implement(p, h200).ok);
    CHECK(conv::direct_naive_solver().can_implement(p, h200).ok);
  }
}

TEST_CASE("problems built from descriptors", "[api]") {
  Descs d;
  core::ConvProblem p;
  d.set_valid(JHDNN_DATA_HALF, JHDNN_TENSOR_NHWC);
  REQUIRE(d.problem(&p).ok());
  CHECK((p.N == 2 && p.C == 64 && p.K == 32 && p.H == 14 && p.P == 14 && p.R == 3 && p.D == 1 && p.O == 1));
  CHECK(p.x_packed_nhwc());
  CHECK(p.w_packed_krsc());
  CHECK(p.y_packed_nhwc());
  CHECK(p.dtype == JHDNN_DATA_HALF);
  CHECK(p.flops() == 2.0 * 2 * 32 * 14 * 14 * 64 * 9);
  CHECK(p.key() == "f16 nhwc g1mb2ic64ih14iw14oc32oh14ow14kh3kw3sh1sw1ph1pw1dh1dw1");
}

namespace {
// A solver that needs workspace, to test the workspace checks without a GPU.
class NeedsWorkspace final : public conv::ConvSolver {
 public:
  const char* name() const override { return "test_needs_workspace"; }
  jhdnnConvolutionFwdAlgo_t algo() const override { return JHDNN_CONVOLUTION_FWD_ALGO_GEMM; }
  conv::Verdict can_implement(const core::ConvProblem&, const core::DeviceInfo&) const override {
    return conv::Verdict::yes();
  }
  size_t workspace_bytes(const core::ConvProblem&) const override { return 4096; }
  Status run(const core::ConvProblem&, const conv::ConvArgs&, void*, size_t, cudaStream_t) const override {
    return Status::success();
  }
};
}  // namespace

TEST_CASE("dispatch decisions (no GPU needed)", "[api]") {
  const core::DeviceInfo h200 = test::fake_h200();
  const core::ConvProblem p = core::make_problem_2d(JHDNN_DATA_FLOAT, false, 2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  const conv::ConvSolver* s = nullptr;
  const NeedsWorkspace needs_ws;
  const core::ConvProblem pd = core::make_problem_2d(JHDNN_DATA_DOUBLE, false, 1, 3, 5, 5, 2, 3, 3, 0, 0, 1, 1, 1, 1);
  std::vector<Row> rows = {
      {"algo = 8 (out of the enum)",
       [&] { return code_of(conv::select_solver(p, h200, jhdnnConvolutionFwdAlgo_t(8), &s)); },
       JHDNN_STATUS_BAD_PARAM, "algo 8 is not a jhdnnConvolutionFwdAlgo_t"},
      {"algo = -1", [&] { return code_of(conv::select_solver(p, h200, jhdnnConvolutionFwdAlgo_t(-1), &s)); },
       JHDNN_STATUS_BAD_PARAM, "algo -1"},
      {"algo FFT (not implemented yet)",
       [&] { return code_of(conv::select_solver(p, h200, JHDNN_CONVOLUTION_FWD_ALGO_FFT, &s)); },
       JHDNN_STATUS_NOT_SUPPORTED, "algorithm FFT is not implemented in jhDNN yet"},
      {"DIRECT with every DIRECT solver disabled (JHDNN_DISABLE)",
       [&] {
         core::config::set_disabled_solvers("direct_tiled,direct_naive");
         const Status st = conv::select_solver(p, h200, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s);
         core::config::set_disabled_solvers(nullptr);
         return code_of(st);
       },
       JHDNN_STATUS_NOT_SUPPORTED, "direct_naive: disabled by JHDNN_DISABLE"},
      {"workspace smaller than the solver needs",
       [&] { return code_of(conv::run_solver(needs_ws, p, conv::ConvArgs{}, nullptr, 100, nullptr)); },
       JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of 100 bytes < 4096 needed"},
      {"workspace NULL with a large enough size",
       [&] { return code_of(conv::run_solver(needs_ws, p, conv::ConvArgs{}, nullptr, 8192, nullptr)); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "workSpace is NULL"},
  };
  check_rows(rows);

  REQUIRE(conv::select_solver(p, h200, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s).ok());
  CHECK(std::string(s->name()) == "direct_tiled");  // the fast one first

  // Halos too large for shared memory, whose sizes would overflow int64 if multiplied naively:
  // the tiled kernel refuses them and dispatch falls back to the naive one.
  const int huge_dil = 2147483640;  // 2^31 - 8
  const core::ConvProblem wide_halo =
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 1, 1, 1, 64, 2, 2, 1 << 30, 1 << 30, 1, 1, huge_dil, huge_dil);
  REQUIRE(wide_halo.P == 9);
  const conv::Verdict v = conv::direct_tiled_solver().can_implement(wide_halo, h200);
  CHECK_FALSE(v.ok);
  CHECK(std::string(v.reason).find("shared") != std::string::npos);
  const core::ConvProblem far_stride =
      core::make_problem_2d(JHDNN_DATA_FLOAT, false, 1, 1, 5, 5, 8, 1, 1, 0, 0, 2147483647, 2147483647, 1, 1);
  CHECK_FALSE(conv::direct_tiled_solver().can_implement(far_stride, h200).ok);
  for (const core::ConvProblem* q : {&wide_halo, &far_stride}) {
    REQUIRE(conv::select_solver(*q, h200, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s).ok());
    CHECK(std::string(s->name()) == "direct_naive");
  }
  REQUIRE(core::config::set_disabled_solvers("direct_tiled"));
  REQUIRE(conv::select_solver(p, h200, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s).ok());
  CHECK(std::string(s->name()) == "direct_naive");
  core::config::set_disabled_solvers(nullptr);
  // DOUBLE data: only the naive kernel takes it.
  REQUIRE(conv::select_solver(pd, h200, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &s).ok());
  CHECK(std::string(s->name()) == "direct_naive");
  CHECK_FALSE(conv::direct_tiled_solver().can_implement(pd, h200).ok);
}

TEST_CASE("API calls with a NULL handle or missing arguments (no GPU needed)", "[api]") {
  Descs d;
  d.set_valid();
  float one = 1.0f, zero = 0.0f;
  int count = 0, returned = 0;
  size_t ws = 0;
  jhdnnConvolutionFwdAlgoPerf_t perf[8];
  cudaStream_t stream;
  std::vector<Row> rows = {
      {"jhdnnCreate(NULL)", [&] { return jhdnnCreate(nullptr); }, JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "handle is NULL"},
      {"jhdnnDestroy(NULL)", [&] { return jhdnnDestroy(nullptr); }, JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "handle is NULL"},
      {"jhdnnSetStream(NULL handle)", [&] { return jhdnnSetStream(nullptr, nullptr); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"jhdnnGetStream(NULL handle)", [&] { return jhdnnGetStream(nullptr, &stream); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"MaxCount with NULL handle", [&] { return jhdnnGetConvolutionForwardAlgorithmMaxCount(nullptr, &count); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"workspace size with NULL handle",
       [&] {
         return jhdnnGetConvolutionForwardWorkspaceSize(nullptr, d.x, d.w, d.conv, d.y,
                                                        JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, &ws);
       },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"Get_v7 with NULL handle",
       [&] { return jhdnnGetConvolutionForwardAlgorithm_v7(nullptr, d.x, d.w, d.conv, d.y, 8, &returned, perf); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"Find with NULL handle",
       [&] { return jhdnnFindConvolutionForwardAlgorithm(nullptr, d.x, d.w, d.conv, d.y, 8, &returned, perf); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
      {"Forward with NULL handle",
       [&] {
         return jhdnnConvolutionForward(nullptr, &one, d.x, nullptr, d.w, nullptr, d.conv,
                                        JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0, &zero, d.y, nullptr);
       },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "handle is NULL"},
  };
  check_rows(rows);
}

TEST_CASE("jhdnnCreate: a handle with a GPU, NOT_INITIALIZED with the reason without one", "[api]") {
  std::string why;
  jhdnnHandle_t h = reinterpret_cast<jhdnnHandle_t>(0x1);
  if (test::gpu_available(&why)) {
    REQUIRE(jhdnnCreate(&h) == JHDNN_STATUS_SUCCESS);
    CHECK(h != nullptr);
    cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1);
    CHECK(jhdnnGetStream(h, &s) == JHDNN_STATUS_SUCCESS);
    CHECK(s == nullptr);  // the default stream until jhdnnSetStream
    CHECK(jhdnnDestroy(h) == JHDNN_STATUS_SUCCESS);
  } else {
    CHECK(jhdnnCreate(&h) == JHDNN_STATUS_NOT_INITIALIZED);
    CHECK(h == nullptr);
    CHECK(last_error().find("no usable CUDA device") != std::string::npos);
  }
}

// ------------------------------------------------------------------ with a GPU

namespace {
struct Handle {
  jhdnnHandle_t h = nullptr;
  Handle() { REQUIRE(jhdnnCreate(&h) == JHDNN_STATUS_SUCCESS); }
  ~Handle() { jhdnnDestroy(h); }
};
}  // namespace

TEST_CASE("forward-call bad inputs on a GPU", "[api][gpu]") {
  JHDNN_REQUIRE_GPU();
  Handle h;
  Descs d;
  d.set_valid();
  const size_t xb = 2 * 64 * 14 * 14 * 4, wb = 32 * 64 * 9 * 4, yb = 2 * 32 * 14 * 14 * 4;
  test::DeviceBuffer x(xb), w(wb), y(yb), big(xb + yb);
  x.poison(0x3c);
  w.poison(0x3c);
  std::vector<float> host(xb / 4, 1.0f);
  float one = 1.0f, zero = 0.0f;
  size_t ws = 123;
  int count = 0, returned = 0;
  jhdnnConvolutionFwdAlgoPerf_t perf[8];
  const auto fwd = [&](const void* a, const void* xp, const void* wp, const void* b, void* yp,
                       jhdnnConvolutionFwdAlgo_t algo = JHDNN_CONVOLUTION_FWD_ALGO_DIRECT) {
    return jhdnnConvolutionForward(h.h, a, d.x, xp, d.w, wp, d.conv, algo, nullptr, 0, b, d.y, yp);
  };
  std::vector<Row> rows = {
      {"alpha NULL", [&] { return fwd(nullptr, x.get(), w.get(), &zero, y.get()); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "alpha is NULL"},
      {"beta NULL", [&] { return fwd(&one, x.get(), w.get(), nullptr, y.get()); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "beta is NULL"},
      {"x NULL", [&] { return fwd(&one, nullptr, w.get(), &zero, y.get()); }, JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "x is NULL"},
      {"w NULL", [&] { return fwd(&one, x.get(), nullptr, &zero, y.get()); }, JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "w is NULL"},
      {"y NULL", [&] { return fwd(&one, x.get(), w.get(), &zero, nullptr); }, JHDNN_STATUS_BAD_PARAM_NULL_POINTER,
       "y is NULL"},
      {"x misaligned by 2 bytes (FLOAT)",
       [&] { return fwd(&one, static_cast<char*>(x.get()) + 2, w.get(), &zero, y.get()); },
       JHDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "not aligned to its 4-byte elements"},
      {"y overlapping x (in place)",
       [&] { return fwd(&one, big.get(), w.get(), &zero, static_cast<char*>(big.get()) + 64); },
       JHDNN_STATUS_BAD_PARAM, "y overlaps x"},
      {"algo 99", [&] { return fwd(&one, x.get(), w.get(), &zero, y.get(), jhdnnConvolutionFwdAlgo_t(99)); },
       JHDNN_STATUS_BAD_PARAM, "algo 99 is not a jhdnnConvolutionFwdAlgo_t"},
      {"algo WINOGRAD (not implemented yet)",
       [&] { return fwd(&one, x.get(), w.get(), &zero, y.get(), JHDNN_CONVOLUTION_FWD_ALGO_WINOGRAD); },
       JHDNN_STATUS_NOT_SUPPORTED, "algorithm WINOGRAD is not implemented in jhDNN yet"},
      {"workspace size for FFT (not implemented)",
       [&] {
         return jhdnnGetConvolutionForwardWorkspaceSize(h.h, d.x, d.w, d.conv, d.y, JHDNN_CONVOLUTION_FWD_ALGO_FFT,
                                                        &ws);
       },
       JHDNN_STATUS_NOT_SUPPORTED, "algorithm FFT is not implemented"},
      {"Find with requestedAlgoCount 0",
       [&] { return jhdnnFindConvolutionForwardAlgorithm(h.h, d.x, d.w, d.conv, d.y, 0, &returned, perf); },
       JHDNN_STATUS_BAD_PARAM, "requestedAlgoCount (0) must be >= 1"},
      {"Get_v7 with NULL returnedAlgoCount",
       [&] { return jhdnnGetConvolutionForwardAlgorithm_v7(h.h, d.x, d.w, d.conv, d.y, 8, nullptr, perf); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "returnedAlgoCount is NULL"},
      {"MaxCount with NULL count", [&] { return jhdnnGetConvolutionForwardAlgorithmMaxCount(h.h, nullptr); },
       JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "count is NULL"},
  };
  // Plain host memory is refused unless this GPU reads pageable memory (HMM/ATS systems).
  int dev = 0, pageable = 0;
  REQUIRE(cudaGetDevice(&dev) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, dev) == cudaSuccess);
  if (!pageable)
    rows.push_back({"x in plain host memory (malloc)", [&] { return fwd(&one, host.data(), w.get(), &zero, y.get()); },
                    JHDNN_STATUS_BAD_PARAM, "is plain host memory"});
  check_rows(rows);

  // After every bad call the library (and the CUDA context) still works.
  REQUIRE(jhdnnGetConvolutionForwardAlgorithmMaxCount(h.h, &count) == JHDNN_STATUS_SUCCESS);
  CHECK(count == 8);
  REQUIRE(jhdnnGetConvolutionForwardWorkspaceSize(h.h, d.x, d.w, d.conv, d.y, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT,
                                                  &ws) == JHDNN_STATUS_SUCCESS);
  CHECK(ws == 0);
  y.poison();
  REQUIRE(fwd(&one, x.get(), w.get(), &zero, y.get()) == JHDNN_STATUS_SUCCESS);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(y.guard_intact());
  // x and w hold 0x3c3c3c3c (about 0.0115) everywhere: every output is a positive finite sum.
  std::vector<float> out(yb / 4);
  y.download(out.data(), yb);
  CHECK(std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v) && v > 0.0f; }));
}
