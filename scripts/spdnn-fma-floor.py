#!/usr/bin/env python3
"""How far each SpDNN run is from the fp32 FMA floor and the DRAM floor, and how far 10x the cuSPARSE pipeline asks
it to go.

    scripts/spdnn-fma-floor.py --active A.csv [--active B.csv ...] --bench X.json [--bench Y.json ...] [--ghz 1.98]
                               [--bandwidth 4.16e12] [--l2-mb 50] [--extend]

The floor counts only the multiply-adds every exact method must do: each layer reads the images alive after the
layer before (60000 into layer 1; spdnn_infer --active-csv gives the counts), and each image costs N x 32 FMAs (32
nonzeros per row), at 132 SMs x 128 fp32 lanes x the clock (--ghz; 1.98 is the H200's boost clock, an assumption:
the runs do not record the clock). Widening (layers that also read dead columns) is not counted.
The bench JSONs (bench_sparse) give the jhDNN row (the fastest non-cusparse SpDNN row of each network) and the
cusparse row; a later file replaces an earlier one's rows. Prints, per network: image-layers, the floor, jhDNN's
time and its multiple of the floor, the 10x target (pipeline / 10) and its multiple of the floor, i.e. the share
of the FMA peak a run must sustain for 10x is 1 / that multiple.
The DRAM floor (session 33): each layer reads its entering images' features (N fp32 each) and writes as many
outputs, 8 N bytes per entering image, of which --l2-mb (50 MB, GH100's L2 by NVIDIA's figures, not queried)
are counted as served by the L2 (the most it could hold between layers: a lower bound), the rest at --bandwidth
(4.16 TB/s, the copy rate measured on the H200). The layer floor is the larger of the two per layer, summed: no exact method that keeps dense fp32
features between layers runs faster. --extend: networks with only an L = 120 CSV are extended to the bench's
larger L with the last layer's count (the generated networks' late counts stay constant; the row is marked *).
"""
import argparse
import collections
import csv
import json
import re


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--active", action="append", required=True, help="spdnn_infer --active-csv output")
    ap.add_argument("--bench", action="append", default=[], help="bench_sparse JSON")
    ap.add_argument("--ghz", type=float, default=1.98)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--bandwidth", type=float, default=4.16e12)
    ap.add_argument("--l2-mb", type=float, default=50.0)
    ap.add_argument("--extend", action="store_true")
    a = ap.parse_args()
    act = collections.defaultdict(dict)  # (N, L) -> layer -> active after it
    for f in a.active:
        for r in csv.DictReader(open(f)):
            act[(int(r["width"]), int(r["layers"]))][int(r["layer"])] = int(r["active"])
    ours, pipe = {}, {}
    for f in a.bench:  # per file: the fastest jhDNN row of each network; a later file's rows replace earlier ones
        mine = {}
        for b in json.load(open(f))["benchmarks"]:
            m = re.match(r"SpDNN/(\w+)/N(\d+)/L(\d+)/", b["name"])
            if not m or b.get("run_type") != "iteration":
                continue
            key = (int(m.group(2)), int(m.group(3)))
            ms = b["real_time"] * {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
            if m.group(1) == "cusparse":
                pipe[key] = ms
            else:
                mine[key] = min(ms, mine.get(key, ms))
        ours.update(mine)
    peak = a.sms * 128 * a.ghz * 1e9  # FMA/s
    marked = set()
    if a.extend:  # an L = 120 count list extended to the bench's larger L with its last count
        for (n, layers) in sorted(set(ours) | set(pipe)):
            base = act.get((n, 120))
            if (n, layers) in act or not base or layers <= 120 or any(l not in base for l in range(1, 120)):
                continue
            act[(n, layers)] = {l: base[min(l, 119)] for l in range(1, layers)}
            marked.add((n, layers))
    print("| N | L | image-layers | FMA floor (ms) | DRAM floor (ms) | layer floor (ms) | jhDNN (ms) | x layer floor | "
          "10x target (ms) | x layer floor | FMA peak share for 10x | DRAM share for 10x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (n, layers), d in sorted(act.items()):
        if any(l not in d for l in range(1, layers)):
            continue  # an incomplete CSV (a run cut short)
        entering = [60000] + [d[l] for l in range(1, layers)]
        fma_t = [e * n * 32 / peak for e in entering]
        dram_t = [max(0.0, e * n * 8 - a.l2_mb * 1e6) / a.bandwidth for e in entering]
        floor, dram = sum(fma_t) * 1e3, sum(dram_t) * 1e3
        both = sum(max(f, m) for f, m in zip(fma_t, dram_t)) * 1e3
        o = ours.get((n, layers))
        p = pipe.get((n, layers))
        cells = [f"{o:.2f}" if o else "-", f"{o / both:.2f}" if o else "-", f"{p / 10:.2f}" if p else "-",
                 f"{p / 10 / both:.2f}" if p else "-", f"{100 * floor / (p / 10):.0f}%" if p else "-",
                 f"{100 * dram / (p / 10):.0f}%" if p else "-"]
        star = "*" if (n, layers) in marked else ""
        print(f"| {n} | {layers}{star} | {sum(entering)} | {floor:.2f} | {dram:.2f} | {both:.2f} | " + " | ".join(cells)
              + " |")

if __name__ == "__main__":
    main()
