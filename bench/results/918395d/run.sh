#!/usr/bin/env bash
# Session 16 call 2: trial-s16b (918395d = main ce76b8c + wip-resident-vals + wip-spdnn-tile84), built from its git
# archive: one build of every target both scripts need, then scripts/spdnn-resident4096-gpu.sh (KERNELS=0: the other
# resident kernels' SASS is identical to main's) and scripts/spdnn-tile84-gpu.sh (SAN=0).
export PATH=$PATH:/usr/local/cuda/bin
T=/tmp/trial; mkdir -p $T && tar xzf out/s16/trial16b-src.tar.gz -C $T && mkdir -p $T/data && cp -r data/spdnn $T/data/
cd $T || exit 1
mkdir -p /tmp/c2/res /tmp/c2/t84
t0=$(date +%s)
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j 16 --target test_sparse \
  test_spdnn_cta_tile test_config spdnn_infer; } > /tmp/c2/build.log 2>&1 || { tail -30 /tmp/c2/build.log; echo BUILD FAILED; }
echo "prebuild $(( $(date +%s) - t0 )) s"
BUDGET_S=290 KERNELS=0 bash scripts/spdnn-resident4096-gpu.sh /tmp/c2/res 2>&1 | tail -60
BUDGET_S=200 SAN=0 bash scripts/spdnn-tile84-gpu.sh /tmp/c2/t84 2>&1 | tail -50
tar czf $OUT/c2.tgz -C /tmp c2
