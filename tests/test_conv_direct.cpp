// GPU correctness of the DIRECT convolution: every DIRECT solver through the solver interface, the
// public API (jhdnnConvolutionForward with ALGO_DIRECT) and cuDNN's best algorithm, on the shared
// problem set and on the corners it misses (alpha / beta, DOUBLE, CONVOLUTION mode, padded
// strides, 3-D, a tensor of more than 2^31 elements), plus the algorithm queries and streams.
//
// How one configuration is checked (see DESIGN.md, "Tests"):
//   - inputs: uniform in [-1, 1), rounded to the data type, seeded from test_seed() (printed; rerun
//     with JHDNN_TEST_SEED=<seed> to replay), never all zero;
//   - reference: conv_fwd_reference in float64 on the packed NCHW copy of the inputs, computed once
//     per problem and data type and reused for every layout and every path;
//   - output: poisoned with 0xFF bytes (NaN) before each run (beta = 0), or pre-filled with random
//     values (beta != 0); bytes between the logical elements of a strided y are poisoned too and
//     must come back untouched; every buffer carries guard bytes that must come back untouched;
//   - comparison: element-wise with conv_tolerance(dtype, C/G*T*R*S); NaN / inf always fails;
//   - cuDNN runs on the same device buffers: cuDNN vs the reference (the harness checking itself)
//     and jhDNN vs cuDNN at twice the tolerance. When cuDNN answers NOT_SUPPORTED (or otherwise
//     refuses) a configuration, the comparison is skipped and counted in the printed summary.
//
// Every TEST_CASE starts with JHDNN_REQUIRE_GPU(): without a GPU they are reported as skipped.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <catch2/catch_message.hpp>
#include <catch2/catch_test_macros.hpp>

#include "common/catch_gpu.h"
#include "common/conv_harness.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/reference.h"
#include "common/test_util.h"
#include "conv/direct/direct.h"
#include "conv/solver.h"
#include "core/conv_problem.h"
#include "core/device_info.h"
#include "core/status.h"

using namespace jhdnn;
using namespace jhdnn::test;
using core::ConvProblem;

