#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin JHDNN_COMMIT=375877d
B=build-gpu; J=$B/tools/jhdnn-bench/jhdnn-bench; O=/tmp/r20; mkdir -p $O
cmake --build $B -j16 >/dev/null 2>&1 || { echo build failed; exit 1; }
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
st default; timeout 300 $J --csv=$O/bench.csv > $O/compare.txt 2>&1; echo "jhdnn-bench exit $?" | tee -a $O/compare.txt; tail -2 $O/compare.txt
st rn50; timeout 60 $J --suite=resnet50 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv=$O/resnet50-tc.csv > $O/rn50.txt 2>&1; echo exit $?
st vgg; timeout 60 $J --suite=vgg16 --cfg=f16:nhwc,bf16:nhwc,tf32:nhwc --algo=tensorcore_wgmma,tensorcore_wgmma_smallc --cudnn=all --csv=$O/vgg16-tc.csv > $O/vgg.txt 2>&1; echo exit $?
st ncu-dw
timeout 60 ncu --clock-control none --set full -k regex:dw_nhwc -c 1 $J --suite=mobilenet --filter=dw32_112 --cfg=f16:nhwc --algo=depthwise --cudnn=none --mode=verify > $O/ncu_dw32.txt 2>&1; echo ncu exit $?
st done
for f in $O/resnet50-tc.csv $O/vgg16-tc.csv; do python3 scripts/conv-geomean.py $f | grep geomean; done
tar czf $OUT/r20.tgz -C /tmp r20
