#!/usr/bin/env bash
# On the GPU machine, ONE short call: why is the resident kernel ~18.5 us per late layer (model 4-6)?
# Builds test_sparse and spdnn_infer, runs the [resident] tests, then traces (per-CTA records, see
# jhdnnSparseDnnLayersForwardResidentTraced) and summarises:
#   1. N = 1024 L = 480, 60000 images (the benchmark shape): resident from layer 11, 5 calls, ~125 CTAs;
#   2. N = 1024 L = 120, 1200 images: the launch ncu profiled at ff50355 (it was spdnn_infer's
#      warm-up run: resident from layer 4, maxActive 786 -> 99 CTAs, 415 images -> 52 CTAs with work);
#   3. (last, may be cut by its timeout) ncu sections of the measured run's first resident launch at
#      N = 1024 L = 120 (60000 images; --launch-skip 2 skips the warm-up's two resident launches):
#      instructions, active cycles, IPC with ~125 CTAs instead of the warm-up's ~17 long-lived ones.
#
#   scripts/spdnn-resident-trace-gpu.sh OUTDIR      (~3-5 min with the build; BUILD_DIR: build-gpu)
set -uo pipefail
OUT=${1:?usage: spdnn-resident-trace-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step data
scripts/fetch-spdnn-data.sh || echo "no spdnn data: the data tests and trace 2 will fail"
step build
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$B" -j "$(nproc)" --target test_sparse spdnn_infer; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
step "tests [resident]"
timeout 240 "$B/tests/test_sparse" "[resident]" --durations yes >"$OUT/test_resident.log" 2>&1
echo "exit $?"; grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/test_resident.log" | tail -12
step "trace 1: N 1024 L 480, 60000 images"
timeout 150 "$SI" --width 1024 --layers 480 --path resident --validate no \
  --resident-trace "$OUT/trace_1024_480.csv" 2>&1 | tee "$OUT/spdnn_trace_1024_480.txt"
python3 scripts/spdnn-resident-trace.py "$OUT/trace_1024_480.csv" >"$OUT/trace_1024_480_summary.txt" 2>&1
head -45 "$OUT/trace_1024_480_summary.txt"
step "trace 2: N 1024 L 120, 1200 images (the launch ncu measured)"
timeout 60 "$SI" --width 1024 --layers 120 --images 1200 --path resident \
  --resident-trace "$OUT/trace_1024_120_1200.csv" 2>&1 | tee "$OUT/spdnn_trace_1024_120_1200.txt"
python3 scripts/spdnn-resident-trace.py "$OUT/trace_1024_120_1200.csv" >"$OUT/trace_1024_120_1200_summary.txt" 2>&1
head -45 "$OUT/trace_1024_120_1200_summary.txt"
step "ncu: the measured run's first resident launch (60000 images)"
timeout 120 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
  --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
  -k regex:dnn_resident --launch-skip 2 -c 1 "$SI" --width 1024 --layers 120 --path resident --validate no \
  >"$OUT/ncu_resident_60000.txt" 2>&1
echo "exit $?"; grep -E "dnn_resident|Duration|Elapsed Cycles|SM Active Cycles|Executed Instructions |Issued Ipc Active|Grid Size|No Eligible" \
  "$OUT/ncu_resident_60000.txt" | head -12
step done
