// The ordered solver list. Explicit (no static self-registration, which static linking drops);
// within one algorithm the expected-fastest solver comes first, because dispatch takes the first
// applicable one.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>

#include "conv/depthwise/depthwise.h"
#include "conv/direct/direct.h"
#include "conv/implicit_gemm/implicit_gemm.h"
#include "conv/gemm/conv_gemm.h"
#include "conv/solver.h"
#include "conv/tensorcore/tensorcore.h"
#include "core/config.h"
#include "conv/winograd/winograd.h"

namespace jhdnn::conv {

const std::vector<const ConvSolver*>& all_solvers() {
  // Leaked on purpose (never destroyed), like each solver object its *_solver() function returns: a
  // call made from another static object's destructor, at process exit, may still walk the list.
  static const auto& solvers = *new std::vector<const ConvSolver*>{
      &tensorcore_wgmma_solver(),  // sm_90 NHWC / KRSC, groups 1; the rest falls to tensorcore_mma
      &tensorcore_wgmma_smallc_solver(),  // sm_90, S*C <= 128 bytes (C = 3 first layers), with workspace
      &depthwise_solver(),  // groups == C on CUDA cores (IMPLICIT_PRECOMP_GEMM, as cuDNN reports it); before tensorcore_mma
      &tensorcore_mma_solver(),  // refuses FMA_MATH and what the math type keeps off tensor cores
      &direct_tiled_solver(),
      &direct_naive_solver(),
      &implicit_gemm_solver(),
      &implicit_precomp_gemm_solver(),
      &gemm_ours_solver(),
      &gemm_cublas_solver(),
      &winograd_nonfused_4x4_solver(),  // faster than 2x2 on every measured 3x3 layer but the 7x7 maps (winograd/README.md)
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

namespace {

constexpr const char* kDisabledReason = "disabled by JHDNN_DISABLE";
constexpr const char* kNotForcedReason = "another solver of this algorithm is forced";
constexpr int kMaxCached = 64;  // solvers covered by the per-thread masks

// The solver lists reduced to two bit masks over all_solvers(), per thread, rebuilt when the
// configuration's list generation changes (a setter ran): the common call reads one atomic and
// two bits. Plain thread-local integers: no locking, no allocation.
struct ListMasks {
  uint64_t gen = 0;  // the configuration's generation starts at 1
  uint64_t disabled = 0;
  uint64_t not_forced = 0;  // another solver of the same algorithm is forced
};

void rebuild(ListMasks& m, uint64_t gen) {
  const auto& solvers = all_solvers();
  const int n = int(std::min<size_t>(solvers.size(), kMaxCached));
  const char* names[kMaxCached];
  bool disabled[kMaxCached], forced[kMaxCached];
  for (int i = 0; i < n; ++i) names[i] = solvers[size_t(i)]->name();
  core::config::match_solver_names(names, n, disabled, forced);
  m = ListMasks{gen, 0, 0};
  for (int i = 0; i < n; ++i) {
    if (disabled[i]) m.disabled |= uint64_t(1) << i;
    bool other_forced = false;  // a forced solver of the same algorithm, other than this one
    for (int j = 0; j < n; ++j)
      other_forced |= forced[j] && !forced[i] && solvers[size_t(j)]->algo() == solvers[size_t(i)]->algo();
    if (other_forced) m.not_forced |= uint64_t(1) << i;
  }
}

// The same answer for a solver outside the masks (past kMaxCached, or not in all_solvers()):
// slower (the lists' mutex and a scan of every solver), still without allocating.
const char* uncached_reason(const ConvSolver& s) {
  const char* name = s.name();
  bool disabled = false, forced = false;
  core::config::match_solver_names(&name, 1, &disabled, &forced);
  if (disabled) return kDisabledReason;
  if (forced) return nullptr;
  for (const ConvSolver* o : all_solvers()) {
    if (o->algo() != s.algo()) continue;
    const char* on = o->name();
    bool od = false, of = false;
    core::config::match_solver_names(&on, 1, &od, &of);
    if (of) return kNotForcedReason;
  }
  return nullptr;
}

}  // namespace

const char* solver_disabled_reason(const ConvSolver& s) {
  thread_local ListMasks masks;
  const uint64_t gen = core::config::solver_lists_generation();
  if (masks.gen != gen) rebuild(masks, gen);
  const auto& solvers = all_solvers();
  const int n = int(std::min<size_t>(solvers.size(), kMaxCached));
  for (int i = 0; i < n; ++i) {
    if (solvers[size_t(i)] != &s) continue;
    if ((masks.disabled >> i) & 1) return kDisabledReason;
    if ((masks.not_forced >> i) & 1) return kNotForcedReason;
    return nullptr;
  }
  return uncached_reason(s);
}

bool solver_enabled(const ConvSolver& s) { return solver_disabled_reason(s) == nullptr; }

}  // namespace jhdnn::conv
