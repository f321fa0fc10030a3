#!/usr/bin/env python3
"""tk-track's iFOD1 against MRtrix3's tckgen -algorithm iFOD1: track-density maps.

iFOD1 is probabilistic, so its streamlines cannot be paired one to one with tckgen's; what both
must share is the distribution of streamlines, which a track-density map (tckmap's default
contrast: per voxel, the number of streamlines that pass through it, each counted once) shows.
Both programs seed the same number of random points in each voxel of one seed mask (tckgen
-seed_random_per_voxel, tk-track --seed-mask --seeds: the same finite seeder), with the same
step, angle, cutoff, lengths, FOD power and trials per step, both written out explicitly
(tk-track has no -power / -trials flags: its iFOD1 uses MRtrix3's defaults, power 1 and 1000
trials, which tckgen is given on its command line).  Each .tck is mapped by tckmap on the mask's
grid and, as a cross-check, by this script's own count (each streamline's points taken to their
nearest voxel, each voxel counted once per streamline).  The Pearson r between the two
programs' maps over the mask's voxels is the figure (goal >= 0.95), with the streamlines' mean
length, the share of seeds kept and the mean turn per step (the angle between consecutive steps,
what the sampler draws), each with a bound: on this small FOD r >= 0.95 alone does not see an
angle of 10 or 30 degrees instead of 15 (Documentation/validation.md), these do.

Sampling noise: a density map from a finite number of seeds is noisy, so even two runs of one
program do not correlate at r = 1.  With --noise-ceiling each program also runs with a second
random seed, and the r between a program's two runs (the ceiling for the cross r) is reported.

tckgen runs with one thread and MRTRIX_RNG_SEED fixed (deterministic; in the background while
tk-track runs); tk-track's --seed keys its Philox streams (deterministic for any thread count).
Needs tckgen, tckmap, mrconvert, mrthreshold (Debian's mrtrix3), numpy and nibabel; prints SKIPPED
without them.
Documentation/validation.md ("iFOD1 track density against tckgen") records the figures.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import nibabel as nib
except ImportError as e:  # pragma: no cover
    print("SKIPPED: %s" % e)
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    from tracking_tckgen import read_tck  # the .tck reader by the format's definition
except ImportError as e:  # pragma: no cover (scipy missing)
    print("SKIPPED: %s" % e)
    sys.exit(0)


def count_map(lines, inv_affine, shape):
    """Streamlines per voxel: each point to its nearest voxel (world RAS mm -> voxel by the
    grid's inverse affine, rounded), each voxel counted once per streamline (tckmap's tdi)."""
    counts = np.zeros(shape, dtype=np.int64)
    dims = np.array(shape)
    for pts in lines:
        v = np.rint(pts @ inv_affine[:3, :3].T + inv_affine[:3, 3]).astype(np.int64)
        v = v[np.all((v >= 0) & (v < dims), axis=1)]
        if len(v):
            idx = np.unique(np.ravel_multi_index(v.T, shape))
            counts.ravel()[idx] += 1
    return counts


def mean_length(lines):
    return float(np.mean([np.linalg.norm(np.diff(p, axis=0), axis=1).sum() for p in lines])) if lines else 0.0


def mean_turn(lines):
    """The mean angle (degrees) between consecutive steps: what iFOD1's sampler draws within the cone
    (the seed's joint of the two halves included, as in both programs' output)."""
    total, n = 0.0, 0
    for pts in lines:
        d = np.diff(pts, axis=0)
        d /= np.linalg.norm(d, axis=1)[:, None]
        c = np.clip(np.sum(d[1:] * d[:-1], axis=1), -1.0, 1.0)
        total += float(np.degrees(np.arccos(c)).sum())
        n += len(c)
    return total / n if n else 0.0


def pearson(a, b):
    return float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tk-track", required=True)
    ap.add_argument("--fod", required=True, help="an MRtrix3-basis FOD (4-D NIfTI or .mif)")
    ap.add_argument("--tckgen", default=shutil.which("tckgen") or "", help="tckgen (empty: SKIPPED)")
    ap.add_argument("--mask-threshold", default="0.1",
                    help="seed mask: the voxels whose l=0 coefficient is above this (default: the cutoff's 0.1)")
    ap.add_argument("--per-voxel", type=int, default=20, help="random seeds per mask voxel, both programs")
    ap.add_argument("--seed", type=int, default=1, help="tckgen's MRTRIX_RNG_SEED and tk-track's --seed")
    ap.add_argument("--seed2", type=int, default=2, help="the second runs' seed (--noise-ceiling)")
    ap.add_argument("--noise-ceiling", action="store_true",
                    help="also run each program with --seed2 and report the r of a program's two runs")
    ap.add_argument("--step", default="0.2")
    ap.add_argument("--angle", default="15")
    ap.add_argument("--cutoff", default="0.1")
    ap.add_argument("--min-length", default="10")
    ap.add_argument("--max-length", default="200")
    ap.add_argument("--threads", default="2", help="tk-track's --threads (tckgen runs one thread)")
    ap.add_argument("--turn-tolerance", type=float, default=0.05,
                    help="largest difference of the mean turn per step (degrees)")
    ap.add_argument("--tk-track-override", default="",
                    help="'--flag value ...' replacing tk-track's values (to show that the r sees a change, e.g. "
                         "'--angle 30'; the noise-ceiling runs too)")
    ap.add_argument("--work", help="keep the files here (default: a temporary folder, removed)")
    ap.add_argument("--r-goal", type=float, default=0.95, help="smallest Pearson r of the two programs' maps")
    ap.add_argument("--length-tolerance", type=float, default=0.02,
                    help="largest |mean length ratio - 1| (tk-track / tckgen)")
    ap.add_argument("--kept-tolerance", type=float, default=0.015,
                    help="largest difference of the kept shares of the seeds (absolute)")
    a = ap.parse_args()
    if not a.tckgen:
        print("SKIPPED: tckgen (MRtrix3) not found")
        return 0
    bindir = os.path.dirname(os.path.realpath(a.tckgen))
    tools = {t: shutil.which(t, path=bindir) or shutil.which(t) for t in ("mrconvert", "mrthreshold", "tckmap")}
    missing = [t for t, p in tools.items() if not p]
    if missing:
        print("SKIPPED: %s (MRtrix3) not found" % ", ".join(missing))
        return 0
    work = a.work or tempfile.mkdtemp(prefix="tk_track_ifod1_")
    os.makedirs(work, exist_ok=True)
    try:
        return compare(a, tools, work)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


def compare(a, tools, work):
    """Runs both programs in work and prints the figures; 1 where a goal is missed."""
    p = lambda name: os.path.join(work, name)

    def run(cmd, env=None):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        if r.returncode:
            raise SystemExit("FAILED: %s\n%s" % (" ".join(cmd), r.stderr[-3000:]))

    run([tools["mrconvert"], "-quiet", "-force", a.fod, "-coord", "3", "0", p("l0.nii")])
    run([tools["mrthreshold"], "-quiet", "-force", p("l0.nii"), "-abs", a.mask_threshold, p("mask.nii")])
    mask_img = nib.load(p("mask.nii"))
    inside = np.asarray(mask_img.dataobj).reshape(mask_img.shape[:3]) > 0
    n_seeds = int(inside.sum()) * a.per_voxel
    inv = np.linalg.inv(mask_img.affine)

    tckgen_cmd = lambda seed, out: [a.tckgen, "-quiet", "-force", "-algorithm", "iFOD1", "-seed_random_per_voxel",
                                    p("mask.nii"), str(a.per_voxel), "-select", "0", "-nthreads", "1", "-step", a.step,
                                    "-angle", a.angle, "-cutoff", a.cutoff, "-minlength", a.min_length, "-maxlength",
                                    a.max_length, "-power", "1", "-trials", "1000", a.fod, out]
    ours_cmd = lambda seed, out: [a.tk_track, a.fod, out, "--force", "--quiet", "--algorithm", "ifod1", "--seed-mask",
                                  p("mask.nii"), "--seeds", str(a.per_voxel), "--step", a.step, "--angle", a.angle,
                                  "--cutoff", a.cutoff, "--min-length", a.min_length, "--max-length", a.max_length,
                                  "--seed", str(seed), "--threads", a.threads]

    override = a.tk_track_override.split()
    if len(override) % 2:
        raise SystemExit("--tk-track-override takes '--flag value' pairs, not %r" % a.tk_track_override)

    def overridden(cmd):
        for flag, value in zip(override[::2], override[1::2]):
            if flag in cmd:
                cmd[cmd.index(flag) + 1] = value
            else:
                cmd += [flag, value]
        return cmd

    seeds = [a.seed] + ([a.seed2] if a.noise_ceiling else [])
    # tckgen tracks on one thread: its runs go in the background while tk-track runs
    runs, background = [], []
    try:
        for prog, make in (("tckgen", tckgen_cmd), ("tk-track", ours_cmd)):
            for s in seeds:
                out = p("%s_%d.tck" % (prog, s))
                cmd = make(s, out) if prog == "tckgen" else overridden(make(s, out))
                if prog == "tckgen":
                    env = dict(os.environ, MRTRIX_RNG_SEED=str(s))
                    background.append((cmd, subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                             text=True, env=env)))
                else:
                    run(cmd)
                if s == a.seed:
                    print("%s%s: %s" % ("MRTRIX_RNG_SEED=%d " % s if prog == "tckgen" else "", prog,
                                        " ".join(os.path.basename(x) if x.startswith(work) else x for x in cmd)))
                runs.append((prog, s, out))
        for cmd, proc in background:
            err = proc.communicate()[1]
            if proc.returncode:
                raise SystemExit("FAILED: %s\n%s" % (" ".join(cmd), err[-3000:]))
    finally:  # a failure leaves no tckgen running
        for _, proc in background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    results = {}
    for prog, s, out in runs:
        run([tools["tckmap"], "-quiet", "-force", "-template", p("mask.nii"), out, p("%s_%d_tdi.nii" % (prog, s))])
        tdi = np.asarray(nib.load(p("%s_%d_tdi.nii" % (prog, s))).dataobj).reshape(inside.shape)
        lines = read_tck(out)
        own = count_map(lines, inv, inside.shape)
        results[(prog, s)] = dict(tdi=tdi[inside], own=own[inside], n=len(lines), length=mean_length(lines),
                                  turn=mean_turn(lines))

    print("FOD %s; seed mask: %d voxels (l=0 > %s), %d seeds per voxel = %d seeds for each run"
          % (os.path.basename(a.fod), int(inside.sum()), a.mask_threshold, a.per_voxel, n_seeds))
    problems = []
    for (prog, s), r in sorted(results.items()):
        check = pearson(r["tdi"], r["own"])
        print("  %-8s seed %d: kept %d (%.1f%% of the seeds), mean length %.2f mm, mean turn per step %.3f deg, "
              "mean density %.1f; r(tckmap, own count) = %.4f" % (prog, s, r["n"], 100.0 * r["n"] / n_seeds,
                                                                  r["length"], r["turn"], r["tdi"].mean(), check))
        if check < 0.99:  # the two counts are the same rule: anything less is a bug in one of them
            problems.append("%s seed %d: tckmap and the own count disagree (r %.4f < 0.99)" % (prog, s, check))
    ref, ours = results[("tckgen", a.seed)], results[("tk-track", a.seed)]
    r_cross, r_cross_own = pearson(ref["tdi"], ours["tdi"]), pearson(ref["own"], ours["own"])
    ratio = ours["length"] / ref["length"]
    kept_diff = (ours["n"] - ref["n"]) / n_seeds
    print("r(tckgen, tk-track) over the mask: %.4f by tckmap, %.4f by the own count (goal >= %.2f)"
          % (r_cross, r_cross_own, a.r_goal))
    print("mean length ratio tk-track / tckgen: %.4f (goal within %.2f of 1); kept share difference %+.2f%% "
          "(goal within %.1f%%)" % (ratio, a.length_tolerance, 100 * kept_diff, 100 * a.kept_tolerance))
    turn_diff = ours["turn"] - ref["turn"]
    print("mean turn per step: tk-track - tckgen = %+.4f deg (goal within %.3f)" % (turn_diff, a.turn_tolerance))
    if a.noise_ceiling:
        r_tt = pearson(results[("tckgen", a.seed)]["tdi"], results[("tckgen", a.seed2)]["tdi"])
        r_oo = pearson(results[("tk-track", a.seed)]["tdi"], results[("tk-track", a.seed2)]["tdi"])
        r_x2 = pearson(results[("tckgen", a.seed2)]["tdi"], results[("tk-track", a.seed2)]["tdi"])
        print("noise ceiling (tckmap): r(tckgen seed %d, tckgen seed %d) = %.4f; r(tk-track %d, tk-track %d) = %.4f; "
              "r(tckgen, tk-track) with seed %d = %.4f" % (a.seed, a.seed2, r_tt, a.seed, a.seed2, r_oo, a.seed2, r_x2))
    if not r_cross >= a.r_goal:
        problems.append("r %.4f below the goal %.2f" % (r_cross, a.r_goal))
    if not abs(ratio - 1.0) <= a.length_tolerance:
        problems.append("mean length ratio %.4f outside 1 +- %.2f" % (ratio, a.length_tolerance))
    if not abs(kept_diff) <= a.kept_tolerance:
        problems.append("kept shares differ by %.2f%% (> %.1f%%)" % (100 * kept_diff, 100 * a.kept_tolerance))
    if not abs(turn_diff) <= a.turn_tolerance:
        problems.append("mean turns per step differ by %.4f deg (> %.3f)" % (turn_diff, a.turn_tolerance))
    for pr in problems:
        print("FAILED: " + pr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
