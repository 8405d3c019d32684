#!/usr/bin/env bash
# Session 16 call 1: trial-s16 (b8d0970 = main c0851b5 + wip-spdnn-late-pipe-review), built from its git archive:
# scripts/spdnn-late-gpu.sh with its defaults.
export PATH=$PATH:/usr/local/cuda/bin
T=/tmp/trial; mkdir -p $T && tar xzf out/s16/trial-src.tar.gz -C $T && mkdir -p $T/data && cp -r data/spdnn $T/data/
cd $T && BUDGET_S=540 bash scripts/spdnn-late-gpu.sh /tmp/c1 2>&1 | tail -90
tar czf $OUT/c1.tgz -C /tmp c1
