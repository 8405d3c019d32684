#!/usr/bin/env python3
"""Turns a jhdnn-bench CSV (--csv) into a report: OUTDIR/report.md (GPU, versions, commit, a
summary per configuration, the full table) and PNG plots:

  per-layer-<dt>_<layout>.png  per layer: GPU time of each jhDNN solver and each cuDNN algorithm
                               (log scale), jhDNN solid, cuDNN hatched, one colour per algorithm
  roofline-<dt>_<layout>.png   achieved TFLOP/s against arithmetic intensity (FLOP / minimum bytes),
                               with the H200 ceilings (peak TFLOP/s and copy bandwidth)

usage: scripts/report.py RESULTS.csv [OUTDIR=bench/results]
Needs python3 and matplotlib (apt: python3-matplotlib).
"""
import csv
import math
import os
import sys
from collections import defaultdict

PEAK_TFLOPS = {"f32": 50.8, "tf32": 416.0, "f16": 769.0, "bf16": 797.0, "f64": 67.0}


def num(s):
    try:
        v = float(s)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def read(path):
    meta, lines = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                k, _, v = line[1:].partition(":")
                meta[k.strip()] = v.strip()
            elif line.strip():
                lines.append(line)
    return meta, list(csv.DictReader(lines))


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def label(r):
    return r["solver"] if r["impl"] == "jhdnn" else "cudnn " + r["algo"]


