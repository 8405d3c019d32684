#!/usr/bin/env python3
# Floors of a Sparse DNN challenge run from its active counts (spdnn_infer --active-csv FILE):
#   scripts/spdnn-floors.py bench/results/edd3b8e/spdnn_active.csv [--width 1024] [--layers 120]
#                           [--crowded 14] [--fma-rate 25.4e12] [--bandwidth 4.16e12] [--images 60000]
# Per width / layer count: the multiply-adds of all layers and of the first `crowded` layers (each
# entering image x N outputs x 32 nonzeros), their time at `fma-rate` (default: cuBLAS's measured fp32
# rate on the H200, 50.8 TFLOP/s = 25.4 T FMA/s), the feature traffic of the crowded layers (each
# entering image's row of N fp32 values read and written once) at `bandwidth`, and the multiply-adds
# of one late layer. Arithmetic on measured counts: a floor, not a measurement.
import argparse
import csv

ap = argparse.ArgumentParser()
ap.add_argument("csv")
ap.add_argument("--width", type=int, default=1024)
ap.add_argument("--layers", type=int, default=120)
ap.add_argument("--crowded", type=int, default=14)
ap.add_argument("--fma-rate", type=float, default=25.4e12)
ap.add_argument("--bandwidth", type=float, default=4.16e12)
ap.add_argument("--images", type=int, default=60000)
a = ap.parse_args()
act = [int(r["active"]) for r in csv.DictReader(open(a.csv))
       if int(r["width"]) == a.width and int(r["layers"]) == a.layers]
if not act:
    raise SystemExit(f"no rows for width {a.width}, {a.layers} layers in {a.csv}")
entering = [a.images] + act[:-1]
fma = sum(i * a.width * 32 for i in entering)
fma_c = sum(i * a.width * 32 for i in entering[:a.crowded])
traffic_c = sum(entering[:a.crowded]) * a.width * 8
print(f"N {a.width}, L {a.layers}: {fma / 1e9:.2f} G FMA in all ({fma / a.fma_rate * 1e3:.3f} ms), "
      f"first {a.crowded} layers {fma_c / 1e9:.2f} G ({fma_c / a.fma_rate * 1e3:.3f} ms); "
      f"their feature traffic {sum(entering[:a.crowded])} image-layers, {traffic_c / 1e9:.2f} GB "
      f"({traffic_c / a.bandwidth * 1e3:.3f} ms); after layer {a.crowded}: {act[a.crowded - 1]} images, "
      f"{entering[-1] * a.width * 32 / 1e6:.1f} M FMA per late layer "
      f"({entering[-1] * a.width * 32 / a.fma_rate * 1e6:.2f} us)")
