#!/usr/bin/env bash
# On the GPU machine, on a checkout of `trial-next` (main + the branches in docs/open-branches.md; on main
# the steps for pieces it does not have yet fail fast with their exit code): the ~10-12 minute check,
# as one device call. Builds BUILD_DIR, runs the tests each branch added or changed, the A/B benchmarks
# that decide whether each one pays, and compute-sanitizer on the new kernels; logs under OUTDIR.
#
#   JHDNN_COMMIT=<sha> scripts/gpu-trial.sh OUTDIR
#
# Each step has its own timeout (seconds, env: TEST_TIMEOUT, BENCH_TIMEOUT, SAN_TIMEOUT) so one hang
# cannot eat the call; the summary at the end lists every step's exit code.
set -uo pipefail
OUT=${1:?usage: gpu-trial.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
t0=$(date +%s)
declare -a results
step() {  # name timeout command...
  local name=$1 t=$2; shift 2
  echo "== $name ($(( $(date +%s) - t0 )) s)"
  timeout "$t" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  results+=("$name: exit $rc")
  tail -3 "$OUT/$name.txt"
}
echo "commit ${JHDNN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}" >"$OUT/commit.txt"
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$B" -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
T=$B/tests/test_conv_tensorcore
TT=${TEST_TIMEOUT:-150}
step tma_store "$TT" "$T" "[tma_store]"
step alpha_beta "$TT" "$T" "[alpha_beta]"
step smallc "$TT" "$T" "[smallc]"
step bm64 "$TT" "$T" "[bm64]"
step problem_sets "$TT" ctest --test-dir "$B" -R "tensorcore: (problem set|edge)" -j4 --output-on-failure
step ctest_new "$TT" ctest --test-dir "$B" -R "alpha_beta_env_epilogue|wgmma TMA store|epilogue_banks|depthwise|wgmma plan|smallc" -j4 --output-on-failure
BT=${BENCH_TIMEOUT:-90}
J=$B/tools/jhdnn-bench/jhdnn-bench
step rn50_tc "$BT" "$J" --suite=resnet50 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv="$OUT/rn50_tc.csv"
JHDNN_TC_EPILOGUE=staged step rn50_tc_staged "$BT" "$J" --suite=resnet50 --cfg=f16:nhwc --algo=tensorcore_wgmma --cudnn=none --csv="$OUT/rn50_tc_staged.csv"
step vgg_tc "$BT" "$J" --suite=vgg16 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv="$OUT/vgg_tc.csv"
step mobilenet "$BT" "$J" --suite=mobilenet --cfg=f16:nhwc,bf16:nhwc,f32:nchw --algo=depthwise,direct_tiled --cudnn=all --csv="$OUT/mobilenet.csv"
step bench_tc "$BT" "$B/bench/bench_tensorcore" \
  --benchmark_filter='conv/rn50_(conv1_7x7s2|c2_1x1_64_256|c3_1x1_128_512|c4_1x1_256_1024|c5_1x1_2048_512|c5_3x3_512)/f16_nhwc/|conv/vgg16_conv1_1/f16_nhwc/'
ST=${SAN_TIMEOUT:-120}
step memcheck_tc "$ST" compute-sanitizer --tool memcheck --error-exitcode 99 "$T" "[tma_store],[smallc]"
step racecheck_tc "$ST" compute-sanitizer --tool racecheck --error-exitcode 99 "$T" "[tma_store]"
echo "== done ($(( $(date +%s) - t0 )) s)"
printf '%s\n' "${results[@]}" | tee "$OUT/summary.txt"
for f in "$OUT"/rn50_tc.csv "$OUT"/vgg_tc.csv "$OUT"/mobilenet.csv; do
  [ -f "$f" ] && python3 scripts/conv-geomean.py "$f" | grep geomean
done
