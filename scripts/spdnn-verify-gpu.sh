#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, cold build included): the verifying run of a commit
# that changes the sparse-DNN path. OUTDIR/r.tgz holds every step's output (the tool returns at most 8 files).
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-verify-gpu.sh OUTDIR       (.git does not travel: name the commit)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-verify-gpu.sh $OUT/v; mv $OUT/v/r.tgz $OUT/; rm -rf $OUT/v
# (its data: carry data/spdnn/neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the two categories files).
#
# Steps by priority (the guard cuts the last ones; ctest gets what is left):
#   1. build everything; unpack the challenge data;
#   2. spdnn_infer, graph path (auto tile, default row order), exact against the CPU reference: N = 16384
#      L = 120,480 (csv, active csv) and N = 65536 L = 120;
#   3. bench_sparse N = 16384 L = 120 / 480 / 1920, fused against the cuSPARSE pipeline in the same process (json);
#   4. the whole ctest (-j8).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=575 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
export JHDNN_COMMIT=${JHDNN_COMMIT:-unknown}
build_step "$B" all
step spdnn_infer_16384 110 "$SI" --width 16384 --layers 120,480 --path graph --validate yes \
  --csv "$OUT/spdnn_infer.csv" --active-csv "$OUT/spdnn_active.csv"
step spdnn_infer_65536 60 "$SI" --width 65536 --layers 120 --path graph --validate yes --csv "$OUT/spdnn_infer_65536.csv"
NETS="16384:120,480,1920"
step bench_spdnn_16384 240 "$BS" --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out="$OUT/bench_sparse_spdnn_16384.json" --benchmark_out_format=json
ctest_step "$B"
step_summary
verify_report "$OUT/bench_spdnn_16384.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
