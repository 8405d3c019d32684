# Transliteration of winograd_nonfused.cu (plan, filter / input / output transform kernels, the
# GemmDesc of the E GEMMs, the image chunks) to numpy, for both solvers: F(2x2, 3x3) and F(4x4, 3x3).
# Each kernel runs all its threads at once: every per-thread scalar of the kernel is a numpy array
# over the flat thread index, so the index maps and the rounding order are the kernel's, line by line.
# Checked:
#  1. against a direct convolution with integer inputs, over NCHW / NHWC x KCRS / KRSC, non-packed
#     x / y strides, both modes, odd P / Q, asymmetric / zero / large padding, alpha / beta with a
#     NaN y when beta == 0, chunks of images: exactly for F(2x2) (every intermediate is a multiple
#     of 1/4, exact in float64), to 1e-9 relative for F(4x4) (its G holds 1/6, 1/15, 1/30);
#     y elements outside the logical tensor (gaps) and workspace elements the kernels should write
#     are NaN-poisoned, so a missed write or a read of an unwritten element fails;
#  2. in float32 (every transform step rounded as the kernel rounds it, FMAs included, the GEMM
#     summed sequentially in fp32) against float64 with uniform [-1, 1] inputs: the observed
#     element-wise error and relative L2 error against the test's winograd_tolerance
#     (tests/test_conv_winograd.cpp), per C and per solver;
#  3. the same fp32 measurement for other F(4x4) interpolation points (the choice, README.md).
import itertools
import math
import sys
from fractions import Fraction as Fr
import numpy as np

ALIGN = 64


def round_up(v):
    return (v + ALIGN - 1) // ALIGN * ALIGN


# ---------------------------------------------------------------- transform matrices (the kernel's data)
F2 = dict(m=2,
          BT=[[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
          G=[[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]],
          AT=[[1, 1, 1, 0], [0, 1, -1, -1]])
F4 = dict(m=4,
          BT=[[1, Fr(-3, 2), -2, Fr(3, 2), 1, 0], [0, 2, -5, 1, 2, 0], [0, -2, 1, 5, 2, 0],
              [0, -2, -1, 2, 1, 0], [0, 1, -2, -1, 2, 0], [0, 1, Fr(-3, 2), -2, Fr(3, 2), 1]],
          G=[[1, 0, 0], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)], [Fr(1, 6), Fr(1, 6), Fr(1, 6)],
             [Fr(-16, 15), Fr(-8, 15), Fr(-4, 15)], [Fr(1, 30), Fr(-1, 15), Fr(2, 15)], [0, 0, 1]],
          AT=[[1, 1, 1, 1, 1, 0], [0, -1, 1, Fr(1, 2), -2, 0], [0, 1, 1, Fr(1, 4), 4, 0],
              [0, -1, 1, Fr(1, 8), -8, 1]])


def toom_cook(points, m=4, r=3):
    """B^T, G, A^T of F(m, r) for the finite points (and infinity), exact fractions; each row of B^T
    scaled so its smallest non-zero entry is +-1, the inverse scale moved to G (as in F4 above)."""
    n = m + r - 1
    pts = [Fr(p) for p in points]
    AT = [[Fr(0)] * n for _ in range(m)]
    G = [[Fr(0)] * r for _ in range(n)]
    for i, p in enumerate(pts):
        for k in range(m):
            AT[k][i] = p ** k
        f = Fr(1)
        for q in pts:
            if q != p:
                f *= p - q
        for k in range(r):
            G[i][k] = p ** k / f
    AT[m - 1][n - 1] = Fr(1)
    G[n - 1][r - 1] = Fr(1)
    # B^T from the exact condition sum_k AT[i][k] G[k][j] BT[k][l] = [l == i + j] (float solve, then
    # rounded to small fractions and verified exactly).
    rows, rhs = [], []
    for i, j, l in itertools.product(range(m), range(r), range(n)):
        row = np.zeros((n, n))
        for k in range(n):
            row[k, l] = float(AT[i][k] * G[k][j])
        rows.append(row.ravel())
        rhs.append(1.0 if l == i + j else 0.0)
    sol = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)[0].reshape(n, n)
    BT = [[Fr(float(v)).limit_denominator(1000) for v in row] for row in sol]
    for k in range(n):
        s = min(abs(v) for v in BT[k] if v != 0)
        BT[k] = [v / s for v in BT[k]]
        G[k] = [v * s for v in G[k]]
    for i, j, l in itertools.product(range(m), range(r), range(n)):
        assert sum(AT[i][k] * G[k][j] * BT[k][l] for k in range(n)) == (1 if l == i + j else 0)
    return dict(m=m, BT=BT, G=G, AT=AT)


