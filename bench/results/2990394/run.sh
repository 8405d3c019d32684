#!/usr/bin/env bash
# Session 26, the five device calls of tree 2990394 (trial-s26 = main bdd8064 + wip-tile-compaction +
# wip-late4crowd-kernel, checked out; out/base = `git archive bdd8064 CMakeLists.txt cmake include src tools
# tests/common examples | tar x -C out/base`). Carry: out/base and data/spdnn's four files.
# Pass JHDNN_COMMIT as a literal sha: `git rev-parse` on the device printed main's bdd8064, not the checked-out tree.
# call 1 -> verify/:
JHDNN_COMMIT=2990394 bash scripts/spdnn-late4crowd-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/
# call 2 -> large/ (build-ab is call 1's A/B build of this tree):
JHDNN_COMMIT=2990394 TESTS=1 NCU=0 NCU_LATE=1 BUILD_DIR=build-ab SPECS="16384:120,480 65536:120" \
  bash scripts/spdnn-late4all-gpu.sh $OUT/a; mv $OUT/a/r.tgz $OUT/
# call 3 -> bench/ (build-gpu is call 1's full build):
export PATH=$PATH:/usr/local/cuda/bin; mkdir -p $OUT/b; scripts/fetch-spdnn-data.sh >/dev/null 2>&1
cmake --build build-gpu -j16 --target bench_sparse spdnn_infer >/dev/null || exit 1
for N in "16384:120,480,1920" "65536:120,480"; do w=${N%%:*}
  timeout 260 build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" --benchmark_filter='SpDNN/(fused|cusparse)/' \
    --benchmark_out=$OUT/b/bench_sparse_spdnn_$w.json --benchmark_out_format=json > $OUT/b/bench_spdnn_$w.txt 2>&1
done
timeout 60 build-gpu/examples/spdnn_infer --width 16384 --layers 120,480 --validate yes \
  --csv $OUT/b/spdnn_infer_16384.csv --active-csv $OUT/b/spdnn_active_16384.csv > $OUT/b/spdnn_infer_16384.txt 2>&1
tar czf $OUT/r.tgz -C $OUT b
# call 4 -> sanitizer/ (N = 65536 L = 1920 against the pipeline; compute-sanitizer of the late4 cases, late4crowd):
export JHDNN_REQUIRE_GPU=1; mkdir -p $OUT/s; T=build-gpu/tests
cmake --build build-gpu -j 16 --target test_sparse bench_sparse > $OUT/s/build.log 2>&1 || exit 1
N="65536:1920"; timeout 300 build-gpu/bench/bench_sparse --spdnn "$N" --baseline "$N" \
  --benchmark_filter='SpDNN/(fused|cusparse)/' --benchmark_out=$OUT/s/bench_sparse_spdnn_65536_1920.json \
  --benchmark_out_format=json > $OUT/s/bench_spdnn_65536_1920.txt 2>&1
for tool in racecheck memcheck; do
  JHDNN_TEST_SPDNN_TILE=late4crowd JHDNN_TEST_REUSE_CASE="late4:" timeout 130 compute-sanitizer --tool $tool \
    --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*" > $OUT/s/${tool}_late4crowd.txt 2>&1
done
tar czf $OUT/r.tgz -C $OUT s
# call 5 -> ab65536/ (A/B at N = 65536 L = 480 and N = 16384 L = 1920; ncu of two late layers at N = 65536):
mkdir -p $OUT/a; JHDNN_COMMIT=2990394 EXACT=0 NCU=0 BUILD_DIR=build-ab SPECS="65536:480 16384:1920" \
  bash scripts/spdnn-late4all-gpu.sh $OUT/a
ML="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum"
for v in base ab; do
  if [ $v = base ]; then X="build-base/examples/spdnn_infer --data $PWD/data/spdnn"; else X=build-ab/examples/spdnn_infer; fi
  LD_LIBRARY_PATH=$PWD/build-$v/src timeout 120 ncu --clock-control none --csv --metrics "$ML" \
    -k regex:dnn_layer_cta_kernel --launch-skip 60 --launch-count 2 $X --width 65536 --layers 120 --path graph \
    --validate no --no-warmup > $OUT/a/ncu_late65536_$v.txt 2>&1
done
