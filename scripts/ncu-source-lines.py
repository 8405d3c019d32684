#!/usr/bin/env python3
"""Where one kernel launch's warp-stall samples and memory traffic are, from ncu's per-instruction source page.

    ncu --section SourceCounters --page source --csv --print-source sass -k regex:KERNEL --launch-skip K \
        --launch-count 1 PROGRAM ... > src.csv              (on the GPU machine; gzip it to bring it back)
    cuobjdump -xelf all OBJECT.o && nvdisasm -g -c OBJECT.sm_90a.cubin > all.sass    (here: the same build)
    scripts/ncu-source-lines.py src.csv[.gz] [--sass all.sass --kernel MANGLED_SUBSTR] [--range 0x2de70:0x325d0 ~0x2fae0:0x31120 ...]

Prints: the samples by stall reason; per --range (kernel offsets, as in the SASS; "~" excludes a range from the
one before it, e.g. 0x2de70:0x325d0 ~0x2fae0:0x31120) its samples, instructions and top reasons; the 25 instructions
with the most samples; every executed global / shared memory instruction with, per execution, L1 tag requests,
shared wavefronts (ideal) and L2 sectors (ideal); with --sass, the samples per source line (the -g line info of
the same kernel: check that the opcodes match, printed as "opcode mismatches"); with --ops, the executed opcode
mix per executed FFMA, overall and by how often the instructions ran (a loop body, a per-block epilogue). Used
in session 22 on late4's late layer (src/sparse/README.md "Late4"): the cp.async.cg feature copies at 32 L2 sectors
per instruction against 16, and 12% of the samples in the epilogue; in session 29 for its instructions per FFMA.
"""
import argparse
import collections
import csv
import gzip
import re


def load(path):
    text = (gzip.open(path, "rt") if path.endswith(".gz") else open(path)).read().split("\n")
    start = next(i for i, l in enumerate(text) if l.startswith('"Address"'))
    rows = csv.reader(text[start:])
    hdr = next(rows)
    out = [dict(zip(hdr, r)) for r in rows if len(r) == len(hdr)]
    return hdr, out


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def sass_lines(path, kernel):
    """offset -> (opcode, (file, line)) for the kernel's section of `nvdisasm -g -c` output."""
    out, inside, cur = {}, False, None
    for line in open(path):
        if ".text." in line:
            inside, cur = kernel in line, None
        if not inside:
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            cur = (m.group(1).split("/")[-1], int(m.group(2)))
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m:
            out[int(m.group(1), 16)] = (m.group(3), cur)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--sass")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--range", nargs="*", default=[], help="A:B [~C:D ...] kernel offsets, hex")
    ap.add_argument("--ops", action="store_true", help="also the executed opcode mix, per executed FFMA")
    a = ap.parse_args()
    hdr, rows = load(a.csv)
    reasons = [k for k in hdr if k.startswith("stall_") and "(Not" not in k]
    base = int(rows[0]["Address"], 16)
    ins = []  # (offset, source, samples, {reason: n}, executed, row)
    for d in rows:
        st = {k[6:]: num(d[k]) for k in reasons if num(d[k]) > 0}
        ins.append((int(d["Address"], 16) - base, d["Source"].strip(), sum(st.values()), st,
                    num(d["Instructions Executed"]), d))
    total = sum(i[2] for i in ins)
    by = collections.Counter()
    for i in ins:
        by.update(i[3])
    print("samples %d:" % total, " ".join("%s %.1f%%" % (k, 100 * v / total) for k, v in by.most_common(12)))
    if a.ops:  # opcode without modifiers or predicate, weighted by executions (warp instructions)
        def opcode(text):
            words = text.split()
            return (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]

        ran = [i for i in ins if i[4] > 0 and i[1].split()]
        ops = collections.Counter()
        for i in ran:
            ops[opcode(i[1])] += i[4]
        ffma = ops["FFMA"] or 1.0
        print("executed %.2f M warp instructions, %.2f per FFMA:" % (sum(ops.values()) / 1e6, sum(ops.values()) / ffma),
              " ".join("%s %.3f" % (k, v / ffma) for k, v in ops.most_common(16)))
        # The same by how often an instruction ran (a loop body, a per-block epilogue, a per-item prologue: code
        # that runs together runs as often), the 5 classes with the most executions.
        classes = collections.defaultdict(collections.Counter)
        for i in ran:
            classes[int(i[4])][opcode(i[1])] += 1
        for e, c in sorted(classes.items(), key=lambda kv: -kv[0] * sum(kv[1].values()))[:5]:
            print("  run %d times: %d instructions, %.3f per FFMA:" % (e, sum(c.values()), e * sum(c.values()) / ffma),
                  " ".join("%s %d" % kv for kv in c.most_common(10)))

    def top(counter, n=6):
        return " ".join("%s:%d" % (k, v) for k, v in counter.most_common(n))

    if a.range:
        groups = []  # [(lo, hi, [(x, y) excluded])]: a "~" range belongs to the range before it
        for r in a.range:
            lo, hi = (int(x, 16) for x in r.lstrip("~").split(":"))
            if r.startswith("~") and groups:
                groups[-1][2].append((lo, hi))
            else:
                groups.append((lo, hi, []))
        for lo, hi, exc in groups:
            c, n, e = collections.Counter(), 0.0, 0.0
            for off, _, s, st, ex, _ in ins:
                if lo <= off <= hi and not any(x <= off <= y for x, y in exc):
                    c.update(st)
                    n += s
                    e += ex
            print("range %#x-%#x: %d samples (%.1f%%), %d warp instructions; %s" % (lo, hi, n, 100 * n / total, e, top(c)))
    print("the 25 instructions with the most samples (offset, samples, executed, source, reasons):")
    for off, src, s, st, ex, _ in sorted(ins, key=lambda i: -i[2])[:25]:
        print("  %#x %5d %9d %-48s %s" % (off, s, ex, src[:48], top(collections.Counter(st), 4)))
    cols = ["L1 Tag Requests Global", "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal",
            "L2 Theoretical Sectors Global", "L2 Theoretical Sectors Global Ideal"]
    print("memory instructions, per execution: L1 tags, shared wavefronts (ideal), L2 sectors (ideal):")
    for off, src, _, _, ex, d in ins:
        if ex > 0 and re.search(r"\b(LDG|STG|LDGSTS|LDS|STS|UBLKCP)", src):
            v = [num(d[k]) / ex if k in d else 0.0 for k in cols]
            if any(v):
                print("  %#x %-44s %8d  %.1f  %.1f (%.1f)  %.1f (%.1f)" % (off, src[:44], ex, *v))
    if a.sass:
        sl = sass_lines(a.sass, a.kernel)
        def opcode(src):  # the first word that is not a predicate
            return next((w for w in src.split() if not w.startswith("@")), "").rstrip(";")
        mism = sum(1 for off, src, *_ in ins if off in sl and opcode(src) != sl[off][0])
        print("opcode mismatches against %s: %d (0: the same SASS)" % (a.sass, mism))
        per, ex_per = collections.Counter(), collections.Counter()
        for off, _, s, _, ex, _ in ins:
            if off in sl:
                per[sl[off][1]] += s
                ex_per[sl[off][1]] += ex
        print("samples per source line (file:line samples executed):")
        for k, v in per.most_common(30):
            if k:
                print("  %s:%d %d %d" % (k[0], k[1], v, ex_per[k]))


if __name__ == "__main__":
    main()
