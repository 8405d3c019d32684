#!/usr/bin/env bash
# On the GPU machine: build, run every test (GPU ones included), the GPU test binary under
# compute-sanitizer memcheck, the comparison driver and the benchmarks; write logs and
# summary.md to OUTDIR.
#
#   JHDNN_COMMIT=<sha> scripts/gpu-check.sh OUTDIR      (the commit, when .git did not travel)
#   MEMCHECK=0 / BENCH=0 / VERIFY_SUITE=0 / BENCH_CONV=0 skip those steps; *_TIMEOUT (seconds) bound each step;
#   COMPARE_ARGS go to jhdnn-bench, BENCH_ARGS to bench_conv (default: the rn50 c2/c3 layers only).
#   TESTS=0 skips ctest (CTEST_ARGS are added to it, e.g. -j3); MEMCHECK_BINS lists the test binaries
#   run under memcheck (default test_conv_direct, MEMCHECK_ARGS their Catch2 filter), e.g.
#   MEMCHECK_BINS="test_conv_tensorcore test_gemm_tensorcore test_gemm_hopper test_sparse test_gemm
#   test_conv_gemm test_conv_implicit_gemm" MEMCHECK_ARGS='~[large]'; RACECHECK_BINS likewise with
#   compute-sanitizer --tool racecheck (RACECHECK_ARGS their filter). scripts/gpu-profile.sh runs ncu.
#   FAMILIES=1 also runs the per-family benchmarks: bench_gemm (GEMM_ARGS), bench_tensorcore (TC_ARGS),
#   bench_gemm_hopper (HOPPER_ARGS), bench_conv_igemm (IGEMM_ARGS) and the sparse path (spdnn_infer SPDNN_ARGS, bench_sparse SPARSE_ARGS);
#   FAMILY_LIST="bench_gemm spdnn_infer ..." runs only those.
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

# The public-nets suite in verify mode (no timing), so it may share the GPU with the tests: it runs in
# the background while ctest runs.
verify_suite() {
  timeout "${VERIFY_TIMEOUT:-420}" "$BUILD_DIR/tools/jhdnn-bench/jhdnn-bench" --suite=bench/suites/public-nets.txt --mode=verify --cudnn=none \
    --csv="$OUT/verify-public-nets.csv" >"$OUT/verify-public-nets.txt" 2>&1
  echo "jhdnn-bench exit $?" >>"$OUT/verify-public-nets.txt"
}
verify_pid=""
if [ "${BENCH:-1}" = 1 ] && [ "${VERIFY_SUITE:-1}" = 1 ]; then
  step "jhdnn-bench verify public-nets (background)"
  verify_suite & verify_pid=$!
fi

ctest_rc="not run"
if [ "${TESTS:-1}" = 1 ]; then
step ctest
scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: its tests fail (JHDNN_REQUIRE_GPU; carry data/spdnn)"
timeout "${CTEST_TIMEOUT:-400}" ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 300 --output-junit "$OUT/ctest-junit.xml" ${CTEST_ARGS:-} >"$OUT/ctest.log" 2>&1
ctest_rc=$?
tail -5 "$OUT/ctest.log"
cp "$BUILD_DIR/Testing/Temporary/LastTest.log" "$OUT/ctest-full.log" 2>/dev/null
# The bad-input table (status | message | input) with the GPU rows included: docs/bad-inputs.txt.
JHDNN_PRINT_BAD_INPUTS=1 "$BUILD_DIR/tests/test_api" 2>&1 | sed -n 's/^BAD-INPUT | //p' >"$OUT/bad-inputs.txt"
fi

if [ -n "$verify_pid" ]; then
  wait "$verify_pid"; step "jhdnn-bench verify public-nets done"; tail -3 "$OUT/verify-public-nets.txt"
fi

memcheck="not run"
if [ "${MEMCHECK:-1}" = 1 ]; then
  step memcheck
  memcheck=""
  for bin in ${MEMCHECK_BINS:-test_conv_direct}; do
    timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
      "$BUILD_DIR/tests/$bin" ${MEMCHECK_ARGS:-} >"$OUT/memcheck-$bin.log" 2>&1
    mc_rc=$?
    tail -3 "$OUT/memcheck-$bin.log"
    memcheck="$memcheck $bin: exit $mc_rc, $(grep -E "ERROR SUMMARY" "$OUT/memcheck-$bin.log" | tail -1 | sed 's/=* *//');"
  done
  # Shared-memory races (the cp.async / TMA / mbarrier pipelines): RACECHECK_BINS, each with
  # RACECHECK_ARGS as its Catch2 filter (racecheck is slow: pick small cases).
  for bin in ${RACECHECK_BINS:-}; do
    timeout "${MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool racecheck --error-exitcode 99 \
      "$BUILD_DIR/tests/$bin" ${RACECHECK_ARGS:-} >"$OUT/racecheck-$bin.log" 2>&1
    rc_rc=$?
    tail -3 "$OUT/racecheck-$bin.log"
    memcheck="$memcheck racecheck $bin: exit $rc_rc, $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/racecheck-$bin.log" | tail -1 | sed 's/=* *//');"
  done
