#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2-4 minutes): what the per-instruction profiles of
# scripts/spdnn-fixed-gpu.sh need here, and warm per-launch times.
#   1. the device build's dnn_layer.cu.o, gzipped: its SASS differs slightly from this machine's build of the same
#      commit (the device's host compiler is GCC 13, Debian's 12), so `nvdisasm -g` of THIS object is what lines
#      up with ncu's source page (scripts/ncu-source-lines.py --sass);
#   2. ncu --cache-control none, every kernel launch's duration, for each path:width:layers of RUNS (ncu's default,
#      --cache-control all, flushes L2 before each kernel: a late layer's features, which stay in L2 between the
#      launches of a real run, then come from DRAM; e.g. N = 4096 graph, late layers 29 us under ncu against ~20 us
#      from the loop times, bench/results/ec4fff9/head-tiles/ and tile4096/);
#   3. SANITIZE_LATE4 (tiles): compute-sanitizer racecheck and memcheck of the reuse-tile case's "late4:" cases.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-warm-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w  (carry data/spdnn)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=500 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
targets="spdnn_infer"
[ -n "${SANITIZE_LATE4:-}" ] && targets="spdnn_infer test_sparse"
# shellcheck disable=SC2086  # a list
build_step "$B" $targets
gzip -c "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" > "$OUT/dnn_layer.cu.o.gz"
for spec in ${RUNS:-resident:1024:120 resident:4096:120 graph:16384:120}; do
  IFS=: read -r p w l <<< "$spec"
  step "launches_${p}_${w}_$l" 120 ncu --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
    "$SI" --path "$p" --width "$w" --layers "$l" --validate no --no-warmup
done
# shellcheck disable=SC2086  # a list of tiles
late4_sanitize_steps ${SANITIZE_LATE4:-}
step_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
