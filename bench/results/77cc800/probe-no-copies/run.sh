#!/usr/bin/env bash
# Probe (session 36, not a repository script): late4's crowded layers with no feature copies (timing only; the
# results are wrong), against the tree as it is: ncu of the first LAUNCHES dnn_layer_cta_kernel launches.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=420 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source scripts/lib/gpu-script.sh "$@"
rm -rf /tmp/probe && mkdir -p /tmp/probe && cp -r CMakeLists.txt cmake include src tools tests examples /tmp/probe/ 2>/dev/null
(cd /tmp/probe && patch -p1 < "$OLDPWD/out/probe/no-copies.diff") > "$OUT/patch.txt" 2>&1
j=$(($(nproc) / 2))
{ cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF && cmake --build "$B" -j "$j" --target spdnn_infer; } > "$OUT/build.log" 2>&1 &
{ cmake -S /tmp/probe -B build-probe -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF && cmake --build build-probe -j "$j" --target spdnn_infer; } > "$OUT/build-probe.log" 2>&1 &
wait
metrics=gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum${NCU_STALLS}
for w in 1024 4096 16384; do
  p=resident; [ "$w" = 16384 ] && p=graph
  for side in base probe; do
    if [ "$side" = base ]; then lib=$B/src si=$SI; else lib=build-probe/src si=build-probe/examples/spdnn_infer; fi
    step "ncu_${w}_$side" 120 env LD_LIBRARY_PATH="$PWD/$lib" ncu --clock-control none --metrics "$metrics" --csv \
      -k regex:dnn_layer_cta_kernel --launch-count "${LAUNCHES:-3}" "$si" --data "$PWD/data/spdnn" --path "$p" \
      --width "$w" --layers 120 --validate no --no-warmup
  done
done
step_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
