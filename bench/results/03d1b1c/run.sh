#!/usr/bin/env bash
# Session 18 call 1b (diagnostic, main): does the N = 16384 graph path's late layer get cheaper per image when the
# feature maps fit in L2? spdnn_infer --path graph at 60000 / 30000 / 15000 images (1200 / 600 / 300 late images:
# 157 / 79 / 39 MB of features in + out per layer against the 50 MB L2), L = 120 and 480 each; the late layer's cost
# = (t480 - t120) / 360. Then ncu of launches 40-43 (late layers, 60000 images) under cta2w with the stall reasons,
# L2 hit rate and DRAM bytes.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c1b; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer
BUDGET_S=280 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer"
for im in 60000 30000 15000; do
  step g16384_$im 40 $SI --width 16384 --layers 120,480 --images $im --path graph --validate no --csv $OUT/g16384_$im.csv
done
STALLS=""
for r in barrier long_scoreboard math_pipe_throttle mio_throttle lg_throttle not_selected selected short_scoreboard wait no_instruction; do
  STALLS="$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
step ncu_late 60 ncu --clock-control none --metrics "gpu__time_duration.sum,dram__bytes.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__average_warp_latency_per_inst_issued.ratio$STALLS" \
  -k regex:dnn_layer_cta_kernel --launch-skip 40 -c 2 $SI --width 16384 --layers 120 --path graph --validate no --no-warmup
echo "commit $C" > $OUT/commit.txt
step_summary
grep -hE '^ +16384 ' $OUT/g16384_*.txt
tar czf $OUT_DEV/c1b.tgz -C /tmp c1b
