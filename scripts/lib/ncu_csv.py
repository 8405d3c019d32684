"""The launches of an `ncu --csv --metrics ...` run, whose output mixes ncu's CSV lines (those starting with '"')
with the program's own. Used by scripts/spdnn-head-table.py and scripts/spdnn-ncu-layers.py."""
import collections
import csv


def launches(path, kernel=None, names=False):
    """OrderedDict launch ID -> {metric name: (unit, value)} in launch order; value a float, or None where ncu
    printed no number (e.g. 'n/a'). kernel: keep only the launches whose kernel name contains it. names: each launch
    also gets "name", its kernel's name up to the template arguments or parameters."""
    rows = csv.reader(l for l in open(path) if l.startswith('"'))
    hdr = next(rows)
    out = collections.OrderedDict()
    for x in rows:
        d = dict(zip(hdr, x))
        if kernel is not None and kernel not in d["Kernel Name"]:
            continue
        try:
            v = float(d["Metric Value"].replace(",", ""))
        except ValueError:
            v = None
        m = out.setdefault(int(d["ID"]), {})
        m[d["Metric Name"]] = (d["Metric Unit"], v)
        if names:
            m["name"] = d["Kernel Name"].replace("void ", "", 1).replace("<unnamed>::", "").split("(")[0].split("<")[0]
    return out


def time_us(m):
    """A launch's gpu__time_duration.sum in microseconds, whatever unit ncu chose."""
    unit, v = m["gpu__time_duration.sum"]
    return v / {"ns": 1e3, "nsecond": 1e3, "usecond": 1.0, "us": 1.0, "ms": 1e-3, "msecond": 1e-3}.get(unit, 1e3)
