#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4 minutes, two cold builds included): a change to late4's gather
# path (the scattered columns of the crowded and middle layers) against the tree before it
# (BASE_DIR, default out/base: `git archive <base> CMakeLists.txt cmake include src tools tests/common examples |
# tar x -C out/base`, carried).
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-gather-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-gather-gpu.sh $OUT/g; mv $OUT/g/r.tgz $OUT/; rm -rf $OUT/g
# (carry out/base and data/spdnn).
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer and test_sparse (new tree) and spdnn_infer (base), in parallel;
#   2. test_sparse's reuse-tile cases under late4crowd and late4all (scattered, mixed and partial tiles: the gather
#      path), and the tiled layout on random layers;
#   3. exact, new tree, default path: the official N = 1024 L = 120 network, generated N = 4096 L = 480;
#   4. the A/B, base / new in turn, twice: resident N = 1024 L = 120, N = 4096 L = 120 / 480 (the crowded head runs
#      late4crowd), graph N = 16384 L = 120 / 480 and N = 65536 L = 120 (late4all);
#   5. ncu of the head's launches at N = 1024 and 4096 (both trees, no warm-up): time, instructions, L1 wavefronts,
#      the stall reasons; the shared-memory bank conflicts of layers 1-4 at N = 1024 (both trees);
#   6. exact N = 16384 / 65536 L = 120 (graph) against the CPU reference.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_new_and_base "-DJHDNN_BUILD_BENCH=OFF" spdnn_infer test_sparse
for t in late4crowd late4all; do
  step "test_reuse_$t" 60 env JHDNN_TEST_SPDNN_TILE=$t "$T/test_sparse" \
    "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
done
step test_tiled_random 30 "$T/test_sparse" "fused layer: the tiled feature layout on random layers*"
step exact_1024 30 "$SI" --width 1024 --layers 120 --validate yes
step exact_4096 40 "$SI" --width 4096 --layers 480 --validate yes
SB=build-base/examples/spdnn_infer
NEW=(env LD_LIBRARY_PATH="$PWD/$B/src" "$SI")
OLD=(env LD_LIBRARY_PATH="$PWD/build-base/src" "$SB" --data "$PWD/data/spdnn")
for rep in 1 2; do
  for spec in resident:1024:120 resident:4096:120,480 graph:16384:120,480 graph:65536:120; do
    IFS=: read -r p w l <<< "$spec"
    step "ab_${p}_${w}_base_$rep" 45 "${OLD[@]}" --path "$p" --width "$w" --layers "$l" --validate no
    step "ab_${p}_${w}_new_$rep" 45 "${NEW[@]}" --path "$p" --width "$w" --layers "$l" --validate no
  done
done
M="gpu__time_duration.sum,dram__bytes.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
M="$M,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active"
M="$M,l1tex__data_pipe_lsu_wavefronts.sum,l1tex__t_requests.sum,l1tex__t_sectors.sum$NCU_STALLS"
for w in 1024 4096; do
  step "ncu_head_$w" 60 env LD_LIBRARY_PATH="$PWD/$B/src" ncu --clock-control none --csv --metrics "$M" -k regex:dnn_layer_cta_kernel \
    --launch-count 8 "$SI" --width $w --layers 120 --validate no --no-warmup --active-csv "$OUT/active_$w.csv"
  step "ncu_head_base_$w" 60 env LD_LIBRARY_PATH="$PWD/build-base/src" ncu --clock-control none --csv --metrics "$M" \
    -k regex:dnn_layer_cta_kernel --launch-count 8 "$SB" --data "$PWD/data/spdnn" --width $w --layers 120 \
    --validate no --no-warmup
done
# The shared-memory bank conflicts of the feature copies (cp.async) and of the loads, layers 1-4 at N = 1024.
MB="gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ldgsts.sum"
MB="$MB,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
step ncu_banks_new 40 env LD_LIBRARY_PATH="$PWD/$B/src" ncu --clock-control none --csv --metrics "$MB" \
  -k regex:dnn_layer_cta_kernel --launch-count 4 "$SI" --width 1024 --layers 120 --validate no --no-warmup
step ncu_banks_base 40 env LD_LIBRARY_PATH="$PWD/build-base/src" ncu --clock-control none --csv --metrics "$MB" \
  -k regex:dnn_layer_cta_kernel --launch-count 4 "$SB" --data "$PWD/data/spdnn" --width 1024 --layers 120 \
  --validate no --no-warmup
step exact_16384 60 "${NEW[@]}" --path graph --width 16384 --layers 120 --validate yes
step exact_65536 80 "${NEW[@]}" --path graph --width 65536 --layers 120 --validate yes
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt
for f in "$OUT"/test_*.txt; do echo "$(basename "$f" .txt): $(grep -E 'passed|failed' "$f" | tail -1)"; done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
