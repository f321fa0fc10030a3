#!/usr/bin/env python3
"""One line per kernel from an Nsight Compute metrics CSV (`ncu --csv --metrics
gpu__time_duration.sum,smsp__inst_executed.sum,...`): launches, summed time, share of the
summed time, instructions, and the mean of any other metric given, so that a device call's short
output tail carries where the time went (fibers_profile.sh).

    ncu_kernel_table.py NCU_CSV
"""
import collections
import csv
import sys


def main(path):
    rows = [r for r in csv.reader(open(path, newline="")) if len(r) > 5]
    # ncu prints its own lines (==PROF==, the program's output) before the table's header
    while rows and "Kernel Name" not in rows[0]:
        rows.pop(0)
    if not rows:
        sys.exit("%s: no Nsight Compute table (no 'Kernel Name' header)" % path)
    head = rows[0]
    ki, mi, vi = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    sums = collections.OrderedDict()
    launches = collections.Counter()
    for r in rows[1:]:
        if len(r) <= vi:
            continue
        # the kernel with its template arguments (the climbing passes differ only there)
        name = r[ki].replace("void ", "").split("(FibArgs")[0].replace("tk_fibers_policy_sm70, ", "")
        try:
            value = float(r[vi].replace(",", ""))
        except ValueError:
            continue
        metric = sums.setdefault(name, collections.OrderedDict())
        metric[r[mi]] = metric.get(r[mi], 0.0) + value
        if r[mi] == "gpu__time_duration.sum":
            launches[name] += 1
    total = sum(m.get("gpu__time_duration.sum", 0.0) for m in sums.values()) or 1.0
    others = [k for k in next(iter(sums.values()), {}) if k not in ("gpu__time_duration.sum", "smsp__inst_executed.sum")]
    print("%-34s %8s %11s %6s %10s %s" % ("kernel", "launches", "time us", "share", "M inst", " ".join(others)))
    for name, m in sums.items():
        n = max(launches[name], 1)
        t = m.get("gpu__time_duration.sum", 0.0)
        extra = " ".join("%.1f" % (m[k] / n) for k in others if k in m)
        print("%-34s %8d %11.1f %5.1f%% %10.1f %s" % (name[:34], launches[name], t / 1e3, 100 * t / total,
                                                      m.get("smsp__inst_executed.sum", 0.0) / 1e6, extra))
    print("%-34s %8s %11.1f" % ("all", "", total / 1e3))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
