#!/usr/bin/env bash
# On the GPU machine, ONE call (~1 minute warm): the host time of a stream-ordered pool's first allocations right
# after a CUDA graph, spinning kernels or nothing ran on the stream, with the pool primed (an allocation and free of
# PRIME bytes on a private stream, synchronized, when it is created) or not (tools/spdnn/spdnn_pool_probe.cu). One
# process per measurement, REPS (default 3) per setting. Then spdnn_infer without its warm-up at N = 4096 L = 120,
# with and without the head graph, for the '#' line's first resident call (the handed schedule's first allocation).
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-pool-probe-gpu.sh $OUT/p; mv $OUT/p/r.tgz $OUT/; rm -rf $OUT/p
# (carry data/spdnn for the spdnn_infer runs)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=240 source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_pool_probe spdnn_infer
P=$B/tools/spdnn/spdnn_pool_probe
for rep in $(seq "${REPS:-3}"); do
  for before in none kernels graph; do
    for prime in ${PRIMES:-0 2097152 67108864}; do
      step "probe_${before}_${prime}_$rep" 20 "$P" --before "$before" --prime "$prime"
    done
  done
done
for rep in 1 2; do
  for g in -1 0; do
    step "nowarm_4096_g${g}_$rep" 60 "$SI" --data "$PWD/data/spdnn" --path resident --width 4096 --layers 120 \
      --validate no --no-warmup --head-graph "$g"
  done
done
step_summary
grep -h "alloc_us" "$OUT"/probe_*.txt | sort | tee "$OUT/probe_rows.txt"
grep -ho "first resident call [0-9.]* ms" "$OUT"/nowarm_*.txt | paste -sd' '
infer_rows "$OUT"/nowarm_*.txt
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
