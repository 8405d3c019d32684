#!/usr/bin/env bash
# Session 15 call 2: trial-s15 (e22c7c8 = main cad2545 + wip-spdnn-cta2-review), built from its git archive:
# scripts/spdnn-cta-tile-gpu.sh with its defaults (NEW=cta2, AB="block cta cta2").
export PATH=$PATH:/usr/local/cuda/bin
T=/tmp/trial; mkdir -p $T && tar xzf out/s15/trial-src.tar.gz -C $T && mkdir -p $T/data && cp -r data/spdnn $T/data/
cd $T && BUDGET_S=545 bash scripts/spdnn-cta-tile-gpu.sh /tmp/c2 2>&1 | tail -70
tar czf $OUT/c2.tgz -C /tmp c2
