#!/usr/bin/env bash
# On the GPU machine, TWO calls of the device tool (each <= 540 s with a warm rebuild: its limit is 600
# s a call): the resident kernel, the default (JHDNN_RESIDENT_KERNEL unset: the TMA bulk copy) against
# ALT_KERNEL (default packed: the cp.async copy). Written for session 11's v1 / packed / bulk A/B (run at
# 3f71f09: bench/results/3f71f09/run-resident-trace.sh is that version); v1 is deleted since.
#
#   scripts/spdnn-resident-trace-gpu.sh part1 OUTDIR   the default kernel: tests, timing, trace
#   scripts/spdnn-resident-trace-gpu.sh part2 OUTDIR   ALT_KERNEL: tests, trace; 1200-image trace, ncu
#
# Both parts build test_sparse and spdnn_infer in BUILD_DIR (default build-gpu, git-ignored: it
# survives between calls on a warm machine, so part 2's build is a no-op after part 1; a cold machine
# rebuilds, ~40 s) and unpack the challenge data. Part 1:
#   1. the [resident] tests (default kernel; the packed copies' publish raced on the host and by two
#      threads' first calls);
#   2. timing A/B: spdnn_infer N = 1024 L = 120 / 480 / 1920, 60000 images, resident and graph side
#      by side (exact: same survivors and per-layer counts);
#   3. the same timing with ALT_KERNEL;
#   4. trace 1 (per-CTA records, jhdnnSparseDnnLayersForwardResidentTraced) of N = 1024 L = 480,
#      60000 images, summarised by scripts/spdnn-resident-trace.py (per-layer time per CTA).
# Part 2:
#   5. the [resident] tests with ALT_KERNEL;
#   6. trace 1 with ALT_KERNEL;
#   7. trace 3: N = 1024 L = 120, 1200 images (few long-lived CTAs: the per-layer time is the CTA's own);
#   8. ncu of the measured run's first resident launch at N = 1024 L = 120 (60000 images;
#      --launch-skip 2 skips the warm-up's two): executed instructions, IPC, stalls.
#
# Time guard: steps start only within BUDGET_S (default 510) seconds of the part's start (data and
# build included): a step starts only if MIN_STEP_S (30) seconds are left, and its timeout is cut to
# what is left (KILL 10 s after TERM; a trace's python summary <= 20 s more), so a part ends by itself
# within 540 s (steps skipped or cut are listed in OUTDIR/summary_PART.txt) instead of being killed
# at the device tool's 600 s with its summary unwritten. Step timeouts: part 1 = 200 + 150 + 100 + 70
# s, part 2 = 150 + 70 + 60 + 120 s, after the data (<= 60 s) and the build (<= 300 s; ~40 s
# cold, a few s warm); typical runs are far shorter, and only a hang or a cold slow build reaches
# the guard.
set -uo pipefail
PART=${1:-}
OUT=${2:-}
if [ "$PART" != part1 ] && [ "$PART" != part2 ] || [ -z "$OUT" ]; then
  echo "usage: spdnn-resident-trace-gpu.sh part1|part2 OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
unset JHDNN_RESIDENT_KERNEL
ALT=${ALT_KERNEL:-packed}
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
BUDGET=${BUDGET_S:-510}
MIN_STEP=${MIN_STEP_S:-30}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
say() { echo "== $* ($(elapsed) s)"; }
declare -a res=()

