// jhdnn-bench's command line: parsed into BenchOptions without touching the GPU, so the parser is
// tested on machines without one (tests/test_bench_cli.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/problems.h"

namespace jhdnn::bench {

struct Config {
  std::string dt;  // f32 (FMA math), tf32 (FLOAT data, tensor-op math), f16, bf16, f64
  bool nhwc = false;
  std::string name() const { return dt + ":" + (nhwc ? "nhwc" : "nchw"); }
};

struct BenchOptions {
  std::string dir = "fwd";
  std::vector<Config> configs;       // filled with the defaults when none given
  std::vector<std::string> algos;    // empty: all; else solver names / algorithm names / numbers
  std::string mode = "both";         // verify | time | both
  std::string cudnn = "all";         // all | same | none: which cuDNN algorithms run
  bool conv_mode = false;            // true: CONVOLUTION (flipped filter); false: CROSS_CORRELATION
  int reps = 20;                     // timing samples (medians); at least 20 unless the budget says less
  double budget_ms = 200;            // per algorithm and timing method: past it, fewer samples (>= 5)
  int mb = 0;                        // > 0: overrides every problem's batch
  std::string suite;                 // suite name or file ("" with no problems: default)
  std::vector<test::NamedProblem> problems;  // given on the command line
  std::string filter;                // substring of the problem name
  std::string csv, json;
  double ws_limit_gib = 8;           // algorithms needing more workspace are skipped
  bool help = false;
};

// Parses argv[1..]. False with *err set on bad input (unknown option, bad value, bad problem
// string, unknown suite name; a suite file is loaded later, by resolve_problems).
bool parse_bench_args(int argc, const char* const* argv, BenchOptions* o, std::string* err);

// The problems to run: the command line's, else the suite's (--suite, default "default"), with
// --mb applied and --filter kept. Throws std::runtime_error for a bad suite file.
std::vector<test::NamedProblem> resolve_problems(const BenchOptions& o);

// True when the --algo list selects this jhDNN solver (by its name, its algorithm's name or number).
bool selects_solver(const BenchOptions& o, const std::string& solver_name, int algo);
// True when cuDNN algorithm `algo` should run: --cudnn=all runs every one, same only those of the
// selected solvers' algorithms (or the --algo list's algorithms), none none.
bool selects_cudnn(const BenchOptions& o, int algo, const std::vector<int>& selected_solver_algos);

std::string usage();

}  // namespace jhdnn::bench
