# Transliteration of conv_gemm.cu's plan, im2col kernels, chunk_gemm (as GemmDesc semantics) and
# transpose_out to numpy; checks against a direct convolution for NCHW/NHWC x KCRS/KRSC, groups,
# stride, dilation, padding, both modes, chunking, both NCHW strategies, 1x1 identity paths.
import numpy as np, itertools
kRun = 8

def packed(d, cl):
    n, c, dd, h, w = d
    if cl: s = [None]*5; s[1]=1; s[4]=c; s[3]=w*c; s[2]=h*w*c; s[0]=dd*h*w*c
    else:  s = [None]*5; s[4]=1; s[3]=w; s[2]=h*w; s[1]=dd*h*w; s[0]=c*dd*h*w
    return s

def conv_ref(x, w, N, C, K, G, D, H, W, T, R, S, O, P, Q, pad, st, dil, xs, ws, flip):
    cpg, kpg = C//G, K//G
    y = np.zeros((N, K, O, P, Q))
    for n, k, o, p, q in itertools.product(range(N), range(K), range(O), range(P), range(Q)):
        g = k // kpg; acc = 0.0
        for c, t, r, s in itertools.product(range(cpg), range(T), range(R), range(S)):
            d = o*st[0]-pad[0]+t*dil[0]; h = p*st[1]-pad[1]+r*dil[1]; ww = q*st[2]-pad[2]+s*dil[2]
            if not (0 <= d < D and 0 <= h < H and 0 <= ww < W): continue
            tf, rf, sf = (T-1-t, R-1-r, S-1-s) if flip else (t, r, s)
            acc += x[n*xs[0]+(g*cpg+c)*xs[1]+d*xs[2]+h*xs[3]+ww*xs[4]] * w[k*ws[0]+c*ws[1]+tf*ws[2]+rf*ws[3]+sf*ws[4]]
        y[n, k, o, p, q] = acc
    return y

def gemm(d, A, B, Cbuf):  # GemmDesc semantics, column-major
    for bo, bi in itertools.product(range(d['batch_outer']), range(d['batch_inner'])):
        ao = d['a'] + bo*d['a_outer'] + bi*d['a_inner']; bo_ = d['b'] + bo*d['b_outer'] + bi*d['b_inner']
        co = d['c'] + bo*d['c_outer'] + bi*d['c_inner']
        for i, j in itertools.product(range(d['m']), range(d['n'])):
            s = 0.0
            for kk in range(d['k']):
                av = A[ao + (kk + i*d['lda'] if d['ta'] else i + kk*d['lda'])]
                bv = B[bo_ + (j + kk*d['ldb'] if d['tb'] else kk + j*d['ldb'])]
                s += av*bv
            off = co + i + j*d['ldc']
            Cbuf[off] = d['alpha']*s + (d['beta']*Cbuf[off] if d['beta'] != 0 else 0)

