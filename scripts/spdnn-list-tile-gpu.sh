#!/usr/bin/env bash
# On the GPU machine (~6-8 min with a warm build dir): the list-blocked width-32 tile of the fused
# sparse-DNN layer (JHDNN_SPDNN_TILE=list, src/sparse/README.md "List-blocked tile") against the block
# tile (the default). Builds the sparse targets; runs the tests (test_sparse under the default tile --
# its reuse-tile case loops over single, block and list itself -- and again under list, as ctest
# spdnn_tile_list does); compute-sanitizer memcheck / racecheck / synccheck of a small list-mode run;
# spdnn_infer A/B (graph and resident paths, N = 1024 and 4096, L = 120, validated); ncu per-layer
# times of the first 40 layers (both tiles) and the full set of layer 1 at N = 1024 (list).
#
#   scripts/spdnn-list-tile-gpu.sh OUTDIR      NCU=0 skips the profiles, TESTS=0 the tests, SAN=0 the sanitizers
#
# Every step has its own timeout and the script cuts steps past ~540 s (a 600 s device call): each
# step's exit status and the skipped ones are in OUTDIR/summary.txt.
# Baseline (block, H200 at 3f71f09, bench/results/3f71f09): graph N = 1024 L = 120 2.64 ms, N = 4096
# 7.98 ms; resident N = 1024 2.24 ms; layer 1 (ncu) 335 us, 159.8 M instructions, IPC 1.89.
# Prediction (not measured; README): layer 1 175-240 us; layers 1-8 0.77-0.92 ms (block 1.24); graph
# N = 1024 L = 120 2.0-2.35 ms, resident 1.8-1.95 ms, N = 4096 graph 6.4-7.1 ms.
set -uo pipefail
OUT=${1:?usage: spdnn-list-tile-gpu.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
T=$B/tests
source scripts/lib/guarded-step.sh  # step NAME TIMEOUT CMD..., step_summary; BUDGET_S (540)

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
build_step "$B" test_sparse test_sparse_cpu test_spdnn_reuse_tile test_config spdnn_infer
# Registers / stack / shared memory of the layer kernels as built (list: dnn_layer_compact_kernel<true, true>,
# expected REG:128, STACK:24, SHARED:11280 = 10256 static + 1 KB reserved; dynamic 102400 B per block).
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 compact_kernel | tee "$OUT/resource-usage.txt" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

if [ "${TESTS:-1}" = 1 ]; then
  step test_spdnn_reuse_tile 60 "$T/test_spdnn_reuse_tile"
  step test_config 30 "$T/test_config"
  step test_sparse 150 "$T/test_sparse" --durations yes
  JHDNN_SPDNN_TILE=list step test_sparse_list 150 "$T/test_sparse" --durations yes
fi

if [ "${SAN:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  # A small list-mode run through the fused kernel (generated N = 1024, 2000 images, 4 layers: layer 1
  # with 16-byte copies, later layers gathered): out-of-bounds cp.async sources, shared-memory races
  # between the stages and the __syncwarp'ed buffers, barrier misuse.
  for tool in memcheck racecheck synccheck; do
    JHDNN_SPDNN_TILE=list step "san_$tool" 120 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$SI" --width 1024 --layers 4 --images 2000 --network generated --path graph --validate no --no-warmup
  done
fi

# A/B: graph and resident paths (the resident path runs its first ~10 layers through the fused kernel),
# validated (official truth at N = 1024 L = 120, the CPU reference at 4096).
for tile in block list; do
  JHDNN_SPDNN_TILE=$tile step "infer_1024_$tile" 90 "$SI" --width 1024 --layers 120 --path graph,resident \
    --validate yes --csv "$OUT/infer_1024_$tile.csv"
  JHDNN_SPDNN_TILE=$tile step "infer_4096_$tile" 90 "$SI" --width 4096 --layers 120 --path graph \
    --validate yes --csv "$OUT/infer_4096_$tile.csv"
done

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  # --no-warmup: launches 0.. of dnn_layer_compact_kernel are layers 1.. of the 60000-image run.
  for tile in block list; do
    JHDNN_SPDNN_TILE=$tile step "ncut_1024_$tile" 60 ncu --clock-control none \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active \
      -k regex:dnn_layer_compact_kernel --launch-skip 0 --launch-count 40 --csv --print-units base \
      "$SI" --width 1024 --layers 120 --validate no --no-warmup
  done
  R="$OUT/ncuf_1024_list"
  JHDNN_SPDNN_TILE=list step ncuf_1024_list 90 ncu --clock-control none --set full -k regex:dnn_layer_compact_kernel \
    --launch-skip 0 --launch-count 1 --export "$R" --force-overwrite \
    "$SI" --width 1024 --layers 120 --validate no --no-warmup
  [ -f "$R.ncu-rep" ] && ncu --import "$R.ncu-rep" --page details >"$R.details.txt" 2>&1 && rm -f "$R.ncu-rep"
fi
step_summary
