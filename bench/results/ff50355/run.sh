#!/usr/bin/env bash
# Session 11 final call on trial-s11 (main + wip-dw-occupancy + wip-spdnn-resident).
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:-ff50355}
O=/tmp/r21; mkdir -p $O; B=build-gpu; J=$B/tools/jhdnn-bench/jhdnn-bench; T=$B/tests
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
declare -a res; step() { local n=$1 t=$2; shift 2; local el=$(( $(date +%s) - t0 )); local left=$(( 530 - el ));
  if [ $left -lt 10 ]; then res+=("$n: skipped (time)"); return; fi; [ $t -gt $left ] && t=$left
  st $n; timeout $t "$@" > $O/$n.txt 2>&1; local rc=$?; res+=("$n: exit $rc"); tail -2 $O/$n.txt; }
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j16; } > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
scripts/fetch-spdnn-data.sh > /dev/null 2>&1
st built
step ctest 150 ctest --test-dir $B -j4 --output-on-failure --timeout 140 -R "depthwise|sparse|resident|SpMM|dense to CSR|fused layer|api|bad input"
step memcheck_tc 60 compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_conv_tensorcore "[alpha_beta],[bm64]"
step racecheck_tc 70 compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_conv_tensorcore "[smallc],[alpha_beta],[bm64]"
step memcheck_dw 40 compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_conv_depthwise "[corners]"
step racecheck_dw 40 compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_conv_depthwise "[corners]"
step memcheck_res 70 compute-sanitizer --tool memcheck --error-exitcode 99 $T/test_sparse "resident layers: bitwise the fma chain and the fused path, every slice size"
step racecheck_res 70 compute-sanitizer --tool racecheck --error-exitcode 99 $T/test_sparse "resident layers: bitwise the fma chain and the fused path, every slice size"
step mobilenet 40 $J --suite=mobilenet --cfg=f16:nhwc,bf16:nhwc,f32:nchw --algo=depthwise --cudnn=all --csv=$O/mobilenet.csv
step eager 40 $J --dt=f16 --layout=nhwc --algo=tensorcore_wgmma --cudnn=all --csv=$O/eager.csv 'mb1ic256ih14oc256oh14kh3ph1n"b1_3x3_256"' 'mb1ic1024ih14oc256oh14kh1ph0n"b1_1x1_1024_256"' 'mb1ic256ih14oc1024oh14kh1ph0n"b1_1x1_256_1024"'
step gemm 60 $B/bench/bench_gemm_hopper --benchmark_filter='8192.*(hopper|wgmma|api|cublas)'
step sp1024 90 $B/examples/spdnn_infer --width 1024 --layers 120,480,1920 --path resident,graph --validate yes --csv $O/spdnn_resident_1024.csv
step sp4096 40 $B/examples/spdnn_infer --width 4096 --layers 120 --path resident,graph --resident-below 1056 --validate no --csv $O/spdnn_resident_4096.csv
step ncu_c5 45 ncu --clock-control none --set full -k regex:conv_wgmma -c 1 $J --suite=resnet50 --filter=c5_1x1_2048_512 --cfg=f16:nhwc --algo=tensorcore_wgmma --cudnn=none --mode=verify
st done
printf '%s\n' "${res[@]}" | tee $O/summary.txt
python3 scripts/conv-geomean.py $O/mobilenet.csv | grep -i geomean
tar czf $OUT/r21.tgz -C /tmp r21
