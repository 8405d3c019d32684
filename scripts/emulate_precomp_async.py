#!/usr/bin/env python3
# Host emulation of precomp_tap_setup_kernel + precomp_async_kernel (src/conv/implicit_gemm/
# implicit_gemm.cu), written without a GPU to check the new kernel's index arithmetic before its
# first GPU run: thread roles, the 4-stage cp.async ring (a copy lands when issued, so issuing into
# the stage being read would corrupt it), zero-fill and the "safe" addresses of skipped copies
# (asserted inside x / wt), the re-laid-out filter, the epilogue's row/column map, poisoned (NaN)
# shared memory. Compared with a float64 direct convolution. It mirrors the code as of the commit
# that added it; the GPU tests (tests/test_conv_implicit_gemm.cpp) remain the authority.
# Usage: scripts/emulate_precomp_async.py [tile ...]   (tiles: 128x128 128x64 64x64 256x8; ~10 min all)
import numpy as np, itertools, sys
kThreads, kBK, kStages = 256, 8, 4
TILES = {'128x128': (128, 128, 8, 8), '128x64': (128, 64, 8, 4), '64x64': (64, 64, 4, 4), '256x8': (256, 8, 8, 1)}

def problem(N, C, H, W, K, R, S, pad, stride, dil, G=1, nhwc=False, flip=0, T=1, D=1):
    P = (H + 2 * pad - ((R - 1) * dil + 1)) // stride + 1
    Q = (W + 2 * pad - ((S - 1) * dil + 1)) // stride + 1
    pd = pad if T > 1 else 0  # 3-D: the same pad / stride / dilation along depth
    O = (D + 2 * pd - ((T - 1) * dil + 1)) // stride + 1 if T > 1 else D
    cpg, kpg = C // G, K // G
    def strides(n, c, d, h, w, nhwc):  # 5-D (n, c, d, h, w) packed strides
        if nhwc: return [d * h * w * c, 1, h * w * c, w * c, c]
        return [c * d * h * w, d * h * w, h * w, w, 1]
    xs = strides(N, C, D, H, W, nhwc); ys = strides(N, K, O, P, Q, nhwc); ws = strides(K, cpg, T, R, S, nhwc)
    return dict(N=N, C=C, D=D, H=H, W=W, K=K, T=T, R=R, S=S, O=O, P=P, Q=Q, G=G, cpg=cpg, kpg=kpg, pad_d=pd, pad_h=pad,
                pad_w=pad, sd=stride if T > 1 else 1, sh=stride, sw=stride, dd=dil if T > 1 else 1, dh=dil, dw=dil,
                flip=flip, xs=xs, ws=ws, ys=ys,
                M=N * O * P * Q, nhwc=nhwc)

def reference(p, x, w):
    y = {}
    for n, k, o, pp, q in itertools.product(range(p['N']), range(p['K']), range(p['O']), range(p['P']), range(p['Q'])):
        g = k // p['kpg']; acc = 0.0
        for c, t, r, s in itertools.product(range(p['cpg']), range(p['T']), range(p['R']), range(p['S'])):
            d = o * p['sd'] - p['pad_d'] + t * p['dd']; h = pp * p['sh'] - p['pad_h'] + r * p['dh']
            wi = q * p['sw'] - p['pad_w'] + s * p['dw']
            if not (0 <= d < p['D'] and 0 <= h < p['H'] and 0 <= wi < p['W']): continue
            tf, rf, sf = (p['T'] - 1 - t, p['R'] - 1 - r, p['S'] - 1 - s) if p['flip'] else (t, r, s)
            xs, ws = p['xs'], p['ws']
            acc += float(x[n * xs[0] + (g * p['cpg'] + c) * xs[1] + d * xs[2] + h * xs[3] + wi * xs[4]]) * \
                   float(w[k * ws[0] + c * ws[1] + tf * ws[2] + rf * ws[3] + sf * ws[4]])
        ys = p['ys']; y[n * ys[0] + k * ys[1] + o * ys[2] + pp * ys[3] + q * ys[4]] = acc
    return y

