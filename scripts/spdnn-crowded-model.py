#!/usr/bin/env python3
# Instruction-count model of the fused sparse-DNN layer's width-32 tile (layer_tile_reuse,
# src/sparse/dnn_layer.cu) per layer of a challenge run, from its active counts:
#   scripts/spdnn-crowded-model.py bench/results/edd3b8e/spdnn_active.csv [--width 1024] [--layers 120]
#       [--crowded 14] [--ipc 2.0] [--clock 1.98e9] [--sms 132] [--grid 396] [--costs before|after|block|list]
# Per layer: the shape the kernel derives (src/sparse/reuse_tile.h: tiles of 32 x ipt images, slices,
# warp runs), the warp-outputs (every warp of a tile walks its run of every slice), the list loads
# (per run, the lists it touches: 16-row lists aligned in the reuse order, as in the generated and
# official layers; test_spdnn_reuse_tile checks this count against an emulation of the tile), the
# 32-output groups and the items, each times its SASS instruction count (counted with cuobjdump
# --dump-sass on dnn_layer_compact_kernel<true>, see src/sparse/README.md "Crowded layers: a SASS
# count"), and the time that many warp instructions take at --ipc warp instructions per clock per SM.
# A model, not a measurement: it ignores memory stalls, and the late layers (a few hundred images)
# are latency-bound chains, so their instruction time is a floor far below what they take.
import argparse
import csv

# Warp instructions (SASS, dnn_layer_compact_kernel<true>): per (warp, output) when the list is held,
# extra per list load (a full list: no padding), per group of 32 outputs, per (item, warp) outside
# those loops (prologue, runs, fence, done counter; an estimate from the listing, small).
# block (JHDNN_SPDNN_TILE=block): per step of m >= 4 outputs on the held list (8 chains computed) and
# per one-output step instead of per output.
COSTS = {
    "before": dict(output=113, list_load=476, group=54, item=150),  # 9b019ed (main)
    "after": dict(output=84, list_load=136, group=62, item=150),    # this branch, JHDNN_SPDNN_TILE=single
    "block": dict(block_step=560, single_step=168, list_load=131, group=62, item=150),  # JHDNN_SPDNN_TILE=block
    # JHDNN_SPDNN_TILE=list (dnn_layer_compact_kernel<true, true>, grid 2 x SMs): per 16-output list step
    # 957 with 16-byte feature copies (contiguous columns: layer 1, identity list) / 1060 gathered
    # (cuobjdump path count of the pipeline loop, src/sparse/README.md "List-blocked tile"); per chunk of
    # <= 32 list blocks ~200 (prologue: two index fetches, the first issue, the flag stores; estimate);
    # the head / tail of a run as block steps (the block costs above); per (item, warp) ~250 (estimate).
    "list": dict(list_contig=957, list_gather=1060, chunk=200, block_step=560, single_step=168, list_load=131,
                 group=62, item=250),
}

ap = argparse.ArgumentParser()
ap.add_argument("csv")
ap.add_argument("--width", type=int, default=1024)
ap.add_argument("--layers", type=int, default=120)
ap.add_argument("--crowded", type=int, default=14)
ap.add_argument("--images", type=int, default=60000)
ap.add_argument("--ipc", type=float, default=2.0, help="warp instructions per clock per SM (4 schedulers: max 4)")
ap.add_argument("--clock", type=float, default=1.98e9)
ap.add_argument("--sms", type=int, default=132)
ap.add_argument("--grid", type=int, default=0, help="resident blocks (default: 3 x SMs at 80 registers; list: 2 x SMs)")
ap.add_argument("--costs", choices=sorted(COSTS), default="after")
ap.add_argument("--rows-per-list", type=int, default=16)
a = ap.parse_args()
C = COSTS[a.costs]
if a.grid <= 0:
    a.grid = (2 if a.costs == "list" else 3) * a.sms
WARPS, MIN_SLICE = 8, 64
ALIGN = 16 if a.costs == "list" else 1


