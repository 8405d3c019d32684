#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (~5 minutes): timing probes of late4's late layer against the
# tree's late4_tile.cuh (src/sparse/README.md "Late4"; bench/results/55126b7/probes/README.md says what each
# removes and why they are exact only on the challenge's all-1/16 weights). Never for use: they measure what a
# design change would save before it is built.
#
#   scripts/spdnn-late4-probes-gpu.sh OUTDIR [PROBE ...]     default probes: p4 (p1 p2 p3 ran in session 22)
#
# Beside the probes it always runs "chain": the tree's own build with spdnn_infer --order chain (tools/spdnn
# chain_order: consecutive list blocks share inputs, so an input row's second read follows its first by one block;
# exact by construction, a real option, not a probe), to see whether the late layer's DRAM traffic (197 MB at
# 55126b7, 157 MB of it features in and outputs out) falls and the layer with it.
#
# p4 (written in session 22, not yet run): the memory traffic of the staged path unchanged, the compute cut to one
# row's 4 chains (the challenge's 16 rows of a block are equal), so its time is the floor that the loads and stores
# of this design set. Each probe is PROBE_DIR/NAME.diff (PROBE_DIR default bench/results/55126b7/probes), a patch
# of src/sparse/late4_tile.cuh at 55126b7: it must apply to the tree's file. Steps: build spdnn_infer for the tree
# (base) and each probe, each library beside its binary (spdnn_infer links the shared libjhdnn: LD_LIBRARY_PATH
# picks it, RUNPATH yields to it; md5sums printed); ncu of launches 40-41 at N = 16384 L = 120 (late layers) with
# the DRAM read / write split; spdnn_infer N = 16384 L = 480 graph path, all builds in turn, twice; each probe at
# L = 120 with --validate yes (exact on the generated networks, or the probe's assumption broke).
set -uo pipefail
BUDGET_DEFAULT=420 UNSET_SWITCHES="JHDNN_SPDNN_TILE JHDNN_TEST_SPDNN_TILE JHDNN_TEST_REUSE_CASE" source "$(dirname "$0")/lib/gpu-script.sh" "$@"
shift
PROBES=${*:-p4}
PD=${PROBE_DIR:-bench/results/55126b7/probes}
F=src/sparse/late4_tile.cuh
scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data"
cp $F /tmp/late4_base.cuh
for v in base $PROBES; do
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
VS="base chain $PROBES"
bin() { [ "$1" = chain ] && echo base || echo "$1"; }  # chain runs the base build ...
args() { [ "$1" = chain ] && echo "--order chain"; }   # ... with --order chain
M="gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"
for v in $VS; do
  b=$(bin $v)
  [ -x /tmp/probes/$b/spdnn_infer ] || continue
  # shellcheck disable=SC2046  # args: one option and its value, or nothing
  LD_LIBRARY_PATH=/tmp/probes/$b JHDNN_SPDNN_TILE=late4 step ncu_$v 30 ncu --clock-control none --metrics "$M" --csv \
    -k regex:dnn_layer_cta_kernel --launch-skip 40 --launch-count 2 /tmp/probes/$b/spdnn_infer --width 16384 \
    --layers 120 --path graph --validate no --no-warmup $(args $v)
done
for rep in 1 2; do
  for v in $VS; do
    b=$(bin $v)
    [ -x /tmp/probes/$b/spdnn_infer ] || continue
    # shellcheck disable=SC2046
    LD_LIBRARY_PATH=/tmp/probes/$b step ab_${v}_$rep 30 /tmp/probes/$b/spdnn_infer --width 16384 --layers 480 --path graph \
      --validate no $(args $v)
  done
done
for v in chain $PROBES; do
  b=$(bin $v)
  [ -x /tmp/probes/$b/spdnn_infer ] || continue
  # shellcheck disable=SC2046
  LD_LIBRARY_PATH=/tmp/probes/$b step exact_$v 45 /tmp/probes/$b/spdnn_infer --width 16384 --layers 120,480 --path graph \
    --validate yes $(args $v)
done
step_summary
for f in "$OUT"/ab_*.txt "$OUT"/exact_*.txt; do
  [ -f "$f" ] && echo "$(basename "$f" .txt) $(grep -E '^ +[0-9]+ +[0-9]+ ' "$f" | awk '{print $2, $5, $10, $11}')"
done
for v in $VS; do
  [ -f "$OUT/ncu_$v.txt" ] && grep '^"' "$OUT/ncu_$v.txt" | grep -v '"ID"' |
    awk -F'","' -v v="$v" '{id=$1; gsub(/"/,"",id); x=$NF; gsub(/"/,"",x); print v, id, $(NF-2), x}' |
    sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//'
done
