#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, two cold builds included): session 24's late4 changes
# against the tree before them (BASE_DIR, default out/base: `git archive <base> CMakeLists.txt cmake include src
# tools tests/common examples | tar x -C out/base`, carried):
#   - late4's staged features for scattered columns too (kGather: 4-byte cp.async per image into each lane's own
#     16 bytes; before, such tiles ran late4_run without staging): auto, new vs base;
#   - JHDNN_SPDNN_TILE=late4all: late4 in the crowded layers too (where auto runs cta2's CTA tile).
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-late4all-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-late4all-gpu.sh $OUT/a; mv $OUT/a/r.tgz $OUT/; rm -rf $OUT/a
# (carry out/base and data/spdnn's neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the categories files).
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer in both trees (in parallel); unpack the challenge data;
#   2. (EXACT=0 skips it) exact against the CPU reference, new tree: N = 16384 L = 120 under auto and late4all,
#      N = 65536 L = 120 under late4all;
#   3. the A/B, base auto / new auto / new late4all in turn, twice, for each WIDTH:LAYERS of SPECS
#      (default "16384:120,480 65536:120"), on spdnn_infer's SPDNN_PATH (default graph);
#   4. (NCU=0 skips it) ncu of the first 12 layer launches at N = 16384 (time, DRAM bytes), new auto and late4all;
#   5. (STALLS=1 adds it) ncu of layers 1-3 at N = 16384 under the new tree's auto: the stall reasons per issue, L1 /
#      L2 sectors and hit rates, DRAM bytes (layer 1 copies 16 bytes a lane, layers 2-3 gather 4-byte pieces);
#   6. (NCU_LATE=1 adds it) ncu of two late layers (launches 41-42) at N = 16384, base auto and new auto: time,
#      DRAM bytes read and written;
#   7. (TESTS=1 adds it, first after the builds) test_sparse's late4 cases (JHDNN_TEST_REUSE_CASE=late4) under
#      late4 and late4all, new tree.
# Since auto is late4all above 4096 rows (dbe2ceb), "new auto" and "new late4all" run the same tile there.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
OFF="-DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF"
build_new_and_base "$OFF" spdnn_infer
if [ "${TESTS:-0}" = 1 ]; then
  if cmake -S . -B "$B" -DJHDNN_BUILD_TESTS=ON > "$OUT/build-tests.log" 2>&1 &&
    cmake --build "$B" -j "$(nproc)" --target test_sparse >> "$OUT/build-tests.log" 2>&1; then
    step_results+=("test build: done ($(($(date +%s) - step_t0)) s)")
    for t in late4 late4all; do
      step "test_late4_cases_$t" 120 env JHDNN_TEST_SPDNN_TILE=$t JHDNN_TEST_REUSE_CASE=late4 "$T/test_sparse" \
        "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
    done
  else
    tail -30 "$OUT/build-tests.log"
    step_results+=("test build: FAILED ($(($(date +%s) - step_t0)) s; the late4 cases did not run)")
  fi
fi
SB=build-base/examples/spdnn_infer
# Each binary loads the library of its own build (spdnn_infer links libjhdnn.so); the tile goes in by env.
# SPDNN_PATH: spdnn_infer's --path (default graph; resident: N = 1024 / 4096's default, whose crowded head runs the
# per-layer kernel with the tile named here).
SP=${SPDNN_PATH:-graph}
NEW=(env LD_LIBRARY_PATH="$PWD/$B/src" JHDNN_SPDNN_TILE=auto "$SI" --path "$SP")
ALL=(env LD_LIBRARY_PATH="$PWD/$B/src" JHDNN_SPDNN_TILE=late4all "$SI" --path "$SP")
OLD=(env LD_LIBRARY_PATH="$PWD/build-base/src" JHDNN_SPDNN_TILE=auto "$SB" --path "$SP" --data "$PWD/data/spdnn")
if [ "${EXACT:-1}" != 0 ]; then
  step exact_16384_auto 60 "${NEW[@]}" --width 16384 --layers 120 --validate yes
  step exact_16384_late4all 60 "${ALL[@]}" --width 16384 --layers 120 --validate yes
  step exact_65536_late4all 80 "${ALL[@]}" --width 65536 --layers 120 --validate yes
fi
for rep in 1 2; do
  for spec in ${SPECS:-16384:120,480 65536:120}; do
    w=${spec%%:*} l=${spec##*:}
    step "ab_${w}_base_$rep" 45 "${OLD[@]}" --width "$w" --layers "$l" --validate no
    step "ab_${w}_auto_$rep" 45 "${NEW[@]}" --width "$w" --layers "$l" --validate no
    step "ab_${w}_late4all_$rep" 45 "${ALL[@]}" --width "$w" --layers "$l" --validate no
  done
done
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum"
[ "${NCU:-1}" != 0 ] && step ncu_head_auto 40 env LD_LIBRARY_PATH=$PWD/$B/src ncu --clock-control none --csv --metrics "$M" \
  -k regex:dnn_layer_cta_kernel --launch-count 12 "$SI" --width 16384 --layers 120 --path graph --validate no \
  --no-warmup --active-csv "$OUT/active_16384.csv"
[ "${NCU:-1}" != 0 ] && step ncu_head_late4all 40 env JHDNN_SPDNN_TILE=late4all LD_LIBRARY_PATH=$PWD/$B/src ncu --clock-control none --csv \
  --metrics "$M" -k regex:dnn_layer_cta_kernel --launch-count 12 "$SI" --width 16384 --layers 120 --path graph \
  --validate no --no-warmup
if [ "${STALLS:-0}" = 1 ]; then
  MS="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum"
  MS="$MS,sm__inst_executed.avg.per_cycle_active,l1tex__t_sectors.sum"
  MS="$MS,l1tex__t_sector_hit_rate.pct,lts__t_sectors.sum,lts__t_sector_hit_rate.pct$NCU_STALLS"
  step ncu_stalls_head 90 env LD_LIBRARY_PATH=$PWD/$B/src ncu --clock-control none --csv --metrics "$MS" \
    -k regex:dnn_layer_cta_kernel --launch-count 3 "$SI" --width 16384 --layers 120 --path graph --validate no \
    --no-warmup
fi
if [ "${NCU_LATE:-0}" = 1 ]; then
  ML="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum"
  step ncu_late_base 60 env LD_LIBRARY_PATH=$PWD/build-base/src ncu --clock-control none --csv --metrics "$ML" \
    -k regex:dnn_layer_cta_kernel --launch-skip 41 --launch-count 2 "$SB" --data "$PWD/data/spdnn" --width 16384 \
    --layers 120 --path graph --validate no --no-warmup
  step ncu_late_auto 60 env LD_LIBRARY_PATH=$PWD/$B/src ncu --clock-control none --csv --metrics "$ML" \
    -k regex:dnn_layer_cta_kernel --launch-skip 41 --launch-count 2 "$SI" --width 16384 --layers 120 --path graph \
    --validate no --no-warmup
fi
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
