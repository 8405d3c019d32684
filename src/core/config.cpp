#include "core/config.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace jhdnn::core::config {

const char* const kIgemmTileNames[kIgemmTileCount] = {"128x128", "128x64", "64x64", "256x8"};

namespace {

constexpr int64_t kNotRead = -2;  // ws cap before the environment was read (never observed by readers)

// Everything the environment said, kept so the setters can restore it. Written once, inside
// call_once, and read only after it.
struct FromEnv {
  char disable[kMaxListChars + 1] = {};
  int igemm_tile = -1;
  int64_t ws_cap = 0;
  int64_t wino_chunk = 0;
  NchwStrategy nchw = NchwStrategy::kAuto;
  TcGemmCeiling tc = TcGemmCeiling::kAuto;
  char tc_bad[64] = {};
  TcEpilogue tc_epilogue = TcEpilogue::kTma;
  char tc_epilogue_bad[64] = {};
  TcTail tc_tail = TcTail::kOn;
  char tc_tail_bad[64] = {};
  SpdnnTile spdnn_tile = SpdnnTile::kBlock;
  char spdnn_tile_bad[64] = {};
  ResidentKernel resident = ResidentKernel::kDuo;
  char resident_bad[64] = {};
  SpmmPairs spmm_pairs = SpmmPairs::kDeep4;
  char spmm_pairs_bad[64] = {};
  int resident_blocks = kResidentBlocksAuto;
  char resident_blocks_bad[64] = {};
  bool log_on = false;
  char log_file[1024] = {};
  bool tf32 = true;
};

// The settings in force. Scalars are atomics (relaxed: each is one independent value); the lists
// are guarded by mu, with gen bumped inside the lock on every change.
struct State {
  FromEnv env;
  std::mutex mu;
  char disable[kMaxListChars + 1] = {};
  char force[kMaxListChars + 1] = {};
  std::atomic<uint64_t> gen{1};
  std::atomic<int> igemm_tile{-1};
  std::atomic<int64_t> ws_cap{kNotRead};
  std::atomic<int64_t> wino_chunk{0};
  std::atomic<int> nchw{0};
  std::atomic<int> tc{0};
  std::atomic<int> tc_epilogue{0};
  std::atomic<int> tc_tail{0};
  std::atomic<int> spdnn_tile{0};
  std::atomic<int> resident{0};
  std::atomic<int> spmm_pairs{0};
  std::atomic<int> resident_blocks{kResidentBlocksAuto};
};

// Leaked on purpose: a library call from another static object's destructor may still read it.
State& raw_state() {
  static State& s = *new State;
  return s;
}

int parse_igemm_tile(const char* v) {
  if (v == nullptr) return -1;
  for (int i = 0; i < kIgemmTileCount; ++i)
    if (std::strcmp(v, kIgemmTileNames[i]) == 0) return i;
  return -1;
}

// kInvalid for an unknown name; nullptr and "" are auto.
TcGemmCeiling parse_tc(const char* v) {
  if (v == nullptr || *v == '\0') return TcGemmCeiling::kAuto;
  static const char* const names[] = {"auto", "hopper", "wgmma", "mma"};
  for (int i = 0; i < 4; ++i) {
    const char* n = names[i];
    size_t j = 0;
    while (v[j] != '\0' && n[j] != '\0' && std::tolower(static_cast<unsigned char>(v[j])) == n[j]) ++j;
    if (v[j] == '\0' && n[j] == '\0') return TcGemmCeiling(i);
  }
  return TcGemmCeiling::kInvalid;
}

// Few-valued switches: nullptr and "" are the default (index 0), names[i] (exact) is i, anything
// else -1 (kInvalid).
template <int N>
int parse_switch(const char* v, const char* const (&names)[N]) {
  if (v == nullptr || *v == '\0') return 0;
  for (int i = 0; i < N; ++i)
    if (std::strcmp(v, names[i]) == 0) return i;
  return -1;
}
const char* const kEpilogueNames[3] = {"tma", "staged", "direct"};
const char* const kTailNames[2] = {"on", "off"};
const char* const kSpdnnTileNames[10] = {"auto",  "cta2",  "block", "single",   "list",
                                        "cta",   "cta2w", "late4", "late4all", "late4crowd"};  // index 0 = the default; = SpdnnTile
const char* const kResidentNames[9] = {"duo",  "quad",    "pair",   "bulk",   "packed",
                                      "vals", "valsfan", "vals4w", "vals4w8"};  // index 0 = the default; = ResidentKernel
const char* const kSpmmPairsNames[3] = {"deep4", "deep", "classic"};  // index 0 = the default; = SpmmPairs

// The setter of a few-valued switch: value nullptr restores the environment's env_value (which may
// be kInvalid, kept for the solver's message); a value that names neither setting is refused.
template <int N>
bool set_switch(std::atomic<int>& slot, int env_value, const char* value, const char* const (&names)[N]) {
  const int v = value == nullptr ? env_value : parse_switch(value, names);
  if (v < 0 && value != nullptr) return false;
  slot.store(v, std::memory_order_relaxed);
  return true;
}

// JHDNN_RESIDENT_BLOCKS: nullptr, "" and "auto" are kResidentBlocksAuto; a decimal 0..kResidentMaxBlocks is itself;
// anything else kResidentBlocksInvalid.
int parse_resident_blocks(const char* v) {
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return kResidentBlocksAuto;
  int b = 0;
  for (const char* c = v; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return kResidentBlocksInvalid;
    b = 10 * b + (*c - '0');
    if (b > kResidentMaxBlocks) return kResidentBlocksInvalid;
  }
  return b;
}

// Copies a list from the environment, cut at the last whole item that fits (with a warning): a cut
// inside a name could disable a different solver.
void copy_env_list(const char* name, const char* v, char* out) {
  if (v == nullptr) return;
  const size_t n = std::strlen(v);
  if (n <= kMaxListChars) {
    std::memcpy(out, v, n + 1);
    return;
  }
  size_t keep = kMaxListChars;
  while (keep > 0 && v[keep] != ',') --keep;
  std::memcpy(out, v, keep);
  out[keep] = '\0';
  std::fprintf(stderr, "jhdnn: %s is longer than %zu characters; only its first items are used\n", name,
               kMaxListChars);
}

void read_environment(State& s) {
  FromEnv& e = s.env;
  copy_env_list("JHDNN_DISABLE", std::getenv("JHDNN_DISABLE"), e.disable);
  e.igemm_tile = parse_igemm_tile(std::getenv("JHDNN_IGEMM_TILE"));
  if (const char* v = std::getenv("JHDNN_CONV_GEMM_WS_CAP"); v != nullptr && *v != '\0') {
    const long long cap = std::strtoll(v, nullptr, 10);
    e.ws_cap = cap > 0 ? int64_t(cap) : 0;
  }
  if (const char* v = std::getenv("JHDNN_WINOGRAD_CHUNK"); v != nullptr && *v != '\0') {
    const long long n = std::strtoll(v, nullptr, 10);
    e.wino_chunk = n > 0 ? int64_t(n) : 0;
  }
  if (const char* v = std::getenv("JHDNN_CONV_GEMM_NCHW"); v != nullptr) {
    if (std::strcmp(v, "per_image") == 0) e.nchw = NchwStrategy::kPerImage;
    else if (std::strcmp(v, "transpose") == 0) e.nchw = NchwStrategy::kTranspose;
  }
  const char* tc = std::getenv("JHDNN_TC_GEMM");
  e.tc = parse_tc(tc);
  if (e.tc == TcGemmCeiling::kInvalid) std::snprintf(e.tc_bad, sizeof e.tc_bad, "%s", tc);
  const char* epi = std::getenv("JHDNN_TC_EPILOGUE");
  e.tc_epilogue = TcEpilogue(parse_switch(epi, kEpilogueNames));
  if (e.tc_epilogue == TcEpilogue::kInvalid) std::snprintf(e.tc_epilogue_bad, sizeof e.tc_epilogue_bad, "%s", epi);
  const char* tail = std::getenv("JHDNN_TC_TAIL");
  e.tc_tail = TcTail(parse_switch(tail, kTailNames));
  if (e.tc_tail == TcTail::kInvalid) std::snprintf(e.tc_tail_bad, sizeof e.tc_tail_bad, "%s", tail);
  const char* sp = std::getenv("JHDNN_SPDNN_TILE");
  e.spdnn_tile = SpdnnTile(parse_switch(sp, kSpdnnTileNames));
  if (e.spdnn_tile == SpdnnTile::kInvalid) std::snprintf(e.spdnn_tile_bad, sizeof e.spdnn_tile_bad, "%s", sp);
  const char* resident = std::getenv("JHDNN_RESIDENT_KERNEL");
  e.resident = ResidentKernel(parse_switch(resident, kResidentNames));
  if (e.resident == ResidentKernel::kInvalid) std::snprintf(e.resident_bad, sizeof e.resident_bad, "%s", resident);
  const char* pairs = std::getenv("JHDNN_SPMM_PAIRS");
  e.spmm_pairs = SpmmPairs(parse_switch(pairs, kSpmmPairsNames));
  if (e.spmm_pairs == SpmmPairs::kInvalid) std::snprintf(e.spmm_pairs_bad, sizeof e.spmm_pairs_bad, "%s", pairs);
  const char* blocks = std::getenv("JHDNN_RESIDENT_BLOCKS");
  e.resident_blocks = parse_resident_blocks(blocks);
  if (e.resident_blocks == kResidentBlocksInvalid)
    std::snprintf(e.resident_blocks_bad, sizeof e.resident_blocks_bad, "%s", blocks);
  const char* log = std::getenv("JHDNN_LOG");
  e.log_on = log != nullptr && *log != '\0' && std::strcmp(log, "0") != 0;
  if (const char* f = std::getenv("JHDNN_LOG_FILE"); f != nullptr)
    std::snprintf(e.log_file, sizeof e.log_file, "%s", f);
  const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE");
  e.tf32 = !(tf32 != nullptr && std::strcmp(tf32, "0") == 0);

  std::memcpy(s.disable, e.disable, sizeof s.disable);
  s.igemm_tile.store(e.igemm_tile);
  s.ws_cap.store(e.ws_cap);
  s.wino_chunk.store(e.wino_chunk);
  s.nchw.store(int(e.nchw));
  s.tc.store(int(e.tc));
  s.tc_epilogue.store(int(e.tc_epilogue));
  s.tc_tail.store(int(e.tc_tail));
  s.spdnn_tile.store(int(e.spdnn_tile));
  s.resident.store(int(e.resident));
  s.spmm_pairs.store(int(e.spmm_pairs));
  s.resident_blocks.store(e.resident_blocks);
}

std::once_flag g_once;

// The state, the environment read into it on the first call.
State& state() {
  State& s = raw_state();
  std::call_once(g_once, [&s] { read_environment(s); });
  return s;
}

// Whether the comma list names `name` as a whole item.
bool listed(const char* list, const char* name) {
  if (*list == '\0') return false;
  const size_t len = std::strlen(name);
  for (const char* item = list;;) {
    const char* end = std::strchr(item, ',');
    const size_t n = end != nullptr ? size_t(end - item) : std::strlen(item);
    if (n == len && std::strncmp(item, name, len) == 0) return true;
    if (end == nullptr) return false;
    item = end + 1;
  }
}

bool set_list(char* dst, const char* list) {
  if (std::strlen(list) > kMaxListChars) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  std::strcpy(dst, list);
  s.gen.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

}  // namespace

uint64_t solver_lists_generation() { return state().gen.load(std::memory_order_acquire); }

void match_solver_names(const char* const* names, int n, bool* disabled, bool* forced) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (int i = 0; i < n; ++i) {
    disabled[i] = listed(s.disable, names[i]);
    forced[i] = listed(s.force, names[i]);
  }
}

