// jhdnn-bench's inputs, without a GPU: problem strings (parse, print, round trip, bad input),
// the suite files in bench/suites, the command line, and the JHDNN_LOG replay line (built from a
// problem, parsed back by the driver's parser). The last case logs a real API call (GPU).
#include <catch2/catch_test_macros.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "common/catch_gpu.h"
#include "common/gpu_util.h"
#include "common/problems.h"
#include "common/suites.h"
#include "common/test_util.h"
#include "core/problem_string.h"
#include "options.h"
#include "verify.h"

using namespace jhdnn;
using namespace jhdnn::test;

namespace {

bool same_shape(const core::ConvProblem& a, const core::ConvProblem& b) {
  return a.spatial_dims == b.spatial_dims && a.N == b.N && a.C == b.C && a.K == b.K && a.G == b.G && a.D == b.D &&
         a.H == b.H && a.W == b.W && a.T == b.T && a.R == b.R && a.S == b.S && a.O == b.O && a.P == b.P &&
         a.Q == b.Q && a.pad_d == b.pad_d && a.pad_h == b.pad_h && a.pad_w == b.pad_w && a.stride_d == b.stride_d &&
         a.stride_h == b.stride_h && a.stride_w == b.stride_w && a.dil_d == b.dil_d && a.dil_h == b.dil_h &&
         a.dil_w == b.dil_w;
}

core::ConvProblem parse_ok(const std::string& s, std::string* name = nullptr) {
  core::ConvProblem p;
  const core::Status st = core::parse_problem_string(s, &p, name);
  INFO(s << ": " << st.message);
  REQUIRE(st.ok());
  return p;
}

std::string parse_error(const std::string& s) {
  core::ConvProblem p;
  const core::Status st = core::parse_problem_string(s, &p);
  INFO(s);
  REQUIRE(st.code == JHDNN_STATUS_BAD_PARAM);
  return st.message;
}

// argv from a command string split on spaces, with single quotes stripped (as a shell would).
std::vector<std::string> shell_words(const std::string& cmd) {
  std::vector<std::string> w;
  std::istringstream in(cmd.substr(0, cmd.find("  #")));
  for (std::string t; in >> t;) {
    std::string u;
    for (char c : t)
      if (c != '\'') u += c;
    w.push_back(u);
  }
  return w;
}

bool parse_cmd(const std::vector<std::string>& words, bench::BenchOptions* o, std::string* err) {
  std::vector<const char*> argv;
  for (const auto& s : words) argv.push_back(s.c_str());
  return bench::parse_bench_args(int(argv.size()), argv.data(), o, err);
}

}  // namespace

TEST_CASE("problem strings: fields and defaults", "[bench][cpu]") {
  std::string name;
  const core::ConvProblem p = parse_ok("mb32ic64ih56oc64oh56kh3ph1", &name);
  CHECK(name.empty());
  CHECK(p.N == 32);
  CHECK(p.C == 64);
  CHECK(p.H == 56);
  CHECK(p.W == 56);
  CHECK(p.K == 64);
  CHECK(p.R == 3);
  CHECK(p.S == 3);
  CHECK(p.pad_h == 1);
  CHECK(p.pad_w == 1);
  CHECK(p.P == 56);
  CHECK(p.Q == 56);
  CHECK(p.G == 1);
  CHECK(p.dil_h == 1);
  CHECK(p.x_packed_nchw());
  CHECK(p.w_packed_kcrs());
  CHECK(p.y_packed_nchw());

  const core::ConvProblem q = parse_ok("g4_mb3_ic8_ih9_iw11_oc12_kh3_kw2_sh2_sw3_ph1_pw0_dh2_dw1_n\"odd one\"", &name);
  CHECK(name == "odd one");
  CHECK(q.G == 4);
  CHECK(q.W == 11);
  CHECK(q.S == 2);
  CHECK(q.stride_w == 3);
  CHECK(q.pad_w == 0);
  CHECK(q.dil_h == 2);
  CHECK(q.dil_w == 1);
  CHECK(q.P == core::conv_out_size(9, 3, 1, 2, 2));
  CHECK(q.Q == core::conv_out_size(11, 2, 0, 3, 1));

  const core::ConvProblem d = parse_ok("mb1ic2id5ih6oc3kd3kh3pd1ph1");
  CHECK(d.spatial_dims == 3);
  CHECK(d.D == 5);
  CHECK(d.T == 3);
  CHECK(d.O == 5);
  CHECK(parse_ok("ic2ih6oc3kh1").N == 2);  // benchdnn's default batch
}

