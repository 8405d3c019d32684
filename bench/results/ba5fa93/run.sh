#!/usr/bin/env bash
# Session 14 call 1: trial-s14 (ba5fa93): duo16 (resident) then the cta tile, one device call.
export PATH=$PATH:/usr/local/cuda/bin
O=/tmp/c1; mkdir -p $O
t0=$(date +%s)
BUDGET_S=245 bash scripts/spdnn-resident-wide-gpu.sh $O/resident 2>&1 | tail -60
echo "== resident done at $(( $(date +%s) - t0 )) s"
left=$(( 565 - ($(date +%s) - t0) ))
BUDGET_S=$left bash scripts/spdnn-cta-tile-gpu.sh $O/cta 2>&1 | tail -60
echo "== all done at $(( $(date +%s) - t0 )) s"
tar czf $OUT/c1.tgz -C /tmp c1
