#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: spdnn_infer of several source trees against each other, in turn,
# twice, after each tree's own tests. For branches not yet measured (wip/*.patch): one build set and one machine
# start instead of a call per branch.
#
#   TREES="base:out/base pdl:out/pdl checks:out/checks" JHDNN_COMMIT=<sha> bash scripts/spdnn-trees-gpu.sh $OUT/t
#   mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t        (carry the trees' folders and data/spdnn)
# Make a tree here: `git archive <commit> CMakeLists.txt cmake include src tools tests/common tests examples |
# tar x -C out/<name>` (tests included for the non-base trees). The first tree is the base (spdnn_infer only); every
# other tree also builds test_sparse and runs TESTS (a Catch2 filter, default "[resident],inference:*,fused and
# multi-layer paths: the width-32 reuse tile is bitwise the fma chain" under JHDNN_TEST_SPDNN_TILE=late4crowd).
# SPECS: path:width:layers items (default "resident:1024:120,480 resident:4096:120,480 graph:16384:120,480").
# The summary lists each run's rows (width, layers, loop ms, validation) and the host times of spdnn_infer's '#' line.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
echo "commit ${JHDNN_COMMIT:-unknown}; trees ${TREES:-}" > "$OUT/commit.txt"
read -r -a trees <<< "${TREES:?name:folder pairs, the base first}"
[ "${#trees[@]}" -ge 2 ] || { echo "TREES needs at least two trees"; exit 2; }
j=$(($(nproc) / ${#trees[@]}))
[ "$j" -lt 1 ] && j=1
echo "== builds"
pids=()
for i in "${!trees[@]}"; do
  name=${trees[$i]%%:*} dir=${trees[$i]#*:}
  [ -f "$dir/CMakeLists.txt" ] || { echo "no tree at $dir"; exit 2; }
  targets="spdnn_infer" flags="-DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF"
  [ "$i" -gt 0 ] && targets="spdnn_infer test_sparse" flags="-DJHDNN_BUILD_BENCH=OFF"
  # shellcheck disable=SC2086  # lists
  { cmake -S "$dir" -B "build-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release $flags &&
    cmake --build "build-$name" -j "$j" --target $targets; } > "$OUT/build-$name.log" 2>&1 &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
if [ $failed -ne 0 ]; then
  for i in "${!trees[@]}"; do tail -20 "$OUT/build-${trees[$i]%%:*}.log"; done
  echo "BUILD FAILED"
  tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
  exit 1
fi
step_results+=("builds: done ($(($(date +%s) - step_t0)) s)")
TESTS=${TESTS:-"[resident],inference:*,fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"}
for i in "${!trees[@]}"; do
  [ "$i" -eq 0 ] && continue
  name=${trees[$i]%%:*}
  # (the data folder named: the trees are not in the repository root, where the tests look for it by default)
  step "test_$name" 200 env JHDNN_TEST_SPDNN_TILE=late4crowd JHDNN_SPDNN_DIR="$PWD/data/spdnn" \
    "build-$name/tests/test_sparse" "$TESTS"
done
for rep in 1 2; do
  for spec in ${SPECS:-resident:1024:120,480 resident:4096:120,480 graph:16384:120,480}; do
    IFS=: read -r p w l <<< "$spec"
    for i in "${!trees[@]}"; do
      name=${trees[$i]%%:*}
      step "ab_${p}_${w}_${name}_$rep" 45 env LD_LIBRARY_PATH="$PWD/build-$name/src" "build-$name/examples/spdnn_infer" \
        --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers "$l" --validate no
    done
  done
done
for i in "${!trees[@]}"; do
  name=${trees[$i]%%:*}
  step "exact_1024_$name" 30 env LD_LIBRARY_PATH="$PWD/build-$name/src" "build-$name/examples/spdnn_infer" \
    --data "$PWD/data/spdnn" --width 1024 --layers 120 --validate yes
done
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt
for f in "$OUT"/ab_*.txt; do
  echo "$(basename "$f" .txt): $(grep -o 'API host time [0-9.]* ms\( (first [a-z-]* call [0-9.]* ms\)\?' "$f" | tr '\n' ' ')"
done
for f in "$OUT"/test_*.txt; do echo "$(basename "$f" .txt): $(grep -E 'passed|failed' "$f" | tail -1)"; done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