def simulate(N, C, K, G, D, H, W, T, R, S, pad, st, dil, x_nhwc, w_krsc, y_nhwc, flip, cap_imgs, force, alpha, beta, rng):
    O = (D+2*pad[0]-((T-1)*dil[0]+1))//st[0]+1; P = (H+2*pad[1]-((R-1)*dil[1]+1))//st[1]+1
    Q = (W+2*pad[2]-((S-1)*dil[2]+1))//st[2]+1
    cpg, kpg = C//G, K//G
    xs = packed((N, C, D, H, W), x_nhwc); ws = packed((K, cpg, T, R, S), w_krsc); ys = packed((N, K, O, P, Q), y_nhwc)
    x = rng.integers(-3, 4, size=N*C*D*H*W).astype(float); w = rng.integers(-3, 4, size=K*cpg*T*R*S).astype(float)
    y0 = rng.integers(-3, 4, size=N*K*O*P*Q).astype(float)
    ref = alpha*conv_ref(x, w, N, C, K, G, D, H, W, T, R, S, O, P, Q, pad, st, dil, xs, ws, flip)
    for n, k, o, p, q in itertools.product(range(N), range(K), range(O), range(P), range(Q)):
        ref[n, k, o, p, q] += beta*y0[n*ys[0]+k*ys[1]+o*ys[2]+p*ys[3]+q*ys[4]]
    y = y0.copy() if beta != 0 else np.full_like(y0, np.nan)
    # plan
    form = 'nhwc' if y_nhwc else 'nchw'
    c_last = w_krsc and not (T*R*S == 1 or cpg == 1)  # w_packed_kcrs() is true for those, checked first
    red = cpg*T*R*S; opq = O*P*Q
    via = False
    if form == 'nchw':
        tiles = (opq + 127)//128; fill = opq/(tiles*128)
        if force == 'transpose' or (force is None and fill < 0.8): form, via = 'nhwc', True
    one = T == R == S == 1 and st == (1, 1, 1) and pad == (0, 0, 0)
    identity = one and not via and ((form == 'nchw' and not x_nhwc) or (form == 'nhwc' and x_nhwc))
    col_per_img = opq*C*T*R*S; tmp_per_img = opq*K if via else 0
    chunk = N if identity else min(N, cap_imgs)
    col = np.full(chunk*col_per_img, np.nan); tmp = np.full(chunk*tmp_per_img, np.nan)
    def tap_decode(rd):
        taps = T*R*S
        if c_last: c, trs = rd % cpg, rd // cpg
        else: c, trs = rd // taps, rd % taps
        return [c, trs//(S*R), (trs//S) % R, trs % S]  # c, t, r, s
    def tap_next(tp):
        c, t, r, s = tp
        if c_last:
            c += 1
            if c == cpg: c = 0; s += 1
            if s == S: s = 0; r += 1
            if r == R: r = 0; t += 1
        else:
            s += 1
            if s == S: s = 0; r += 1
            if r == R: r = 0; t += 1
            if t == T: t = 0; c += 1
        tp[:] = [c, t, r, s]
    def x_at(xoff, img, g, tp, o, p_, q):
        c, t, r, s = tp
        if flip: t, r, s = T-1-t, R-1-r, S-1-s
        d = o*st[0]-pad[0]+t*dil[0]; h = p_*st[1]-pad[1]+r*dil[1]; ww = q*st[2]-pad[2]+s*dil[2]
        if not (0 <= d < D and 0 <= h < H and 0 <= ww < W): return 0.0
        return x[xoff + img*xs[0] + (g*cpg+c)*xs[1] + d*xs[2] + h*xs[3] + ww*xs[4]]
    n0 = 0
    while n0 < N:
        nc = chunk if n0 + chunk <= N else N - n0
        xoff = n0*xs[0]
        if not identity:
            if form == 'nchw':
                runs = (red + kRun - 1)//kRun
                for z, run, o_pq in itertools.product(range(nc*G), range(runs), range(opq)):
                    q, p_, o = o_pq % Q, (o_pq//Q) % P, o_pq//(Q*P)
                    img, g = z//G, z % G
                    red0 = run*kRun; tp = tap_decode(red0)
                    base = (z*red + red0)*opq + o_pq
                    j = 0
                    while j < kRun and red0 + j < red:
                        col[base + j*opq] = x_at(xoff, img, g, tp, o, p_, q); tap_next(tp); j += 1
            else:
                pixels = nc*opq; runs = (pixels + kRun - 1)//kRun
                for rd, g, run in itertools.product(range(red), range(G), range(runs)):
                    tp = tap_decode(rd)
                    npq0 = run*kRun
                    q, p_, o, img = npq0 % Q, (npq0//Q) % P, (npq0//(Q*P)) % O, npq0//opq
                    base = (npq0*G + g)*red + rd; step = G*red
                    j = 0
                    while j < kRun and npq0 + j < pixels:
                        col[base + j*step] = x_at(xoff, img, g, tp, o, p_, q)
                        q += 1
                        if q == Q:
                            q = 0; p_ += 1
                            if p_ == P:
                                p_ = 0; o += 1
                                if o == O: o = 0; img += 1
                        j += 1
        # chunk_gemm
        d = dict(alpha=alpha, beta=beta, k=red, ta=False, tb=False, a_outer=0, a_inner=0, b_outer=0, b_inner=0,
                 c_outer=0, c_inner=0)
        if form == 'nchw':
            d.update(m=opq, n=kpg)
            if identity:
                Amem = x; d.update(a=xoff, lda=xs[1] if C > 1 else opq, a_outer=xs[0] if N > 1 else 0, a_inner=cpg*xs[1])
            else:
                Amem = col; d.update(a=0, lda=opq, a_outer=G*red*opq, a_inner=red*opq)
            Bmem = w; d.update(b=0, ldb=red, b_outer=0, b_inner=kpg*red)
            Cmem = y; d.update(c=n0*K*opq, ldc=opq, c_outer=K*opq, c_inner=kpg*opq, batch_outer=nc, batch_inner=G)
        else:
            d.update(m=kpg, n=nc*opq)
            Amem = w; d.update(a=0, lda=red, ta=True, a_inner=kpg*red)
            if identity: Bmem = x; d.update(b=n0*opq*C, ldb=C, b_inner=cpg)
            else: Bmem = col; d.update(b=0, ldb=G*red, b_inner=red)
            if via: Cmem = tmp; d.update(c=0, alpha=1.0, beta=0.0)
            else: Cmem = y; d.update(c=n0*opq*K)
            d.update(ldc=K, c_inner=kpg, batch_outer=1, batch_inner=G)
        gemm(d, Amem, Bmem, Cmem)
        if via:
            total = nc*tmp_per_img; yo = n0*K*opq
            for i in range(total):
                q_, rest = i % opq, i//opq
                k_, img = rest % K, rest//K
                v = alpha*tmp[(img*opq + q_)*K + k_]
                if beta != 0: v += beta*y[yo + i]
                y[yo + i] = v
        n0 += chunk
    got = np.zeros_like(ref)
    for n, k, o, p, q in itertools.product(range(N), range(K), range(O), range(P), range(Q)):
        got[n, k, o, p, q] = y[n*ys[0]+k*ys[1]+o*ys[2]+p*ys[3]+q*ys[4]]
    assert np.array_equal(got, ref), (np.nanmax(np.abs(got-ref)), "mismatch")

rng = np.random.default_rng(2)
cases = [  # N, C, K, G, D, H, W, T, R, S, pad, stride, dil
    (3, 4, 6, 2, 1, 6, 5, 1, 3, 3, (0, 1, 1), (1, 1, 1), (1, 1, 1)),
    (2, 3, 4, 1, 1, 7, 6, 1, 3, 2, (0, 1, 0), (1, 2, 1), (1, 1, 2)),
    (2, 4, 4, 4, 1, 5, 5, 1, 3, 3, (0, 1, 1), (1, 2, 2), (1, 1, 1)),   # depthwise
    (3, 6, 4, 1, 1, 4, 3, 1, 1, 1, (0, 0, 0), (1, 1, 1), (1, 1, 1)),   # 1x1 identity
    (2, 4, 6, 2, 3, 4, 3, 2, 2, 2, (1, 0, 1), (1, 1, 2), (1, 2, 1)),   # 3-D
]
for cs in cases:
    for x_nhwc, w_krsc, flip, cap, force in itertools.product([False, True], [False, True], [False, True], [1, 2, 100],
                                                              [None, 'per_image', 'transpose']):
        y_nhwc = x_nhwc
        if y_nhwc and force is not None: continue
        N, C, K, G, D, H, W, T, R, S, pad, st, dil = cs
        simulate(N, C, K, G, D, H, W, T, R, S, pad, st, dil, x_nhwc, w_krsc, y_nhwc, flip, cap, force, 0.5,
                 -2.0 if cap == 2 else 0.0, rng)
    print("ok", cs, flush=True)
