#!/usr/bin/env bash
# Session 26's device calls of b2df6b9 / 71d247a (carry: data/spdnn's four files; call 1 also out/base =
# `git archive 3165064 CMakeLists.txt cmake include src tools tests/common examples | tar x -C out/base`).
# call 1 -> tiled/ (tree b2df6b9):
JHDNN_COMMIT=b2df6b9 VARIANTS=4 SMALL=1 bash scripts/spdnn-tiled-gpu.sh $OUT/t; mv $OUT/t/r.tgz $OUT/
# call 2 -> ctest/ (tree b2df6b9; a first try with `bash -c` could not find the script's library: 0.3 s):
JHDNN_COMMIT=b2df6b9 bash scripts/ctest-gpu.sh $OUT/v
# call 3 -> rerun/ (tree 71d247a, a fresh machine):
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1; scripts/fetch-spdnn-data.sh > /dev/null 2>&1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j16 --target test_sparse
ctest --test-dir build-gpu -j7 --output-on-failure --timeout 190 -R "spdnn_tile_|DeviceNetwork|test_sparse$" -E "env"
# call 4 -> ncu/ (tree 71d247a, the same machine):
cmake --build build-gpu -j16 --target spdnn_infer
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,lts__t_sectors.sum,sm__inst_executed.avg.per_cycle_active,smsp__inst_executed.sum"
for r in long_scoreboard short_scoreboard barrier wait no_instruction mio_throttle lg_throttle selected not_selected \
  math_pipe_throttle; do
  M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
for v in "neuron none" "tiled readers" "tiled none"; do
  set -- $v
  ncu --clock-control none --csv --metrics "$M" -k regex:dnn_layer_cta_kernel --launch-skip 41 --launch-count 2 \
    build-gpu/examples/spdnn_infer --path graph --layout $1 --relabel $2 --width 16384 --layers 120 --validate no \
    --no-warmup > $OUT/n/ncu_$1_$2.txt 2>&1
done
# call 5 -> bench/ (tree a68874c, a fresh machine):
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DJHDNN_BUILD_TESTS=OFF && cmake --build build-gpu -j16 --target bench_sparse
N="16384:120,480;65536:120"
build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" --benchmark_filter='SpDNN/(fused|tiled|cusparse)/' \
  --benchmark_out=$OUT/b/bench_sparse_tiled.json --benchmark_out_format=json > $OUT/b/bench_tiled.txt 2>&1
