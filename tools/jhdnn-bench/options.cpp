#include "options.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "common/suites.h"
#include "core/problem_string.h"
#include "core/status.h"

namespace jhdnn::bench {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t e = s.find(sep, at);
    const std::string part = s.substr(at, e == std::string::npos ? std::string::npos : e - at);
    if (!part.empty()) out.push_back(part);
    if (e == std::string::npos) break;
    at = e + 1;
  }
  return out;
}

std::string upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool valid_dt(const std::string& d) { return d == "f32" || d == "tf32" || d == "f16" || d == "bf16" || d == "f64"; }

bool to_number(const std::string& s, double lo, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo)) return false;
  *out = v;
  return true;
}

// The algorithm number an --algo entry names (IMPLICIT_GEMM / implicit_gemm / 0..7), or -1.
int algo_of_entry(const std::string& e) {
  if (e.size() == 1 && std::isdigit(static_cast<unsigned char>(e[0])) && e[0] < '0' + JHDNN_CONVOLUTION_FWD_ALGO_COUNT)
    return e[0] - '0';
  const std::string u = upper(e);
  for (int a = 0; a < JHDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a)
    if (u == core::algo_name(jhdnnConvolutionFwdAlgo_t(a))) return a;
  return -1;
}

}  // namespace

std::string usage() {
  return R"(usage: jhdnn-bench [options] [problem ...]
Every jhDNN solver and every cuDNN algorithm on each problem, verified and timed side by side.

problems   benchdnn-style strings, e.g. mb32ic64ih56oc64oh56kh3ph1 or 'g32mb8ic256ih28oc256oh28kh3ph1n"grp"'
           (fields g mb ic id ih iw oc od oh ow kd kh kw sd sh sw pd ph pw dd dh dw n"name"; dilation as
           in cuDNN: dh1 = dense). Without problems: the --suite.
--suite=S, --batch=S   default | resnet50 | vgg16 | mobilenet | odd | a suite file (one problem per
           line, # comments), e.g. bench/suites/public-nets.txt            [default]
--dir=fwd              direction (fwd; bwd_d / bwd_w are not implemented yet)
--dt=LIST              f32,tf32,f16,bf16,f64 (f32: FMA math on both sides; tf32: FLOAT data with
                       tensor-op math; f16/bf16: tensor-op math)
--layout=LIST          nchw,nhwc (with --dt: every pair; --dt alone: nchw for f32/tf32/f64, nhwc for f16/bf16)
--cfg=LIST             explicit pairs, e.g. f32:nchw,f16:nhwc   [default f32:nchw,f16:nhwc,bf16:nhwc]
--algo=LIST            all | jhDNN solver names | algorithm names (IMPLICIT_GEMM, ...) or numbers 0-7
--cudnn=all|same|none  cuDNN algorithms to run: all, those of the selected algorithms, none [all]
--mode=verify|time|both   [both]; verify exits 1 on any jhDNN result beyond its tolerance
--reps=N               timing samples, median taken [20]
--budget-ms=MS         time per algorithm and timing method before fewer (>= 5) samples are taken [200]
--mb=N                 override the batch of every problem
--filter=TEXT          only problems whose name contains TEXT
--conv-mode=convolution|cross-correlation   [cross-correlation]
--ws-limit-gib=G       skip algorithms that need more workspace [8]
--csv=FILE, --json=FILE   write every row
Environment: JHDNN_TEST_SEED replays the inputs; JHDNN_DISABLE=a,b switches jhDNN solvers off;
JHDNN_LOG=1 logs each jhDNN API call as a jhdnn-bench command; JHDNN_TC_EPILOGUE=tma|staged|direct
picks tensorcore_wgmma's epilogue [tma]; JHDNN_TC_TAIL=on|off lets it split the last partial
wave's tiles (split-K tail) [on].
Exit: 0 ok, 1 a mismatch or failure, 2 bad command line, 77 no usable GPU.
)";
}

