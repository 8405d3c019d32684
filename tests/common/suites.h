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

// Suite files (bench/suites/*.txt): one problem string per line (core/problem_string.h), '#'
// starts a comment, blank lines are skipped. A line without n"name" is named "<file stem>_l<line>".
// Throws std::runtime_error naming the file, the line and the parser's message on a bad line.
std::vector<NamedProblem> parse_suite_text(const std::string& text, const std::string& origin);
std::vector<NamedProblem> load_suite_file(const std::string& path);

// "default", "resnet50", "vgg16", "mobilenet", "odd" (the functions above; mb overrides the batch
// when > 0), else a suite file path. Throws std::runtime_error for an unknown name / bad file.
std::vector<NamedProblem> named_suite(const std::string& name_or_path, int mb = 0);

}  // namespace jhdnn::test
