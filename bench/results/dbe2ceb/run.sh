#!/usr/bin/env bash
# Session 24, the two device calls of dbe2ceb (carry: data/spdnn/neuron1024.tar.gz,
# data/spdnn/sparse-images-1024-first1200.tsv, data/spdnn/neuron1024-l120-categories-first1200.tsv,
# data/spdnn/neuron1024-l120-categories.tsv).
# call 3:
JHDNN_COMMIT=dbe2ceb bash scripts/spdnn-verify-gpu.sh $OUT/v; mv $OUT/v/r.tgz $OUT/; rm -rf $OUT/v
# call 4 (the same machine, build-gpu kept from call 3):
export PATH=$PATH:/usr/local/cuda/bin; mkdir -p $OUT/b; scripts/fetch-spdnn-data.sh >/dev/null 2>&1
(cmake --build build-gpu -j16 --target bench_sparse >/dev/null || exit 1)
echo "commit dbe2ceb" > $OUT/b/commit.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/b/gpu.txt
N="65536:120,480"; t0=$(date +%s)
timeout 220 build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/b/bench_sparse_spdnn_65536.json --benchmark_out_format=json > $OUT/b/bench_spdnn_65536.txt 2>&1
echo "65536 L120,480: rc $? $(( $(date +%s)-t0 )) s" | tee -a $OUT/b/summary.txt
N="65536:1920"; t0=$(date +%s)
timeout 340 build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/b/bench_sparse_spdnn_65536_1920.json --benchmark_out_format=json \
  > $OUT/b/bench_spdnn_65536_1920.txt 2>&1
echo "65536 L1920: rc $? $(( $(date +%s)-t0 )) s" | tee -a $OUT/b/summary.txt
tar czf $OUT/r.tgz -C $OUT b; rm -rf $OUT/b
