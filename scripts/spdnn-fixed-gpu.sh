#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~5 minutes, a cold build included): what a late layer's fixed cost
# is made of. At 884f381 (bench/results/884f381/) the late layer at N = 16384 took 27 / 34.5 / 40 / 62 us with 150 /
# 297 / 600 / 1200 late images: a line of ~22 us + ~33 ns per late image (a fit, not a measurement), so ~1/3 of
# the late layer at 60000 images does not depend on the images. At 150 images every warp has ONE list block (2 tiles
# x 128 slices of 128 rows), so the warps' chains (count, list, order, rows, vote, 8 feature quads, stores, flags,
# the tile's compaction) are not overlapped by other blocks. ncu of one late launch (layer 201 of L = 480, graph
# path, --no-warmup) at 7500 and at 60000 images: the details page (time, SM active cycles, warps, stall reasons)
# and the per-instruction source page (warp-stall samples: scripts/ncu-source-lines.py); and the same for N = 1024's
# head layer 9 (1100 images; resident path) and the head of N = 16384 L = 120 at 7500 images for the launch gaps.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-fixed-gpu.sh $OUT/f; mv $OUT/f/r.tgz $OUT/; rm -rf $OUT/f  (carry data/spdnn)
# NCU_CACHE=none profiles with warm caches (ncu's default, all, flushes them before each pass: a late layer's features,
# which stay in L2 between launches in a real run, and the instruction caches).
# Here: scripts/ncu-source-lines.py f/src_16384_7500.csv.gz --sass all.sass --kernel dnn_layer_cta_kernelILi3ELi4E
# (all.sass: nvdisasm -g of the DEVICE build's dnn_layer.cu.o, which scripts/spdnn-warm-gpu.sh brings back: this
# machine's build of the same commit differs slightly). ncu's --print-source cuda page gave the source text without
# metrics (session 29), so the line attribution goes through that SASS.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=560 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
ncu_profile 16384_7500 dnn_layer_cta_kernel 200 --path graph --width 16384 --layers 480 --images 7500
ncu_profile 16384_60000 dnn_layer_cta_kernel 200 --path graph --width 16384 --layers 480
ncu_profile 1024_l9 dnn_layer_cta_kernel 8 --path resident --width 1024 --layers 120
# The gaps between launches at 7500 images: every launch's duration in order (ncu serializes launches, so this is
# the sum of the kernels; the loop time beside it is spdnn_infer's own run).
step ncu_all_16384_7500 120 ncu --clock-control none --csv --metrics gpu__time_duration.sum "$SI" --path graph \
  --width 16384 --layers 120 --images 7500 --validate no --no-warmup
step loop_16384_7500 40 "$SI" --path graph --width 16384 --layers 120 --images 7500 --validate no
step_summary
ncu_details_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
