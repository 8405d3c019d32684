#!/usr/bin/env python3
"""Checks the staged epilogue's shared-memory layouts (conv_wgmma.cu: stage_off / store_tile_staged,
stage16_off / store_tile_staged_h, and tma_stage_off / store_tile_tma, the TMA-store epilogue).

For every tile width (64: 64-byte staging rows, 128/256: 128-byte rows) and every output type
(16-bit: 8-channel vectors, fp32: 4-channel vectors) it replays the exact lane -> address mapping
of the kernel and checks:
  - stage_off is injective over (row, column) and stays inside the warp's buffer (no lane
    overwrites another's value, no overflow into the next warp's buffer);
  - the fragment writes (8-byte st.shared, served per half-warp) have no bank conflict;
  - the 16-byte reads (ld.shared.v4, served per quarter-warp) have no bank conflict;
  - every (row, column) of a chunk is written once and read once.
Exit status 1 on any failure. Run: python3 scripts/check_epilogue_banks.py
"""
import sys


def stage_off(row_bytes, r, col):
    g = (((r & 3) << 1) | (r & 1)) if row_bytes == 128 else 3 * ((r >> 1) & 1)
    return r * row_bytes + (((col >> 2) ^ g) << 4) + (col & 3) * 4


def conflicts(accesses, width):
    """accesses: list of (lane, byte address); width: bytes per lane. Served in phases of
    128 / width lanes; returns the phases in which two lanes touch the same bank at different
    32-bit words."""
    per_phase = 128 // width
    bad = []
    for ph in range(32 // per_phase):
        banks = {}
        for lane, addr in accesses:
            if lane // per_phase != ph:
                continue
            for w in range(width // 4):
                word = addr // 4 + w
                b = word % 32
                if b in banks and banks[b] != word:
                    bad.append((ph, b))
                banks[b] = word
    return bad


def check(bn, elem):
    cols = 16 if bn == 64 else 32
    row_bytes = cols * 4
    v = 16 // elem
    vec_per_row = cols // v
    iters = 16 * vec_per_row // 32
    errors = []
    offs = {}
    for r in range(16):
        for c in range(cols):
            o = stage_off(row_bytes, r, c)
            if not (0 <= o and o + 4 <= 16 * row_bytes):
                errors.append(f"offset {o} of ({r},{c}) outside the buffer")
            if o in offs:
                errors.append(f"({r},{c}) and {offs[o]} share offset {o}")
            offs[o] = (r, c)
    written = {}
    for jl in range(cols // 8):
        for h in range(2):
            acc = []
            for lane in range(32):
                r, c = lane // 4 + 8 * h, jl * 8 + (lane % 4) * 2
                acc.append((lane, stage_off(row_bytes, r, c)))
                for e in range(2):
                    written[(r, c + e)] = written.get((r, c + e), 0) + 1
            if conflicts(acc, 8):
                errors.append(f"write conflict jl={jl} h={h}: {conflicts(acc, 8)[:3]}")
    read = {}
    for i in range(iters):
        for u in range(v // 4):
            acc = []
            for lane in range(32):
                idx = i * 32 + lane
                r, vv = idx // vec_per_row, idx % vec_per_row
                acc.append((lane, stage_off(row_bytes, r, vv * v + 4 * u)))
                for e in range(4):
                    read[(r, vv * v + 4 * u + e)] = read.get((r, vv * v + 4 * u + e), 0) + 1
            if conflicts(acc, 16):
                errors.append(f"read conflict i={i} u={u}: {conflicts(acc, 16)[:3]}")
    full = {(r, c): 1 for r in range(16) for c in range(cols)}
    if written != full:
        errors.append("fragment writes do not cover the chunk exactly once")
    if read != full:
        errors.append("vector reads do not cover the chunk exactly once")
    return errors


def stage16_off(r, chunk):
    return r * 128 + ((chunk ^ (((r & 3) << 1) | ((r >> 2) & 1))) << 4)


def check_stmatrix_layout(off, extra=None):
    """Shared by both 16-bit stagings: off(r, u) (16 rows x 8 units of 16 bytes) must be injective and
    inside the 2 KiB buffer (extra(r, u, o) may add errors per unit), and the stmatrix.x4 writes of
    stmatrix_chunk (lane l: row (l/8 % 2)*8 + l%8 of column group 2jp + l/16, served per 8 lanes = one
    matrix) conflict-free and covering the chunk exactly once. Returns (errors, full), full = the
    expected once-per-unit coverage map for further checks."""
    errors = []
    offs = {}
    for r in range(16):
        for u in range(8):
            o = off(r, u)
            if extra:
                errors += extra(r, u, o)
            if not (0 <= o and o + 16 <= 16 * 128):
                errors.append(f"offset {o} of ({r},{u}) outside the buffer")
            if o in offs:
                errors.append(f"({r},{u}) and {offs[o]} share offset {o}")
            offs[o] = (r, u)
    written = {}
    for jp in range(4):
        acc = []
        for lane in range(32):
            mat = lane // 8
            r, u = (mat % 2) * 8 + lane % 8, 2 * jp + mat // 2
            acc.append((lane, off(r, u)))
            written[(r, u)] = written.get((r, u), 0) + 1
        if conflicts(acc, 16):
            errors.append(f"stmatrix conflict jp={jp}: {conflicts(acc, 16)[:3]}")
    full = {(r, u): 1 for r in range(16) for u in range(8)}
    if written != full:
        errors.append("stmatrix writes do not cover the chunk exactly once")
    return errors, full


def check16():
    """The 16-bit staging path (store_tile_staged_h, BN 128 / 256, beta == 0): the stmatrix layout
    checks, plus the reads (lane l: row l/2, units 2i + l%2, per quarter-warp)."""
    errors, full = check_stmatrix_layout(stage16_off)
    read = {}
    for i in range(4):
        acc = []
        for lane in range(32):
            r, u = lane // 2, 2 * i + lane % 2
            acc.append((lane, stage16_off(r, u)))
            read[(r, u)] = read.get((r, u), 0) + 1
        if conflicts(acc, 16):
            errors.append(f"read conflict i={i}: {conflicts(acc, 16)[:3]}")
    if read != full:
        errors.append("vector reads do not cover the chunk exactly once")
    return errors


def tma_stage_off(r, chunk):
    # tma_store_box.h: TMA's 128-byte swizzle of a 1024-byte aligned buffer of 128-byte rows
    return r * 128 + ((chunk ^ (r & 7)) << 4)


def check_tma():
    """The TMA-store staging (store_tile_tma, 16-bit, BN 128 / 256, beta == 0): the stmatrix writes of
    store_tile_staged_h (same lanes, rows and units) into tma_stage_off; besides the shared layout
    checks, it must be exactly the SWIZZLE_128B pattern the tensor map reads (address bits 4..6 XOR
    bits 7..9). The reads are the TMA unit's."""
    def swizzle(r, u, o):
        plain = r * 128 + u * 16
        if o != plain ^ (((plain >> 7) & 7) << 4):
            return [f"({r},{u}) at {o} is not the 128-byte swizzle of {plain}"]
        return []
    return check_stmatrix_layout(tma_stage_off, swizzle)[0]

ok = True
errs = check_tma()
print(f"BN 128/256, TMA-store staging (16-bit, beta == 0): {'ok' if not errs else 'FAIL'}")
for e in errs[:10]:
    print("   ", e)
ok = ok and not errs
errs = check16()
print(f"BN 128/256, 16-bit staging (beta == 0): {'ok' if not errs else 'FAIL'}")
for e in errs[:10]:
    print("   ", e)
ok = ok and not errs
for bn in (64, 128, 256):
    for elem in (2, 4):
        errs = check(bn, elem)
        print(f"BN {bn:3d}, {elem}-byte output: {'ok' if not errs else 'FAIL'}")
        for e in errs[:10]:
            print("   ", e)
        ok = ok and not errs
sys.exit(0 if ok else 1)