namespace {

// ================================================================ process-wide GPU state

// The harness (GPU state, host / device problems, result checks, notes, extra problems) is
// common/conv_harness.h, shared with the other convolution tests.
using Gpu = ConvTestGpu;

Gpu& gpu() {
  static Gpu g("test_conv_direct");
  return g;
}

// ================================================================ the three paths

std::vector<const conv::ConvSolver*> direct_solvers() { return solvers_of(JHDNN_CONVOLUTION_FWD_ALGO_DIRECT); }

bool is_naive(const conv::ConvSolver& s) { return std::strcmp(s.name(), "direct_naive") == 0; }

// (a) Each DIRECT solver through ConvSolver::run on the test stream.
void run_solvers(DeviceProblem& d, const HostProblem& h, Tolerance tol, Notes& notes) {
  Gpu& g = gpu();
  for (const conv::ConvSolver* s : direct_solvers()) {
    INFO("solver " << s->name());
    const conv::Verdict v = s->can_implement(d.p, g.dev);
    if (d.p.dtype == JHDNN_DATA_DOUBLE && !is_naive(*s)) {
      CHECK_FALSE(v.ok);  // only direct_naive serves DOUBLE (direct.h)
      continue;
    }
    if (!v.ok) {
      if (is_naive(*s)) {
        FAIL_CHECK("direct_naive refused a problem it must serve: " << v.reason);
      } else {
        notes.not_applicable[std::string(s->name()) + ": " + v.reason] += 1;
      }
      continue;
    }
    const size_t ws_bytes = s->workspace_bytes(d.p);
    DeviceBuffer ws(ws_bytes);  // poisoned; a valid pointer even for 0 bytes
    d.reset_y();
    const conv::ConvArgs args{d.x.get(), d.w.get(), d.y.get(), h.sc.alpha, h.sc.beta};
    const core::Status st = s->run(d.p, args, ws_bytes ? ws.get() : nullptr, ws_bytes, g.stream.get());
    g.stream.sync();
    INFO("run status " << core::status_name(st.code) << ": " << st.message);
    CHECK(st.ok());
    if (!st.ok()) continue;
    ++notes.solver_runs;
    ++notes.runs_by_solver[s->name()];
    check_result(std::string("solver ") + s->name(), d, h, tol, true, &ws);
  }
}

// (b) The public API with ALGO_DIRECT: see run_api_forward.
// (c) cuDNN's best dot-product algorithm: see run_cudnn_forward.
// The three paths together (common/conv_harness.h): run_solvers, the API, cuDNN.
ConvPaths paths() { return {gpu(), JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, run_solvers, /*prefer_cudnn_gemm=*/false}; }

// Every path on every layout of one host problem.
void run_all_paths(const HostProblem& h, const std::vector<ConvProblem>& layouts, Notes& notes) {
  run_conv_paths(paths(), h, layouts, notes);
}

// Runs `problems` (any data type, given as packed NCHW bases) in NCHW and NHWC.
void run_problem_list(const std::vector<NamedProblem>& problems, jhdnnDataType_t dt, Scale sc, Notes& notes,
                      bool with_cudnn = true) {
  run_conv_problem_list(paths(), problems, dt, sc, notes, with_cudnn);
}

#define START_GPU_CASE()                                                    \
  JHDNN_REQUIRE_GPU();                                                      \
  (void)gpu();                                                              \
  INFO("JHDNN_TEST_SEED=" << test_seed() << " replays this run's inputs")

// ================================================================ the problem set

void run_problem_set(jhdnnDataType_t dt) {
  const std::vector<NamedProblem> set = conv_problem_set();
  CHECK(set.size() >= 60);
  Notes notes(std::string("problem set, ") + dt_name(dt));
  run_problem_list(set, dt, Scale{}, notes);
  notes.print();
  CHECK(notes.cudnn_ran > 0);  // a harness that never reaches cuDNN checks nothing against it
  // The tiled kernel must actually run: every problem of the set fits its shared-memory budget,
  // so a refusal (and a silent fallback to direct_naive in the API path) is a regression.
  CHECK(notes.runs_by_solver["direct_tiled"] == notes.configs);
}

}  // namespace

TEST_CASE("direct: problem set, FLOAT, NCHW and NHWC", "[gpu][direct][problem_set]") {
  START_GPU_CASE();
  run_problem_set(JHDNN_DATA_FLOAT);
}

TEST_CASE("direct: problem set, HALF, NCHW and NHWC", "[gpu][direct][problem_set]") {
  START_GPU_CASE();
  run_problem_set(JHDNN_DATA_HALF);
}

TEST_CASE("direct: problem set, BFLOAT16, NCHW and NHWC", "[gpu][direct][problem_set]") {
  START_GPU_CASE();
  run_problem_set(JHDNN_DATA_BFLOAT16);
}

TEST_CASE("direct: problem set, DOUBLE (direct_naive only)", "[gpu][direct][problem_set][double]") {
  START_GPU_CASE();
  Notes notes("problem set, DOUBLE");
  run_problem_list(conv_problem_set(), JHDNN_DATA_DOUBLE, Scale{}, notes);
  notes.print();
}

TEST_CASE("direct: alpha and beta", "[gpu][direct][alpha_beta]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> some = every_nth(conv_problem_set(), 5);
  for (jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
    INFO("data type " << dt_name(dt));
    {
      // y pre-filled with random values: y = 0.5 conv + 0.75 y
      Notes notes(std::string("alpha 0.5 beta 0.75, ") + dt_name(dt));
      run_problem_list(some, dt, Scale{0.5, 0.75}, notes);
      notes.print();
    }
    {
      // beta = 0 with NaN in y: y must be overwritten, never read
      Notes notes(std::string("alpha 0.5 beta 0 (NaN y), ") + dt_name(dt));
      run_problem_list(some, dt, Scale{0.5, 0.0}, notes);
      notes.print();
    }
  }
}

