#!/usr/bin/env bash
# Session 13 call 4 on ee8bd21 (quad default + resident_pos rows): [resident] tests (quad, then pair on
# the GPU cases), timing against 11235e0 (quad without the row permutation, built from
# out/s13/pre-swizzle-src.tar.gz), ncu wavefronts of the quad launch. Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c4; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; SP=/tmp/pre/build/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -3 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
( mkdir -p /tmp/pre && tar xzf out/s13/pre-swizzle-src.tar.gz -C /tmp/pre && cd /tmp/pre &&
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF > /tmp/c4/prebuild.txt 2>&1;
  cmake --build build -j 6 --target spdnn_infer >> /tmp/c4/prebuild.txt 2>&1; echo "pre build rc $?" >> /tmp/c4/prebuild.txt ) &
PB=$!
step build 200 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 10 --target spdnn_infer test_sparse"
step test_resident 150 $B/tests/test_sparse "[resident]" --durations yes
step test_resident_pair 100 env JHDNN_RESIDENT_KERNEL=pair $B/tests/test_sparse "[resident]~[cpu]"
wait $PB; tail -1 $O/prebuild.txt
export JHDNN_SPDNN_DIR=$PWD/data/spdnn
for r in 1 2; do
  step infer_pre_quad_$r 60 $SP --width 1024 --layers 120,480,1920 --path resident --validate yes
  step infer_quad_$r 60 $SI --width 1024 --layers 120,480,1920 --path resident --validate yes
  step infer_pair_$r 60 env JHDNN_RESIDENT_KERNEL=pair $SI --width 1024 --layers 120,480,1920 --path resident --validate yes
done
grep -H -E "^ +1024 " $O/infer_*.txt
step ncu_quad 90 ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
  --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
  -k regex:dnn_resident_kernel --launch-skip 2 -c 1 $SI --width 1024 --layers 120 --path resident --validate no
grep -E "Duration|L1/TEX Cache Throughput|wavefronts_mem_shared|inst_executed.sum" $O/ncu_quad.txt | head
step test_sparse_all 150 $B/tests/test_sparse
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/c4.tgz -C /tmp c4
