#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 300 s): the resident path at N = 4096 with the vals
# kernel (S = 4 slices on the vals-pack layout: weight values stored once per run; src/sparse/README.md
# "Vals, S = 4 at N = 4096"), written without a GPU (session 16, branch wip-resident-vals).
#
#   scripts/spdnn-resident4096-gpu.sh OUTDIR     BUDGET_S (default 290) bounds the whole call;
#                                                 KERNELS=0 skips the runs under quad / pair / bulk / packed
#
# Steps, by priority (the guard cuts the last ones; estimated times on the H200 in brackets):
#   1. build test_sparse and spdnn_infer in BUILD_DIR (default build-gpu) [30-60 s cold];
#   2. resource usage of every resident kernel: vals dnn_resident_kernel<4, *, true, true, 3> must be
#      REG:96 (traced 101) STACK:0, the others as at 735bf8b (duo 95 / 99, quad 85 / 90, ...) [1 s];
#   3. test_sparse "[resident]" (duo = the default: it runs vals at n = 4096) [40-70 s];
#   4. spdnn_infer --path resident,graph --validate yes, N = 4096 L = 120,480 with JHDNN_SPDNN_RESIDENT_4096=1
#      (the automatic rule's switch: resident from 8 x SMs live images on) [25-35 s], then N = 1024 [15-20 s];
#   5. test_sparse "[resident]~[cpu]" under JHDNN_RESIDENT_KERNEL=vals (vals wherever its ring fits) [20-30 s];
#   6. ncu (--clock-control none) of the first resident launch at N = 4096 L = 120 (time, instructions, IPC,
#      shared wavefronts, registers) [20-30 s];
#   7. compute-sanitizer memcheck of the new [resident] GPU cases (vals pack byte for byte; the N = 4096
#      bitwise case with JHDNN_TEST_VALS_QUICK=1: duo only, slices 0 / 1 / 3) [30-60 s];
#   8. spdnn_infer N = 4096 L = 480 resident with --resident-below 528 (one wave of 4-image CTAs) [15-20 s];
#   9. test_sparse "[resident]~[cpu]" under quad, pair, bulk, packed [4 x 15-25 s; cut first].
# At the end: the steps' exit codes, the spdnn_infer rows, the ncu lines, the sanitizer summary.
# Before (H200, 735bf8b): N = 4096 runs the graph path: L = 120 / 480 6.95 / 15.36 ms (~24 us per late
# layer); N = 1024 resident (duo) ~1.8-1.9 / 3.4-3.5 ms.
# Prediction (labelled, not measured; README "Vals"): N = 4096 late layer ~16-19 us (two waves of CTAs of
# ~8.2-9.5 us per CTA-layer); spdnn_infer N = 4096 L = 120 / 480 ~6.2-6.6 / ~12-13.5 ms resident; ncu of
# one resident launch: ~32 k instructions per CTA-layer, IPC ~1.8-2.0. N = 1024 unchanged (duo's SASS is
# identical).
set -uo pipefail
BUDGET_DEFAULT=290 UNSET_SWITCHES="JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_TILE JHDNN_TEST_VALS_QUICK JHDNN_SPDNN_RESIDENT_4096" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: spdnn_infer --validate and the data tests are missing"
build_step "$B" test_sparse spdnn_infer
# REG / STACK per resident kernel, demangled (kLaneRows: 0 one image per lane, 1 quad, 2 duo, 3 vals).
resident_resources "$B"

step test_resident 100 "$T/test_sparse" "[resident]" --durations yes

infer() {  # infer NAME WIDTH TIMEOUT
  JHDNN_SPDNN_RESIDENT_4096=1 step "$1" "$3" "$SI" --width "$2" --layers 120,480 --path resident,graph \
    --validate yes --csv "$OUT/$1.csv"
}
infer sp4096 4096 60
infer sp1024 1024 40

step test_resident_vals 60 env JHDNN_RESIDENT_KERNEL=vals "$T/test_sparse" "[resident]~[cpu]" --durations yes

if command -v ncu >/dev/null; then
  JHDNN_SPDNN_RESIDENT_4096=1 step ncu_resident_4096 60 ncu --clock-control none --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section WarpStateStats \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active \
    -k regex:dnn_resident_kernel --launch-skip 0 -c 1 "$SI" --width 4096 --layers 120 --path resident \
    --validate no --no-warmup
fi

if command -v compute-sanitizer >/dev/null; then
  JHDNN_TEST_VALS_QUICK=1 step memcheck_vals 90 compute-sanitizer --tool memcheck --error-exitcode 99 \
    "$T/test_sparse" "resident vals*" "~[cpu]"
fi

# The waves (README "Vals", risk 1): the switch-over count 4 x SMs (one wave of 4-image CTAs) against the
# default 8 x SMs, N = 4096 L = 480 resident only [15-20 s].
JHDNN_SPDNN_RESIDENT_4096=1 step sp4096_below528 40 "$SI" --width 4096 --layers 480 --path resident \
  --resident-below 528 --validate yes --csv "$OUT/sp4096_below528.csv"

if [ "${KERNELS:-1}" = 1 ]; then
  for K in quad pair bulk packed; do
    step "test_resident_$K" 40 env JHDNN_RESIDENT_KERNEL=$K "$T/test_sparse" "[resident]~[cpu]"
  done
fi

step_summary
for f in "$OUT"/sp*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|resident|graph|DIFFERS|differs|FAIL|note" "$f" | head -20; }
done
[ -f "$OUT/ncu_resident_4096.txt" ] &&
  grep -E "dnn_resident|Duration|Elapsed Cycles|Executed Instructions |Issued Ipc Active|Registers Per|Grid Size|Block Size|Dynamic Shared|wavefronts_mem_shared|inst_executed|Warp Cycles Per Issued" \
    "$OUT/ncu_resident_4096.txt" | head -20
for f in "$OUT"/test_*.txt "$OUT"/memcheck_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "ERROR SUMMARY|test cases|assertions|All tests|FAILED" "$f" | tail -4; }
done
