#!/usr/bin/env bash
# Session 14 call E2: dense to CSR, main 8abf97b (out/s14/main-src.tar.gz) against wip-d2c-stage (this
# tree): the dense-to-CSR test (branch), bench_sparse DenseToCsr rows interleaved twice, ncu per kernel
# (60000 x 1024 at 10%), memcheck of the test. Guard 320 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
O=/tmp/e2; mkdir -p $O; B=build-gpu
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 320 - el ));
  if [ $left -lt 10 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
M=/tmp/mainsrc; mkdir -p $M && tar xzf out/s14/main-src.tar.gz -C $M && mkdir -p $M/data && cp -r data/spdnn $M/data/
(cmake -S $M -B $M/b -G Ninja -DCMAKE_BUILD_TYPE=Release > $O/build_main.txt 2>&1 && cmake --build $M/b -j 8 --target bench_sparse >> $O/build_main.txt 2>&1; echo "main build rc $?" >> $O/build_main.txt) &
step build_branch 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 8 --target bench_sparse test_sparse"
wait; tail -1 $O/build_main.txt
step test_d2c 60 $B/tests/test_sparse "dense to CSR*"
F='DenseToCsr/'
for r in 1 2; do
  step bench_main_$r 40 $M/b/bench/bench_sparse --benchmark_filter=$F
  step bench_branch_$r 40 $B/bench/bench_sparse --benchmark_filter=$F
done
K='regex:count_rows|scatter_rows|Scan'
MET=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active
step ncu_main 40 ncu --clock-control none --metrics $MET -k "$K" -c 8 $M/b/bench/bench_sparse --benchmark_filter='DenseToCsr/jhdnn/60000x1024/d10'
step ncu_branch 40 ncu --clock-control none --metrics $MET -k "$K" -c 8 $B/bench/bench_sparse --benchmark_filter='DenseToCsr/jhdnn/60000x1024/d10'
step memcheck_d2c 60 compute-sanitizer --tool memcheck --error-exitcode 99 $B/tests/test_sparse "dense to CSR*"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -h -E "^DenseToCsr/jhdnn" $O/bench_*.txt | awk '{print $1, $2, $3}'
grep -h -E "^DenseToCsr/cusparse" $O/bench_main_1.txt | awk '{print $1, $2, $3}'
grep -E "count_rows|scatter_rows|Scan|duration" $O/ncu_*.txt | head -40
tar czf $OUT/e2.tgz -C /tmp e2
