#!/usr/bin/env bash
# Session 12 call on trial-s12d (main + wip-list-tile + wip-resident-wide: pair resident default):
# build; sparse / config / api ctests; A/B list vs block tile (resident path = pair, and graph), N = 1024
# and 4096; the faster tile at N = 1024 L = 120 (resident) is then exported for bench_sparse (every
# SpDNN row + SpMM + dense-to-CSR + cuSPARSE pipeline) and spdnn_infer over the widths; ncu per-layer
# of list; memcheck of the reuse-tile case under list; ResNet-50 tensor-core suite if time is left.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
O=/tmp/f3; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; T=$B/tests; J=$B/tools/jhdnn-bench/jhdnn-bench
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 545 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j16; } > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
scripts/fetch-spdnn-data.sh > /dev/null 2>&1
st built
step ctest 170 ctest --test-dir $B -j6 --output-on-failure --timeout 160 -R "sparse|resident|spdnn|reuse|SpMM|CSR|fused|config|api|bad input|list"
for t in list block; do
  JHDNN_SPDNN_TILE=$t step sp1024_$t 60 $SI --width 1024 --layers 120,480,1920 --path resident,graph --validate yes --csv $O/sp1024_$t.csv
  JHDNN_SPDNN_TILE=$t step sp4096_$t 45 $SI --width 4096 --layers 120,480 --path graph --validate yes --csv $O/sp4096_$t.csv
done
# The faster tile at N = 1024 L = 120 on the resident path (first data row of each csv).
tl=$(python3 - "$O" <<'PY'
import csv, sys
best = None
for t in ("list", "block"):
    try:
        rows = list(csv.DictReader(open(f"{sys.argv[1]}/sp1024_{t}.csv")))
        ms = float(rows[0]["loop_ms"])
        if best is None or ms < best[1]: best = (t, ms)
    except Exception: pass
print(best[0] if best else "block")
PY
)
echo "tile for the benches: $tl" | tee $O/tile.txt
export JHDNN_SPDNN_TILE=$tl
step bench_sparse 200 $B/bench/bench_sparse --benchmark_out=$O/bench_sparse.json --benchmark_out_format=json
step spdnn_infer 60 $SI --width 1024,4096,16384 --layers 120,480 --validate yes --csv $O/spdnn_infer.csv --active-csv $O/spdnn_active.csv
unset JHDNN_SPDNN_TILE
JHDNN_SPDNN_TILE=list step ncut_list 30 ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active \
  -k regex:dnn_layer_compact_kernel --launch-skip 0 --launch-count 12 --csv --print-units base $SI --width 1024 --layers 120 --path graph --validate no --no-warmup
step memcheck_list 60 env JHDNN_SPDNN_TILE=list compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_sparse "fused and multi-layer paths: the width-32 reuse tile is bitwise the fma chain"
step rn50 80 $J --suite=resnet50 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv=$O/resnet50-tc.csv
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -E "tests passed|\*\*\*Failed|Failed" $O/ctest.txt | head
for f in $O/sp1024_*.txt $O/sp4096_*.txt; do echo "$f"; grep -E "^ +[0-9]|DIFFERS" $f; done
grep -E "^SpDNN" $O/bench_sparse.txt | awk '{print $1, $2, $3}'
tar czf $OUT/f3.tgz -C /tmp f3