TEST_CASE("problem strings: round trip problem -> string -> problem", "[bench][cpu]") {
  SplitMix64 g(12345);
  int tried = 0;
  for (int i = 0; i < 2000; ++i) {
    const auto r = [&](int lo, int hi) { return lo + int(g.next() % uint64_t(hi - lo + 1)); };
    core::ConvProblem p;
    const int G = r(1, 3);
    const bool three = r(0, 4) == 0;
    p.spatial_dims = three ? 3 : 2;
    p.G = G, p.N = r(1, 9), p.C = G * r(1, 5), p.K = G * r(1, 5);
    p.H = r(1, 20), p.W = r(1, 20), p.R = r(1, 4), p.S = r(1, 4);
    p.pad_h = r(0, 2), p.pad_w = r(0, 2), p.stride_h = r(1, 3), p.stride_w = r(1, 3), p.dil_h = r(1, 2), p.dil_w = r(1, 2);
    if (three) p.D = r(1, 6), p.T = r(1, 3), p.pad_d = r(0, 1), p.stride_d = r(1, 2), p.dil_d = r(1, 2);
    p.O = three ? core::conv_out_size(p.D, p.T, p.pad_d, p.stride_d, p.dil_d) : 1;
    p.P = core::conv_out_size(p.H, p.R, p.pad_h, p.stride_h, p.dil_h);
    p.Q = core::conv_out_size(p.W, p.S, p.pad_w, p.stride_w, p.dil_w);
    if (p.O <= 0 || p.P <= 0 || p.Q <= 0) continue;
    ++tried;
    const std::string s = core::problem_string(p, "n" + std::to_string(i));
    std::string name;
    const core::ConvProblem back = parse_ok(s, &name);
    INFO(s);
    CHECK(same_shape(p, back));
    CHECK(name == "n" + std::to_string(i));
    CHECK(core::problem_string(back, name) == s);
  }
  CHECK(tried > 1000);
}

TEST_CASE("problem strings: bad input gets a clear message", "[bench][cpu]") {
  CHECK(parse_error("mb2ic3ih5oc4kh3dh0").find("benchdnn") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4").find("kh") != std::string::npos);
  CHECK(parse_error("mb2ih5oc4kh3").find("ic") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3xy2").find("unknown field 'xy'") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3ph").find("no number") != std::string::npos);
  CHECK(parse_error("mb2ic3ic4ih5oc4kh3").find("twice") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3oh9").find("oh3") != std::string::npos);  // computed 3
  CHECK(parse_error("g2mb2ic3ih5oc4kh3").find("multiples of g") != std::string::npos);
  CHECK(parse_error("mb2ic3ih2oc4kh5").find("does not fit") != std::string::npos);
  CHECK(parse_error("mb0ic3ih5oc4kh3").find("mb must be > 0") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3n\"open").find("unterminated") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3sh99999999999").find("too large") != std::string::npos);
  CHECK(parse_error("mb2ic3ih5oc4kh3-1").find("unexpected") != std::string::npos);
  CHECK(parse_error("mb2ic3oc4kd2ih5kh3").find("needs id") != std::string::npos);
}

TEST_CASE("suite files: every line parses; public-nets has >= 200 unique shapes", "[bench][cpu]") {
  const std::string dir = JHDNN_SUITE_DIR;
  const auto nets = load_suite_file(dir + "/public-nets.txt");
  std::set<std::string> shapes, names;
  for (const auto& np : nets) {
    shapes.insert(core::problem_string(np.p));
    names.insert(np.name);
  }
  CHECK(nets.size() >= 200);
  CHECK(shapes.size() == nets.size());  // deduplicated
  CHECK(names.size() == nets.size());
  // The embedded suites spell and parse back too.
  for (const auto& np : default_bench_suite()) {
    std::string name;
    CHECK(same_shape(parse_ok(core::problem_string(np.p, np.name), &name), np.p));
    CHECK(name == np.name);
  }
  // A bad line names the file and the line.
  try {
    parse_suite_text("# ok\nmb2ic3ih5oc4kh3\n\nmb2ic3ih5oc4kh3zz1\n", "x/bad.txt");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("x/bad.txt:4:") != std::string::npos);
  }
  const auto unnamed = parse_suite_text("mb2ic3ih5oc4kh3  # comment\n", "dir/mine.txt");
  REQUIRE(unnamed.size() == 1);
  CHECK(unnamed[0].name == "mine_l1");
  CHECK_THROWS(named_suite("no-such-suite"));
}

