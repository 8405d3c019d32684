// The ordered solver list. Explicit (no static self-registration, which static linking drops);
// within one algorithm the expected-fastest solver comes first, because dispatch takes the first
// applicable one.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "conv/direct/direct.h"
#include "conv/implicit_gemm/implicit_gemm.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/solver.h"
#include "conv/tensorcore/tensorcore.h"
#include "conv/winograd/winograd.h"

namespace jhdnn::conv {

const std::vector<const ConvSolver*>& all_solvers() {
  // Leaked on purpose (never destroyed), like each solver object its *_solver() function returns: a
  // call made from another static object's destructor, at process exit, may still walk the list.
  static const auto& solvers = *new std::vector<const ConvSolver*>{
      &tensorcore_wgmma_solver(),  // sm_90 NHWC / KRSC, groups 1; the rest falls to tensorcore_mma
      &tensorcore_mma_solver(),  // refuses FMA_MATH and what the math type keeps off tensor cores
      &direct_tiled_solver(),
      &direct_naive_solver(),
      &implicit_gemm_solver(),
      &implicit_precomp_gemm_solver(),
      &gemm_ours_solver(),
      &gemm_cublas_solver(),
      &winograd_nonfused_2x2_solver(),
  };
  return solvers;
}

Status load_all_kernels(int device) {
  // Leaked on purpose, like the solver list: jhdnnCreate from a static destructor must not touch a
  // destroyed set or mutex.
  static std::mutex& mu = *new std::mutex;
  static auto& loaded = *new std::set<int>;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded.count(device)) return Status::success();
  for (const ConvSolver* s : all_solvers()) JHDNN_TRY(s->load_kernels());
  loaded.insert(device);
  return Status::success();
}

bool solver_enabled(const ConvSolver& s) {
  // Read on every call so a test or tool can change it at run time; the cost is a getenv and a scan
  // of the comma list for an exact name, without allocating (dispatch calls this per solver per call).
  const char* off = std::getenv("JHDNN_DISABLE");
  if (off == nullptr || *off == '\0') return true;
  const char* name = s.name();
  const size_t len = std::strlen(name);
  for (const char* item = off;;) {
    const char* end = std::strchr(item, ',');
    const size_t n = end != nullptr ? size_t(end - item) : std::strlen(item);
    if (n == len && std::strncmp(item, name, len) == 0) return false;
    if (end == nullptr) return true;
    item = end + 1;
  }
}

}  // namespace jhdnn::conv
