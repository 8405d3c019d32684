#!/usr/bin/env python3
"""Summarise a resident-kernel trace (spdnn_infer --resident-trace FILE).

    scripts/spdnn-resident-trace.py FILE [--bins 24] [--per-cta 6]

FILE: CSV width,layers,call,cta,sm,event,layer,ns,clk,live,wait_clk, one row per record reached
(thread 0 of each CTA: entry, loaded = features + first row orders in shared memory, first_chunk =
the first weight chunk landed, layer = end of network layer `layer` (live = the slice's images left;
wait_clk = cycles thread 0 spent in that layer's cp.async waits + barriers), exit).
Under vals4w's handed schedule (session 40: a call's slices outnumber the CTAs, its layers run in blocks taken by
persistent CTAs) the records are per SLICE, each written by whichever CTA ran that block: read "CTA" below as "slice";
a slice's records may then name several SMs (the moved-SM warning), and its per-layer times include the waits
between its blocks.

For every (width, layers, call) it prints what answers "are the CTAs co-resident, and where does the
time go?":
- the launch: CTAs, CTAs with images, SMs used, CTAs per SM (> 1 means waves: one CTA per SM fits),
  the span (first entry .. last exit) and the gap to the previous call's last exit;
- concurrency: the most CTAs between entry and exit at once, and the count over time in bins;
- start-up: entry spread across CTAs, entry -> loaded (feature load + order round trip),
  loaded -> first_chunk (first weights), first_chunk -> end of the first layer;
- per-layer time per CTA (end of layer k - end of layer k - 1, from clk at the CTA's own clock rate,
  and from ns): percentiles over all (CTA, layer) pairs, the median by layer position, by live count;
- the tail: write-out (last layer -> exit), exit spread, the critical CTA (the last to exit).
Pure Python 3 (no numpy), so it runs anywhere.
"""
import argparse
import collections
import csv
import sys


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def fmt_us(ns):
    return "%.2f" % (ns / 1000.0)


