#!/usr/bin/env python3
"""Per-launch durations and warp instructions from ncu's CSV (spdnn-tc-cluster-gpu.sh TIMELINE=1:
`ncu --csv --metrics gpu__time_duration.sum,smsp__inst_executed.sum ...`), one line per launch in launch order.

    scripts/ncu-timeline.py timeline_4096_tc5c.txt [...] [--skip pack]

--skip SUBSTR leaves out the kernels whose name contains it (e.g. the resident path's weight packing, which runs in
the timed loop of a run without warm-up). Prints each file's launches and the sum of the durations it printed.
"""
import argparse
import csv


def launches(path):
    out = {}
    for r in csv.reader(open(path)):
        if len(r) < 15 or not r[0].isdigit():
            continue
        d = out.setdefault(int(r[0]), {"kernel": r[4].split("(")[0].strip(), "grid": r[8]})
        d[r[12]] = float(r[14].replace(",", ""))
    return [out[k] for k in sorted(out)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--skip", action="append", default=[])
    a = ap.parse_args()
    for f in a.files:
        print(f"== {f}")
        total = 0.0
        for i, d in enumerate(launches(f)):
            if any(s in d["kernel"] for s in a.skip):
                continue
            us = d.get("gpu__time_duration.sum", 0.0) / 1000
            total += us
            print(f"{i:4d}  {us:9.1f} us  {d.get('smsp__inst_executed.sum', 0.0) / 1e6:8.2f} M  grid {d['grid']:<14} "
                  f"{d['kernel']}")
        print(f"      {total:9.1f} us in all")


if __name__ == "__main__":
    main()
