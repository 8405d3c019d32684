#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool: the tensor-core head past N = 1024 as a thread-block cluster
# (session 52; src/sparse/dnn_resident_tc.cu, one bf16 piece). Its tests (test_sparse_tc: the N <= 1024 cases and the
# cluster's at N = 2048 / 4096 against the fp32 chain, the refusals, the driver's categories at N = 1024 and 4096;
# test_sparse_tc_tables), then spdnn_infer on the default resident path and with --tc-head K --tc-convert 1 at each
# width of WIDTHS (default "4096 1024": the cluster kernel, then the single-CTA one), depth of DEPTHS (default 120) and
# K of TC_HEADS (default 5), REPS times (default 2) in turn (TC_RUNS, "name=spdnn_infer arguments;...", replaces the
# --tc-head K --tc-convert 1 runs where given, e.g. "tc5c=--tc-head 5 --tc-convert 1;tc5_3c=--tc-head 5 --tc-convert 1
# --tc-second 3"); ncu of the cluster kernel's first launch (time,
# instructions, stall reasons; NCU=0 skips it; NCU_SRC=1 adds its per-instruction counters as CSV); BENCH=1:
# bench_sparse at SPDNN_BENCH (default "4096:120,480") with the pipeline in one process; CTEST=1: everything built
# and the whole ctest last with the time left (then not the two tests first); TESTS=0: not the two tests either.
# TIMELINE=1: per width, for the default path and each TC_RUNS entry, ncu's duration and warp instructions of each of
# the first KERNELS (default 40) launches of one run without warm-up, caches not flushed (the
# untimed preparation's launches come first; CSV in timeline_N_name.txt). NCU_STREAM=1: ncu of the streamed kernel's
# first launch (session 56). BENCH_ROWS: bench_sparse's filter in place of the default rows.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-tc-cluster-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS \
  JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-0}" = 1 ]; then build_step "$B" all
else build_step "$B" spdnn_infer test_sparse_tc test_sparse_tc_tables bench_sparse; fi
if [ "${CTEST:-0}" != 1 ] && [ "${TESTS:-1}" = 1 ]; then  # (with CTEST=1 the whole ctest runs them, last)
  step tests_tc_tables 60 "$T/test_sparse_tc_tables"
  step tests_tc 240 "$T/test_sparse_tc"
fi
# (TC_HEADS: the head's layers K, default "5"; DEPTHS: the networks' layers, default "120")
for rep in $(seq "${REPS:-2}"); do
  for n in ${WIDTHS:-4096 1024}; do
    for L in ${DEPTHS:-120}; do
      step "infer_${n}_${L}_default_$rep" 60 "$SI" --width "$n" --layers "$L" --path resident
      if [ -n "${TC_RUNS:-}" ]; then
        IFS=';' read -ra runs <<< "$TC_RUNS"
        for r in "${runs[@]}"; do
          # shellcheck disable=SC2086  # the run's arguments, split
          step "infer_${n}_${L}_${r%%=*}_$rep" 60 "$SI" --width "$n" --layers "$L" --path resident ${r#*=}
        done
      else
        for k in ${TC_HEADS:-5}; do
          step "infer_${n}_${L}_tc${k}c_$rep" 60 "$SI" --width "$n" --layers "$L" --path resident --tc-head "$k" \
            --tc-convert 1
        done
      fi
    done
  done
done
if [ "${TIMELINE:-0}" = 1 ]; then
  for n in ${WIDTHS:-4096 1024}; do
    IFS=';' read -ra runs <<< "default=;${TC_RUNS:-tc5c=--tc-head 5 --tc-convert 1}"
    for r in "${runs[@]}"; do
      # shellcheck disable=SC2086  # the run's arguments, split
      step "timeline_${n}_${r%%=*}" 120 ncu --clock-control none --cache-control none --csv -c "${KERNELS:-40}" \
        --metrics gpu__time_duration.sum,smsp__inst_executed.sum "$SI" --width "$n" --layers "${DEPTHS:-120}" \
        --path resident ${r#*=} --validate no --no-warmup
    done
  done
fi
# NCU_SRC=1: the cluster kernel's per-instruction counters (SourceCounters: executed instructions and stall samples per
# SASS line) as CSV (ncu_src_4096.csv)
if [ "${NCU_SRC:-0}" = 1 ]; then
  step ncu_src_run_4096 150 ncu --clock-control none --kernel-name regex:resident_tc -c 1 --section SourceCounters \
    --section WarpStateStats --section InstructionStats --import-source no -f -o "$OUT/ncu_src_4096" \
    "$SI" --width 4096 --layers 6 --path resident --tc-head 5 --tc-convert 1 --validate no
  step ncu_src_4096 60 ncu -i "$OUT/ncu_src_4096.ncu-rep" --page source --csv --print-source sass
  rm -f "$OUT/ncu_src_4096.ncu-rep"
fi
if [ "${NCU:-1}" = 1 ]; then
  step ncu_tc5c_4096 120 ncu --clock-control none --kernel-name regex:resident_tc -c 1 --section SpeedOfLight \
    --section Occupancy --metrics "smsp__inst_executed.sum,gpu__time_duration.sum$NCU_STALLS" \
    "$SI" --width 4096 --layers 6 --path resident --tc-head 5 --tc-convert 1 --validate no
fi
# NCU_STREAM=1: the streamed kernel's first launch (its second: the first is the untimed table build; the resident call of --tc-tail 1 after the head, N = 4096 L = 120)
if [ "${NCU_STREAM:-0}" = 1 ]; then
  step ncu_stream_4096 120 ncu --clock-control none --kernel-name regex:resident_tc_stream -s 1 -c 1 --section SpeedOfLight \
    --section Occupancy --section MemoryWorkloadAnalysis \
    --metrics "smsp__inst_executed.sum,gpu__time_duration.sum$NCU_STALLS" \
    "$SI" --width 4096 --layers 120 --path resident --tc-head 5 --tc-convert 1 --tc-tail 1 --validate no
fi
if [ "${BENCH:-0}" = 1 ]; then  # (fused: the graph path, the exact reference of graph_tc5c at N = 16384)
  rows='SpDNN/(fused|resident|resident_tc5|resident_tc5c|resident_tc5_3c|resident_tc5c_tail|resident_tail|graph_tc5c|'
  rows+='cusparse)/'
  rows=${BENCH_ROWS:-$rows}
  step bench_sparse 300 "$BS" --spdnn "${SPDNN_BENCH:-4096:120,480}" --baseline "${SPDNN_BENCH:-4096:120,480}" \
    --spdnn-runs 5 --benchmark_filter="$rows" --benchmark_out="$OUT/bench_sparse.json" --benchmark_out_format=json
fi
[ "${CTEST:-0}" = 1 ] && ctest_step "$B"
step_summary
grep -hE "test cases|assertions|All tests" "$OUT"/tests_*.txt 2>/dev/null
[ -f "$OUT/ctest.txt" ] && grep -E "tests passed|tests failed|\(Failed\)|Timeout" "$OUT/ctest.txt"
for f in "$OUT"/infer_*.txt; do
  row=$(grep -E '^ +[0-9]+ +[0-9]+ +(official|generated) ' "$f" | awk '{print $5, "ms", $11, $12, $13}')
  api=$(grep -o "API host time [0-9.]* ms" "$f" | head -1)
  echo "$(basename "$f" .txt): $row; $api"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
