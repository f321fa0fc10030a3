#!/usr/bin/python3
"""tk-bench --json: the document a small teig run writes (suite, settings, one row per
printed result with the printed numbers, the seed's Table 6.1 references), no file from
a failed run, an early error for an unwritable path, and the plot script drawing it.
Run as: check_bench_json.py TK_BENCH PLOT_SCRIPT WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

bench, plot, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out = os.path.join(work, "teig.json")
run = subprocess.run([bench, "teig", "--tensors", "16", "--starts", "32", "--iters", "5", "--backends", "cpu,omp",
                      "--table-only", "--json", out], capture_output=True, text=True)
assert run.returncode == 0, run.stderr
doc = json.load(open(out))
assert doc["tool"] == "tk-bench" and doc["suite"] == "teig", doc
assert "--json" not in doc["command"] and "--tensors 16" in doc["command"], doc["command"]
assert doc["settings"]["tensors"] == 16 and doc["settings"]["precision"] == "single", doc["settings"]
rows = doc["rows"]
assert [(r["impl"], r["backend"]) for r in rows] == [("general", "cpu"), ("unrolled", "cpu"), ("general", "omp"),
                                                     ("unrolled", "omp")], rows
# each row holds the figures the table printed (GFLOP/s column, 4 significant digits)
printed = [line.split() for line in run.stdout.splitlines() if line.startswith(("general", "unrolled"))]
for r, line in zip(rows, printed):
    assert r["table"] == "table_6_1" and r["order"] == 4 and r["dim"] == 3 and r["tensors"] == 16, r
    assert abs(r["gflops"] - float(line[7])) <= 1e-3 * float(line[7]), (r, line)
    assert r["seed_gflops"] == float(line[9]), (r, line)
assert rows[3]["goal_gflops"] == 6.85 and isinstance(rows[3]["goal_met"], bool), rows[3]
refs = {x["name"]: x for x in doc["references"]}
assert refs["seed Table 6.1 cuda unrolled"]["value"] == 131.73 and len(refs) == 9, refs

# a failed run (bad option) leaves no file; an unwritable path fails before the timing
bad = os.path.join(work, "bad.json")
run = subprocess.run([bench, "teig", "--bogus", "--json", bad], capture_output=True, text=True)
assert run.returncode == 2 and not os.path.exists(bad) and not [f for f in os.listdir(work) if ".tmp." in f], run
run = subprocess.run([bench, "teig", "--json", os.path.join(work, "no/such/dir.json")], capture_output=True, text=True)
assert run.returncode == 1 and "does not exist" in run.stderr and not run.stdout, run
run = subprocess.run([bench, "teig", "--json"], capture_output=True, text=True)
assert run.returncode == 2 and "needs a value" in run.stderr, run

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("SKIPPED the plot: no matplotlib (Debian: python3-matplotlib)")
    sys.exit(0)
run = subprocess.run([plot, out, "--out", work], capture_output=True, text=True)
assert run.returncode == 0, run.stderr
png = os.path.join(work, "teig.png")
with open(png, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 10000, png
print("ok: %d rows, %d references, %s" % (len(rows), len(refs), png))
