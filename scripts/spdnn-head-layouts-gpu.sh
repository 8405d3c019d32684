#!/usr/bin/env bash
# On the GPU machine, ONE call (~2 minutes, a cold build of spdnn_infer): the crowded head layers of this tree under
# several spdnn_infer configurations, layer by layer under ncu (the first LAUNCHES, default 4, dnn_layer_cta_kernel
# launches of a --no-warmup graph-path run at each width of WIDTHS, default 1024 4096; metrics as
# scripts/spdnn-head-ab-ncu-gpu.sh). Session 35: the crowded layers are memory-bound (bench/results/a8d8911/); is
# their 512-byte feature piece (128 images x 4 bytes of one neuron) what holds DRAM at ~60% of its peak? The tiled
# layout with the readers' relabelling (docs/sparse.md) makes a block's inputs one contiguous run of such pieces.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-head-layouts-gpu.sh $OUT/l; mv $OUT/l/r.tgz $OUT/; rm -rf $OUT/l
#   (carry data/spdnn's four files)
# CONFIGS: "name=flags" words, the flags joined by commas (default below): neuron-major with late4crowd (auto), the
# same with late4all (JHDNN_SPDNN_TILE, env), the readers' relabelling alone, and the tiled layout with it.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
configs=${CONFIGS:-"neuron= late4all=env:JHDNN_SPDNN_TILE=late4all relabel=--relabel,readers tiled=--layout,tiled,--relabel,readers"}
for w in ${WIDTHS:-1024 4096}; do
  for c in $configs; do
    name=${c%%=*}
    spec=${c#*=}
    envs=()
    flags=()
    if [[ $spec == env:* ]]; then envs=("${spec#env:}"); else IFS=, read -r -a flags <<< "$spec"; fi
    step "ncu_${w}_$name" 120 env "${envs[@]}" ncu --clock-control none --metrics "$metrics" --csv \
      -k regex:dnn_layer_cta_kernel --launch-count "${LAUNCHES:-4}" "$SI" --data "$PWD/data/spdnn" --path graph \
      --width "$w" --layers 120 --validate no --no-warmup "${flags[@]}"
  done
done
step_summary
ncu_metrics_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
