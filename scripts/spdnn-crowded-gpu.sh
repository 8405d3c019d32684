#!/usr/bin/env bash
# On the GPU machine (~3-5 min): the crowded SpDNN layers after the SASS-count cut of layer_tile_reuse
# (src/sparse/README.md, "Crowded layers: a SASS count"). Builds the sparse targets, runs the sparse
# tests, spdnn_infer (graph path: N = 1024 L = 120 / 480, N = 4096 L = 120), and Nsight Compute on
# layers 1..8 of the TIMED run (spdnn_infer --no-warmup: the timed run's layer kernels are then the
# process's first dnn_layer_compact_kernel launches; with the warm-up, the graph path first launches
# L = 120 of them on the 1200 distinct images, which is what the earlier profiles caught).
#
#   scripts/spdnn-crowded-gpu.sh OUTDIR      NCU=0 skips the profile, TESTS=0 the tests
#
# Baseline (main 9b019ed, same kernels but the old tile; bench/results/edd3b8e, ff50355): graph path
# N = 1024 L = 120 3.457 / 3.45 ms, L = 480 8.607 ms, N = 4096 L = 120 11.761 ms.
# Prediction (scripts/spdnn-crowded-model.py, IPC 2 as the old tile's implied rate): first 14 layers
# 1.86 -> 1.20 ms, so N = 1024 L = 120 ~2.8 ms (late layers unchanged) to ~2.6 ms.
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
timeout 240 "$SI" --width 1024 --layers 120,480 --validate yes --csv "$OUT/spdnn_1024.csv" \
  --active-csv "$OUT/spdnn_active_1024.csv" 2>&1 | tee "$OUT/spdnn_1024.txt"
timeout 120 "$SI" --width 4096 --layers 120 --validate yes --csv "$OUT/spdnn_4096.csv" \
  --active-csv "$OUT/spdnn_active_4096.csv" 2>&1 | tee "$OUT/spdnn_4096.txt"
# The same N = 1024 L = 120 run through the fused path (the same kernels launched one by one).
timeout 60 "$SI" --width 1024 --layers 120 --path fused --validate yes 2>&1 | tail -2 | tee "$OUT/spdnn_1024_fused.txt"
[ -f "$OUT/spdnn_active_1024.csv" ] &&
  python3 scripts/spdnn-crowded-model.py "$OUT/spdnn_active_1024.csv" --layers 120 | tee "$OUT/model_1024.txt"

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  step ncu layers 1-8 of the timed run
  # --no-warmup: launches 0..7 of dnn_layer_compact_kernel are layers 1..8 of the 60000-image run
  # (60000, 54900, 39300, 20750, 9750, 4900, 2800, 1550 images enter them). Without --no-warmup the
  # right skip is L (= 120): the warm-up's graph launches one kernel per layer.
  timeout 200 ncu --clock-control none --set full -k regex:dnn_layer_compact_kernel --launch-skip 0 --launch-count 8 \
    --export "$OUT/ncu_layers1-8" --force-overwrite \
    "$SI" --width 1024 --layers 120 --validate no --no-warmup >"$OUT/ncu_layers1-8.log" 2>&1
  echo "ncu exit $?"
  if [ -f "$OUT/ncu_layers1-8.ncu-rep" ]; then
    ncu --import "$OUT/ncu_layers1-8.ncu-rep" --page details >"$OUT/ncu_layers1-8.txt" 2>&1
    # Every collected metric of the 8 launches (layers 1, 3, 8 are rows 1, 3, 8): instructions
    # (smsp__inst_executed.sum, the per-opcode SASS counts), IPC, issue, stalls, memory.
    ncu --import "$OUT/ncu_layers1-8.ncu-rep" --page raw --csv >"$OUT/ncu_layers1-8_raw.csv" 2>&1
    grep -E "dnn_layer_compact|Duration|Executed Ipc Active|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Registers Per|L2 Cache Throughput|DRAM Throughput|Stall" \
      "$OUT/ncu_layers1-8.txt" | head -120 >"$OUT/ncu_summary.txt"
    head -60 "$OUT/ncu_summary.txt"
  else
    tail -20 "$OUT/ncu_layers1-8.log"
  fi
fi
step done
