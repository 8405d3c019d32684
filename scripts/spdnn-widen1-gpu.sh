#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4 minutes, a cold build included): the widening check before
# layer 2 only (spdnn_infer --widen 1) against the default four checks (layers 2-5), in turn, twice. At every width
# the challenge networks widen layer 2 only (the '#' lines of bench/results/edfe84b: "widened: 2"), so the checks
# before layers 3-5 are launches that change nothing there. Then, where nsys exists, one timeline of N = 1024
# L = 120 (resident), for the gaps between kernels that ncu cannot show.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-widen1-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w  (carry data/spdnn)
# Predicted (not measured): a few us per check dropped, i.e. ~-0.5% at N = 1024 L = 120 (1.39 ms), less elsewhere.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for rep in 1 2; do
  for spec in resident:1024:120,480 resident:4096:120,480 graph:16384:120 graph:65536:120; do
    IFS=: read -r p w l <<< "$spec"
    for wd in 4 1; do
      step "w${wd}_${p}_${w}_$rep" 40 "$SI" --path "$p" --width "$w" --layers "$l" --validate no --widen $wd
    done
  done
done
step exact_1024_w1 30 "$SI" --width 1024 --layers 120 --validate yes --widen 1
if command -v nsys > /dev/null; then
  step nsys_1024 90 nsys profile --force-overwrite true -o "$OUT/nsys_1024" "$SI" --width 1024 --layers 120 \
    --validate no
  step nsys_1024_trace 60 nsys stats --force-export true --report cuda_gpu_trace --format csv \
    --output "$OUT/nsys_1024" "$OUT/nsys_1024.nsys-rep"
  rm -f "$OUT"/nsys_1024.sqlite "$OUT"/nsys_1024.nsys-rep  # (the CSV is what is read)
  gzip -f "$OUT"/nsys_1024*.csv 2> /dev/null
else
  echo "no nsys on this machine" > "$OUT/nsys_none.txt"
fi
step_summary
infer_rows "$OUT"/w*.txt "$OUT"/exact_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
