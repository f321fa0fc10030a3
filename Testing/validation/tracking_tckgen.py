#!/usr/bin/env python3
"""tk-track against MRtrix3's tckgen: the same seeds, the same first direction, SD_STREAM.

tckgen tracks from a regular grid of seeds (-seed_grid_per_voxel MASK N: deterministic
positions) with one given first direction (-seed_direction: no random draw), so SD_STREAM's
streamlines are a pure function of the FOD and the parameters.  tckgen writes the seed of
every streamline it keeps (-output_seeds: "Track_index,Seed_index,Pos_x,Pos_y,Pos_z," rows,
Track_index the streamline's place in the .tck); tk-track replays that file (--seeds-file)
with the same direction, step, angle, cutoff and lengths.  Each tk-track streamline holds its
seed as a point and comes in seed order, so it is matched to tckgen's streamline of the same
row.  For each matched pair the mean closest-point distance (each point's distance to the
other streamline's nearest point, averaged both ways) is taken; the median and the 95th
percentile over the pairs are reported and checked against the goals (median <= 0.1 mm,
p95 <= 1 mm), as are the seeds tk-track did not keep.

Needs tckgen, mrconvert and mrthreshold (Debian's mrtrix3), numpy and scipy; prints SKIPPED
without them.  Documentation/tracking.md ("tk-track") records the figures.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from scipy.spatial import cKDTree
except ImportError as e:  # pragma: no cover
    print("SKIPPED: %s" % e)
    sys.exit(0)


def read_tck(path):
    """The streamlines of a .tck by the format's definition (text header up to END, 'file: . OFFSET',
    float32 triples, NaN between streamlines, Inf at the end)."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.index(b"\nEND\n")
    offset = None
    for line in data[:end].decode("latin-1").splitlines():
        if line.startswith("file:"):
            offset = int(line.split()[-1])
        if line.startswith("datatype:") and "Float32LE" not in line:
            raise SystemExit("%s: %s: only Float32LE is read here" % (path, line))
    pts = np.frombuffer(data[offset:], dtype="<f4")
    pts = pts[: len(pts) // 3 * 3].reshape(-1, 3)
    lines, start = [], 0
    for i in range(len(pts)):
        if not np.isfinite(pts[i, 0]):
            if np.isinf(pts[i, 0]):
                break
            lines.append(pts[start:i].astype(np.float64))
            start = i + 1
    return lines


def read_seeds(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            v = [float(x) for x in line.strip().rstrip(",").split(",")]
            rows.append((int(v[0]), v[2:5]))
    return rows


def mean_closest(a, b):
    """The mean closest-point distance of two polylines' points, averaged both ways."""
    return 0.5 * (cKDTree(b).query(a)[0].mean() + cKDTree(a).query(b)[0].mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tk-track", required=True)
    ap.add_argument("--fod", required=True, help="an MRtrix3-basis FOD (4-D NIfTI or .mif)")
    ap.add_argument("--tckgen", default=shutil.which("tckgen") or "", help="tckgen (empty: SKIPPED)")
    ap.add_argument("--per-voxel", type=int, default=2, help="-seed_grid_per_voxel's N (N^3 seeds a voxel)")
    ap.add_argument("--direction", default="1,0,0", help="-seed_direction, world RAS")
    ap.add_argument("--step", default="0.2")
    ap.add_argument("--angle", default="60")
    ap.add_argument("--cutoff", default="0.1")
    ap.add_argument("--min-length", default="10")
    ap.add_argument("--max-length", default="200")
    ap.add_argument("--work", help="keep the files here (default: a temporary folder, removed)")
    ap.add_argument("--median-goal", type=float, default=0.1)
    ap.add_argument("--p95-goal", type=float, default=1.0)
    ap.add_argument("--missing-goal", type=float, default=0.02,
                    help="largest fraction of tckgen's streamlines tk-track may not keep")
    a = ap.parse_args()
    if not a.tckgen:
        print("SKIPPED: tckgen (MRtrix3) not found")
        return 0
    bindir = os.path.dirname(os.path.realpath(a.tckgen))
    mrconvert, mrthreshold = (shutil.which(t, path=bindir) or shutil.which(t) for t in ("mrconvert", "mrthreshold"))
    if not mrconvert or not mrthreshold:
        print("SKIPPED: mrconvert / mrthreshold (MRtrix3) not found")
        return 0
    work = a.work or tempfile.mkdtemp(prefix="tk_track_tckgen_")
    os.makedirs(work, exist_ok=True)
    p = lambda name: os.path.join(work, name)

    def run(cmd):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise SystemExit("FAILED: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))

    # the seed mask: the voxels whose FOD has an l=0 coefficient above the cutoff
    run([mrconvert, "-quiet", "-force", a.fod, "-coord", "3", "0", p("l0.nii")])
    run([mrthreshold, "-quiet", "-force", p("l0.nii"), "-abs", a.cutoff, p("mask.nii")])
    params = ["-step", a.step, "-angle", a.angle, "-cutoff", a.cutoff, "-minlength", a.min_length,
              "-maxlength", a.max_length]
    tckgen = [a.tckgen, "-quiet", "-force", "-algorithm", "SD_STREAM", "-seed_grid_per_voxel", p("mask.nii"),
              str(a.per_voxel), "-seed_direction", a.direction, "-output_seeds", p("seeds.txt"), "-nthreads", "1"]
    run(tckgen + params + [a.fod, p("ref.tck")])
    ours = [a.tk_track, a.fod, p("ours.tck"), "--force", "--quiet", "--seeds-file", p("seeds.txt"),
            "--seed-direction", a.direction, "--step", a.step, "--angle", a.angle, "--cutoff", a.cutoff,
            "--min-length", a.min_length, "--max-length", a.max_length]
    run(ours)
    print("tckgen: " + " ".join(tckgen + params + [a.fod, "ref.tck"]))
    print("tk-track: " + " ".join(ours))

    ref, mine, seeds = read_tck(p("ref.tck")), read_tck(p("ours.tck")), read_seeds(p("seeds.txt"))
    if len(seeds) != len(ref):
        raise SystemExit("FAILED: %d seeds listed for %d tckgen streamlines" % (len(seeds), len(ref)))
    # tk-track's streamlines come in seed order, each through its seed: walk both lists
    dist, lengths, row = [], [], 0
    for line in mine:
        while row < len(seeds) and np.min(np.linalg.norm(line - np.array(seeds[row][1]), axis=1)) > 1e-3:
            row += 1
        if row == len(seeds):
            raise SystemExit("FAILED: a tk-track streamline passes through no seed of the file (after row %d)" % row)
        other = ref[seeds[row][0]]
        dist.append(mean_closest(line, other))
        lengths.append((len(line), len(other)))
        row += 1
    dist = np.array(dist)
    missing = len(ref) - len(mine)
    med, p95 = float(np.median(dist)), float(np.percentile(dist, 95))
    same_points = np.mean([x == y for x, y in lengths])
    print("seeds %d (tckgen kept all of them); tk-track kept %d, missing %d (%.2f%%)"
          % (len(seeds), len(mine), missing, 100.0 * missing / len(seeds)))
    print("mean closest-point distance, mm: median %.4g, p95 %.4g, max %.4g; same point count: %.1f%% of pairs"
          % (med, p95, dist.max(), 100 * same_points))
    problems = []
    if med > a.median_goal:
        problems.append("median %.4g mm above the goal %.4g mm" % (med, a.median_goal))
    if p95 > a.p95_goal:
        problems.append("p95 %.4g mm above the goal %.4g mm" % (p95, a.p95_goal))
    if missing > a.missing_goal * len(seeds):
        problems.append("%d of tckgen's %d streamlines not kept (goal <= %.0f%%)" % (missing, len(seeds),
                                                                                    100 * a.missing_goal))
    for pr in problems:
        print("FAILED: " + pr)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
