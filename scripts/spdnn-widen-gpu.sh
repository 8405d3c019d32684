#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes, a cold build included): session 27's widening
# (run_inference's widen_layers: the first fused layers read the previous layer's whole output, dead columns too,
# when it kept >= 2/3 of them), measured in one binary against --widen 0. The library is unchanged by it.
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-widen-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-widen-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w
# (carry data/spdnn).
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer and test_sparse;
#   2. the widening test, then test_sparse without its reuse-tile case (224 s alone; the kernels are unchanged): its
#      inference cases, resident ones included, run run_inference, now widened by default;
#   3. the A/B, --widen 0 / default in turn, twice: resident N = 1024 L = 120, N = 4096 L = 120 / 480; graph
#      N = 16384 L = 120 / 480, N = 65536 L = 120;
#   4. ncu of the first 6 layer launches at N = 1024 and 4096 (resident path's head), widened (per-layer time);
#   5. exact, default widening: official N = 1024 L = 120, N = 4096 L = 480 (resident), N = 16384 / 65536 L = 120
#      (graph) against the CPU reference.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer test_sparse
step test_widen 60 "$T/test_sparse" "inference: widening the first layers*"
step test_sparse 200 "$T/test_sparse" "~*reuse tile is bitwise the fma chain"
for rep in 1 2; do
  for spec in resident:1024:120 resident:4096:120,480 graph:16384:120,480 graph:65536:120; do
    IFS=: read -r p w l <<< "$spec"
    step "ab_${p}_${w}_off_$rep" 45 "$SI" --path "$p" --width "$w" --layers "$l" --validate no --widen 0
    step "ab_${p}_${w}_on_$rep" 45 "$SI" --path "$p" --width "$w" --layers "$l" --validate no
  done
done
M="gpu__time_duration.sum,dram__bytes.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active"
for w in 1024 4096; do
  step "ncu_head_$w" 40 ncu --clock-control none --csv --metrics "$M" -k regex:dnn_layer_cta_kernel --launch-count 6 \
    "$SI" --width $w --layers 120 --validate no --no-warmup --active-csv "$OUT/active_$w.csv"
done
step exact_1024 30 "$SI" --width 1024 --layers 120 --validate yes
step exact_4096 40 "$SI" --width 4096 --layers 480 --validate yes
step exact_16384 60 "$SI" --path graph --width 16384 --layers 120 --validate yes
step exact_65536 80 "$SI" --path graph --width 65536 --layers 120 --validate yes
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt
grep -h "widened" "$OUT"/ab_*_on_1.txt | sed 's/.*(widened/widened/' | sort | uniq -c
for f in "$OUT"/test_*.txt; do echo "$(basename "$f" .txt): $(grep -E 'passed|failed' "$f" | tail -1)"; done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
