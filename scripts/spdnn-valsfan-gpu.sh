#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 200 s): valsfan against vals at N = 4096
# (src/sparse/README.md, "Where the vals late layer's time goes"; written without a GPU in session 18,
# branch wip-vals-count). valsfan = the vals kernel with thread 0's serial work taken off the iteration's
# critical path: the 8 ring copies of an iteration issued by lane 0 of warps 0..7 (one each) instead of
# thread 0 alone, and the layer's survivor count added without waiting for the atomic (but in the last
# layer). Same chunks after the same barriers: bitwise the same results.
#
#   scripts/spdnn-valsfan-gpu.sh OUTDIR      BUDGET_S (default 195) bounds the whole call
#
# Steps, by priority (the guard cuts the last ones; estimated H200 times in brackets):
#   1. build test_sparse and spdnn_infer in BUILD_DIR (default build-gpu) [30-60 s cold, ~5 s warm];
#   2. resource usage: vals <4, *, true, true, 3> REG 95-96 (traced 101), valsfan <..., 4> REG 95 (traced
#      99), STACK 0 [1 s];
#   3. test_sparse "[resident]~[cpu]" under JHDNN_RESIDENT_KERNEL=valsfan (the GPU cases run valsfan as
#      the kernel; the N = 4096 bitwise case also runs duo, vals and valsfan by the setter) [15-30 s];
#   4. spdnn_infer N = 4096 L = 120,480 --path resident --validate yes under vals and under valsfan
#      (exact against the float64 CPU reference) [2 x 8-15 s];
#   5. the A/B: spdnn_infer N = 4096 L = 120,480,1920 --path resident --validate no, vals / valsfan
#      alternating, twice [4 x 8-15 s];
#   6. traces of N = 4096 L = 480 under vals and valsfan (thread 0's wait share per layer: the straggler
#      test, below), summarised by scripts/spdnn-resident-trace.py [2 x 8-15 s];
#   7. ncu of the first resident launch (N = 4096 L = 120) under vals and valsfan: time, instructions,
#      IPC, shared wavefronts and the stall reasons per issue [2 x 20-30 s; cut first].
# Before (H200, 918395d / 39e81e0): vals L = 120 / 480 / 1920 6.65-6.69 / 13.0-13.2 / 38.7-38.8 ms, ~17.7 us
# per late layer; ncu 1.71 ms, ~30.0 k instructions per CTA-layer, IPC 1.90.
# Prediction (labelled, not measured; README): valsfan ~14.1-15.7 us per late layer (central ~15.0),
# L = 120 / 480 / 1920 ~6.3-6.4 / 11.3-12.1 / 31.8-34.9 ms (central L = 1920 ~33.5); ncu: the same instructions
# within ~1%, IPC up in proportion to the time; "barrier" stalls ~1.5-2.5 cycles per issue under vals, < 1 under valsfan.
# The straggler test (step 6): under vals thread 0 should wait at most ~5% of a layer (warp 0, which
# issues the copies, is the last warp at every barrier; duo measured 3.1%); under valsfan clearly more.
# If valsfan is not faster AND vals' thread 0 waits > 10%, the straggler model is wrong (README).
set -uo pipefail
BUDGET_DEFAULT=195 UNSET_SWITCHES="JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_TILE JHDNN_TEST_VALS_QUICK JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: spdnn_infer --validate and the data tests are missing"
build_step "$B" test_sparse spdnn_infer
# REG / STACK of the vals (kLaneRows 3) and valsfan (4) instantiations.
resident_resources "$B" | grep -E "ELi[34]$"

step test_valsfan 60 env JHDNN_RESIDENT_KERNEL=valsfan "$T/test_sparse" "[resident]~[cpu]" --durations yes

for K in vals valsfan; do
  JHDNN_SPDNN_RESIDENT_4096=1 step "exact_$K" 40 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 4096 \
    --layers 120,480 --path resident --validate yes --csv "$OUT/exact_$K.csv"
done
for r in 1 2; do
  for K in vals valsfan; do
    JHDNN_SPDNN_RESIDENT_4096=1 step "ab_${K}_$r" 40 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 4096 \
      --layers 120,480,1920 --path resident --validate no --csv "$OUT/ab_${K}_$r.csv"
  done
done
for K in vals valsfan; do
  JHDNN_SPDNN_RESIDENT_4096=1 step "trace_$K" 40 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 4096 --layers 480 \
    --path resident --validate no --resident-trace "$OUT/trace_$K.csv"
  [ -f "$OUT/trace_$K.csv" ] && python3 scripts/spdnn-resident-trace.py "$OUT/trace_$K.csv" >"$OUT/trace_${K}_summary.txt" 2>&1
done
if command -v ncu >/dev/null; then
  for K in vals valsfan; do
    JHDNN_SPDNN_RESIDENT_4096=1 step "ncu_$K" 45 env JHDNN_RESIDENT_KERNEL=$K ncu --clock-control none \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --metrics "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active$NCU_STALLS" \
      -k regex:dnn_resident_kernel --launch-skip 0 -c 1 "$SI" --width 4096 --layers 120 --path resident \
      --validate no --no-warmup
  done
fi

step_summary
for f in "$OUT"/exact_*.txt "$OUT"/ab_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +4096 |DIFFERS|differs|FAIL|not validated|validated|path_used" "$f" | head -6; }
done
for f in "$OUT"/trace_*_summary.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "per-layer|waited share|CTAs per SM|span" "$f" | head -8; }
done
for f in "$OUT"/ncu_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "Duration|SM Active Cycles|inst_executed|wavefronts_mem_shared|Warp Cycles Per Issued|stalled_(barrier|membar|mio_throttle|short_scoreboard|long_scoreboard|wait|math_pipe|not_selected|selected|lg_throttle|dispatch|no_instruction|branch)" "$f" | head -24; }
done
for f in "$OUT"/test_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "test cases|assertions|All tests|FAILED" "$f" | tail -3; }
done
