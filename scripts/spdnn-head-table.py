#!/usr/bin/env python3
# Per-layer table of an ncu --csv run of the SpDNN layer kernel against each layer's DRAM floor:
#   scripts/spdnn-head-table.py NCU_CSV_TXT ACTIVE_CSV WIDTH [--images 60000] [--bandwidth 4.16e12]
# NCU_CSV_TXT: the output of `ncu --csv --metrics ...` over the first launches of a run (one launch per layer,
# no warm-up; out/s18/c3.sh); ACTIVE_CSV: spdnn_infer --active-csv of the same run. The floor of a layer is its
# entering images' feature rows read and written once (images x WIDTH x 4 B x 2) at the bandwidth: arithmetic,
# not a measurement. Prints a markdown table.
import argparse, csv, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import ncu_csv  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("ncu"); ap.add_argument("active"); ap.add_argument("width", type=int)
ap.add_argument("--images", type=int, default=60000); ap.add_argument("--bandwidth", type=float, default=4.16e12)
a = ap.parse_args()
launches = ncu_csv.launches(a.ncu)
act = {}
for row in csv.DictReader(open(a.active)):
    if int(row["width"]) == a.width:
        act[int(row["layer"])] = int(row["active"])

us = ncu_csv.time_us

def stall(m, r):
    return m["smsp__average_warps_issue_stalled_%s_per_issue_active.ratio" % r][1]

print("| layer | entering images | time (us) | DRAM floor (us) | time / floor | DRAM (GB) | DRAM over the floor's bytes (GB) | warp instr (M) | FFMA share | IPC | "
      "warps active % | stalls: short / long scoreboard / MIO throttle |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
tot = totf = tot_excess = 0.0
for i, m in enumerate(launches.values()):
    layer = i + 1
    img = a.images if layer == 1 else act.get(layer - 1, 0)
    t = us(m)
    floor = img * a.width * 4 * 2 / a.bandwidth * 1e6  # us
    floor_bytes = img * a.width * 4 * 2
    excess = m["dram__bytes.sum"][1] - floor_bytes
    tot += t; totf += floor; tot_excess += excess
    inst = m["smsp__inst_executed.sum"][1]
    ffma = m["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"][1] / 32
    print(f"| {layer} | {img} | {t:.1f} | {floor:.1f} | {t / floor:.2f} | {m['dram__bytes.sum'][1] / 1e9:.2f} | {excess / 1e9:.2f} | "
          f"{inst / 1e6:.1f} | {ffma / inst:.2f} | {m['sm__inst_executed.avg.per_cycle_active'][1]:.2f} | "
          f"{m['sm__warps_active.avg.pct_of_peak_sustained_active'][1]:.1f} | "
          f"{stall(m, 'short_scoreboard'):.2f} / {stall(m, 'long_scoreboard'):.2f} / {stall(m, 'mio_throttle'):.2f} |")
print(f"| all | | {tot:.1f} | {totf:.1f} | {tot / totf:.2f} | | {tot_excess / 1e9:.2f} | | | | |")
