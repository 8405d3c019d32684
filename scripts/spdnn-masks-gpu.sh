#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3-5 minutes with a cold build): layer 1 with the images' piece mask
# (session 36: jhdnnSparseDnnLayerForwardCompactMasked, spdnn_infer --input-mask) against the same binary without it:
#   1. the mask tests and the inference tests (ctest -R CTEST_REGEX, default "masks|mask|inference:|sass_check");
#   2. spdnn_infer alternating --input-mask 0 / 1, REPS times (default 2), each path:width:layers of SPECS;
#   3. ncu of the first LAUNCHES (default 2) dnn_layer_cta_kernel launches of a --no-warmup run at each width of
#      NCU_WIDTHS (default 1024 4096 16384), both ways: duration, warp instructions, FFMA thread instructions, DRAM
#      bytes read / written, local-memory load sectors (spills).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-masks-gpu.sh $OUT/m; mv $OUT/m/r.tgz $OUT/; rm -rf $OUT/m
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" jhdnn test_sparse spdnn_infer
step ctest 200 ctest --test-dir "$B" -j8 --output-on-failure --timeout 200 -R "${CTEST_REGEX:-mask|inference:|sass_check}"
SPECS=${SPECS:-resident:1024:120,480 resident:4096:120,480 graph:16384:120}
for rep in $(seq "${REPS:-2}"); do
  for spec in $SPECS; do
    IFS=: read -r p w l <<< "$spec"
    for m in 0 1; do
      step "ab_${p}_${w}_mask${m}_$rep" 60 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers "$l" \
        --validate no --input-mask "$m"
    done
  done
done
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
metrics=$metrics,dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum
for w in ${NCU_WIDTHS:-1024 4096 16384}; do
  p=resident; [ "$w" -gt 4096 ] && p=graph
  for m in 0 1; do
    step "ncu_${w}_mask$m" 120 ncu --clock-control none --metrics "$metrics" --csv -k regex:dnn_layer_cta_kernel \
      --launch-count "${LAUNCHES:-2}" "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers 120 \
      --validate no --no-warmup --input-mask "$m"
  done
done
step_summary
infer_rows "$OUT"/ab_*.txt
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" 2>/dev/null | head
ncu_metrics_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
