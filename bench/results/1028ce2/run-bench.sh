#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin
B=build-gpu; J=$B/tools/jhdnn-bench/jhdnn-bench; O=$OUT
cmake --build $B -j16 >/dev/null 2>&1 || { echo build failed; exit 1; }
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
st rn50; timeout 100 $J --suite=resnet50 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv=$O/rn50_tc.csv > $O/rn50_tc.txt 2>&1; echo exit $?
st staged; JHDNN_TC_EPILOGUE=staged timeout 40 $J --suite=resnet50 --cfg=f16:nhwc,bf16:nhwc --algo=tensorcore_wgmma --cudnn=none --csv=$O/rn50_tc_staged.csv > $O/rn50_tc_staged.txt 2>&1; echo exit $?
st vgg; timeout 100 $J --suite=vgg16 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv=$O/vgg_tc.csv > $O/vgg_tc.txt 2>&1; echo exit $?
st mobilenet; timeout 80 $J --suite=mobilenet --cfg=f16:nhwc,bf16:nhwc,f32:nchw --algo=depthwise,direct_tiled --cudnn=all --csv=$O/mobilenet.csv > $O/mobilenet.txt 2>&1; echo exit $?
st bench_tc; timeout 90 $B/bench/bench_tensorcore --benchmark_filter='conv/rn50_(conv1_7x7s2|c2_1x1_64_256|c3_1x1_128_512|c4_1x1_256_1024|c5_1x1_2048_512|c5_3x3_512)/f16_nhwc/|conv/vgg16_conv1_1/f16_nhwc/' > $O/bench_tc.txt 2>&1; echo exit $?
st fail-detail
timeout 40 $B/tests/test_conv_depthwise 2>&1 | tail -60 > $O/dw_fail.txt
ls $B/tests | head -50 > $O/tests_list.txt
timeout 60 $B/tests/test_conv_implicit_gemm "alpha and beta" 2>&1 | tail -60 > $O/igemm_fail.txt
st done
for f in $O/rn50_tc.csv $O/vgg_tc.csv $O/mobilenet.csv; do python3 scripts/conv-geomean.py $f | grep -i geomean; done