TEST_CASE("direct: CONVOLUTION mode (mirrored filter)", "[gpu][direct][convmode]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = convmode_problems();
  REQUIRE(!probs.empty());
  for (jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
    INFO("data type " << dt_name(dt));
    Notes notes(std::string("CONVOLUTION mode, ") + dt_name(dt));
    run_problem_list(probs, dt, Scale{}, notes);
    notes.print();
  }
}

TEST_CASE("direct: 3-D problems", "[gpu][direct][3d]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> probs = extra_3d_problems();
  for (jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
    INFO("data type " << dt_name(dt));
    Notes notes(std::string("3-D, ") + dt_name(dt));
    run_problem_list(probs, dt, Scale{}, notes);
    run_problem_list(every_nth(probs, 2), dt, Scale{0.5, 0.75}, notes);
    notes.print();
  }
}

TEST_CASE("direct: non-packed (4dEx-style) x and y strides", "[gpu][direct][strided]") {
  START_GPU_CASE();
  for (jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
    INFO("data type " << dt_name(dt));
    Notes notes(std::string("strided x/y, ") + dt_name(dt));
    for_each_strided_config(strided_shapes(), dt,
                            [&](const HostProblem& h, const ConvProblem& lp) { run_all_paths(h, {lp}, notes); });
    notes.print();
  }
}

// ================================================================ more than 2^31 elements

namespace {

size_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 0;
}

// Runs f(begin, end, chunk_index) over [0, n) on all cores.
template <class F>
void parallel_for(int64_t n, F f) {
  const int64_t t = std::max<int64_t>(1, std::min<int64_t>(int64_t(std::thread::hardware_concurrency()), 64));
  const int64_t chunk = (n + t - 1) / t;
  std::vector<std::thread> threads;
  for (int64_t i = 0; i < t; ++i) {
    const int64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    threads.emplace_back([=] { f(b, e, i); });
  }
  for (std::thread& th : threads) th.join();
}

}  // namespace

