#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~8 minutes, a cold build included): session 26's tiled feature
# layout (jhdnnSparseDnnLayerForwardCompactEx, JHDNN_SPARSE_DNN_FEATURES_TILED128) with the reader relabelling
# (spdnn Relabel::kReaders), against the neuron-major layout, on the graph path.
#
#   JHDNN_COMMIT=<sha> scripts/spdnn-tiled-gpu.sh OUTDIR   (OUTDIR/r.tgz holds every step's output)
# Through the device tool: JHDNN_COMMIT=<sha> bash scripts/spdnn-tiled-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# (carry data/spdnn's neuron1024.tar.gz, sparse-images-1024-first1200.tsv and the categories files). Pass the commit
# as a literal sha: `git rev-parse` on the device names main's commit, not the checked-out tree (session 26).
#
# Steps by priority (the guard cuts the last ones):
#   1. build spdnn_infer, test_sparse, test_sparse_cpu; unpack the challenge data;
#   2. the tests of the new code: test_sparse_cpu's [relabel] cases, test_sparse's tiled-layout cases (exactness
#      against the neuron-major run at N = 1024 / 4096 / 16384, the bad inputs);
#   3. exact, tiled + readers, graph path: the official N = 1024 L = 120 network against its categories, generated
#      N = 16384 L = 120 and N = 65536 L = 120 against the CPU reference;
#   4. the A/B, graph path, in turn, twice, for each WIDTH:LAYERS of SPECS (default "16384:120,480 65536:120"):
#      the base tree's spdnn_infer (BASE_DIR, default out/base, if it holds a tree: `git archive <base> CMakeLists.txt
#      cmake include src tools tests/common examples | tar x -C out/base`, carried; built in parallel with step 1),
#      neuron-major with the original names (today's default there), tiled + readers, and (VARIANTS=4) tiled alone
#      and readers alone;
#   5. ncu of two late layers (launches 42-43 at N = 16384 L = 120) for neuron / none and tiled / readers: time, DRAM
#      bytes read and written, L2 sectors;
#   6. (SMALL=1) N = 1024 / 4096 L = 120 / 480 on the graph path, tiled + readers against neuron-major (one run each).
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=570 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
BASE=${BASE_DIR:-out/base}
if [ -f "$BASE/CMakeLists.txt" ]; then
  { cmake -S "$BASE" -B build-base -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF -DJHDNN_BUILD_BENCH=OFF &&
    cmake --build build-base -j 6 --target spdnn_infer; } > "$OUT/build-base.log" 2>&1 &
  pb=$!
fi
build_step "$B" spdnn_infer test_sparse test_sparse_cpu
HAVE_BASE=0
if [ -n "${pb:-}" ]; then
  wait "$pb" && HAVE_BASE=1 || { tail -20 "$OUT/build-base.log"; echo "base build failed: no base rows"; }
fi
OLD=(env LD_LIBRARY_PATH="$PWD/build-base/src" build-base/examples/spdnn_infer --path graph --data "$PWD/data/spdnn")
step test_relabel_cpu 30 "$T/test_sparse_cpu" "[relabel]"
step test_tiled 150 "$T/test_sparse" "inference: the tiled feature layout and the reader relabelling are exact"
step test_tiled_bad_inputs 30 "$T/test_sparse" "sparse calls: the tiled feature layout's bad inputs"
NEURON=(env "$SI" --path graph --layout neuron --relabel none)
TILED=(env "$SI" --path graph --layout tiled --relabel readers)
step exact_1024_official 40 "${TILED[@]}" --width 1024 --layers 120 --validate yes
step exact_16384 60 "${TILED[@]}" --width 16384 --layers 120 --validate yes
step exact_65536 90 "${TILED[@]}" --width 65536 --layers 120 --validate yes
for rep in 1 2; do
  for spec in ${SPECS:-16384:120,480 65536:120}; do
    w=${spec%%:*} l=${spec##*:}
    [ $HAVE_BASE = 1 ] && step "ab_${w}_base_$rep" 45 "${OLD[@]}" --width "$w" --layers "$l" --validate no
    step "ab_${w}_neuron_$rep" 45 "${NEURON[@]}" --width "$w" --layers "$l" --validate no
    step "ab_${w}_tiled_$rep" 45 "${TILED[@]}" --width "$w" --layers "$l" --validate no
    if [ "${VARIANTS:-2}" = 4 ]; then
      step "ab_${w}_tiledonly_$rep" 45 "$SI" --path graph --layout tiled --relabel none --width "$w" --layers "$l" \
        --validate no
      step "ab_${w}_readersonly_$rep" 45 "$SI" --path graph --layout neuron --relabel readers --width "$w" \
        --layers "$l" --validate no
    fi
  done
done
ML="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum"
for v in neuron tiled; do
  if [ $v = neuron ]; then X=("${NEURON[@]}"); else X=("${TILED[@]}"); fi
  step "ncu_late_$v" 60 ncu --clock-control none --csv --metrics "$ML" -k regex:dnn_layer_cta_kernel --launch-skip 41 \
    --launch-count 2 "${X[@]:1}" --width 16384 --layers 120 --validate no --no-warmup
done
if [ "${SMALL:-0}" = 1 ]; then
  for w in 1024 4096; do
    step "small_${w}_neuron" 40 "${NEURON[@]}" --width "$w" --layers 120,480 --validate no
    step "small_${w}_tiled" 40 "${TILED[@]}" --width "$w" --layers 120,480 --validate no
  done
fi
step_summary
infer_rows "$OUT"/exact_*.txt "$OUT"/ab_*.txt "$OUT"/small_*.txt
for f in "$OUT"/ncu_late_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep '^"' "$f" | grep -v '"ID"' | awk -F'","' '{print $(NF-2) "=" $NF}' | tr -d '"' | tr '\n' ' ')"
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
