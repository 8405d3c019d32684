# Transliteration of conv_wgmma.cu's round-2 index maps (tile decode, reduction ranges of the
# split-K ranks, the partial-tile write of the consumers, the rank row slices of the DSMEM
# reduction, and the register epilogue for every tile width) to plain Python; checks that every
# output (pixel, channel) of every problem is produced exactly once, from the sum of every
# reduction block exactly once. Pure index arithmetic: the wgmma accumulator layout (rows
# warp*16 + lane/4 + 8h, columns 8j + 2*(lane%4) + {0,1} in acc[4j + 2h + {0,1}]) is the one the
# GPU-verified 128-wide kernel already relies on.
import itertools

kBM, kRowBytes, kPartStride = 128, 128, 136

def pick_box(N, P, Q, R, S, sh, sw, dh, dw):
    best = None
    bw = 1
    while bw <= 64:
        bh = 1
        while bh * bw <= kBM and bh <= 64:
            bn = kBM // (bw * bh)
            if not (bw * sw > 256 or bh * sh > 256):
                tiles = -(-Q // bw) * -(-P // bh) * -(-N // bn)
                halo = ((bw - 1) * sw + (S - 1) * dw + 1) * ((bh - 1) * sh + (R - 1) * dh + 1) * bn
                if best is None or tiles < best[0] or (tiles == best[0] and halo < best[1]):
                    best = (tiles, halo, bw, bh, bn)
            bh *= 2
        bw *= 2
    return best[2:]

def decode(tile, BN, tiles_k, tiles_q, tiles_p, bw, bh, bn):
    k0 = (tile % tiles_k) * BN; tile //= tiles_k
    q0 = (tile % tiles_q) * bw; tile //= tiles_q
    p0 = (tile % tiles_p) * bh
    n0 = (tile // tiles_p) * bn
    return n0, p0, q0, k0

def out_pixel(m, n0, p0, q0, bw, bh, N, P, Q):
    q, p, n = q0 + m % bw, p0 + (m // bw) % bh, n0 + m // (bw * bh)
    return None if (q >= Q or p >= P or n >= N) else (n, p, q)

def check(N, C, H, W, K, R, S, pad, st, es, BN, split_req):
    P = (H + 2 * pad - R) // st + 1; Q = (W + 2 * pad - S) // st + 1
    bw, bh, bn = pick_box(N, P, Q, R, S, st, st, 1, 1)
    tiles_q, tiles_p, tiles_img = -(-Q // bw), -(-P // bh), -(-N // bn)
    kBK = kRowBytes // es
    kblocks = R * S * -(-C // kBK)
    split = 1
    if split_req > 1:
        while split * 2 <= split_req and split * 2 <= kblocks and split < 8: split *= 2
    if split > 1: BN = 128
    tiles_k = -(-K // BN)
    num_tiles = tiles_q * tiles_p * tiles_img * tiles_k
    written = {}
    for tile in range(num_tiles):
        n0, p0, q0, k0 = decode(tile, BN, tiles_k, tiles_q, tiles_p, bw, bh, bn)
        if split == 1:
            blocks = list(range(kblocks))
            for cg, warp, lane, h, j in itertools.product(range(2), range(4), range(32), range(2), range(BN // 8)):
                m = cg * 64 + warp * 16 + lane // 4 + h * 8
                px = out_pixel(m, n0, p0, q0, bw, bh, N, P, Q)
                if px is None: continue
                k = k0 + j * 8 + (lane % 4) * 2
                if k >= K: continue
                for kk in (k, k + 1):
                    if kk < K: written.setdefault((px, kk), []).append(tuple(blocks))
        else:
            # ranks' reduction ranges partition [0, kblocks), none empty
            ranges = [(r * kblocks // split, (r + 1) * kblocks // split) for r in range(split)]
            assert all(b > a for a, b in ranges), ranges
            assert sorted(b for a, b0 in ranges for b in range(a, b0)) == list(range(kblocks))
            # each rank's consumers write every (m, col) of the 128 x 128 partial exactly once
            part = {}
            for cg, warp, lane, h, j in itertools.product(range(2), range(4), range(32), range(2), range(16)):
                m = cg * 64 + warp * 16 + lane // 4 + h * 8
                off = m * kPartStride + j * 8 + (lane % 4) * 2
                assert off % 2 == 0 and off + 1 < kBM * kPartStride
                for d in (0, 1): part[off + d] = part.get(off + d, 0) + 1
            assert len(part) == kBM * 128 and all(v == 1 for v in part.values())
            assert kBM * kPartStride * 4 <= 6 * (kBM + 128) * kRowBytes
            rows = kBM // split
            seen = set()
            for rank in range(split):
                for e in range(rows * 64):  # threads x loop: e = threadIdx.x + i * 384 covers [0, rows*64)
                    m = rank * rows + e // 64; col = (e % 64) * 2
                    assert (m * kPartStride + col) in part
                    assert (m, col) not in seen; seen.add((m, col))
                    px = out_pixel(m, n0, p0, q0, bw, bh, N, P, Q)
                    if px is None or k0 + col >= K: continue
                    blocks = tuple(sorted(b for a, b0 in ranges for b in range(a, b0)))
                    for kk in (k0 + col, k0 + col + 1):
                        if kk < K: written.setdefault((px, kk), []).append(blocks)
            assert len(seen) == kBM * 64
    for n, p, q, k in itertools.product(range(N), range(P), range(Q), range(K)):
        w = written.get(((n, p, q), k))
        assert w is not None and len(w) == 1, ((n, p, q, k), w, BN, split)
        assert w[0] == tuple(range(kblocks))
    assert len(written) == N * P * Q * K
    return split

cases = [  # N, C, H, W, K, R, S, pad, stride
    (1, 256, 14, 14, 256, 3, 3, 1, 1), (1, 1024, 14, 14, 256, 1, 1, 0, 1), (2, 16, 17, 9, 200, 3, 3, 1, 1),
    (1, 64, 15, 15, 136, 1, 1, 0, 1), (1, 256, 8, 8, 64, 3, 3, 1, 1), (2, 32, 20, 19, 48, 3, 3, 2, 3),
    (3, 8, 7, 7, 5, 3, 3, 1, 1), (2, 32, 9, 9, 48, 3, 3, 1, 1),
]
n = 0
for (N, C, H, W, K, R, S, pad, st) in cases:
    for es in (2, 4):
        for BN, sp in ((64, 1), (128, 1), (256, 1), (128, 2), (128, 8)):
            check(N, C, H, W, K, R, S, pad, st, es, BN, sp); n += 1
print(f"sim_conv_wgmma: {n} configurations ok")
