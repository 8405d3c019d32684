#include "conv/dispatch.h"

#include <algorithm>
#include <string>

#include <cuda_runtime_api.h>

#include "core/log.h"
#include "core/problem_string.h"

namespace jhdnn::conv {

using core::fail;

namespace {

std::string dims_str(const int64_t* d, int n) {
  std::string s = "(";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + std::to_string(d[i]);
  return s + ")";
}

Status check_types(jhdnnDataType_t data, jhdnnDataType_t compute) {
  const char* dn = core::data_type_name(data);
  const char* cn = core::data_type_name(compute);
  switch (data) {
    case JHDNN_DATA_FLOAT:
      if (compute == JHDNN_DATA_FLOAT) return Status::success();
      break;
    case JHDNN_DATA_DOUBLE:
      if (compute == JHDNN_DATA_DOUBLE) return Status::success();
      break;
    case JHDNN_DATA_HALF:  // pseudo-half (FLOAT) and true-half (HALF) configurations
      if (compute == JHDNN_DATA_FLOAT || compute == JHDNN_DATA_HALF) return Status::success();
      break;
    case JHDNN_DATA_BFLOAT16:
      if (compute == JHDNN_DATA_FLOAT || compute == JHDNN_DATA_BFLOAT16) return Status::success();
      break;
    default:
      return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                  "data type %s is not supported for convolution (FLOAT, DOUBLE, HALF, BFLOAT16 are)", dn);
  }
  return fail(JHDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, "compute type %s is not supported for %s data", cn, dn);
}

// 5-D (n, c, d, h, w) strides from a descriptor's (n, c, spatial...) ones; a 2-D tensor gets a unit
// depth axis whose stride never multiplies a non-zero index.
void to5(const int64_t* s, int spatial, int64_t out[5]) {
  out[0] = s[0], out[1] = s[1];
  if (spatial == 3) {
    out[2] = s[2], out[3] = s[3], out[4] = s[4];
  } else {
    out[2] = 0, out[3] = s[2], out[4] = s[3];
  }
}

// True when two elements of the tensor share an address: sort the axes by stride; each stride must
// step over everything the smaller axes span.
bool overlapping(const int64_t* dims, const int64_t* strides, int n) {
  int order[JHDNN_DIM_MAX];
  for (int i = 0; i < n && i < JHDNN_DIM_MAX; ++i) {  // insertion sort by stride: n <= 8
    int j = i;
    for (; j > 0 && strides[order[j - 1]] > strides[i]; --j) order[j] = order[j - 1];
    order[j] = i;
  }
  int64_t covered = 1;  // elements spanned by the axes seen so far
  for (int i = 0; i < n; ++i) {
    const int a = order[i];
    if (dims[a] == 1) continue;
    if (strides[a] < covered) return true;
    covered = strides[a] * (dims[a] - 1) + covered;
  }
  return false;
}

}  // namespace

Status make_problem(const jhdnnTensorStruct& x, const jhdnnFilterStruct& w, const jhdnnConvolutionStruct& conv,
                    const jhdnnTensorStruct& y, ConvProblem* out) {
  if (!y.is_set) return fail(JHDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "output tensor descriptor was never set");
  const int nb = conv.is_set ? conv.spatial_dims + 2 : 0;
  int64_t want[JHDNN_DIM_MAX];
  JHDNN_TRY(core::forward_output_dims(conv, x, w, nb, want));
  if (y.nb_dims != nb)
    return fail(JHDNN_STATUS_BAD_PARAM, "y has %d dims but x has %d", y.nb_dims, x.nb_dims);
  if (!std::equal(want, want + nb, y.dims))
    return fail(JHDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "y dims %s != expected output dims %s",
                dims_str(y.dims, nb).c_str(), dims_str(want, nb).c_str());
  if (x.dtype != w.dtype || x.dtype != y.dtype)
    return fail(JHDNN_STATUS_BAD_PARAM, "data types differ: x %s, w %s, y %s", core::data_type_name(x.dtype),
                core::data_type_name(w.dtype), core::data_type_name(y.dtype));
  JHDNN_TRY(check_types(x.dtype, conv.compute_type));
  if (overlapping(y.dims, y.strides, nb))
    return fail(JHDNN_STATUS_BAD_PARAM, "y strides %s overlap: two outputs would share an address",
                dims_str(y.strides, nb).c_str());

  ConvProblem p;
  p.dtype = x.dtype;
  p.compute_type = conv.compute_type;
  p.math_type = conv.math_type;
  p.mode = conv.mode;
  p.spatial_dims = conv.spatial_dims;
  p.N = x.dims[0], p.C = x.dims[1], p.K = w.dims[0], p.G = conv.group_count;
  const bool three = conv.spatial_dims == 3;
  const int off = three ? 1 : 0;  // descriptor index of h minus 2
  if (three) p.D = x.dims[2], p.T = w.dims[2], p.O = y.dims[2];
  p.H = x.dims[2 + off], p.W = x.dims[3 + off];
  p.R = w.dims[2 + off], p.S = w.dims[3 + off];
  p.P = y.dims[2 + off], p.Q = y.dims[3 + off];
  // conv.pad etc. hold the user's spatial axes first: (h, w) or (d, h, w).
  const int ih = three ? 1 : 0;
  if (three) p.pad_d = conv.pad[0], p.stride_d = conv.stride[0], p.dil_d = conv.dilation[0];
  p.pad_h = conv.pad[ih], p.stride_h = conv.stride[ih], p.dil_h = conv.dilation[ih];
  p.pad_w = conv.pad[ih + 1], p.stride_w = conv.stride[ih + 1], p.dil_w = conv.dilation[ih + 1];
  to5(x.strides, conv.spatial_dims, p.x_stride);
  to5(y.strides, conv.spatial_dims, p.y_stride);
  int64_t ws[JHDNN_DIM_MAX];
  core::packed_strides(w.format, nb, w.dims, ws);
  to5(ws, conv.spatial_dims, p.w_stride);
  *out = p;
  return Status::success();
}

