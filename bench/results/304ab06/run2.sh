#!/usr/bin/env bash
# Session 13 final call, part 2 (f1's spdnn_infer hit its 60 s cap at N = 16384 L = 480; its sanitizer
# steps matched no test: a comma splits a Catch2 test spec): build; spdnn_infer over the widths;
# memcheck and racecheck of two resident GPU tests (quad, the default). Guard 400 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f2; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 400 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer test_sparse"
step spdnn_infer 150 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $O/spdnn_infer.csv --active-csv $O/spdnn_active.csv
step memcheck_resident 90 compute-sanitizer --tool memcheck --error-exitcode 99 $B/tests/test_sparse "resident layers: bitwise the fma chain and the fused path*"
step racecheck_resident 60 compute-sanitizer --tool racecheck --error-exitcode 99 $B/tests/test_sparse "resident trace: one record per event*"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
tar czf $OUT/f2.tgz -C /tmp f2
