#!/usr/bin/env python3
# Basic blocks of one kernel in a cuobjdump --dump-sass listing: start address, instructions (NOPs
# excluded; predicated-off padding counts), key opcode counts, branch targets. How the resident
# kernel's per-chunk / step / gather counts in src/sparse/README.md were made ("Instruction cuts"):
#   nvcc -I include -I src -O3 -arch=sm_90a -cubin -std=c++17 --expt-relaxed-constexpr \
#        src/sparse/dnn_resident.cu -o /tmp/r.cubin && cuobjdump --dump-sass /tmp/r.cubin > /tmp/r.sass
#   scripts/sass-blocks.py /tmp/r.sass ILi8ELb0E      (NAME_SUBSTRING: part of the mangled name)
import re, sys, collections
path, want = sys.argv[1], sys.argv[2]
lines = open(path).read().split('\n')
start = end = None
for i, l in enumerate(lines):
    if 'Function :' in l:
        if start is not None and end is None: end = i
        if want in l and start is None: start = i
if end is None: end = len(lines)
ins = []
for l in lines[start:end]:
    m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', l)
    if m: ins.append((int(m.group(1), 16), m.group(2).strip()))
leaders = {ins[0][0]}
for k, (a, s) in enumerate(ins):
    m = re.search(r'\b(BRA|BRX|CALL\.\w+|BSSY|BREAK|SYNCS\.\w+)\b.*?(0x[0-9a-f]+)', s)
    if m and 'BRA' in s:
        leaders.add(int(m.group(2), 16))
        if k + 1 < len(ins): leaders.add(ins[k + 1][0])
    if 'EXIT' in s and k + 1 < len(ins): leaders.add(ins[k + 1][0])
KEYS = ('FFMA','LDS','LDGSTS','STS','BAR','VOTE','LDG','STG','SHFL','ATOMG','ATOMS','IMAD','LEA','ISETP','SEL','FSEL','LOP3','SHF','IADD3','MOV','S2R','SYNCS','UBLKCP','R2UR')
blk = None; out = []
for a, s in ins:
    if a in leaders:
        blk = [a, collections.Counter(), 0, []]; out.append(blk)
    if s.startswith('NOP'): continue
    s2 = re.sub(r'^@!?U?P[T0-9]+\s+', '', s)
    op = s2.split()[0].split('.')[0]
    blk[1][op] += 1; blk[2] += 1
    m = re.search(r'BRA\S*\s.*?(0x[0-9a-f]+)', s2)
    if m: blk[3].append(('' if s2 == s else '?') + 'BRA>' + m.group(1)[2:])
    if op == 'EXIT': blk[3].append('EXIT')
tot = 0
for a, c, n, t in out:
    tot += n
    if n == 0: continue
    print(f'{a:05x} n={n:4d} ' + ' '.join(f'{k}:{v}' for k, v in sorted(c.items()) if k in KEYS) + ' | ' + ' '.join(t))
print('total', tot)
