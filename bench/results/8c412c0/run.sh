#!/usr/bin/env bash
# Session 21 call 4: main at $C (late4's 4-byte variant with images l + 32 m): build; ctest spdnn_tile_late4;
# spdnn_infer graph path N = 65536 L = 120 cta2w / late4 alternating twice; N = 16384 L = 480 late4 and cta2w once.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c4; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=400 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse spdnn_infer bench_sparse"
step ctest_late4 80 ctest --test-dir $B -R '^spdnn_tile_late4$' --output-on-failure
for rep in 1 2; do for t in cta2w late4; do
  JHDNN_SPDNN_TILE=$t step ab65536_${t}_$rep 45 $SI --width 65536 --layers 120 --path graph --validate no
done; done
for t in late4 cta2w; do JHDNN_SPDNN_TILE=$t step ab16384_$t 45 $SI --width 16384 --layers 480 --path graph --validate no; done
echo "commit $C" > $OUT/commit.txt
step_summary
grep -E '^ +[0-9]+ +[0-9]+ ' $OUT/ab*.txt
grep -E "tests passed|Failed" $OUT/ctest_late4.txt | tail -2
tar czf $OUT_DEV/c4.tgz -C /tmp c4