def setup(p, w):  # precomp_tap_setup_kernel + write_table_entry(per_tap = 1)
    taps = p['T'] * p['R'] * p['S']
    off = [0] * taps; tap = [None] * taps
    for k in range(taps):
        s = k % p['S']; rt = k // p['S']; r = rt % p['R']; t = rt // p['R']
        dt, dh, dw = t * p['dd'], r * p['dh'], s * p['dw']
        off[k] = dt * p['xs'][2] + dh * p['xs'][3] + dw * p['xs'][4]
        tap[k] = (dt, dh, dw, 1)
    kpg4 = (p['kpg'] + 3) // 4 * 4
    nblk = p['cpg'] // kBK
    wt = np.full(p['G'] * p['cpg'] * taps * kpg4, np.nan, np.float32)
    for gb in range(p['G'] * nblk):
        for n in range(kpg4):
            g, cb = gb // nblk, gb % nblk
            w_row = (g * p['kpg'] + n) * p['ws'][0]
            base = gb * taps * kBK * kpg4 + n
            for ci in range(kBK):
                w_c = w_row + (cb * kBK + ci) * p['ws'][1]
                t = r = s = 0
                for tp in range(taps):
                    v = 0.0
                    if n < p['kpg']:
                        tf, rf, sf = (p['T'] - 1 - t, p['R'] - 1 - r, p['S'] - 1 - s) if p['flip'] else (t, r, s)
                        v = w[w_c + tf * p['ws'][2] + rf * p['ws'][3] + sf * p['ws'][4]]
                    wt[base + (tp * kBK + ci) * kpg4] = v
                    s += 1
                    if s == p['S']:
                        s = 0; r += 1
                        if r == p['R']: r = 0; t += 1
    assert not np.isnan(wt).any()
    return off, tap, wt, kpg4

def decode_pixel(p, m):
    q = m % p['Q']; npo = m // p['Q']; pp = npo % p['P']; no = npo // p['P']; o = no % p['O']; n = no // p['O']
    return n, o, pp, q

