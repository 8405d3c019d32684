#!/usr/bin/env bash
# Session 17 call 2, on main (deep4 the SpMM default): build; bench_sparse's SpDNN rows with the cuSPARSE pipeline
# (the session-16 set, then the larger networks the table lacked: N = 16384 L = 480 / 1920, N = 65536 L = 120 / 480);
# the SpMM rows (full sizes); ncu of late layers 40-43 at N = 16384 under cta2 and block (dram bytes: the check
# asked for in src/sparse/README.md "More warps per SM"); cta2 vs block at N = 65536 L = 120 (never run under cta2).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS
OUT_DEV=$OUT; OUT=/tmp/c2; mkdir -p $OUT; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
BUDGET_S=575 source scripts/lib/guarded-step.sh
scripts/fetch-spdnn-data.sh > $OUT/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16"
NETS="1024:120,480,1920;4096:120,480,1920;16384:120"
step bench_spdnn 80 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn.json --benchmark_out_format=json
step bench_spmm 90 $BS --benchmark_filter='^SpMM/' --benchmark_out=$OUT/bench_sparse_spmm.json --benchmark_out_format=json
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size,dram__bytes.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
late() { local name=$1 w=$2 tile=$3 k=$4; step $name 70 env JHDNN_SPDNN_TILE=$tile ncu --clock-control none --metrics $M -k regex:"$k" \
  --launch-skip 40 --launch-count 4 --csv $SI --width $w --layers 120 --path graph --validate no --no-warmup; }
late ncu_late_16384_cta2 16384 cta2 dnn_layer_cta_kernel
late ncu_late_16384_block 16384 block dnn_layer_compact_kernel
for t in cta2 block; do
  step infer_65536_$t 45 env JHDNN_SPDNN_TILE=$t $SI --width 65536 --layers 120 --path graph --validate no
done
BIG="16384:480,1920;65536:120,480"
step bench_spdnn_big 240 $BS --spdnn "$BIG" --baseline "$BIG" --benchmark_filter='SpDNN/(fused|cusparse)/' \
  --benchmark_out=$OUT/bench_sparse_spdnn_big.json --benchmark_out_format=json
echo "commit $C" > $OUT/commit.txt
step_summary
grep -hE "^SpDNN" $OUT/bench_spdnn.txt $OUT/bench_spdnn_big.txt | awk '{print $1, $2, $3}'
grep -hE "^ +65536" $OUT/infer_65536_*.txt
for f in $OUT/ncu_late_*.txt; do echo "== $f"; grep -E "gpu__time|dram__bytes|inst_executed.sum|per_cycle" $f | awk -F'","' '{print $(NF-2), $NF}'; done
tar czf $OUT_DEV/c2.tgz -C /tmp c2
