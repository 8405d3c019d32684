#!/usr/bin/env bash
# Session 15 call 4 on main (JHDNN_SPDNN_TILE=auto the default: cta2 up to 4096 rows, block above): build the
# sparse targets; the sparse / spdnn / config ctests; spdnn_infer A/B auto / cta2 / block at N = 16384 (where
# cta2 lost in call 3) and auto at N = 1024 / 4096 (auto must equal cta2 there), all exact. Guard 560 s.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL
O=/tmp/c4; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 560 - el ));
  if [ $left -lt 15 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout -k 5 $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc ($(( $(date +%s) - t0 )) s)"); tail -2 $O/$n.txt; }
scripts/fetch-spdnn-data.sh > $O/data.txt 2>&1
step build 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target spdnn_infer test_sparse test_config test_spdnn_cta_tile test_spdnn_reuse_tile"
step ctest_sparse 240 ctest --test-dir $B -R "sparse|spdnn|config|resident" -j4 --output-on-failure
g() { local name=$1 w=$2 L=$3 p=$4; shift 4; step $name 90 env "$@" $SI --width $w --layers $L --path $p --validate yes; }
g n16384_auto 16384 120,480 graph
g n16384_cta2 16384 120,480 graph JHDNN_SPDNN_TILE=cta2
g n16384_block 16384 120,480 graph JHDNN_SPDNN_TILE=block
g n16384_auto_2 16384 480 graph
g n4096_auto 4096 120,480 graph
g n1024_auto 1024 120,480 resident,graph
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
for f in $O/n*.txt; do echo "$(basename $f .txt): $(grep -E '^ +[0-9]+ +[0-9]+ ' $f | awk '{printf "L%s %s %s | ", $2, $5, $10" "$11}')"; done
tar czf $OUT/c4.tgz -C /tmp c4
