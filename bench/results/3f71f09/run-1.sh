#!/usr/bin/env bash
# Session 12 call 1 on trial-s12b (main + wip-bm64-stages + wip-spdnn-crowded + wip-spdnn-resident):
# build; whole ctest + public-nets verify (background); crowded spdnn_infer A/B (no ncu);
# bm64 deep benches; memcheck/racecheck [bm64]. Elapsed-time guard at 550 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/c1; mkdir -p $O; B=build-gpu; J=$B/tools/jhdnn-bench/jhdnn-bench; T=$B/tests
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 550 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -3 $O/$n.txt; }
BENCH=1 COMPARE_ARGS="--suite=none" COMPARE_TIMEOUT=5 BENCH_CONV=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=240 VERIFY_TIMEOUT=230 MEMCHECK=0 \
  timeout 420 scripts/gpu-check.sh $O/check > $O/check.txt 2>&1; res+=("gpu-check: exit $? ($(( $(date +%s) - t0 )) s)")
grep -E "Failed|\*\*\*|tests passed|tests failed" $O/check/ctest.log | head -20; head -10 $O/check/summary.md
step crowded 170 env TESTS=0 NCU=0 scripts/spdnn-crowded-gpu.sh $O/crowded
step bm64_bench 60 $B/bench/bench_tensorcore --benchmark_filter='conv/rn50_c5_.*(1x1_2048_512|3x3_512).*/'
step bm64_cmp 60 $J --suite=resnet50 --filter=c5 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma --cudnn=all --csv=$O/c5.csv
step memcheck_bm64 60 compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_conv_tensorcore "[bm64]"
step racecheck_bm64 80 compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_conv_tensorcore "[bm64]"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -h -E "ms|TeraEdges|PASS|FAIL" $O/crowded/spdnn_*.txt 2>/dev/null | head -40
tar czf $OUT/c1.tgz -C /tmp c1
