#!/usr/bin/env python3
"""Summarizes bench_conv_igemm's JSON output into issue 4's ratios.

  bench_conv_igemm --benchmark_format=json --benchmark_out=igemm.json
  python3 bench/igemm_summary.py igemm.json

Per layout (nchw, nhwc): a per-layer table of times (ms, median over repetitions if any) and the
geometric means over the layers where both sides ran of
  implicit_gemm / cudnn_IMPLICIT_GEMM                       (target: cuDNN time / ours >= 1.0)
  implicit_precomp_gemm / cudnn_IMPLICIT_PRECOMP_GEMM       (target >= 1.0)
  min(ours) / cudnn_best_fma                                (target >= 0.8)
Speedups are printed as cuDNN time / our time (higher is better).
"""
import json
import math
import sys
from collections import defaultdict

IMPLS = ["implicit_gemm", "implicit_precomp_gemm", "cudnn_IMPLICIT_GEMM", "cudnn_IMPLICIT_PRECOMP_GEMM",
         "cudnn_best_fma", "implicit_precomp_gemm_per_element"]
OURS = ["implicit_gemm", "implicit_precomp_gemm"]  # what the targets are stated for


def load_benchmarks(path):
    """The "benchmarks" entries of a Google Benchmark JSON file; a file cut off by a timeout
    yields its complete entries (with a note on stderr)."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)["benchmarks"]
    except json.JSONDecodeError:
        pass
    start = text.find('"benchmarks"')
    start = text.find("[", start) + 1 if start >= 0 else -1
    out, dec, i = [], json.JSONDecoder(), start
    while 0 < i < len(text):
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            break
        out.append(obj)
    print(f"note: {path} is not complete JSON (cut off?); using its {len(out)} complete entries", file=sys.stderr)
    return out


def main(path):
    t = defaultdict(dict)  # (layout, layer) -> impl -> ms
    labels = {}
    for b in load_benchmarks(path):
        if b.get("error_occurred") or b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = b["name"].split("/")
        if len(parts) < 4 or parts[0] != "igemm":
            continue
        layer, layout, impl = parts[1], parts[2], parts[3]
        ms = b["real_time"]
        if b.get("time_unit") == "us":
            ms /= 1e3
        t[(layout, layer)][impl] = ms
        if impl == "cudnn_best_fma":
            labels[(layout, layer)] = b.get("label", "")

    def geo(v):
        return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")

    for layout in sorted({k[0] for k in t}):
        rows = [(k[1], t[k]) for k in t if k[0] == layout]
        print(f"\n== {layout}")
        short = {"implicit_gemm": "ours IG", "implicit_precomp_gemm": "ours PRE", "cudnn_IMPLICIT_GEMM": "cudnn IG",
                 "cudnn_IMPLICIT_PRECOMP_GEMM": "cudnn PRE", "cudnn_best_fma": "cudnn best",
                 "implicit_precomp_gemm_per_element": "ours PRE elem"}
        print(f"{'layer (ms)':28s} " + " ".join(f"{short[i]:>14s}" for i in IMPLS) + "  cudnn best is")
        r0, r1, rb, rp = [], [], [], []
        for layer, d in rows:
            print(f"{layer:28s} " + " ".join(f"{d.get(i, float('nan')):14.4f}" for i in IMPLS) +
                  f"  {labels.get((layout, layer), '')}")
            if "implicit_gemm" in d and "cudnn_IMPLICIT_GEMM" in d:
                r0.append(d["cudnn_IMPLICIT_GEMM"] / d["implicit_gemm"])
            if "implicit_precomp_gemm" in d and "cudnn_IMPLICIT_PRECOMP_GEMM" in d:
                r1.append(d["cudnn_IMPLICIT_PRECOMP_GEMM"] / d["implicit_precomp_gemm"])
            ours = [d[i] for i in OURS if i in d]
            if "implicit_precomp_gemm" in d and "implicit_precomp_gemm_per_element" in d:
                rp.append(d["implicit_precomp_gemm_per_element"] / d["implicit_precomp_gemm"])
            if ours and "cudnn_best_fma" in d:
                rb.append(d["cudnn_best_fma"] / min(ours))
        print(f"geomean speedup vs cuDNN IMPLICIT_GEMM:         {geo(r0):.3f}  ({len(r0)} layers, target >= 1.0)")
        print(f"geomean speedup vs cuDNN IMPLICIT_PRECOMP_GEMM: {geo(r1):.3f}  ({len(r1)} layers, target >= 1.0)")
        print(f"geomean our best vs cuDNN best FMA:             {geo(rb):.3f}  ({len(rb)} layers, target >= 0.8)")
        if rp:
            print(f"geomean PRECOMP per-tap table vs per-element:   {geo(rp):.3f}  ({len(rp)} layers, > 1: per-tap faster)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "igemm.json")
