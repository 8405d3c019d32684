#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~5-7 minutes with a cold build): the resident path's calls of up to
# 1024 layers, doubling from 96 (session 37: JHDNN_SPARSE_DNN_RESIDENT_MAX_LAYERS 1024, spdnn_infer
# --resident-max-chunk) against the same binary with calls of 96 layers (--resident-max-chunk 96, the schedule before):
#   1. the resident and inference tests and the options' checks (ctest -R CTEST_REGEX, default
#      "resident|inference:|spdnn_infer_bad|sass_check"; CTEST=0 skips them and builds only spdnn_infer);
#   2. spdnn_infer alternating AB_OPT's AB_VALUES (default --resident-max-chunk "96 0"), REPS times (default 3), each
#      path:width:layers of SPECS (e.g. AB_OPT=--resident-first-chunk AB_VALUES="0 128" SPECS="resident:1024:120
#      resident:4096:120": the L = 120 resident layers in one call instead of 96 + the rest);
#   3. exact runs (--validate yes) of EXACT's path:width:layers items with the default schedule (EXACT="" none);
#   4. a traced run (--resident-trace) of each width:layers of TRACE (default none; e.g. TRACE="4096:480"), summarised
#      by scripts/spdnn-resident-trace.py into trace_W_L_summary.txt (where a call boundary's time goes).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-chunks-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/; rm -rf $OUT/c
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-1}" = 0 ]; then build_step "$B" spdnn_infer
else
  build_step "$B" jhdnn test_sparse spdnn_infer
  step ctest 200 ctest --test-dir "$B" -j8 --output-on-failure --timeout 200 \
    -R "${CTEST_REGEX:-resident|inference:|spdnn_infer_bad|sass_check}"
fi
AB_OPT=${AB_OPT:---resident-max-chunk}
SPECS=${SPECS:-resident:1024:480,1920 resident:4096:480,1920}
for rep in $(seq "${REPS:-3}"); do
  for spec in $SPECS; do
    IFS=: read -r p w l <<< "$spec"
    for m in ${AB_VALUES:-96 0}; do
      step "ab_${p}_${w}_${l//,/-}_${AB_OPT#--}${m}_$rep" 60 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" \
        --layers "$l" --validate no "$AB_OPT" "$m"
    done
  done
done
for spec in ${EXACT-resident:1024:1920 resident:4096:480}; do
  IFS=: read -r p w l <<< "$spec"
  step "exact_${p}_${w}_${l//,/-}" 120 "$SI" --data "$PWD/data/spdnn" --path "$p" --width "$w" --layers "$l" --validate yes
done
for spec in ${TRACE:-}; do
  IFS=: read -r w l <<< "$spec"
  t="trace_${w}_${l//,/-}"
  step "$t" 90 "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" --validate no \
    --resident-trace "$OUT/$t.csv"
  [ -s "$OUT/$t.csv" ] && step "${t}_summary" 60 python3 scripts/spdnn-resident-trace.py "$OUT/$t.csv"
done
step_summary
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
grep -hE "resident calls" "$OUT"/ab_*_1.txt | sed 's/.*API host/API host/' | head -8
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" 2>/dev/null | head
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
