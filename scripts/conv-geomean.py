#!/usr/bin/env python3
# Per-layer and geomean cuDNN-best / jhDNN times from jhdnn-bench CSVs (--csv=FILE):
#   scripts/conv-geomean.py FILE.csv [...]
# One line per (problem, dtype, layout): cuDNN's best time and each jhDNN solver's time with the
# ratio cuDNN best / solver (> 1: faster than cuDNN); then per (dtype, layout, solver) and "best"
# (the best jhDNN solver per layer) the number of layers and the geometric mean of the ratios.
import csv,sys,math,collections
def load(p):
    rows=[r for r in csv.DictReader(l for l in open(p) if not l.startswith('#'))]
    return rows
for p in sys.argv[1:]:
    rows=load(p)
    by=collections.defaultdict(dict)
    for r in rows:
        if r['status']!='SUCCESS': continue
        key=(r['problem'],r['dt'],r['layout'])
        by[key][(r['impl']+' '+r['algo']) if r['impl']=='cudnn' else r['solver']]=float(r['gpu_us'])
    agg=collections.defaultdict(list)
    for (n,dt,lay),d in by.items():
        cud=min([v for a,v in d.items() if a.startswith('cudnn')] or [float('nan')])
        ours={a:v for a,v in d.items() if not a.startswith('cudnn')}
        if not ours: continue
        best=min(ours.values())
        line=f"{n:28s} {dt:5s} cudnn {cud:8.2f} " + " ".join(f"{a}={v:.2f}({cud/v:.2f})" for a,v in sorted(ours.items()))
        print(line)
        agg[(dt,lay,'best')].append(cud/best)
        for a,v in ours.items(): agg[(dt,lay,a)].append(cud/v)
    for k,v in sorted(agg.items()):
        print(f"geomean {k[0]}:{k[1]} {k[2]:26s} {len(v):3d} layers  {math.exp(sum(map(math.log, v)) / len(v)):.3f}")
