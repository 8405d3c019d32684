#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, two cold builds included): the head's count copies on a
# stream of their own (tools/spdnn, session 28, written without a GPU) against BASE_DIR's tree (default out/base:
# `git archive <base> CMakeLists.txt cmake include src tools tests/common examples | tar x -C out/base`, carried),
# in turn, twice; --resident-first-chunk 8 on the new tree beside them; exact runs; then the whole ctest of the new
# tree (the time left).
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-copies-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/; rm -rf $OUT/c
# (carry out/base and data/spdnn).
#
# Predicted (not measured): before, each head layer's 4-byte count copy sat on the layers' stream between layer l
# and layer l + 1 (~10 layers at N = 1024 L = 120, ~12 at N = 4096); a few us each, so -20 to -40 us of the
# ~1.48 ms loop at N = 1024 L = 120 (-1.5 to -3%), about as many us at N = 4096 (under 0.5% of 9.5 ms).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_new_and_base "" all
NEW=(env LD_LIBRARY_PATH="$PWD/$B/src" "$SI")
OLD=(env LD_LIBRARY_PATH="$PWD/build-base/src" build-base/examples/spdnn_infer --data "$PWD/data/spdnn")
for rep in 1 2; do
  for w in 1024 4096; do
    step "ab_${w}_base_$rep" 45 "${OLD[@]}" --width $w --layers 120,480 --validate no
    step "ab_${w}_new_$rep" 45 "${NEW[@]}" --width $w --layers 120,480 --validate no
    step "ab_${w}_chunk8_$rep" 45 "${NEW[@]}" --width $w --layers 120,480 --validate no --resident-first-chunk 8
  done
done
step exact_1024 30 "${NEW[@]}" --width 1024 --layers 120 --validate yes
step exact_4096 40 "${NEW[@]}" --width 4096 --layers 480 --validate yes
ctest_step "$B"
step_summary
infer_rows "$OUT"/ab_*.txt "$OUT"/exact_*.txt
for f in "$OUT"/ab_*.txt; do
  echo "$(basename "$f" .txt): $(grep -o 'API host time [0-9.]* ms\( (first [a-z-]* call [0-9.]* ms\)\?' "$f" | tr '\n' ' ')"
done
grep -E "tests passed|Total Test|\(Failed\)|Not Run" "$OUT/ctest.txt" | head
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
