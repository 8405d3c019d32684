#!/usr/bin/env bash
# Session 14 last call, main at the commit C: test_sparse whole (dense to CSR changed), bench_sparse's
# DenseToCsr rows to JSON for bench/results/sparse.md. Guard 230 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f2; mkdir -p $O; B=build-gpu
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 230 - el ));
  if [ $left -lt 10 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -3 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse bench_sparse"
step bench_d2c 30 $B/bench/bench_sparse --benchmark_filter='DenseToCsr/' --benchmark_out=$O/bench_sparse_d2c.json --benchmark_out_format=json
step test_sparse 150 $B/tests/test_sparse --durations yes
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -E "^DenseToCsr" $O/bench_d2c.txt | awk '{print $1, $2, $3}'
tar czf $OUT/f2.tgz -C /tmp f2
