#!/usr/bin/env bash
# Session 13 final call on main: build; the whole ctest; bench_sparse and spdnn_infer over the widths
# with the defaults (block tile, quad resident kernel) for bench/results/sparse.md. Guard 540 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f1; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 540 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
BENCH=0 MEMCHECK=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=250 timeout 330 scripts/gpu-check.sh $O/check > $O/check.txt 2>&1
res+=("gpu-check: exit $? ($(( $(date +%s) - t0 )) s)")
head -9 $O/check/summary.md
step bench_sparse 160 $B/bench/bench_sparse --benchmark_out=$O/bench_sparse.json --benchmark_out_format=json
step spdnn_infer 60 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $O/spdnn_infer.csv --active-csv $O/spdnn_active.csv
step memcheck_resident 110 compute-sanitizer --tool memcheck --error-exitcode 99 $B/tests/test_sparse "resident layers: bitwise the fma chain and the fused path, every slice size"
step racecheck_resident 80 compute-sanitizer --tool racecheck --error-exitcode 99 $B/tests/test_sparse "resident trace: one record per event, consistent with the counts"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -E "^SpDNN" $O/bench_sparse.txt | awk '{print $1, $2, $3}'
tar czf $OUT/f1.tgz -C /tmp f1
