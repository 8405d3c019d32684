#!/usr/bin/env bash
# Session 24 call 5 (tree 956f05c, src = dbe2ceb): compute-sanitizer racecheck and memcheck of test_sparse's "late4:"
# reuse-tile cases under late4all (the staged 16-byte and the kGather paths; the mixed-column cases, late and
# crowded). Carry: data/spdnn's four files.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1; mkdir -p $OUT/s; B=build-gpu; T=$B/tests
scripts/fetch-spdnn-data.sh > $OUT/s/data.txt 2>&1
(cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse) > $OUT/s/build.log 2>&1
JHDNN_TEST_SPDNN_TILE=late4all JHDNN_TEST_REUSE_CASE="late4:" timeout 150 compute-sanitizer --tool racecheck \
  --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*" > $OUT/s/racecheck_late4all.txt 2>&1
JHDNN_TEST_SPDNN_TILE=late4all JHDNN_TEST_REUSE_CASE="late4:" timeout 80 compute-sanitizer --tool memcheck \
  --error-exitcode 99 $T/test_sparse "fused and multi-layer paths*" > $OUT/s/memcheck_late4all.txt 2>&1
tar czf $OUT/r.tgz -C $OUT s; rm -rf $OUT/s
