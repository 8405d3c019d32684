#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes, two cold builds included): branch wip-resident-checks
# (the resident call checks its layers' weight arrays only when it builds their packed copies, the only place they
# are read, instead of ~3 cudaPointerGetAttributes per layer on every call; session 27, written without a GPU)
# against main's tree (BASE_DIR, default out/base: `git archive main CMakeLists.txt cmake include src tools
# tests/common examples | tar x -C out/base`, carried).
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-checks-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/; rm -rf $OUT/c
# (carry out/base and data/spdnn).
#
# Predicted (not measured): the first resident call's host time (spdnn_infer's '#' line) from ~0.1 ms to a few us at
# N = 1024 L = 120, and the loop ~-3 to -6% there if the GPU waited for it (the layer kernels' ncu sum is ~1.43 ms of
# a ~1.55 ms loop, bench/results/c8bb036/near); less at N = 4096 L = 480 (9.6 ms).
set -uo pipefail
BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
echo "commit ${JHDNN_COMMIT:-unknown}" > "$OUT/commit.txt"
BASE=${BASE_DIR:-out/base}
[ -f "$BASE/CMakeLists.txt" ] || { echo "no base tree at $BASE"; exit 2; }
scripts/fetch-spdnn-data.sh > "$OUT/data.txt" 2>&1 || echo "no spdnn data: the official network is missing"
build_new_and_base "-DJHDNN_BUILD_BENCH=OFF" spdnn_infer test_sparse
step test_resident 200 "$T/test_sparse" "[resident]"
SB=build-base/examples/spdnn_infer
NEW=(env LD_LIBRARY_PATH="$PWD/$B/src" "$SI")
OLD=(env LD_LIBRARY_PATH="$PWD/build-base/src" "$SB" --data "$PWD/data/spdnn")
for rep in 1 2; do
  for w in 1024 4096; do
    step "ab_${w}_base_$rep" 45 "${OLD[@]}" --width $w --layers 120,480 --validate no
    step "ab_${w}_new_$rep" 45 "${NEW[@]}" --width $w --layers 120,480 --validate no
  done
done
step exact_1024 30 "${NEW[@]}" --width 1024 --layers 120 --validate yes
step exact_4096 40 "${NEW[@]}" --width 4096 --layers 480 --validate yes
step_summary
for f in "$OUT"/ab_*.txt "$OUT"/exact_*.txt; do
  [ -f "$f" ] && paste -d' ' <(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $1, $2, $5, $10}') \
    <(grep -o 'API host time [0-9.]* ms\( (first [a-z-]* call [0-9.]* ms\)\?' "$f") | sed "s|^|$(basename "$f" .txt) |"
done
grep -E "passed|failed" "$OUT/test_resident.txt" | tail -2
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
