# Transliteration of winograd_nonfused.cu (plan, filter / input / output transform kernels, the
# GemmDesc of the 16 GEMMs) to numpy, run thread by thread over the flat thread index, and checked:
#  1. exactly (integer inputs: every intermediate is a multiple of 1/4, exact in float64) against a
#     direct convolution, over NCHW / NHWC x KCRS / KRSC, non-packed x / y strides, both modes,
#     odd P / Q, asymmetric / zero / large padding, alpha / beta with a NaN y when beta == 0;
#     y elements outside the logical tensor (gaps) and workspace elements the kernels should
#     write are NaN-poisoned, so a missed write or a read of an unwritten element fails;
#  2. in float32 (numpy rounding every transform step as the kernel does, the GEMM summed
#     sequentially in fp32) against float64 with uniform [-1, 1] inputs: the observed element-wise
#     error against the test's winograd_tolerance (tests/test_conv_winograd.cpp), per C.
import itertools
import math
import numpy as np

ALIGN = 64


def round_up(v):
    return (v + ALIGN - 1) // ALIGN * ALIGN


def plan(N, C, K, P, Q, chunk):
    th, tw = (P + 1) // 2, (Q + 1) // 2
    T = min(chunk, N) * th * tw
    u_off = 0
    v_off = round_up(16 * K * C)
    m_off = v_off + round_up(16 * C * T)
    total = m_off + round_up(16 * K * T)
    return th, tw, T, u_off, v_off, m_off, total


def filter_transform(K, C, flip, ws, w, U, dt):
    h = dt(0.5)
    for kc in range(K * C):
        c, k = kc % C, kc // C
        base = k * ws[0] + c * ws[1]
        g = [[None] * 3 for _ in range(3)]
        for r in range(3):
            for s in range(3):
                rr, ss = (2 - r, 2 - s) if flip else (r, s)
                g[r][s] = dt(w[base + rr * ws[3] + ss * ws[4]])
        t = [[None] * 3 for _ in range(4)]
        for s in range(3):
            t[0][s] = g[0][s]
            t[1][s] = h * dt(dt(g[0][s] + g[1][s]) + g[2][s])
            t[2][s] = h * dt(dt(g[0][s] - g[1][s]) + g[2][s])
            t[3][s] = g[2][s]
        plane = K * C
        for i in range(4):
            U[kc + (4 * i + 0) * plane] = t[i][0]
            U[kc + (4 * i + 1) * plane] = h * dt(dt(t[i][0] + t[i][1]) + t[i][2])
            U[kc + (4 * i + 2) * plane] = h * dt(dt(t[i][0] - t[i][1]) + t[i][2])
            U[kc + (4 * i + 3) * plane] = t[i][2]


