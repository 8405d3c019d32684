#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes on a warm build folder): the rows of
# bench/results/sparse.md's inference table, every width, against the cuSPARSE pipeline in the same process
# (bench_sparse, RUNS runs each), and spdnn_infer's exact runs with the CSVs scripts/sparse-report.py reads.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-table-gpu.sh $OUT/b; mv $OUT/b/r.tgz $OUT/; rm -rf $OUT/b  (carry data/spdnn)
# Resident path at N = 1024 / 4096, graph path at N = 16384 / 65536 (each width's fastest exact path).
# RUNS (default 5): bench_sparse times each path and the pipeline RUNS times per network (--spdnn-runs; one run each
# before session 38) and scripts/sparse-report.py takes the median. INFER=0 skips spdnn_infer's runs (when the
# library is that of an earlier table's CSVs).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer bench_sparse
# TABLE_SPECS / INFER_WIDTHS: fewer rows (e.g. TABLE_SPECS="resident:1024:120,480,1920;4096:120,480,1920"
# INFER_WIDTHS="1024 4096" when only the resident path changed; scripts/sparse-report.py then takes the other rows
# from an earlier table's JSONs and CSVs).
for spec in ${TABLE_SPECS:-"resident:1024:120,480,1920;4096:120,480,1920" "fused:16384:120,480,1920" \
  "fused:65536:120,480" "fused:65536:1920"}; do
  p=${spec%%:*} nets=${spec#*:} w=${nets%%:*}
  [ "$w" = 65536 ] && [ "${nets#*:}" = 1920 ] && w=65536_1920
  step "bench_spdnn_$w" 240 "$BS" --spdnn "$nets" --baseline "$nets" --benchmark_filter="SpDNN/($p|cusparse)/" \
    --benchmark_out="$OUT/bench_sparse_spdnn_$w.json" --benchmark_out_format=json \
    --spdnn-runs "${RUNS:-5}"
done
for w in ${INFER_WIDTHS:-1024 4096 16384 65536}; do
  [ "${INFER:-1}" = 0 ] && break
  p=resident
  [ $w -gt 4096 ] && p=graph
  L=120,480,1920
  [ $w = 16384 ] && L=120,480  # (L = 1920: its CPU reference takes minutes)
  [ $w = 65536 ] && L=120
  step "spdnn_infer_$w" 90 "$SI" --width $w --layers $L --path $p --validate yes --csv "$OUT/spdnn_infer_$w.csv" \
    --active-csv "$OUT/spdnn_active_$w.csv"
done
step_summary
infer_rows "$OUT"/spdnn_infer_*.txt
grep -hE "^SpDNN" "$OUT"/bench_spdnn_*.txt | awk '{m = "-"; for (i = 4; i <= NF; ++i) if ($i ~ /^median_ms=/) m = $i
  print $1, m}'
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
