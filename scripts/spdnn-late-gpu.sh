#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 540 s; its limit is 600 s a call): cta2's pipelined
# block steps (src/sparse/deep_steps.cuh; src/sparse/README.md "Pipelined block steps (cta2)"), the late
# layers of the per-layer fused sparse-DNN kernel (JHDNN_SPDNN_TILE=cta2, and auto up to 4096 rows).
#
#   scripts/spdnn-late-gpu.sh OUTDIR      TESTS=0 skips the tests, SAN=0 the sanitizers, NCU=0 the profiles,
#                                         BIG=0 the N = 16384 runs
#
# Builds the sparse targets in BUILD_DIR (default build-gpu, git-ignored) and unpacks the challenge data, then
# (steps by priority: correctness, then the late-layer times; the guard cuts the last ones):
#   1. resource usage of the layer kernels: dnn_layer_cta_kernel<3> (cta2) must stay REG:128 STACK:0
#      SHARED:1040 (+ 112640 B dynamic, 2 blocks per SM; launch__grid_size 264 in the ncu step); the block
#      kernel dnn_layer_compact_kernel<true,false> REG:80 STACK:56 as before (its SASS is unchanged);
#   2. tests: test_spdnn_reuse_tile (CPU emulation, mode 3 = the pipelined steps); test_sparse's GPU cases
#      under JHDNN_SPDNN_TILE=cta2 with the reuse-tile case limited to cta2 (= ctest spdnn_tile_cta2, 24-36 s
#      at 4a3c40e; its reuse-tile case has two late-layer cases: N = 4096, 950 images, weights 1/16 and
#      random); the two late-layer cases under block as the control (same inputs, reuse_range);
#   3. spdnn_infer --path graph --validate yes: N = 4096 and 1024, L = 120,480, under cta2 and block;
#   4. ncu (--clock-control none) of launches 40-43 of the layer kernel (late layers, ~950 images) at
#      N = 4096 under cta2 (time, instructions, IPC, warps) and the same under block for comparison;
#   5. compute-sanitizer memcheck of the reuse-tile case under cta2 (JHDNN_TEST_SPDNN_TILE=cta2), racecheck
#      of its late-layer case only (JHDNN_TEST_REUSE_CASE="late layer": the cp.async copies, the weight
#      buffer rotation, the row pointers, all in the warp's shared buffers);
#   6. the stall breakdown of one late layer at N = 4096 under cta2 (ncu WarpStateStats + SchedulerStats:
#      long / short scoreboard, MIO, no instruction -- dnn_layer_cta_kernel<3>'s step loop is ~3.8 k SASS
#      instructions, 60 KB -- what to read if the IPC did not move);
#   7. spdnn_infer N = 1024, and N = 16384 L = 120,480 under cta2 and block (auto picks block there: cta2
#      79.2 vs block 71.4 ms at L = 480 before this branch);
#   8. all of test_sparse plain (auto; its reuse-tile case loops over all five tiles: 89-139 s before this
#      branch, so last, cut by the guard if the time is gone).
# At the end: the steps' exit codes, the spdnn_infer rows and the ncu lines (time, instructions, IPC per
# launch), the sanitizers' summaries.
# Before (H200, bench/results/00b45a5, cta2): late layer at N = 4096 28.8 us under ncu (10.5 M instructions,
# IPC 1.68), ~25.5 us per late layer in the graph path; spdnn_infer N = 4096 L = 480 16.5-16.6 ms.
# Prediction (not measured; README "Pipelined block steps (cta2)"): late layer at N = 4096 ~22 us (20-25)
# under ncu (~10.7 M instructions, IPC ~2.2); N = 4096 L = 480 ~14.3 ms (13.7-15.5); N = 16384 L = 480 cta2
# ~70 ms (66-75); N = 1024 about as before.
set -uo pipefail
UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
build_step "$B" test_sparse test_spdnn_reuse_tile spdnn_infer
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 -E "compact_kernel|cta_kernel" | tee "$OUT/resource-usage.txt" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

