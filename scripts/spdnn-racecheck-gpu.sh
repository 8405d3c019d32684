#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2-4 minutes, one build): compute-sanitizer racecheck of the
# resident path through spdnn_infer, resident from layer 1 (--resident-below images) on few images, exact against the
# CPU reference. Per ITEMS entry width:images:layers:blocks (JHDNN_RESIDENT_BLOCKS: auto, 0 = one CTA per slice, or
# a count of blocks), default
#   1024:1000:20:auto  vals4w8, 250 slices on 264 CTAs: one CTA per slice (the instantiation without the item loop)
#   4096:500:10:auto   vals4w, 125 slices on 132 CTAs: the same
#   1024:1200:40:3     vals4w8, 300 slices: handed in 3 blocks (parks, progress words, the ring set up per item)
#   4096:1200:40:3     vals4w, 300 slices: the same
#   4096:1200:40:auto  the device's own choice of blocks
# JHDNN_LOG=1 puts each call's schedule in the step's file.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-racecheck-gpu.sh $OUT/r; mv $OUT/r/r.tgz $OUT/; rm -rf $OUT/r
# (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=480 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS" \
  source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for spec in ${ITEMS:-1024:1000:20:auto 4096:500:10:auto 1024:1200:40:3 4096:1200:40:3 4096:1200:40:auto}; do
  IFS=: read -r w n l blocks <<< "$spec"
  step "racecheck_${w}_${n}_${l}_${blocks}" 150 env JHDNN_LOG=1 JHDNN_RESIDENT_BLOCKS="$blocks" \
    LD_LIBRARY_PATH="$PWD/$B/src" compute-sanitizer --tool racecheck --error-exitcode 99 "$SI" --data "$PWD/data/spdnn" \
    --path resident --width "$w" --layers "$l" --images "$n" --resident-below "$n" --validate yes --no-warmup
done
step_summary
for f in "$OUT"/racecheck_*.txt; do
  echo "$(basename "$f" .txt): $(grep -ho "one CTA per slice\|handed, [^;]*" "$f" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" \
    "$(grep -ho "RACECHECK SUMMARY.*" "$f")" "$(grep -ho "exact ([^)]*)\|FAILED" "$f" | head -1)"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
