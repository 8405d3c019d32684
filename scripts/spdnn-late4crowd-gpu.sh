#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, cold builds included): the verifying run of session
# 25's late4crowd (auto's tile up to 4096 rows: late4's items in the crowded layers, cta2w's in the late ones)
# against the tree before it (BASE_DIR, default out/base: `git archive <base> CMakeLists.txt cmake include src
# tools tests/common examples | tar x -C out/base`, carried).
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-late4crowd-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-late4crowd-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/; rm -rf $OUT/c
# (carry out/base and data/spdnn's neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the categories files).
#
# Steps by priority (the guard cuts the last ones; ctest gets what is left):
#   1. the A/B, N = 1024 / 4096, L = 120 / 480, on the resident path (the default there: only its crowded head
#      runs the tile) and on the graph path: base auto (cta2w) / new auto (late4crowd) / new late4all, in turn,
#      twice (scripts/spdnn-late4all-gpu.sh, its own build folders build-ab and build-base);
#   2. build everything in BUILD_DIR (default build-gpu);
#   3. spdnn_infer, default path (resident), exact: the official N = 1024 L = 120 network against its categories,
#      generated N = 4096 L = 120 / 480 against the CPU reference (csv, active csv);
#   4. bench_sparse N = 1024 / 4096 L = 120 / 480 / 1920, resident against the cuSPARSE pipeline in one process;
#   5. the whole ctest (-j8).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=580 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
export JHDNN_COMMIT=${JHDNN_COMMIT:-unknown}
AB=(env BUILD_DIR=build-ab BASE_DIR="${BASE_DIR:-out/base}" EXACT=0 NCU=0 SPECS="1024:120,480 4096:120,480")
for p in resident graph; do
  step "ab_$p" 150 "${AB[@]}" BUDGET_S=140 SPDNN_PATH=$p bash scripts/spdnn-late4all-gpu.sh "$OUT/ab_$p"
  rm -f "$OUT/ab_$p/r.tgz"
done
build_step "$B" all
step spdnn_infer_1024 30 "$SI" --width 1024 --layers 120 --validate yes --csv "$OUT/spdnn_infer_1024.csv" \
  --active-csv "$OUT/spdnn_active_1024.csv"
step spdnn_infer_4096 60 "$SI" --width 4096 --layers 120,480 --validate yes --csv "$OUT/spdnn_infer_4096.csv" \
  --active-csv "$OUT/spdnn_active_4096.csv"
NETS="1024:120,480,1920;4096:120,480,1920"
step bench_spdnn 90 "$BS" --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out="$OUT/bench_sparse_spdnn.json" --benchmark_out_format=json
ctest_step "$B"
step_summary
for f in "$OUT"/ab_*/ab_*.txt; do
  echo "$(basename "$(dirname "$f")")/$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $1, $2, $5}' | tr '\n' ' ')"
done
verify_report "$OUT/bench_spdnn.txt"
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
