#!/usr/bin/env bash
# Structural checks of sparse kernels' SASS in the built library (ctest entry sass_check_sparse; exit 77 = skipped
# where no cuobjdump is found: set CUOBJDUMP, or have the CUDA toolkit's /usr/local/cuda/bin/cuobjdump; on a machine
# without one, scripts/fetch-sass-tools.sh unpacks NVIDIA's cuobjdump wheel and prints its folder).
#   scripts/sass-check-sparse.sh build/src/libjhdnn.so
# Why (session 34): two properties of these kernels hold only as long as ptxas keeps compiling them as measured.
# - Every row computed. Where rows share their indices and weights, the kernels load the weights once and start
#   each row's chain from zeros ptxas cannot see through. With a literal 0.0f ptxas computes equal rows once
#   (the equal-row reduction, docs/sparse.md: not the default's). The FFMA counts below are those of every row
#   computed; a drop means ptxas merged rows.
# - vals4w's feature loads address the buffer as [R + UR + imm], with no address instruction. 58bafbf lost that
#   form with a change elsewhere in the loop (32 IADD3 a warp-chunk more, unnoticed until session 34).
# - The tensor-core resident kernels' conditional stores stay predicated. ptxas turned them into branch regions
#   (BSSY / BRA / BSYNC around each store) three times in sessions 53-54 after changes elsewhere in the kernel, each
#   time +30 to +150 M warp instructions for the N = 4096 head (59d91a8, 0e8dec6, 432d1a4). Their BSSY count may
#   fall, not rise; their MMAs must all be there (16 a layer and piece).
# The counts are ptxas 13.0's for sm_90a. A kernel change that moves them on purpose updates them here.
set -uo pipefail
lib=${1:?usage: sass-check-sparse.sh LIBJHDNN}
cuobj=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
if [ ! -x "$cuobj" ]; then
  echo "SKIP: no cuobjdump (looked for \$CUOBJDUMP, PATH, /usr/local/cuda/bin/cuobjdump; scripts/fetch-sass-tools.sh gets one)"
  exit 77
fi
names=$("$cuobj" -res-usage "$lib" 2>/dev/null | sed -n 's/^ *Function \([^:]*\):.*/\1/p')
fails=0
# sass_of PAT MAX_STACK: the first function matching PAT; sets its SASS and resource usage (sass, usage) and fails
# where it uses local memory or more than MAX_STACK bytes of stack (a spill shows there). Returns 1 where none matches.
sass_of() {
  local pat=$1 max_stack=$2 fn stack
  fn=$(grep -E "$pat" <<< "$names" | head -1)
  if [ -z "$fn" ]; then
    echo "FAIL: no function matching $pat in $lib"
    fails=$((fails + 1))
    return 1
  fi
  sass=$("$cuobj" -sass -fun "$fn" "$lib" 2>/dev/null)
  usage=$("$cuobj" -res-usage -fun "$fn" "$lib" 2>/dev/null |
    grep -o "REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*")
  stack=$(sed -n 's/.*STACK:\([0-9]*\).*/\1/p' <<< "$usage")
  grep -q "LOCAL:0" <<< "$usage" && [ "${stack:-999}" -le "$max_stack" ] ||
    { echo "FAIL: $pat: more stack than $max_stack bytes, or local memory ($usage)"; fails=$((fails + 1)); }
}
# check NAME_PATTERN WANT_FFMA MIN_UR_LOADS MAX_STACK: one function; its FFMA count, at least MIN_UR_LOADS shared
# loads of the [R + UR + imm] form, and sass_of's stack check.
check() {
  local pat=$1 want_ffma=$2 min_ur=$3 ffma ur
  sass_of "$pat" "$4" || return
  ffma=$(grep -c " FFMA " <<< "$sass")
  ur=$(grep -cE "LDS(\.[0-9]+)? R[0-9]+, \[R[0-9]+\+UR[0-9]+" <<< "$sass")
  echo "$pat: $usage, FFMA $ffma (want $want_ffma), [R + UR] shared loads $ur (want >= $min_ur)"
  [ "$ffma" -eq "$want_ffma" ] || { echo "FAIL: $pat has $ffma FFMA, not $want_ffma"; fails=$((fails + 1)); }
  [ "$ur" -ge "$min_ur" ] || { echo "FAIL: $pat has $ur [R + UR] shared loads, fewer than $min_ur"; fails=$((fails + 1)); }
}
# vals4w / vals4w8 (untraced), with the handed schedule's item loop (Lb1E) and without it (Lb0E, session 41): 512
# FFMA in the one-load path, 512 in the shared-list path, 160 in each row's own (unrolled twice); 32 feature loads in
# each of the first two paths and more in the third.
check 'dnn_resident_vals4w_kernelILb0ELi8ELb1E' 1184 64 0
check 'dnn_resident_vals4w_kernelILb0ELi16ELb1E' 1184 64 0
check 'dnn_resident_vals4w_kernelILb0ELi8ELb0E' 1184 64 0
check 'dnn_resident_vals4w_kernelILb0ELi16ELb0E' 1184 64 0
# late4 (late4crowd's and late4 / late4all's kernels): with the shared-weight quad body, 4 x 256 FFMA more than
# before session 34 (2,720 / 2,972); their stack (16 / 8 bytes at 128 registers) as since session 23.
check 'dnn_layer_cta_kernelILi3ELi3ELb0E' 3744 0 16
check 'dnn_layer_cta_kernelILi3ELi4ELb0E' 3996 0 8
# their input-mask instantiations (session 36, kMasks: layer 1 with the images' piece mask): late4_run_staged's kSkip
# variants on top, 2 x 544 FFMA more (skipped at run time only for quads of inputs zero in the whole tile)
check 'dnn_layer_cta_kernelILi3ELi3ELb1E' 4832 0 16
check 'dnn_layer_cta_kernelILi3ELi4ELb1E' 5084 0 16
# check_tc NAME_PATTERN WANT_HMMA MAX_BSSY MAX_STACK: a tensor-core kernel's HMMA count, at most MAX_BSSY branch
# regions, and sass_of's stack check.
check_tc() {
  local pat=$1 want_hmma=$2 max_bssy=$3 hmma bssy
  sass_of "$pat" "$4" || return
  hmma=$(grep -c " HMMA" <<< "$sass")
  bssy=$(grep -c " BSSY" <<< "$sass")
  echo "$pat: $usage, HMMA $hmma (want $want_hmma), BSSY $bssy (want <= $max_bssy)"
  [ "$hmma" -eq "$want_hmma" ] || { echo "FAIL: $pat has $hmma HMMA, not $want_hmma"; fails=$((fails + 1)); }
  [ "$bssy" -le "$max_bssy" ] ||
    { echo "FAIL: $pat has $bssy BSSY, more than $max_bssy: look for new branch regions"; fails=$((fails + 1)); }
}
# the cluster kernel (one piece), the single-CTA kernels with one and three pieces (session 54's counts; the cluster
# kernel's 16 bytes of stack are its prologue's tables, as since session 52)
check_tc 'resident_tc_kernelILi1ELb1E' 16 134 16
check_tc 'resident_tc_kernelILi1ELb0E' 16 48 0
check_tc 'resident_tc_kernelILi3ELb0E' 48 64 0
if [ "$fails" -ne 0 ]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all SASS checks passed"
