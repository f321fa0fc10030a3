#!/usr/bin/python3
"""Benchmark plots (PNG) from `tk-bench SUITE ... --json FILE` results.

    tk-bench teig --json teig.json
    tk-bench fibers --json fibers.json
    tk-bench tucker --json tucker.json
    Documentation/plots/plot_benchmarks.py teig.json fibers.json tucker.json \
        --out Documentation/plots --device "NVIDIA H100 80GB, 16 CPU threads"

One PNG per file, named after its suite (teig.png, fibers.png, tucker.png): our measured
figures as bars, each beside the reference it is compared with (the seed papers' tables,
the reference programs measured in the same run, the issue's goals as dashed lines).
Skipped rows (a backend not available) are left out; a file with no measured rows is an
error.  Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OURS = "#1f77b4"
REFERENCE = "#bbbbbb"
GOAL = "#d62728"


def measured(rows, key):
    """Rows that ran and carry a number for key."""
    return [r for r in rows if "skipped" not in r and isinstance(r.get(key), (int, float))]


def reference(doc, name):
    for ref in doc.get("references", []):
        if ref["name"] == name and isinstance(ref.get("value"), (int, float)):
            return ref["value"]
    return None


def label_bars(ax, bars, fmt):
    for bar in bars:
        h = bar.get_height()
        if h > 0:
            ax.annotate(fmt.format(h), (bar.get_x() + bar.get_width() / 2, h), ha="center", va="bottom",
                        fontsize=7, xytext=(0, 2), textcoords="offset points")


def ran(rows, suite):
    """rows, or an error where the file holds none that ran."""
    if not rows:
        raise ValueError("no measured %s rows" % suite)
    return rows


def log_bars_axis(ax, names, ylabel):
    """An axis of bars named below it, their values on a log scale."""
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)


def goal_line(ax, value, text):
    ax.axhline(value, color=GOAL, ls="--", lw=1)
    ax.annotate(text, (-0.45, value), color=GOAL, fontsize=7, ha="left", va="bottom")


def plot_teig(doc):
    table = measured([r for r in doc["rows"] if r["table"] == "table_6_1"], "gflops")
    dmri = measured([r for r in doc["rows"] if r["table"] == "dmri"], "gflops")
    panels = ran([p for p in (table, dmri) if p], "teig")
    fig, axes = plt.subplots(1, len(panels), figsize=(max(8, 6 * len(panels)), 4.4), squeeze=False)
    for ax, rows in zip(axes[0], panels):
        names = ["%s\n%s (%d,%d)" % (r["impl"], r["backend"], r["order"], r["dim"]) for r in rows]
        x = range(len(rows))
        width = 0.4
        ours = ax.bar([i - width / 2 for i in x], [r["gflops"] for r in rows], width, color=OURS, label="TensorKernels")
        label_bars(ax, ours, "{:.3g}")
        seed = [r.get("seed_gflops") or 0 for r in rows]
        if any(seed):
            refs = ax.bar([i + width / 2 for i in x], seed, width, color=REFERENCE, label="seed Table 6.1(a)")
            label_bars(ax, refs, "{:.3g}")
        for r in rows:
            if r.get("goal_gflops"):
                i = rows.index(r)
                ax.plot([i - width, i + width], [r["goal_gflops"]] * 2, color=GOAL, ls="--", lw=1.5)
        ax.plot([], [], color=GOAL, ls="--", label="goal")
        log_bars_axis(ax, names, "GFLOP/s (kernel)")
        ax.set_title("seed Table 6.1 set-up: %d tensors" % rows[0]["tensors"] if rows is table
                     else "dMRI-sized: %d tensors" % rows[0]["tensors"], fontsize=10)
        ax.legend(fontsize=8)
    s = doc.get("settings", {})
    return fig, ["SS-HOPM (tk-bench teig): %s precision, %s starts, %s iterations"
                 % (s.get("precision"), s.get("starts"), s.get("iterations"))]


def plot_fibers(doc):
    rows = ran(measured(doc["rows"], "voxels_per_s"), "fibers")
    fig, (speed, angle) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [2, 1]})
    # several inputs (real, phantom, whole-brain) in one file: each bar names its input
    names = ["%s\n%s\n%dk voxels" % (r.get("input") or "", r["program"], r["voxels"] // 1000) for r in rows]
    colours = [REFERENCE if r["program"] == "sh2peaks" else OURS for r in rows]
    bars = speed.bar(range(len(rows)), [r["voxels_per_s"] for r in rows], color=colours)
    label_bars(speed, bars, "{:.3g}")
    for name, text in (("goal omp voxels/s (20x sh2peaks)", "omp goal: 20x sh2peaks"),
                       ("goal cuda voxels/s (lmax 8)", "cuda goal: 10M voxels/s"),
                       ("goal cuda voxels/s, round two (lmax 8)", "cuda goal, issue 26: 30M voxels/s")):
        value = reference(doc, name)
        if value and (("omp" in name and any(r["program"] == "omp" for r in rows))
                      or ("cuda" in name and any(r["program"] == "cuda" for r in rows))):
            goal_line(speed, value, text)
    log_bars_axis(speed, names, "voxels/s (end to end)")
    anchor = any(r["program"] == "sh2peaks" for r in rows)  # not on a GPU machine without MRtrix3
    speed.set_title("throughput" + (" (grey: MRtrix3 sh2peaks, same volume)" if anchor else ""), fontsize=10)
    acc = [r for r in rows if isinstance(r.get("median_deg"), (int, float))]
    # a median of exactly 0 does not show on a log axis: floor it at 1e-9 degrees
    bars = angle.bar(range(len(acc)), [max(r["median_deg"], 1e-9) for r in acc],
                     color=[REFERENCE if r["program"] == "sh2peaks" else OURS for r in acc])
    label_bars(angle, bars, "{:.2g}")
    goal = reference(doc, "goal median angle")
    if goal:
        goal_line(angle, goal, "goal")
    log_bars_axis(angle, ["%s %s" % (r.get("input") or "", r["program"]) for r in acc],
                  "median angle to refined maximum (degrees)")
    angle.tick_params(axis="x", labelrotation=75)  # the narrow panel: names turned up, not overlapping
    angle.set_title("accuracy", fontsize=10)
    s = doc.get("settings", {})
    inputs = s.get("input") or ", ".join(dict.fromkeys(r.get("input") for r in rows if r.get("input")))
    return fig, ["Fiber directions (tk-bench fibers): %s, lmax %s, %s peaks" % (inputs, s.get("lmax"), s.get("peaks"))]


def plot_tucker(doc):
    rows = ran(measured(doc["rows"], "factor_s"), "tucker")
    fig, ax = plt.subplots(figsize=(9, 4.8))
    # the per-iteration rows are the seed's SGD; "iteration als" rows time the exact row solves
    groups = [r["backend"] + ("\nALS rows" if "als" in r.get("table", "") else "\nSGD") for r in rows]
    refs = [("goal", "goal factor update", "goal core update", GOAL),
            ("cuFasterTucker\n3080 Ti", "cuFasterTucker 3080Ti factor update", "cuFasterTucker 3080Ti core update",
             REFERENCE),
            ("cuFasterTucker\nCOO, H100", "cuFasterTucker COO H100 factor update",
             "cuFasterTucker COO H100 core update", "#888888")]
    width = 0.38
    for j, (part, key) in enumerate((("factor update", "factor_s"), ("core update", "core_s"))):
        bars = ax.bar([i + (j - 0.5) * width for i in range(len(rows))], [r[key] for r in rows], width,
                      color=OURS, alpha=1.0 if j == 0 else 0.55, label="TensorKernels " + part)
        label_bars(ax, bars, "{:.3g}")
    # the references as bars of their own group at the right
    x0 = len(rows)
    names = list(groups)
    for k, (name, factor, core, colour) in enumerate(refs):
        f, c = reference(doc, factor), reference(doc, core)
        if f is None or c is None:
            continue
        bars = ax.bar([x0 - 0.5 * width, x0 + 0.5 * width], [f, c], width, color=colour,
                      hatch="//" if colour == GOAL else None, edgecolor="white")
        label_bars(ax, bars, "{:.3g}")
        names.append(name + "\n(factor | core)")
        x0 += 1
    log_bars_axis(ax, names, "seconds per iteration")
    ax.legend(fontsize=8)
    s = doc.get("settings", {})
    nnz = s.get("train_nnz")
    return fig, ["Sparse FastTucker (tk-bench tucker): order %s, %s train nonzeros, J = %s, R = %s"
                 % (s.get("order"), "{:,}".format(int(nnz)) if isinstance(nnz, (int, float)) else nnz,
                    s.get("rank_j"), s.get("rank_r")),
                 "(the references are at Netflix size, 99M nonzeros, J = R = 32)"]


PLOTTERS = {"teig": plot_teig, "fibers": plot_fibers, "tucker": plot_tucker}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="tk-bench --json files")
    parser.add_argument("--out", default=".", help="folder for the PNGs (default: here)")
    parser.add_argument("--device", default="", help="the machine, for the titles")
    parser.add_argument("--dpi", type=int, default=120)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    status = 0
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            suite = doc.get("suite")
            if suite not in PLOTTERS:
                raise ValueError("unknown suite %r (known: %s)" % (suite, ", ".join(PLOTTERS)))
            # the heading's lines, the first saying what ran (the suite's settings): where it
            # ran (the device named on the command line) ends that line
            fig, heading = PLOTTERS[suite](doc)
            heading[0] += " - " + args.device if args.device else ""
            fig.suptitle("\n".join(heading), fontsize=10)
            fig.tight_layout()
            out = os.path.join(args.out, suite + ".png")
            fig.savefig(out, dpi=args.dpi)
            plt.close(fig)
            print(out)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print("plot_benchmarks: %s: %s" % (path, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