def plots(rows, outdir, cfg):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    timed = [r for r in rows if num(r["gpu_us"])]
    if not timed:
        return made
    problems = list(dict.fromkeys(r["problem"] for r in timed))
    algo_of = {label(r): r["algo"] for r in timed}
    # Bars of one algorithm side by side: jhDNN's solvers, then cuDNN's algorithm.
    impls = sorted(set(label(r) for r in timed), key=lambda i: (algo_of[i], i.startswith("cudnn "), i))
    cmap = plt.get_cmap("tab20")
    colour = {i: cmap(k % 20) for k, i in enumerate(impls)}
    t = {(r["problem"], label(r)): num(r["gpu_us"]) for r in timed}

    # Per-layer bars.
    width = 0.8 / max(len(impls), 1)
    fig, ax = plt.subplots(figsize=(max(10, 0.45 * len(problems) * max(1, len(impls) / 4)), 6))
    for j, impl in enumerate(impls):
        xs = [i + j * width for i, p in enumerate(problems) if (p, impl) in t]
        ys = [t[(p, impl)] for p in problems if (p, impl) in t]
        ax.bar(xs, ys, width, label=impl, color=colour[impl],
               hatch="//" if impl.startswith("cudnn ") else None, edgecolor="black", linewidth=0.3)
    ax.set_yscale("log")
    ax.set_ylabel("GPU time per call (us, CUDA-graph replay, log scale)")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(problems))])
    ax.set_xticklabels(problems, rotation=90, fontsize=7)
    ax.set_title(f"jhDNN solvers (solid) vs cuDNN algorithms (hatched), {cfg}")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    name = f"per-layer-{cfg.replace(':', '_')}.png"
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    made.append(name)

    # Roofline.
    dt = cfg.split(":")[0]
    peak = PEAK_TFLOPS.get(dt, 50.8)
    bw = 4160.0
    fig, ax = plt.subplots(figsize=(8, 6))
    ai = [num(r["gflop"]) * 1e9 / num(r["min_bytes"]) for r in timed]
    lo, hi = max(min(ai) / 2, 0.1), max(ai) * 2
    xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
    ax.plot(xs, [min(peak, x * bw / 1000) for x in xs], "k-", lw=1, label=f"ceiling: {peak} TFLOP/s, {bw / 1000} TB/s")
    for impl in impls:
        pts = [(num(r["gflop"]) * 1e9 / num(r["min_bytes"]), num(r["tflops"])) for r in timed if label(r) == impl]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=14, label=impl, color=colour[impl],
                   marker="o" if not impl.startswith("cudnn ") else "x")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / minimum bytes)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"Roofline, {cfg} (o jhDNN, x cuDNN)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    name = f"roofline-{cfg.replace(':', '_')}.png"
    fig.savefig(os.path.join(outdir, name), dpi=110)
    plt.close(fig)
    made.append(name)
    return made


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    src = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) > 2 else "bench/results"
    os.makedirs(outdir, exist_ok=True)
    meta, rows = read(src)
    by_cfg = defaultdict(list)
    for r in rows:
        by_cfg[f"{r['dt']}:{r['layout']}"].append(r)

    L = ["# jhdnn-bench report", ""]
    L.append(f"- GPU: {meta.get('gpu', '?')}")
    L.append(f"- commit: `{meta.get('commit', '?')}`")
    L.append(f"- inputs seed: {meta.get('seed', '?')}; run time {meta.get('seconds', '?')} s; source `{os.path.basename(src)}`")
    L.append("- GPU time: CUDA-graph replay, inputs rotated over >= 2.5x L2, median; eager: host clock per API call.")
    L.append("- x_same / x_best: cuDNN's same-algorithm / best time divided by this time (> 1: jhDNN faster).")
    L.append("- %floor: max(FLOP / peak, minimum bytes / bandwidth) / time, H200 measured ceilings.")
    mism = [r for r in rows if r["impl"] == "jhdnn" and "FAIL" in (r["ref_check"], r["cudnn_check"])]
    verified = [r for r in rows if r["impl"] == "jhdnn" and r["ref_check"] == "ok" and r["cudnn_check"] != "FAIL"]
    L.append(f"- jhDNN results verified: {len(verified)}; mismatches: {len(mism)}")
    L.append("")

    L.append("## Summary per configuration\n")
    summ = []
    for cfg, rs in by_cfg.items():
        probs = list(dict.fromkeys(r["problem"] for r in rs))
        wins, ratios = 0, []
        for p in probs:
            ours = [num(r["gpu_us"]) for r in rs if r["problem"] == p and r["impl"] == "jhdnn" and num(r["gpu_us"])]
            theirs = [num(r["gpu_us"]) for r in rs if r["problem"] == p and r["impl"] == "cudnn" and num(r["gpu_us"])]
            if ours and theirs:
                ratios.append(min(theirs) / min(ours))
                wins += min(ours) <= min(theirs)
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else float("nan")
        summ.append([cfg, len(probs), f"{geo:.3f}", f"{wins}/{len(ratios)}"])
    L.append(md_table(["config", "problems", "geomean cuDNN best / jhDNN best", "layers where jhDNN is fastest"], summ))
    L.append("")

    for cfg, rs in by_cfg.items():
        for png in plots(rs, outdir, cfg):
            L.append(f"![{png}]({png})\n")

    L.append("## Full table\n")
    table = []
    for r in rows:
        status = "MISMATCH" if "FAIL" in (r["ref_check"], r["cudnn_check"]) else r["status"]
        table.append([r["problem"], f"{r['dt']}:{r['layout']}", label(r), status, r["err_ref"], r["err_cudnn"],
                      r["gpu_us"], r["eager_us"], r["tflops"], r["gbs"], r["pct_floor"], r["ratio_same"],
                      r["ratio_best"], r["ws_bytes"],
                      (r["reason"] if r["status"] != "SUCCESS" else "").replace("|", "/")[:80]])
    L.append(md_table(["layer", "config", "algorithm", "status", "err ref", "err cuDNN", "GPU us", "eager us",
                       "TFLOP/s", "GB/s", "% floor", "x same", "x best", "ws bytes", "reason"], table))
    if mism:
        L.append("\n## Mismatches\n")
        for r in mism:
            L.append(f"- {r['problem']} {r['dt']}:{r['layout']} {r['solver']}: {r['reason']}  \n  `{r['cmd']}`")
    open(os.path.join(outdir, "report.md"), "w").write("\n".join(L) + "\n")
    print(f"wrote {os.path.join(outdir, 'report.md')} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
