// The harness the convolution GPU tests share (test_conv_direct, test_conv_gemm,
// test_conv_implicit_gemm, test_conv_tensorcore): the process-wide GPU state, one logical problem's
// host data and float64 reference, its device image in any layout (gaps poisoned), the checks of a
// finished run, the printed notes, and the extra problem builders (3-D, CONVOLUTION mode, strided).
// What differs between the solvers (which solvers run, through which API algorithm) stays in the
// test files. Uses Catch2 assertions, so it is linked into test binaries only (jhdnn_conv_harness),
// never into the benchmarks or examples that share jhdnn_testing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/test_util.h"
#include "conv/solver.h"
#include "core/conv_problem.h"
#include "core/device_info.h"

namespace jhdnn::test {

// ================================================================ process-wide GPU state

// One jhDNN handle, one cuDNN handle (cudnnCreate is slow) and one non-blocking stream that both
// handles and every solver run use; created on first use, after JHDNN_REQUIRE_GPU has passed. The
// constructor prints the GPU and the seed, prefixed with `test_name` (on one line when
// one_line_banner, else on two).
struct ConvTestGpu {
  CudaStream stream;
  JhdnnHandle jh;
  CudnnHandle ch;
  core::DeviceInfo dev;
  DeviceBuffer cudnn_ws;  // grown on demand by cudnn_best_forward

  explicit ConvTestGpu(const char* test_name, bool one_line_banner = false);
};

// The registered solvers of `algo`, in registry (dispatch) order.
std::vector<const conv::ConvSolver*> solvers_of(jhdnnConvolutionFwdAlgo_t algo);

// jhdnnGetLastErrorString of this thread.
std::string jhdnn_last_error();

const char* dt_name(jhdnnDataType_t dt);

// "NCHW" / "NHWC" (NCDHW / NDHWC in 3-D) for packed x and y, else "strided".
const char* layout_name(const core::ConvProblem& p);

// Packed strides of logical dims (n, c, d, h, w): NCDHW, or NDHWC when channels_last.
void packed(const int64_t d[5], bool channels_last, int64_t s[5]);

// ================================================================ host side of one problem

struct Scale {
  double alpha = 1.0, beta = 0.0;
};

// x and w random in `base`'s data type (seeded from test_seed() and `salt`), y0 random when
// beta != 0 (else left empty), and ref = alpha * conv(x, w) + beta * y0 in float64, all in base's
// strides.
void fill_conv_inputs(const core::ConvProblem& base, uint64_t salt, double alpha, double beta, std::vector<double>& x,
                      std::vector<double>& w, std::vector<double>& y0, std::vector<double>& ref);

// One logical problem in one data type: inputs, initial y and the float64 reference, all in the
// packed NCHW (NCDHW) strides of `base`. Built without any Catch2 assertion, so it may run on a
// worker thread (the next problem is prepared while the GPU checks the current one).
struct HostProblem {
  std::string name;
  core::ConvProblem base;
  Scale sc;
  std::vector<double> x, w, y0, ref;  // y0 empty when beta == 0
};

HostProblem make_host_problem(const std::string& name, const core::ConvProblem& base, Scale sc);

// 1 for each element offset of [0, span) that is a logical element of the strided tensor.
std::vector<uint8_t> logical_mask(const int64_t dims[5], const int64_t strides[5], int64_t span);

// Device byte image of a tensor whose logical values are `logical` (in src_strides), laid out in
// dst_strides over span elements; every byte between logical elements is 0xFF (NaN), so a kernel
// that reads a gap of x / w produces NaN, and one that writes a gap of y is caught.
std::vector<unsigned char> device_image(const std::vector<double>& logical, const int64_t src_strides[5],
                                        const int64_t dims[5], const int64_t dst_strides[5], int64_t span,
                                        jhdnnDataType_t dt);

// ================================================================ device side of one layout

// One HostProblem laid out as `layout` (same sizes, any strides) on the device. fma_math sets the
// problem's math type to FMA (see test_conv_implicit_gemm).
struct DeviceProblem {
  core::ConvProblem p;
  DeviceBuffer x, w, y;
  std::vector<unsigned char> y_init;  // what y holds before each run
  std::vector<uint8_t> y_mask;        // logical elements of y; empty when y has no gaps

