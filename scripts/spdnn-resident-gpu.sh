#!/usr/bin/env bash
# On the GPU machine, one short call: the resident late layers (src/sparse/dnn_resident.cu).
# Builds the sparse targets, runs the [resident] tests (also the API test under memcheck), then
# spdnn_infer with the resident and graph paths side by side (the second must match the first's
# survivors and per-layer counts exactly), N = 1024 L = 120 / 480 / 1920, and N = 4096 L = 120 with
# the path forced below 1056 images (8 x 132 SMs; expected no faster than graph, the default rule
# runs graph there; forcing it with tens of thousands of images alive would run for minutes).
#
#   scripts/spdnn-resident-gpu.sh OUTDIR      (~1-2 min after the build; BUILD_DIR defaults to build-gpu)
set -uo pipefail
OUT=${1:?usage: spdnn-resident-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step data
scripts/fetch-spdnn-data.sh || echo "no spdnn data: the data tests will SKIP"
step build
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$B" -j "$(nproc)" --target test_sparse spdnn_infer bench_sparse; } >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
step "tests [resident]"
timeout 300 "$B/tests/test_sparse" "[resident]" --durations yes >"$OUT/test_resident.log" 2>&1
echo "exit $?"; grep -E "^(test cases|assertions|All tests)|FAILED|SKIPPED" "$OUT/test_resident.log" | tail -12
step "memcheck (resident layers, API)"
timeout 180 compute-sanitizer --tool memcheck --error-exitcode 99 "$B/tests/test_sparse" \
  "resident layers: bitwise the fma chain and the fused path, every slice size" >"$OUT/memcheck_resident.log" 2>&1
echo "exit $?"; grep -E "ERROR SUMMARY|^(test cases|assertions|All tests)" "$OUT/memcheck_resident.log" | tail -3
step "spdnn_infer N 1024"
timeout 240 "$B/examples/spdnn_infer" --width 1024 --layers 120,480,1920 --path resident,graph --validate yes \
  --csv "$OUT/spdnn_resident_1024.csv" 2>&1 | tee "$OUT/spdnn_resident_1024.txt"
step "spdnn_infer N 4096 (forced)"
timeout 120 "$B/examples/spdnn_infer" --width 4096 --layers 120 --path resident,graph --resident-below 1056 \
  --validate no --csv "$OUT/spdnn_resident_4096.csv" 2>&1 | tee "$OUT/spdnn_resident_4096.txt"
step done
