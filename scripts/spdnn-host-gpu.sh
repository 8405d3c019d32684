#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3 minutes, a cold build included): the host side of the loop
# (session 27, written without a GPU). At N = 1024 L = 120 the layer kernels (ncu) sum to ~1.43 ms of a ~1.55 ms loop
# (bench/results/c8bb036/near): ~0.1 ms between them. Candidates: the resident call's host checks (3 pointer queries
# per layer, 96 layers, while the GPU has only the head's last layer queued), the head's count readbacks, the launch
# gaps. spdnn_infer's '#' line now gives the host time inside the jhDNN calls and the first resident call's share.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-host-gpu.sh $OUT/h; mv $OUT/h/r.tgz $OUT/; rm -rf $OUT/h   (carry data/spdnn)
#
# Steps: build spdnn_infer and test_sparse; the resident tests with the first-chunk runs; then, in turn, twice:
# resident N = 1024 L = 120 / 480 and N = 4096 L = 120 / 480 with --resident-first-chunk 0 (96, as before), 8 and 24;
# graph N = 16384 L = 120 (the API host time of a graph launch, for scale).
set -uo pipefail
BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
echo "commit ${JHDNN_COMMIT:-unknown}" > "$OUT/commit.txt"
scripts/fetch-spdnn-data.sh > "$OUT/data.txt" 2>&1 || echo "no spdnn data: the official network is missing"
build_step "$B" spdnn_infer test_sparse
step test_resident_official 90 "$T/test_sparse" "resident path: official N = 1024 network*"
for rep in 1 2; do
  for w in 1024 4096; do
    for c in 0 8 24; do
      step "host_${w}_${c}_$rep" 40 "$SI" --width $w --layers 120,480 --validate no --resident-first-chunk $c
    done
  done
  step "host_graph_16384_$rep" 40 "$SI" --path graph --width 16384 --layers 120 --validate no
done
step exact_1024_8 30 "$SI" --width 1024 --layers 120 --validate yes --resident-first-chunk 8
step_summary
for f in "$OUT"/host_*.txt "$OUT"/exact_*.txt; do
  [ -f "$f" ] && paste -d' ' <(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $1, $2, $5, $10}') \
    <(grep -o 'API host time [0-9.]* ms\( (first [a-z-]* call [0-9.]* ms\)\?' "$f") | sed "s|^|$(basename "$f" .txt) |"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