# ---------------------------------------------------------------- the kernels' arithmetic

def fma(c, v, acc, dt):
    # fmaf: one rounding of c * v + acc. c * v is exact in float64 (24 x 24 bits); the float64 sum
    # then rounds twice (to double, then float), which differs from one rounding only in rare ties.
    return dt(np.float64(c) * np.float64(v) + np.float64(acc))


def combine(row, v, dt):
    """transforms.h combine(): sum_k row[k] * v[k], zeros skipped, +-1 as adds / subtracts,
    the first product rounded on its own (__fmul_rn), the rest FMAs, in k order."""
    acc = None
    for c, x in zip(row, v):
        if c == 0:
            continue
        cf = dt(float(c))
        if acc is None:
            acc = x if c == 1 else -x if c == -1 else dt(cf * x)
        else:
            acc = dt(acc + x) if c == 1 else dt(acc - x) if c == -1 else fma(cf, x, acc, dt)
    return acc


def sandwich(L, d, dt):
    """out = L d L^T: columns first (t = L d), then rows (out = t L^T), as the kernel's sandwich()."""
    R, N = len(L), len(L[0])
    t = [[combine(L[i], [d[k][j] for k in range(N)], dt) for j in range(N)] for i in range(R)]
    return [[combine(L[j], t[i], dt) for j in range(R)] for i in range(R)]


def plan(F, N, C, K, P, Q, chunk):
    m = F['m']
    E = (m + 2) ** 2
    th, tw = (P + m - 1) // m, (Q + m - 1) // m
    T = min(chunk, N) * th * tw
    u_off = 0
    v_off = round_up(E * K * C)
    m_off = v_off + round_up(E * C * T)
    total = m_off + round_up(E * K * T)
    return th, tw, T, u_off, v_off, m_off, total


def filter_transform(F, K, C, flip, ws, w, U, dt):
    a = F['m'] + 2
    kc = np.arange(K * C)
    c, k = kc % C, kc // C
    base = k * ws[0] + c * ws[1]
    g = [[None] * 3 for _ in range(3)]
    for r in range(3):
        for s in range(3):
            rr, ss = (2 - r, 2 - s) if flip else (r, s)
            g[r][s] = dt(w[base + rr * ws[3] + ss * ws[4]])
    u = sandwich(F['G'], g, dt)
    plane = K * C
    for i in range(a):
        for j in range(a):
            U[kc + (a * i + j) * plane] = u[i][j]


