#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 420 s, cold build included): late4, the late layers in
# 128-image items with a lane of 16 rows x 4 images (JHDNN_SPDNN_TILE=late4; src/sparse/late4_tile.cuh,
# src/sparse/README.md "Late4"), against cta2w (auto's tile at every width).
#
#   scripts/spdnn-late4-gpu.sh OUTDIR      NCU=0 skips the profiles
#
# Builds test_sparse and spdnn_infer in BUILD_DIR (default build-gpu, git-ignored) and unpacks the challenge data,
# then (steps by priority; the guard cuts the last ones):
#   1. resource usage of the layer kernels (dnn_layer_cta_kernel<3, 4> is late4's);
#   2. ctest spdnn_tile_late4: test_sparse's GPU cases under JHDNN_SPDNN_TILE=late4 (the generated networks up to
#      N = 16384, the official ones, the reuse-tile case limited to late4, its identity-column cases included);
#      then (SANITIZE=0 skips it) compute-sanitizer racecheck of the reuse-tile case's "late4:" cases (added in
#      session 21 after the staged path, not yet run);
#   3. spdnn_infer --path graph --validate yes (exact against the CPU reference), N = 16384 L = 120,480, late4;
#   4. ncu (--clock-control none) of launches 40-43 of the layer kernel at N = 16384 L = 120 (late layers,
#      ~1200 images) under late4, then cta2w, with the stall reasons;
#   5. the A/B: spdnn_infer N = 16384 L = 120,480 --path graph, cta2w / late4 alternating twice; then N = 65536
#      L = 120 once each.
# At the end: the steps' exit codes, the spdnn_infer rows and the ncu lines.
set -uo pipefail
BUDGET_DEFAULT=420 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
build_step "$B" test_sparse spdnn_infer
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 -E "cta_kernel" | tee "$OUT/resource-usage.txt" | grep -oE "cta_kernelILi[0-9]ELi[0-9]E|REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

step ctest_late4 80 ctest --test-dir "$B" -R '^spdnn_tile_late4$' --output-on-failure
# racecheck of late4's paths (the staged 16-byte one: identity-column cases; the 4-byte one: the late-layer cases)
if [ "${SANITIZE:-1}" = 1 ]; then
  JHDNN_SPDNN_TILE=late4 JHDNN_TEST_SPDNN_TILE=late4 JHDNN_TEST_REUSE_CASE="late4:" step racecheck_late4 120 \
    compute-sanitizer --tool racecheck --error-exitcode 99 "$T/test_sparse" "fused and multi-layer paths*"
  grep -E "RACECHECK SUMMARY|hazard|ERROR SUMMARY" "$OUT/racecheck_late4.txt" | tail -3
fi

JHDNN_SPDNN_TILE=late4 step sp16384_late4_exact 90 "$SI" --width 16384 --layers 120,480 --path graph --validate yes \
  --csv "$OUT/sp16384_late4_exact.csv"

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size,dram__bytes.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum$NCU_STALLS"
  late() {  # late NAME TILE: launches 40-43 of the layer kernel = layers 41-44 (~1200 images)
    JHDNN_SPDNN_TILE=$2 step "$1" 40 ncu --clock-control none --metrics "$M" -k regex:dnn_layer_cta_kernel \
      --launch-skip 40 --launch-count 4 --csv "$SI" --width 16384 --layers 120 --path graph --validate no --no-warmup
  }
  late ncu_late_16384_late4 late4
  late ncu_late_16384_cta2w cta2w
fi

for rep in 1 2; do
  for t in cta2w late4; do
    JHDNN_SPDNN_TILE=$t step "ab16384_${t}_$rep" 45 "$SI" --width 16384 --layers 120,480 --path graph --validate no
  done
done
for t in cta2w late4; do
  JHDNN_SPDNN_TILE=$t step "ab65536_$t" 45 "$SI" --width 65536 --layers 120 --path graph --validate no
done
step_summary
for f in "$OUT"/sp*.txt "$OUT"/ab*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|DIFFERS|differs|FAIL" "$f"; }
done
# Per launch (launch k = layer 41 + k): kernel, metric, value (time in ns).
for f in "$OUT"/ncu_late_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__inst_executed.avg.per_cycle_active|dram__bytes.sum|lts__t_bytes.sum|smsp__sass_thread_inst_executed_op_ffma_pred_on.sum)"' "$f" |
    awk -F'","' '{k = $5; if (match(k, /dnn_layer_cta_kernel<[0-9], *[0-9]>/)) k = substr(k, RSTART, RLENGTH);
      id = $1; gsub(/"/, "", id); v = $NF; gsub(/"/, "", v); print id, k, $(NF - 2), v}'; }
done
[ -f "$OUT/ctest_late4.txt" ] && grep -E "tests passed|Failed|SKIPPED|Passed|\*\*\*" "$OUT/ctest_late4.txt" | tail -4
