#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes, cold build included): the verifying run of a commit
# that changes the resident kernels at N = WIDTH (default 1024). OUTDIR/r.tgz holds every step's output.
#
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-verify-resident-gpu.sh $OUT/v; mv $OUT/v/r.tgz $OUT/; rm -rf $OUT/v
# (carry data/spdnn/neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the two categories files).
#
# Steps by priority (the guard cuts the last ones):
#   1. build everything; unpack the challenge data;
#   2. spdnn_infer, resident path, N = WIDTH L = 120,480,1920, exact (the official truth at N = 1024 L = 120, else the
#      CPU reference), with the CSVs scripts/sparse-report.py reads;
#   3. bench_sparse N = WIDTH L = 120 / 480 / 1920, resident against the cuSPARSE pipeline in the same process (json);
#   4. compute-sanitizer racecheck of the default resident kernel through spdnn_infer (3 layers, 1000 images), then of
#      the test_sparse cases in RACECHECK_CASES ('|' between specs);
#   5. the whole ctest (-j8) with the time left.
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=575 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
W=${WIDTH:-1024}
build_step "$B" all
step "spdnn_infer_$W" 90 "$SI" --width "$W" --layers 120,480,1920 --path resident --validate yes \
  --csv "$OUT/spdnn_infer_$W.csv" --active-csv "$OUT/spdnn_active_$W.csv"
NETS="$W:120,480,1920"
step "bench_spdnn_$W" 150 "$BS" --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out="$OUT/bench_sparse_spdnn_$W.json" --benchmark_out_format=json
step racecheck_infer 120 compute-sanitizer --tool racecheck --error-exitcode 99 "$SI" --path resident --width "$W" \
  --layers 3 --images 1000 --validate yes --no-warmup
[ -n "${RACECHECK_CASES:-}" ] && racecheck_steps "$RACECHECK_CASES"
ctest_step "$B"
step_summary
verify_report "$OUT/bench_spdnn_$W.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