TEST_CASE("direct: HALF tensors of more than 2^31 elements (64-bit indexing)", "[gpu][direct][large]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  // x: 46341^2 = 2,147,488,281 > 2^31 - 1 elements. y: two output channels (3x3, pad 1) of that
  // size, 4,294,976,562 elements, so y offsets pass 2^32 as well (32-bit unsigned would wrap too).
  // With C = 1 and K = 2, x and w are the same bytes in NCHW and NHWC; y is checked both ways.
  // The public API gets the NHWC problem: NCHW y's channel stride (46341^2) does not fit the int
  // of a tensor descriptor.
  const int64_t HW = 46341;
  const ConvProblem p = core::make_problem_2d(JHDNN_DATA_HALF, false, 1, 1, HW, HW, 2, 3, 3, 1, 1, 1, 1, 1, 1);
  const ConvProblem ph = core::make_problem_2d(JHDNN_DATA_HALF, true, 1, 1, HW, HW, 2, 3, 3, 1, 1, 1, 1, 1, 1);
  REQUIRE(p.x_span() > (int64_t(1) << 31));
  REQUIRE(p.y_span() > (int64_t(1) << 32));
  REQUIRE(ph.x_span() == p.x_span());
  REQUIRE(ph.y_span() == p.y_span());
  INFO("problem " << p.key());
  const size_t x_bytes = size_t(p.x_span()) * 2, y_bytes = size_t(p.y_span()) * 2;

  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (free_b < x_bytes + y_bytes + (size_t(1) << 30))
    SKIP("needs " << (x_bytes + y_bytes) / (1 << 20) << " MiB of device memory, " << free_b / (1 << 20) << " free");
  const size_t host_need = size_t(p.x_span()) * (sizeof(double) + 2) + (size_t(8) << 30);
  if (host_memory_bytes() < host_need)
    SKIP("needs about " << host_need / (size_t(1) << 30) << " GiB of host memory for the float64 copy of x");

  // x: multiples of 2^-10 in [-1, 1] (exact in HALF, so nothing is rounded; the 9-tap sums are
  // exact in fp32 too and only the final HALF rounding remains), generated on every core. The
  // float64 copy (17 GB, never zero-initialized) feeds conv_reference_at; the HALF bits go to the
  // device.
  const int64_t n = p.x_span();
  std::unique_ptr<double[]> x(new double[size_t(n)]);
  DeviceBuffer dx(x_bytes);
  {
    constexpr int kSteps = 2048;  // value j / 1024 - 1, j in [0, 2048]
    uint16_t bits_of[kSteps + 1];
    for (int j = 0; j <= kSteps; ++j) bits_of[j] = double_to_half_bits(j / 1024.0 - 1.0);
    std::unique_ptr<uint16_t[]> xh(new uint16_t[size_t(n)]);
    const uint64_t seed = mix_seed(test_seed(), hash_string("large_half_x"));
    parallel_for(n, [&](int64_t b, int64_t e, int64_t chunk) {
      SplitMix64 rng(mix_seed(seed, uint64_t(chunk)));
      for (int64_t i = b; i < e; ++i) {
        const int j = int(rng.next() % uint64_t(kSteps + 1));
        x[size_t(i)] = j / 1024.0 - 1.0;
        xh[size_t(i)] = bits_of[j];
      }
    });
    x[0] = 0.5;  // never all zero
    xh[0] = double_to_half_bits(0.5);
    dx.upload(xh.get(), x_bytes, 0);
  }  // the 4 GiB of HALF bits are freed here
  std::vector<double> w(size_t(p.w_span()));
  fill_random(w, JHDNN_DATA_HALF, mix_seed(test_seed(), hash_string("large_half_w")));
  DeviceBuffer dw(w.size() * 2);
  dw.upload(to_device_bytes(w, JHDNN_DATA_HALF));
  DeviceBuffer dy(y_bytes);

  // Sampled outputs (k, p, q): the corners and edges, the last row (where x offsets pass 2^31),
  // the end of channel 1 (where y offsets pass 2^32), and random ones.
  struct Sample {
    int64_t k, p, q;
  };
  std::vector<Sample> samples;
  const int64_t P = p.P, Q = p.Q;
  for (int64_t k = 0; k < p.K; ++k) {
    for (int64_t a : {int64_t(0), P - 1})
      for (int64_t b : {int64_t(0), int64_t(1), Q / 2, Q - 2, Q - 1}) {
        samples.push_back({k, a, b});
        samples.push_back({k, b, a});
      }
    for (int64_t row : {P - 2, P - 1})
      for (int64_t q = 0; q < Q; q += Q / 64) samples.push_back({k, row, q});
    for (int64_t q = Q - 200; q < Q; ++q) samples.push_back({k, P - 1, q});
  }
  SplitMix64 rng(mix_seed(test_seed(), hash_string("large_half_samples")));
  while (samples.size() < 4096)
    samples.push_back({int64_t(rng.next() % uint64_t(p.K)), int64_t(rng.next() % uint64_t(P)),
                       int64_t(rng.next() % uint64_t(Q))});
  std::vector<double> ref(samples.size());
  for (size_t i = 0; i < samples.size(); ++i)
    ref[i] = conv_reference_at(p, x.get(), w.data(), 0, samples[i].k, 0, samples[i].p, samples[i].q);
  const Tolerance tol = conv_tolerance(JHDNN_DATA_HALF, p.reduction());

  // After a run: no NaN / inf anywhere in y (the poison is NaN, so this also proves every output
  // was written), guards intact, and the sampled outputs match the reference.
  const size_t chunk_elems = size_t(128) << 20;
  void* pinned = nullptr;  // pinned: the 8 GiB of y come back at full speed
  CUDA_CHECK(cudaMallocHost(&pinned, chunk_elems * 2));
  std::unique_ptr<void, decltype(&cudaFreeHost)> hold_pinned(pinned, &cudaFreeHost);
  uint16_t* const buf = static_cast<uint16_t*>(pinned);
  auto check_large = [&](const std::string& who, const ConvProblem& lp) {
    INFO("result of " << who << " on " << lp.key());
    CHECK(dx.guard_intact());
    CHECK(dw.guard_intact());
    CHECK(dy.guard_intact());
    int64_t nonfinite = 0, first_bad = -1;
    for (size_t off = 0; off < size_t(p.y_span()); off += chunk_elems) {
      const size_t cnt = std::min(chunk_elems, size_t(p.y_span()) - off);
      dy.download(buf, cnt * 2, off * 2);
      std::vector<int64_t> bad_n(64, 0), bad_first(64, -1);  // per worker (parallel_for uses <= 64)
      parallel_for(int64_t(cnt), [&](int64_t b, int64_t e, int64_t t) {
        for (int64_t i = b; i < e; ++i)
          if ((buf[i] & 0x7C00u) == 0x7C00u) {  // exponent all ones: inf or NaN (the poison)
            if (bad_first[size_t(t)] < 0) bad_first[size_t(t)] = int64_t(off) + i;
            ++bad_n[size_t(t)];
          }
      });
      for (size_t t = 0; t < bad_n.size(); ++t) {
        nonfinite += bad_n[t];
        if (bad_first[t] >= 0 && (first_bad < 0 || bad_first[t] < first_bad)) first_bad = bad_first[t];
      }
    }
    INFO("non-finite outputs: " << nonfinite << " (first at element offset " << first_bad << ")");
    CHECK(nonfinite == 0);
    int64_t bad = 0;
    std::string first;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      const int64_t off = s.k * lp.y_stride[1] + s.p * lp.y_stride[3] + s.q * lp.y_stride[4];
      uint16_t bits = 0;
      dy.download(&bits, 2, size_t(off) * 2);
      const double got = half_bits_to_double(bits);
      if (!(std::fabs(got - ref[i]) <= tol.atol + tol.rtol * std::fabs(ref[i])) && bad++ == 0)
        first = "(k,p,q)=(" + std::to_string(s.k) + "," + std::to_string(s.p) + "," + std::to_string(s.q) +
                "): got " + std::to_string(got) + " ref " + std::to_string(ref[i]);
    }
    INFO(bad << " of " << samples.size() << " sampled outputs wrong; first " << first);
    CHECK(bad == 0);
  };

  for (const ConvProblem* lp : {&p, &ph}) {
    for (const conv::ConvSolver* s : direct_solvers()) {
      INFO("solver " << s->name() << " on " << lp->key());
      const conv::Verdict v = s->can_implement(*lp, g.dev);
      if (!v.ok) {
        CHECK_FALSE(is_naive(*s));
        std::printf("[large] %s not applicable: %s\n", s->name(), v.reason);
        continue;
      }
      dy.poison();
      const core::Status st =
          s->run(*lp, conv::ConvArgs{dx.get(), dw.get(), dy.get(), 1.0, 0.0}, nullptr, 0, g.stream.get());
      g.stream.sync();
      INFO("run status " << core::status_name(st.code) << ": " << st.message);
      CHECK(st.ok());
      if (st.ok()) check_large(std::string("solver ") + s->name(), *lp);
    }
  }
  {
    JhdnnConvDescs descs(ph);  // the n strides (> INT_MAX, on size-1 dims) are clamped
    dy.poison();
    const float one = 1.0f, zero = 0.0f;
    const jhdnnStatus_t st =
        jhdnnConvolutionForward(g.jh.get(), &one, descs.x, dx.get(), descs.w, dw.get(), descs.conv,
                                JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0, &zero, descs.y, dy.get());
    INFO("jhdnnConvolutionForward: " << jhdnnGetErrorString(st) << " " << jhdnn_last_error());
    REQUIRE(st == JHDNN_STATUS_SUCCESS);
    g.stream.sync();
    check_large("jhdnnConvolutionForward(DIRECT)", ph);
  }
}  // host and device memory freed here