TEST_CASE("jhdnn-bench command line", "[bench][cpu]") {
  bench::BenchOptions o;
  std::string err;
  REQUIRE(parse_cmd({"jhdnn-bench"}, &o, &err));
  REQUIRE(o.configs.size() == 3);
  CHECK(o.configs[1].name() == "f16:nhwc");
  CHECK(o.mode == "both");
  CHECK(bench::resolve_problems(o).size() == default_bench_suite().size());

  bench::BenchOptions o2;
  REQUIRE(parse_cmd({"jhdnn-bench", "--dt=f32,tf32", "--layout", "nchw,nhwc", "--algo=IMPLICIT_GEMM,direct_tiled",
                     "--mode=verify", "--mb=4", "mb32ic8ih9oc8kh3ph1n\"a\""},
                    &o2, &err));
  CHECK(o2.configs.size() == 4);
  CHECK(o2.mode == "verify");
  const auto probs = bench::resolve_problems(o2);
  REQUIRE(probs.size() == 1);
  CHECK(probs[0].p.N == 4);
  CHECK(probs[0].p.x_stride[0] == 8 * 9 * 9);
  CHECK(bench::selects_solver(o2, "direct_tiled", JHDNN_CONVOLUTION_FWD_ALGO_DIRECT));
  CHECK_FALSE(bench::selects_solver(o2, "direct_naive", JHDNN_CONVOLUTION_FWD_ALGO_DIRECT));
  CHECK(bench::selects_solver(o2, "anything", JHDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM));

  const std::vector<std::vector<std::string>> bad = {
      {"jhdnn-bench", "--dt=f8"},       {"jhdnn-bench", "--mode=fast"}, {"jhdnn-bench", "--reps=0"},
      {"jhdnn-bench", "--bogus=1"},     {"jhdnn-bench", "--cfg=f32"},   {"jhdnn-bench", "--reps"},
      {"jhdnn-bench", "mb2ic3ih5oc4"},  {"jhdnn-bench", "--cfg=f32:nchw", "--dt=f16"},
      {"jhdnn-bench", "--suite=odd", "mb2ic3ih5oc4kh3"}};
  for (const auto& b : bad) {
    bench::BenchOptions ob;
    err.clear();
    INFO(b.back());
    CHECK_FALSE(parse_cmd(b, &ob, &err));
    CHECK_FALSE(err.empty());
  }
}

