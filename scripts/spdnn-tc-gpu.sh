#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4-5 minutes with a cold build): the resident call on tensor cores
# (session 50; jhdnnSetSparseMatrixMathType, src/sparse/dnn_resident_tc.cu). Its tests (test_sparse_tc: the bound
# against the fp32 chain, the refusals, the official network's categories through the driver; test_sparse_tc_tables),
# then spdnn_infer at N = 1024 L = 120 (the official network, validated against its truth) on the default resident
# path and with --tc-head K for each K of TC_HEADS (default "3 5"), three bf16 pieces and --tc-convert 1, REPS times
# (default 2) in turn; then tools/spdnn/spdnn_tchead_probe's variants PROBE_VARIANTS (default "1 3 4 5") at K = 4
# and 5, 3 pieces and 1 (PROBE_VARIANTS="" skips them; ABLATE and NCU_PROBE, below, variant 4's parts left out and
# the probe's per-instruction counters); with CTEST=1
# everything is built and the whole ctest runs last with the time left (BUDGET_S, default 585).
#   JHDNN_COMMIT=<sha> CTEST=1 bash scripts/spdnn-tc-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=585 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS \
  JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
if [ "${CTEST:-0}" = 1 ]; then build_step "$B" all
else build_step "$B" spdnn_infer test_sparse_tc test_sparse_tc_tables spdnn_tchead_probe bench_sparse; fi
step tests_tc 150 "$T/test_sparse_tc"
step tests_tc_tables 60 "$T/test_sparse_tc_tables"
for rep in $(seq "${REPS:-2}"); do
  step "infer_default_$rep" 60 "$SI" --width 1024 --layers 120 --path resident
  for k in ${TC_HEADS:-3 5}; do
    step "infer_tc${k}_$rep" 60 "$SI" --width 1024 --layers 120 --path resident --tc-head "$k"
    step "infer_tc${k}_convert_$rep" 60 "$SI" --width 1024 --layers 120 --path resident --tc-head "$k" --tc-convert 1
    # NOCOMPACT=1: also the hand-over of session 50 (the survivors in their own columns; --tc-compact 0)
    [ "${NOCOMPACT:-0}" = 1 ] && step "infer_tc${k}_convert_nocompact_$rep" 60 "$SI" --width 1024 --layers 120 \
      --path resident --tc-head "$k" --tc-convert 1 --tc-compact 0
  done
done
P=$B/tools/spdnn/spdnn_tchead_probe
for k in 4 5; do
  for v in ${PROBE_VARIANTS-1 3 4 5}; do
    for pc in 3 1; do step "t_v${v}_k${k}_p$pc" 60 "$P" --variant "$v" --warps 16 --layers "$k" --pieces "$pc"; done
  done
done
for v in ${PROBE_VARIANTS-1 3 4 5}; do
  [ "$v" -ge 4 ] &&
    step "t_v${v}_k2_random" 60 "$P" --variant "$v" --warps 16 --layers 2 --images 2400 --random 1 --reps 3
done
# ABLATE="1 2 4 7": variant 4 at K = 4, 3 pieces, with those parts of the library's work left out (--ablate bits;
# the lines print DEFECT by design, the times say what each part costs)
for ab in ${ABLATE:-}; do
  step "t_v4_k4_p3_ablate$ab" 60 "$P" --variant 4 --warps 16 --layers 4 --pieces 3 --ablate "$ab"
done
# NCU_PROBE="4 3": ncu's per-instruction counters (SourceCounters: executed instructions and stall samples per SASS
# line) of those probe variants at K = 4, 3 pieces, printed as CSV (ncu_src_v<V>.csv) beside the report
for v in ${NCU_PROBE:-}; do
  step "ncu_probe_v$v" 120 ncu --clock-control none --kernel-name regex:tchead -c 1 --section SourceCounters \
    --section WarpStateStats --section InstructionStats --import-source no -f -o "$OUT/ncu_probe_v$v" \
    "$P" --variant "$v" --warps 16 --layers 4 --pieces 3
  step "ncu_src_v$v" 60 ncu -i "$OUT/ncu_probe_v$v.ncu-rep" --page source --csv --print-source sass
  step "ncu_details_v$v" 60 ncu -i "$OUT/ncu_probe_v$v.ncu-rep" --page details
done
# NCU_LAYERS=1: every kernel's time in the first 40 launches of spdnn_infer at N = 1024 L = 120 (the untimed first
# run's layers, one by one), on the default path and with --tc-head 5 --tc-convert 1: where the end-to-end
# difference sits, layer by layer (ncu_layers_*.csv)
if [ "${NCU_LAYERS:-0}" = 1 ]; then
  for args in "default" "tc5 --tc-head 5 --tc-convert 1"; do
    name=${args%% *}
    # shellcheck disable=SC2086  # the options after the name are a list
    step "ncu_layers_$name" 120 ncu --clock-control none -c 40 --metrics gpu__time_duration.sum --csv \
      "$SI" --width 1024 --layers 120 --path resident --validate no ${args#"$name"}
  done
fi
# BENCH=1: bench_sparse at N = 1024 L = 120 (SPDNN_BENCH, "1024:120" by default), 5 timed runs each: the graph
# path, the exact resident path, the tensor-core head (three pieces, one) and the cuSPARSE pipeline in ONE process
# (bench_sparse.json; scripts/sparse-report.py --bench turns it into tables)
if [ "${BENCH:-0}" = 1 ]; then
  step bench_sparse 150 "$BS" --spdnn "${SPDNN_BENCH:-1024:120}" --baseline "${SPDNN_BENCH:-1024:120}" \
    --spdnn-runs 5 --benchmark_filter='SpDNN/(fused|resident|resident_tc5|resident_tc5c|cusparse)/' \
    --benchmark_out="$OUT/bench_sparse.json" --benchmark_out_format=json
fi
# ncu of the library's kernel (its first launch: the untimed run that builds the tables), K = 5, both piece counts
if [ "${NCU:-1}" = 1 ]; then
  for cv in 0 1; do
    step "ncu_tc5_convert$cv" 90 ncu --clock-control none --kernel-name regex:resident_tc -c 1 --section SpeedOfLight \
      --section Occupancy --metrics "smsp__inst_executed.sum,gpu__time_duration.sum$NCU_STALLS" \
      "$SI" --width 1024 --layers 6 --path resident --tc-head 5 --tc-convert "$cv" --validate no
  done
fi
[ "${CTEST:-0}" = 1 ] && ctest_step "$B"
step_summary
grep -hE "test cases|assertions|All tests" "$OUT"/tests_*.txt
[ -f "$OUT/ctest.txt" ] && grep -E "tests passed|tests failed|\(Failed\)|Timeout" "$OUT/ctest.txt"
grep -hE '^ +1024 +120 ' "$OUT"/infer_*.txt | awk '{print}' > "$OUT/infer_rows.txt"
for f in "$OUT"/infer_*_[0-9].txt; do
  echo "$(basename "$f" .txt): $(grep -E '^ +1024 +120 ' "$f" | awk '{print $5, "ms", $11, $12, $13}')"
done
grep -hE "^variant" "$OUT"/t_*.txt |
  awk '{for(i=1;i<=NF;i++){if($i=="head_us")h=$(i+1)}; print $1,$2,"K",$6,"pieces",$14,"head_us",h,$NF,
        ($(NF-1)=="variant1_equal"?"v1eq":"")}'
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
