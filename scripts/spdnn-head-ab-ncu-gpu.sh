#!/usr/bin/env bash
# On the GPU machine, ONE call (~3 minutes, two cold builds of spdnn_infer): the crowded head layers of this tree
# against BASE_DIR's (out/base, as scripts/spdnn-ab-gpu.sh), layer by layer under ncu: the first LAUNCHES (default 4)
# dnn_layer_cta_kernel launches of a --no-warmup resident run at each width of WIDTHS (default 1024 4096), with their
# duration, warp instructions, FFMA thread instructions and the DRAM / SM / L1 / L2 throughputs (% of peak).
# Session 35: whether late4's skipped zero inputs (fewer FFMA) shorten the crowded layers, i.e. whether those layers
# are issue-bound.
# NCU_CACHE: ncu's --cache-control (default all: caches flushed before each launch, which overstates small layers by
# up to ~45%, bench/results/ec4fff9/; none: as warm as the run leaves them).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-head-ab-ncu-gpu.sh $OUT/n; mv $OUT/n/r.tgz $OUT/; rm -rf $OUT/n
#   (carry out/base and data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_new_and_base "-DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF" spdnn_infer
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
metrics=$metrics,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
metrics=$metrics,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
for w in ${WIDTHS:-1024 4096}; do
  for side in base new; do
    if [ "$side" = base ]; then lib=build-base/src si=build-base/examples/spdnn_infer; else lib=$B/src si=$SI; fi
    step "ncu_${w}_$side" 120 env LD_LIBRARY_PATH="$PWD/$lib" ncu --clock-control none --cache-control "${NCU_CACHE:-all}" --metrics "$metrics" --csv \
      -k regex:dnn_layer_cta_kernel --launch-count "${LAUNCHES:-4}" "$si" --data "$PWD/data/spdnn" --path resident \
      --width "$w" --layers 120 --validate no --no-warmup
  done
done
step_summary
ncu_metrics_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
