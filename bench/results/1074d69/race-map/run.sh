#!/usr/bin/env bash
# Session 18 call 6 (diagnostic, trial-s18c 1074d69): map vals4w's racecheck hazards: racecheck of the N = 4096 bitwise
# case under vals4w with up to 4000 hazards printed, summarised as (block, read thread, write thread) with counts and
# the address range, so the pairs can be put against the ring's slots and the warps' chunks.
export PATH=$PATH:/usr/local/cuda/bin JHDNN_REQUIRE_GPU=1 JHDNN_COMMIT=${C:?}
unset JHDNN_SPDNN_TILE JHDNN_RESIDENT_KERNEL JHDNN_SPDNN_RESIDENT_4096 JHDNN_SPMM_PAIRS JHDNN_TEST_VALS_QUICK
OUT_DEV=$OUT; OUT=/tmp/c6; mkdir -p $OUT; B=build-gpu
BUDGET_S=235 source scripts/lib/guarded-step.sh
mkdir -p /tmp/trial && tar xzf out/s18/trial18c-src.tar.gz -C /tmp/trial
cd /tmp/trial
step build 120 bash -c "cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $B -j 16 --target test_sparse"
JHDNN_TEST_VALS_QUICK=vals4w step race 150 compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 4000 \
  --show-backtrace no $B/tests/test_sparse "resident vals: N = 4096 with S = 4 bitwise*"
python3 - "$OUT/race.txt" > $OUT/pairs.txt <<'PY'
import re, sys, collections
n = collections.Counter(); lo = {}; hi = {}; kinds = collections.Counter()
key = None
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block \((\d+)", line)
    if m:
        kind, addr, blk = m.group(1), int(m.group(2), 16), int(m.group(3)); rd = wr = None; continue
    m = re.search(r"(Read|Write) Thread \((\d+)", line)
    if m:
        if m.group(1) == "Read": rd = int(m.group(2))
        else: wr = int(m.group(2))
        if rd is not None and wr is not None:
            k = (kind, blk, rd, wr); n[k] += 1; rd = wr = None
            lo[k] = min(lo.get(k, addr), addr); hi[k] = max(hi.get(k, addr), addr)
for k in sorted(n):
    kind, blk, rd, wr = k
    print(f"{kind} block {blk} read thread {rd} (warp {rd // 32}) write thread {wr} (warp {wr // 32}): {n[k]} hazards, 0x{lo[k]:x}..0x{hi[k]:x}")
PY
grep -E "RACECHECK SUMMARY|assertions|test cases" $OUT/race.txt | tail -3
wc -l $OUT/pairs.txt; head -40 $OUT/pairs.txt
echo "commit $C" > $OUT/commit.txt
step_summary
gzip -c $OUT/race.txt > $OUT/race.txt.gz; rm -f $OUT/race.txt
tar czf $OUT_DEV/c6.tgz -C /tmp c6
