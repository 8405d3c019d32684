#!/usr/bin/env bash
# Session 29, the six device calls (README.md), in order. Carry data/spdnn's four files in every call
# (neuron1024.tar.gz, sparse-images-1024-first1200.tsv, the two categories files) and out/base where named
# (`git archive <base> CMakeLists.txt cmake include src tools tests/common examples | tar x -C out/base`).
# call 1 -> trial-early/, trial-late4tail/, trial-resident/ (tree d6696c6 = main e04a932 + wip-resident-early +
# wip-late4-tail; out/base = main e04a932):
export JHDNN_COMMIT=d6696c6; BUDGET_S=235 bash scripts/spdnn-resident-early-gpu.sh $OUT/e
BUDGET_S=250 TESTS=0 NCU=0 bash scripts/spdnn-late4all-gpu.sh $OUT/a
BUDGET_S=70 SPDNN_PATH=resident EXACT=0 NCU=0 SPECS="1024:120,480 4096:120,480" bash scripts/spdnn-late4all-gpu.sh $OUT/r
# call 2 -> tile4096/ (main 5cb753c):
JHDNN_COMMIT=5cb753c CTEST=1 bash scripts/spdnn-tile-ab-gpu.sh $OUT/t
# call 3 -> fixed-cacheall/, head-tiles/ (main c55737a):
export JHDNN_COMMIT=c55737a; BUDGET_S=360 bash scripts/spdnn-fixed-gpu.sh $OUT/f
BUDGET_S=170 REPS=0 EXACT_SPECS=" " NCU_SPECS="resident:4096:120:12 resident:1024:120:10 graph:4096:120:20" \
  bash scripts/spdnn-tile-ab-gpu.sh $OUT/h
# call 4 -> fence/, fixed-warm/ (ec4fff9, then branch wip-fence-once, now main; out/base = main 8d54d28):
export JHDNN_COMMIT=ec4fff9; REPS=3 BUDGET_S=480 bash scripts/spdnn-ab-gpu.sh $OUT/a
NCU_CACHE=none BUDGET_S=100 bash scripts/spdnn-fixed-gpu.sh $OUT/f
# call 5 -> warm/ (main 2afb311; library = ec4fff9's):
JHDNN_COMMIT=2afb311 SANITIZE_LATE4="late4 late4crowd" bash scripts/spdnn-warm-gpu.sh $OUT/w
# call 6 -> late4crowd-rule/ (branch wip-late4crowd-rule 5f6aa8a; out/base = main 5b973a1, library = ec4fff9's):
export JHDNN_COMMIT=5f6aa8a; CTEST=0 REPS=3 SPECS="resident:4096:120,480 graph:4096:120,480 resident:1024:120" \
  EXACT="resident:4096:480 graph:4096:120" BUDGET_S=140 bash scripts/spdnn-ab-gpu.sh $OUT/a
for t in base:build-base new:build-gpu; do n=${t%%:*}; d=${t#*:}
  LD_LIBRARY_PATH=$PWD/$d/src timeout 30 ncu --clock-control none --cache-control none --csv \
    --metrics gpu__time_duration.sum -k regex:dnn_layer_cta_kernel --launch-count 12 $d/examples/spdnn_infer \
    --data $PWD/data/spdnn --path resident --width 4096 --layers 120 --validate no --no-warmup > $OUT/a/ncu_4096_$n.txt 2>&1
done
