#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2.5 minutes, a cold build included): the no-code check of the
# image-major slice design (docs/perf-notes.md, session 45). --resident-below 100000 with chunks of one layer makes
# every layer a one-layer resident call from layer 1 (a 4-image slice per CTA at N = 4096, 8 at N = 1024); the
# increments of loop_ms over --layers 1,2,...,12 give each layer's time on the resident kernel. Layer 1's increment,
# divided by 60000, is the slice kernel's rate per image on contiguous columns, one layer per launch: the rate the
# design needs near ~12 ns at N = 4096 (~3 ns at N = 1024). Against it: the same layers on the default head
# (--head-graph 0, and the default graph of layers 1-5), and the resident path from layer 1 with the default chunks.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-slice-check-gpu.sh $OUT/s; mv $OUT/s/r.tgz $OUT/; rm -rf $OUT/s
# (carry data/spdnn)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=330 UNSET_SWITCHES="JHDNN_SPDNN_TILE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer
L=1,2,3,4,5,6,8,10,12
R1=(--validate no --path resident --resident-below 100000 --resident-first-chunk 1 --resident-max-chunk 1 --head-graph 0)
for rep in 1 2; do
  for w in 1024 4096; do
    step "s${w}_head0_$rep" 40 "$SI" --width "$w" --layers "$L" --validate no --head-graph 0
    step "s${w}_res1_$rep" 60 "$SI" --width "$w" --layers "$L" "${R1[@]}"
    # one CTA per slice (no handed schedule, no pool allocation): the kernel alone
    JHDNN_RESIDENT_BLOCKS=0 step "s${w}_res1b0_$rep" 60 "$SI" --width "$w" --layers "$L" "${R1[@]}"
    [ "$rep" = 2 ] || continue
    step "s${w}_resall_$rep" 60 "$SI" --width "$w" --layers "$L" --validate no --path resident \
      --resident-below 100000 --head-graph 0
  done
done
# Where a one-layer slice's time goes: the resident trace of layer 1 (60000 images) and of layers 1-3 one call each.
for w in 1024 4096; do
  JHDNN_RESIDENT_BLOCKS=0 step "t${w}" 60 "$SI" --width "$w" --layers 3 "${R1[@]}" --resident-trace "$OUT/trace_$w.csv"
  python3 scripts/spdnn-resident-trace.py "$OUT/trace_$w.csv" > "$OUT/trace_$w.txt" 2>&1
  gzip -f "$OUT/trace_$w.csv"
done
step_summary
infer_rows "$OUT"/s*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