if [ "${TESTS:-1}" = 1 ]; then
  step test_spdnn_reuse_tile 60 "$T/test_spdnn_reuse_tile"
  JHDNN_SPDNN_TILE=cta2 JHDNN_TEST_SPDNN_TILE=cta2 step test_sparse_cta2 90 "$T/test_sparse" "~[cpu]~[api]" \
    --durations yes
  JHDNN_TEST_SPDNN_TILE=block JHDNN_TEST_REUSE_CASE="N = 4096, reuse order" step test_late_block 40 \
    "$T/test_sparse" "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
fi

infer() {  # infer NAME TILE WIDTH TIMEOUT
  JHDNN_SPDNN_TILE=$2 step "$1" "$4" "$SI" --width "$3" --layers 120,480 --path graph --validate yes \
    --csv "$OUT/$1.csv"
}
infer sp4096_cta2 cta2 4096 45
infer sp4096_block block 4096 45

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,lts__t_bytes.sum
  late() {  # late NAME TILE KERNEL: launches 40-43 of the layer kernel = layers 41-44 (~950 images)
    JHDNN_SPDNN_TILE=$2 step "$1" 40 ncu --clock-control none --metrics "$M" -k regex:"$3" --launch-skip 40 \
      --launch-count 4 --csv --print-units base "$SI" --width 4096 --layers 120 --path graph --validate no --no-warmup
  }
  late ncu_late_4096_cta2 cta2 dnn_layer_cta_kernel
  late ncu_late_4096_block block dnn_layer_compact_kernel
fi

if [ "${SAN:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  JHDNN_SPDNN_TILE=cta2 JHDNN_TEST_SPDNN_TILE=cta2 step san_memcheck_cta2 75 \
    compute-sanitizer --tool memcheck --error-exitcode 99 "$T/test_sparse" \
    "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
  JHDNN_SPDNN_TILE=cta2 JHDNN_TEST_SPDNN_TILE=cta2 JHDNN_TEST_REUSE_CASE="late layer" step san_racecheck_late 60 \
    compute-sanitizer --tool racecheck --error-exitcode 99 "$T/test_sparse" \
    "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
fi

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  S=""  # cycles per issued instruction stalled on each reason (the WarpStateStats section's breakdown)
  for r in long_scoreboard short_scoreboard mio_throttle lg_throttle no_instruction wait not_selected selected \
    math_pipe_throttle barrier branch_resolving dispatch_stall; do
    S="$S${S:+,}smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
  done
  JHDNN_SPDNN_TILE=cta2 step ncus_late_4096_cta2 40 ncu --clock-control none --section WarpStateStats \
    --section SchedulerStats --metrics "$S" -k regex:dnn_layer_cta_kernel --launch-skip 41 --launch-count 1 "$SI" \
    --width 4096 --layers 120 --path graph --validate no --no-warmup
fi

infer sp1024_cta2 cta2 1024 30
infer sp1024_block block 1024 30
if [ "${BIG:-1}" = 1 ]; then
  infer sp16384_cta2 cta2 16384 60
  infer sp16384_block block 16384 60
fi
[ "${TESTS:-1}" = 1 ] && step test_sparse 170 "$T/test_sparse" --durations yes
step_summary
for f in "$OUT"/sp*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|DIFFERS|differs|FAIL" "$f"; }
done
# Per launch (launch k = layer 41 + k): kernel, metric, value (time in ns).
for f in "$OUT"/ncu_late_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__inst_executed.avg.per_cycle_active|launch__grid_size)"' "$f" |
    awk -F'","' '{k = $5; if (match(k, /dnn_layer_[a-z_0-9]+(<[0-9]+>)?/)) k = substr(k, RSTART, RLENGTH);
      id = $1; gsub(/"/, "", id); v = $NF; gsub(/"/, "", v); print id, k, $(NF - 2), v}'; }
done
[ -f "$OUT/ncus_late_4096_cta2.txt" ] && grep -E "issue_stalled|Warp Cycles Per Issued|Eligible|Issued Warp|Active Warps" \
  "$OUT/ncus_late_4096_cta2.txt"
for f in "$OUT"/san_*.txt "$OUT"/test_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases|assertions|FAILED" "$f" | tail -4; }
done
