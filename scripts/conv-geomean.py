#!/usr/bin/env python3
# Per-layer and geomean cuDNN-best / jhDNN times from jhdnn-bench CSVs (--csv=FILE):
#   scripts/conv-geomean.py FILE.csv [...]            each file on its own
#   scripts/conv-geomean.py --merge FILE.csv [...]    all files as one run, a later file's rows
#                                                     replacing an earlier one's for the same
#                                                     (problem, dtype, layout, algorithm / solver)
# One line per (problem, dtype, layout): cuDNN's best time and each jhDNN solver's time with the
# ratio cuDNN best / solver (> 1: faster than cuDNN); then, per network (the problem name's prefix
# before the first '_': rn50, vgg16, mnv2, odd, ...) and (dtype, layout), for each solver and for
# "best" (the best jhDNN solver per layer): the number of layers and the geometric mean of the ratios.
import collections
import csv
import math
import sys


def load(path):
    return [r for r in csv.DictReader(l for l in open(path) if not l.startswith('#'))]


def report(rows):
    times = {}
    for r in rows:  # later rows replace earlier ones
        if r['status'] != 'SUCCESS':
            continue
        who = ('cudnn ' + r['algo']) if r['impl'] == 'cudnn' else r['solver']
        times[(r['problem'], r['dt'], r['layout'], who)] = float(r['gpu_us'])
    by = collections.defaultdict(dict)
    for (prob, dt, lay, who), us in times.items():
        by[(prob, dt, lay)][who] = us
    agg = collections.defaultdict(list)
    for (prob, dt, lay), d in by.items():
        cudnn = [v for a, v in d.items() if a.startswith('cudnn')]
        ours = {a: v for a, v in d.items() if not a.startswith('cudnn')}
        if not cudnn or not ours:
            continue
        best = min(cudnn)
        print(f"{prob:28s} {dt:5s} cudnn {best:8.2f} " +
              " ".join(f"{a}={v:.2f}({best / v:.2f})" for a, v in sorted(ours.items())))
        net = prob.split('_')[0]
        agg[(net, dt, lay, 'best')].append(best / min(ours.values()))
        for a, v in ours.items():
            agg[(net, dt, lay, a)].append(best / v)
    for (net, dt, lay, who), v in sorted(agg.items()):
        g = math.exp(sum(map(math.log, v)) / len(v))
        print(f"geomean {net:6s} {dt}:{lay} {who:26s} {len(v):3d} layers  {g:.3f}")


args = sys.argv[1:]
if args and args[0] == '--merge':
    report([r for p in args[1:] for r in load(p)])
else:
    for p in args:
        report(load(p))
