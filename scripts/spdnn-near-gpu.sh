#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4 minutes, a cold build included): where the time goes in the two
# cells of the cuSPARSE-pipeline table that are within 11-13% of issue 6's 10x (session 26's closing note): N = 1024
# L = 120 and N = 4096 L = 480, both on spdnn_infer's default path (resident: fused launches of the crowded head,
# then resident launches of up to 96 layers); then compute-sanitizer of the late4 code that b2df6b9 changed.
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-near-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-near-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w
# (carry data/spdnn's four files). Pass the commit as a literal sha (`git rev-parse` on the device names main's).
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer and test_sparse; run session 26's last tests (the tiled layout on random layers, and its bad
#      inputs with the overlap that 7e2a904 fixed; written after the session's device time was spent);
#   2. spdnn_infer N = 1024 L = 120 and N = 4096 L = 480, exact, with --active-csv (the head's entering images);
#   3. ncu of every launch of those runs, no warm-up (the head's per-layer kernels and the resident launches): time,
#      DRAM bytes, instructions, FFMA, IPC, warps active, the stall reasons. scripts/spdnn-head-table.py turns the
#      head's launches into the per-layer table against the DRAM floor (here, afterwards); a resident launch's time
#      over its layers is the late layer's;
#   4. compute-sanitizer racecheck and memcheck of test_sparse's late4 cases under late4all and of the tiled-layout
#      test (b2df6b9 changed late4's column offsets and added the tiled layout; neither has been sanitized).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer test_sparse
step test_tiled_random 60 "$T/test_sparse" "fused layer: the tiled feature layout on random layers*"
step test_tiled_bad_inputs 30 "$T/test_sparse" "sparse calls: the tiled feature layout's bad inputs"
step infer_1024 40 "$SI" --width 1024 --layers 120 --validate yes --no-warmup --active-csv "$OUT/active_1024.csv"
step infer_4096 60 "$SI" --width 4096 --layers 480 --validate yes --no-warmup --active-csv "$OUT/active_4096.csv"
M="gpu__time_duration.sum,dram__bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum"
M="$M,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__inst_executed.avg.per_cycle_active"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active$NCU_STALLS"
step ncu_1024 90 ncu --clock-control none --csv --metrics "$M" "$SI" --width 1024 --layers 120 --validate no --no-warmup
step ncu_4096 120 ncu --clock-control none --csv --metrics "$M" "$SI" --width 4096 --layers 480 --validate no --no-warmup
for tool in racecheck memcheck; do
  step "${tool}_late4all" 100 env JHDNN_TEST_SPDNN_TILE=late4all JHDNN_TEST_REUSE_CASE="late4:" compute-sanitizer \
    --tool $tool --error-exitcode 99 "$T/test_sparse" "fused and multi-layer paths*"
  step "${tool}_tiled" 100 compute-sanitizer --tool $tool --error-exitcode 99 "$T/test_sparse" \
    "fused layer: the tiled feature layout on random layers*"
done
step_summary
infer_rows "$OUT"/infer_*.txt
for f in "$OUT"/racecheck_*.txt "$OUT"/memcheck_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt): $(grep -E 'SUMMARY|All tests passed|test cases' "$f" | tr '\n' ' ')"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
