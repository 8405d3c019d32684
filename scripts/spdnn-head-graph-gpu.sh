#!/usr/bin/env bash
# On the GPU machine, ONE call (~3 minutes with a cold build): the resident path's head graph (session 44,
# spdnn_gpu.h DriverOptions::head_graph_layers) against host launches of every head layer (--head-graph 0), on one
# build: every test case of spdnn's inference (test_sparse's "inference*" and "resident path*"), then spdnn_infer alternating the values of GRAPHS (default "0 -1": none,
# the default) REPS times (default 3) for each width:layers item of SPECS (default 1024:120,480 4096:120,480), and
# the default exact (--validate yes) at N = 1024 / 4096 L = 120; ENVS (below) adds runs under environment settings.
#   JHDNN_COMMIT=<sha> bash scripts/spdnn-head-graph-gpu.sh $OUT/g; mv $OUT/g/r.tgz $OUT/; rm -rf $OUT/g
#   (carry data/spdnn's four files)
set -uo pipefail
FETCH_SPDNN=1 BUDGET_DEFAULT=560 source "$(dirname "$0")/lib/gpu-script.sh" "$@"
build_step "$B" spdnn_infer test_sparse
# every test case that runs spdnn's inference (the head graph where the resident path's threshold is automatic)
step tests 300 "$T/test_sparse" "inference*,resident path*"
for rep in $(seq "${REPS:-3}"); do
  for spec in ${SPECS:-1024:120,480 4096:120,480}; do
    IFS=: read -r w l <<< "$spec"
    for g in ${GRAPHS:-0 -1}; do
      step "ab_${rep}_${w}_g$g" 60 "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers "$l" \
        --validate no --head-graph "$g"
    done
  done
done
# ENVS: "NAME=VAR=VALUE ..." more runs of N = 4096 L = 120 with and without the graph under each setting
for e in ${ENVS:-}; do
  for g in 0 -1; do
    step "env_${e%%=*}_g$g" 60 env "${e#*=}" "$SI" --data "$PWD/data/spdnn" --path resident --width 4096 --layers 120 \
      --validate no --head-graph "$g"
  done
done
for w in 1024 4096; do
  step "exact_$w" 90 "$SI" --data "$PWD/data/spdnn" --path resident --width "$w" --layers 120 --validate yes
done
step_summary
grep -E "passed|failed|FAILED" "$OUT/tests.txt" | tail -4
infer_rows "$OUT"/ab_*.txt "$OUT"/env_*.txt "$OUT"/exact_*.txt | tee "$OUT/rows.txt"
grep -H "API host" "$OUT"/exact_*.txt "$OUT"/env_*.txt | sed 's/: path.*API host time/: API/' | cut -c1-300
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
