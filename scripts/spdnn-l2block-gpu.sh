#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~3 minutes, a cold build included): would an L2-blocked schedule
# pay at N >= 16384 today (groups of images run through several layers while their feature maps stay in the 50 MB
# L2)? Session 18 measured no, with cta2w (src/sparse/README.md, "Is the N = 16384 late layer bound by DRAM? No"):
# the cost per late image rose as fewer images made the maps fit. late4 (the late layers' tile since) issues ~25%
# fewer instructions, and its late layer moved with its DRAM traffic (session 23's chain order: 197 -> 144 MB, 81 ->
# 70 us), so the question is open again. Same measure: late layer = (t(L = 480) - t(L = 120)) / 360, graph path,
# at 60000 / 30000 / 15000 / 7500 images (--images; image t is image t mod 1200), in turn, twice.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-l2block-gpu.sh $OUT/l; mv $OUT/l/r.tgz $OUT/; rm -rf $OUT/l  (carry data/spdnn)
# An L2-blocked schedule pays if the cost per late image falls where the maps fit (two maps of late images x N
# floats: at N = 16384 ~300 late images, 15000 images).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=330 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
for rep in 1 2; do
  for im in 60000 30000 15000 7500; do
    step "g16384_${im}_$rep" 40 "$SI" --path graph --width 16384 --layers 120,480 --images $im --validate no \
      --csv "$OUT/g16384_${im}_$rep.csv"
  done
done
for im in 60000 15000 3750; do
  step "g65536_${im}" 60 "$SI" --path graph --width 65536 --layers 120,480 --images $im --validate no \
    --csv "$OUT/g65536_${im}.csv"
done
step_summary
# width images L120 L480 late-layer-us late-images ns-per-late-image
for f in "$OUT"/g*.csv; do
  awk -F, -v n="$(basename "$f" .csv)" 'NR > 1 { t[$2] = $5; im = $4; s = $9 }
    END { late = (t[480] - t[120]) / 360 * 1000; printf "%s images %d L120 %.3f L480 %.3f late %.1f us, %d late images, %.1f ns each\n", n, im, t[120], t[480], late, s, late / s * 1000 }' "$f"
done | tee "$OUT/late.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
