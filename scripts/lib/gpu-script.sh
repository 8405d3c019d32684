# Sourced first by a GPU script whose one argument is its output folder:
#   BUDGET_DEFAULT=195 FETCH_SPDNN=1 UNSET_SWITCHES="JHDNN_SPDNN_TILE ..." source "$(dirname "$0")/lib/gpu-script.sh" "$@"
# Makes OUT the folder's absolute path (created; usage and exit 2 without it), goes to the repository root, adds
# the CUDA tools to PATH, sets JHDNN_REQUIRE_GPU=1 (a skipped GPU test fails, as does a data test without the data),
# exports BUDGET_S (the caller's, else BUDGET_DEFAULT, else guarded-step's 540), unsets the switches named in
# UNSET_SWITCHES (the script's steps set
# them), sets B (BUILD_DIR, else build-gpu), SI (spdnn_infer), T (the tests), BS (bench_sparse), and sources
# guarded-step.sh (step, step_summary, build_step, build_new_and_base, infer_rows, resident_resources, ctest_step,
# verify_report); NCU_STALLS: ",metric,..." of ncu's stall
# reasons per issue (names as measured at 81a4a01, bench/results/81a4a01/ncus_late_4096_deep.txt), for --metrics.
OUT=${1:-}
if [ -z "$OUT" ]; then
  echo "usage: $(basename "$0") OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
[ -n "${BUDGET_DEFAULT:-}" ] && export BUDGET_S=${BUDGET_S:-$BUDGET_DEFAULT}
# shellcheck disable=SC2086  # a list of names
[ -n "${UNSET_SWITCHES:-}" ] && unset $UNSET_SWITCHES
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
T=$B/tests
BS=$B/bench/bench_sparse
NCU_STALLS=""
for r in barrier branch_resolving dispatch_stall lg_throttle long_scoreboard math_pipe_throttle mio_throttle \
  no_instruction not_selected selected short_scoreboard wait; do
  NCU_STALLS="$NCU_STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
# $OUT/commit.txt names the tree: JHDNN_COMMIT, a literal sha from the caller (git on the device may name another
# tree; a script may rewrite the file with more). FETCH_SPDNN=1: the challenge data unpacked into data/spdnn
# (scripts/fetch-spdnn-data.sh from the carried files; its log in $OUT/data.txt).
echo "commit ${JHDNN_COMMIT:-unknown}" > "$OUT/commit.txt"
if [ "${FETCH_SPDNN:-0}" = 1 ]; then
  scripts/fetch-spdnn-data.sh > "$OUT/data.txt" 2>&1 ||
    echo "no spdnn data: the official network and the data tests are missing"
fi
source scripts/lib/guarded-step.sh
