#!/usr/bin/env bash
# Session 12 call 2 on trial-s12b 3f71f09: (a) spdnn_infer resident(bulk)+graph with both tiles,
# N = 1024 L = 120/480/1920, N = 4096 L = 120/480; (b) ncu per-layer durations of the graph path,
# both tiles, N = 1024 / 4096 (--no-warmup, first 40 layer launches); (c) ncu full set of layers 1-2
# at N = 4096 and layer 1 at N = 1024, both tiles; (d) racecheck of the bm64 deep configuration.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=3f71f09
O=/tmp/c2; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer; T=$B/tests
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 540 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j16; } > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
scripts/fetch-spdnn-data.sh > /dev/null 2>&1
st built
export JHDNN_RESIDENT_KERNEL=bulk
for tile in single block; do
  export JHDNN_SPDNN_TILE=$tile
  step res1024_$tile 90 $SI --width 1024 --layers 120,480,1920 --path resident,graph --validate yes --csv $O/res1024_$tile.csv
  step res4096_$tile 90 $SI --width 4096 --layers 120,480 --path resident,graph --validate yes --csv $O/res4096_$tile.csv
done
unset JHDNN_RESIDENT_KERNEL
for w in 1024 4096; do for tile in single block; do
  JHDNN_SPDNN_TILE=$tile step ncut_${w}_$tile 60 ncu --clock-control none --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active \
    -k regex:dnn_layer_compact_kernel --launch-skip 0 --launch-count 40 --csv --print-units base \
    $SI --width $w --layers 120 --validate no --no-warmup
done; done
for w in 4096 1024; do for tile in single block; do
  cnt=2; [ $w = 1024 ] && cnt=1
  JHDNN_SPDNN_TILE=$tile step ncuf_${w}_$tile 70 ncu --clock-control none --set full -k regex:dnn_layer_compact_kernel \
    --launch-skip 0 --launch-count $cnt --export $O/ncuf_${w}_$tile --force-overwrite $SI --width $w --layers 120 --validate no --no-warmup
  [ -f $O/ncuf_${w}_$tile.ncu-rep ] && ncu --import $O/ncuf_${w}_$tile.ncu-rep --page details > $O/ncuf_${w}_$tile.details.txt 2>&1
  rm -f $O/ncuf_${w}_$tile.ncu-rep
done; done
step racecheck_deep 150 compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_conv_tensorcore "tensorcore: 64-pixel tiles on ResNet-50 conv5 7x7 (batch 32)"
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
grep -h -v "^#" $O/res*.txt | grep -E "^ +[0-9]" 
tar czf $OUT/c2.tgz -C /tmp c2