bool set_disabled_solvers(const char* list) {
  State& s = state();
  return set_list(s.disable, list != nullptr ? list : s.env.disable);
}

bool set_forced_solvers(const char* list) { return set_list(state().force, list != nullptr ? list : ""); }

int igemm_tile() { return state().igemm_tile.load(std::memory_order_relaxed); }

bool set_igemm_tile(const char* tile) {
  State& s = state();
  int t;
  if (tile == nullptr) t = s.env.igemm_tile;
  else if (*tile == '\0') t = -1;
  else if ((t = parse_igemm_tile(tile)) < 0) return false;
  s.igemm_tile.store(t, std::memory_order_relaxed);
  return true;
}

int64_t conv_gemm_ws_cap() { return state().ws_cap.load(std::memory_order_relaxed); }

void set_conv_gemm_ws_cap(int64_t bytes) {
  State& s = state();
  s.ws_cap.store(bytes < 0 ? s.env.ws_cap : bytes, std::memory_order_relaxed);
}

int64_t winograd_chunk() { return state().wino_chunk.load(std::memory_order_relaxed); }

void set_winograd_chunk(int64_t images) {
  State& s = state();
  s.wino_chunk.store(images < 0 ? s.env.wino_chunk : images, std::memory_order_relaxed);
}

NchwStrategy conv_gemm_nchw() { return NchwStrategy(state().nchw.load(std::memory_order_relaxed)); }
void set_conv_gemm_nchw(NchwStrategy v) { state().nchw.store(int(v), std::memory_order_relaxed); }
void reset_conv_gemm_nchw() {
  State& s = state();
  s.nchw.store(int(s.env.nchw), std::memory_order_relaxed);
}

