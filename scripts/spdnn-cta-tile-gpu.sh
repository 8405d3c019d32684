#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 540 s; its limit is 600 s a call): the CTA-level GEMM
# tile of the per-layer fused sparse-DNN kernel (JHDNN_SPDNN_TILE=cta, and cta2: 3 stages per half, 2
# blocks per SM; src/sparse/README.md "CTA tile" and "CTA tile, 2 blocks per SM (cta2)") against the
# block tile (the default).
#
#   scripts/spdnn-cta-tile-gpu.sh OUTDIR      TESTS=0 skips the tests, SAN=0 the sanitizers, NCU=0 the profiles
#
# Which tiles (defaults: session 15's cta2 check; session 14 ran NEW=cta AB="block cta" NCU_TILES="block cta"):
#   NEW        the tile under test: all of test_sparse, the sanitizers and the full ncu set run under it (cta2)
#   AB         the tiles of the spdnn_infer A/B, in this order ("block cta cta2")
#   NCU_TILES  the tiles of the per-layer ncu at N = 1024 ("cta cta2"; N = 4096: NEW only)
#   LAYERS     per-layer ncu: the first LAYERS launches of the per-layer kernel = layers 1.. (6)
#
# Builds the sparse targets in BUILD_DIR (default build-gpu, git-ignored) and unpacks the challenge data, then:
#   1. resource usage of the layer kernels (dnn_layer_cta_kernel<2> = cta: expected REG:80 STACK:48
#      SHARED:1040 + 75264 B dynamic, 3 blocks per SM; dnn_layer_cta_kernel<3> = cta2: REG:128 STACK:0
#      SHARED:1040 + 112640 B dynamic, 2 blocks per SM);
#   2. tests: test_spdnn_cta_tile (CPU emulation of both, stage-ring protocol), test_config, and all of
#      test_sparse under JHDNN_SPDNN_TILE=$NEW (= ctest spdnn_tile_$NEW; its reuse-tile case also loops over
#      single, block, list, cta and cta2 itself);
#   3. A/B over $AB: spdnn_infer N = 1024 L = 120 / 480 and N = 4096 L = 120 / 480, graph and resident
#      paths, exact (--validate yes; resident falls back to graph at N = 4096);
#   4. ncu (--no-warmup: launches 0.. of dnn_layer_compact_kernel / dnn_layer_cta_kernel are layers 1..):
#      time, instructions, IPC, warps, grid of the first $LAYERS layers at N = 1024 ($NCU_TILES) and
#      N = 4096 ($NEW); launch__grid_size: cta 396 (3 x 132), cta2 264 (2 x 132), block 396;
#   5. compute-sanitizer memcheck and racecheck of the reuse-tile case under $NEW only
#      (JHDNN_TEST_SPDNN_TILE=$NEW: without it the case runs single, block, list and cta first and the timeout
#      cuts it): memcheck all its cases (crowded cases: 34000 images, 128-image CTA items; stages, named
#      barriers, the aliased block-step buffers); racecheck only its two "ring wrap-around" cases
#      (JHDNN_TEST_REUSE_CASE: 8500 images x 512 rows, 4 .. 6 list blocks per half, so the stage ring wraps,
#      16-byte copies and gathers, block steps inside the chunks): unfiltered, racecheck (under cta, ba5fa93)
#      finished only the first crowded case within its 75 s, and that case has at most 3 list blocks per half
#      under cta2, so no stage of the ring is ever reused there;
#   6. the full ncu set of layers 1-4 at N = 1024 under $NEW (stalls, local memory, occupancy limits).
# Steps are ordered by priority (correctness, then times), so the guard cuts the least important ones.
# Time guard: a step starts only if 15 s of the BUDGET_S (default 540) s are left, and its timeout is cut to what is left, so
# the call ends by itself with OUTDIR/summary.txt written (steps skipped or cut are listed there).
# Measured (H200, bench/results/ba5fa93/cta): layers 1-4 at N = 1024 block 340 / 336 / 248 / 150 us, cta 242 /
# 249 / 267 / 183 us; N = 1024 L = 120 resident block 2.039, cta 1.885 ms; graph block 2.634, cta 2.653 ms.
# Prediction for cta2 (not measured; README "CTA tile, 2 blocks per SM (cta2)"): layers 1-4 at N = 1024
# ~207 / 201 / 194 / 121 us (IPC ~2.2 / 2.2 / 1.8 / 1.5; cta 242 / 249 / 267 / 183); resident N = 1024
# L = 120 ~1.72 ms (1.60-1.92); layers 6+ (block steps at 16 warps per SM) and so the graph path slower
# than cta (graph N = 1024 L = 120 ~3.0 ms).
set -uo pipefail
UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
NEW=${NEW:-cta2}
AB=${AB:-block cta cta2}
NCU_TILES=${NCU_TILES:-cta cta2}
LAYERS=${LAYERS:-6}

scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the official network and the data tests are missing"
build_step "$B" test_sparse test_spdnn_cta_tile test_config spdnn_infer
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" 2>/dev/null |
  grep -A1 -E "compact_kernel|cta_kernel" | tee "$OUT/resource-usage.txt" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

if [ "${TESTS:-1}" = 1 ]; then
  step test_spdnn_cta_tile 60 "$T/test_spdnn_cta_tile"
  step test_config 30 "$T/test_config"
  JHDNN_SPDNN_TILE=$NEW step "test_sparse_$NEW" 170 "$T/test_sparse" --durations yes
fi

for tile in $AB; do
  JHDNN_SPDNN_TILE=$tile step "sp1024_$tile" 60 "$SI" --width 1024 --layers 120,480 --path graph,resident \
    --validate yes --csv "$OUT/sp1024_$tile.csv"
  JHDNN_SPDNN_TILE=$tile step "sp4096_$tile" 60 "$SI" --width 4096 --layers 120,480 --path graph,resident \
    --validate yes --csv "$OUT/sp4096_$tile.csv"
done

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  # launch__grid_size: the resident grid the occupancy query gave (block and cta 396, cta2 264 expected)
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size
  ncut() {  # ncut NAME TILE WIDTH
    JHDNN_SPDNN_TILE=$2 step "$1" 45 ncu --clock-control none --metrics "$M" \
      -k regex:"dnn_layer_compact_kernel|dnn_layer_cta_kernel" --launch-skip 0 --launch-count "$LAYERS" --csv \
      --print-units base "$SI" --width "$3" --layers 120 --path graph --validate no --no-warmup
  }
  for tile in $NCU_TILES; do ncut "ncut_1024_$tile" "$tile" 1024; done
  ncut "ncut_4096_$NEW" "$NEW" 4096
fi

if [ "${SAN:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    filter=""
    [ "$tool" = racecheck ] && filter="ring wrap-around"
    JHDNN_SPDNN_TILE=$NEW JHDNN_TEST_SPDNN_TILE=$NEW JHDNN_TEST_REUSE_CASE=$filter step "san_${tool}_$NEW" 75 \
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$T/test_sparse" \
      "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
  done
fi

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  R="$OUT/ncuf_1024_$NEW"
  JHDNN_SPDNN_TILE=$NEW step "ncuf_1024_$NEW" 120 ncu --clock-control none --set full \
    -k regex:"dnn_layer_cta_kernel" --launch-skip 0 --launch-count 4 --export "$R" --force-overwrite \
    "$SI" --width 1024 --layers 120 --path graph --validate no --no-warmup
  [ -f "$R.ncu-rep" ] && ncu --import "$R.ncu-rep" --page details >"$R.details.txt" 2>&1 && rm -f "$R.ncu-rep"
fi
step_summary
for f in "$OUT"/sp1024_*.txt "$OUT"/sp4096_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E "^ +[0-9]|DIFFERS|differs" "$f"; }
done
# Per-layer lines: launch (= layer - 1), kernel, metric, value (time in ns) of each profiled launch.
for f in "$OUT"/ncut_*.txt; do
  [ -f "$f" ] && { echo "$f"; grep -E '"(gpu__time_duration.sum|smsp__inst_executed.sum|sm__inst_executed.avg.per_cycle_active|launch__grid_size)"' "$f" |
    awk -F'","' '{k = $5; if (match(k, /dnn_layer_[a-z_0-9]+(<[0-9]+>)?/)) k = substr(k, RSTART, RLENGTH);
      id = $1; gsub(/"/, "", id); v = $NF; gsub(/"/, "", v); print id, k, $(NF - 2), v}'; }
done
