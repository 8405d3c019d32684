#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~4-6 minutes, a cold build included): where the resident late
# layers' time goes, for the next instruction cut there. The resident layers are ~34% of N = 1024 L = 120's loop
# (110 layers at ~4.3 us, bench/results/ec4fff9/warm/), the cell nearest 10x the cuSPARSE pipeline.
#   1. the device build's dnn_resident.cu.o, gzipped (`nvdisasm -g` of THIS object lines up with ncu's source page:
#      the device's host compiler differs from this machine's; scripts/spdnn-warm-gpu.sh says why);
#   2. ncu (warm: NCU_CACHE, default none here) of the first resident launch of N = 1024 L = 120 (vals4w8 since
#      session 33, duo before; layers 11 .. 106 in one launch) and of N = 4096 L = 120 (vals4w; WIDTHS="1024" skips
#      it): the details page and the per-instruction source page
#      (scripts/ncu-source-lines.py src_NAME.csv.gz --sass all.sass --kernel MANGLED_SUBSTR --ops: the executed
#      opcode mix per FFMA, by how often the code ran; all.sass = `nvdisasm -g` of the object's cubin, as its
#      results README says);
#   3. every launch's duration of the same runs, warm (ncu --cache-control none).
# LAYERS (default 120) and SKIP (default 0: the first vals4w launch) pick the launch: LAYERS=480 SKIP=1
# WIDTHS=4096 profiles N = 4096 L = 480's second resident call (372 layers since session 41), the one that runs
# vals4w's handed schedule.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-resident-profile-gpu.sh $OUT/p; mv $OUT/p/r.tgz $OUT/; rm -rf $OUT/p
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=400 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
export NCU_CACHE=${NCU_CACHE:-none}
build_step "$B" spdnn_infer
gzip -c "$B/src/CMakeFiles/jhdnn.dir/sparse/dnn_resident.cu.o" > "$OUT/dnn_resident.cu.o.gz"
WIDTHS=${WIDTHS:-1024 4096}
for w in $WIDTHS; do
  ncu_profile "resident_$w" dnn_resident_vals4w_kernel "${SKIP:-0}" --path resident --width "$w" --layers "${LAYERS:-120}"
done
for w in $WIDTHS; do
  step "launches_resident_$w" 60 ncu --clock-control none --cache-control none --csv --metrics gpu__time_duration.sum \
    "$SI" --path resident --width "$w" --layers "${LAYERS:-120}" --validate no --no-warmup
done
step_summary
ncu_details_summary
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
