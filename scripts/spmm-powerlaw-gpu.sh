#!/usr/bin/env bash
# On the GPU machine, ONE call of the device tool (<= 240 s, the guard's BUDGET_S, counted from the start and
# including the cold build: the device machine starts bare; ~35-45 s for these two targets at -j16): the deep NNZ_PAIRS
# kernels (JHDNN_SPMM_PAIRS=deep / deep4, spmm_nnz_deep<8> / <4> in src/sparse/spmm.cu; src/sparse/README.md
# "NNZ_PAIRS deep") against NNZ_PAIRS classic and cuSPARSE on skewed (power-law) rows.
#
#   scripts/spmm-powerlaw-gpu.sh OUTDIR      TESTS=0 skips the tests, NCU=0 the profiles, CHALLENGE=0 the
#                                            challenge-layer bench rows
#
# Builds test_sparse and bench_sparse in BUILD_DIR (default build-gpu, git-ignored), then (steps by priority;
# the guard, BUDGET_S=240 by default, cuts the last ones; the steps' own limits add up to 140 + 70 + 90 s):
#   1. resource usage (as built here, CUDA 13.0): spmm_nnz_deep<4> REG:64 STACK:0 SHARED:17408 (4 blocks of 8
#      warps per SM), spmm_nnz_deep<8> REG:80 STACK:32 SHARED:17408 (3 blocks), spmm_nnz_pairs<16, 4> REG:48;
#   2. tests: the SpMM case of test_sparse ([spmm]: every algorithm, both orders, alpha / beta 0 (C poisoned
#      with NaN) and 0.5, odd sizes, a 5000-long row, power-law rows with 3000 / 1500 / 700-long, chunk-cut
#      and empty rows; float64 reference and cusparseSpMM) under JHDNN_SPMM_PAIRS=deep and =deep4
#      (= ctest spmm_pairs_deep, spmm_pairs_deep4), the setter case; the same SpMM case under classic as the
#      control (a deep failure there too is the test's, not the kernel's) with the [spmm_pairs] case (both deep
#      kernels on row-major C with ldc % 4 != 0 or not 16-byte aligned); the misspelt value (=
#      spmm_pairs_env_misspelt);
#   3. bench_sparse SpMM rows, row-major: nnz_pairs (deep4 since ff25859), nnz_pairs_deep, nnz_pairs_classic, default and cuSPARSE
#      ALG1-3 on both power-law matrices (m = 131072 and 1048576, n = 64) and, with the challenge data, the
#      challenge layers (--quick: 6000 feature columns); counter max_rel_diff = deep's C against classic's;
#   4. ncu (--clock-control none) of spmm_nnz_pairs<16, 4> and spmm_nnz_deep<8> / <4> at m = 131072: time,
#      instructions, IPC, warps active, L2 bytes and hit rate, DRAM bytes, long-scoreboard stalls.
# Before (H200, bench/results/8abf97b): powerlaw_m131072 row nnz_pairs 1586 GFLOP/s (163 us), cuSPARSE ALG3
# 1578; powerlaw_m1048576 row nnz_pairs 1438 (1.45 ms), ALG3 1293.
# Prediction (not measured; as labelled in README "NNZ_PAIRS deep"): deep4 at m = 131072 ~2200 GFLOP/s
# (1900-2500; 1.2-1.6x classic and ALG3); at m = 1048576 ~1700 (1550-1900; 1.1-1.3x classic: random 256-byte
# B rows, ~80% from HBM); deep within +-10% of deep4. Falsified if deep4 < 1.10x classic at m = 131072.
# Ran at ff25859 (session 17, bench/results/ff25859/spmm): deep4 2292 / 1879 GFLOP/s against classic 1596 / 1455,
# so deep4 became the default (JHDNN_SPMM_PAIRS unset); the bench rows are now jhdnn_nnz_pairs (= deep4),
# jhdnn_nnz_pairs_deep and jhdnn_nnz_pairs_classic, and the steps below use those names.
set -uo pipefail
BUDGET_DEFAULT=240 UNSET_SWITCHES="JHDNN_SPMM_PAIRS" source "$(dirname "$0")/lib/gpu-script.sh" "$@"

if [ "${CHALLENGE:-1}" = 1 ]; then
  scripts/fetch-spdnn-data.sh >/dev/null 2>&1 || echo "no spdnn data: the challenge-layer rows are skipped"
fi
build_step "$B" test_sparse bench_sparse
cuobjdump --dump-resource-usage "$B/src/CMakeFiles/jhdnn.dir/sparse/spmm.cu.o" 2>/dev/null |
  grep -A1 -E "spmm_nnz_deep|spmm_nnz_pairsILi16" | tee "$OUT/resource-usage.txt" | grep -oE "REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+"

if [ "${TESTS:-1}" = 1 ]; then
  JHDNN_SPMM_PAIRS=deep step test_spmm_deep 40 "$T/test_sparse" "[spmm]" --durations yes
  step test_spmm_deep4 40 "$T/test_sparse" "[spmm]" --durations yes
  JHDNN_SPMM_PAIRS=classic step test_spmm_classic 40 "$T/test_sparse" "[spmm],[spmm_pairs]" --durations yes
  JHDNN_SPMM_PAIRS=Deep step test_spmm_misspelt 20 "$T/test_sparse" "[env_spmm_pairs_misspelt]"
fi

F='SpMM/(jhdnn_nnz_pairs|jhdnn_nnz_pairs_deep|jhdnn_nnz_pairs_classic|jhdnn_default|cusparse_csr_alg[123])/powerlaw_.*/row'
[ "${CHALLENGE:-1}" = 1 ] && F="$F|SpMM/(jhdnn_nnz_pairs|jhdnn_nnz_pairs_deep|jhdnn_nnz_pairs_classic|jhdnn_default|cusparse_csr_alg[123])/challenge_.*/row"
step bench 70 "$BS" --quick --spdnn 1024:1 --baseline 1024:1 --benchmark_filter="^($F)" \
  --benchmark_out="$OUT/bench_spmm.json" --benchmark_out_format=json

if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,sm__warps_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,dram__bytes.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  prof() {  # prof NAME BENCH_IMPL KERNEL_REGEX
    step "ncu_$1" 30 ncu --clock-control none --metrics "$M" --kernel-name "regex:$3" --launch-skip 1 --launch-count 1 \
      "$BS" --quick --spdnn 1024:1 --baseline 1024:1 --benchmark_filter="^SpMM/$2/powerlaw_m131072_avg16_n64/row"
  }
  prof pairs jhdnn_nnz_pairs_classic spmm_nnz_pairs
  prof deep jhdnn_nnz_pairs_deep spmm_nnz_deep
  prof deep4 jhdnn_nnz_pairs spmm_nnz_deep
fi

step_summary
echo "== bench rows"
grep -E "^SpMM" "$OUT/bench.txt" 2>/dev/null | sed -E 's/ +/ /g' | cut -c1-200
for f in "$OUT"/ncu_*.txt; do
  [ -f "$f" ] || continue
  echo "== $(basename "$f")"
  grep -E "spmm_nnz|gpu__time|inst_executed|warps_active|lts__|dram__|long_scoreboard" "$f" | sed -E 's/ +/ /g'
done
