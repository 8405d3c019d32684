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