  DeviceProblem(const HostProblem& h, const core::ConvProblem& layout, bool fma_math = false);

  void reset_y() { y.upload(y_init); }
};

// Checks a finished run (the stream has been synchronized): guards of x, w, y (and ws), y's gap
// bytes, and y's logical values against the reference. Returns y re-laid out in the reference's
// strides, for cross-checks.
std::vector<double> check_result(const std::string& who, const DeviceProblem& d, const HostProblem& h,
                                 Tolerance tol, bool check_gaps = true, const DeviceBuffer* ws = nullptr);

// ================================================================ notes (counted, printed, not failures)

struct Notes {
  std::string title;
  int64_t configs = 0, solver_runs = 0, api_runs = 0;
  int64_t cudnn_ran = 0, cudnn_not_supported = 0, cudnn_refused = 0;
  int64_t cudnn_gemm_ran = 0;  // of cudnn_ran: with cuDNN's own GEMM algorithm (when report_cudnn_gemm)
  bool report_cudnn_gemm = false;                 // print cudnn_gemm_ran (test_conv_gemm)
  std::map<std::string, int64_t> not_applicable;  // "solver: reason" -> count
  std::map<std::string, int64_t> runs_by_solver;  // solver name -> configurations it ran
  std::vector<std::string> cudnn_examples;        // the first few skipped cuDNN configurations

  explicit Notes(std::string t, bool report_cudnn_gemm_runs = false)
      : title(std::move(t)), report_cudnn_gemm(report_cudnn_gemm_runs) {}

  void cudnn_skip(bool not_supported, const std::string& what);