# guard NAME CAP: sets T to the timeout NAME may use (CAP, or what is left of the budget if less), or
# returns 1 (and records the skip) when less than MIN_STEP seconds are left. No subshell: res grows.
guard() {
  local name=$1 cap=$2 left=$(( BUDGET - $(elapsed) ))
  if [ "$left" -lt "$MIN_STEP" ]; then
    res+=("$name: SKIPPED (time: $left s of the $BUDGET s budget left)")
    say "$name: skipped, $left s left"
    return 1
  fi
  if [ "$cap" -gt "$left" ]; then
    res+=("$name: timeout cut from $cap to $left s")
    cap=$left
  fi
  T=$cap
}
# run NAME CAP CMD...: CMD under the guarded timeout (then KILL 10 s after TERM), output to
# OUT/NAME.txt; show NAME CAP CMD...: the same, output also on the terminal. Both return 1 if skipped.
run_step() {
  local tee=$1 name=$2 cap=$3 rc
  shift 3
  guard "$name" "$cap" || return 1
  say "$name (timeout $T s)"
  if [ "$tee" = 1 ]; then
    timeout -k 10 "$T" "$@" 2>&1 | tee "$OUT/$name.txt"
    rc=${PIPESTATUS[0]}
  else
    timeout -k 10 "$T" "$@" >"$OUT/$name.txt" 2>&1
    rc=$?
  fi
  res+=("$name: exit $rc$( [ "$rc" = 124 ] || [ "$rc" = 137 ] && echo ' (TIMED OUT)')")
  echo "exit $rc"
}
run() { run_step 0 "$@"; }
show() { run_step 1 "$@"; }
# The Catch2 summary lines of a test log.
test_summary() { grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/$1.txt" | tail -12; }
# The trace summary of trace CSV $1 (quick: python over one CSV, capped at 20 s).
trace_summary() {
  [ -s "$OUT/$1.csv" ] || { echo "no $1.csv"; return 0; }
  timeout 20 python3 scripts/spdnn-resident-trace.py "$OUT/$1.csv" >"$OUT/$1_summary.txt" 2>&1
  head -45 "$OUT/$1_summary.txt"
}

say "$PART: data"
timeout 60 scripts/fetch-spdnn-data.sh || echo "no spdnn data: the data tests and trace 3 will fail"
say "$PART: build ($B)"
if ! timeout 300 bash -c "cmake -S . -B '$B' -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build '$B' -j '$(nproc)' --target test_sparse spdnn_infer" >"$OUT/build_$PART.log" 2>&1; then
  tail -40 "$OUT/build_$PART.log"; echo "BUILD FAILED"; exit 1
fi
res+=("build: done at $(elapsed) s")

if [ "$PART" = part1 ]; then
  run test_resident 200 "$B/tests/test_sparse" "[resident]" --durations yes && test_summary test_resident
  show spdnn_resident_1024 150 "$SI" --width 1024 --layers 120,480,1920 --path resident,graph \
    --validate yes --csv "$OUT/spdnn_resident_1024.csv"
  show spdnn_resident_alt_1024 100 env JHDNN_RESIDENT_KERNEL="$ALT" "$SI" --width 1024 --layers 120,480,1920 \
    --path resident --validate yes --csv "$OUT/spdnn_resident_alt_1024.csv"
  run spdnn_trace_1024_480 70 "$SI" --width 1024 --layers 480 --path resident --validate no \
    --resident-trace "$OUT/trace_1024_480.csv" && trace_summary trace_1024_480
else
  run test_resident_alt 150 env JHDNN_RESIDENT_KERNEL="$ALT" "$B/tests/test_sparse" "[resident]" --durations yes &&
    test_summary test_resident_alt
  run spdnn_trace_alt_1024_480 70 env JHDNN_RESIDENT_KERNEL="$ALT" "$SI" --width 1024 --layers 480 --path resident \
    --validate no --resident-trace "$OUT/trace_alt_1024_480.csv" && trace_summary trace_alt_1024_480
  run spdnn_trace_1024_120_1200 60 "$SI" --width 1024 --layers 120 --images 1200 --path resident \
    --resident-trace "$OUT/trace_1024_120_1200.csv" && trace_summary trace_1024_120_1200
  run ncu_resident_60000 120 ncu --clock-control none --section SpeedOfLight --section LaunchStats \
    --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats \
    -k regex:dnn_resident_kernel --launch-skip 2 -c 1 "$SI" --width 1024 --layers 120 --path resident \
    --validate no &&
    grep -E "dnn_resident|Duration|Elapsed Cycles|SM Active Cycles|Executed Instructions |Issued Ipc Active|Grid Size|No Eligible" \
      "$OUT/ncu_resident_60000.txt" | head -12
fi
say "$PART: done"
printf '%s\n' "${res[@]}" | tee "$OUT/summary_$PART.txt"
