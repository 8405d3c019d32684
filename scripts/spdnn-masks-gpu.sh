#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4-6 minutes with a cold build): the piece masks (session 36,
# jhdnnSparseDnnLayerForwardCompactMasked, spdnn_infer --masks) against the same binary without them (--masks 0):
#   1. the mask tests and the inference tests (ctest -R "piece masks|inference:|sass_check");
#   2. spdnn_infer alternating --masks 0 / --masks AB_MASKS (default 5), REPS times (default 2), each path:width:layers
#      of SPECS;
#   3. ncu of the first LAUNCHES (default 5) dnn_layer_cta_kernel launches of a --no-warmup run at each width of
#      NCU_WIDTHS (default 1024 4096), with --masks M for each M of NCU_MASKS (default 0 5): duration, warp instructions, DRAM bytes read / written, local-memory
#      load sectors (spills), L2 throughput.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-masks-gpu.sh $OUT/m; mv $OUT/m/r.tgz $OUT/; rm -rf $OUT/m
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" jhdnn test_sparse spdnn_infer
step ctest 200 ctest --test-dir "$B" -j8 --output-on-failure --timeout 200 -R "${CTEST_REGEX:-piece masks|inference:|sass_check}"
SPECS=${SPECS:-resident:1024:120,480 resident:4096:120 graph:16384:120}
for rep in $(seq "${REPS:-2}"); do
  for spec in $SPECS; do
    IFS=: read -r p w l <<< "$spec"
    step "ab_${p}_${w}_off_$rep" 45 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers "$l" --validate no --masks 0
    step "ab_${p}_${w}_on_$rep" 45 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers "$l" --validate no --masks "${AB_MASKS:-5}"
  done
done
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics=$metrics,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
for w in ${NCU_WIDTHS:-1024 4096}; do
  for m in ${NCU_MASKS:-0 5}; do
    step "ncu_${w}_masks$m" 120 ncu --clock-control none --metrics "$metrics" --csv -k regex:dnn_layer_cta_kernel \
      --launch-count "${LAUNCHES:-5}" "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers 120 \
      --validate no --no-warmup --masks "$m"
  done
done
step_summary
infer_rows "$OUT"/ab_*.txt
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" 2>/dev/null | head
ncu_metrics_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
