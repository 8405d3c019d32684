# Transliteration of sgemm_kernel's index maps (sgemm_kernel.cuh) to numpy, to check that every
# element of C is written once with the right value, for both tile widths and all transposes.
import numpy as np, itertools
kBM, kBK, kPad = 128, 8, 4
def threads_for(bn): return (kBM//64)*(bn//32)*32

class Loader:
    def __init__(s, kmajor, rows, T, base_off, ld, tid):
        s.kmajor, s.rows, s.T = kmajor, rows, T
        s.loads = rows*kBK//T; s.ldS = rows + kPad
        assert T % kBK == 0 and T % rows == 0 and s.loads*T == rows*kBK
        if kmajor:
            s.k_off = tid % kBK; s.i_off = tid // kBK; s.i_step = T//kBK
            s.ptr = base_off + s.i_off*ld + s.k_off; s.step = s.i_step*ld; s.k_step = kBK
        else:
            s.i_off = tid % rows; s.k_off = tid // rows; s.i_step = 0
            s.ptr = base_off + s.k_off*ld + s.i_off; s.step = (T//rows)*ld; s.k_step = kBK*ld
    def fetch(s, mem, rows_left, k_left):
        r = []
        for l in range(s.loads):
            i = s.i_off + l*s.i_step
            kk = s.k_off if s.kmajor else s.k_off + l*(s.T//s.rows)
            r.append(mem[s.ptr + l*s.step] if (i < rows_left and kk < k_left) else 0.0)
        return r
    def store(s, smem, r):
        for l in range(s.loads):
            i = s.i_off + l*s.i_step
            kk = s.k_off if s.kmajor else s.k_off + l*(s.T//s.rows)
            smem[kk*s.ldS + i] = r[l]
    def advance(s): s.ptr += s.k_step

def run(m, n, k, ta, tb, bn, lda, ldb, ldc, rng):
    # column-major A (m x k, or k x m if ta), B (k x n or n x k if tb)
    a_rows, a_cols = (k, m) if ta else (m, k)
    b_rows, b_cols = (n, k) if tb else (k, n)
    A = rng.integers(-3, 4, size=lda*a_cols + 5).astype(float)
    B = rng.integers(-3, 4, size=ldb*b_cols + 5).astype(float)
    C = np.full(ldc*n + 3, np.nan); written = np.zeros_like(C)
    opA = np.array([[A[(kk + i*lda) if ta else (i + kk*lda)] for kk in range(k)] for i in range(m)]).reshape(m, k)
    opB = np.array([[B[(j + kk*ldb) if tb else (kk + j*ldb)] for j in range(n)] for kk in range(k)]).reshape(k, n)
    ref = opA @ opB
    T = threads_for(bn)
    akm, bkm = ta, (not tb)  # A K-major when transposed; B when not transposed
    tiles_m = (m + kBM - 1)//kBM; tiles_n = (n + bn - 1)//bn
    for tile in range(tiles_m*tiles_n):
        m0 = (tile % tiles_m)*kBM; n0 = (tile // tiles_m)*bn
        la = [Loader(akm, kBM, T, (m0*lda if akm else m0), lda, t) for t in range(T)]
        lb = [Loader(bkm, bn, T, (n0*ldb if bkm else n0), ldb, t) for t in range(T)]
        ldA, ldB = kBM + kPad, bn + kPad
        As = [np.full(kBK*ldA, np.nan), np.full(kBK*ldA, np.nan)]
        Bs = [np.full(kBK*ldB, np.nan), np.full(kBK*ldB, np.nan)]
        m_left, n_left = m - m0, n - n0
        acc = np.zeros((T, 8, 8))
        k_tiles = k//kBK + (k % kBK != 0)
        if k_tiles > 0:
            for t in range(T):
                la[t].store(As[0], la[t].fetch(A, m_left, k)); lb[t].store(Bs[0], lb[t].fetch(B, n_left, k))
        for kt in range(k_tiles):
            cur = kt & 1; more = kt + 1 < k_tiles
            ra, rb = [None]*T, [None]*T
            if more:
                for t in range(T):
                    la[t].advance(); lb[t].advance()
                    kl = k - (kt+1)*kBK
                    ra[t] = la[t].fetch(A, m_left, kl); rb[t] = lb[t].fetch(B, n_left, kl)
            for t in range(T):
                warp, lane = t//32, t % 32
                fm = (warp % 2)*64 + (lane % 8)*4; fn = (warp//2)*32 + (lane//8)*4
                for kk in range(kBK):
                    fa = np.concatenate([As[cur][kk*ldA+fm:kk*ldA+fm+4], As[cur][kk*ldA+fm+32:kk*ldA+fm+36]])
                    fb = np.concatenate([Bs[cur][kk*ldB+fn:kk*ldB+fn+4], Bs[cur][kk*ldB+fn+16:kk*ldB+fn+20]])
                    acc[t] += np.outer(fa, fb)
            if more:
                for t in range(T):
                    la[t].store(As[cur ^ 1], ra[t]); lb[t].store(Bs[cur ^ 1], rb[t])
        for t in range(T):
            warp, lane = t//32, t % 32
            fm = (warp % 2)*64 + (lane % 8)*4; fn = (warp//2)*32 + (lane//8)*4
            for j in range(8):
                nl = fn + (j if j < 4 else 12 + j)
                if nl >= n_left: continue
                col = n0 + nl
                for h in range(2):
                    ml = fm + h*32
                    for i in range(4):
                        if ml + i >= m_left: break
                        off = col*ldc + m0 + ml + i
                        C[off] = acc[t][h*4+i][j]; written[off] += 1
    got = np.array([[C[i + j*ldc] for j in range(n)] for i in range(m)]).reshape(m, n)
    wr = np.array([[written[i + j*ldc] for j in range(n)] for i in range(m)]).reshape(m, n)
    assert (wr == 1).all(), "not every element written exactly once"
    assert written.sum() == m*n, "writes outside C's logical elements"
    assert np.array_equal(got, ref), "wrong values"

rng = np.random.default_rng(1)
for bn in (128, 64):
    for ta, tb in itertools.product([False, True], repeat=2):
        for (m, n, k) in [(130, 70, 20), (7, 5, 3), (128, 64, 16), (1, 131, 9)]:
            a_rows = k if ta else m; b_rows = n if tb else k
            run(m, n, k, ta, tb, bn, a_rows + 3, b_rows + 1, m + 2, rng)
            print("ok", bn, ta, tb, m, n, k, flush=True)
