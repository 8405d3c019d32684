#!/usr/bin/env python3
"""Per-layer table of the fused layer kernel's launches in an `ncu --csv --metrics ...` run of spdnn_infer
(--no-warmup), against the images each layer read:

    scripts/spdnn-ncu-layers.py NCU_TXT ACTIVE_CSV WIDTH [--kernel dnn_layer_cta_kernel] [--read LAYER=COUNT]
    scripts/spdnn-ncu-layers.py NCU_TXT --by-kernel      (every kernel of the run: launches and summed time)

Launches of other kernels (scatter_images, the resident pack and resident kernels, the widening check) are skipped,
so launch k of the kernel is layer k (the resident path's head, the graph path's first layers). ACTIVE_CSV is
spdnn_infer's --active-csv of the same run: layer l reads the survivors of layer l - 1 (60000 for layer 1), unless
--read gives the count a widened layer read (e.g. --read 2=60000). ns/image = time / images read. Metrics that the run
did not collect print as '-'. (scripts/spdnn-head-table.py assumes one launch per layer and no other kernels.)
"""
import argparse
import collections
import csv
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import ncu_csv  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("ncu")
ap.add_argument("active", nargs="?")
ap.add_argument("width", type=int, nargs="?")
ap.add_argument("--by-kernel", action="store_true", help="per kernel name: launches and the sum of their times")
ap.add_argument("--kernel", default="dnn_layer_cta_kernel")
ap.add_argument("--images", type=int, default=60000)
ap.add_argument("--read", action="append", default=[], help="LAYER=COUNT: the images a widened layer read")
a = ap.parse_args()

if a.by_kernel:
    count, total = collections.Counter(), collections.Counter()
    for m in ncu_csv.launches(a.ncu, names=True).values():
        count[m["name"]] += 1
        total[m["name"]] += ncu_csv.time_us(m)
    print("| kernel | launches | time (us, summed) |")
    print("|---|---|---|")
    for name in count:
        print(f"| `{name}` | {count[name]} | {total[name]:.1f} |")
    sys.exit(0)
if a.active is None or a.width is None:
    ap.error("ACTIVE_CSV and WIDTH are needed without --by-kernel")
launches = ncu_csv.launches(a.ncu, a.kernel)
after = {0: a.images}
for r in csv.DictReader(open(a.active)):
    if int(r["width"]) == a.width:
        after[int(r["layer"])] = int(r["active"])
read_override = {int(k): int(v) for k, v in (s.split("=") for s in a.read)}


def get(m, k, scale=1.0, fmt="{:.2f}"):
    v = m.get(k, (None, None))[1]
    return "-" if v is None else fmt.format(v * scale)


stall = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
print("| layer | images read | time (us) | ns / image | warp instr (M) | IPC | LSU wavefronts (M) | "
      "stalls: short / long scoreboard / MIO throttle |")
print("|---|---|---|---|---|---|---|---|")
for layer, m in enumerate(launches.values(), 1):
    images = read_override.get(layer, after.get(layer - 1, 0))
    t_us = ncu_csv.time_us(m)
    per = "-" if images == 0 else "{:.2f}".format(t_us * 1e3 / images)
    stalls = " / ".join(get(m, stall.format(s)) for s in ("short_scoreboard", "long_scoreboard", "mio_throttle"))
    print(f"| {layer} | {images} | {t_us:.1f} | {per} | {get(m, 'smsp__inst_executed.sum', 1e-6, '{:.1f}')} | "
          f"{get(m, 'sm__inst_executed.avg.per_cycle_active')} | "
          f"{get(m, 'l1tex__data_pipe_lsu_wavefronts.sum', 1e-6, '{:.1f}')} | {stalls} |")