def layer_shape(count, n_out, sm_count, target, align=1):  # reuse_tile.h
    ipt = 4 if (count + 127) // 128 >= 2 * sm_count else 1
    tiles = (count + 32 * ipt - 1) // (32 * ipt)
    if 2 * tiles >= target:
        target *= 4
    slices = max(1, target // tiles)
    slices = min(slices, max(1, n_out // MIN_SLICE), 65535)
    slice_ = (n_out + slices - 1) // slices
    if align > 1:  # list mode: slices and runs at multiples of 16
        unit = align * (WARPS // ipt)
        slice_ = (slice_ + unit - 1) // unit * unit
    return ipt, tiles, (n_out + slice_ - 1) // slice_, slice_


def warp_run(warp, groups, jb, je, align=1):  # reuse_tile.h
    runs = WARPS // groups
    per = (je - jb + runs - 1) // runs
    per = (per + align - 1) // align * align
    b = min(je, jb + (warp % runs) * per)
    return b, min(je, b + per)


act = [int(r["active"]) for r in csv.DictReader(open(a.csv))
       if int(r["width"]) == a.width and int(r["layers"]) == a.layers]
if not act:
    raise SystemExit(f"no rows for width {a.width}, {a.layers} layers in {a.csv}")
n = a.width
entering = [a.images] + act[:-1]
rate = a.sms * a.ipc * a.clock
print(f"# N {n}, L {a.layers}, costs '{a.costs}' {C}, IPC {a.ipc} x {a.sms} SMs x {a.clock / 1e9:.2f} GHz")
print(f"{'layer':>5} {'images':>7} {'ipt':>3} {'tiles':>5} {'slices':>6} {'warp-outputs':>12} {'list loads':>10} "
      f"{'M instr':>8} {'FFMA %':>6} {'us at IPC':>9}")
tot = tot_c = 0.0
for l, count in enumerate(entering, 1):
    ipt, tiles, slices, slice_ = layer_shape(count, n, a.sms, a.grid, ALIGN)
    outputs = tiles * ipt * n
    lists = groups = bsteps = ssteps = lsteps = chunks = 0
    for s in range(slices):
        jb, je = s * slice_, min(n, (s + 1) * slice_)
        for w in range(WARPS):
            b, e = warp_run(w, ipt, jb, je, ALIGN)
            pieces = [(b, e)]
            if "list_contig" in C:  # list mode: aligned 16-blocks inside the run are list steps (the
                b0, b1 = (b + 15) // 16, e // 16  # challenge's lists), the head and tail block steps
                if b0 < b1:
                    pieces = [(b, 16 * b0), (16 * b1, e)]
                    lsteps += b1 - b0
                    chunks += (b1 - b0 + 31) // 32
            for (pb, pe) in pieces:
                if pb >= pe:
                    continue
                lists += (pe - 1) // a.rows_per_list - pb // a.rows_per_list + 1
                groups += (pe - pb + 31) // 32
                g0 = pb  # block steps in groups ending at multiples of 32 (reuse_tile.h group_end;
                while g0 < pe:  # test_spdnn_reuse_tile checks this count against the emulation)
                    g1 = min(pe, (g0 // 32 + 1) * 32)
                    cnt, k = g1 - g0, 0
                    while k < cnt:
                        t = g0 + k
                        m = min(8, cnt - k, (t // a.rows_per_list + 1) * a.rows_per_list - t)
                        if m >= 4:
                            bsteps, k = bsteps + 1, k + m
                        else:
                            ssteps, k = ssteps + 1, k + 1
                    g0 = g1
    lists, groups, bsteps, ssteps = lists * tiles, groups * tiles, bsteps * tiles, ssteps * tiles
    lsteps, chunks = lsteps * tiles, chunks * tiles
    body = (bsteps * C["block_step"] + ssteps * C["single_step"]) if "block_step" in C else outputs * C["output"]
    if "list_contig" in C:  # layer 1 reads the identity list (contiguous columns), later layers gather
        body += lsteps * (C["list_contig"] if l == 1 else C["list_gather"]) + chunks * C["chunk"]
    instr = body + lists * C["list_load"] + groups * C["group"] + tiles * slices * WARPS * C["item"]
    us = instr / rate * 1e6
    tot += us
    if l <= a.crowded:
        tot_c += us
        print(f"{l:5d} {count:7d} {ipt:3d} {tiles:5d} {slices:6d} {outputs:12d} {lists:10d} {instr / 1e6:8.1f} "
              f"{100 * 32 * outputs / instr:6.1f} {us:9.1f}")
full = layer_shape(a.images, n, a.sms, a.grid, ALIGN)
print(f"# first {a.crowded} layers: {tot_c / 1e3:.3f} ms of issue at IPC {a.ipc}; all {a.layers} layers: "
      f"{tot / 1e3:.3f} ms (late layers are latency-bound: this is a floor for them)")
