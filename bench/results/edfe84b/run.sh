#!/usr/bin/env bash
# Session 28, the five device calls (README.md). Carry data/spdnn's four files in every call, and the out/ trees
# where named. Pass JHDNN_COMMIT as a literal sha.
# call 1 -> ctest-9868d3f/ (main 9868d3f checked out):
JHDNN_COMMIT=9868d3f bash scripts/ctest-gpu.sh $OUT/v; cd $OUT && tar czf r.tgz v && rm -rf v
# call 2 -> trees/ (carry out/base out/pdl out/checks; wip-spdnn-pdl and wip-resident-checks rebased onto 9868d3f):
#   for p in base:main pdl:wip-spdnn-pdl checks:wip-resident-checks; do n=${p%%:*}; mkdir -p out/$n
#     git archive ${p#*:} CMakeLists.txt cmake include src tools tests/common tests examples | tar x -C out/$n; done
TREES="base:out/base pdl:out/pdl checks:out/checks" JHDNN_COMMIT=9868d3f bash scripts/spdnn-trees-gpu.sh $OUT/t
mv $OUT/t/r.tgz $OUT/; rm -rf $OUT/t
# call 3 -> copies/ (edfe84b checked out; carry out/base = git archive 0b47fb3 CMakeLists.txt cmake include src
# tools tests/common examples):
JHDNN_COMMIT=edfe84b bash scripts/spdnn-copies-gpu.sh $OUT/c; mv $OUT/c/r.tgz $OUT/; rm -rf $OUT/c
# call 4 -> table/ (the same machine, build-gpu from call 3; the script as committed after the run validates
# N = 16384 at L = 120 / 480 only):
JHDNN_COMMIT=edfe84b bash scripts/spdnn-table-gpu.sh $OUT/b; mv $OUT/b/r.tgz $OUT/; rm -rf $OUT/b
# call 5 -> widen1/:
JHDNN_COMMIT=edfe84b bash scripts/spdnn-widen1-gpu.sh $OUT/w; mv $OUT/w/r.tgz $OUT/; rm -rf $OUT/w
