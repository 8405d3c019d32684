#!/usr/bin/env bash
# Session 15 call 3 on main (cta2 the default tile): build; the whole ctest; bench_sparse's SpDNN rows with the
# cuSPARSE pipeline; spdnn_infer over the widths; ncu of late layers (graph path) under cta2 and block at
# N = 1024 / 4096 (what bounds a late layer; why cta2's are faster). Guard 575 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/c3; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 575 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
BENCH=0 MEMCHECK=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=330 timeout 400 scripts/gpu-check.sh $O/check > $O/check.txt 2>&1
res+=("gpu-check: exit $? ($(( $(date +%s) - t0 )) s)")
head -9 $O/check/summary.md
NETS="1024:120,480,1920;4096:120,480,1920;16384:120"
step bench_spdnn 70 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|fused|cusparse)/' \
  --benchmark_out=$O/bench_sparse_spdnn.json --benchmark_out_format=json
step spdnn_infer 100 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $O/spdnn_infer.csv --active-csv $O/spdnn_active.csv
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size,dram__bytes.sum,lts__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active"
late() { local name=$1 w=$2 tile=$3 k=$4; step $name 40 env JHDNN_SPDNN_TILE=$tile ncu --clock-control none --metrics $M -k regex:"$k" \
  --launch-skip 40 --launch-count 4 --csv $SI --width $w --layers 120 --path graph --validate no --no-warmup; }
late ncu_late_1024_cta2 1024 cta2 dnn_layer_cta_kernel
late ncu_late_1024_block 1024 block dnn_layer_compact_kernel
late ncu_late_4096_cta2 4096 cta2 dnn_layer_cta_kernel
late ncu_late_4096_block 4096 block dnn_layer_compact_kernel
step ncuf_late_4096_cta2 60 ncu --clock-control none --set full -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 1 \
  $SI --width 4096 --layers 120 --path graph --validate no --no-warmup
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -E "^SpDNN" $O/bench_spdnn.txt | awk '{print $1, $2, $3}'
tar czf $OUT/c3.tgz -C /tmp c3
