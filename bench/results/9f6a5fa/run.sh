#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
O=/tmp/r23; mkdir -p $O; B=build-gpu; T=$B/tests/test_conv_tensorcore
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j16 --target test_conv_tensorcore; } > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
for f in alpha_beta bm64 smallc; do
  el=$(( $(date +%s) - t0 )); left=$(( 330 - el )); [ $left -lt 15 ] && { echo "skip $f"; continue; }
  st racecheck $f; timeout $left compute-sanitizer --tool racecheck --error-exitcode 99 $T "[$f]" > $O/racecheck_$f.txt 2>&1; echo "exit $?"
  grep -E "RACECHECK SUMMARY|All tests passed|test cases|assertions|SIGTERM" $O/racecheck_$f.txt | tail -3
done
st done
tar czf $OUT/r23.tgz -C /tmp r23
