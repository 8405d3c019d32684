#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: JHDNN_SPDNN_TILE values against each other on one tree, in turn,
# REPS times (default 3), for each path:width:layers item of SPECS; with CTEST=1 the whole ctest first (everything
# built), else spdnn_infer only. Session 29's question: at N = 4096 auto runs late4crowd (cta2w's 64-image items in
# the head's late layers); late4all (late4's 128-image items there) measured 1% faster on the resident path in
# bench/results/d6696c6/ (one tree, twice).
#   JHDNN_COMMIT=<sha> CTEST=1 bash scripts/spdnn-tile-ab-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# (carry data/spdnn's four files)
# NCU_SPECS (path:width:layers:launches items) adds ncu's duration of each of the first `launches` layer launches
# (dnn_layer_cta_kernel, no warm-up) under each tile: where in the head two tiles differ. REPS=0 EXACT_SPECS=" "
# leaves only those.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-0}" = 1 ]; then
  build_step "$B" all
  ctest_budget=$((${BUDGET_S:-570} - ${AB_S:-90}))
  BUDGET_S=$ctest_budget ctest_step "$B"
else
  build_step "$B" spdnn_infer
fi
# tile_runs PREFIX TIMEOUT VALIDATE SPEC...: spdnn_infer under each tile of TILES for each path:width:layers SPEC
tile_runs() {
  local prefix=$1 t=$2 v=$3 spec p w l tile
  shift 3
  for spec in "$@"; do
    IFS=: read -r p w l <<< "$spec"
    for tile in ${TILES:-auto late4all}; do
      step "${prefix}_${p}_${w}_$tile" "$t" env JHDNN_SPDNN_TILE="$tile" "$SI" --path "$p" --width "$w" --layers "$l" \
        --validate "$v"
    done
  done
}
for rep in $(seq "${REPS:-3}"); do
  # shellcheck disable=SC2086  # a list of specs
  tile_runs "ab_$rep" 45 no ${SPECS:-resident:4096:120,480 graph:4096:120,480}
done
# shellcheck disable=SC2086  # a list of specs
tile_runs exact 60 yes ${EXACT_SPECS:-resident:4096:480}
for spec in ${NCU_SPECS:-}; do
  IFS=: read -r p w l k <<< "$spec"
  for tile in ${TILES:-auto late4all}; do
    step "ncu_${p}_${w}_$tile" 90 env JHDNN_SPDNN_TILE="$tile" ncu --clock-control none --csv \
      --metrics gpu__time_duration.sum -k regex:dnn_layer_cta_kernel --launch-count "$k" "$SI" --path "$p" \
      --width "$w" --layers "$l" --validate no --no-warmup
  done
done
step_summary
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" 2>/dev/null | head
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
