#!/usr/bin/env bash
# Session 20 call 2: main at $C (the vals-pack's list slots 144 bytes apart): build everything, and 840b282's
# spdnn_infer (vals4w on 128-byte list slots) in a second tree; scripts/spdnn-vals4w-gpu.sh (tests, exact,
# racecheck, valsfan / vals4w A/B, ncu); the stride A/B: 840b282 / $C spdnn_infer N = 4096 L = 120,480,1920 (both
# vals4w, the default), alternating twice; bench_sparse N = 4096 with the cuSPARSE pipeline in the same process;
# spdnn_infer csv (exact); the whole ctest (-j4).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c2; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=575 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
mkdir -p /tmp/old && tar xzf out/s20/old840b282.tar.gz -C /tmp/old && mkdir -p /tmp/old/data && cp -r data/spdnn /tmp/old/data/
step build_all 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
step build_old 120 bash -c "cd /tmp/old && cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build build-old -j 16 --target spdnn_infer"
step vals4w 150 env BUDGET_S=140 BUILD_DIR=$B bash scripts/spdnn-vals4w-gpu.sh $OUT/vals4w
for r in 1 2; do
  JHDNN_SPDNN_RESIDENT_4096=1 step "stride_old_$r" 40 /tmp/old/build-old/examples/spdnn_infer --data /tmp/old/data/spdnn \
    --width 4096 --layers 120,480,1920 --path resident --validate no --csv $OUT/stride_old_$r.csv
  JHDNN_SPDNN_RESIDENT_4096=1 step "stride_new_$r" 40 $SI --width 4096 --layers 120,480,1920 --path resident \
    --validate no --csv $OUT/stride_new_$r.csv
done
NETS="4096:120,480,1920"
step bench_spdnn 60 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn.json --benchmark_out_format=json
step spdnn_infer 40 $SI --width 4096 --layers 120,480 --validate yes --csv $OUT/spdnn_infer.csv --active-csv $OUT/spdnn_active.csv
left=$((575 - ($(date +%s) - step_t0)))
step ctest $((left - 8)) ctest --test-dir $B -j4 --output-on-failure --timeout 200
grep -E "tests passed|Total Test|\(Failed\)|Not Run" $OUT/ctest.txt | head
echo "commit $C" > $OUT/commit.txt
step_summary
for f in $OUT/stride_*.txt; do echo $f; grep -E "^ +4096 " $f; done
grep -E "^SpDNN" $OUT/bench_spdnn.txt | awk '{print $1, $2, $3}'
tar czf $OUT_DEV/c2.tgz -C /tmp c2
