#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: the planes kernels (session 58; src/sparse/dnn_resident_tc_planes.cu,
# the tensor-core resident calls past N = 4096). TESTS=1 (default): test_sparse_tc. For each width of WIDTHS (default
# "16384 65536") and depth of DEPTHS (default 120): spdnn_infer on the graph path and with --tc-tail 1 (RUNS,
# "name=spdnn_infer arguments;..." replaces the default "tail=--tc-tail 1;tail_l1=--tc-tail 1 --head-graph 0"),
# without validation (the categories are checked by the tests and bench_sparse). TIMELINE=1: ncu's duration, DRAM
# bytes and warp instructions of the first KERNELS (default 260) launches of one --tc-tail 1 run at N = 16384 L = 30
# (the untimed table build's launches first). NCU=1: the sections of one planes layer launch (SKIP, default 46: layer
# ~21 of that run; NCU_SRC=1 its per-instruction page too). TIMELINE_WIDE=1: the timeline at N = 65536 L = 20.
# BENCH=1: bench_sparse at SPDNN_BENCH (default "16384:120;65536:120") with the pipeline. CTEST=1 first: every
# target and the whole ctest but the 19 switch reruns of test_sparse's GPU cases (then TESTS=0: ctest runs them).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-planes-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# (carry data/spdnn's five files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS \
  JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-0}" = 1 ]; then  # every target and the whole ctest but the switch reruns of test_sparse's GPU cases
  build_step "$B" all
  ctest_step "$B" -E "spdnn_tile_|resident_kernel_|resident_blocks_"
else
  build_step "$B" spdnn_infer test_sparse_tc bench_sparse
fi
[ "${TESTS:-1}" = 1 ] && step tests_tc 240 "$T/test_sparse_tc"
IFS=';' read -ra runs <<< "${RUNS:-tail=--tc-tail 1;tail_l1=--tc-tail 1 --head-graph 0}"
[ "${INFER:-1}" = 1 ] || WIDTHS=" "  # INFER=0: no spdnn_infer runs
for n in ${WIDTHS:-16384 65536}; do
  for L in ${DEPTHS:-120}; do
    step "infer_${n}_${L}_graph" 90 "$SI" --width "$n" --layers "$L" --path graph --validate no
    for r in "${runs[@]}"; do
      # shellcheck disable=SC2086  # the run's arguments, split
      step "infer_${n}_${L}_${r%%=*}" 90 "$SI" --width "$n" --layers "$L" --path resident ${r#*=} --validate no \
        --active-csv "$OUT/active_${n}_${L}_${r%%=*}.csv"
    done
  done
done
# timeline NAME WIDTH LAYERS ARGS..: ncu's per-launch figures of one spdnn_infer run (the first KERNELS launches)
timeline() {
  local name=$1 w=$2 l=$3
  shift 3
  step "timeline_$name" 150 ncu --clock-control none --cache-control none --csv -c "${KERNELS:-260}" \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    "$SI" --width "$w" --layers "$l" --path resident --validate no --no-warmup "$@"
}
[ "${TIMELINE:-0}" = 1 ] && timeline 16384_tail 16384 30 --tc-tail 1
# TIMELINE_WIDE=1: the same at N = 65536 L = 20, with the exact head graph and from layer 1
if [ "${TIMELINE_WIDE:-0}" = 1 ]; then
  timeline 65536_tail 65536 20 --tc-tail 1
  timeline 65536_tail_l1 65536 20 --tc-tail 1 --head-graph 0
fi
if [ "${NCU:-0}" = 1 ]; then
  step ncu_planes_16384 120 ncu --clock-control none --kernel-name regex:planes_layer -s "${SKIP:-46}" -c 1 \
    --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics "smsp__inst_executed.sum,gpu__time_duration.sum$NCU_STALLS" \
    "$SI" --width 16384 --layers 30 --path resident --tc-tail 1 --validate no --no-warmup
fi
# NCU_SRC=1: the same launch's details and per-instruction page (src_planes_16384.csv.gz, scripts/ncu-source-lines.py)
[ "${NCU_SRC:-0}" = 1 ] && ncu_profile planes_16384 planes_layer "${SKIP:-46}" --width 16384 --layers 30 \
  --path resident --tc-tail 1
if [ "${BENCH:-0}" = 1 ]; then
  rows=${BENCH_ROWS:-'SpDNN/(fused|resident_tail|resident_tc5c_tail|graph_tc5c|cusparse)/'}
  step bench_sparse 300 "$BS" --spdnn "${SPDNN_BENCH:-16384:120;65536:120}" \
    --baseline "${SPDNN_BENCH:-16384:120;65536:120}" --spdnn-runs 5 --benchmark_filter="$rows" \
    --benchmark_out="$OUT/bench_sparse.json" --benchmark_out_format=json
fi
step_summary
for f in "$OUT"/infer_*.txt; do
  [ -f "$f" ] || continue
  row=$(grep -E '^ +[0-9]+ +[0-9]+ +(official|generated) ' "$f" | awk '{print $5, "ms", $11}')
  echo "$(basename "$f" .txt): $row"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