def stats(name, values_ns, unit_div=1000.0):
    if not values_ns:
        return "%-34s (none)" % name
    return "%-34s n %6d  min %8.2f  p10 %8.2f  median %8.2f  p90 %8.2f  max %8.2f  mean %8.2f us" % (
        name, len(values_ns), min(values_ns) / unit_div, pct(values_ns, 10) / unit_div,
        pct(values_ns, 50) / unit_div, pct(values_ns, 90) / unit_div, max(values_ns) / unit_div,
        sum(values_ns) / len(values_ns) / unit_div)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--bins", type=int, default=24, help="time bins for the concurrency profile")
    ap.add_argument("--per-cta", type=int, default=6, help="CTAs listed in the per-CTA table (slowest first)")
    a = ap.parse_args()

    calls = collections.OrderedDict()  # (width, layers, call) -> cta -> event -> list of rows
    with open(a.file) as f:
        for row in csv.DictReader(f):
            key = (int(row["width"]), int(row["layers"]), int(row["call"]))
            cta = int(row["cta"])
            rec = dict(sm=int(row["sm"]), event=row["event"], layer=int(row["layer"]), ns=int(row["ns"]),
                       clk=int(row["clk"]), live=int(row["live"]), wait=int(row.get("wait_clk") or 0))
            calls.setdefault(key, {}).setdefault(cta, []).append(rec)
    if not calls:
        print("no records in", a.file)
        return 1

    prev_end = {}
    for (width, layers, call), ctas in calls.items():
        print("=" * 100)
        # per CTA: its records by event (layer records by layer)
        info = {}
        for cta, recs in ctas.items():
            d = dict(layers={}, sm=recs[0]["sm"], sms=set(r["sm"] for r in recs))
            for r in recs:
                if r["event"] == "layer":
                    d["layers"][r["layer"]] = r
                else:
                    d[r["event"]] = r
            info[cta] = d
        entries = [d["entry"]["ns"] for d in info.values() if "entry" in d]
        exits = [d["exit"]["ns"] for d in info.values() if "exit" in d]
        t0 = min(entries)
        t_end = max(exits) if exits else max(r["ns"] for recs in ctas.values() for r in recs)
        with_images = [c for c, d in info.items() if "loaded" in d]
        layer_ids = sorted(set(k for d in info.values() for k in d["layers"]))
        first_layer = layer_ids[0] if layer_ids else -1
        print("N %d L %d call %d: network layers %s..%s, %d CTAs traced, %d with images, span %s us" % (
            width, layers, call, layer_ids[0] if layer_ids else "-", layer_ids[-1] if layer_ids else "-",
            len(info), len(with_images), fmt_us(t_end - t0)))
        pk = (width, layers)
        if pk in prev_end:
            print("  gap after the previous call's last exit: %s us (launch + host between calls)" %
                  fmt_us(t0 - prev_end[pk]))
        prev_end[pk] = t_end
        missing_exit = [c for c, d in info.items() if "exit" not in d]
        if missing_exit:
            print("  WARNING: %d CTAs without an exit record (e.g. %s)" % (len(missing_exit), missing_exit[:8]))
        moved = [c for c, d in info.items() if len(d["sms"]) > 1]
        if moved:
            print("  WARNING: %d CTAs report more than one SM id (e.g. %s)" % (len(moved), moved[:8]))

        # SMs and waves
        per_sm = collections.defaultdict(list)
        for c, d in info.items():
            per_sm[d["sm"]].append(c)
        most = max(len(v) for v in per_sm.values())
        overl = 0
        sequential = 0
        for sm, cs in per_sm.items():
            iv = sorted((info[c]["entry"]["ns"], info[c].get("exit", {"ns": t_end})["ns"]) for c in cs
                        if "entry" in info[c])
            for i in range(1, len(iv)):
                if iv[i][0] < iv[i - 1][1]:
                    overl += 1
                else:
                    sequential += 1
        print("  SMs used %d, CTAs per SM: max %d; CTA pairs on one SM overlapping in time %d, one after the "
              "other %d (> 0: waves)" % (len(per_sm), most, overl, sequential))
        wi_sms = set(info[c]["sm"] for c in with_images)
        print("  CTAs with images on %d distinct SMs (of %d CTAs with images)" % (len(wi_sms), len(with_images)))

        # concurrency
        ev = []
        for c, d in info.items():
            if "entry" in d:
                ev.append((d["entry"]["ns"], 1))
                ev.append((d.get("exit", {"ns": t_end})["ns"], -1))
        ev.sort(key=lambda e: (e[0], e[1]))
        cur = best = 0
        for _, dlt in ev:
            cur += dlt
            best = max(best, cur)
        print("  concurrency: at most %d of %d CTAs between entry and exit at once" % (best, len(info)))
        # the verdict looks at the CTAs with images only (a CTA without images exits within ~1 us, and
        # another may then start on its SM without any wave among the working CTAs)
        wi_set = set(with_images)
        wi_most = max([sum(1 for c in cs if c in wi_set) for cs in per_sm.values()] + [0])
        wi_best = cur = 0
        for t, dlt in sorted([(info[c]["entry"]["ns"], 1) for c in with_images] +
                             [(info[c].get("exit", {"ns": t_end})["ns"], -1) for c in with_images],
                             key=lambda e: (e[0], e[1])):
            cur += dlt
            wi_best = max(wi_best, cur)
        co = wi_most <= 1 and wi_best >= len(with_images)
        print("  VERDICT co-resident: %s (one CTA per SM, every CTA with images alive at once)" % (
            "YES" if co else "NO"))
        span = max(t_end - t0, 1)
        nb = max(1, a.bins)
        prof = []
        for b in range(nb):
            lo = t0 + span * b / nb
            hi = t0 + span * (b + 1) / nb
            # time-averaged count of CTAs in [entry, exit) over the bin
            tot = 0.0
            for c, d in info.items():
                if "entry" not in d:
                    continue
                s = max(lo, d["entry"]["ns"])
                e = min(hi, d.get("exit", {"ns": t_end})["ns"])
                if e > s:
                    tot += e - s
            prof.append(tot / (hi - lo))
        print("  concurrency over time (%d bins of %s us, mean CTAs alive): %s" % (
            nb, fmt_us(span / nb), " ".join("%.0f" % p for p in prof)))
        busy = []
        for c in with_images:
            d = info[c]
            if "exit" in d:
                busy.append(d["exit"]["ns"] - d["entry"]["ns"])
        if busy:
            print("  CTAs with images, entry -> exit: median %s us, max %s us; SM-time used %.1f%% of (CTAs with "
                  "images x span)" % (fmt_us(pct(busy, 50)), fmt_us(max(busy)),
                                      100.0 * sum(busy) / (len(busy) * span)))

        # start-up
        print("  start-up:")
        print("    " + stats("entry - first entry (all CTAs)", [d["entry"]["ns"] - t0 for d in info.values()
                                                                  if "entry" in d]))
        print("    " + stats("entry -> loaded", [d["loaded"]["ns"] - d["entry"]["ns"] for d in info.values()
                                                 if "loaded" in d and "entry" in d]))
        print("    " + stats("loaded -> first_chunk", [d["first_chunk"]["ns"] - d["loaded"]["ns"]
                                                       for d in info.values()
                                                       if "first_chunk" in d and "loaded" in d]))
        print("    " + stats("first_chunk -> end of first layer",
                             [d["layers"][first_layer]["ns"] - d["first_chunk"]["ns"] for d in info.values()
                              if "first_chunk" in d and first_layer in d["layers"]]))

        # per-layer times: clk differences at the CTA's own rate (clk per ns over its life), and ns
        lay_clk_ns, lay_ns, by_pos, by_live, ghz = [], [], collections.defaultdict(list), \
            collections.defaultdict(list), []
        lay_wait_ns, wait_frac = [], []
        per_cta_rows = []
        for c in with_images:
            d = info[c]
            ks = sorted(d["layers"])
            if not ks or "entry" not in d or "exit" not in d:
                continue
            dns = d["exit"]["ns"] - d["entry"]["ns"]
            dclk = d["exit"]["clk"] - d["entry"]["clk"]
            rate = dclk / dns if dns > 0 else float("nan")  # cycles per ns = GHz
            if dns > 20000:  # the rate is meaningful over >= 20 us
                ghz.append(rate)
            prev = d.get("first_chunk")
            times = []
            for k in ks:
                r = d["layers"][k]
                if prev is not None and k != first_layer:
                    t_clk = (r["clk"] - prev["clk"]) / rate if rate == rate and rate > 0 else float("nan")
                    lay_clk_ns.append(t_clk)
                    lay_ns.append(r["ns"] - prev["ns"])
                    if rate == rate and rate > 0:
                        lay_wait_ns.append(r["wait"] / rate)
                        if r["clk"] > prev["clk"]:
                            wait_frac.append(100.0 * r["wait"] / (r["clk"] - prev["clk"]))
                    by_pos[k - first_layer].append(t_clk)
                    by_live[prev["live"]].append(t_clk)
                    times.append(t_clk)
                prev = r
            per_cta_rows.append((d["exit"]["ns"] - t0, c, d["sm"], len(ks), d["entry"]["ns"] - t0,
                                 (d["loaded"]["ns"] - d["entry"]["ns"]) if "loaded" in d else 0,
                                 pct(times, 50) if times else float("nan"), d["exit"]["ns"] - d["layers"][ks[-1]]["ns"]))
        if ghz:
            print("  SM clock from clk/ns over each CTA's life: median %.3f GHz (min %.3f, max %.3f)" % (
                pct(ghz, 50), min(ghz), max(ghz)))
        print("  per-layer time per CTA (end of layer k - end of layer k-1; the first layer is in start-up):")
        print("    " + stats("from clk (CTA's clock rate)", lay_clk_ns))
        print("    " + stats("from ns (globaltimer)", lay_ns))
        print("    " + stats("of which thread 0 waited (chunks)", lay_wait_ns))
        if wait_frac:
            print("    waited share of the layer (cp.async wait + barrier, thread 0): median %.1f%%, p90 %.1f%%" % (
                pct(wait_frac, 50), pct(wait_frac, 90)))
        if by_pos:
            pos = sorted(by_pos)
            pick = sorted(set([pos[0], pos[min(1, len(pos) - 1)], pos[min(2, len(pos) - 1)],
                               pos[len(pos) // 4], pos[len(pos) // 2], pos[3 * len(pos) // 4], pos[-1]]))
            print("    median by layer of the call: " + ", ".join(
                "k%d %s us (%d CTAs)" % (p, fmt_us(pct(by_pos[p], 50)), len(by_pos[p])) for p in pick))
        if by_live:
            print("    median by live images in the slice: " + ", ".join(
                "%d: %s us (n %d)" % (lv, fmt_us(pct(v, 50)), len(v)) for lv, v in sorted(by_live.items())))
        # the tail
        wo = [d["exit"]["ns"] - d["layers"][max(d["layers"])]["ns"] for d in (info[c] for c in with_images)
              if d["layers"] and "exit" in d]
        print("  tail:")
        print("    " + stats("last layer -> exit (write-out)", wo))
        print("    " + stats("exit - first entry (CTAs w/ images)", [info[c]["exit"]["ns"] - t0 for c in with_images
                                                                       if "exit" in info[c]]))
        per_cta_rows.sort(reverse=True)
        print("  slowest CTAs (by exit): exit_us cta sm layers entry_us entry->loaded_us median_layer_us "
              "writeout_us")
        for r in per_cta_rows[:a.per_cta]:
            print("    %9s %5d %4d %5d %9s %9s %9s %9s" % (fmt_us(r[0]), r[1], r[2], r[3], fmt_us(r[4]), fmt_us(r[5]),
                                                         fmt_us(r[6]), fmt_us(r[7])))
        # where the span goes, for the critical (last) CTA
        if per_cta_rows:
            c = per_cta_rows[0][1]
            d = info[c]
            ks = sorted(d["layers"])
            parts = [("launch skew (entry - first entry)", d["entry"]["ns"] - t0),
                     ("entry -> loaded", d["loaded"]["ns"] - d["entry"]["ns"]),
                     ("loaded -> first_chunk", d["first_chunk"]["ns"] - d["loaded"]["ns"]),
                     ("first_chunk -> last layer end (%d layers)" % len(ks),
                      d["layers"][ks[-1]]["ns"] - d["first_chunk"]["ns"]),
                     ("last layer -> exit", d["exit"]["ns"] - d["layers"][ks[-1]]["ns"])]
            tot = sum(p[1] for p in parts)
            print("  critical CTA %d (SM %d), span %s us: " % (c, d["sm"], fmt_us(tot)) + "; ".join(
                "%s %s us (%.0f%%)" % (n, fmt_us(v), 100.0 * v / max(tot, 1)) for n, v in parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
