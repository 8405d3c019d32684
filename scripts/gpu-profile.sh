#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-check.sh has built BUILD_DIR: Nsight Compute on the layers
# that separate jhDNN from cuDNN the most (bench/results/report.md), jhDNN's kernels and cuDNN's
# side by side in one process, with --clock-control none (the clocks the benchmarks run at).
#
#   scripts/gpu-profile.sh OUTDIR [CASE ...]
#
# A CASE is dt:layout:algo:problem-string, e.g. f16:nhwc:tensorcore_wgmma:mb32ic64ih56oc256oh56kh1.
# Each case runs `jhdnn-bench --mode=verify --cudnn=none` (cuDNN's heuristic-best algorithm computes
# the reference output, then the jhDNN solver runs once), so the report holds cuDNN's kernels and
# ours for the same problem. Writes OUTDIR/<n>.ncu-rep and OUTDIR/<n>.txt (ncu's details page).
# SPDNN=1 also profiles three late layers of the Sparse DNN inference (N = 1024, L = 120).
# NCU_SET (default "detailed") picks ncu's section set; NCU_TIMEOUT bounds each case (seconds).
set -uo pipefail
OUT=${1:?usage: gpu-profile.sh OUTDIR [CASE ...]}
shift
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/cuda/bin
B=${BUILD_DIR:-build-gpu}
BENCH="$B/tools/jhdnn-bench/jhdnn-bench"
[ -x "$BENCH" ] || { echo "no $BENCH: run scripts/gpu-check.sh first (it builds $B)"; exit 1; }
command -v ncu >/dev/null || { echo "ncu not found"; exit 1; }

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  cases=(
    "f16:nhwc:tensorcore_wgmma:mb32ic64ih56oc256oh56kh1"       # ResNet-50 1x1 64->256: 0.36x cuDNN (store-bound?)
    "f16:nhwc:tensorcore_wgmma:mb32ic512ih7oc512oh7kh3ph1"     # ResNet-50 conv5_x 3x3: 0.56x
    "f16:nhwc:tensorcore_wgmma:mb16ic256ih56oc256oh56kh3ph1"   # VGG-16 conv3_2: 0.80x
    "f32:nchw:implicit_precomp_gemm:mb32ic64ih56oc64oh56kh3ph1" # fp32 PRECOMP vs cuDNN's: 0.80x geomean
  )
fi

i=0
for c in "${cases[@]}"; do
  IFS=: read -r dt layout algo problem <<<"$c"
  i=$((i + 1))
  name="$i-$dt-$layout-$algo"
  echo "== $name $problem"
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --set "${NCU_SET:-detailed}" --launch-count 12 \
    -o "$OUT/$name" -f "$BENCH" --dt="$dt" --layout="$layout" --mode=verify --cudnn=none --algo="$algo" "$problem" \
    >"$OUT/$name.log" 2>&1
  echo "   exit $? ($(grep -c '==PROF==' "$OUT/$name.log") ncu lines)"
  ncu --import "$OUT/$name.ncu-rep" --page details >"$OUT/$name.txt" 2>&1
done

if [ "${SPDNN:-0}" = 1 ]; then
  echo "== spdnn late layers"
  scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || true
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --set "${NCU_SET:-detailed}" --launch-skip 100 --launch-count 3 \
    -o "$OUT/spdnn" -f "$B/examples/spdnn_infer" --width 1024 --layers 120 --path fused --validate no \
    >"$OUT/spdnn.log" 2>&1
  echo "   exit $?"
  ncu --import "$OUT/spdnn.ncu-rep" --page details >"$OUT/spdnn.txt" 2>&1
fi