TEST_CASE("JHDNN_LOG replay line parses back into the same problem", "[bench][cpu]") {
  for (const bool nhwc : {false, true})
    for (const jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16}) {
      core::ConvProblem p = with_layout(parse_ok("g2mb3ic8ih9iw7oc6kh3kw2sh2ph1dw2"), dt, nhwc);
      p.math_type = dt == JHDNN_DATA_FLOAT && nhwc ? JHDNN_TENSOR_OP_MATH : JHDNN_DEFAULT_MATH;
      p.mode = nhwc ? JHDNN_CONVOLUTION : JHDNN_CROSS_CORRELATION;
      const std::string cmd = core::bench_command(p, "IMPLICIT_GEMM");
      INFO(cmd);
      const auto words = shell_words(cmd);
      REQUIRE(words[0] == "jhdnn-bench");
      bench::BenchOptions o;
      std::string err;
      REQUIRE(parse_cmd(words, &o, &err));
      REQUIRE(o.problems.size() == 1);
      CHECK(same_shape(o.problems[0].p, p));
      REQUIRE(o.configs.size() == 1);
      CHECK(o.configs[0].nhwc == nhwc);
      CHECK(o.configs[0].dt == core::bench_dt_name(p));
      CHECK(o.conv_mode == (p.mode == JHDNN_CONVOLUTION));
      CHECK(o.algos == std::vector<std::string>{"IMPLICIT_GEMM"});
    }
}

TEST_CASE("jhdnn-bench inputs: deterministic, rounded, in range, bytes as to_device_bytes", "[bench][cpu]") {
  for (const jhdnnDataType_t dt : {JHDNN_DATA_FLOAT, JHDNN_DATA_HALF, JHDNN_DATA_BFLOAT16, JHDNN_DATA_DOUBLE}) {
    const auto a = bench::make_input(300001, 42, dt);
    const auto b = bench::make_input(300001, 42, dt);
    const auto c = bench::make_input(300001, 43, dt);
    CHECK(a == b);
    CHECK(a != c);
    double lo = 1, hi = -1;
    std::set<double> distinct;
    for (double v : a) {
      lo = std::min(lo, v), hi = std::max(hi, v);
      CHECK(v == round_to(v, dt));
      if (distinct.size() < 1000) distinct.insert(v);
    }
    CHECK(lo >= -1.0);
    CHECK(hi <= 1.0);
    CHECK(lo < -0.99);
    CHECK(hi > 0.99);
    CHECK(distinct.size() >= 200);
    CHECK(bench::to_bytes_parallel(a, dt) == to_device_bytes(a, dt));
  }
}

TEST_CASE("jhdnn-bench reference: sampled agrees with whole; the check catches bad outputs", "[bench][cpu]") {
  for (const bool nhwc : {false, true}) {
    core::ConvProblem p = with_layout(parse_ok("g2mb3ic6ih11iw9oc8kh3kw2sh2ph1pw0dh2"), JHDNN_DATA_HALF, nhwc);
    p.mode = nhwc ? JHDNN_CONVOLUTION : JHDNN_CROSS_CORRELATION;
    const auto x = bench::make_input(p.x_span(), 1, p.dtype);
    const auto w = bench::make_input(p.w_span(), 2, p.dtype);
    const bench::Reference full = bench::make_reference(p, x, w, 7, 1e18);
    const bench::Reference some = bench::make_reference(p, x, w, 7, 0);
    REQUIRE(full.full);
    REQUIRE_FALSE(some.full);
    REQUIRE(full.offset.size() == size_t(p.y_elems()));
    REQUIRE(some.offset.size() == 4096);
    CHECK(some.offset[0] == 0);  // corner (0, 0, 0, 0)
    for (size_t i = 0; i < some.offset.size(); ++i) {
      const double a = some.value[i], b = full.value[size_t(some.offset[i])];
      CHECK(std::fabs(a - b) <= 1e-12 * (1 + std::fabs(b)));
    }
    // The float64 output itself, rounded to HALF, passes; one wrong element or a NaN fails.
    std::vector<double> y(size_t(p.y_span()));
    for (size_t i = 0; i < y.size(); ++i) y[i] = full.value[i];
    auto bytes = to_device_bytes(y, p.dtype);
    for (const bench::Reference* r : {&full, &some}) {
      const bench::RefCheck good = bench::check_reference(*r, bytes, p, "f16", false);
      CHECK(good.ok);
      CHECK(good.bad == 0);
      CHECK(good.err < 1e-3);
    }
    std::vector<double> off = y;
    off[size_t(some.offset[5])] += 0.25;  // a sampled element, so both checks see it
    const bench::RefCheck bad = bench::check_reference(full, to_device_bytes(off, p.dtype), p, "f16", false);
    CHECK_FALSE(bad.ok);
    CHECK(bad.bad == 1);
    CHECK_FALSE(bench::check_reference(some, to_device_bytes(off, p.dtype), p, "f16", false).ok);
    std::vector<double> nan = y;
    nan[0] = std::nan("");
    const bench::RefCheck nn = bench::check_reference(some, to_device_bytes(nan, p.dtype), p, "f16", false);
    CHECK_FALSE(nn.ok);
    CHECK(std::isinf(nn.err));
    CHECK_FALSE(bench::check_reference(full, to_device_bytes(nan, p.dtype), p, "f16", true).ok);  // norm-wise too
    CHECK(bench::check_reference(full, bytes, p, "f16", true).ok);
  }
}