TcGemmCeiling tc_gemm_ceiling() { return TcGemmCeiling(state().tc.load(std::memory_order_relaxed)); }
const char* tc_gemm_bad_value() { return state().env.tc_bad; }

bool set_tc_gemm_ceiling(const char* name) {
  State& s = state();
  if (name == nullptr) {
    s.tc.store(int(s.env.tc), std::memory_order_relaxed);
    return true;
  }
  const TcGemmCeiling c = parse_tc(name);
  if (c == TcGemmCeiling::kInvalid) return false;
  s.tc.store(int(c), std::memory_order_relaxed);
  return true;
}

TcEpilogue tc_epilogue() { return TcEpilogue(state().tc_epilogue.load(std::memory_order_relaxed)); }
const char* tc_epilogue_bad_value() { return state().env.tc_epilogue_bad; }
TcTail tc_tail() { return TcTail(state().tc_tail.load(std::memory_order_relaxed)); }
const char* tc_tail_bad_value() { return state().env.tc_tail_bad; }

bool set_tc_epilogue(const char* value) {
  State& s = state();
  return set_switch(s.tc_epilogue, int(s.env.tc_epilogue), value, kEpilogueNames);
}

bool set_tc_tail(const char* value) {
  State& s = state();
  return set_switch(s.tc_tail, int(s.env.tc_tail), value, kTailNames);
}

