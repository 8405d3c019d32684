#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3 minutes, one build): vals4w's schedules (JHDNN_RESIDENT_BLOCKS,
# core/config.h) side by side in spdnn_infer, one process per run, REPS rounds in turn: for each width:layers of SPECS
# (default 4096:480,1920 1024:1920), BLOCKS (default "0 auto 3 6 12": 0 = one CTA per slice, auto = the model) with
# JHDNN_LOG=1 (the schedule each resident call ran, in the run's file); then one traced run (--resident-trace) per
# TRACE item (width:layers:blocks, default 4096:480:auto), summarised by scripts/spdnn-resident-trace.py.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-blocks-gpu.sh $OUT/a; mv $OUT/a/r.tgz $OUT/; rm -rf $OUT/a
# (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=480 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS" \
  source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for rep in $(seq "${REPS:-2}"); do
  for spec in ${SPECS:-4096:480,1920 1024:1920}; do
    IFS=: read -r w l <<< "$spec"
    for blocks in ${BLOCKS:-0 auto 3 6 12}; do
      step "blocks_${w}_${l//,/-}_${blocks}_$rep" 60 env JHDNN_LOG=1 JHDNN_RESIDENT_BLOCKS="$blocks" \
        LD_LIBRARY_PATH="$PWD/$B/src" "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" \
        --validate no
    done
  done
done
for spec in ${TRACE-4096:480:auto}; do
  IFS=: read -r w l blocks <<< "$spec"
  step "trace_${w}_${l}_${blocks}" 90 env JHDNN_RESIDENT_BLOCKS="$blocks" LD_LIBRARY_PATH="$PWD/$B/src" "$SI" \
    --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" --validate yes \
    --resident-trace "$OUT/trace_${w}_${l}_${blocks}.csv"
  python3 scripts/spdnn-resident-trace.py "$OUT/trace_${w}_${l}_${blocks}.csv" > "$OUT/trace_${w}_${l}_${blocks}_summary.txt" 2>&1
done
step_summary
for f in "$OUT"/blocks_*.txt; do
  printf '%s ' "$(basename "$f" .txt)"
  awk '$1 ~ /^[0-9]+$/ && NF > 8 {printf "%s ", $5}' "$f"
  grep -c "handed" "$f" | tr '\n' ' '
  echo
done
gzip -f "$OUT"/trace_*.csv 2>/dev/null
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
