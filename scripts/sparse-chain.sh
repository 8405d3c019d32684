#!/usr/bin/env bash
# Regenerates bench/results/sparse.md and its plots (into OUT_DIR, default /tmp/sr/out) from every bench_sparse JSON
# and spdnn_infer CSV the current table is made of, in the order sessions 31-51 added them (a later file replaces an
# earlier one's rows of the same network: scripts/sparse-report.py --help). EXTRA="--bench F ..." appends newer
# files last. Line 3 of sparse.md (where each part comes from) is written by hand after it, as every session did.
#   EXTRA="--bench bench/results/<sha>/bench_sparse.json" bash scripts/sparse-chain.sh
# Checked in session 51: without EXTRA it reproduces 1ae5b7e's sparse.md but for line 3.
set -euo pipefail
cd "$(dirname "$0")/.."
R=bench/results; S=$R/97c15d6/table; Q=$R/0d92d9d/table; P=$R/b3c9401/table; E=$R/edfe84b/table; O=$R/2990394
N=$R/1778cc9/table; mkdir -p /tmp/sr
B=""; for f in $R/04b5614/bench_sparse_spdnn.json $R/04b5614/bench_sparse_spdnn_big.json \
  $R/04b5614/bench_sparse_spmm.json $R/23ff32f/bench_sparse_d2c.json $R/c5b3954/bench_sparse_spdnn.json \
  $R/5be2222/bench_sparse_spdnn.json $R/dbe2ceb/bench_sparse_spdnn_65536_1920.json \
  $R/dbe2ceb/bench_sparse_spdnn_16384.json $R/dbe2ceb/bench_sparse_spdnn_65536.json \
  $R/ac17bb9/bench_sparse_spdnn_1024.json $R/ac17bb9/bench_sparse_spdnn_b.json $O/verify/bench_sparse_spdnn.json \
  $O/bench/bench_sparse_spdnn_16384.json $O/bench/bench_sparse_spdnn_65536.json \
  $O/sanitizer/bench_sparse_spdnn_65536_1920.json; do B="$B --bench $f"; done
for T in $E $P $Q $S $R/e96c40b/table; do
  for w in 1024 16384 65536 65536_1920; do B="$B --bench $T/bench_sparse_spdnn_$w.json"; done
done
B="$B --bench $R/4b24d29/verify/bench_sparse_spdnn_1024.json"
B="$B --bench $R/9512183/verify/bench_sparse_spdnn_1024.json"
for w in 1024 16384 65536 65536_1920; do B="$B --bench $N/bench_sparse_spdnn_$w.json"; done
for c in 9713083 9335a8b ff439c1 f9b8f0d cb207c6 80cbcd0 e94a3b3 4d6a999 1ae5b7e; do
  for f in "$R/$c"/table/bench_sparse_spdnn_*.json; do B="$B --bench $f"; done
done
B="$B ${EXTRA:-}"
T1=$R/1ae5b7e/table; T2=$R/e94a3b3/table
# spdnn_infer's CSVs: N = 1024 / 4096 from 1ae5b7e's table, the others from e94a3b3's
for kind in infer active; do
  (head -1 "$T1/spdnn_${kind}_1024.csv"
   for f in "$T1/spdnn_${kind}_1024.csv" "$T1/spdnn_${kind}_4096.csv" "$T2/spdnn_${kind}_16384.csv" \
     "$T2/spdnn_${kind}_65536.csv"; do awk -F, 'NR>1' "$f"; done) > "/tmp/sr/$kind.csv"
done
OUT_DIR=${OUT_DIR:-/tmp/sr/out}; rm -rf "$OUT_DIR"
# shellcheck disable=SC2086  # B is a list of options
/usr/bin/python3 scripts/sparse-report.py $B --infer /tmp/sr/infer.csv --active /tmp/sr/active.csv --out "$OUT_DIR" \
  --where "the H200"
