#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2 minutes, a cold build included): the resident path from an
# earlier layer, in a short first call of several waves, with no code change (spdnn_infer's --resident-below and
# --resident-first-chunk). At N = 1024 L = 120 the head's layers 8-10 read 1550 / 1100 / 1050 images and take
# 19.9 / 19.2 / 18.3 us each (bench/results/c8bb036/near/layers_1024.md), where a resident layer takes ~4.3 us a
# wave of 132 slices of 8 images. The later calls keep the first call's maxActive (the count seen at the switch);
# their CTAs past the live images leave at once (dnn_resident.cu: r0 >= count), so they stay one wave once the count
# is <= 1056.
#   below 1600, first 2: head 1-8, a first call of layers 9-10 on 1100 images (138 slices: 2 waves), then 11-.
#   below 3000, first 3: head 1-7, a first call of layers 8-10 on 1550 images (194 slices: 2 waves), then 11-.
#   below 5000, first 4: head 1-6, a first call of layers 7-10 on 2800 images (350 slices: 3 waves), then 11-.
# N = 4096 (4-image slices, 528 a wave; today 2 waves from layer 13): below 1600, first 2 (head 1-10; layers 11-12
# on 1150 images: 3 waves; then 950 images, 2 waves).
# Predicted (not measured): N = 1024 L = 120 -1.5 to -2.5% (below 3000, first 3: ~57 us of head layers against ~26
# of resident ones); N = 4096 L = 480 within 0.5%.
# Measured in session 29 (bench/results/ec4fff9/trial-early/, the branch's version of this script): no gain at
# N = 1024 under any variant, slower at N = 4096; the branch was dropped. Those runs warmed up on the 1200 distinct
# images (so the timed run made the process's first handed call, fe023a9) and had no head graph; every run here
# launches layers 1-5 as one graph (--head-graph 5: the default's, which --resident-below would turn off).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-resident-early-gpu.sh $OUT/e; mv $OUT/e/r.tgz $OUT/; rm -rf $OUT/e
# (carry data/spdnn)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=300 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for rep in 1 2; do
  for v in -1:0 1600:2 3000:3 5000:4; do
    below=${v%%:*} first=${v#*:}
    step "e1024_${below}_${first}_$rep" 30 "$SI" --width 1024 --layers 120,480 --validate no \
      --resident-below "$below" --resident-first-chunk "$first" --head-graph 5
  done
  for v in -1:0 1600:2; do
    below=${v%%:*} first=${v#*:}
    step "e4096_${below}_${first}_$rep" 40 "$SI" --width 4096 --layers 120,480 --validate no \
      --resident-below "$below" --resident-first-chunk "$first" --head-graph 5
  done
done
step exact_1024_3000_3 30 "$SI" --width 1024 --layers 120 --validate yes --resident-below 3000 --resident-first-chunk 3 \
  --head-graph 5
step exact_4096_1600_2 60 "$SI" --width 4096 --layers 480 --validate yes --resident-below 1600 --resident-first-chunk 2 \
  --head-graph 5
step_summary
infer_rows "$OUT"/e*.txt
grep -ho 'resident from layer [0-9]*' "$OUT"/e1024_*_1.txt "$OUT"/e4096_*_1.txt | paste -sd' '
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
