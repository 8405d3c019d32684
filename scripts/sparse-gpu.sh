#!/usr/bin/env bash
# On the GPU machine: the sparse path end to end. Unpacks the challenge data (carried as
# data/spdnn/{neuron1024.tar.gz, sparse-images-1024-first1200.tsv, neuron1024-l120-categories-first1200.tsv}),
# builds the sparse targets, runs the sparse tests (the fused-layer test also under memcheck),
# spdnn_infer (validation, CSV) and bench_sparse (JSON), and the report when python3 + matplotlib exist.
#
#   scripts/sparse-gpu.sh OUTDIR        BENCH=0 skips the benchmarks, MEMCHECK=0 the memcheck step,
#                                       TESTS=0 the tests and memcheck, INFER=0 spdnn_infer
#   BENCH_ARGS="--spdnn 1024:120 --baseline 1024:120"   narrows bench_sparse (see bench/bench_sparse.cpp)
set -uo pipefail
OUT=${1:?usage: sparse-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step data
scripts/fetch-spdnn-data.sh || { echo "no spdnn data: the data tests will SKIP"; }

step build
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$B" -j "$(nproc)" --target test_sparse test_sparse_cpu spdnn_infer bench_sparse; } >"$OUT/sparse-build.log" 2>&1; then
  tail -40 "$OUT/sparse-build.log"; echo "BUILD FAILED"; exit 1
fi

if [ "${TESTS:-1}" = 1 ]; then
step tests
for t in test_sparse_cpu test_sparse; do
  timeout 600 "$B/tests/$t" --durations yes >"$OUT/$t.log" 2>&1
  echo "$t exit $? (4 = a case skipped)"; grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED|skipped" "$OUT/$t.log" | tail -8
done

fi

if [ "${TESTS:-1}" = 1 ] && [ "${MEMCHECK:-1}" = 1 ]; then
  step memcheck
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/test_sparse" \
    "SpMM*,dense to CSR*,fused layer*,sparse calls*" >"$OUT/sparse-memcheck.log" 2>&1
  echo "memcheck exit $?; $(grep -E 'ERROR SUMMARY' "$OUT/sparse-memcheck.log" | tail -1)"
fi

if [ "${INFER:-1}" = 1 ]; then
  step spdnn_infer
  timeout 300 "$B/examples/spdnn_infer" --width 1024,4096,16384,65536 --layers 120 --validate yes \
    --csv "$OUT/spdnn_infer.csv" --active-csv "$OUT/spdnn_active.csv" 2>&1 | tee "$OUT/spdnn_infer.log"
fi

if [ "${BENCH:-1}" = 1 ]; then
  step bench_sparse
  timeout 600 "$B/bench/bench_sparse" ${BENCH_ARGS:-} --benchmark_out="$OUT/bench_sparse.json" \
    --benchmark_out_format=json 2>&1 | tee "$OUT/bench_sparse.log"
fi

if [ -f "$OUT/bench_sparse.json" ] && python3 -c "import matplotlib" 2>/dev/null; then
  step report
  python3 scripts/sparse-report.py --bench "$OUT/bench_sparse.json" --infer "$OUT/spdnn_infer.csv" \
    --active "$OUT/spdnn_active.csv" --out "$OUT/results"
else
  echo "report: run scripts/sparse-report.py here or on a machine with matplotlib (see its --help)"
fi
step done
