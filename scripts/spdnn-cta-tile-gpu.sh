#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 540 s; its limit is 600 s a call): the CTA-level GEMM
# tile of the per-layer fused sparse-DNN kernel (JHDNN_SPDNN_TILE=cta, src/sparse/README.md "CTA tile")
# against the block tile (the default).
#
#   scripts/spdnn-cta-tile-gpu.sh OUTDIR      TESTS=0 skips the tests, SAN=0 the sanitizers, NCU=0 the profiles
#
# Builds the sparse targets in BUILD_DIR (default build-gpu, git-ignored) and unpacks the challenge data, then:
#   1. resource usage of the layer kernels (cta: dnn_layer_cta_kernel, expected REG:80 STACK:48 SHARED:1040,
#      + 75264 B dynamic: 3 blocks per SM);
#   2. tests: test_spdnn_cta_tile (CPU emulation), test_config, and all of test_sparse under
#      JHDNN_SPDNN_TILE=cta (= ctest spdnn_tile_cta; its reuse-tile case also loops over single, block,
#      list and cta itself);
#   3. A/B block vs cta: spdnn_infer N = 1024 L = 120 / 480 and N = 4096 L = 120 / 480, graph and resident
#      paths, exact (--validate yes);
#   4. ncu (--no-warmup: launches 0.. of dnn_layer_compact_kernel / dnn_layer_cta_kernel are layers 1..):
#      time, instructions, IPC, warps of the first 12 layers at N = 1024 (block and cta) and N = 4096 (cta);
#   5. compute-sanitizer memcheck and racecheck of the reuse-tile case under cta only (JHDNN_TEST_SPDNN_TILE=cta:
#      without it the case runs single, block and list first and the timeout cuts it before cta; crowded cases: 34000
#      images, 128-image CTA items; stages, named barriers, the aliased block-step buffers; racecheck may
#      be cut by its 75 s timeout: then its file shows how far it got);
#   6. the full ncu set of layers 1-4 at N = 1024 under cta.
# Steps are ordered by priority (correctness, then times), so the guard cuts the least important ones.
# Time guard: a step starts only if 15 s of the BUDGET_S (default 540) s are left, and its timeout is cut to what is left, so
# the call ends by itself with OUTDIR/summary.txt written (steps skipped or cut are listed there).
# Baseline (block, H200, bench/results/3f71f09 and adbf1f5): layers 1-4 at N = 1024 335 / 337 / 244 / 145 us;
# graph N = 1024 L = 120 2.65 ms, resident 2.19 ms; N = 4096 graph L = 120 7.96 ms.
# Prediction (not measured; README "CTA tile"): layers 1-4 at N = 1024 ~217 / 240 / 169 / 106 us (0.57-0.89 ms;
# block 1.06 ms); graph N = 1024 L = 120 ~2.3 ms, resident ~1.85 ms; N = 4096 graph ~6.7 ms (layer 1 ~0.84 ms, block 1.25).
set -uo pipefail
OUT=${1:-}
if [ -z "$OUT" ]; then
  echo "usage: spdnn-cta-tile-gpu.sh OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
export PATH=$PATH:/usr/local/cuda/bin
export JHDNN_REQUIRE_GPU=1
unset JHDNN_SPDNN_TILE
B=${BUILD_DIR:-build-gpu}
SI=$B/examples/spdnn_infer
T=$B/tests
t0=$(date +%s)
declare -a res
# step NAME TIMEOUT CMD...: runs CMD with its output in OUT/NAME.txt, unless fewer than 15 s are left.
step() {
  local n=$1 t=$2
  shift 2
  local left=$((${BUDGET_S:-540} - ($(date +%s) - t0)))
  if [ $left -lt 15 ]; then
    res+=("$n: skipped (time)")
    return
  fi
  [ "$t" -gt "$left" ] && t=$left
  echo "== $n ($(($(date +%s) - t0)) s)"
  timeout -k 5 "$t" "$@" >"$OUT/$n.txt" 2>&1
  local rc=$?
  res+=("$n: exit $rc ($(($(date +%s) - t0)) s)")
  tail -3 "$OUT/$n.txt"
}

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
echo "== build"
if ! { cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
  cmake --build "$B" -j "$(nproc)" --target test_sparse test_spdnn_cta_tile test_config spdnn_infer; } \
  >"$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  echo "BUILD FAILED"
  exit 1
fi
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 -E "compact_kernel|cta_kernel" | tee "$OUT/resource-usage.txt" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

if [ "${TESTS:-1}" = 1 ]; then
  step test_spdnn_cta_tile 60 "$T/test_spdnn_cta_tile"
  step test_config 30 "$T/test_config"
  JHDNN_SPDNN_TILE=cta step test_sparse_cta 170 "$T/test_sparse" --durations yes
fi

for tile in block cta; do
  JHDNN_SPDNN_TILE=$tile step "sp1024_$tile" 60 "$SI" --width 1024 --layers 120,480 --path graph,resident \
    --validate yes --csv "$OUT/sp1024_$tile.csv"
  JHDNN_SPDNN_TILE=$tile step "sp4096_$tile" 60 "$SI" --width 4096 --layers 120,480 --path graph,resident \
    --validate yes --csv "$OUT/sp4096_$tile.csv"
done

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  # launch__grid_size: the resident grid the occupancy query gave (cta: 396 = 3 blocks x 132 SMs expected)
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size
  for tile in block cta; do
    JHDNN_SPDNN_TILE=$tile step "ncut_1024_$tile" 45 ncu --clock-control none --metrics "$M" \
      -k regex:"dnn_layer_compact_kernel|dnn_layer_cta_kernel" --launch-skip 0 --launch-count 12 --csv \
      --print-units base "$SI" --width 1024 --layers 120 --path graph --validate no --no-warmup
  done
  JHDNN_SPDNN_TILE=cta step ncut_4096_cta 45 ncu --clock-control none --metrics "$M" \
    -k regex:"dnn_layer_compact_kernel|dnn_layer_cta_kernel" --launch-skip 0 --launch-count 12 --csv \
    --print-units base "$SI" --width 4096 --layers 120 --path graph --validate no --no-warmup
fi

if [ "${SAN:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    JHDNN_SPDNN_TILE=cta JHDNN_TEST_SPDNN_TILE=cta step "san_$tool" 75 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$T/test_sparse" "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
  done
fi

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  R="$OUT/ncuf_1024_cta"
  JHDNN_SPDNN_TILE=cta step ncuf_1024_cta 120 ncu --clock-control none --set full \
    -k regex:"dnn_layer_cta_kernel" --launch-skip 0 --launch-count 4 --export "$R" --force-overwrite \
    "$SI" --width 1024 --layers 120 --path graph --validate no --no-warmup
  [ -f "$R.ncu-rep" ] && ncu --import "$R.ncu-rep" --page details >"$R.details.txt" 2>&1 && rm -f "$R.ncu-rep"
fi
printf '%s\n' "${res[@]}" | tee "$OUT/summary.txt"
for f in "$OUT"/sp1024_*.txt "$OUT"/sp4096_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|DIFFERS|differs" "$f"; }
done
