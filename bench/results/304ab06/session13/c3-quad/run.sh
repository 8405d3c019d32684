#!/usr/bin/env bash
# Session 13 call 3 on wip-resident-quad: [resident] GPU tests under quad (and the whole test_sparse
# default), timing pair vs quad (same binary, JHDNN_RESIDENT_KERNEL), ncu of the quad launch. Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c3; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -4 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer test_sparse"
step test_quad 150 env JHDNN_RESIDENT_KERNEL=quad $B/tests/test_sparse "[resident]~[cpu]" --durations yes
for r in 1 2; do
  for K in pair quad; do
    step infer_${K}_$r 60 env JHDNN_RESIDENT_KERNEL=$K $SI --width 1024 --layers 120,480,1920 --path resident --validate yes
  done
done
grep -H -E "^ +1024 " $O/infer_*.txt
for K in quad; do
step ncu_$K 100 env JHDNN_RESIDENT_KERNEL=$K ncu --clock-control none --section SpeedOfLight --section Occupancy \
  --section InstructionStats --section WarpStateStats --section SourceCounters \
  --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 -o $O/$K $SI --width 1024 --layers 120 --path resident --validate no
ncu --import $O/$K.ncu-rep --page details > $O/ncu_${K}_details.txt 2>&1
ncu --import $O/$K.ncu-rep --page source --csv --print-source sass > $O/${K}_sass.csv 2>&1
grep -E "Duration|Executed Instructions |Issued Ipc Active|L1/TEX Cache Throughput|wavefronts_mem_shared|Registers Per" $O/ncu_${K}_details.txt | head
done
step test_sparse_all 200 $B/tests/test_sparse
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/c3.tgz -C /tmp c3
