#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes, cold build included): the verifying run of a commit
# that changes the resident kernels at the widths WIDTHS (default 1024). OUTDIR/r.tgz holds every step's output.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-verify-resident-gpu.sh $OUT/v; mv $OUT/v/r.tgz $OUT/; rm -rf $OUT/v
# (carry data/spdnn/neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the two categories files).
#
# Steps by priority (the guard cuts the last ones):
#   1. build everything; unpack the challenge data;
#   2. spdnn_infer, resident path, each N of WIDTHS at L = 120,480,1920, exact (the official truth at N = 1024 L = 120, else the
#      CPU reference), with the CSVs scripts/sparse-report.py reads;
#   3. bench_sparse, every width of WIDTHS at L = 120 / 480 / 1920 in one process, resident against the cuSPARSE
#      pipeline (json);
#   4. compute-sanitizer racecheck of the default resident kernel through spdnn_infer (each width, 3 layers, 1000
#      images), then of
#      the test_sparse cases in RACECHECK_CASES ('|' between specs);
#   5. the whole ctest (-j8) with the time left.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=575 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
WIDTHS=${WIDTHS:-1024}
build_step "$B" all
NETS=""
for w in $WIDTHS; do
  step "spdnn_infer_$w" 90 "$SI" --width "$w" --layers 120,480,1920 --path resident --validate yes \
    --csv "$OUT/spdnn_infer_$w.csv" --active-csv "$OUT/spdnn_active_$w.csv"
  NETS="$NETS${NETS:+;}$w:120,480,1920"
done
W=${WIDTHS%% *}
step "bench_spdnn_$W" 240 "$BS" --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out="$OUT/bench_sparse_spdnn_$W.json" --benchmark_out_format=json
for w in $WIDTHS; do
  step "racecheck_infer_$w" 120 compute-sanitizer --tool racecheck --error-exitcode 99 "$SI" --path resident \
    --width "$w" --layers 3 --images 1000 --validate yes --no-warmup
done
[ -n "${RACECHECK_CASES:-}" ] && racecheck_steps "$RACECHECK_CASES"
ctest_step "$B"
step_summary
verify_report "$OUT/bench_spdnn_$W.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
