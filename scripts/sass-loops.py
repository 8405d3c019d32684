#!/usr/bin/env python3
"""Loops and spills of one kernel's SASS, from `nvdisasm -g -c` output (no GPU needed).

    cuobjdump -xelf all build/src/CMakeFiles/jhdnn.dir/sparse/dnn_layer.cu.o      # writes *.cubin here
    nvdisasm -g -c dnn_layer.sm_90a.cubin > all.sass
    scripts/sass-loops.py all.sass 'dnn_layer_cta_kernelILi3ELi4E' [--min-ffma 100] [--file late4_tile.cuh]

(cuobjdump and nvdisasm: the CUDA toolkit's, or the pip wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm.)
Prints every loop (a backward branch to a label) of the kernel whose body holds at least --min-ffma FFMA: its first
and last address, its static instruction count and opcode mix; then the spill instructions (STL / LDL) per source
line, for --file only if given; with --by-loop, each source line's spills split by the innermost loop that holds
them (its instruction and FFMA counts: spills in a block loop of ~1,500 instructions cost once per block, in the
357-instruction quad loop once per quad; session 25's late4crowd counts). Used in session 21 on late4 (src/sparse/README.md "Late4"): the FMA loop's mix
(594 instructions per 512 FFMA) and the spills that one change brought into it (LDL refills in the loop).
A loop that contains another is listed with the inner body counted once.
"""
import argparse
import collections
import re
import sys


def kernel_lines(path, name):
    """The lines from the kernel's .text section on, up to the next section of another kernel."""
    out, inside = [], False
    for line in open(path):
        if ".text." in line:
            if name in line:
                inside = True
            elif inside:
                break
        if inside:
            out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sass")
    ap.add_argument("kernel", help="a substring of the kernel's mangled name")
    ap.add_argument("--min-ffma", type=int, default=100)
    ap.add_argument("--file", default=None, help="spills of this source file only")
    ap.add_argument("--by-loop", action="store_true", help="split each line's spills by their innermost loop")
    a = ap.parse_args()
    lines = kernel_lines(a.sass, a.kernel)
    if not lines:
        sys.exit("no section of a kernel named like %r in %s" % (a.kernel, a.sass))
    ins, labels, spills, cur = [], {}, collections.Counter(), None
    spill_at = []  # (instruction index, source line) of every counted spill
    for line in lines:
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            cur = (m.group(1).split("/")[-1], int(m.group(2)))
            continue
        m = re.match(r"^\.(L_x_\d+):", line.strip())
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s+/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)(.*)", line)
        if m:
            op = m.group(3)
            ins.append((int(m.group(1), 16), op, m.group(4)))
            if op.split(".")[0] in ("STL", "LDL") and cur and (a.file is None or cur[0] == a.file):
                spills[cur] += 1
                spill_at.append((len(ins) - 1, cur))
    loops = []  # (first, last) instruction index of every loop
    for i, (addr, op, rest) in enumerate(ins):
        if not op.startswith("BRA"):
            continue
        m = re.search(r"\(\.(L_x_\d+)\)", rest)
        if m and m.group(1) in labels and labels[m.group(1)] <= i:
            loops.append((labels[m.group(1)], i))
            body = ins[labels[m.group(1)]: i + 1]
            mix = collections.Counter(o.split(".")[0] for _, o, _ in body)
            if mix["FFMA"] >= a.min_ffma:
                print("loop %#x-%#x: %d instructions, %s" % (body[0][0], addr, len(body), dict(mix.most_common(14))))
    print("spills (STL / LDL) by source line:", "none" if not spills else "")
    for k, v in sorted(spills.items()):
        print("  %s:%d %d" % (k[0], k[1], v))
    if a.by_loop and spill_at:
        by = collections.Counter()
        for i, src in spill_at:
            inner = min((lp for lp in loops if lp[0] <= i <= lp[1]), key=lambda lp: lp[1] - lp[0], default=None)
            if inner is None:
                by[(src, "outside any loop")] += 1
            else:
                ffma = sum(1 for _, o, _ in ins[inner[0]: inner[1] + 1] if o.startswith("FFMA"))
                by[(src, "loop of %d instructions, %d FFMA" % (inner[1] - inner[0] + 1, ffma))] += 1
        print("spills by source line and innermost loop:")
        for (src, where), v in sorted(by.items()):
            print("  %s:%d %d in %s" % (src[0], src[1], v, where))


if __name__ == "__main__":
    main()
