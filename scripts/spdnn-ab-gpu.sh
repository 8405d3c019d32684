#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, two cold builds included): this tree against BASE_DIR's
# (default out/base: `git archive <base> CMakeLists.txt cmake include src tools tests/common examples | tar x -C
# out/base`, carried), spdnn_infer in turn, REPS times (default 2), for each path:width:layers of SPECS; exact runs of
# this tree (EXACT: path:width:layers items); then the whole ctest of this tree with the time left (CTEST=0 skips it;
# CTEST_REGEX: only the tests it matches, ctest -R; TARGETS: what to build then); RACECHECK_CASES: test_sparse
# test-case specs ('|' between them) run under compute-sanitizer racecheck last, one step each; AB_ENV (below);
# AB_ARGS: more spdnn_infer options for both sides' A/B runs (e.g. --no-warmup).
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-ab-gpu.sh $OUT/a; mv $OUT/a/r.tgz $OUT/; rm -rf $OUT/a
# (carry out/base and data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-1}" = 0 ]; then build_new_and_base "-DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF" spdnn_infer
else
  # shellcheck disable=SC2086  # a list of targets (TARGETS: fewer than all, e.g. for a CTEST_REGEX)
  build_new_and_base "" ${TARGETS:-all}
fi
# AB_ENV: NAME=value words set for the A/B runs (both sides) and the exact runs, not the ctest (e.g.
# JHDNN_RESIDENT_KERNEL=valsfan to time and check a fallback kernel).
# shellcheck disable=SC2206  # AB_ENV is a list of words
AB=(${AB_ENV:-})
NEW=(env "${AB[@]}" LD_LIBRARY_PATH="$PWD/$B/src" "$SI")
OLD=(env "${AB[@]}" LD_LIBRARY_PATH="$PWD/build-base/src" build-base/examples/spdnn_infer --data "$PWD/data/spdnn")
SPECS=${SPECS:-resident:1024:120,480 resident:4096:120,480 graph:16384:120,480 graph:65536:120}
for rep in $(seq "${REPS:-2}"); do
  for spec in $SPECS; do
    IFS=: read -r p w l <<< "$spec"
    # shellcheck disable=SC2086  # AB_ARGS is a list of words
    step "ab_${p}_${w}_${l//,/-}_base_$rep" 45 "${OLD[@]}" --path "$p" --width "$w" --layers "$l" --validate no \
      ${AB_ARGS:-}
    # shellcheck disable=SC2086
    step "ab_${p}_${w}_${l//,/-}_new_$rep" 45 "${NEW[@]}" --path "$p" --width "$w" --layers "$l" --validate no \
      ${AB_ARGS:-}
  done
done
for spec in ${EXACT:-resident:1024:120 resident:4096:480 graph:16384:120 graph:65536:120}; do
  IFS=: read -r p w l <<< "$spec"
  step "exact_${p}_${w}_${l//,/-}" 60 "${NEW[@]}" --path "$p" --width "$w" --layers "$l" --validate yes
done
if [ "${CTEST:-1}" != 0 ]; then
  # shellcheck disable=SC2086  # no regex: no arguments
  ctest_step "$B" ${CTEST_REGEX:+-R "$CTEST_REGEX"}
fi
[ -n "${RACECHECK_CASES:-}" ] && racecheck_steps "$RACECHECK_CASES"
step_summary
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" 2>/dev/null | head
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
