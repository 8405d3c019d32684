#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~2-3 minutes with a cold build): the first layer computed from the
# sparse images (tools/spdnn/spdnn_scatter_probe.cu, session 48) against the library's fused layer 1 on the dense
# feature map (spdnn_infer --layers 1, the same images). For each width of WIDTHS (default "1024 4096 16384"), the
# probe at each tile:warps of its CONFIGS_<width> (defaults below), every one checked bit for bit against the fp32
# CPU chain, then spdnn_infer --layers 1 twice. PROBE=blockell runs tools/spdnn/spdnn_blockell_probe.cu instead (the
# layer as block-ELL on bf16 tensor cores, session 48), once per width on the real data and once at N = 1024 with
# random values (--random 1), each compared with the chain, with three bf16 pieces per feature and with one
# (--pieces); LAYERS (default "1 3") the layers it runs, 3 being the
# first gathered one at N = 1024 (39300 of 60000 columns). PROBE=tchead runs tools/spdnn/spdnn_tchead_probe.cu (the
# first K layers with the features in shared memory, session 49) at N = 1024 only, each --variant of VARIANTS
# (default "1"; 2 was measured slower at 4804b3e; 3-5 also run variant 1 and compare bit for bit; 16 warps):
# --random 1 at K = 1 and 2, then the real data at each K
# of HEADS (default "1 5 12") with each piece count of PIECES (default "3 1"); then spdnn_infer --layers <HEADS,
# commas> twice.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-scatter-probe-gpu.sh $OUT/s; mv $OUT/s/r.tgz $OUT/; rm -rf $OUT/s
# (carry data/spdnn)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=540 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_RESIDENT_BLOCKS" \
  source "$(dirname "$0")/lib/gpu-script.sh" "$@"
PROBE=${PROBE:-scatter}
build_step "$B" "spdnn_${PROBE}_probe" spdnn_infer
P=$B/tools/spdnn/spdnn_${PROBE}_probe
CONFIGS_1024=${CONFIGS_1024:-"16:8 16:16 32:8 32:16 8:8"}
CONFIGS_4096=${CONFIGS_4096:-"4:4 4:8 8:8 2:4"}
CONFIGS_16384=${CONFIGS_16384:-"1:4 2:4"}
if [ "$PROBE" = tchead ]; then
  for v in ${VARIANTS:-1}; do
    for k in 1 2; do
      step "t_v${v}_k${k}_random" 60 "$P" --variant "$v" --warps 16 --layers "$k" --images 2400 --random 1 --reps 3
    done
  done
  for k in ${HEADS:-1 5 12}; do
    for v in ${VARIANTS:-1}; do
      for pc in ${PIECES:-3 1}; do
        step "t_v${v}_k${k}_p$pc" 90 "$P" --variant "$v" --warps 16 --layers "$k" --pieces "$pc"
      done
    done
  done
  HEAD_LAYERS=$(echo "${HEADS:-1 5 12}" | tr ' ' ',')
  for rep in 1 2; do step "l_1024_$rep" 90 "$SI" --width 1024 --layers "$HEAD_LAYERS" --validate no; done
  WIDTHS=none
fi
for w in ${WIDTHS:-1024 4096 16384}; do
  [ "$w" = none ] && break
  if [ "$PROBE" = blockell ]; then
    # --random first (random bf16 weights and fp32 values: what catches a fragment mistake), then the real data
    if [ "$w" = 1024 ]; then
      for l in 1 3; do
        step "b${w}_l${l}_random" 60 "$P" --width "$w" --layer "$l" --images 2400 --random 1 --reps 3
      done
    fi
    for l in ${LAYERS:-1 3}; do
      for pc in 3 1; do step "b${w}_l${l}_p$pc" 150 "$P" --width "$w" --layer "$l" --pieces "$pc"; done
    done
  else
    v="CONFIGS_$w"
    for c in ${!v:-}; do
      step "p${w}_t${c%%:*}_w${c#*:}" 60 "$P" --width "$w" --tile "${c%%:*}" --warps "${c#*:}"
    done
  fi
  for rep in 1 2; do  # (blockell: layers 1, 2, 3 timed alone, for the fused call's time per layer by increments)
    step "l1_${w}_$rep" 60 "$SI" --width "$w" --layers "$([ "$PROBE" = blockell ] && echo 1,2,3 || echo 1)" \
      --validate no
  done
done
step_summary
grep -hE "^(width|variant)" "$OUT"/[pbt]*.txt
grep -hE '^ +[0-9]+ +[0-9]+ ' "$OUT"/l*_*.txt | awk '{print "spdnn_infer layers 1 ..", $2, "at", $1":", $5, "ms"}'
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
