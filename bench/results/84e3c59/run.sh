#!/usr/bin/env bash
# Session 21 call 6: main at $C (late4's 16-byte path with staged features): build; ctest spdnn_tile_late4;
# spdnn_infer N = 16384 L = 120,480 exact (auto = late4); ncu of 4 late layers (late4); cta2w / late4 A/B at L = 480.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c6; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer
BUDGET_S=290 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse spdnn_infer"
step ctest_late4 60 ctest --test-dir $B -R '^spdnn_tile_late4$' --output-on-failure
step sp16384_exact 75 $SI --width 16384 --layers 120,480 --path graph --validate yes
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,lts__t_bytes.sum,dram__bytes.sum"
step ncu_late4 30 ncu --clock-control none --metrics "$M" -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 2 --csv $SI --width 16384 --layers 120 --path graph --validate no --no-warmup
for t in cta2w late4; do JHDNN_SPDNN_TILE=$t step ab16384_$t 30 $SI --width 16384 --layers 480 --path graph --validate no; done
echo "commit $C" > $OUT/commit.txt
step_summary
grep -hE '^ +[0-9]+ +[0-9]+ ' $OUT/sp16384_exact.txt $OUT/ab*.txt
grep -E '"(gpu__time|smsp__inst_executed.sum|sm__inst|smsp__average|lts__t|dram)' $OUT/ncu_late4.txt | awk -F'","' '{id=$1; gsub(/"/,"",id); v=$NF; gsub(/"/,"",v); print id, $(NF-2), v}'
grep -E "tests passed|Failed" $OUT/ctest_late4.txt | tail -2
tar czf $OUT_DEV/c6.tgz -C /tmp c6