// ================================================================ algorithm queries

namespace {

// What Get_v7 / Find must say for algo: SUCCESS when an enabled registered solver can take p;
// plain NOT_SUPPORTED when no solver implements the algorithm at all; some NOT_SUPPORTED code
// otherwise. *implemented tells which of the last two applies.
jhdnnStatus_t expected_status(const ConvProblem& p, jhdnnConvolutionFwdAlgo_t algo, bool* implemented) {
  *implemented = false;
  for (const conv::ConvSolver* s : conv::all_solvers()) {
    if (s->algo() != algo) continue;
    *implemented = true;
    if (conv::solver_enabled(*s) && s->can_implement(p, gpu().dev).ok) return JHDNN_STATUS_SUCCESS;
  }
  return JHDNN_STATUS_NOT_SUPPORTED;
}

bool not_supported_category(jhdnnStatus_t s) { return JHDNN_STATUS_CATEGORY(s) == JHDNN_STATUS_NOT_SUPPORTED; }

// Shape checks shared by Get_v7, Find and FindEx: all 8 algorithms once, the runnable ones first,
// each entry's status as the registry predicts, DIRECT runnable.
void check_perf_list(const ConvProblem& p, const jhdnnConvolutionFwdAlgoPerf_t* perf, int returned, bool timed,
                     size_t ws_given = SIZE_MAX) {
  REQUIRE(returned == JHDNN_CONVOLUTION_FWD_ALGO_COUNT);
  bool seen[JHDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
  bool failures_started = false;
  float last_time = -1.0f;
  for (int i = 0; i < returned; ++i) {
    const jhdnnConvolutionFwdAlgoPerf_t& e = perf[i];
    INFO("entry " << i << ": " << jhdnn_algo_name(e.algo) << " status " << jhdnnGetErrorString(e.status) << " time "
                  << e.time << " memory " << e.memory);
    REQUIRE(int(e.algo) >= 0);
    REQUIRE(int(e.algo) < JHDNN_CONVOLUTION_FWD_ALGO_COUNT);
    CHECK_FALSE(seen[e.algo]);
    seen[e.algo] = true;
    bool implemented = false;
    jhdnnStatus_t want = expected_status(p, e.algo, &implemented);
    if (want == JHDNN_STATUS_SUCCESS && timed && e.memory > ws_given) want = JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT;
    if (want == JHDNN_STATUS_SUCCESS) {
      CHECK(e.status == JHDNN_STATUS_SUCCESS);
      CHECK_FALSE(failures_started);  // runnable entries come first
      if (timed) {
        CHECK(e.time > 0.0f);
        CHECK(e.time >= last_time);  // sorted by time
        last_time = e.time;
      } else {
        CHECK(e.time < 0.0f);  // Get_v7 times nothing
      }
    } else {
      failures_started = true;
      if (want == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
        CHECK(e.status == JHDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT);
      else if (!implemented)
        CHECK(e.status == JHDNN_STATUS_NOT_SUPPORTED);
      else
        CHECK(not_supported_category(e.status));
    }
    if (e.algo == JHDNN_CONVOLUTION_FWD_ALGO_DIRECT) {
      CHECK(e.status == JHDNN_STATUS_SUCCESS);
      CHECK(e.memory == 0);
      CHECK(e.determinism == JHDNN_DETERMINISTIC);
    }
  }
}

}  // namespace

TEST_CASE("direct: Get_v7 / Find / FindEx list all algorithms, DIRECT runnable", "[gpu][direct][find]") {
  START_GPU_CASE();
  Gpu& g = gpu();
  const std::vector<NamedProblem> set = conv_problem_set();
  REQUIRE(set.size() >= 3);
  struct Pick {
    size_t index;
    jhdnnDataType_t dt;
    bool nhwc;
  };
  const Pick picks[] = {{0, JHDNN_DATA_FLOAT, false}, {set.size() / 2, JHDNN_DATA_HALF, true},
                        {set.size() - 1, JHDNN_DATA_DOUBLE, false}, {1, JHDNN_DATA_BFLOAT16, true}};

  int max_count = 0;
  REQUIRE(jhdnnGetConvolutionForwardAlgorithmMaxCount(g.jh.get(), &max_count) == JHDNN_STATUS_SUCCESS);
  CHECK(max_count == JHDNN_CONVOLUTION_FWD_ALGO_COUNT);

  for (const Pick& pk : picks) {
    const NamedProblem& np = set[pk.index];
    const HostProblem h = make_host_problem(np.name, with_layout(np.p, pk.dt, false), Scale{});
    const ConvProblem p = with_layout(np.p, pk.dt, pk.nhwc);
    INFO("problem " << np.name << " [" << p.key() << "]");
    JhdnnConvDescs descs(p);
    jhdnnConvolutionFwdAlgoPerf_t perf[2 * JHDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = -1;

    {
      INFO("jhdnnGetConvolutionForwardAlgorithm_v7");
      std::memset(perf, 0xFF, sizeof perf);
      const jhdnnStatus_t st = jhdnnGetConvolutionForwardAlgorithm_v7(
          g.jh.get(), descs.x, descs.w, descs.conv, descs.y, 2 * JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
      INFO(jhdnnGetErrorString(st) << " " << jhdnn_last_error());
      REQUIRE(st == JHDNN_STATUS_SUCCESS);
      check_perf_list(p, perf, returned, false);
      for (int i = 0; i < returned; ++i) {
        if (perf[i].status != JHDNN_STATUS_SUCCESS) continue;
        size_t ws = SIZE_MAX;
        CHECK(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y, perf[i].algo,
                                                      &ws) == JHDNN_STATUS_SUCCESS);
        CHECK(ws == perf[i].memory);
      }
      // Asking for fewer returns the best ones only.
      int two = -1;
      REQUIRE(jhdnnGetConvolutionForwardAlgorithm_v7(g.jh.get(), descs.x, descs.w, descs.conv, descs.y, 2, &two,
                                                     perf) == JHDNN_STATUS_SUCCESS);
      CHECK(two == 2);
    }
    {
      INFO("jhdnnFindConvolutionForwardAlgorithm");
      std::memset(perf, 0xFF, sizeof perf);
      returned = -1;
      const jhdnnStatus_t st = jhdnnFindConvolutionForwardAlgorithm(
          g.jh.get(), descs.x, descs.w, descs.conv, descs.y, JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf);
      INFO(jhdnnGetErrorString(st) << " " << jhdnn_last_error());
      REQUIRE(st == JHDNN_STATUS_SUCCESS);
      check_perf_list(p, perf, returned, true);
    }
    {
      INFO("jhdnnFindConvolutionForwardAlgorithmEx with a workspace for every algorithm");
      DeviceProblem d(h, p);
      size_t ws_bytes = 0;
      bool only_direct = true;
      for (int a = 0; a < JHDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
        bool impl = false;
        if (expected_status(p, jhdnnConvolutionFwdAlgo_t(a), &impl) != JHDNN_STATUS_SUCCESS) continue;
        if (a != JHDNN_CONVOLUTION_FWD_ALGO_DIRECT) only_direct = false;
        size_t need = 0;
        REQUIRE(jhdnnGetConvolutionForwardWorkspaceSize(g.jh.get(), descs.x, descs.w, descs.conv, descs.y,
                                                        jhdnnConvolutionFwdAlgo_t(a), &need) == JHDNN_STATUS_SUCCESS);
        ws_bytes = std::max(ws_bytes, need);
      }
      DeviceBuffer ws(ws_bytes);
      d.reset_y();
      std::memset(perf, 0xFF, sizeof perf);
      returned = -1;
      const jhdnnStatus_t st = jhdnnFindConvolutionForwardAlgorithmEx(
          g.jh.get(), descs.x, d.x.get(), descs.w, d.w.get(), descs.conv, descs.y, d.y.get(),
          JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, ws_bytes ? ws.get() : nullptr, ws_bytes);
      INFO(jhdnnGetErrorString(st) << " " << jhdnn_last_error());
      REQUIRE(st == JHDNN_STATUS_SUCCESS);
      g.stream.sync();
      check_perf_list(p, perf, returned, true, ws_bytes);
      // y holds the last timed algorithm's result (beta = 0).
      if (only_direct) {
        check_result("FindEx output", d, h, conv_tolerance(p.dtype, p.reduction()), true, &ws);
      } else {
        const std::vector<double> got = from_device_bytes(d.y.download().data(), size_t(p.y_span()), p.dtype);
        std::vector<double> got_base(h.ref.size());
        const auto yd = y_dims(p);
        copy_tensor(got.data(), p.y_stride, got_base.data(), h.base.y_stride, yd.data());
        const double rel = relative_l2_error(got_base.data(), h.ref.data(), yd.data(), h.base.y_stride);
        INFO("FindEx output relative L2 error " << rel);
        CHECK(rel < 1e-2);
      }
    }
    {
      INFO("jhdnnFindConvolutionForwardAlgorithmEx without a workspace");
      DeviceProblem d(h, p);
      std::memset(perf, 0xFF, sizeof perf);
      returned = -1;
      const jhdnnStatus_t st = jhdnnFindConvolutionForwardAlgorithmEx(
          g.jh.get(), descs.x, d.x.get(), descs.w, d.w.get(), descs.conv, descs.y, d.y.get(),
          JHDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf, nullptr, 0);
      INFO(jhdnnGetErrorString(st) << " " << jhdnn_last_error());
      REQUIRE(st == JHDNN_STATUS_SUCCESS);
      g.stream.sync();
      check_perf_list(p, perf, returned, true, 0);
    }
  }
}

// ================================================================ streams

namespace {

// Holds a stream back: a host function enqueued on it spins until open() (or a 30 s safety
// timeout, so a library that wrongly synchronizes the device cannot hang the test forever).
class StreamBlocker {
 public:
  explicit StreamBlocker(cudaStream_t s) : s_(s) { CUDA_CHECK(cudaLaunchHostFunc(s, &StreamBlocker::wait, this)); }
  ~StreamBlocker() {
    open();
    cudaStreamSynchronize(s_);
  }
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;
  void open() { open_.store(true); }

 private:
  static void CUDART_CB wait(void* self) {
    auto* b = static_cast<StreamBlocker*>(self);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!b->open_.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cudaStream_t s_;
  std::atomic<bool> open_{false};
};

}  // namespace

TEST_CASE("direct: jhdnnSetStream is honoured", "[gpu][direct][stream]") {
  START_GPU_CASE();
  const std::vector<NamedProblem> set = conv_problem_set();
  const NamedProblem& np = set.front();
  const HostProblem h = make_host_problem(np.name, with_layout(np.p, JHDNN_DATA_FLOAT, false), Scale{});
  const ConvProblem& p = h.base;
  INFO("problem " << np.name << " [" << p.key() << "]");

  JhdnnHandle handle;  // its own handle: the shared one keeps the shared stream
  CudaStream s;        // non-blocking: the legacy default stream does not wait for it
  cudaStream_t got = nullptr;
  REQUIRE(jhdnnGetStream(handle.get(), &got) == JHDNN_STATUS_SUCCESS);
  CHECK(got == nullptr);  // a new handle uses the default stream
  REQUIRE(jhdnnSetStream(handle.get(), s.get()) == JHDNN_STATUS_SUCCESS);
  REQUIRE(jhdnnGetStream(handle.get(), &got) == JHDNN_STATUS_SUCCESS);
  CHECK(got == s.get());

  DeviceProblem d(h, p);
  JhdnnConvDescs descs(p);
  d.reset_y();
  {
    StreamBlocker blocker(s.get());
    const float one = 1.0f, zero = 0.0f;
    const jhdnnStatus_t st = jhdnnConvolutionForward(handle.get(), &one, descs.x, d.x.get(), descs.w, d.w.get(),
                                                     descs.conv, JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0, &zero,
                                                     descs.y, d.y.get());
    INFO("jhdnnConvolutionForward: " << jhdnnGetErrorString(st) << " " << jhdnn_last_error());
    REQUIRE(st == JHDNN_STATUS_SUCCESS);
    // Had the kernel gone to the default stream it would be finished after this; on s it cannot
    // have started, because s is held back by the blocker.
    CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    CHECK(cudaStreamQuery(s.get()) == cudaErrorNotReady);
    (void)cudaGetLastError();  // NotReady is no error; make sure no later launch check sees it
    const std::vector<unsigned char> early = d.y.download();
    const bool untouched = std::all_of(early.begin(), early.end(), [](unsigned char b) { return b == 0xFF; });
    INFO("y was written before the stream set with jhdnnSetStream was released");
    CHECK(untouched);
    blocker.open();
    s.sync();
  }
  check_result("jhdnnConvolutionForward on the handle's stream", d, h, conv_tolerance(p.dtype, p.reduction()));
}
