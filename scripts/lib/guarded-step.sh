# Sourced by the GPU scripts (bash): time-guarded steps for one device call, whose limit is 600 s.
#
#   OUT=/abs/outdir BUDGET_S=540 source scripts/lib/guarded-step.sh
#   step NAME TIMEOUT CMD...   runs CMD with its output in $OUT/NAME.txt, unless fewer than 15 s of the
#                              BUDGET_S seconds (counted from the source) are left; its timeout is cut to
#                              what is left, so the call ends by itself with what it has written
#   step_summary               prints every step's exit status (or "skipped (time)") and writes them to
#                              $OUT/summary.txt
# BUDGET_S may change between steps (it is read by each step); the default is 540.
step_t0=$(date +%s)
declare -a step_results=()
step() {
  local n=$1 t=$2
  shift 2
  local left=$((${BUDGET_S:-540} - ($(date +%s) - step_t0)))
  if [ "$left" -lt 15 ]; then
    step_results+=("$n: skipped (time)")
    return
  fi
  [ "$t" -gt "$left" ] && t=$left
  echo "== $n ($(($(date +%s) - step_t0)) s)"
  timeout -k 5 "$t" "$@" >"$OUT/$n.txt" 2>&1
  local rc=$?
  step_results+=("$n: exit $rc ($(($(date +%s) - step_t0)) s)")
  tail -3 "$OUT/$n.txt"
}
step_summary() { printf '%s\n' "${step_results[@]}" | tee "$OUT/summary.txt"; }