Status select_solver(const ConvProblem& p, const DeviceInfo& dev, jhdnnConvolutionFwdAlgo_t algo,
                     const ConvSolver** out) {
  if (int(algo) < 0 || algo >= JHDNN_CONVOLUTION_FWD_ALGO_COUNT)
    return fail(JHDNN_STATUS_BAD_PARAM, "algo %d is not a jhdnnConvolutionFwdAlgo_t", int(algo));
  // First pass: no strings (this is every successful call's path).
  bool any = false;
  for (const ConvSolver* s : all_solvers()) {
    if (s->algo() != algo) continue;
    any = true;
    if (solver_enabled(*s) && s->can_implement(p, dev).ok) {
      *out = s;
      return Status::success();
    }
  }
  if (!any)
    return fail(JHDNN_STATUS_NOT_SUPPORTED, "algorithm %s is not implemented in jhDNN yet",
                core::algo_name(algo));
  // Nothing was selected: a second pass collects each solver's reason for the message.
  std::string why;
  for (const ConvSolver* s : all_solvers()) {
    if (s->algo() != algo) continue;
    const char* off = solver_disabled_reason(*s);
    why += std::string(why.empty() ? "" : "; ") + s->name() + ": " + (off == nullptr ? s->can_implement(p, dev).reason : off);
  }
  return fail(JHDNN_STATUS_NOT_SUPPORTED, "no %s solver can run %s (%s)", core::algo_name(algo),
              p.key().c_str(), why.c_str());
}

Status run_solver(const ConvSolver& s, const ConvProblem& p, const ConvArgs& a, void* ws, size_t ws_bytes,
                  cudaStream_t stream) {
  const size_t need = s.workspace_optional() ? 0 : s.workspace_bytes(p);
  if (ws_bytes < need)
    return fail(JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT, "workspace of %zu bytes < %zu needed by %s", ws_bytes,
                need, s.name());
  if (need > 0 && ws == nullptr)
    return fail(JHDNN_STATUS_BAD_PARAM_NULL_POINTER, "workSpace is NULL but %s needs %zu bytes", s.name(), need);
  return s.run(p, a, ws, ws_bytes, stream);
}

void log_dispatch(const char* call, const ConvProblem& p, const DeviceInfo& dev, jhdnnConvolutionFwdAlgo_t algo,
                  const ConvSolver* chosen, const Status& outcome) {
  if (!core::log_enabled()) return;
  const bool valid_algo = int(algo) >= 0 && algo < JHDNN_CONVOLUTION_FWD_ALGO_COUNT;
  core::log_line(std::string(call) + ": " + core::bench_command(p, valid_algo ? core::algo_name(algo) : "all"));
  if (!valid_algo) {
    core::log_line("  " + outcome.message);
    return;
  }
  for (const ConvSolver* s : all_solvers()) {
    if (s->algo() != algo) continue;
    if (s == chosen) {
      core::log_line(std::string("  chose ") + s->name() + " (workspace " + std::to_string(s->workspace_bytes(p)) +
                     " bytes)");
      return;  // later solvers were not considered
    }
    if (const char* off = solver_disabled_reason(*s)) {
      core::log_line(std::string("  skipped ") + s->name() + ": " + off);
      continue;
    }
    const Verdict v = s->can_implement(p, dev);
    core::log_line(std::string("  rejected ") + s->name() + ": " + (v.ok ? "(applicable, not reached)" : v.reason));
  }
  if (chosen == nullptr) core::log_line("  no solver: " + outcome.message);
}

}  // namespace jhdnn::conv
