#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2 minutes, a cold build of spdnn_infer included): what a gathered
# head layer would cost if it read its whole input span with 16-byte copies, measured with no code change (session
# 43). Layer 3 reads layer 2's survivors (41100 at N = 4096, 39300 at N = 1024) scattered among the 60000 columns
# layer 2 read (it is widened: it reads all of layer 1's output); they are 68.5% / 65.5% of them, below the widening
# rule's 75% (src/sparse/README.md "The crowded layers' scattered columns"). `--widen-keep KEEP` (default 65) makes
# layer 3 read all 60000 as well, so its time under that flag is the read side of a layer that would read the span
# and write only the survivors (the dead columns' FMAs included). Layer 4 then reads a sparser span (why the rule
# stops at 75%): its time here is not what such a layer would give it.
#   ncu (`--cache-control none`, warm) of the first 5 dnn_layer_cta_kernel launches of a --no-warmup resident run:
#   time, DRAM bytes read, warp instructions; then whole runs (L = 120, 3 alternations) under both rules.
#   KEEP=65 JHDNN_COMMIT=<sha> bash scripts/spdnn-widen-probe-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=240 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
metrics=gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum
for w in 1024 4096; do
  for keep in 75 ${KEEP:-65}; do
    step "ncu_${w}_keep$keep" 90 ncu --clock-control none --cache-control none --metrics "$metrics" --csv \
      -k regex:dnn_layer_cta_kernel --launch-count 5 "$SI" --path resident --width "$w" --layers 120 --validate no \
      --no-warmup --widen-keep "$keep"
  done
done
for rep in 1 2 3; do
  for keep in 75 ${KEEP:-65}; do
    step "run_keep${keep}_$rep" 40 "$SI" --path resident --width 1024,4096 --layers 120 --validate no --widen-keep "$keep"
  done
done
step "exact_keep${KEEP:-65}" 60 "$SI" --path resident --width 1024,4096 --layers 120 --validate yes --widen-keep "${KEEP:-65}"
step_summary
ncu_metrics_summary
infer_rows "$OUT"/run_*.txt "$OUT"/exact_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
