#!/usr/bin/env bash
# On the GPU machine, ONE call (~2 minutes with a cold build of spdnn_infer): where the small head layers' time goes
# (session 44). For each width of WIDTHS (default 1024 4096) and each JHDNN_SPDNN_TILE of TILES (default auto block):
# - ncu (warm: --cache-control none) of the first LAUNCHES (default 12) layer launches of a --no-warmup resident run,
#   every per-layer kernel (dnn_layer_cta_kernel and dnn_layer_compact_kernel): duration, SM-active and elapsed
#   cycles, warp instructions, grid;
# - spdnn_infer's loop time at L = HEAD (default 5,10 at 1024 and 5,12 at 4096) on the resident path (the fused
#   head, host-driven launches) and on the graph path (the same launches from a CUDA graph), REPS times (default 3):
#   their difference says how much of a small layer's time is the host's or the launch gaps'.
# NCU=0: the loop times only (HEAD=1,2,3,...: every head length, for per-layer times in the run).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-small-layers-gpu.sh $OUT/s; mv $OUT/s/r.tgz $OUT/; rm -rf $OUT/s
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
metrics=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_elapsed.avg,smsp__inst_executed.sum,launch__grid_size
for w in ${WIDTHS:-1024 4096}; do
  [ "${NCU:-1}" = 1 ] || break
  for tile in ${TILES:-auto block}; do
    step "ncu_${w}_$tile" 120 env JHDNN_SPDNN_TILE="$tile" ncu --clock-control none --cache-control none \
      --metrics "$metrics" --csv -k "regex:dnn_layer_(cta|compact)_kernel" --launch-count "${LAUNCHES:-12}" "$SI" \
      --data "$PWD/data/spdnn" --path resident --width "$w" --layers 120 --validate no --no-warmup
  done
done
for rep in $(seq "${REPS:-3}"); do
  for w in ${WIDTHS:-1024 4096}; do
    head=${HEAD:-}
    [ -z "$head" ] && { [ "$w" = 1024 ] && head=5,10 || head=5,12; }
    for tile in ${TILES:-auto block}; do
      for p in resident graph; do
        step "head_${rep}_${w}_${tile}_$p" 60 env JHDNN_SPDNN_TILE="$tile" "$SI" --data "$PWD/data/spdnn" --path "$p" \
          --width "$w" --layers "$head" --validate no
      done
    done
  done
done
step_summary
ncu_metrics_summary | awk '/^==/ {print; next} {printf "%s %s %s\n", $1, $2, $NF}' > "$OUT/small_ncu.txt"
infer_rows "$OUT"/head_*.txt > "$OUT/head_summary.txt"
cat "$OUT/head_summary.txt" "$OUT/small_ncu.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
