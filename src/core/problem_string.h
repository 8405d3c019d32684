// Problem strings: the benchdnn-style one-line spelling of a convolution that jhdnn-bench reads
// (command line, suite files) and the library writes (JHDNN_LOG replay lines). Both sides use this
// one parser / printer, so a logged line always replays the problem it came from.
//
//   [g<G>]mb<N>ic<C>[id<D>]ih<H>[iw<W>]oc<K>[od<O>][oh<P>][ow<Q>][kd<T>]kh<R>[kw<S>]
//   [sd<sd>][sh<sh>][sw<sw>][pd<pd>][ph<ph>][pw<pw>][dd<dd>][dh<dh>][dw<dw>][n"name"]
//
// Fields may come in any order and may be separated by '_'. Defaults: g1, mb2 (as benchdnn),
// strides 1, padding 0, dilation 1; a w field (iw, kw, sw, pw, dw, ow) defaults to its h field,
// ih to iw, kh to kw. oh / ow are computed; when given they must match. Any d field (id, od, kd,
// sd, pd, dd) makes the problem 3-D; then id is required and kd/sd/pd/dd default to 1/1/0/1.
//
// Dilation is spelled as cuDNN does (1 = dense), NOT as benchdnn (0 = dense): "dh0" is refused
// with a message saying so, which catches a pasted benchdnn string.
//
// Data type, layout, math type and mode are not part of the string (jhdnn-bench options).
#pragma once

#include <string>

#include "core/conv_problem.h"
#include "core/status.h"

namespace jhdnn::core {

// Parses s into a FLOAT, packed NCHW (NCDHW), CROSS_CORRELATION problem; *name gets the n"..."
// field ("" when absent). BAD_PARAM with a message naming the offending field on bad input.
Status parse_problem_string(const std::string& s, ConvProblem* p, std::string* name = nullptr);

// The canonical string of p's shape (fields at their defaults are left out, oh is always
// written), with n"name" appended when name is not empty. parse_problem_string of the result gives
// back the same sizes, padding, strides, dilation and groups.
std::string problem_string(const ConvProblem& p, const std::string& name = "");

// "f32", "tf32" (FLOAT data under a tensor-op math type), "f16", "bf16", "f64"; "" for other types.
std::string bench_dt_name(const ConvProblem& p);

// A jhdnn-bench command that replays p with the given algorithm, e.g.
//   jhdnn-bench --dir=fwd --dt=f16 --layout=nhwc --algo=IMPLICIT_GEMM g1mb32ic64ih56oc64oh56kh3ph1
// algo_or_solver: a cuDNN-style algorithm name or a jhDNN solver name. What the driver cannot
// express (strided tensors, true-half compute) is kept out of the command and said after it as a
// shell comment ("  # ..."), so the line still runs.
std::string bench_command(const ConvProblem& p, const std::string& algo_or_solver);

}  // namespace jhdnn::core