def decode(flat, T, th_, tw_):
    # The input / output kernels' thread decode: flat = channel * T + t, t = (n * th_ + th) * tw_ + tw.
    t, ch = flat % T, flat // T
    return ch, t % tw_, (t // tw_) % th_, t // (tw_ * th_)


def input_transform(F, C, H, W, ph, pw, th_, tw_, T, xs, x, V, dt):
    m = F['m']
    a = m + 2
    ct = np.arange(C * T)
    c, tw, th, n = decode(ct, T, th_, tw_)
    h0, w0 = m * th - ph, m * tw - pw
    base = n * xs[0] + c * xs[1]
    d = [[None] * a for _ in range(a)]
    for i in range(a):
        hh = h0 + i
        for j in range(a):
            ww = w0 + j
            inside = (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
            idx = np.where(inside, base + hh * xs[3] + ww * xs[4], 0)
            d[i][j] = np.where(inside, dt(x[idx]), dt(0))
    v = sandwich(F['BT'], d, dt)
    plane = C * T
    for i in range(a):
        for j in range(a):
            V[ct + (a * i + j) * plane] = v[i][j]


def gemm(d, ws, dt):  # GemmDesc semantics (column-major), operands addressed in the workspace
    for bi in range(d['batch_inner']):
        ao, bo, co = d['a'] + bi * d['a_inner'], d['b'] + bi * d['b_inner'], d['c'] + bi * d['c_inner']
        i = np.arange(d['m'])[:, None]
        j = np.arange(d['n'])[None, :]
        acc = np.zeros((d['m'], d['n']), dtype=dt)
        for l in range(d['k']):
            a = ws[ao + i + l * d['lda']]
            b = ws[bo + l + j * d['ldb']]
            assert not np.isnan(a).any() and not np.isnan(b).any(), "GEMM read an unwritten workspace element"
            acc = dt(acc + dt(a.astype(dt) * b.astype(dt)))  # sequential fp32 sum over k
        ws[co + i + j * d['ldc']] = acc


def output_transform(F, K, P, Q, th_, tw_, T, ys, alpha, beta, M, y, dt):
    m = F['m']
    a = m + 2
    kt = np.arange(K * T)
    k, tw, th, n = decode(kt, T, th_, tw_)
    plane = K * T
    mt = [[dt(M[kt + (a * i + j) * plane]) for j in range(a)] for i in range(a)]
    out = sandwich(F['AT'], mt, dt)
    base = n * ys[0] + k * ys[1]
    for i in range(m):
        oh = m * th + i
        for j in range(m):
            ow = m * tw + j
            keep = (oh < P) & (ow < Q)
            o = (base + oh * ys[3] + ow * ys[4])[keep]
            v = dt(dt(alpha) * out[i][j][keep])
            if beta != 0:
                v = fma(dt(beta), dt(y[o]), v, dt)  # nvcc contracts v + beta * y into one FMA
            y[o] = v


def run_solver(F, N, C, H, W, K, ph, pw, flip, xs, ws_, ys, x, w, y, alpha, beta, dt, chunk=1 << 30):
    E = (F['m'] + 2) ** 2
    P, Q = H + 2 * ph - 2, W + 2 * pw - 2
    th, tw, Tfull, u_off, v_off, m_off, total = plan(F, N, C, K, P, Q, chunk)
    chunk = min(chunk, N)
    wsp = np.full(total, np.nan, dtype=np.float64)
    U = np.full(E * K * C, np.nan)
    filter_transform(F, K, C, flip, ws_, w, U, dt)
    assert not np.isnan(U).any(), "a U element was not written"
    wsp[u_off:u_off + U.size] = U
    for n0 in range(0, N, chunk):
        nc = min(chunk, N - n0)
        T = nc * th * tw
        wsp[v_off:] = np.nan  # a chunk must not rely on the previous chunk's V or M
        V = np.full(E * C * T, np.nan)
        # x + n0 * xs[0]: the kernel's pointer offset, as a view of the flat array
        input_transform(F, C, H, W, ph, pw, th, tw, T, xs, x[n0 * xs[0]:], V, dt)
        assert v_off + V.size <= m_off
        wsp[v_off:v_off + V.size] = V
        # The GemmDesc of run(): m = T, n = K, k = C, A = V (ld T), B = U (ld C), C = M (ld T), E batches.
        d = dict(m=T, n=K, k=C, a=v_off, lda=T, b=u_off, ldb=C, c=m_off, ldc=T, batch_inner=E,
                 a_inner=C * T, b_inner=K * C, c_inner=K * T)
        gemm(d, wsp, dt)
        M = wsp[m_off:m_off + E * K * T]
        assert m_off + M.size <= total
        assert not np.isnan(M).any(), "an M element was not written by the GEMM"
        yv = y[n0 * ys[0]:]  # a view: writes land in y
        output_transform(F, K, P, Q, th, tw, T, ys, alpha, beta, M, yv, dt)
    return P, Q


def direct(N, C, H, W, K, ph, pw, flip, xs, ws_, x, w):
    P, Q = H + 2 * ph - 2, W + 2 * pw - 2
    xp = np.zeros((N, C, H + 2 * ph, W + 2 * pw))
    n, c, h, ww = np.meshgrid(range(N), range(C), range(H), range(W), indexing='ij')
    xp[n, c, h + ph, ww + pw] = x[n * xs[0] + c * xs[1] + h * xs[3] + ww * xs[4]]
    k, c2, r, s = np.meshgrid(range(K), range(C), range(3), range(3), indexing='ij')
    rf, sf = (2 - r, 2 - s) if flip else (r, s)
    g = np.zeros((K, C, 3, 3))
    g[k, c2, r, s] = w[k * ws_[0] + c2 * ws_[1] + rf * ws_[3] + sf * ws_[4]]
    out = np.zeros((N, K, P, Q))
    for r, s in itertools.product(range(3), range(3)):
        out += np.einsum('nchw,kc->nkhw', xp[:, :, r:r + P, s:s + Q], g[:, :, r, s])
    return out


def strides(n, c, h, w, kind):
    if kind == 'nchw':
        return [c * h * w, h * w, 0, w, 1]
    if kind == 'nhwc':
        return [h * w * c, 1, 0, w * c, c]
    # non-packed: a gap after every row, channel and image (4dEx-like)
    sw, sh = 1, w + 3
    sc = sh * h + 5
    return [sc * c + 7, sc, 0, sh, sw]


def span(dims, st):
    return 1 + sum((d - 1) * s for d, s in zip(dims, st))


rng = np.random.default_rng(7)


def exact_case(F, N, C, H, W, K, ph, pw, flip, xkind, wkind, ykind, alpha, beta, chunk=1 << 30):
    P, Q = H + 2 * ph - 2, W + 2 * pw - 2
    xs = strides(N, C, H, W, xkind)
    ws_ = strides(K, C, 3, 3, wkind)
    ys = strides(N, K, P, Q, ykind)
    x = np.full(span([N, C, 1, H, W], xs), np.nan)
    w = np.full(span([K, C, 1, 3, 3], ws_), np.nan)
    for n, c, h, ww in itertools.product(range(N), range(C), range(H), range(W)):
        x[n * xs[0] + c * xs[1] + h * xs[3] + ww * xs[4]] = rng.integers(-4, 5)
    for k, c, r, s in itertools.product(range(K), range(C), range(3), range(3)):
        w[k * ws_[0] + c * ws_[1] + r * ws_[3] + s * ws_[4]] = rng.integers(-4, 5)
    y = np.full(span([N, K, 1, P, Q], ys), np.nan)  # gaps and (beta == 0) logical elements: NaN
    mask = np.zeros(y.size, dtype=bool)
    y0 = np.zeros((N, K, P, Q))
    for n, k, p, q in itertools.product(range(N), range(K), range(P), range(Q)):
        o = n * ys[0] + k * ys[1] + p * ys[3] + q * ys[4]
        mask[o] = True
        if beta != 0:
            y[o] = y0[n, k, p, q] = rng.integers(-4, 5)
    run_solver(F, N, C, H, W, K, ph, pw, flip, xs, ws_, ys, x, w, y, alpha, beta, np.float64, chunk)
    want = alpha * direct(N, C, H, W, K, ph, pw, flip, xs, ws_, x, w) + beta * y0
    rtol = 0 if F['m'] == 2 else 1e-9
    for n, k, p, q in itertools.product(range(N), range(K), range(P), range(Q)):
        got = y[n * ys[0] + k * ys[1] + p * ys[3] + q * ys[4]]
        ok = abs(got - want[n, k, p, q]) <= rtol * max(1.0, abs(want[n, k, p, q]))
        assert ok, (F['m'], N, C, H, W, K, ph, pw, flip, xkind, ykind, (n, k, p, q), got, want[n, k, p, q])
    assert np.isnan(y[~mask]).all(), "a gap of y was written"


for F in (F2, F4):
    cases = 0
    for (N, C, H, W, K, ph, pw) in [(2, 3, 5, 7, 4, 1, 1), (1, 2, 6, 6, 3, 0, 0), (2, 1, 1, 1, 2, 1, 1),
                                    (1, 2, 3, 3, 2, 0, 0), (1, 3, 4, 5, 2, 0, 2), (1, 2, 5, 4, 3, 3, 3),
                                    (3, 2, 7, 2, 3, 1, 0), (1, 2, 11, 10, 2, 1, 1), (2, 3, 9, 13, 2, 0, 1)]:
        for flip in (False, True):
            for xk, wk, yk in [('nchw', 'nchw', 'nchw'), ('nhwc', 'nhwc', 'nhwc'), ('gap', 'nchw', 'gap'),
                               ('nchw', 'nhwc', 'nhwc')]:
                for alpha, beta in [(1.0, 0.0), (0.5, -0.75), (-1.25, 1.0)]:
                    exact_case(F, N, C, H, W, K, ph, pw, flip, xk, wk, yk, alpha, beta)
                    cases += 1
    for chunk in (1, 2):  # chunks of images (JHDNN_WINOGRAD_CHUNK): 3 images in 2 + 1 and 1 + 1 + 1
        for xk, wk, yk in [('nchw', 'nchw', 'nchw'), ('nhwc', 'nhwc', 'nhwc'), ('gap', 'nchw', 'gap')]:
            exact_case(F, 3, 2, 7, 5, 3, 1, 1, False, xk, wk, yk, 0.5, -0.75, chunk)
            cases += 1
    print(f"F({F['m']}x{F['m']}) exact: {cases} configurations match the direct convolution, no gap of y "
          f"written, no unwritten workspace element read")


# 2. fp32 error against the test tolerance (NCHW, uniform [-1, 1] inputs as the harness draws them).
def tol(C, alpha=1.0):
    u = 2.0 ** -24
    return max(1.0, abs(alpha)) * u * (108 * C + 1062 * math.sqrt(C))


def fp32_case(F, N, C, H, W, K, label=None):
    xs = strides(N, C, H, W, 'nchw')
    ws_ = strides(K, C, 3, 3, 'nchw')
    P, Q = H, W
    ys = strides(N, K, P, Q, 'nchw')
    x = rng.uniform(-1, 1, N * C * H * W).astype(np.float32).astype(np.float64)
    w = rng.uniform(-1, 1, K * C * 9).astype(np.float32).astype(np.float64)
    y = np.full(N * K * P * Q, np.nan)
    run_solver(F, N, C, H, W, K, 1, 1, False, xs, ws_, ys, x, w, y, 1.0, 0.0, np.float32)
    ref = direct(N, C, H, W, K, 1, 1, False, xs, ws_, x, w).reshape(-1)
    err = np.abs(y - ref).max()
    rel_l2 = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    direct_atol = 4 * 2.0 ** -24 * 9 * C
    print(f"  {label or 'F(%dx%d)' % (F['m'], F['m'])} C={C:4d} ({y.size} outputs): max abs err {err:.3g}, "
          f"winograd atol {tol(C):.3g} ({tol(C) / err:.1f}x the error), direct-conv atol {direct_atol:.3g}, "
          f"relative L2 {rel_l2:.2g}")
    assert err < tol(C)
    return err, rel_l2


quick = '--quick' in sys.argv
print("fp32 error (uniform [-1, 1], NCHW, pad 1, 16 x 16 images, K = 8):")
for C in ((16, 64) if quick else (16, 64, 256, 512)):
    for F in (F2, F4):
        fp32_case(F, 2 if C < 256 else 1, C, 16, 16, 8)

# 3. The choice of F(4x4) points: the same measurement with other interpolation points.
if not quick:
    print("F(4x4) interpolation points (same inputs per C):")
    for name, pts in [('0, -1, 1, 1/2, -2 (the solver)', [0, -1, 1, Fr(1, 2), -2]),
                      ('0, +-1, +-2 (Lavin & Gray)', [0, 1, -1, 2, -2]),
                      ('0, +-1, +-1/2', [0, 1, -1, Fr(1, 2), Fr(-1, 2)]),
                      ('0, +-1/2, +-2', [0, Fr(1, 2), Fr(-1, 2), 2, -2])]:
        Fp = toom_cook(pts)
        for C in (64, 256):
            rng = np.random.default_rng(100 + C)
            fp32_case(Fp, 1, C, 16, 16, 8, label=name)
    assert toom_cook([0, -1, 1, Fr(1, 2), -2]) == F4, "F4 is not the Toom-Cook matrix set of its points"
