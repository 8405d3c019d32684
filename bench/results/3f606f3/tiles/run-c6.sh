#!/usr/bin/env bash
# Session 17 call 6 (the last device seconds): the resident path (its fused head layers) under cta2w against cta2,
# N = 1024 / 4096 L = 120 / 480, alternating twice, exact categories.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c6; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer
BUDGET_S=170 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 100 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer"
for r in 1 2; do for t in cta2w cta2; do
  step r_${t}_$r 25 env JHDNN_SPDNN_TILE=$t $SI --width 1024,4096 --layers 120,480 --validate yes
done; done
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/r_*.txt
tar czf $OUT_DEV/c6.tgz -C /tmp c6
