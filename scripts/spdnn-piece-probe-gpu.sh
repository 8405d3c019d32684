#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2 minutes, cold build included): tools/spdnn/spdnn_piece_probe,
# the DRAM rate of late4's access pattern without its arithmetic, by piece size and pieces in flight per lane, at the
# shapes of the N = 16384 and N = 65536 late layers (1200 / 1550 images) and of a crowded layer (60000 images).
#
#   scripts/spdnn-piece-probe-gpu.sh OUTDIR      (OUTDIR/r.tgz holds every step's output)
# Through the device tool: [ORDERS="rows tiles-grid tiles-block" CROWDED=0 WRITE512=1] bash scripts/spdnn-piece-probe-gpu.sh $OUT/p; mv $OUT/p/r.tgz $OUT/; rm -rf $OUT/p
set -uo pipefail
BUDGET_DEFAULT=300 source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_piece_probe
P=$B/tools/spdnn/spdnn_piece_probe
# ORDERS (default "rows"): spdnn_piece_probe's --order values to run the late shapes under (rows tiles-grid
# tiles-block: which pieces run together; the crowded shape runs under rows only, CROWDED=0 skips it).
for o in ${ORDERS:-rows}; do
  step "probe_16384_late_$o" 60 "$P" --rows 16384 --images 1200 --order "$o"
  step "probe_65536_late_$o" 90 "$P" --rows 65536 --images 1550 --order "$o"
done
# WRITE512=1: the late shapes again with --write-piece 512 (wider reads, late4's 512-byte writes: the arithmetic of
# src/sparse/README.md "contiguous inputs per quad" assumed reads at the 2048-byte rate beside such writes).
if [ "${WRITE512:-0}" = 1 ]; then
  step probe_16384_late_w512 60 "$P" --rows 16384 --images 1200 --write-piece 512
  step probe_65536_late_w512 90 "$P" --rows 65536 --images 1550 --write-piece 512
fi
[ "${CROWDED:-1}" != 0 ] && step probe_16384_crowded 90 "$P" --rows 16384 --images 60000 --reps 5
step_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
