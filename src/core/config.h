// The library's process-wide configuration: every environment variable jhDNN reads, read once
// (std::call_once, at the first use of any setting), plus internal thread-safe setters for tests and
// tools. The table of variables is in docs/api.md ("Environment variables").
//
// Why read once: setenv while another thread calls getenv is a data race, and a getenv + parse per
// call sits inside every timed API call. Like NVIDIA's libraries, changing a variable after the
// first library call has no effect; tests and tools change settings through the setters below.
//
// Reading a setting never allocates and never takes a lock: the scalars are atomics, and the two
// solver lists are read under a mutex only when their generation counter has changed (callers cache
// what they derive from them, see conv::solver_enabled).
#pragma once

#include <cstddef>
#include <cstdint>

namespace jhdnn::core::config {

// ---------------------------------------------------------------- solver lists
// JHDNN_DISABLE: a comma list of solver names switched off. The force list (no environment
// variable; tools and tests only) names solvers that are the only ones enabled within their
// algorithm. Names match whole items only; empty items are ignored. Lists longer than
// kMaxListChars are refused by the setters (and truncated, with a warning on stderr, from the
// environment).
constexpr size_t kMaxListChars = 1023;

// Bumped by every change of either list (starts at 1, so 0 never matches a cached value).
uint64_t solver_lists_generation();
// For each of n names: whether the disable list and the force list name it. Takes the lists' mutex
// once; no allocation.
void match_solver_names(const char* const* names, int n, bool* disabled, bool* forced);

// Setters: a comma list; nullptr restores the value read from the environment (the force list: none).
// False (and no change) for a list longer than kMaxListChars.
bool set_disabled_solvers(const char* list);
bool set_forced_solvers(const char* list);

// ---------------------------------------------------------------- implicit GEMM tile shape
// JHDNN_IGEMM_TILE = 128x128 | 128x64 | 64x64 | 256x8: one tile shape for every run of both
// IMPLICIT_GEMM solvers (the shapes' order is conv::igemm's Pick). Any other value is ignored.
constexpr int kIgemmTileCount = 4;
extern const char* const kIgemmTileNames[kIgemmTileCount];
// Index into kIgemmTileNames, or -1 for the heuristic.
int igemm_tile();
// A name of kIgemmTileNames; "" = the heuristic; nullptr = back to the environment's value. False
// (and no change) for any other name.
bool set_igemm_tile(const char* tile);

// ---------------------------------------------------------------- GEMM convolution
// JHDNN_CONV_GEMM_WS_CAP: a positive byte count below the 1 GiB default lowers the cap of the
// im2col workspace (forces the chunked path on small problems); 0 = not set.
int64_t conv_gemm_ws_cap();
// bytes > 0 sets it; 0 = not set (the solver's default); -1 = back to the environment's value.
void set_conv_gemm_ws_cap(int64_t bytes);

// JHDNN_CONV_GEMM_NCHW = per_image | transpose forces the strategy for NCHW y; else chosen by tile fill.
enum class NchwStrategy : int { kAuto = 0, kPerImage = 1, kTranspose = 2 };
NchwStrategy conv_gemm_nchw();
void set_conv_gemm_nchw(NchwStrategy s);
void reset_conv_gemm_nchw();  // back to the environment's value

// ---------------------------------------------------------------- Winograd chunks
// JHDNN_WINOGRAD_CHUNK: a positive image count caps the images per chunk of the non-fused Winograd
// solvers (conv/winograd/chunk.h); 0 = not set (the whole batch, as far as the workspace cap allows).
int64_t winograd_chunk();
// images > 0 sets it; 0 = not set; -1 = back to the environment's value.
void set_winograd_chunk(int64_t images);

// ---------------------------------------------------------------- tensor-core GEMM ceiling
// JHDNN_TC_GEMM = auto | hopper | wgmma | mma (any case): the first kernel the tensor-core GEMM may
// try (gemm::tensorcore::TcKernel has the same values). An unknown value is kept as kInvalid and
// every tensor-core GEMM call then fails with BAD_PARAM naming it (tc_gemm_bad_value()).
enum class TcGemmCeiling : int { kInvalid = -1, kAuto = 0, kHopper = 1, kWgmma = 2, kMma = 3 };
TcGemmCeiling tc_gemm_ceiling();
const char* tc_gemm_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
// A name as above (any case), or nullptr = back to the environment's value. False (and no change)
// for any other name.
bool set_tc_gemm_ceiling(const char* name);

// ---------------------------------------------------------------- tensor-core convolution switches
// JHDNN_TC_EPILOGUE = tma | staged | direct (exact case; unset or "" = tma): the epilogue of
// tensorcore_wgmma runs that do not force one (tma: staged, with TMA bulk stores where they apply). JHDNN_TC_TAIL = on | off (unset or "" = on): whether
// tensorcore_wgmma may split the last partial wave of tiles (split-K tail). An unknown value is
// kept as kInvalid and every run that would use the setting fails with BAD_PARAM naming it.
enum class TcEpilogue : int { kInvalid = -1, kTma = 0, kStaged = 1, kDirect = 2 };
enum class TcTail : int { kInvalid = -1, kOn = 0, kOff = 1 };
TcEpilogue tc_epilogue();
const char* tc_epilogue_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
TcTail tc_tail();
const char* tc_tail_bad_value();
// A value as above, or nullptr = back to the environment's value. False (and no change) for any
// other value.
bool set_tc_epilogue(const char* value);
bool set_tc_tail(const char* value);

// ---------------------------------------------------------------- sparse DNN layer tile
// JHDNN_SPDNN_TILE = auto | cta2 | block | single | list | cta | cta2w | late4 | late4all | late4crowd (exact case; unset or "" = auto): how the
// fused sparse-DNN layers (jhdnnSparseDnnLayerForwardCompact, jhdnnSparseDnnLayersForwardCompact) run
// width-32 rows (src/sparse/README.md, "Crowded layers: a SASS count" and the tile sections after it).
// All give bitwise the same results:
// - auto (the default since session 15): cta2w at every width since session 17, late4 for 4096 < rows <= 16384
//   since session 21 and for all rows > 4096 since session 23, late4all there since session 24, late4crowd up to
//   4096 rows since session 25
//   (sparse/cta_tile.h, spdnn_auto_tile; before: cta2
//   up to 4096, then 16384 rows, block above); the multi-layer kernel runs block steps.
//   Measured at b8d0970 (H200, spdnn_infer, exact): with its pipelined block steps cta2 is faster at
//   N = 1024, 4096 and 16384 (16384 L = 480: 69.47 vs 70.74 ms; before them block won there, 71.4 vs 79.2,
//   and the bound was 4096 rows); at 65536 rows (04b5614, L = 120, one run each, not validated) cta2 129.2 vs
//   block 130.8 ms, inside the spread. cta2w (session 17, spdnn_infer, graph path): N = 16384 L = 120 / 480
//   29.21 / 63.03 ms against cta2's 30.88 / 70.68 (exact); N = 1024 2.20 / 5.82-5.87 against 2.23 / 5.91;
//   N = 4096 6.61 / 13.82 against 6.99 / 15.43; N = 65536 L = 120 120.5 (exact at 120.9) against block's 130.8;
// - cta2 = the CTA-level GEMM tile of the per-layer fused kernel (src/sparse/cta_tile.cuh) with a 3-stage
//   copy ring per half, register double-buffered fragments and 2 blocks per SM; layers with fewer than
//   SMs / 2 tiles of 128 images, other rows and the multi-layer kernel run block steps (README "CTA tile,
//   2 blocks per SM (cta2)");
// - block = up to 8 outputs that share the held input list at once (independent chains; the default
//   until session 15);
// - single = one output at a time (A/B only);
// - list = the list-blocked tile in the per-layer fused kernel (16 outputs x 32 images of one input list
//   from shared memory; measured at adbf1f5: faster in layers 1-2, slower from layer 3 on; A/B only);
// - cta = the CTA tile with 2 stages per half and 3 blocks per SM (80 registers, spills; A/B only);
// - cta2w = cta2 with the late layers (below the CTA tile's 128-image tiles) in 64-image items, two images per
//   lane in the pipelined block steps (src/sparse/README.md "Two images per lane (cta2w)"; auto's tile up to 4096
//   rows).
// - late4 = cta2 with the late layers in 128-image items, a lane holding 16 rows (one input list) x 4 images
//   and streaming the inputs (src/sparse/README.md "Late4"; late4_tile.cuh; auto's tile above 4096 rows from session 21
//   (4096 < rows <= 16384; all of them since session 23) to session 23; late4all since).
// - late4all = late4 in every layer, the crowded ones too (session 24: where late4 runs cta2's CTA tile; auto's
//   tile above 4096 rows since then).
// - late4crowd = late4's items in the crowded layers, cta2w's in the late ones (session 25; auto's tile up to
//   4096 rows since then: late4's crowded items won there, its late items lost at 1024 rows).
// An unknown value is kept as kInvalid and every such call that has work (maxActive > 0, and layerCount > 0
// for the multi-layer call; with none the call returns at once) fails with BAD_PARAM naming it.
enum class SpdnnTile : int {
  kInvalid = -1, kAuto = 0, kCta2 = 1, kBlock = 2, kSingle = 3, kList = 4, kCta = 5, kCta2w = 6, kLate4 = 7,
  kLate4All = 8, kLate4Crowd = 9
};
SpdnnTile spdnn_tile();
const char* spdnn_tile_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
// "auto" / "cta2" / "block" / "single" / "list" / "cta" / "cta2w" / "late4" / "late4all" / "late4crowd", or nullptr = back to the environment's value. False (and no
// change) otherwise.
bool set_spdnn_tile(const char* value);
// ---------------------------------------------------------------- resident SpDNN kernel (A/B)
// JHDNN_RESIDENT_KERNEL = duo | quad | pair | bulk | packed | vals | valsfan | vals4w | vals4w8 (exact case; unset or "" = duo): the kernel of
// jhdnnSparseDnnLayersForwardResident (src/sparse/dnn_resident.cu). bulk copies its packed weight
// chunks with one TMA bulk copy per chunk, packed with 16-byte cp.async by every thread, 8 warps each;
// pair is the bulk kernel with 16 warps (512 threads), two chunks at once, 16 rows per warp. Same
// results; on the H200 (N = 1024, 60000 images, L = 1920) pair 13.5 ms, bulk 14.7 ms (trial 8ca56ea),
// bulk faster than packed (15.2 vs 16.9 ms at 3f71f09). quad (session 13) is pair's CTA with one row
// and 4 images per lane, at S = 8 (pair where a call's slices need S < 8): 11.9 ms against pair's 13.46
// in the same run (d568d49). duo (the default since session 14) is the same 16-warp CTA with two rows
// and 4 images per lane, four chunks per iteration from a ring of 8 (quad where that ring does not fit,
// pair where S < 8): 9.38-9.42 ms against quad's 11.75-11.80 in the same run (trial ba5fa93, ~4.1 us
// per late layer against 5.35). quad, pair, bulk and packed are kept for A/B runs. An unknown value is
// kept as kInvalid and every resident call fails with BAD_PARAM naming it.
// vals (session 16) is the S = 4 kernel on the vals-pack layout (weight values stored once per run of
// equal values): duo already runs it where S = 4 does not fit the other rings (n = 4096); =vals runs it
// wherever it fits (slices of 0 / 1..4 images), else as duo.
// valsfan (session 18) is vals with the ring's copies issued by lane 0 of warps 0..7 (one chunk
// each) instead of thread 0 alone (8 in a row): the same chunks after the same barrier, same results;
// it runs where vals would under =vals, else as duo. The default (duo) runs valsfan, not vals, where
// S = 4 does not fit the list-pack rings (N = 4096 L = 1920 on the H200: 32.7 against 38.7 ms);
// =vals runs the thread-0 schedule for A/B.
// vals4w (session 20) is the S = 4 kernel on the same vals-pack copies with a lane of 4 rows x 4 images,
// each of its 16 warps a whole chunk, and a ring of up to 32 slots that each warp refills itself (no
// barrier inside a layer); it runs where its ring of >= 16 slots fits and a layer has <= 32 chunks
// (n <= 4096), else as valsfan. Same results.
// vals4w8 (session 33) is vals4w with 8 warps and two CTAs per SM (4-image slices; a layer of <= 16 chunks, n <= 2048):
// the default's first choice with sliceImages 0 at n <= 1024 (before duo and quad); =vals4w8 runs it wherever it
// fits, else as duo.
enum class ResidentKernel : int { kInvalid = -1, kDuo = 0, kQuad = 1, kPair = 2, kBulk = 3, kPacked = 4, kVals = 5,
                                  kValsFan = 6, kVals4w = 7, kVals4w8 = 8 };
ResidentKernel resident_kernel();
const char* resident_kernel_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
// A value as above, or nullptr = back to the environment's value. False (and no change) for any
// other value.
bool set_resident_kernel(const char* value);

// ---------------------------------------------------------------- resident SpDNN schedule (A/B)
// JHDNN_RESIDENT_BLOCKS = auto | 0 | B (a decimal 1..kResidentMaxBlocks; unset or "" = auto): how vals4w / vals4w8
// spread a resident call's slices over the CTAs (src/sparse/README.md, "Vals4w: slices handed between CTAs").
// 0 = one CTA per slice for the whole call (the schedule before session 40); B >= 1 = the call's layers in blocks of
// ceil(layers / min(B, layers)) layers, each (slice, block) an item that the CTAs take in turn, a slice's features
// parked in device memory between its blocks; auto = where maxActive's slices outnumber the CTAs that fit at once,
// the kernel's choice from the real slice count by the model (resident_vals4w_block_layers, sparse.h), else 0.
// Same results. An unknown value is kept
// as kResidentBlocksInvalid and every resident call then fails with BAD_PARAM naming it.
constexpr int kResidentBlocksAuto = -1;
constexpr int kResidentBlocksInvalid = -2;
constexpr int kResidentMaxBlocks = 1024;  // = JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS: a block of at least one layer
int resident_blocks();
const char* resident_blocks_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
// "auto" / "" (auto), a decimal 0..kResidentMaxBlocks, or nullptr = back to the environment's value. False (and no
// change) otherwise.
bool set_resident_blocks(const char* value);

// ---------------------------------------------------------------- SpMM NNZ_PAIRS kernel
// JHDNN_SPMM_PAIRS = deep4 | deep | classic (exact case; unset or "" = deep4, the default since session 17:
// 1.44x / 1.29x classic on the power-law matrices, bench/results/ff25859): the kernel NNZ_PAIRS
// runs on a row-major, float4-readable B (jhdnnSpMM NNZ_PAIRS, DEFAULT where it picks NNZ_PAIRS, the
// second step of TRANSPOSE_B). classic = spmm_nnz_pairs<16, 4>; deep / deep4 = spmm_nnz_deep<8> / <4>
// (the chunk's pairs staged in shared memory, 8 / 4 B loads in flight per lane, 3 / 4 blocks per SM;
// src/sparse/README.md, "NNZ_PAIRS deep"). Same results up to the order of the atomic adds in
// chunk-cut rows (as classic) and the sign of zero sums. An
// unknown value is kept as kInvalid and every call that would run the kernel fails with BAD_PARAM
// naming it.
enum class SpmmPairs : int { kInvalid = -1, kDeep4 = 0, kDeep = 1, kClassic = 2 };
SpmmPairs spmm_pairs();
const char* spmm_pairs_bad_value();  // the environment's unknown value (truncated to 63 chars), else ""
// "deep4" / "deep" / "classic", or nullptr = back to the environment's value. False (and no change)
// otherwise.
bool set_spmm_pairs(const char* value);
// ---------------------------------------------------------------- read-only (environment only)
// JHDNN_LOG (set, non-empty, not "0"): log dispatch decisions. JHDNN_LOG_FILE: append them there
// instead of stderr ("" = not set). NVIDIA_TF32_OVERRIDE=0: no TF32 anywhere.
bool log_on();
const char* log_file();
bool tf32_allowed();

// Every setter above back to the values read from the environment (the force list: none).
void reset_to_environment();

}  // namespace jhdnn::core::config
