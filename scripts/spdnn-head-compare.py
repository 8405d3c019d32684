#!/usr/bin/env python3
# The first layers of one spdnn_infer run under two tiles, side by side, from the ncu --csv output of
# scripts/spdnn-late4all-gpu.sh (ncu_head_auto.txt, ncu_head_late4all.txt: time, DRAM read / write per launch, no
# warm-up, one launch per layer) and the run's --active-csv (active_WIDTH.csv):
#   scripts/spdnn-head-compare.py RESULTS_DIR [--width 16384] [--tiles auto,late4all]
# Prints a markdown table: per layer, the images entering it and each tile's time and DRAM bytes.
import argparse, collections, csv

ap = argparse.ArgumentParser()
ap.add_argument("dir"); ap.add_argument("--width", type=int, default=16384); ap.add_argument("--tiles", default="auto,late4all")
a = ap.parse_args()
tiles = a.tiles.split(",")
survivors = {}
for row in csv.DictReader(open(f"{a.dir}/active_{a.width}.csv")):
    if int(row["width"]) == a.width:
        survivors[int(row["layer"])] = int(row["active"])
res = {}
for t in tiles:
    lines = [l for l in open(f"{a.dir}/ncu_head_{t}.txt") if l.startswith('"')]
    rd = csv.reader(lines)
    hdr = next(rd)
    launches = collections.OrderedDict()
    for x in rd:
        d = dict(zip(hdr, x))
        launches.setdefault(int(d["ID"]), {})[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
    res[t] = list(launches.values())  # gpu__time_duration in ns, DRAM in bytes (the script's metrics)
print("| layer | entering images | " + " | ".join(f"{t} us | {t} DRAM read / write GB" for t in tiles) + " |")
print("|---|---|" + "---|---|" * len(tiles))
tot = {t: 0.0 for t in tiles}
for k in range(min(len(res[t]) for t in tiles)):
    cells = []
    for t in tiles:
        m = res[t][k]
        tot[t] += m["gpu__time_duration.sum"] / 1e3
        cells.append(f"{m['gpu__time_duration.sum'] / 1e3:.1f} | {m['dram__bytes_read.sum'] / 1e9:.2f} / "
                     f"{m['dram__bytes_write.sum'] / 1e9:.2f}")
    entering = 60000 if k == 0 else survivors.get(k, "?")
    print(f"| {k + 1} | {entering} | " + " | ".join(cells) + " |")
print(f"| 1-{k + 1} | | " + " | ".join(f"{tot[t]:.0f} | " for t in tiles) + "|")
