#!/usr/bin/env bash
# Session 18 call 3 (diagnostic, main): the crowded head's layers one by one at N = 4096 and N = 16384 (graph path,
# cta2w; L = 120, no warm-up): ncu of the first 14 layer launches (time, DRAM bytes, instructions, IPC, warps active,
# shared wavefronts, the top stall reasons), to put each head layer against its DRAM and FMA floors.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c3; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer
BUDGET_S=240 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer"
M="gpu__time_duration.sum,dram__bytes.sum,lts__t_bytes.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
for r in long_scoreboard short_scoreboard mio_throttle lg_throttle wait not_selected barrier math_pipe_throttle; do
  M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
for w in 4096 16384; do
  step ncu_head_$w 70 ncu --clock-control none --csv --metrics "$M" -k regex:dnn_layer_cta_kernel --launch-count 14 \
    $SI --width $w --layers 120 --path graph --validate no --no-warmup --active-csv $OUT/active_$w.csv
done
echo "commit $C" > $OUT/commit.txt
step_summary
tar czf $OUT_DEV/c3.tgz -C /tmp c3
