#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~6 minutes): late4's late layer at N = 16384 under builds of
# src/sparse/late4_tile.cuh patched by PROBE_DIR/NAME.diff (PROBE_DIR default bench/results/55126b7/probes; each a
# patch of the file at 55126b7, which must apply to the tree's) and row orders of spdnn_infer (--order sorted |
# chain), against the tree's build with the sorted order. bench/results/55126b7/probes/README.md says what each
# build is; p1-p4 are timing probes (exact only on the challenge's all-1/16 weights, never for use), p5 is a real
# candidate (exact on any network).
#
#   scripts/spdnn-late4-probes-gpu.sh OUTDIR [BUILD:ORDER ...]
#       default: base:chain p4:chain base:sorted     (base: the tree's file unpatched; session 22-23's default was
#       base:sorted base:chain p5:sorted p5:chain p4:sorted, run in session 23: 55126b7/probes/s23/)
# OUTDIR/r.tgz holds every output. The device tool returns at most 8 files (session 23's first run lost most of
# its own), so call it as: bash scripts/spdnn-late4-probes-gpu.sh $OUT/p; mv $OUT/p/r.tgz $OUT/; rm -rf $OUT/p
# Since 040f24d late4's warps are strided on main (p5 made the kernel's): p5.diff no longer applies to the tree;
# p4.diff still does (checked at a4c7107 with patch --dry-run): p4:chain is the memory floor of today's design.
#
# Predicted (session 22, tools/spdnn spdnn_l2_model with its L2 at 44-46 MiB, where it gives the measured 197 MB for
# base:sorted; not measured): DRAM MB per late layer base:chain 199-221 (no gain), p5:sorted ~182, p5:chain ~158;
# if the layer's time follows its DRAM bytes, p5:chain ~20% faster. p4 (the loads and stores alone) near base's time.
# Steps: build spdnn_infer per build, each library beside its binary (spdnn_infer links the shared libjhdnn:
# LD_LIBRARY_PATH picks it, RUNPATH yields to it; md5sums printed); ncu of launches 40-41 at N = 16384 L = 120 (late
# layers) with the DRAM read / write split, per combination; spdnn_infer N = 16384 L = 480 graph path, all
# combinations in turn, twice; every combination other than base:sorted with --validate yes (L = 120 / 480; p4 at
# L = 120 only).
set -uo pipefail
BUDGET_DEFAULT=540 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
shift
COMBOS=${*:-base:chain p4:chain base:sorted}
PD=${PROBE_DIR:-bench/results/55126b7/probes}
F=src/sparse/late4_tile.cuh
scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data"
BUILDS=$(for c in $COMBOS; do echo "${c%%:*}"; done | awk '!seen[$0]++')
cp $F /tmp/late4_base.cuh
for v in $BUILDS; do
  cp /tmp/late4_base.cuh $F
  if [ "$v" != base ] && ! patch -s $F < "$PD/$v.diff"; then
    echo "$v.diff does not apply to the tree's $F"
    continue
  fi
  step build_$v 150 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j $(nproc) --target spdnn_infer"
  mkdir -p /tmp/probes/$v && cp -P $B/src/libjhdnn.so* $B/examples/spdnn_infer /tmp/probes/$v/
done
cp /tmp/late4_base.cuh $F
md5sum /tmp/probes/*/libjhdnn.so.0.1.0 | tee "$OUT/md5.txt"
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"
# prog NAME BUILD:ORDER SECONDS [ncu] ARGS...: spdnn_infer of that build with that row order (under ncu --metrics M
# when the 4th word is ncu), N = 16384, graph path, then ARGS
prog() {
  local name=$1 b=${2%%:*} o=${2##*:} t=$3
  shift 3
  local pre=()
  if [ "${1:-}" = ncu ]; then
    pre=(ncu --clock-control none --metrics "$M" --csv -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 2)
    shift
  fi
  [ -x /tmp/probes/$b/spdnn_infer ] || return 0
  LD_LIBRARY_PATH=/tmp/probes/$b JHDNN_SPDNN_TILE=late4 step "$name" "$t" "${pre[@]}" /tmp/probes/$b/spdnn_infer \
    --width 16384 --order "$o" --path graph "$@"
}
for c in $COMBOS; do prog "ncu_${c/:/_}" "$c" 30 ncu --layers 120 --validate no --no-warmup; done
for rep in 1 2; do
  for c in $COMBOS; do prog "ab_${c/:/_}_$rep" "$c" 30 --layers 480 --validate no; done
done
for c in $COMBOS; do
  [ "$c" = base:sorted ] && continue
  case $c in p4:*) layers=120 ;; *) layers=120,480 ;; esac
  prog "exact_${c/:/_}" "$c" 60 --layers $layers --validate yes
done
step_summary
for f in "$OUT"/ab_*.txt "$OUT"/exact_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $2, $5, $10, $11}' | tr '\n' ' ')"
done
for c in $COMBOS; do
  f=$OUT/ncu_${c/:/_}.txt
  [ -f "$f" ] && grep '^"' "$f" | grep -v '"ID"' |
    awk -F'","' -v v="$c" '{id=$1; gsub(/"/,"",id); x=$NF; gsub(/"/,"",x); print v, id, $(NF-2), x}' |
    sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
tar czf /tmp/r.tgz -C "$OUT" . && mv /tmp/r.tgz "$OUT/r.tgz"
