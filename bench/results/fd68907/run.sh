#!/usr/bin/env bash
# Session 13, last call: bench_sparse's SpDNN rows with the pipeline's warm-up (943f434 + the warm-up
# commit): resident / graph paths and the cuSPARSE pipeline, same run. Guard 230 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f3; mkdir -p $O; B=build-gpu
t0=$(date +%s)
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
timeout 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release > $O/build.txt 2>&1 && cmake --build $B -j 16 --target bench_sparse >> $O/build.txt 2>&1"
echo "build rc $? ($(( $(date +%s) - t0 )) s)"
left=$(( 230 - ($(date +%s) - t0) ))
timeout $left $B/bench/bench_sparse --spdnn "1024:120,480,1920;4096:120,480,1920;16384:120" \
  --baseline "1024:120,480,1920;4096:120,480,1920;16384:120" --benchmark_filter='SpDNN/(resident|fused|cusparse)/' \
  --benchmark_out=$O/bench_sparse_spdnn.json --benchmark_out_format=json > $O/bench_sparse_spdnn.txt 2>&1
echo "bench rc $? ($(( $(date +%s) - t0 )) s)"
grep -E "^SpDNN" $O/bench_sparse_spdnn.txt | awk '{print $1, $2, $3}'
tar czf $OUT/f3.tgz -C /tmp f3
