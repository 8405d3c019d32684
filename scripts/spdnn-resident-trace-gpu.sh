#!/usr/bin/env bash
# On the GPU machine, ONE short call: the resident kernel before / after the instruction cuts
# (src/sparse/README.md, "dnn_resident.cu"; the first kernel runs when JHDNN_RESIDENT_KERNEL=v1).
# Builds test_sparse and spdnn_infer, runs the [resident] tests (the packed kernel), then:
#   1. timing A/B: spdnn_infer N = 1024 L = 120 / 480 / 1920, 60000 images, resident (packed) and
#      graph side by side (exact: same survivors and per-layer counts); then the [resident] tests
#      and the same timing with JHDNN_RESIDENT_KERNEL=bulk (the opt-in TMA bulk-copy variant, first
#      GPU run: after the packed timing, so a hang there costs only its own timeouts); then resident
#      with JHDNN_RESIDENT_KERNEL=v1 (the kernel measured at ff50355: 4.16 / 10.8 / 37.5 ms);
#   2. traces (per-CTA records, jhdnnSparseDnnLayersForwardResidentTraced) of N = 1024 L = 480,
#      60000 images, for the packed kernel and for v1, summarised by scripts/spdnn-resident-trace.py
#      (per-layer time per CTA: predicted 4.5-7 us packed, ~18.5 v1);
#   3. trace of N = 1024 L = 120, 1200 images (the launch ncu profiled at ff50355: ~16 long-lived
#      CTAs instead of ~125; H1 = the per-layer time is the CTA's own: the same in both traces);
#   4. (last, may be cut by its timeout) ncu of the measured run's first resident launch at N = 1024
#      L = 120 (60000 images; --launch-skip 2 skips the warm-up's two), packed kernel: executed
#      instructions (predicted ~24 k warp instructions per CTA-layer, was ~62-68 k), IPC, stalls.
#
#   scripts/spdnn-resident-trace-gpu.sh OUTDIR      (~5-7 min with the build; BUILD_DIR: build-gpu;
#   the timeouts add up to more than 10 min: if a step hangs, the last steps may be cut)
set -uo pipefail
OUT=${1:?usage: spdnn-resident-trace-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
unset JHDNN_RESIDENT_KERNEL
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step data
scripts/fetch-spdnn-data.sh || echo "no spdnn data: the data tests and trace 3 will fail"
step build
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$B" -j "$(nproc)" --target test_sparse spdnn_infer; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
step "tests [resident] (packed kernel)"
timeout 240 "$B/tests/test_sparse" "[resident]" --durations yes >"$OUT/test_resident.log" 2>&1
echo "exit $?"; grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/test_resident.log" | tail -12
step "timing: packed resident vs graph, N 1024 L 120/480/1920"
timeout 150 "$SI" --width 1024 --layers 120,480,1920 --path resident,graph --validate yes \
  --csv "$OUT/spdnn_resident_1024.csv" 2>&1 | tee "$OUT/spdnn_resident_1024.txt"
step "tests [resident] with JHDNN_RESIDENT_KERNEL=bulk (one TMA bulk copy per chunk: opt-in, first GPU run)"
JHDNN_RESIDENT_KERNEL=bulk timeout 150 "$B/tests/test_sparse" "[resident]" >"$OUT/test_resident_bulk.log" 2>&1
echo "exit $?"; grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/test_resident_bulk.log" | tail -12
step "timing: bulk-copy resident (JHDNN_RESIDENT_KERNEL=bulk), N 1024 L 120/480/1920"
JHDNN_RESIDENT_KERNEL=bulk timeout 90 "$SI" --width 1024 --layers 120,480,1920 --path resident --validate yes \
  --csv "$OUT/spdnn_resident_bulk_1024.csv" 2>&1 | tee "$OUT/spdnn_resident_bulk_1024.txt"
step "timing: v1 resident (JHDNN_RESIDENT_KERNEL=v1), N 1024 L 120/480/1920"
JHDNN_RESIDENT_KERNEL=v1 timeout 120 "$SI" --width 1024 --layers 120,480,1920 --path resident --validate yes \
  --csv "$OUT/spdnn_resident_v1_1024.csv" 2>&1 | tee "$OUT/spdnn_resident_v1_1024.txt"
step "trace 1: N 1024 L 480, 60000 images, packed"
timeout 90 "$SI" --width 1024 --layers 480 --path resident --validate no \
  --resident-trace "$OUT/trace_1024_480.csv" 2>&1 | tee "$OUT/spdnn_trace_1024_480.txt"
python3 scripts/spdnn-resident-trace.py "$OUT/trace_1024_480.csv" >"$OUT/trace_1024_480_summary.txt" 2>&1
head -45 "$OUT/trace_1024_480_summary.txt"
step "trace 1 v1: N 1024 L 480, 60000 images, JHDNN_RESIDENT_KERNEL=v1"
JHDNN_RESIDENT_KERNEL=v1 timeout 90 "$SI" --width 1024 --layers 480 --path resident --validate no \
  --resident-trace "$OUT/trace_v1_1024_480.csv" 2>&1 | tee "$OUT/spdnn_trace_v1_1024_480.txt"
python3 scripts/spdnn-resident-trace.py "$OUT/trace_v1_1024_480.csv" >"$OUT/trace_v1_1024_480_summary.txt" 2>&1
head -45 "$OUT/trace_v1_1024_480_summary.txt"
step "trace 3: N 1024 L 120, 1200 images, packed (the launch ncu measured at ff50355)"
timeout 60 "$SI" --width 1024 --layers 120 --images 1200 --path resident \
  --resident-trace "$OUT/trace_1024_120_1200.csv" 2>&1 | tee "$OUT/spdnn_trace_1024_120_1200.txt"
python3 scripts/spdnn-resident-trace.py "$OUT/trace_1024_120_1200.csv" >"$OUT/trace_1024_120_1200_summary.txt" 2>&1
head -45 "$OUT/trace_1024_120_1200_summary.txt"
step "ncu: the measured run's first resident launch (60000 images), packed"
timeout 120 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
  --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 "$SI" --width 1024 --layers 120 --path resident --validate no \
  >"$OUT/ncu_resident_60000.txt" 2>&1
echo "exit $?"; grep -E "dnn_resident|Duration|Elapsed Cycles|SM Active Cycles|Executed Instructions |Issued Ipc Active|Grid Size|No Eligible" \
  "$OUT/ncu_resident_60000.txt" | head -12
step done
