// The float64 CPU oracle for forward convolution. Every GPU result in the test suite is checked
// against these two functions, so they are written to be obviously right first and fast second.
//
// Inputs are the values the device sees (already rounded to the device data type, see
// test_util.h); the sum is accumulated in double, so the reference's own error is negligible
// next to any fp32/fp16 kernel's.
//
// Arrays are addressed exactly as ConvProblem says: element (n, c, d, h, w) of x lives at
// x[n*x_stride[0] + c*x_stride[1] + d*x_stride[2] + h*x_stride[3] + w*x_stride[4]], and likewise
// for w (k, c-per-group, t, r, s) and y (n, k, o, p, q). Each array must hold at least
// x_span()/w_span()/y_span() elements; elements between the logical ones are never touched.
#pragma once

#include <cstdint>

#include "core/conv_problem.h"

namespace jhdnn::test {

// y = alpha * conv(x, w) + beta * y over every logical output element.
//
// Covers everything ConvProblem can describe: any strides, groups (incl. depthwise), stride,
// dilation, zero padding, 2-D and 3-D, CONVOLUTION (filter flipped in every spatial dim) and
// CROSS_CORRELATION. When beta == 0, y is never read (NaN in y is overwritten), as in cuDNN.
//
// Internally x and w are repacked channels-last in double (flip applied to w), so the inner loop
// is a contiguous dot product over the channels of one group whatever the caller's layout; the
// outputs are split over std::threads when the problem is big enough to pay for them.
void conv_fwd_reference(const core::ConvProblem& p, const double* x, const double* w, double* y,
                        double alpha, double beta);

// The raw sum (no alpha, no beta) for ONE output element y[n, k, o, p, q], straight from the
// definition with bounds checks on every tap. Cheap enough to spot-check problems far too large
// for conv_fwd_reference, and independent code, so the two check each other.
double conv_reference_at(const core::ConvProblem& prob, const double* x, const double* w, int64_t n,
                         int64_t k, int64_t o, int64_t p, int64_t q);

}  // namespace jhdnn::test
