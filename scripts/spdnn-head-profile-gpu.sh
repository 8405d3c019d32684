#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2 minutes, a cold build included): where the crowded head layers'
# time goes. At N = 1024 / 4096 L = 120 the head (the per-layer fused launches before the resident call) is ~2/3 of
# the loop (bench/results/ec5fb73/resident-profile/launches_*), layers 1-3 the most of it; session 31 asked whether
# DRAM or issue limits them (src/sparse/README.md, "Session 31").
#   1. the device build's dnn_layer.cu.o, gzipped (`nvdisasm -g` of THIS object lines up with ncu's source page;
#      scripts/spdnn-warm-gpu.sh says why);
#   2. ncu (warm: NCU_CACHE, default none here) of layer 1 (the first dnn_layer_cta_kernel launch of a --no-warmup
#      run) and of layer 3 (the third: the first layer that gathers scattered columns) at N = 1024 and 4096: the
#      details page (DRAM throughput, IPC, stall reasons) and the per-instruction source page
#      (scripts/ncu-source-lines.py src_NAME.csv.gz --sass all.sass --kernel dnn_layer_cta_kernelILi3ELi3E --ops).
#   [HEAD_LAYERS="1024:9 4096:10"] JHDNN_COMMIT=<sha> bash scripts/spdnn-head-profile-gpu.sh $OUT/h; mv $OUT/h/r.tgz $OUT/;
#   rm -rf $OUT/h
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=300 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
export NCU_CACHE=${NCU_CACHE:-none}
build_step "$B" spdnn_infer
gzip -c "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o" > "$OUT/dnn_layer.cu.o.gz"
# HEAD_LAYERS: width:layer items (default layers 1 and 3 at both widths; session 43 profiled the small layers, e.g.
# "1024:9 4096:10")
for item in ${HEAD_LAYERS:-1024:1 1024:3 4096:1 4096:3}; do
  w=${item%%:*} l=${item#*:}
  ncu_profile "head_${w}_l$l" dnn_layer_cta_kernel $((l - 1)) --path resident --width "$w" --layers 120
done
step_summary
ncu_details_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
