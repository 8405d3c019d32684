#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= ~330 s, BUDGET_S default 330): vals4w against valsfan at
# N = 4096 (session 20). vals4w = S = 4 on the vals-pack copies, a lane of 4 rows x 4 images, each of the 16 warps
# a whole chunk, a ring of R <= 32 slots refilled by the warp that consumed the slot's chunk, no barrier inside a
# layer (src/sparse/dnn_resident.cu, "Vals4w"; src/sparse/README.md).
#
#   scripts/spdnn-vals4w-gpu.sh OUTDIR      (BUILD_DIR: an existing build to reuse, else build-gpu)
#
# Steps (each guarded, output in OUTDIR/<step>.txt; a summary at the end):
#   1. build test_sparse, spdnn_infer, bench_sparse; REG / STACK of the vals4w kernels (resource-usage.txt);
#   2. test_sparse "[resident]~[cpu]" under JHDNN_RESIDENT_KERNEL=vals4w (the GPU cases, bitwise the CPU chain);
#   3. spdnn_infer N = 4096 L = 120,480 --validate yes under vals4w (exact categories);
#   4. compute-sanitizer racecheck of the N = 4096 vals test case, vals4w only (JHDNN_TEST_VALS_QUICK=vals4w:
#      slices 0, 1, 3): the hazard count (the session-18 branch, whose second chunk order let two warps read one
#      slot in a layer, reported 369,520 WAR hazards; this order reads each slot in a layer from one warp);
#   5. the A/B: spdnn_infer N = 4096 L = 120,480,1920 --validate no, valsfan / vals4w alternating, twice;
#   6. ncu of the first resident launch (N = 4096 L = 120) under vals4w: time, instructions, IPC, shared
#      wavefronts, stall reasons (valsfan at 35e37a7: 1.41 ms, 764 M, IPC 2.31).
# Prediction (labelled, not measured; the session-18 branch with the other chunk order measured 29.43-29.45 ms
# at L = 1920): L = 120 / 480 / 1920 ~6.2 / ~10.8 / ~29.4 ms against valsfan's ~6.3 / ~11.55 / ~32.7; racecheck 0.
BUDGET_DEFAULT=330 UNSET_SWITCHES="JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_TILE JHDNN_TEST_VALS_QUICK JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: spdnn_infer --validate and the data tests are missing"
build_step "$B" test_sparse spdnn_infer bench_sparse
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_resident.cu.o" 2>/dev/null |
  awk '/Function/{f=$2} /REG:/{match($0,/REG:[0-9]+ STACK:[0-9]+/); print substr($0,RSTART,RLENGTH), f}' |
  grep vals4w | sed 's/_ZN5jhdnn6sparse[0-9A-Za-z_]*dnn_resident_vals4w_kernelIL/vals4w</; s/EEEv.*//' |
  tee "$OUT/resource-usage.txt"

step test_vals4w 60 env JHDNN_RESIDENT_KERNEL=vals4w "$T/test_sparse" "[resident]~[cpu]" --durations yes
JHDNN_SPDNN_RESIDENT_4096=1 step exact_vals4w 40 env JHDNN_RESIDENT_KERNEL=vals4w "$SI" --width 4096 \
  --layers 120,480 --path resident --validate yes --csv "$OUT/exact_vals4w.csv"
if command -v compute-sanitizer >/dev/null; then
  step racecheck_vals4w 120 env JHDNN_TEST_VALS_QUICK=vals4w compute-sanitizer --tool racecheck --print-limit 20 \
    "$T/test_sparse" "resident vals: N = 4096 with S = 4 bitwise the fma chain*"
fi
for r in 1 2; do
  for K in valsfan vals4w; do
    JHDNN_SPDNN_RESIDENT_4096=1 step "ab_${K}_$r" 40 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 4096 \
      --layers 120,480,1920 --path resident --validate no --csv "$OUT/ab_${K}_$r.csv"
  done
done
if command -v ncu >/dev/null; then
  JHDNN_SPDNN_RESIDENT_4096=1 step ncu_vals4w 45 env JHDNN_RESIDENT_KERNEL=vals4w ncu --clock-control none \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --metrics "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active$NCU_STALLS" \
    -k regex:dnn_resident --launch-skip 0 -c 1 "$SI" --width 4096 --layers 120 --path resident \
    --validate no --no-warmup
fi

step_summary
for f in "$OUT"/exact_*.txt "$OUT"/ab_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +4096 |DIFFERS|differs|FAIL|not validated|validated|path_used" "$f" | head -6; }
done
[ -f "$OUT/racecheck_vals4w.txt" ] && grep -E "RACECHECK SUMMARY|ERROR SUMMARY|hazard|test cases|assertions" \
  "$OUT/racecheck_vals4w.txt" | tail -5
for f in "$OUT"/ncu_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "Duration|SM Active Cycles|inst_executed|wavefronts_mem_shared|Warp Cycles Per Issued|Registers|stalled_(barrier|mio_throttle|short_scoreboard|long_scoreboard|wait|math_pipe|not_selected|selected|lg_throttle|dispatch|no_instruction|branch)" "$f" | head -24; }
done
for f in "$OUT"/test_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "test cases|assertions|All tests|FAILED" "$f" | tail -3; }
done