def input_transform(C, H, W, ph, pw, th_, tw_, T, xs, x, V, dt):
    for ct in range(C * T):
        t, c = ct % T, ct // T
        tw, th, n = t % tw_, (t // tw_) % th_, t // (tw_ * th_)
        h0, w0 = 2 * th - ph, 2 * tw - pw
        base = n * xs[0] + c * xs[1]
        d = [[dt(0)] * 4 for _ in range(4)]
        for i in range(4):
            hh = h0 + i
            for j in range(4):
                ww = w0 + j
                if 0 <= hh < H and 0 <= ww < W:
                    d[i][j] = dt(x[base + hh * xs[3] + ww * xs[4]])
        s = [[None] * 4 for _ in range(4)]
        for j in range(4):
            s[0][j] = dt(d[0][j] - d[2][j])
            s[1][j] = dt(d[1][j] + d[2][j])
            s[2][j] = dt(d[2][j] - d[1][j])
            s[3][j] = dt(d[1][j] - d[3][j])
        plane = C * T
        for i in range(4):
            V[ct + (4 * i + 0) * plane] = s[i][0] - s[i][2]
            V[ct + (4 * i + 1) * plane] = s[i][1] + s[i][2]
            V[ct + (4 * i + 2) * plane] = s[i][2] - s[i][1]
            V[ct + (4 * i + 3) * plane] = s[i][1] - s[i][3]


def gemm(d, ws, dt):  # GemmDesc semantics (column-major), operands addressed in the workspace
    for bi in range(d['batch_inner']):
        ao, bo, co = d['a'] + bi * d['a_inner'], d['b'] + bi * d['b_inner'], d['c'] + bi * d['c_inner']
        for i in range(d['m']):
            for j in range(d['n']):
                acc = dt(0)
                for l in range(d['k']):
                    a = ws[ao + i + l * d['lda']]
                    b = ws[bo + l + j * d['ldb']]
                    assert not math.isnan(a) and not math.isnan(b), "GEMM read an unwritten workspace element"
                    acc = dt(acc + dt(a * b))
                ws[co + i + j * d['ldc']] = acc


def output_transform(K, P, Q, th_, tw_, T, ys, alpha, beta, M, y, dt):
    for kt in range(K * T):
        t, k = kt % T, kt // T
        tw, th, n = t % tw_, (t // tw_) % th_, t // (tw_ * th_)
        plane = K * T
        m = [[dt(M[kt + (4 * i + j) * plane]) for j in range(4)] for i in range(4)]
        a = [[None] * 4 for _ in range(2)]
        for j in range(4):
            a[0][j] = dt(dt(m[0][j] + m[1][j]) + m[2][j])
            a[1][j] = dt(dt(m[1][j] - m[2][j]) - m[3][j])
        out = [[None] * 2 for _ in range(2)]
        for i in range(2):
            out[i][0] = dt(dt(a[i][0] + a[i][1]) + a[i][2])
            out[i][1] = dt(dt(a[i][1] - a[i][2]) - a[i][3])
        base = n * ys[0] + k * ys[1]
        for i in range(2):
            oh = 2 * th + i
            if oh >= P:
                continue
            for j in range(2):
                ow = 2 * tw + j
                if ow >= Q:
                    continue
                o = base + oh * ys[3] + ow * ys[4]
                v = dt(dt(alpha) * out[i][j])
                if beta != 0:
                    v = dt(v + dt(beta) * dt(y[o]))
                y[o] = v


def run_solver(N, C, H, W, K, ph, pw, flip, xs, ws_, ys, x, w, y, alpha, beta, dt, chunk=1 << 30):
    P, Q = H + 2 * ph - 2, W + 2 * pw - 2
    th, tw, Tfull, u_off, v_off, m_off, total = plan(N, C, K, P, Q, chunk)
    chunk = min(chunk, N)
    wsp = np.full(total, np.nan, dtype=np.float64)
    U = np.full(16 * K * C, np.nan)
    filter_transform(K, C, flip, ws_, w, U, dt)
    wsp[u_off:u_off + U.size] = U
    for n0 in range(0, N, chunk):
        nc = min(chunk, N - n0)
        T = nc * th * tw
        wsp[v_off:] = np.nan  # a chunk must not rely on the previous chunk's V or M
        V = np.full(16 * C * T, np.nan)
        # x + n0 * xs[0]: the kernel's pointer offset, as a view of the flat array
        input_transform(C, H, W, ph, pw, th, tw, T, xs, x[n0 * xs[0]:], V, dt)
        assert v_off + V.size <= m_off
        wsp[v_off:v_off + V.size] = V
        # The GemmDesc of run(): m = T, n = K, k = C, A = V (ld T), B = U (ld C), C = M (ld T), 16 batches.
        d = dict(m=T, n=K, k=C, a=v_off, lda=T, b=u_off, ldb=C, c=m_off, ldc=T, batch_inner=16,
                 a_inner=C * T, b_inner=K * C, c_inner=K * T)
        gemm(d, wsp, dt)
        M = wsp[m_off:m_off + 16 * K * T]
        assert m_off + M.size <= total
        assert not np.isnan(M).any(), "an M element was not written by the GEMM"
        yv = y[n0 * ys[0]:]  # a view: writes land in y
        output_transform(K, P, Q, th, tw, T, ys, alpha, beta, M, yv, dt)
    return P, Q


def direct(N, C, H, W, K, ph, pw, flip, xs, ws_, x, w):
    P, Q = H + 2 * ph - 2, W + 2 * pw - 2
    out = np.zeros((N, K, P, Q))
    for n, k, p, q in itertools.product(range(N), range(K), range(P), range(Q)):
        acc = 0.0
        for c, r, s in itertools.product(range(C), range(3), range(3)):
            h, ww = p - ph + r, q - pw + s
            if 0 <= h < H and 0 <= ww < W:
                rf, sf = (2 - r, 2 - s) if flip else (r, s)
                acc += x[n * xs[0] + c * xs[1] + h * xs[3] + ww * xs[4]] * w[k * ws_[0] + c * ws_[1] + rf * ws_[3] + sf * ws_[4]]
        out[n, k, p, q] = acc
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


def exact_case(N, C, H, W, K, ph, pw, flip, xkind, wkind, ykind, alpha, beta, chunk=1 << 30):
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
    run_solver(N, C, H, W, K, ph, pw, flip, xs, ws_, ys, x, w, y, alpha, beta, np.float64, chunk)
    want = alpha * direct(N, C, H, W, K, ph, pw, flip, xs, ws_, x, w) + beta * y0
    for n, k, p, q in itertools.product(range(N), range(K), range(P), range(Q)):
        got = y[n * ys[0] + k * ys[1] + p * ys[3] + q * ys[4]]
        assert got == want[n, k, p, q], (N, C, H, W, K, ph, pw, flip, xkind, ykind, (n, k, p, q), got, want[n, k, p, q])
    assert np.isnan(y[~mask]).all(), "a gap of y was written"


cases = 0
for (N, C, H, W, K, ph, pw) in [(2, 3, 5, 7, 4, 1, 1), (1, 2, 6, 6, 3, 0, 0), (2, 1, 1, 1, 2, 1, 1),
                                (1, 2, 3, 3, 2, 0, 0), (1, 3, 4, 5, 2, 0, 2), (1, 2, 5, 4, 3, 3, 3),
                                (3, 2, 7, 2, 3, 1, 0)]:
    for flip in (False, True):
        for xk, wk, yk in [('nchw', 'nchw', 'nchw'), ('nhwc', 'nhwc', 'nhwc'), ('gap', 'nchw', 'gap'),
                           ('nchw', 'nhwc', 'nhwc')]:
            for alpha, beta in [(1.0, 0.0), (0.5, -0.75), (-1.25, 1.0)]:
                exact_case(N, C, H, W, K, ph, pw, flip, xk, wk, yk, alpha, beta)
                cases += 1
for chunk in (1, 2):  # chunks of images (JHDNN_WINOGRAD_CHUNK): 3 images in 2 + 1 and 1 + 1 + 1
    for xk, wk, yk in [('nchw', 'nchw', 'nchw'), ('nhwc', 'nhwc', 'nhwc'), ('gap', 'nchw', 'gap')]:
        exact_case(3, 2, 5, 3, 3, 1, 1, False, xk, wk, yk, 0.5, -0.75, chunk)
        cases += 1
print(f"exact: {cases} configurations match the direct convolution, no gap of y written, no unwritten "
      f"workspace element read")


# 2. fp32 error against the test tolerance (NCHW, uniform [-1, 1] inputs as the harness draws them).
def tol(C, alpha=1.0):
    u = 2.0 ** -24
    return max(1.0, abs(alpha)) * u * (108 * C + 1062 * math.sqrt(C))


def fp32_case(N, C, H, W, K):
    xs = strides(N, C, H, W, 'nchw')
    ws_ = strides(K, C, 3, 3, 'nchw')
    P, Q = H, W
    ys = strides(N, K, P, Q, 'nchw')
    x = rng.uniform(-1, 1, N * C * H * W).astype(np.float32).astype(np.float64)
    w = rng.uniform(-1, 1, K * C * 9).astype(np.float32).astype(np.float64)
    y = np.full(N * K * P * Q, np.nan)
    run_solver(N, C, H, W, K, 1, 1, False, xs, ws_, ys, x, w, y, 1.0, 0.0, np.float32)
    ref = direct(N, C, H, W, K, 1, 1, False, xs, ws_, x, w).reshape(-1)
    err = np.abs(y - ref).max()
    rel_l2 = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    direct_atol = 4 * 2.0 ** -24 * 9 * C
    print(f"fp32 C={C:4d}: max abs err {err:.3g}, winograd atol {tol(C):.3g} ({tol(C) / err:.1f}x the error), "
          f"direct-conv atol {direct_atol:.3g}, relative L2 {rel_l2:.2g}")
    assert err < tol(C)


for C in (1, 3, 16, 64, 256):
    fp32_case(1, C, 4, 4, 2)
