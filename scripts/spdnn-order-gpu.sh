#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes, cold build included): the row order of spdnn_infer
# (--order sorted | chain, tools/spdnn chain_order) at every width, with late4's strided warps (session 23), before
# the chain order becomes the default; and late4 against cta2w at N = 65536 under the chain order.
#
#   scripts/spdnn-order-gpu.sh OUTDIR        (OUTDIR/r.tgz holds every step's output: the tool returns 8 files)
# Through the device tool: bash scripts/spdnn-order-gpu.sh $OUT/o; mv $OUT/o/r.tgz $OUT/; rm -rf $OUT/o
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer; unpack the challenge data;
#   2. exact against the CPU reference under the chain order: N = 16384 L = 120,480 (late4 in the late layers),
#      N = 4096 and 65536 L = 120, the official N = 1024 network (first 1200 images, L = 120);
#   3. the A/B, graph path, sorted / chain alternating twice: N = 1024 L = 1920, 4096 L = 1920, 16384 L = 480,
#      65536 L = 120;
#   4. N = 65536 L = 120 / 480, chain order: auto (cta2w) against JHDNN_SPDNN_TILE=late4, twice.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=520 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
si() {  # si NAME SECONDS ARGS...: spdnn_infer, graph path
  local name=$1 t=$2
  shift 2
  step "$name" "$t" "$SI" --path graph "$@"
}
si exact_16384 120 --width 16384 --layers 120,480 --order chain --validate yes
si exact_4096 60 --width 4096 --layers 120 --order chain --validate yes
si exact_65536 90 --width 65536 --layers 120 --order chain --validate yes
si exact_1024_official 40 --width 1024 --layers 120 --order chain --validate yes --network official
for rep in 1 2; do
  for spec in 1024:1920 4096:1920 16384:480 65536:120; do
    for o in sorted chain; do
      si "ab_${spec%%:*}_${o}_$rep" 45 --width "${spec%%:*}" --layers "${spec##*:}" --order $o --validate no
    done
  done
done
for rep in 1 2; do
  for t in auto late4; do
    JHDNN_SPDNN_TILE=$t si "t65536_${t}_$rep" 60 --width 65536 --layers 120,480 --order chain --validate no
  done
done
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt "$OUT"/t65536_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