TEST_CASE("jhdnn-bench verdict: the float64 reference decides when cuDNN is off it", "[bench][cpu]") {
  // Agreeing with cuDNN is fine either way; disagreeing fails unless cuDNN's own output failed the
  // float64 check, in which case the row is judged by the float64 check alone.
  CHECK(bench::cudnn_verdict(true, false) == "ok");
  CHECK(bench::cudnn_verdict(true, true) == "ok");
  CHECK(bench::cudnn_verdict(false, false) == "FAIL");
  CHECK(bench::cudnn_verdict(false, true) == "cudnn-off");
  CHECK_FALSE(bench::is_mismatch("ok", "cudnn-off"));
  CHECK(bench::is_mismatch("FAIL", "cudnn-off"));  // off the float64 reference: always a mismatch
  CHECK(bench::is_mismatch("ok", "FAIL"));
  CHECK(bench::is_mismatch("-", "FAIL"));  // time mode: no float64 check, cuDNN decides
  CHECK_FALSE(bench::is_mismatch("ok", "ok"));
  CHECK_FALSE(bench::is_mismatch("-", "-"));
}

// The library's own log of a real call (needs a GPU: jhdnnCreate). JHDNN_LOG is read once per
// process (core::config, with every other variable; it has no setter), so this case sets it
// before the process's first library call, on one thread; run alone (ctest runs each case in its
// own process).
TEST_CASE("JHDNN_LOG: a logged forward call replays as a jhdnn-bench command", "[bench][gpu]") {
  JHDNN_REQUIRE_GPU();
  const std::string path = "jhdnn_log_test.txt";
  std::remove(path.c_str());
  setenv("JHDNN_LOG", "1", 1);
  setenv("JHDNN_LOG_FILE", path.c_str(), 1);
  core::ConvProblem p = with_layout(parse_ok("mb2ic5ih7oc3kh3ph1sh2"), JHDNN_DATA_FLOAT, true);
  JhdnnHandle h;
  JhdnnConvDescs d(p);
  DeviceBuffer x(size_t(p.x_span()) * 4), w(size_t(p.w_span()) * 4), y(size_t(p.y_span()) * 4);
  const float one = 1, zero = 0;
  JHDNN_CHECK(jhdnnConvolutionForward(h.get(), &one, d.x, x.get(), d.w, w.get(), d.conv,
                                      JHDNN_CONVOLUTION_FWD_ALGO_DIRECT, nullptr, 0, &zero, d.y, y.get()));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::ifstream f(path);
  std::string line, cmd_line, chose;
  while (std::getline(f, line)) {
    if (line.find("jhdnnConvolutionForward: ") != std::string::npos) cmd_line = line;
    if (line.find("  chose ") != std::string::npos) chose = line;
  }
  INFO("log: " << cmd_line);
  REQUIRE(!cmd_line.empty());
  CHECK(chose.find("direct_") != std::string::npos);
  const auto words = shell_words(cmd_line.substr(cmd_line.find("jhdnn-bench")));
  bench::BenchOptions o;
  std::string err;
  REQUIRE(parse_cmd(words, &o, &err));
  REQUIRE(o.problems.size() == 1);
  CHECK(same_shape(o.problems[0].p, p));
  CHECK(o.configs[0].name() == "f32:nhwc");
}