bool parse_bench_args(int argc, const char* const* argv, BenchOptions* o, std::string* err) {
  std::vector<std::string> dts, layouts;
  bool have_cfg = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], key, val;
    if (a == "-h" || a == "--help") {
      o->help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) {  // a problem string
      test::NamedProblem np;
      const core::Status st = core::parse_problem_string(a, &np.p, &np.name);
      if (!st.ok()) {
        *err = st.message;
        return false;
      }
      if (np.name.empty()) np.name = "cli" + std::to_string(o->problems.size());
      o->problems.push_back(np);
      continue;
    }
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      key = a.substr(0, eq), val = a.substr(eq + 1);
    } else {
      key = a;
      if (i + 1 >= argc) {
        *err = "option " + key + " needs a value";
        return false;
      }
      val = argv[++i];
    }
    const auto bad = [&](const std::string& why) {
      *err = "bad value '" + val + "' for " + key + ": " + why;
      return false;
    };
    double num = 0;
    if (key == "--suite" || key == "--batch") {
      o->suite = val;
    } else if (key == "--dir") {
      if (val != "fwd" && val != "bwd_d" && val != "bwd_w") return bad("fwd, bwd_d or bwd_w");
      o->dir = val;
    } else if (key == "--dt") {
      dts = split(val, ',');
      for (const auto& d : dts)
        if (!valid_dt(d)) return bad("data types are f32, tf32, f16, bf16, f64");
      if (dts.empty()) return bad("empty list");
    } else if (key == "--layout") {
      layouts = split(val, ',');
      for (const auto& l : layouts)
        if (l != "nchw" && l != "nhwc") return bad("layouts are nchw, nhwc");
      if (layouts.empty()) return bad("empty list");
    } else if (key == "--cfg") {
      have_cfg = true;
      for (const auto& c : split(val, ',')) {
        const size_t colon = c.find(':');
        const std::string d = c.substr(0, colon), l = colon == std::string::npos ? "" : c.substr(colon + 1);
        if (!valid_dt(d) || (l != "nchw" && l != "nhwc")) return bad("entries are <f32|tf32|f16|bf16|f64>:<nchw|nhwc>");
        o->configs.push_back({d, l == "nhwc"});
      }
      if (o->configs.empty()) return bad("empty list");
    } else if (key == "--algo") {
      o->algos.clear();
      if (val != "all") o->algos = split(val, ',');
    } else if (key == "--cudnn") {
      if (val != "all" && val != "same" && val != "none") return bad("all, same or none");
      o->cudnn = val;
    } else if (key == "--mode") {
      if (val != "verify" && val != "time" && val != "both") return bad("verify, time or both");
      o->mode = val;
    } else if (key == "--reps") {
      if (!to_number(val, 1, &num) || num != int(num)) return bad("a positive integer");
      o->reps = int(num);
    } else if (key == "--budget-ms") {
      if (!to_number(val, 0, &num)) return bad("a number >= 0");
      o->budget_ms = num;
    } else if (key == "--mb") {
      if (!to_number(val, 1, &num) || num != int(num)) return bad("a positive integer");
      o->mb = int(num);
    } else if (key == "--filter") {
      o->filter = val;
    } else if (key == "--conv-mode") {
      if (val != "convolution" && val != "cross-correlation") return bad("convolution or cross-correlation");
      o->conv_mode = val == "convolution";
    } else if (key == "--ws-limit-gib") {
      if (!to_number(val, 0, &num)) return bad("a number >= 0");
      o->ws_limit_gib = num;
    } else if (key == "--csv") {
      o->csv = val;
    } else if (key == "--json") {
      o->json = val;
    } else {
      *err = "unknown option " + key;
      return false;
    }
  }
  if (have_cfg && (!dts.empty() || !layouts.empty())) {
    *err = "--cfg cannot be combined with --dt / --layout";
    return false;
  }
  if (!have_cfg) {
    if (dts.empty() && layouts.empty()) {
      o->configs = {{"f32", false}, {"f16", true}, {"bf16", true}};
    } else {
      if (dts.empty()) dts = {"f32", "f16", "bf16"};
      for (const auto& d : dts) {
        if (layouts.empty()) {
          o->configs.push_back({d, d == "f16" || d == "bf16"});
        } else {
          for (const auto& l : layouts) o->configs.push_back({d, l == "nhwc"});
        }
      }
    }
  }
  if (!o->suite.empty() && !o->problems.empty()) {
    *err = "give problems or --suite, not both";
    return false;
  }
  return true;
}

std::vector<test::NamedProblem> resolve_problems(const BenchOptions& o) {
  std::vector<test::NamedProblem> all =
      o.problems.empty() ? test::named_suite(o.suite.empty() ? "default" : o.suite, o.mb) : o.problems;
  std::vector<test::NamedProblem> out;
  for (auto& np : all) {
    if (!o.filter.empty() && np.name.find(o.filter) == std::string::npos) continue;
    if (o.mb > 0 && np.p.N != o.mb) {
      np.p.N = o.mb;
      np.p = test::with_layout(np.p, np.p.dtype, false);  // recomputes the packed strides
    }
    np.p.mode = o.conv_mode ? JHDNN_CONVOLUTION : JHDNN_CROSS_CORRELATION;
    out.push_back(np);
  }
  return out;
}

bool selects_solver(const BenchOptions& o, const std::string& solver_name, int algo) {
  if (o.algos.empty()) return true;
  for (const auto& e : o.algos)
    if (e == solver_name || algo_of_entry(e) == algo) return true;
  return false;
}

bool selects_cudnn(const BenchOptions& o, int algo, const std::vector<int>& selected_solver_algos) {
  if (o.cudnn == "none") return false;
  if (o.cudnn == "all" || o.algos.empty()) return true;
  for (const auto& e : o.algos)
    if (algo_of_entry(e) == algo) return true;
  return std::find(selected_solver_algos.begin(), selected_solver_algos.end(), algo) != selected_solver_algos.end();
}

}  // namespace jhdnn::bench
