#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~5 minutes): is the late layer at N = 65536 bound by DRAM, and does
# the tiled feature layout with the reader relabelling (session 26, measured there only at N = 16384 and at
# N = 65536 L = 120) shorten it? Session 33.
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-wide-late-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-wide-late-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/;
# rm -rf $OUT/t (carry data/spdnn's neuron1024.tar.gz and sparse-images-1024-first1200.tsv).
#
# Steps:
#   1. build spdnn_infer; unpack the challenge data (the images the larger widths scale up);
#   2. graph path, WIDTH (default 65536) at LAYERS (default 120,480), alternating twice: neuron-major with the
#      original names (the default) against tiled + readers; the late layer's time is (t480 - t120) / 360;
#   3. ncu of one late layer (the LAUNCH-th layer kernel of a --no-warmup L = 120 run, default 60) for both: time,
#      DRAM bytes, L2 sectors, instructions, active cycles and the stall reasons per issue.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
W=${WIDTH:-65536}
build_step "$B" spdnn_infer
NEURON=("$SI" --path graph --layout neuron --relabel none)
TILED=("$SI" --path graph --layout tiled --relabel readers)
for rep in 1 2; do
  step "ab_neuron_$rep" 120 "${NEURON[@]}" --width "$W" --layers "${LAYERS:-120,480}" --validate no
  step "ab_tiled_$rep" 120 "${TILED[@]}" --width "$W" --layers "${LAYERS:-120,480}" --validate no
done
ML="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,sm__inst_executed.sum"
ML="$ML,sm__cycles_active.avg,smsp__warps_active.avg.per_cycle_active$NCU_STALLS"
for v in neuron tiled; do
  if [ $v = neuron ]; then X=("${NEURON[@]}"); else X=("${TILED[@]}"); fi
  step "ncu_late_$v" 150 ncu --clock-control none --cache-control none --csv --metrics "$ML" -k regex:dnn_layer_cta_kernel \
    --launch-skip $((${LAUNCH:-60} - 1)) --launch-count 1 "${X[@]}" --width "$W" --layers 120 --validate no --no-warmup
done
step_summary
infer_rows "$OUT"/ab_*.txt
for f in "$OUT"/ncu_late_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep '^"' "$f" | grep -v '"ID"' | awk -F'","' '{print $(NF-2) "=" $NF}' | tr -d '"' | tr '\n' ' ')"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
