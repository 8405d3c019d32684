# Transliteration of the cp.async SGEMM kernel (src/gemm/sgemm_async.cuh) and its host-side
# choices (src/gemm/sgemm_async.cu) to numpy. Every simulated thread issues its copies exactly as
# the kernel computes them; the script checks that
#   - every copy that is not zero-filled reads logical elements of the operand only (a zero-byte
#     copy names the operand's first element), and unguarded copies only happen in interior tiles,
#   - 16-byte copies are 16-byte aligned in global and shared memory,
#   - every element of a stage's [kBK][kRows] tile is written by exactly one copy per K tile,
#   - a warp's K-major 4-byte stores hit 32 distinct banks, and fragment reads are float4-aligned,
#   - C (every tile variant, transposes, tails, batches, split-K 1/2/4/8) equals A B exactly, every
#     logical element written once, nothing else written.
import numpy as np, itertools, math
kBK, kStages, kPad = 16, 4, 4

def tile_m(wm): return 64 * wm
def tile_n(wn): return 32 * wn
def threads(wm, wn): return 32 * wm * wn

class Loader:
    def __init__(s, kmajor, rows, T, vec=4):
        s.kmajor, s.rows, s.T, s.vec = kmajor, rows, T, vec
        s.ld = rows + kPad
        s.stage_floats = kBK * s.ld
        s.vecs = rows // vec
        s.kstep = T // s.vecs
        s.istep = T // 8
        s.copies = 2 * rows // s.istep if kmajor else kBK // s.kstep
        if kmajor: assert T % 8 == 0 and rows % s.istep == 0 and s.istep % 4 == 0
        else: assert T % s.vecs == 0 and kBK % s.kstep == 0
        assert rows % 32 == 0
    def i0(s, tid): return tid // 8 if s.kmajor else (tid % s.vecs) * s.vec
    def k0(s, tid): return tid % 8 if s.kmajor else tid // s.vecs
    def c_i(s, c): return (c // 2) * s.istep if s.kmajor else 0
    def c_k(s, c): return (c % 2) * 8 if s.kmajor else c * s.kstep
    def c_g(s, c, step): return (c % 2) * 8 + (c // 2) * step if s.kmajor else c * step
    def c_s(s, c): return (c % 2) * 8 * s.ld + (c // 2) * s.istep if s.kmajor else c * s.kstep * s.ld

def run_cta(kA, kB, wm, wn, split, rank, P, A, B, C, written, work, a_vec=4):
    BM, BN, T = tile_m(wm), tile_n(wn), threads(wm, wn)
    LA, LB = Loader(kA, BM, T, a_vec), Loader(kB, BN, T)
    tiles = P['tiles_m'] * P['tiles_n']
    batch, tile = work // tiles, work % tiles
    m0, n0 = (tile % P['tiles_m']) * BM, (tile // P['tiles_m']) * BN
    bo, bi = batch // P['batch_inner'], batch % P['batch_inner']
    a_base = bo * P['a_outer'] + bi * P['a_inner']
    b_base = bo * P['b_outer'] + bi * P['b_inner']
    c_base = bo * P['c_outer'] + bi * P['c_inner']
    m_left, n_left = P['m'] - m0, P['n'] - n0
    k_begin = rank * P['k_per_split']
    k_end = min(P['k'], k_begin + P['k_per_split']) if split > 1 else P['k']
    k_len = max(k_end - k_begin, 0)
    k_tiles = k_len // kBK + (k_len % kBK != 0)
    interior = m_left >= BM and n_left >= BN
    sa = np.full((kStages, kBK, LA.ld), np.nan); sb = np.full((kStages, kBK, LB.ld), np.nan)

    def loader_state(L, mat_base, ld, tile_i0, tid):
        g = (mat_base + (tile_i0 + L.i0(tid)) * ld + k_begin + L.k0(tid)) if L.kmajor else \
            (mat_base + tile_i0 + L.i0(tid) + (k_begin + L.k0(tid)) * ld)
        step = (L.istep if L.kmajor else L.kstep) * ld
        return [g, step]

    def elem(L, mat_base, ld, flat):  # flat offset -> logical (i, k) relative to the batch matrix
        off = flat - mat_base
        if L.kmajor: return off // ld, off % ld   # i = row (m or n), k
        return off % ld, off // ld

    def issue(L, st_arr, stage, state, guarded, rows_left, k_left, tid, X, mat_base, ld, tile_i0, nrows):
        g, step = state
        i, k = L.i0(tid), L.k0(tid)
        for c in range(L.copies):
            srow = (L.k0(tid) * L.ld + L.i0(tid) + L.c_s(c))
            kk, ii = divmod(srow, L.ld)
            addr = g + L.c_g(c, step)
            if not guarded:
                n_el, src = (1 if L.kmajor else 4), addr
            else:
                k_ok = k + L.c_k(c) < k_left
                if L.kmajor:
                    ok = k_ok and i + L.c_i(c) < rows_left
                    n_el = 1 if ok else 0
                else:
                    r = min(max(rows_left - i, 0), L.vec)
                    ok = k_ok and r > 0
                    n_el = r if ok else 0
                src = addr if ok else 0  # p.a / p.b: the first element of the operand buffer
            if not L.kmajor and L.vec == 4:
                assert src % 4 == 0, "16-byte copy source misaligned"
                assert (srow * 4) % 16 == 0, "16-byte copy destination misaligned"
            width = 1 if L.kmajor else L.vec
            for e in range(width):
                if e < n_el:
                    li, lk = elem(L, mat_base, ld, src + e)
                    # the logical element must be inside the matrix and inside this CTA's k range
                    assert 0 <= li - tile_i0 < rows_left and 0 <= lk - k_begin < k_len + 0 * k_left, (li, lk)
                    assert lk - k_begin - (k_len - k_left) < kBK
                    val = X[src + e]
                else:
                    val = 0.0
                assert np.isnan(st_arr[stage, kk, ii + e]), "stage element written twice"
                st_arr[stage, kk, ii + e] = val
        state[0] = g + (kBK if L.kmajor else (kBK // L.kstep) * step)

    A_states = [loader_state(LA, a_base, P['lda'], m0, t) for t in range(T)]
    B_states = [loader_state(LB, b_base, P['ldb'], n0, t) for t in range(T)]
    def issue_tile(t):
        k_left = k_len - t * kBK
        guarded = (not interior) or k_left < kBK
        st = t % kStages
        sa[st, :, :] = np.nan; sb[st, :, :] = np.nan
        for tid in range(T):
            issue(LA, sa, st, A_states[tid], guarded, m_left, k_left, tid, A, a_base, P['lda'], m0, P['m'])
            issue(LB, sb, st, B_states[tid], guarded, n_left, k_left, tid, B, b_base, P['ldb'], n0, P['n'])
        assert not np.isnan(sa[st, :, :BM]).any() and not np.isnan(sb[st, :, :BN]).any(), "stage element unwritten"
        # zero-filled beyond the matrix / k range
        kk_valid = min(kBK, k_left)
        assert (sa[st, kk_valid:, :BM] == 0).all() and (sb[st, kk_valid:, :BN] == 0).all()
        if m_left < BM: assert (sa[st, :, max(m_left, 0):BM] == 0).all()
        if n_left < BN: assert (sb[st, :, max(n_left, 0):BN] == 0).all()

    acc = np.zeros((T, 8, 8))
    for s in range(kStages - 1):
        if s < k_tiles: issue_tile(s)
    for kt in range(k_tiles):
        nxt = kt + kStages - 1
        if nxt < k_tiles: issue_tile(nxt)  # (stage (kt-1)%4 is free: tile kt-1 is computed)
        st = kt % kStages
        for tid in range(T):
            warp, lane = tid // 32, tid % 32
            fm = (warp % wm) * 64 + (lane % 8) * 4; fn = (warp // wm) * 32 + (lane // 8) * 4
            assert (fm % 4 == 0) and (LA.ld % 4 == 0) and (LB.ld % 4 == 0)
            fa = np.concatenate([sa[st, :, fm:fm+4], sa[st, :, fm+32:fm+36]], axis=1)   # [kBK][8]
            fb = np.concatenate([sb[st, :, fn:fn+4], sb[st, :, fn+16:fn+20]], axis=1)
            acc[tid] += fa.T @ fb
    return acc, m0, n0, c_base, m_left, n_left

def frag(tid, wm):
    warp, lane = tid // 32, tid % 32
    return (warp % wm) * 64 + (lane % 8) * 4, (warp // wm) * 32 + (lane // 8) * 4

def store(C, written, addr, val, P):
    assert not written[addr], "C element written twice"
    written[addr] = True
    C[addr] = P['alpha'] * val + (P['beta'] * C[addr] if P['beta'] != 0 else 0)

def run(kA, kB, wm, wn, split, m, n, k, lda_pad, ldb_pad, ldc_pad, batch=1, alpha=1.0, beta=0.0, rng=None, a_vec=4):
    BM, BN, T = tile_m(wm), tile_n(wn), threads(wm, wn)
    up4 = lambda v: (v + 3) // 4 * 4
    upA = up4 if a_vec == 4 else (lambda v: v)     # 4-byte copies of A: any lda and stride
    a_rows, a_cols = (k, m) if kA else (m, k)      # stored column-major
    b_rows, b_cols = (n, k) if not kB else (k, n)
    lda, ldb, ldc = upA(a_rows + lda_pad), up4(b_rows + ldb_pad), m + ldc_pad
    sa_, sb_, sc_ = upA(lda * a_cols + 3), up4(ldb * b_cols + 8), ldc * n + 3
    A = np.full(sa_ * batch, np.nan); B = np.full(sb_ * batch, np.nan)
    Am = rng.integers(-3, 4, size=(batch, m, k)).astype(float); Bm = rng.integers(-3, 4, size=(batch, k, n)).astype(float)
    for bt in range(batch):
        for i, kk in itertools.product(range(m), range(k)):
            A[bt * sa_ + (kk + i * lda if kA else i + kk * lda)] = Am[bt, i, kk]
        for kk, j in itertools.product(range(k), range(n)):
            B[bt * sb_ + (kk + j * ldb if kB else j + kk * ldb)] = Bm[bt, kk, j]
    C0 = rng.integers(-3, 4, size=sc_ * batch).astype(float)
    C = C0.copy(); written = np.zeros(C.size, bool)
    P = dict(m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ldc, tiles_m=-(-m // BM), tiles_n=-(-n // BN), batch_inner=1,
             a_outer=sa_, a_inner=0, b_outer=sb_, b_inner=0, c_outer=sc_, c_inner=0, alpha=alpha, beta=beta)
    k_tiles = k // kBK + (k % kBK != 0)
    P['k_per_split'] = -(-k_tiles // split) * kBK if split > 1 else 0
    works = P['tiles_m'] * P['tiles_n'] * batch
    for work in range(works):
        parts = []
        for rank in range(split):
            acc, m0, n0, c_base, m_left, n_left = run_cta(kA, kB, wm, wn, split, rank, P, A, B, C, written, work, a_vec)
            parts.append(acc)
        if split == 1:
            acc = parts[0]
            for tid in range(T):
                fm, fn = frag(tid, wm)
                for j in range(8):
                    nl = fn + (j if j < 4 else 12 + j)
                    if nl >= n_left: continue
                    for h in range(2):
                        ml = fm + h * 32
                        for i in range(4):
                            if ml + i >= m_left: break
                            store(C, written, c_base + (n0 + nl) * ldc + m0 + ml + i, acc[tid, h * 4 + i, j], P)
        else:
            smem = []  # each rank's parked tile, [n][m] ld BM
            for acc in parts:
                t = np.full(BM * BN, np.nan)
                for tid in range(T):
                    fm, fn = frag(tid, wm)
                    for j in range(8):
                        nl = fn + (j if j < 4 else 12 + j)
                        for h in range(2):
                            ml = fm + h * 32
                            assert np.isnan(t[nl * BM + ml:nl * BM + ml + 4]).all()
                            t[nl * BM + ml:nl * BM + ml + 4] = acc[tid, h * 4:h * 4 + 4, j]
                assert not np.isnan(t).any()
                smem.append(t)
            chunk = BM * BN // split
            assert chunk * split == BM * BN
            for rank in range(split):
                for tid in range(T):
                    for e in range(rank * chunk + tid * 4, (rank + 1) * chunk, T * 4):
                        v = sum(smem[r][e:e + 4] for r in range(split))
                        ml, nl = e % BM, e // BM
                        if nl >= n_left or ml >= m_left: continue
                        for i in range(4):
                            if ml + i >= m_left: break
                            store(C, written, c_base + (n0 + nl) * ldc + m0 + ml + i, v[i], P)
    for bt in range(batch):
        ref = Am[bt] @ Bm[bt]
        for i, j in itertools.product(range(m), range(n)):
            o = bt * sc_ + i + j * ldc
            want = alpha * ref[i, j] + beta * C0[o]
            assert written[o] and C[o] == want, (bt, i, j, C[o], want)
            written[o] = False
    assert not written.any(), "wrote outside C's logical elements"

def bank_check():
    for wm, wn in [(2, 4), (2, 2), (1, 4)]:
        T = threads(wm, wn)
        for rows in {tile_m(wm), tile_n(wn)}:
            for L in (Loader(True, rows, T), Loader(False, rows, T, 1)):  # the 4-byte copy maps
                for c in range(L.copies):
                    for w in range(T // 32):
                        banks = {(L.k0(t) * L.ld + L.i0(t) + L.c_s(c)) % 32 for t in range(32 * w, 32 * w + 32)}
                        assert len(banks) == 32, (wm, wn, rows, c, w)

if __name__ == '__main__':
    rng = np.random.default_rng(7)
    bank_check()
    cases = 0
    for kA, kB in itertools.product([False, True], repeat=2):
        for (wm, wn) in [(2, 4), (2, 2), (1, 4)]:
            BM, BN = tile_m(wm), tile_n(wn)
            for (m, n, k) in [(BM, BN, 32), (BM + 3, BN - 5, 37), (5, 7, 3)]:
                run(kA, kB, wm, wn, 1, m, n, k, 1, 2, 3, beta=0.5 if (m + n) % 2 else 0.0, rng=rng); cases += 1
            if wm * wn == 4:
                for split in (2, 4, 8):
                    run(kA, kB, wm, wn, split, BM - 1, BN + 1, 16 * 9 + 5, 3, 0, 1, beta=-1.0, rng=rng); cases += 1
    run(False, True, 2, 2, 4, 70, 65, 100, 0, 0, 0, batch=2, alpha=2.0, beta=0.5, rng=rng); cases += 1
    run(True, False, 1, 4, 2, 3, 130, 40, 0, 1, 0, batch=3, rng=rng); cases += 1
    # 4-byte copies of an m-contiguous A (odd lda, odd batch stride), B k-contiguous: every tile, split
    for (wm, wn) in [(2, 4), (2, 2), (1, 4)]:
        BM, BN = tile_m(wm), tile_n(wn)
        for (m, n, k) in [(BM, BN, 32), (BM + 3, BN - 5, 37), (1, 7, 3)]:
            run(False, True, wm, wn, 1, m, n, k, 1, 2, 3, batch=2, beta=0.5, rng=rng, a_vec=1); cases += 1
        if wm * wn == 4:
            for split in (2, 8):
                run(False, True, wm, wn, split, BM - 1, BN + 1, 16 * 9 + 5, 2, 0, 1, beta=-1.0, rng=rng, a_vec=1); cases += 1
    print(f"sim_gemm_async: {cases} configurations exact, copies in bounds, banks conflict-free: OK")