def kernel(p, tile, x, wt, off, tap, kpg4, y, alpha, beta):
    BM, BN, TM, TN = TILES[tile]
    TPM, TPN = BM // TM, BN // TN
    AS, BS = BM + 4, BN + 4
    kALoads = BM * kBK // kThreads; kTPP = kBK // kALoads
    kAStage, kBStage = kBK * AS, kBK * BS
    kRing = kStages * (kAStage + kBStage); kEpi = 8 * 32 * 17
    channel_fast = 1 if (p['xs'][1] == 1 and p['C'] > 1) else 0
    taps = p['T'] * p['R'] * p['S']; steps = taps * (p['cpg'] // kBK)
    xf = x.reshape(-1)
    for bx, by, g in itertools.product(range((p['M'] + BM - 1) // BM), range((p['kpg'] + BN - 1) // BN), range(p['G'])):
        m0, n0 = bx * BM, by * BN
        smem = np.full(max(kRing, kEpi), np.nan, np.float32)  # poisoned shared memory
        bs0 = kStages * kAStage
        th = []
        for tid in range(kThreads):
            if channel_fast: a_m, a_k0, a_kstep = tid // kTPP, (tid % kTPP) * kALoads, 1
            else: a_m, a_k0, a_kstep = tid % BM, tid // BM, kTPP
            a_pixel = m0 + a_m < p['M']
            n, o, pp, q = decode_pixel(p, m0 + a_m if a_pixel else 0)
            d0, h0, w0 = o * p['sd'] - p['pad_d'], pp * p['sh'] - p['pad_h'], q * p['sw'] - p['pad_w']
            xs = p['xs']
            x_pix = n * xs[0] + (g * p['cpg'] + a_k0) * xs[1] + d0 * xs[2] + h0 * xs[3] + w0 * xs[4]
            a_jstep = a_kstep * xs[1]; x_safe = a_k0 * xs[1]
            kBVecs = kBK * BN // 4; kBCopies = (kBVecs + kThreads - 1) // kThreads
            b_row, b_col = tid // (BN // 4), 4 * (tid % (BN // 4))
            kBRowsPerRound = max(kThreads // (BN // 4), 1)
            b_col_ok = n0 + b_col < kpg4
            b_ok = 0
            for j in range(kBCopies):
                if (kBVecs % kThreads == 0 or tid + j * kThreads < kBVecs) and b_col_ok: b_ok |= 1 << j
            wb = (g * p['cpg'] * taps + b_row) * kpg4 + n0 + b_col
            a_dst = a_k0 * AS + a_m; b_dst = bs0 + b_row * BS + b_col  # in floats
            for j in range(kBCopies):
                inn = kBVecs % kThreads == 0 or tid + j * kThreads < kBVecs
                if inn and not ((b_ok >> j) & 1):
                    for st in range(kStages):
                        a0 = bs0 + st * kBStage + (b_row + j * kBRowsPerRound) * BS + b_col
                        smem[a0:a0 + 4] = 0
            th.append(dict(a_m=a_m, a_k0=a_k0, a_kstep=a_kstep, a_pixel=a_pixel, d0=d0, h0=h0, w0=w0, x_pix=x_pix,
                           a_jstep=a_jstep, x_safe=x_safe, b_ok=b_ok, wb=wb, a_dst=a_dst, b_dst=b_dst, i_tap=0,
                           tp=tap[0], x_tap=off[0],
                           kBCopies=kBCopies, kBRowsPerRound=kBRowsPerRound))
        def issue(t, stage):
            tp = t['tp']; x_tap = t['x_tap']  # loaded one issue ahead
            ok = t['a_pixel'] and 0 <= t['d0'] + tp[0] < p['D'] and 0 <= t['h0'] + tp[1] < p['H'] and \
                 0 <= t['w0'] + tp[2] < p['W']
            xa = t['x_pix'] + x_tap if ok else t['x_safe']
            sa = t['a_dst'] + stage * kAStage
            for j in range(kALoads):
                src = xa + j * t['a_jstep']
                assert 0 <= src < xf.size  # every named address is inside x, copied or not
                smem[sa + j * t['a_kstep'] * AS] = xf[src] if ok else 0.0
            sb = t['b_dst'] + stage * kBStage
            for j in range(t['kBCopies']):
                if (t['b_ok'] >> j) & 1:
                    src = t['wb'] + j * t['kBRowsPerRound'] * kpg4
                    assert 0 <= src and src + 4 <= wt.size and src % 4 == 0
                    d = sb + j * t['kBRowsPerRound'] * BS
                    assert d % 4 == 0 and d + 4 <= bs0 + kStages * kBStage
                    smem[d:d + 4] = wt[src:src + 4]
            t['wb'] += kBK * kpg4
            t['i_tap'] += 1
            if t['i_tap'] == taps: t['i_tap'] = 0; t['x_pix'] += kBK * p['xs'][1]
            t['tp'] = tap[t['i_tap']]; t['x_tap'] = off[t['i_tap']]
        for st in range(kStages - 1):
            if st < steps:
                for t in th: issue(t, st)
        acc = np.zeros((kThreads, TM, TN), np.float64)
        rd = 0
        for step in range(steps):
            if step + kStages - 1 < steps:
                for t in th: issue(t, kStages - 1 if rd == 0 else rd - 1)
            sa, sb = rd * kAStage, bs0 + rd * kBStage
            for tid in range(kThreads):
                warp, lane = tid // 32, tid % 32
                tm = (warp % (TPM // 8)) * 8 + lane % 8; tn = (warp // (TPM // 8)) * 4 + lane // 8
                for kk in range(kBK):
                    a = [smem[sa + kk * AS + (i // 4) * 4 * TPM + tm * 4 + i % 4] for i in range(TM)]
                    if TN % 4 == 0: b = [smem[sb + kk * BS + (j // 4) * 4 * TPN + tn * 4 + j % 4] for j in range(TN)]
                    else: b = [smem[sb + kk * BS + j * TPN + tn] for j in range(TN)]
                    acc[tid] += np.outer(np.array(a, np.float64), np.array(b, np.float64))
            rd = 0 if rd == kStages - 1 else rd + 1
        # store_tile
        def store(m, nn, v):
            n, o, pp, q = decode_pixel(p, m); ys = p['ys']
            idx = n * ys[0] + o * ys[2] + pp * ys[3] + q * ys[4] + g * p['kpg'] * ys[1] + nn * ys[1]
            y[idx] = alpha * v + (beta * y[idx] if beta != 0 else 0.0)
        for tid in range(kThreads):
            warp, lane = tid // 32, tid % 32
            tm = (warp % (TPM // 8)) * 8 + lane % 8; tn = (warp // (TPM // 8)) * 4 + lane // 8
            if TN % 4 == 0:
                wr, wc = (warp % (TPM // 8)) * 32, (warp // (TPM // 8)) * 16
                for ic in range(TM // 4):
                    for jc in range(TN // 4):
                        # e[(lane % 8) * 4 + r4][(lane / 8) * 4 + c4] written by lane; read by lane l = row
                        for r4 in range(4):
                            for c4 in range(4):
                                row, col = (lane % 8) * 4 + r4, (lane // 8) * 4 + c4
                                m = m0 + ic * 4 * TPM + wr + row; nn = n0 + jc * 4 * TPN + wc + col
                                if m < p['M'] and nn < p['kpg']: store(m, nn, acc[tid][ic * 4 + r4][jc * 4 + c4])
            else:
                for i in range(TM):
                    m = m0 + (i // 4) * 4 * TPM + tm * 4 + i % 4
                    if m >= p['M']: continue
                    for j in range(TN):
                        nn = n0 + j * TPN + tn
                        if nn < p['kpg']: store(m, nn, acc[tid][i][j])

def run(name, p, tile, alpha=1.0, beta=0.0, seed=1):
    rng = np.random.default_rng(seed)
    xsz = p['N'] * p['C'] * p['D'] * p['H'] * p['W']; wsz = p['K'] * p['cpg'] * p['T'] * p['R'] * p['S']
    ysz = p['N'] * p['K'] * p['O'] * p['P'] * p['Q']
    x = rng.uniform(-1, 1, xsz).astype(np.float32); w = rng.uniform(-1, 1, wsz).astype(np.float32)
    y0 = rng.uniform(-1, 1, ysz).astype(np.float64)
    y = y0.copy()
    off, tap, wt, kpg4 = setup(p, w)
    kernel(p, tile, x, wt, off, tap, kpg4, y, alpha, beta)
    ref = reference(p, x, w)
    assert len(ref) == ysz
    err = 0.0
    for idx, v in ref.items():
        want = alpha * v + beta * y0[idx]
        err = max(err, abs(y[idx] - want))
    print('%-34s %-8s %s  max err %.2e' % (name, tile, 'NHWC' if p['nhwc'] else 'NCHW', err), flush=True)
    assert err < 1e-4, name

if __name__ == '__main__':
    cases = [
        ('ring_1step_1x1_c8_k8', dict(N=3, C=8, H=7, W=9, K=8, R=1, S=1, pad=0, stride=1, dil=1)),
        ('ring_3steps_3x1_c8_k33', dict(N=1, C=8, H=5, W=4, K=33, R=3, S=1, pad=1, stride=1, dil=1)),
        ('ring_5steps_1x5_c8_k17', dict(N=1, C=8, H=3, W=9, K=17, R=1, S=5, pad=2, stride=1, dil=1)),
        ('grouped_g2_c32_k10_s2_flip', dict(N=1, C=32, H=6, W=5, K=10, R=3, S=3, pad=1, stride=2, dil=1, G=2, flip=1)),
        ('dil2_pad4_c16_k65', dict(N=1, C=16, H=5, W=6, K=65, R=3, S=3, pad=4, stride=1, dil=2)),
        ('k130_c8_m300', dict(N=3, C=8, H=10, W=10, K=130, R=1, S=1, pad=0, stride=1, dil=1)),
        ('3d_t3_c16_k20_flip', dict(N=1, C=16, D=4, H=4, W=5, K=20, T=3, R=2, S=3, pad=1, stride=1, dil=1, flip=1)),
        ('3d_t2_s2_dil2_c8_k9', dict(N=2, C=8, D=5, H=5, W=4, K=9, T=2, R=2, S=2, pad=1, stride=2, dil=2)),
    ]
    only = sys.argv[1:] 
    for name, kw in cases:
        for nhwc in (False, True):
            for tile in TILES:
                if only and tile not in only: continue
                run(name, problem(nhwc=nhwc, **kw), tile, *((0.5, 0.75) if nhwc else (1.0, 0.0)))
