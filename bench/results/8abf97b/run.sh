#!/usr/bin/env bash
# Session 14 final call on main (duo the default resident kernel, block the default tile): build; the
# whole ctest; bench_sparse's SpDNN rows with the cuSPARSE pipeline (defaults, then the resident rows
# with JHDNN_SPDNN_TILE=cta); spdnn_infer over the widths; the full bench_sparse; sanitizers. Guard 575 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/f1; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; BS=$B/bench/bench_sparse
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 575 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
BENCH=0 MEMCHECK=0 CTEST_ARGS="-j4" CTEST_TIMEOUT=250 timeout 330 scripts/gpu-check.sh $O/check > $O/check.txt 2>&1
res+=("gpu-check: exit $? ($(( $(date +%s) - t0 )) s)")
head -9 $O/check/summary.md
NETS="1024:120,480,1920;4096:120,480,1920;16384:120"
step bench_spdnn 90 $BS --spdnn "$NETS" --baseline "$NETS" --benchmark_filter='SpDNN/(resident|fused|cusparse)/' \
  --benchmark_out=$O/bench_sparse_spdnn.json --benchmark_out_format=json
step bench_spdnn_cta 40 env JHDNN_SPDNN_TILE=cta $BS --spdnn "1024:120,480,1920" --benchmark_filter='SpDNN/resident/' \
  --benchmark_out=$O/bench_sparse_spdnn_cta.json --benchmark_out_format=json
step spdnn_infer 150 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $O/spdnn_infer.csv --active-csv $O/spdnn_active.csv
step bench_sparse 130 $BS --benchmark_out=$O/bench_sparse.json --benchmark_out_format=json
step memcheck_resident 60 compute-sanitizer --tool memcheck --error-exitcode 99 $B/tests/test_sparse "resident layers: bitwise the fma chain and the fused path*"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -E "^SpDNN" $O/bench_spdnn.txt $O/bench_spdnn_cta.txt | awk '{print $1, $2, $3}'
tar czf $OUT/f1.tgz -C /tmp f1
