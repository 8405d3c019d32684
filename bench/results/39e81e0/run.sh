#!/usr/bin/env bash
# Session 17 call 3: (a) the experiment branch exp-vals-equal-rows (640bbed, never for main: under
# -DJHDNN_EXP_EQUAL_ROWS a lane's two rows that share list and value slots are computed once) against main's
# build: [resident] GPU tests under vals and duo, spdnn_infer exact at N = 4096, resident rows alternating;
# (b) if out/s17/late2-src.tar.gz exists, the trial with wip-spdnn-late2: its GPU script.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
ROOT=$PWD; OUT_DEV=$OUT; OUT=/tmp/c3; mkdir -p $OUT; B=build-gpu
BUDGET_S=${BUDGET:-560} source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/exp && tar xzf out/s17/exp-src.tar.gz -C /tmp/exp && mkdir -p /tmp/exp/data && cp -r data/spdnn /tmp/exp/data/
T="bench_sparse test_sparse spdnn_infer"
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j 8 --target $T ) > $OUT/build_main.txt 2>&1 &
step build_exp 150 bash -c "cd /tmp/exp && cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DJHDNN_EXP_EQUAL_ROWS && cmake --build $B -j 8 --target $T"
wait; tail -1 $OUT/build_main.txt
echo "exp flag in build.ninja: $(grep -c DJHDNN_EXP_EQUAL_ROWS /tmp/exp/$B/build.ninja)"
E=/tmp/exp/$B
for k in vals duo; do step exp_tests_$k 60 env JHDNN_RESIDENT_KERNEL=$k $E/tests/test_sparse "[resident]~[cpu]"; done
step exp_infer 90 $E/examples/spdnn_infer --width 1024,4096 --layers 120,480 --validate yes
NETS="1024:120,480,1920;4096:120,480,1920"
for r in 1 2; do
  step ab_main_$r 45 $B/bench/bench_sparse --spdnn "$NETS" --benchmark_filter='SpDNN/resident/'
  step ab_exp_$r 45 $E/bench/bench_sparse --spdnn "$NETS" --benchmark_filter='SpDNN/resident/'
done
if [ -f out/s17/late2-src.tar.gz ]; then
  mkdir -p /tmp/late2 && tar xzf out/s17/late2-src.tar.gz -C /tmp/late2 && mkdir -p /tmp/late2/data && cp -r data/spdnn /tmp/late2/data/
  left=$((${BUDGET:-560} - ($(date +%s) - step_t0)))
  step late2 $((left - 10)) env BUDGET_S=$((left - 15)) bash /tmp/late2/scripts/spdnn-late2-gpu.sh $OUT/late2
fi
echo "commit $C" > $OUT/commit.txt
step_summary
grep "^SpDNN" $OUT/ab_*.txt | awk '{print $1, $2, $3}'
grep -hE "^ +[0-9]+ +[0-9]+ " $OUT/exp_infer.txt
tar czf $OUT_DEV/c3.tgz -C /tmp c3
