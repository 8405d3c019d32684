#!/usr/bin/env bash
# Probe (session 36, not run: no device machine could be started): stall reasons of layer 1 with and without the
# tile skip (bench/results/98cfb5b/tile-skip.diff applied to main at 02c0c8e..bf1e62a, whose library is 2481397's),
# N = 4096 and 16384, ncu --clock-control none, first launch. Run as: cp bench/results/98cfb5b/stall-probe.sh
# scripts/probe-run.sh && bash scripts/probe-run.sh $OUT/q (carry data/spdnn's four files).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=300 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
patch -p1 < bench/results/98cfb5b/tile-skip.diff > "$OUT/patch.txt" 2>&1
build_step "$B" spdnn_infer
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.per_cycle_active${NCU_STALLS}
for w in 4096 16384; do
  p=resident; [ "$w" -gt 4096 ] && p=graph
  for m in 0 1; do
    step "ncu_${w}_mask$m" 90 ncu --clock-control none --metrics "$metrics" --csv -k regex:dnn_layer_cta_kernel \
      --launch-count 1 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers 120 --validate no \
      --no-warmup --input-mask "$m"
  done
done
step_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
