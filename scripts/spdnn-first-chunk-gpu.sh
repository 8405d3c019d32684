#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4 minutes, one build): spdnn's first resident call's length
# (--resident-first-chunk, DriverOptions) side by side in spdnn_infer, one process per run, REPS rounds in turn: for
# each width:layers of SPECS (default 4096:480,1920 1024:480,1920), each value of FIRSTS (default "0 1024": 0 = the
# default schedule, 96 then x4; 1024 = the first call as long as a call may be) with JHDNN_LOG=1 (each resident call's
# schedule in the run's file). Then, per RACE item (width:images:layers, default 1024:1000:20 4096:500:10),
# compute-sanitizer racecheck of spdnn_infer resident from layer 1 (--resident-below images) on that many images:
# slices that fit the CTAs at once, so vals4w8 / vals4w run one CTA per slice (session 41: the instantiation without
# the item loop). RACE="" skips the racecheck runs.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-first-chunk-gpu.sh $OUT/a; mv $OUT/a/r.tgz $OUT/; rm -rf $OUT/a
# (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=480 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS" \
  source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for rep in $(seq "${REPS:-3}"); do
  for spec in ${SPECS:-4096:480,1920 1024:480,1920}; do
    IFS=: read -r w l <<< "$spec"
    for first in ${FIRSTS:-0 1024}; do
      step "first_${w}_${l//,/-}_${first}_$rep" 60 env JHDNN_LOG=1 LD_LIBRARY_PATH="$PWD/$B/src" "$SI" \
        --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" --validate no \
        --resident-first-chunk "$first"
    done
  done
done
for spec in ${RACE-1024:1000:20 4096:500:10}; do
  IFS=: read -r w n l <<< "$spec"
  step "racecheck_${w}_${n}_${l}" 150 env JHDNN_LOG=1 LD_LIBRARY_PATH="$PWD/$B/src" compute-sanitizer --tool racecheck \
    --error-exitcode 99 "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" --images "$n" \
    --resident-below "$n" --validate yes --no-warmup
done
step_summary
infer_rows "$OUT"/first_*.txt
grep -Ho "[0-9]* resident calls" "$OUT"/first_*.txt
grep -hE "RACECHECK SUMMARY|one CTA per slice|handed" "$OUT"/racecheck_*.txt | sort | uniq -c
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
