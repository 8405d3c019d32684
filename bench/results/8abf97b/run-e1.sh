#!/usr/bin/env bash
# Session 14 call E1. (1) main 8abf97b (out/s14/main-src.tar.gz): the two ctests the final call's ctest
# timeout cut (spdnn_tile_list, spdnn_tile_cta). (2) wip-dense-tail (this tree): the graph path's dense tail
# (JHDNN_EXP_DENSE_FROM=K) with the block tile and with the CTA tile at any count (JHDNN_SPDNN_CTA_MIN_TILES=1).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_EXP_DENSE_FROM JHDNN_SPDNN_CTA_MIN_TILES
O=/tmp/e1; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 570 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
M=/tmp/mainsrc; mkdir -p $M && tar xzf out/s14/main-src.tar.gz -C $M && mkdir -p $M/data && cp -r data/spdnn $M/data/
step build_main 150 bash -c "cmake -S $M -B $M/b -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $M/b -j 16 --target test_sparse"
step build_exp 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer"
step ctest_main_tiles 200 ctest --test-dir $M/b -R "spdnn_tile_(list|cta)" -j2 --output-on-failure
g() { local name=$1 w=$2 L=$3; shift 3; step $name 80 env "$@" $SI --width $w --layers $L --path graph --validate yes; }
g n4096_block 4096 120,480 JHDNN_SPDNN_TILE=block
g n4096_block_d12 4096 120,480 JHDNN_SPDNN_TILE=block JHDNN_EXP_DENSE_FROM=12
g n4096_cta1_d12 4096 120,480 JHDNN_SPDNN_TILE=cta JHDNN_SPDNN_CTA_MIN_TILES=1 JHDNN_EXP_DENSE_FROM=12
g n4096_cta1_d8 4096 120,480 JHDNN_SPDNN_TILE=cta JHDNN_SPDNN_CTA_MIN_TILES=1 JHDNN_EXP_DENSE_FROM=8
g n1024_block 1024 120,480 JHDNN_SPDNN_TILE=block
g n1024_cta1_d11 1024 120,480 JHDNN_SPDNN_TILE=cta JHDNN_SPDNN_CTA_MIN_TILES=1 JHDNN_EXP_DENSE_FROM=11
g n16384_block 16384 120 JHDNN_SPDNN_TILE=block
g n16384_cta1_d14 16384 120 JHDNN_SPDNN_TILE=cta JHDNN_SPDNN_CTA_MIN_TILES=1 JHDNN_EXP_DENSE_FROM=14
step ncu_4096_cta1_d12 60 env JHDNN_SPDNN_TILE=cta JHDNN_SPDNN_CTA_MIN_TILES=1 JHDNN_EXP_DENSE_FROM=12 ncu --clock-control none \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size \
  -k regex:"dnn_layer_cta_kernel" --launch-skip 10 --launch-count 4 $SI --width 4096 --layers 120 --path graph --validate no --no-warmup
step ncu_4096_block 60 env JHDNN_SPDNN_TILE=block ncu --clock-control none \
  --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,launch__grid_size \
  -k regex:"dnn_layer_compact_kernel" --launch-skip 20 --launch-count 2 $SI --width 4096 --layers 120 --path graph --validate no --no-warmup
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
for f in $O/n*.txt; do echo "$(basename $f .txt): $(grep -E '^ +[0-9]' $f | awk '{printf "L%s %s %s | ", $2, $5, $10" "$11}')"; done
grep -E "Duration|inst_executed|duration" $O/ncu_*.txt | head -20
tar czf $OUT/e1.tgz -C /tmp e1
