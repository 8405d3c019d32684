#!/usr/bin/env python3
"""How much of a crowded SpDNN layer's work multiplies zeros: the share of (input row, tile of G images) pairs whose
features are zero in every image of the tile, per layer, on the CPU (numpy + scipy; no GPU).

    scripts/spdnn-zero-inputs.py [--width 1024] [--layers 8] [--data data/spdnn] [--tile 128]

Why (session 35): late4 computes a 16-row block x 128 images per warp; an input zero in all 128 images adds exactly
nothing to its 64 chains (finite weights). Each input row feeds 32 outputs, so the share printed is also the share
of the layer's FMAs such a warp could skip. Session 35 built that skip (bench/results/a8d8911/): ncu counted 45% /
25-28% / 23-32% fewer FFMA in the first three launches (these shares: 43% / 25% / 27-31%), and those
launches' times moved by -3.1% to +1.5%.

The images: the first 1200 official N = 1024 images (sparse-images-1024-first1200.tsv), scaled up by nearest
neighbour for the larger widths as spdnn_infer does; the weights: the challenge's structure for cycle 0 (layers 1
.. log2(N / 16)), as the generator builds them (row j reads inputs r(j) + k M and r(j) - 2^s + k M, k = 0..15,
M = N / 16, r(j) = j mod M, weights 1/16), biases -0.3 / -0.35 / -0.4 / -0.45. Tiles are G consecutive survivors
of the 1200 (spdnn_infer's 60000 rows repeat them), so the shares are estimates of the real run's, whose tiles
hold survivors of 60000 in their compacted order.

The last column (session 36): the share of quads -- 4 consecutive entries of a row's input list, which the generator
stores in ascending order -- that are zero in the tile, each of the layer's M lists once. late4 skips such a quad's products
where the images' piece mask says so (jhdnnSparseDnnLayerForwardCompactMasked, bench/results/3274830/).
"""
import argparse
import math
import os

import numpy as np
import scipy.sparse as sp


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--width", type=int, default=1024, choices=[1024, 4096, 16384, 65536])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--data", default=os.environ.get("JHDNN_SPDNN_DIR", "data/spdnn"))
    ap.add_argument("--tile", type=int, default=128)
    a = ap.parse_args()
    n, side = a.width, int(math.isqrt(a.width))
    m = n // 16
    stages = int(math.log2(m))
    bias = {1024: -0.3, 4096: -0.35, 16384: -0.4, 65536: -0.45}[n]
    t = np.loadtxt(os.path.join(a.data, "sparse-images-1024-first1200.tsv"), ndmin=2)
    y = np.zeros((1200, 1024), dtype=np.float32)
    y[t[:, 0].astype(int) - 1, t[:, 1].astype(int) - 1] = t[:, 2]
    f = side // 32
    y = y.reshape(1200, 32, 32).repeat(f, 1).repeat(f, 2).reshape(1200, n)
    j = np.arange(n)
    print(f"N = {n}, tiles of {a.tile} images: layer, images entering, share of (input, tile) pairs zero in the tile, "
          "share of (list quad, tile) pairs zero in the tile")
    weighted = total = 0.0
    for layer in range(1, min(a.layers, stages) + 1):
        s = layer - 1
        r = j % m
        ins = np.concatenate([r[None, :] + m * np.arange(16)[:, None], ((r - 2**s) % m)[None, :] + m * np.arange(16)[:, None]])
        w = sp.csc_matrix((np.full(32 * n, 1 / 16, dtype=np.float32), (ins.T.ravel(), np.repeat(j, 32))), shape=(n, n))
        alive = (y != 0).any(1)
        nz = y[alive] != 0
        tiles = max(nz.shape[0] // a.tile, 1)
        tile_nz = nz[: tiles * a.tile].reshape(tiles, -1, n).any(1)  # [tile, input]: a nonzero in the tile
        share = 1.0 - tile_nz.mean()
        lists = np.sort(ins.T[:m], axis=1)  # one list per residue (its 16 rows share it), in the generator's order
        quad_share = 1.0 - tile_nz[:, lists].reshape(tiles, lists.shape[0], 8, 4).any(3).mean()
        print(f"{layer:3d} {nz.shape[0]:6d} {share:.3f} {quad_share:.3f}")
        weighted += share * nz.shape[0]
        total += nz.shape[0]
        y = np.clip((sp.csr_matrix(y) @ w).toarray() + bias, 0, 32).astype(np.float32)
    print(f"weighted by images: {weighted / total:.3f}")


if __name__ == "__main__":
    main()
