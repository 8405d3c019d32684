#!/usr/bin/env bash
# On the GPU machine, ONE call (~2 minutes, a cold build of spdnn_infer): spdnn_infer on the resident path with the
# neurons as generated (--relabel none) and renamed for their readers (--relabel readers, docs/sparse.md), in turn,
# REPS times (default 3), at each width:layers of SPECS; then exact runs with the renaming (EXACT: width:layers).
# Session 35: the readers' renaming took 1.3% off the first four crowded layers on the graph path
# (bench/results/424f7b2/); does it pay on the resident path, whose late layers read the vals pack?
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-relabel-ab-gpu.sh $OUT/r; mv $OUT/r/r.tgz $OUT/; rm -rf $OUT/r
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=300 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
RUN=("$SI" --data "$PWD/data/spdnn" --path resident)
for rep in $(seq "${REPS:-3}"); do
  for spec in ${SPECS:-1024:120,480 4096:120,480}; do
    IFS=: read -r w l <<< "$spec"
    for r in none readers; do
      step "ab_${w}_${r}_$rep" 45 "${RUN[@]}" --width "$w" --layers "$l" --relabel "$r" --validate no
    done
  done
done
for spec in ${EXACT:-1024:120 4096:480}; do
  IFS=: read -r w l <<< "$spec"
  step "exact_${w}_$l" 60 "${RUN[@]}" --width "$w" --layers "$l" --relabel readers --validate yes
done
step_summary
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
