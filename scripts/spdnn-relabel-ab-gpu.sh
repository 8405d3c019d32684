#!/usr/bin/env bash
# On the GPU machine, ONE call (~2 minutes, a cold build of spdnn_infer; ~5 with CTEST_REGEX and PROFILE): spdnn_infer
# on the resident path under each renaming of RELABELS in turn (default "none readers": the neurons as generated and
# renamed for their readers, docs/sparse.md; an entry kind@L renames only the inputs of layers >= L, --relabel-from),
# REPS times (default 3), at each width:layers of SPECS; then exact runs under the last entry (EXACT: width:layers).
# CTEST_REGEX: the tests it matches first (ctest -R; everything is built then). PROFILE=width:layers:skip: ncu of
# that run's vals4w launch number skip (0: the first) under the last entry, details and source pages, as
# scripts/spdnn-resident-profile-gpu.sh takes them (e.g. 4096:480:1, N = 4096 L = 480's handed call).
# Session 35: the readers' renaming took 1.3% off the first four crowded layers on the graph path
# (bench/results/424f7b2/); does it pay on the resident path, whose late layers read the vals pack? Session 42: the
# bank renaming (tools/spdnn/spdnn.h bank_labels), RELABELS="none banks@11".
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-relabel-ab-gpu.sh $OUT/r; mv $OUT/r/r.tgz $OUT/; rm -rf $OUT/r
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=300 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
export NCU_CACHE=${NCU_CACHE:-none}
if [ -n "${CTEST_REGEX:-}" ]; then
  build_step "$B" all
  ctest_step "$B" -R "$CTEST_REGEX"
else
  build_step "$B" spdnn_infer
fi
RUN=("$SI" --data "$PWD/data/spdnn" --path resident)
RELABELS=${RELABELS:-none readers}
# relabel_args ENTRY: spdnn_infer's arguments for kind[@from]
relabel_args() {
  local kind=${1%@*}
  echo "--relabel $kind"
  [ "$kind" != "$1" ] && echo "--relabel-from ${1#*@}"
}
for rep in $(seq "${REPS:-3}"); do
  for spec in ${SPECS:-1024:120,480 4096:120,480}; do
    IFS=: read -r w l <<< "$spec"
    for r in $RELABELS; do
      # shellcheck disable=SC2046  # the words relabel_args prints
      step "ab_${w}_${r/@/-from-}_$rep" 45 "${RUN[@]}" --width "$w" --layers "$l" $(relabel_args "$r") --validate no
    done
  done
done
last=${RELABELS##* }
for spec in ${EXACT:-1024:120 4096:480}; do
  IFS=: read -r w l <<< "$spec"
  # shellcheck disable=SC2046
  step "exact_${w}_$l" 60 "${RUN[@]}" --width "$w" --layers "$l" $(relabel_args "$last") --validate yes
done
if [ -n "${PROFILE:-}" ]; then
  IFS=: read -r w l skip <<< "$PROFILE"
  # shellcheck disable=SC2046
  ncu_profile "resident_$w" dnn_resident_vals4w_kernel "$skip" --path resident --width "$w" --layers "$l" \
    $(relabel_args "$last")
fi
step_summary
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
[ -n "${PROFILE:-}" ] && ncu_details_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
