#!/usr/bin/env bash
# Session 13 call 5: the duo shape against quad (same binary, JHDNN_RESIDENT_KERNEL), [resident] GPU
# tests under duo and the default, ncu of the duo launch. Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c5; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -3 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer test_sparse"
step test_resident_duo 120 env JHDNN_RESIDENT_KERNEL=duo $B/tests/test_sparse "[resident]~[cpu]"
export JHDNN_SPDNN_DIR=$PWD/data/spdnn
for r in 1 2; do
  for K in quad duo; do
    step infer_${K}_$r 60 env JHDNN_RESIDENT_KERNEL=$K $SI --width 1024 --layers 120,480,1920 --path resident --validate yes
  done
done
grep -H -E "^ +1024 " $O/infer_*.txt
step ncu_duo 90 env JHDNN_RESIDENT_KERNEL=duo ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
  --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 $SI --width 1024 --layers 120 --path resident --validate no
grep -E "Duration|L1/TEX Cache Throughput|wavefronts_mem_shared|inst_executed|Est. Local|stalled" $O/ncu_duo.txt | head -14
step test_resident 120 $B/tests/test_sparse "[resident]"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/c5.tgz -C /tmp c5
