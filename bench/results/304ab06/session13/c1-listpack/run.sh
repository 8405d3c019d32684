#!/usr/bin/env bash
# Session 13 call 1 on trial-s13 (main 93dd8b5 + wip-resident-listpack): full build, whole ctest,
# main's spdnn_infer built from out/s13/main-src.tar.gz for a same-run A/B, resident timing
# (main pair vs trial pair = list-pack), ncu of the trial's first resident launch. Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c1; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; SM=/tmp/mainsrc/build/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -4 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
( mkdir -p /tmp/mainsrc && tar xzf out/s13/main-src.tar.gz -C /tmp/mainsrc && cd /tmp/mainsrc &&
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF > /tmp/c1/mainbuild.txt 2>&1;
  cmake --build build -j 6 --target spdnn_infer >> /tmp/c1/mainbuild.txt 2>&1; echo "main build rc $?" >> /tmp/c1/mainbuild.txt ) &
MB=$!
step ctest 250 bash -c "cd $B && ctest -j4 --timeout 200 --output-on-failure"
grep -E "tests passed|tests failed|Failed|\*\*\*" $O/ctest.txt | head -20
wait $MB; tail -2 $O/mainbuild.txt
export JHDNN_SPDNN_DIR=$PWD/data/spdnn
for r in 1 2; do
  step infer_main_$r 60 $SM --width 1024 --layers 120,480,1920 --path resident --validate yes
  step infer_trial_$r 60 $SI --width 1024 --layers 120,480,1920 --path resident --validate yes
done
grep -h -E "^ +1024 " $O/infer_*.txt
step ncu_trial 100 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
  --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 $SI --width 1024 --layers 120 --path resident --validate no
grep -E "Duration|Executed Instructions |Issued Ipc Active|L1/TEX Cache Throughput|wavefronts_mem_shared|Registers Per" $O/ncu_trial.txt | head
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/c1.tgz -C /tmp c1
