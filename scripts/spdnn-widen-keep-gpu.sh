#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3 minutes, a cold build included): the widening threshold
# (spdnn_infer --widen-keep 67 / 75 / 85, and --widen 0), in turn, twice, on the default paths of N = 1024 L = 120,
# N = 4096 L = 480 (resident), N = 16384 L = 120 / 480 and N = 65536 L = 120 (graph); then compute-sanitizer memcheck
# of the widening test.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-widen-keep-gpu.sh $OUT/k; mv $OUT/k/r.tgz $OUT/; rm -rf $OUT/k
# (carry data/spdnn).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=265 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer test_sparse
for rep in 1 2; do
  for spec in resident:1024:120 resident:4096:480 graph:16384:120,480 graph:65536:120; do
    IFS=: read -r p w l <<< "$spec"
    step "k_${p}_${w}_off_$rep" 30 "$SI" --path "$p" --width "$w" --layers "$l" --validate no --widen 0
    for k in 67 75 85; do
      step "k_${p}_${w}_${k}_$rep" 30 "$SI" --path "$p" --width "$w" --layers "$l" --validate no --widen-keep $k
    done
  done
done
step memcheck_widen 90 compute-sanitizer --tool memcheck --error-exitcode 99 "$T/test_sparse" \
  "inference: widening the first layers*"
step_summary
for f in "$OUT"/k_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $5}' | tr '\n' ' ') $(grep -o 'widened: [0-9,a-z]*' "$f" | tr '\n' ' ')"
done
grep -E "SUMMARY|passed|failed" "$OUT/memcheck_widen.txt" | tail -3
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
