#!/usr/bin/env bash
# On the GPU machine: build, run every test (GPU ones included), the GPU test binary under
# compute-sanitizer memcheck, the comparison driver and the benchmarks; write logs and
# summary.md to OUTDIR.
#
#   JHDNN_COMMIT=<sha> scripts/gpu-check.sh OUTDIR      (the commit, when .git did not travel)
#   MEMCHECK=0 / BENCH=0 / VERIFY_SUITE=0 skip those steps; *_TIMEOUT (seconds) bound each step;
#   COMPARE_ARGS go to jhdnn-bench, BENCH_ARGS to bench_conv (default: the rn50 c2/c3 layers only).
set -uo pipefail
OUT=${1:?usage: gpu-check.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1  # here a GPU test that cannot find the GPU fails instead of skipping
BUILD_DIR=${BUILD_DIR:-build-gpu}
commit=${JHDNN_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step configure+build
if ! { cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD_DIR" -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -50 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi

step ctest
timeout "${CTEST_TIMEOUT:-400}" ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 300 --output-junit "$OUT/ctest-junit.xml" >"$OUT/ctest.log" 2>&1
ctest_rc=$?
tail -5 "$OUT/ctest.log"
cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$OUT/ctest-full.log" 2>/dev/null
# The bad-input table (status | message | input) with the GPU rows included: docs/bad-inputs.txt.
JHDNN_PRINT_BAD_INPUTS=1 "$BUILD_DIR/tests/test_api" 2>&1 | sed -n 's/^BAD-INPUT | //p' >"$OUT/bad-inputs.txt"

memcheck="not run"
if [ "${MEMCHECK:-1}" = 1 ]; then
  step memcheck
  timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
    "$BUILD_DIR/tests/test_conv_direct" ${MEMCHECK_ARGS:-} >"$OUT/memcheck.log" 2>&1
  mc_rc=$?
  tail -4 "$OUT/memcheck.log"
  memcheck="exit $mc_rc; $(grep -E "ERROR SUMMARY" "$OUT/memcheck.log" | tail -1)"
fi

if [ "${BENCH:-1}" = 1 ]; then
  step jhdnn-bench
  timeout "${COMPARE_TIMEOUT:-420}" "$BUILD_DIR/tools/jhdnn-bench/jhdnn-bench" ${COMPARE_ARGS:-} --csv="$OUT/bench.csv" >"$OUT/compare.txt" 2>&1
  echo "jhdnn-bench exit $?" >>"$OUT/compare.txt"
  if [ "${VERIFY_SUITE:-1}" = 1 ]; then
    step jhdnn-bench verify public-nets
    timeout "${VERIFY_TIMEOUT:-420}" "$BUILD_DIR/tools/jhdnn-bench/jhdnn-bench" --suite=bench/suites/public-nets.txt --mode=verify --cudnn=none \
      --csv="$OUT/verify-public-nets.csv" >"$OUT/verify-public-nets.txt" 2>&1
    echo "jhdnn-bench exit $?" >>"$OUT/verify-public-nets.txt"
    tail -3 "$OUT/verify-public-nets.txt"
  fi
  python3 scripts/report.py "$OUT/bench.csv" "$OUT/report" >/dev/null 2>&1 || echo "report.py failed (matplotlib missing?)"
  step benchmarks
  timeout "${BENCH_TIMEOUT:-180}" "$BUILD_DIR/bench/bench_conv" --benchmark_format=console --benchmark_out="$OUT/bench.json" \
    --benchmark_out_format=json ${BENCH_ARGS:---benchmark_filter=rn50_c[23]} >"$OUT/bench.txt" 2>&1
fi

step summary
python3 - "$OUT" "$commit" "$ctest_rc" "$memcheck" <<'PY'
import sys, os, re, subprocess, xml.etree.ElementTree as ET
out, commit, ctest_rc, memcheck = sys.argv[1:5]
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
    except Exception: return "?"
gpu = sh("nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader")
cuda = sh("nvcc --version | tail -2 | head -1")
cudnn = sh("grep -h -E '#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' /usr/include/x86_64-linux-gnu/cudnn_version*.h /usr/include/cudnn_version*.h /usr/local/cuda/include/cudnn_version.h 2>/dev/null | awk '{print $3}' | head -3 | paste -sd.")
run = passed = failed = skipped = 0
rows = []
try:
    root = ET.parse(os.path.join(out, "ctest-junit.xml")).getroot()
    for tc in root.iter("testcase"):
        run += 1
        st = tc.get("status", "")
        if tc.find("failure") is not None or st == "fail": failed += 1; rows.append(("FAILED", tc.get("name")))
        elif tc.find("skipped") is not None or st in ("notrun", "disabled"): skipped += 1; rows.append(("SKIPPED", tc.get("name")))
        else: passed += 1
except Exception as e:
    rows.append(("junit unreadable", str(e)))
L = []
L.append("# jhDNN GPU check\n")
L.append(f"- commit: `{commit}`")
L.append(f"- GPU: {gpu}")
L.append(f"- CUDA: {cuda}")
L.append(f"- cuDNN: {cudnn}")
L.append(f"- tests (ctest): {run} run, {passed} passed, {failed} failed, {skipped} skipped (ctest exit {ctest_rc})")
L.append(f"- compute-sanitizer memcheck of test_conv_direct: {memcheck}")
for k, n in rows: L.append(f"  - {k}: {n}")
cmp = os.path.join(out, "compare.txt")
if os.path.exists(cmp):
    L.append("\n## jhdnn-bench (every solver vs cuDNN; full report in report/report.md)\n")
    # The full table (one row per algorithm, with its command) is in compare.txt / report/report.md;
    # here: the header, every mismatch and the totals.
    keep = [l for l in open(cmp).read().splitlines() if l.startswith(("#", "MISMATCH", "  repro:", "jhdnn-bench"))]
    L.append("```"); L.append("\n".join(keep)); L.append("```")
vp = os.path.join(out, "verify-public-nets.txt")
if os.path.exists(vp):
    L.append("\n## jhdnn-bench --mode=verify over bench/suites/public-nets.txt (last lines)\n")
    L.append("```"); L.append("\n".join(open(vp).read().rstrip().splitlines()[-5:])); L.append("```")
b = os.path.join(out, "bench.txt")
if os.path.exists(b):
    L.append("\n## Google Benchmark (bench_conv)\n")
    L.append("```"); L.append("\n".join(l for l in open(b).read().splitlines() if not l.startswith("***"))); L.append("```")
open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L[:8]))
PY
step done
