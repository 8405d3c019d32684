// Benchmark layer suites: real network layers at real batch sizes (too large for the float64
// CPU reference; the tests use problems.h instead). FLOAT, packed NCHW; re-lay with with_layout().
#pragma once

#include <string>
#include <vector>

#include "common/problems.h"

namespace jhdnn::test {

// ResNet-50 convolution layers (each distinct shape once) at batch n.
std::vector<NamedProblem> resnet50_layers(int n = 32);
// VGG-16 convolution layers at batch n.
std::vector<NamedProblem> vgg16_layers(int n = 16);
// MobileNetV2 depthwise 3x3 and pointwise 1x1 layers at batch n.
std::vector<NamedProblem> mobilenet_v2_layers(int n = 32);
// A few odd shapes: primes, stride 3, dilation 2, 5x5 and 11x11 filters, groups.
std::vector<NamedProblem> odd_layers();
// All of the above: the default suite of jhdnn_compare and bench_conv.
std::vector<NamedProblem> default_bench_suite();

}  // namespace jhdnn::test
