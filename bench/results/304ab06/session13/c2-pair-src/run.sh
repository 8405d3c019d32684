#!/usr/bin/env bash
# Session 13 call 2 on main: ncu source counters (per-SASS shared wavefronts) of the pair resident
# kernel's first launch; the cuSPARSE pipeline at N = 4096 L = 480 / 1920 (bench_sparse). Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c2; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -4 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer bench_sparse"
step ncu_src 150 ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 -o $O/pair $SI --width 1024 --layers 120 --path resident --validate no
step ncu_page 60 ncu --import $O/pair.ncu-rep --page source --csv --print-source sass
mv $O/ncu_page.txt $O/pair_sass.csv
step ncu_details 30 ncu --import $O/pair.ncu-rep --page details
step pipe4096 400 $B/bench/bench_sparse --spdnn "4096:480,1920" --baseline "4096:480,1920" --benchmark_filter='SpDNN/(cusparse|fused|separate)/N4096/L(480|1920)'
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/c2.tgz -C /tmp c2