# build_step BUILD_DIR TARGET...   configures (Release, Ninja) and builds the targets with the log in $OUT/build.log,
#                                  records "build: done (N s)"; on failure prints the log's tail and exits the
#                                  script (nothing after a failed build is worth the device time)
build_step() {
  local b=$1
  shift
  echo "== build"
  if ! { cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$b" -j "$(nproc)" --target "$@"; } \
    >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    echo "BUILD FAILED"
    exit 1
  fi
  step_results+=("build: done ($(($(date +%s) - step_t0)) s)")
}

# build_new_and_base "FLAGS" TARGET...   A/B scripts: configures and builds TARGET... in $B (with the cmake FLAGS) and
#                                        spdnn_infer in build-base from BASE_DIR (default out/base; exit 2 if it
#                                        holds no tree), tests and benches off, in parallel,
#                                        half the cores each, logs in $OUT/build.log and $OUT/build-base.log; records
#                                        "builds: done (N s)"; on a failure prints both logs' tails, packs
#                                        $OUT/r.tgz and exits the script
build_new_and_base() {
  local flags=$1 base=${BASE_DIR:-out/base}
  shift
  [ -f "$base/CMakeLists.txt" ] || { echo "no base tree at $base"; exit 2; }
  local j=$(($(nproc) / 2)) rn rb
  [ "$j" -lt 1 ] && j=1
  echo "== builds"
  # shellcheck disable=SC2086  # FLAGS is a list
  { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release $flags && cmake --build "$B" -j "$j" --target "$@"; } \
    >"$OUT/build.log" 2>&1 &
  local pn=$!
  { cmake -S "$base" -B build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF \
    -DJHDNN_BUILD_BENCH=OFF && cmake --build build-base -j "$j" --target spdnn_infer; } >"$OUT/build-base.log" 2>&1 &
  local pb=$!
  wait $pn
  rn=$?
  wait $pb
  rb=$?
  if [ $rn -ne 0 ] || [ $rb -ne 0 ]; then
    tail -30 "$OUT/build.log" "$OUT/build-base.log"
    echo "BUILD FAILED"
    tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
    exit 1
  fi
  step_results+=("builds: done ($(($(date +%s) - step_t0)) s)")
}

# infer_rows FILE...   for each spdnn_infer output that exists: its name, then each row's width, layers, loop ms and
#                      validation, on one line
infer_rows() {
  local f
  for f in "$@"; do
    [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $1, $2, $5, $10, $11}' | tr '\n' ' ')"
  done
  return 0
}

# resident_resources BUILD_DIR   REG / STACK of every dnn_resident_kernel instantiation, one line each
#                                ("REG:95 STACK:0 kernel<i4ELb0ELb1ELb1ELi4": S, traced, bulk, pair, kLaneRows),
#                                also written to $OUT/resource-usage.txt
resident_resources() {
  cuobjdump --dump-resource-usage "$1/src/CMakeFiles/jhdnn.dir/sparse/dnn_resident.cu.o" 2>/dev/null |
    awk '/Function/{f=$2} /REG:/{match($0,/REG:[0-9]+ STACK:[0-9]+/); print substr($0,RSTART,RLENGTH), f}' |
    sed 's/_ZN5jhdnn6sparse[0-9A-Za-z_]*dnn_resident_kernelIL/kernel</; s/EEEv.*//' | tee "$OUT/resource-usage.txt"
}

# ctest_step BUILD_DIR   the whole ctest (-j8) with the time left less 10 s. --timeout 400: test_sparse's reuse-tile
#                        case runs every tile (ten since session 25): 224 s alone on the H200
#                        (bench/results/ac17bb9/reuse_test.txt), over the 200 s the scripts gave it before.
ctest_step() {
  local left=$((${BUDGET_S:-540} - ($(date +%s) - step_t0)))
  step ctest $((left - 10)) ctest --test-dir "$1" -j8 --output-on-failure --timeout 400 "${@:2}"
}
# late4_sanitize_steps TILE...   compute-sanitizer racecheck and memcheck of test_sparse's reuse-tile "late4:" cases
#                                under each tile named ($T/test_sparse, built by the caller), a step each
late4_sanitize_steps() {
  local tile tool
  for tile in "$@"; do
    for tool in racecheck memcheck; do
      step "${tool}_$tile" 130 env JHDNN_TEST_SPDNN_TILE="$tile" JHDNN_TEST_REUSE_CASE="late4:" compute-sanitizer \
        --tool "$tool" --error-exitcode 99 "$T/test_sparse" "fused and multi-layer paths*"
    done
  done
}
# racecheck_steps "SPEC|SPEC..."   compute-sanitizer racecheck of each test_sparse test-case spec ('|' between
#                                 specs, which hold commas and spaces), a step each (racecheck_1, racecheck_2, ...)
racecheck_steps() {
  local spec k=0
  local -a specs
  IFS='|' read -r -a specs <<< "$1"
  for spec in "${specs[@]}"; do
    k=$((k + 1))
    step "racecheck_$k" 150 compute-sanitizer --tool racecheck --error-exitcode 99 "$T/test_sparse" "$spec"
  done
}
# verify_report BENCH_TXT   what a verifying run prints last: ctest's summary, spdnn_infer's rows, the SpDNN times
verify_report() {
  grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" | head
  grep -hE '^ +[0-9]+ +[0-9]+ ' "$OUT"/spdnn_infer_*.txt | awk '{print $1, $2, $5, $10, $11}'
  grep -E "^SpDNN" "$1" | awk '{print $1, $2, $3}'
}
# ncu_profile NAME KERNEL_REGEX SKIP ARGS...   one launch of the kernels matching KERNEL_REGEX (the SKIP + 1-th) of
#     $SI ARGS --validate no --no-warmup under ncu (--clock-control none, --cache-control ${NCU_CACHE:-all}; the
#     details sections and SourceCounters), then its details page ($OUT/details_NAME.txt, CSV) and its
#     per-instruction source page ($OUT/src_NAME.csv.gz, for scripts/ncu-source-lines.py); the report is deleted
NCU_SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
--section SchedulerStats --section SourceCounters --section MemoryWorkloadAnalysis"
ncu_profile() {
  local name=$1 kregex=$2 skip=$3
  shift 3
  # shellcheck disable=SC2086  # NCU_SECTIONS is a list
  step "ncu_$name" 120 ncu --clock-control none --cache-control "${NCU_CACHE:-all}" $NCU_SECTIONS --import-source no \
    -k "regex:$kregex" --launch-skip "$skip" --launch-count 1 -f -o "$OUT/rep_$name" "$SI" --validate no \
    --no-warmup "$@"
  step "details_$name" 60 ncu -i "$OUT/rep_$name.ncu-rep" --page details --csv
  ncu -i "$OUT/rep_$name.ncu-rep" --page source --csv --print-source sass 2> /dev/null | gzip > "$OUT/src_$name.csv.gz"
  rm -f "$OUT/rep_$name.ncu-rep"
}
# ncu_metrics_summary   every $OUT/ncu_*.txt of `ncu --metrics ... --csv` runs: launch number, metric, unit, value
ncu_metrics_summary() {
  local f
  for f in "$OUT"/ncu_*.txt; do
    echo "== $(basename "$f" .txt)"
    # ncu's CSV: "ID",...,"Metric Name","Metric Unit","Metric Value"
    grep -E '^"[0-9]' "$f" | awk -F'","' '{gsub(/"/, "", $1); gsub(/"/, "", $NF); print $1, $(NF-2), $(NF-1), $NF}' |
      head -32
  done
}
# ncu_details_summary   the main figures of every $OUT/details_*.txt (ncu_profile's details pages)
ncu_details_summary() {
  local f
  for f in "$OUT"/details_*.txt; do
    echo "== $(basename "$f" .txt)"
    grep -E '"(Duration|SM Active Cycles|Elapsed Cycles|Achieved Occupancy|Registers Per Thread|Grid Size|Block Size|Issued Ipc Active|No Eligible|Warp Cycles Per Issued Instruction|DRAM Throughput|L2 Hit Rate)"' "$f" |
      awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -14
  done
}
