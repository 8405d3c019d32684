#!/usr/bin/env bash
# Session 23, the two device calls of 9b434f7 (carry: data/spdnn/neuron1024.tar.gz,
# data/spdnn/sparse-images-1024-first1200.tsv, data/spdnn/neuron1024-l120-categories-first1200.tsv,
# data/spdnn/neuron1024-l120-categories.tsv).
# call 3:
JHDNN_COMMIT=9b434f7 bash scripts/spdnn-verify-gpu.sh $OUT/v 2>&1 | tail -30; mv $OUT/v/r.tgz $OUT/; rm -rf $OUT/v
# call 5 (call 4 was the same without the data carried: bench_sparse skipped the SpDNN benches):
export PATH=$PATH:/usr/local/cuda/bin; mkdir -p $OUT; scripts/fetch-spdnn-data.sh >/dev/null 2>&1
cmake --build build-gpu -j16 --target bench_sparse >/dev/null || exit 1
N="65536:120,480"
timeout 220 build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn_65536.json --benchmark_out_format=json > $OUT/bench_spdnn_65536.txt 2>&1
