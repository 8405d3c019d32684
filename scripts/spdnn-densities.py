#!/usr/bin/env python3
"""The feature maps' density layer by layer on the official N = 1024 network (CPU, numpy / scipy: /usr/bin/python3).

    /usr/bin/python3 scripts/spdnn-densities.py [--data data/spdnn] [--layers 30]

For each layer l: the images still alive (any nonzero feature) among the first 1200 official images, and the share of
nonzero features among the alive images (layer 0: the input). Y_l = min(max(Y_{l-1} W_l - 0.3, 0), 32) in float32,
the challenge's layer (float32 sums in scipy's order, not the fma chain: densities, not validation). Written for
session 29's question whether skipping zero features could cut the crowded layers' work (src/sparse/README.md,
"Session 29").
"""
import argparse

import numpy as np
import scipy.sparse as sp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/spdnn")
    ap.add_argument("--layers", type=int, default=30)
    a = ap.parse_args()
    n = 1024
    im = np.loadtxt(f"{a.data}/sparse-images-1024-first1200.tsv", dtype=np.int64)
    y = sp.csr_matrix((im[:, 2].astype(np.float32), (im[:, 0] - 1, im[:, 1] - 1)), shape=(1200, n)).toarray()
    print("| layer | alive images | nonzero share among the alive |")
    print("|---|---|---|")
    print(f"| 0 (input) | {int((y != 0).any(1).sum())} | {(y != 0).mean():.3f} |")
    for l in range(1, a.layers + 1):
        w = np.loadtxt(f"{a.data}/neuron1024/n1024-l{l}.tsv")
        wm = sp.csr_matrix((w[:, 2].astype(np.float32), (w[:, 0].astype(int) - 1, w[:, 1].astype(int) - 1)),
                           shape=(n, n))
        y = np.minimum(np.maximum((sp.csr_matrix(y) @ wm).toarray() - np.float32(0.3), 0), 32).astype(np.float32)
        alive = (y != 0).any(1)
        share = (y[alive] != 0).mean() if alive.any() else 0.0
        print(f"| {l} | {int(alive.sum())} | {share:.3f} |")


if __name__ == "__main__":
    main()
