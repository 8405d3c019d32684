#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 200 s, cold build included): cta2w, the late layers in
# 64-image items with two images per lane (JHDNN_SPDNN_TILE=cta2w; src/sparse/deep_steps.cuh with kImages = 2,
# src/sparse/README.md "Two images per lane (cta2w)"), against cta2 (auto up to 16384 rows).
#
#   scripts/spdnn-late2-gpu.sh OUTDIR      NCU=0 skips the profiles
#
# Builds test_sparse and spdnn_infer in BUILD_DIR (default build-gpu, git-ignored) and unpacks the challenge data,
# then (steps by priority; the guard cuts the last ones):
#   1. resource usage of the layer kernels: dnn_layer_cta_kernel<3, 2> (cta2w) REG:128 STACK:16 SHARED:1040
#      (ptxas here: 32 B spill stores, 28 B loads); dnn_layer_cta_kernel<3, 1> (cta2) REG:128 STACK:0 as before
#      (its SASS is 04b5614's, addresses stripped);
#   2. ctest spdnn_tile_cta2w: test_sparse's GPU cases under JHDNN_SPDNN_TILE=cta2w (the generated networks up to
#      N = 16384, the official ones, the reuse-tile case limited to cta2w: its two N = 4096 late-layer cases run
#      15 items of 64 images, the last with 54); ~35-40 s;
#   3. spdnn_infer --path graph --validate yes (exact against the CPU reference), N = 16384 L = 120,480, under
#      cta2w (~50 s with the validation);
#   4. ncu (--clock-control none) of launches 40-43 of the layer kernel at N = 16384 L = 120 (late layers,
#      ~1200 images) under cta2w, then under cta2 (~5 s each);
#   5. the same spdnn_infer under cta2 (the control; at 04b5614 30.7 / 70.0 ms in bench_sparse), last: the
#      guard cuts it if the time is gone.
# At the end: the steps' exit codes, the spdnn_infer rows and the ncu lines (time, instructions, IPC, DRAM / L2
# bytes per launch).
# Before (H200, bench/results/04b5614, cta2, N = 16384 L = 120 launches 40-43): 109-119 us per late layer under
# ncu, 49.19 M warp instructions, IPC 1.95-2.06, DRAM 186 MB, L2 485 MB; graph path L = 120 / 480 30.7 / 70.0 ms.
# Prediction (labelled, not measured; README "Two images per lane (cta2w)"): ~41 M instructions (-16%) at the same
# IPC, ~92 us per late layer (85-100), L2 ~405 MB; N = 16384 L = 120 / 480 ~29.0 / ~62 ms.
set -uo pipefail
BUDGET_DEFAULT=195 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
build_step "$B" test_sparse spdnn_infer
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 -E "cta_kernel" | tee "$OUT/resource-usage.txt" | grep -oE "cta_kernelILi[0-9]ELi[0-9]E|REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

step ctest_cta2w 60 ctest --test-dir "$B" -R '^spdnn_tile_cta2w$' --output-on-failure

infer() {  # infer NAME TILE TIMEOUT
  JHDNN_SPDNN_TILE=$2 step "$1" "$3" "$SI" --width 16384 --layers 120,480 --path graph --validate yes \
    --csv "$OUT/$1.csv"
}
infer sp16384_cta2w cta2w 70

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size,dram__bytes.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
  late() {  # late NAME TILE: launches 40-43 of the layer kernel = layers 41-44 (~1200 images)
    JHDNN_SPDNN_TILE=$2 step "$1" 30 ncu --clock-control none --metrics "$M" -k regex:dnn_layer_cta_kernel \
      --launch-skip 40 --launch-count 4 --csv "$SI" --width 16384 --layers 120 --path graph --validate no --no-warmup
  }
  late ncu_late_16384_cta2w cta2w
  late ncu_late_16384_cta2 cta2
fi

infer sp16384_cta2 cta2 70
step_summary
for f in "$OUT"/sp*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|DIFFERS|differs|FAIL" "$f"; }
done
# Per launch (launch k = layer 41 + k): kernel, metric, value (time in ns).
for f in "$OUT"/ncu_late_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__inst_executed.avg.per_cycle_active|launch__grid_size|dram__bytes.sum|lts__t_bytes.sum|sm__warps_active.avg.pct_of_peak_sustained_active)"' "$f" |
    awk -F'","' '{k = $5; if (match(k, /dnn_layer_cta_kernel<[0-9], *[0-9]>/)) k = substr(k, RSTART, RLENGTH);
      id = $1; gsub(/"/, "", id); v = $NF; gsub(/"/, "", v); print id, k, $(NF - 2), v}'; }
done
[ -f "$OUT/ctest_cta2w.txt" ] && grep -E "tests passed|Failed|SKIPPED|Passed|\*\*\*" "$OUT/ctest_cta2w.txt" | tail -4
