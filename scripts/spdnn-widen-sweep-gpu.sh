#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3 minutes on a warm build folder): how many of the first layers
# the widening check should cover (spdnn_infer --widen 0 / 4 / 8 / 16, in turn, twice), and bench_sparse's SpDNN
# rows against the cuSPARSE pipeline for N = 1024 / 4096, L = 120 / 480 (the two cells nearest 10x; default widening).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-widen-sweep-gpu.sh $OUT/s; mv $OUT/s/r.tgz $OUT/; rm -rf $OUT/s
# (carry data/spdnn).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer bench_sparse
for rep in 1 2; do
  for spec in resident:1024:120 resident:4096:480 graph:16384:120 graph:65536:120; do
    IFS=: read -r p w l <<< "$spec"
    for wd in 0 4 8 16; do
      step "sw_${p}_${w}_${wd}_$rep" 30 "$SI" --path "$p" --width "$w" --layers "$l" --validate no --widen $wd
    done
  done
done
NETS="1024:120,480;4096:120,480"
step bench_spdnn 120 "$BS" --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out="$OUT/bench_sparse_spdnn.json" --benchmark_out_format=json
step_summary
for f in "$OUT"/sw_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $5}') $(grep -o 'widened: [0-9,a-z]*' "$f")"
done
grep -E "^SpDNN" "$OUT/bench_spdnn.txt" | awk '{print $1, $2, $3}'
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