fi

if [ "${BENCH:-1}" = 1 ]; then
  step jhdnn-bench
  timeout "${COMPARE_TIMEOUT:-420}" "$BUILD_DIR/tools/jhdnn-bench/jhdnn-bench" ${COMPARE_ARGS:-} --csv="$OUT/bench.csv" >"$OUT/compare.txt" 2>&1
  echo "jhdnn-bench exit $?" >>"$OUT/compare.txt"
  python3 scripts/report.py "$OUT/bench.csv" "$OUT/report" >/dev/null 2>&1 || echo "report.py failed (matplotlib missing?)"
  step benchmarks
  [ "${BENCH_CONV:-1}" = 1 ] && timeout "${BENCH_TIMEOUT:-180}" "$BUILD_DIR/bench/bench_conv" --benchmark_format=console --benchmark_out="$OUT/bench.json" \
    --benchmark_out_format=json ${BENCH_ARGS:---benchmark_filter=rn50_c[23]} >"$OUT/bench.txt" 2>&1
fi

if [ "${FAMILIES:-0}" = 1 ]; then
  fam() {  # name timeout binary args...  (only the names in FAMILY_LIST, default all)
    local name=$1 t=$2; shift 2
    case " ${FAMILY_LIST:-bench_gemm bench_gemm_hopper bench_tensorcore bench_conv_igemm spdnn_infer bench_sparse} " in
      *" $name "*) ;; *) return 0 ;;
    esac
    step "$name"
    timeout "$t" "$@" >"$OUT/$name.txt" 2>&1; echo "$name exit $?" >>"$OUT/$name.txt"; tail -2 "$OUT/$name.txt"
  }
  fam bench_gemm "${GEMM_TIMEOUT:-90}" "$BUILD_DIR/bench/bench_gemm" --benchmark_out="$OUT/bench_gemm.json" --benchmark_out_format=json ${GEMM_ARGS:-}
  fam bench_gemm_hopper "${HOPPER_TIMEOUT:-60}" "$BUILD_DIR/bench/bench_gemm_hopper" --benchmark_out="$OUT/bench_gemm_hopper.json" --benchmark_out_format=json ${HOPPER_ARGS:-}
  fam bench_tensorcore "${TC_TIMEOUT:-120}" "$BUILD_DIR/bench/bench_tensorcore" --benchmark_out="$OUT/bench_tensorcore.json" --benchmark_out_format=json ${TC_ARGS:-}
  fam bench_conv_igemm "${IGEMM_TIMEOUT:-120}" "$BUILD_DIR/bench/bench_conv_igemm" --benchmark_out="$OUT/bench_conv_igemm.json" --benchmark_out_format=json ${IGEMM_ARGS:-}
  scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: its tests fail (JHDNN_REQUIRE_GPU; carry data/spdnn)"
  fam spdnn_infer "${SPDNN_TIMEOUT:-200}" "$BUILD_DIR/examples/spdnn_infer" ${SPDNN_ARGS:---width 1024,4096,16384,65536 --layers 120 --validate yes} \
    --csv "$OUT/spdnn_infer.csv" --active-csv "$OUT/spdnn_active.csv"
  fam bench_sparse "${SPARSE_TIMEOUT:-240}" "$BUILD_DIR/bench/bench_sparse" --benchmark_out="$OUT/bench_sparse.json" --benchmark_out_format=json ${SPARSE_ARGS:-}
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
L.append(f"- compute-sanitizer memcheck: {memcheck}")
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
for name in ("bench_gemm", "bench_gemm_hopper", "bench_tensorcore", "bench_conv_igemm", "spdnn_infer", "bench_sparse"):
    f = os.path.join(out, name + ".txt")
    if os.path.exists(f):
        L.append(f"\n## {name}\n")
        L.append("```"); L.append("\n".join(l for l in open(f).read().splitlines() if not l.startswith("***"))); L.append("```")
open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L[:8]))
PY
step done
