// The shared, named forward-convolution problem set: every solver test (through the solver
// interface and the public API) and every benchmark walks the same list, so a shape that breaks
// one algorithm is tried on all of them.
//
// Entries are FLOAT, packed NCHW / KCRS (NCDHW / KCTRS for 3-D), CROSS_CORRELATION unless the
// name says "convmode". Re-lay them for other dtypes / NHWC with with_layout(). Real-network
// layers keep their channels and filters; where the full spatial size would make the float64 CPU
// reference too slow (> ~0.3 GFLOP), the spatial size is reduced and the name ends in "_s<H>".
#pragma once

#include <string>
#include <vector>

#include "core/conv_problem.h"

namespace jhdnn::test {

struct NamedProblem {
  std::string name;  // unique, [a-z0-9_], usable as a Catch2 section / benchmark name
  core::ConvProblem p;
};

// The named set (>= 60 2-D problems plus a few 3-D ones), in a fixed order.
std::vector<NamedProblem> conv_problem_set();

// The entry called `name`; throws std::out_of_range when there is none.
NamedProblem find_problem(const std::string& name);

// A FLOAT, packed NCHW / KCRS 2-D problem with the same padding, stride and dilation along H and W
// (core::make_problem_2d with each pair given once), for tests that list their own shapes.
core::ConvProblem float_2d(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int pad,
                           int stride, int dil, int64_t G = 1,
                           jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION);

// p re-laid out as packed NCHW / KCRS / NCHW (nhwc false) or NHWC / KRSC / NHWC (nhwc true) --
// NCDHW / NDHWC (KCTRS / KTRSC) for 3-D -- with data type dt; compute_type becomes DOUBLE for
// DOUBLE data, FLOAT otherwise. Sizes, padding, strides, dilation, groups, mode and math type
// are kept.
core::ConvProblem with_layout(const core::ConvProblem& p, jhdnnDataType_t dt, bool nhwc);

}  // namespace jhdnn::test
