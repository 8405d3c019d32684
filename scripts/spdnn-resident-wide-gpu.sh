#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 540 s; its limit is 600 s a call): the resident
# kernel quad (src/sparse/README.md "Quad") against duo (16 warps, two rows x 4 images per lane, 4 chunks
# per iteration from a ring of 8; README "Duo, 16 warps"). Run at trial ba5fa93 (bench/results/ba5fa93/
# resident/), when quad was still the default; duo is the default since that run (the A/B below sets
# JHDNN_RESIDENT_KERNEL explicitly, so it still compares the two). The wide kernel and the 8-warp duo
# once compared here are deleted.
#
#   scripts/spdnn-resident-wide-gpu.sh OUTDIR
#
# Builds test_sparse and spdnn_infer in BUILD_DIR (default build-gpu, git-ignored; ~30-40 s cold, a few
# s warm) and unpacks the challenge data, then:
#   1. the [resident] tests with the default kernel (duo since session 14; the bitwise test runs quad,
#      duo, pair, bulk and packed through the config setter), then the GPU ones again with
#      JHDNN_RESIDENT_KERNEL=quad, =pair, =bulk and =packed;
#   2. timing A/B: spdnn_infer N = 1024 L = 120 / 480 / 1920, 60000 images, path resident, exact
#      (--validate yes), for quad and duo, twice each interleaved (measured at ee8bd21: quad
#      2.103 / 4.065 / 11.72 ms, ~5.3 us per late layer; duo predicted ~2.0 / 3.6-4.0 / 9.8-11.4 ms,
#      4.2-5.1 us per late layer);
#   3. the per-CTA trace of N = 1024 L = 480 for quad and duo (per-layer time per CTA and thread 0's
#      wait share; pair at 8ca56ea: 6.08 us, 4.3%), summarised by scripts/spdnn-resident-trace.py;
#   4. ncu of the measured run's first resident launch (N = 1024 L = 120, --launch-skip 2), quad then
#      duo: instructions, IPC, L1 / L2 throughput, stalls (quad at ee8bd21: 512 us, 258 M instructions,
#      85.9 M shared wavefronts, L1/TEX 66%; duo predicted 400-490 us, ~200 M instructions, ~60 M
#      wavefronts);
#   5. compute-sanitizer: racecheck of the trace test under duo, memcheck of the bitwise test.
# Time guard as in spdnn-resident-trace-gpu.sh: a step starts only if MIN_STEP_S (30) seconds of
# BUDGET_S (510) are left, and its timeout is cut to what is left, so the call ends by itself with
# OUTDIR/summary.txt written (steps skipped or cut are listed there).
set -uo pipefail
OUT=${1:-}
if [ -z "$OUT" ]; then
  echo "usage: spdnn-resident-wide-gpu.sh OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
unset JHDNN_RESIDENT_KERNEL
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
BUDGET=${BUDGET_S:-510}
MIN_STEP=${MIN_STEP_S:-30}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
say() { echo "== $* ($(elapsed) s)"; }
declare -a res=()

# guard NAME CAP: sets T to the timeout NAME may use (CAP, or what is left of the budget if less), or
# returns 1 (and records the skip) when less than MIN_STEP seconds are left.
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
# run NAME CAP CMD...: CMD under the guarded timeout (KILL 10 s after TERM), output to OUT/NAME.txt;
# show: the same, output also on the terminal. Both return 1 if skipped, else CMD's status.
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
  return "$rc"
}
run() { run_step 0 "$@"; }
show() { run_step 1 "$@"; }
test_summary() { grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/$1.txt" | tail -12; }
trace_summary() {
  [ -s "$OUT/$1.csv" ] || { echo "no $1.csv"; return 0; }
  timeout 20 python3 scripts/spdnn-resident-trace.py "$OUT/$1.csv" >"$OUT/$1_summary.txt" 2>&1
  grep -E "^N |per-layer time|from clk|waited|VERDICT" "$OUT/$1_summary.txt" | head -24
}

say "data"
timeout 60 scripts/fetch-spdnn-data.sh || echo "no spdnn data: the data tests will fail"
say "build ($B)"
if ! timeout 300 bash -c "cmake -S . -B '$B' -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build '$B' -j '$(nproc)' --target test_sparse spdnn_infer" >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
res+=("build: done at $(elapsed) s")

run test_resident 120 "$B/tests/test_sparse" "[resident]" --durations yes; test_summary test_resident
for K in quad pair bulk packed; do  # the default run above is duo's
  run "test_resident_$K" 90 env JHDNN_RESIDENT_KERNEL=$K "$B/tests/test_sparse" "[resident]~[cpu]" --durations yes
  test_summary "test_resident_$K"
done
for R in 1 2; do
  for K in quad duo; do
    show "spdnn_resident_${K}_1024_$R" 70 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 1024 --layers 120,480,1920 \
      --path resident --validate yes --csv "$OUT/spdnn_resident_${K}_1024_$R.csv"
  done
done
for K in quad duo; do
  run "spdnn_trace_${K}_1024_480" 70 env JHDNN_RESIDENT_KERNEL=$K "$SI" --width 1024 --layers 480 --path resident \
    --validate no --resident-trace "$OUT/trace_${K}_1024_480.csv" && trace_summary "trace_${K}_1024_480"
done
for K in quad duo; do
  run "ncu_resident_${K}_60000" 100 env JHDNN_RESIDENT_KERNEL=$K ncu --clock-control none --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
    -k regex:dnn_resident_kernel --launch-skip 2 -c 1 \
    "$SI" --width 1024 --layers 120 --path resident --validate no &&
    grep -E "dnn_resident|Duration|Elapsed Cycles|SM Active Cycles|Executed Instructions |Issued Ipc Active|L1/TEX Cache Throughput|L2 Cache Throughput|Block Size|Registers Per|wavefronts_mem_shared|inst_executed" \
      "$OUT/ncu_resident_${K}_60000.txt" | head -16
done
# The sanitizers on duo's ring (8 slots, TMA writes against the warps' reads): racecheck of the trace
# test under duo, memcheck of the bitwise test (it runs every kernel through the setter).
run racecheck_resident_duo 60 env JHDNN_RESIDENT_KERNEL=duo compute-sanitizer --tool racecheck --error-exitcode 99 \
  "$B/tests/test_sparse" "resident trace: one record per event*" && tail -3 "$OUT/racecheck_resident_duo.txt"
run memcheck_resident 100 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/test_sparse" \
  "resident layers: bitwise the fma chain and the fused path*" && tail -3 "$OUT/memcheck_resident.txt"
say "done"
printf '%s\n' "${res[@]}" | tee "$OUT/summary.txt"
