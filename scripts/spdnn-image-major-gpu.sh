#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (84-169 s with a cold build in session 47): the image-major resident
# path (spdnn_infer --layout image, session 47) against the default path. First its exactness test (test_sparse),
# then at N = 1024 (the official network) and N = 4096, L = 12 and 120, validated: the default (neuron-major head,
# then the resident calls) and the image-major path from layer 1 with first calls of FIRSTS layers (each later call
# 4 times the one before; 0: the default, one call of all 120), alternated twice. L = 12 is the range of session 46's
# prediction (layers 1-12 in ~0.75 ms at N = 1024 and ~3.0 ms at N = 4096, against the head's 0.91 / 3.29 ms). BLOCKS
# and TRACE below add variants; WIDTHS (default "1024 4096") the widths timed; RACECHECK_CASES: test_sparse
# test-case specs ('|' between them) run under compute-sanitizer racecheck after the timings, one step each.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-image-major-gpu.sh $OUT/m; mv $OUT/m/r.tgz $OUT/; rm -rf $OUT/m
# (carry data/spdnn)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=540 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS" \
  source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer test_sparse
# its exactness test, and with RESIDENT_TESTS=1 every [resident] case (the kernels' own tests)
step test_image_major 120 "$T/test_sparse" "inference: the image-major layout on the resident path is exact"
[ "${RESIDENT_TESTS:-0}" = 1 ] && step test_resident 240 "$T/test_sparse" "[resident]"
FIRSTS=${FIRSTS:-1 2 4 0}
BLOCKS=${BLOCKS:-auto}  # JHDNN_RESIDENT_BLOCKS of the image-major runs (docs/api.md), each a run of its own
for rep in 1 2; do
  for w in ${WIDTHS:-1024 4096}; do
    step "m${w}_default_$rep" 60 "$SI" --width "$w" --layers 12,120 --validate yes
    for f in $FIRSTS; do
      for b in $BLOCKS; do
        JHDNN_RESIDENT_BLOCKS=$b step "m${w}_image_f${f}_b${b}_$rep" 60 "$SI" --width "$w" --layers 12,120 \
          --validate yes --layout image --resident-first-chunk "$f"
      done
    done
  done
done
# TRACE="F:B ...": where the image-major call's time goes at L = 12, first call F, JHDNN_RESIDENT_BLOCKS=B, both widths
for t in ${TRACE:-}; do
  for w in 1024 4096; do
    JHDNN_RESIDENT_BLOCKS=${t#*:} step "t${w}_f${t%%:*}_b${t#*:}" 90 "$SI" --width "$w" --layers 12 --validate no \
      --layout image --resident-first-chunk "${t%%:*}" --resident-trace "$OUT/trace_${w}.csv"
    python3 scripts/spdnn-resident-trace.py "$OUT/trace_${w}.csv" > "$OUT/trace_${w}_f${t%%:*}_b${t#*:}.txt" 2>&1
    rm -f "$OUT/trace_${w}.csv"
  done
done
[ -n "${RACECHECK_CASES:-}" ] && racecheck_steps "$RACECHECK_CASES"
step_summary
infer_rows "$OUT"/m*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
