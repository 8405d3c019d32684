#!/usr/bin/env bash
export PATH=$PATH:/usr/local/cuda/bin
O=/tmp/r22; mkdir -p $O; B=build-gpu; SI=$B/examples/spdnn_infer
t0=$(date +%s); st() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
{ cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j16 --target spdnn_infer; } > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
scripts/fetch-spdnn-data.sh > /dev/null 2>&1
st ncu-resident
timeout 100 ncu --clock-control none --set full -k regex:dnn_resident -c 1 $SI --width 1024 --layers 120 --path resident --validate no > $O/ncu_resident.txt 2>&1; echo exit $?
st ncu-graph-crowded
timeout 80 ncu --clock-control none --set full -k regex:dnn_layer_compact -c 1 $SI --width 1024 --layers 120 --path graph --validate no > $O/ncu_graph_l1.txt 2>&1; echo exit $?
st ncu-graph-late
timeout 80 ncu --clock-control none --set full -k regex:dnn_layer_compact --launch-skip 60 -c 1 $SI --width 1024 --layers 120 --path graph --validate no > $O/ncu_graph_l61.txt 2>&1; echo exit $?
st done
for f in $O/ncu_*.txt; do echo "## $f"; grep -E "dnn_|Duration|Registers Per|Achieved Occupancy|L2 Cache Throughput|DRAM Throughput|Compute \(SM\)|Issued Ipc|No Eligible|Grid Size" $f | head -14; done
tar czf $OUT/r22.tgz -C /tmp r22
