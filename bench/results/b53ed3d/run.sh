#!/usr/bin/env bash
# Session 22 call 1 at $C (= b53ed3d's kernels): where late4's late layer spends its cycles, and racecheck of late4.
#  1. build test_sparse, spdnn_infer (Release);
#  2. ncu of launch 40 (layer 41, ~1200 images) at N = 16384 L = 120 under late4: SpeedOfLight, MemoryWorkloadAnalysis,
#     WarpStateStats, SchedulerStats, Occupancy, LaunchStats sections + every stall reason per issue;
#  3. ncu SourceCounters of the same launch, per SASS instruction (csv);
#  4. compute-sanitizer racecheck of test_sparse's late4 cases (the staged 16-byte path: identity-column cases).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096
OUT_DEV=$OUT; OUT=/tmp/c1; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; T=$B/tests
BUDGET_S=560 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse spdnn_infer"
ST=""
for r in barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle membar \
  mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait; do
  ST="$ST,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,dram__bytes.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum$ST"
JHDNN_SPDNN_TILE=late4 step ncu_sections 90 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --metrics "$M" \
  -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 2 $SI --width 16384 --layers 120 --path graph --validate no --no-warmup
JHDNN_SPDNN_TILE=late4 step ncu_source 90 ncu --clock-control none --section SourceCounters --page source --csv --print-source sass \
  -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 1 $SI --width 16384 --layers 120 --path graph --validate no --no-warmup
gzip -f $OUT/ncu_source.txt
JHDNN_SPDNN_TILE=late4 JHDNN_TEST_SPDNN_TILE=late4 JHDNN_TEST_REUSE_CASE="late4:" step racecheck_late4 150 \
  compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*"
grep -E "RACECHECK SUMMARY|hazard|ERROR SUMMARY|passed|failed" $OUT/racecheck_late4.txt | tail -4
JHDNN_SPDNN_TILE=late4 JHDNN_TEST_SPDNN_TILE=late4 JHDNN_TEST_REUSE_CASE="late4:" step memcheck_late4 120 \
  compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*"
grep -E "ERROR SUMMARY|passed|failed" $OUT/memcheck_late4.txt | tail -3
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E "Duration|Throughput|Issued|Eligible|Active Warps|Registers|No Eligible|Occupancy|Hit Rate|Bandwidth|Pipe" $OUT/ncu_sections.txt | head -80
grep '^"0"' $OUT/ncu_sections.txt | awk -F'","' '{v=$NF; gsub(/"/,"",v); print $(NF-2), v}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -60
tar czf $OUT_DEV/c1.tgz -C /tmp c1