SpdnnTile spdnn_tile() { return SpdnnTile(state().spdnn_tile.load(std::memory_order_relaxed)); }
const char* spdnn_tile_bad_value() { return state().env.spdnn_tile_bad; }
bool set_spdnn_tile(const char* value) {
  State& s = state();
  return set_switch(s.spdnn_tile, int(s.env.spdnn_tile), value, kSpdnnTileNames);
}

ResidentKernel resident_kernel() { return ResidentKernel(state().resident.load(std::memory_order_relaxed)); }
const char* resident_kernel_bad_value() { return state().env.resident_bad; }
bool set_resident_kernel(const char* value) {
  State& s = state();
  return set_switch(s.resident, int(s.env.resident), value, kResidentNames);
}

SpmmPairs spmm_pairs() { return SpmmPairs(state().spmm_pairs.load(std::memory_order_relaxed)); }
const char* spmm_pairs_bad_value() { return state().env.spmm_pairs_bad; }
bool set_spmm_pairs(const char* value) {
  State& s = state();
  return set_switch(s.spmm_pairs, int(s.env.spmm_pairs), value, kSpmmPairsNames);
}

int resident_blocks() { return state().resident_blocks.load(std::memory_order_relaxed); }
const char* resident_blocks_bad_value() { return state().env.resident_blocks_bad; }
bool set_resident_blocks(const char* value) {
  State& s = state();
  const int b = value == nullptr ? s.env.resident_blocks : parse_resident_blocks(value);
  if (b == kResidentBlocksInvalid && value != nullptr) return false;
  s.resident_blocks.store(b, std::memory_order_relaxed);
  return true;
}

bool log_on() { return state().env.log_on; }
const char* log_file() { return state().env.log_file; }
bool tf32_allowed() { return state().env.tf32; }

void reset_to_environment() {
  set_disabled_solvers(nullptr);
  set_forced_solvers(nullptr);
  set_igemm_tile(nullptr);
  set_conv_gemm_ws_cap(-1);
  set_winograd_chunk(-1);
  reset_conv_gemm_nchw();
  set_tc_gemm_ceiling(nullptr);
  set_tc_epilogue(nullptr);
  set_tc_tail(nullptr);
  set_spdnn_tile(nullptr);
  set_resident_kernel(nullptr);
  set_spmm_pairs(nullptr);
  set_resident_blocks(nullptr);
}

}  // namespace jhdnn::core::config