  // Prints the counts; CHECKs that cuDNN refused nothing but with NOT_SUPPORTED.
  void print() const;
};

// ================================================================ extra problems

// A packed NCDHW 3-D problem (with_layout re-lays it for NDHWC).
core::ConvProblem make_problem_3d(jhdnnDataType_t dt, int64_t N, int64_t C, int64_t D, int64_t H, int64_t W, int64_t K,
                                  int64_t T, int64_t R, int64_t S, std::array<int, 3> pad, std::array<int, 3> stride,
                                  std::array<int, 3> dil, int64_t G = 1,
                                  jhdnnConvolutionMode_t mode = JHDNN_CROSS_CORRELATION);

// Four FLOAT 3-D problems: basic, grouped + strided + dilated, depthwise in CONVOLUTION mode, pointwise.
std::vector<NamedProblem> extra_3d_problems();

// Every few problems of the shared set (for the more expensive variations).
std::vector<NamedProblem> every_nth(const std::vector<NamedProblem>& v, size_t n);

// The shared set's problems with the filter mirrored (CONVOLUTION mode); filters of 1x1 are
// skipped (mirroring them changes nothing).
std::vector<NamedProblem> convmode_problems();

// ================================================================ refusals

// A problem a solver must refuse, and a part of the reason it must give.
struct RefusalCase {
  const char* what;
  core::ConvProblem p;
  const char* reason_part;
};

// base re-laid as HALF and as DOUBLE data: a FLOAT-only solver refuses both, naming "FLOAT".
std::vector<RefusalCase> non_float_cases(const core::ConvProblem& base);

// CHECKs that v is a refusal whose reason contains reason_part (the reason is shown on failure).
void check_refused(const conv::Verdict& v, const char* reason_part);

// Non-packed x and y (4dEx-style strides with padding between rows, channels and images, and an
// N-innermost layout); the filter stays packed (KCRS or KRSC), as filter descriptors require.
std::vector<std::pair<std::string, core::ConvProblem>> strided_layouts(const core::ConvProblem& base);

// A 2-D shape for the strided-layout tests.
struct StridedShape {
  const char* name;
  int64_t N, C, H, W, K, R, S;
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  int64_t G;
};

// The shapes every strided-layout test runs (a test may add its own).
std::vector<StridedShape> strided_shapes();

// For each shape, scale (alpha 1 beta 0; alpha 0.5 beta 0.75) and strided layout of
// strided_layouts: builds the host problem (packed NCHW base in dt) and calls
// run(host problem, layout) under INFO lines naming the problem and the strides, after CHECKing
// that the layout is not packed.
void for_each_strided_config(const std::vector<StridedShape>& shapes, jhdnnDataType_t dt,
                             const std::function<void(const HostProblem&, const core::ConvProblem&)>& run);

// ================================================================ running a list of problems

// For each problem (any data type, given as packed NCHW bases): builds its HostProblem in dt with
// scale sc and calls run(host problem, {the NCHW layout, the NHWC layout}) under an INFO line
// naming the problem. The next problem's reference is prepared on a worker thread while `run`
// checks the current one on the GPU.
void for_each_host_problem(const std::vector<NamedProblem>& problems, jhdnnDataType_t dt, Scale sc,
                           const std::function<void(const HostProblem&, const std::vector<core::ConvProblem>&)>& run);

// For each layout: counts a configuration, lays h out on the device (fma_math: see DeviceProblem)
// and calls run(device problem, conv_tolerance of h) under an INFO line naming the layout.
void for_each_layout(const HostProblem& h, const std::vector<core::ConvProblem>& layouts, Notes& notes, bool fma_math,
                     const std::function<void(DeviceProblem&, Tolerance)>& run);

// ================================================================ the public API and cuDNN

// The public API with `algo` (handle: g's when null), after checking that the descriptors
// describe exactly the problem; DOUBLE problems pass double alpha / beta. Returns the result
// (reference strides), empty on failure.
std::vector<double> run_api_forward(ConvTestGpu& g, jhdnnConvolutionFwdAlgo_t algo, DeviceProblem& d,
                                    const HostProblem& h, Tolerance tol, Notes& notes, jhdnnHandle_t handle = nullptr);

// cuDNN descriptors of d's problem (FLOAT with FMA math, so cuDNN computes in fp32 as jhDNN does);
// null when cuDNN refuses them, the refusal counted in notes under `what`.
std::unique_ptr<CudnnConvDescs> cudnn_descs_or_skip(const DeviceProblem& d, const std::string& what, Notes& notes);

// A finished cuDNN run r on d's buffers (the stream synchronized): a failure is counted as a skip
// under `what`; else cuDNN is checked against the reference (the harness checking itself) and
// jhDNN's result jh (when not empty) against cuDNN at twice the tolerance. expected_algo >= 0:
// CHECKs that cuDNN ran that algorithm.
void check_cudnn_run(const CudnnRun& r, const std::string& what, const DeviceProblem& d, const HostProblem& h,
                     const std::vector<double>& jh, Notes& notes, int expected_algo = -1);

// (c) cuDNN on d's buffers: vs the reference, and jhDNN (jh) vs cuDNN. Only cuDNN's dot-product
// algorithms (their error model is conv_tolerance's; FFT / Winograd errors are norm-wise and
// larger): its best one, or with prefer_gemm cuDNN's GEMM algorithm first (counted in
// notes.cudnn_gemm_ran) and the best dot-product one where cuDNN does not offer GEMM.
void run_cudnn_forward(ConvTestGpu& g, DeviceProblem& d, const HostProblem& h, const std::vector<double>& jh,
                       Notes& notes, bool prefer_gemm = false);

// ================================================================ the paths of one algorithm

// The three paths of a test of one algorithm (direct, gemm): (a) run_solvers, the file's solvers
// through ConvSolver::run; (b) the public API with `algo` (run_api_forward); (c) cuDNN
// (run_cudnn_forward with prefer_cudnn_gemm).
struct ConvPaths {
  ConvTestGpu& g;
  jhdnnConvolutionFwdAlgo_t algo;
  std::function<void(DeviceProblem&, const HostProblem&, Tolerance, Notes&)> run_solvers;
  bool prefer_cudnn_gemm;
};

// Every path on every layout of one host problem (cuDNN only when with_cudnn).
void run_conv_paths(const ConvPaths& paths, const HostProblem& h, const std::vector<core::ConvProblem>& layouts,
                    Notes& notes, bool with_cudnn = true);

// Every path on `problems` (any data type, given as packed NCHW bases) in NCHW and NHWC (see
// for_each_host_problem).
void run_conv_problem_list(const ConvPaths& paths, const std::vector<NamedProblem>& problems, jhdnnDataType_t dt,
                           Scale sc, Notes& notes, bool with_cudnn = true);

}  // namespace jhdnn::test
