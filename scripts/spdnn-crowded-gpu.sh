#!/usr/bin/env bash
# On the GPU machine (~4-6 min): the crowded SpDNN layers after the SASS-count cut of layer_tile_reuse
# (src/sparse/README.md, "Crowded layers: a SASS count"), both width-32 tiles (JHDNN_SPDNN_TILE =
# single, the default, and block). Builds the sparse targets, runs the sparse tests (test_sparse runs
# the reuse-tile case in both modes), spdnn_infer (graph path: N = 1024 L = 120 / 480, N = 4096
# L = 120, each tile), and Nsight Compute on layers 1..8 of the TIMED run, each tile (spdnn_infer
# --no-warmup: the timed run's layer kernels are then the process's first dnn_layer_compact_kernel
# launches; with the warm-up, the graph path first launches L = 120 of them on the 1200 distinct
# images, which is what the earlier profiles caught).
#
#   scripts/spdnn-crowded-gpu.sh OUTDIR      NCU=0 skips the profiles, TESTS=0 the tests
#
# Baseline (main 9b019ed, the old tile; bench/results/edd3b8e, ff50355): graph path N = 1024 L = 120
# 3.457 / 3.45 ms, L = 480 8.607 ms, N = 4096 L = 120 11.761 ms.
# Prediction (scripts/spdnn-crowded-model.py at IPC 2, the old tile's implied rate; not measured):
# single: first 14 layers 1.85 -> 1.20 ms, N = 1024 L = 120 2.25-2.9 ms, N = 4096 7.5-10 ms; block:
# 13% fewer instructions than single in the crowded layers (a few % more in the late ones) and 8
# independent chains per warp, so a higher IPC if the chains' latency is what holds it at ~2.
set -uo pipefail
OUT=${1:?usage: spdnn-crowded-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step data
scripts/fetch-spdnn-data.sh || echo "no spdnn data: the official network and the data tests are missing"

step build
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$B" -j "$(nproc)" --target test_sparse test_sparse_cpu test_spdnn_reuse_tile spdnn_infer; } \
     >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"; echo "BUILD FAILED"; exit 1
fi
# Registers / stack of the layer kernels as built here (the README's SASS counts are from this object).
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 compact_kernel | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+" | tee "$OUT/resource-usage.txt"

if [ "${TESTS:-1}" = 1 ]; then
  step tests
  for t in test_spdnn_reuse_tile test_sparse_cpu test_sparse; do
    timeout 300 "$B/tests/$t" --durations yes >"$OUT/$t.log" 2>&1
    echo "$t exit $?"; grep -E "^(test cases|assertions|All tests)|FAILED" "$OUT/$t.log" | tail -6
  done
fi

step spdnn_infer
# Graph path (the default). Validation: official truth at N = 1024 L = 120, the CPU reference elsewhere.
for tile in single block; do
  export JHDNN_SPDNN_TILE=$tile
  timeout 240 "$SI" --width 1024 --layers 120,480 --validate yes --csv "$OUT/spdnn_1024_$tile.csv" \
    --active-csv "$OUT/spdnn_active_1024.csv" 2>&1 | tee "$OUT/spdnn_1024_$tile.txt"
  timeout 120 "$SI" --width 4096 --layers 120 --validate yes --csv "$OUT/spdnn_4096_$tile.csv" \
    2>&1 | tee "$OUT/spdnn_4096_$tile.txt"
done
unset JHDNN_SPDNN_TILE
[ -f "$OUT/spdnn_active_1024.csv" ] && for c in after block; do
  python3 scripts/spdnn-crowded-model.py "$OUT/spdnn_active_1024.csv" --layers 120 --costs $c | tee "$OUT/model_1024_$c.txt"
done

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  for tile in single block; do
    step "ncu layers 1-8 of the timed run, JHDNN_SPDNN_TILE=$tile"
    # --no-warmup: launches 0..7 of dnn_layer_compact_kernel are layers 1..8 of the 60000-image run
    # (60000, 54900, 39300, 20750, 9750, 4900, 2800, 1550 images enter them). Without --no-warmup the
    # right skip is L (= 120): the warm-up's graph launches one kernel per layer.
    R="$OUT/ncu_$tile"
    JHDNN_SPDNN_TILE=$tile timeout 200 ncu --clock-control none --set full -k regex:dnn_layer_compact_kernel \
      --launch-skip 0 --launch-count 8 --export "$R" --force-overwrite \
      "$SI" --width 1024 --layers 120 --validate no --no-warmup >"$R.log" 2>&1
    echo "ncu exit $?"
    if [ -f "$R.ncu-rep" ]; then
      ncu --import "$R.ncu-rep" --page details >"$R.txt" 2>&1
      # Every collected metric of the 8 launches (layers 1, 3, 8 are rows 1, 3, 8): instructions
      # (smsp__inst_executed.sum; FFMA: smsp__sass_thread_inst_executed_op_ffma_pred_on.sum), IPC,
      # issue, stalls, memory.
      ncu --import "$R.ncu-rep" --page raw --csv >"$R.csv" 2>&1
      grep -E "dnn_layer_compact|Duration|Executed Ipc Active|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Registers Per|L2 Cache Throughput|DRAM Throughput" \
        "$R.txt" | head -120 >"${R}_summary.txt"
      head -40 "${R}_summary.txt"
    else
      tail -20 "$R.log"
    fi
  done
fi
step done
