// The ordered solver list. Explicit (no static self-registration, which static linking drops);
// within one algorithm the expected-fastest solver comes first, because dispatch takes the first
// applicable one.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "conv/direct/direct.h"
#include "conv/implicit_gemm/implicit_gemm.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/solver.h"
#include "conv/tensorcore/tensorcore.h"

namespace jhdnn::conv {

const std::vector<const ConvSolver*>& all_solvers() {
  static const std::vector<const ConvSolver*> solvers = {
      &tensorcore_wgmma_solver(),  // sm_90 NHWC / KRSC, groups 1; the rest falls to tensorcore_mma
      &tensorcore_mma_solver(),  // refuses FMA_MATH and what the math type keeps off tensor cores
      &direct_tiled_solver(),
      &direct_naive_solver(),
      &implicit_gemm_solver(),
      &implicit_precomp_gemm_solver(),
      &gemm_ours_solver(),
      &gemm_cublas_solver(),
  };
  return solvers;
}

Status load_all_kernels(int device) {
  static std::mutex mu;
  static std::set<int> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded.count(device)) return Status::success();
  for (const ConvSolver* s : all_solvers()) JHDNN_TRY(s->load_kernels());
  loaded.insert(device);
  return Status::success();
}

bool solver_enabled(const ConvSolver& s) {
  // Read on every call so a test or tool can change it at run time; the cost is a getenv.
  const char* off = std::getenv("JHDNN_DISABLE");
  if (off == nullptr || *off == '\0') return true;
  const std::string list = std::string(",") + off + ",";
  return list.find(std::string(",") + s.name() + ",") == std::string::npos;
}

}  // namespace jhdnn::conv
