#!/usr/bin/env bash
# Session 17 call 5 (the device time left): cta2w against cta2 at N = 1024 on the graph path (alternating twice),
# and N = 65536 L = 120 under cta2w validated against the CPU reference (call 4 ran it unvalidated).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c5; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer
BUDGET_S=290 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer"
for r in 1 2; do for t in cta2w cta2; do
  step g1024_${t}_$r 20 env JHDNN_SPDNN_TILE=$t $SI --width 1024 --layers 120,480 --path graph --validate no
done; done
step v65536_cta2w 150 env JHDNN_SPDNN_TILE=cta2w $SI --width 65536 --layers 120 --path graph --validate yes
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/g1024_*.txt $OUT/v65536_*.txt
tar czf $OUT_DEV/c5.tgz -C /tmp c5
