#!/usr/bin/python3
"""Validate tk-fibers on real FODs made by MRtrix3 and by DIPY, in four geometries
(real_fods.py: source, oblique, flipped, sform-qform), and on the bundled small_101D FOD.

Checks (each FOD a row of a Markdown table; --check turns them into pass/fail):
  sh2peaks  MRtrix3-basis files: every sh2peaks peak of at least 10% of its voxel's largest is
            found by tk-fibers within MATCH_DEG, and the median angle is <= 0.01 degree
            (directions in world RAS; both programs with no threshold, -num NUM)
  complete  MRtrix3-basis files: no peak sh2peaks reports with no threshold, -threshold 0 and
            -threshold 0.1 is missing from tk-fibers run with the same threshold (tk-fibers'
            --threshold passed explicitly: -1e300 for none), unless tk-fibers' NUM peaks are
            all larger: every report tk-fibers lacks must be no strict local maximum
            (sh_maxima.refine), whatever its size or sign; those are classified by the
            finite-difference Hessian at the reported direction (sh2peaks' Newton stops at any
            stationary point: saddles and the minima of negative lobes too)
  dipy      DIPY's peak_directions_nl (its Nelder-Mead refinement from its default sphere),
            rotated to world (DIPY's basis is in voxel axes: unit columns of the affine), each
            within MATCH_DEG of a tk-fibers peak (--basis descoteaux --legacy for DIPY's files)
  geometry  tk-fibers' output has the input's world affine (nibabel reads the sform where
            its code is non-zero, as MRtrix3 does), as sh2peaks' output has
  data      the committed Data/fibers/small_64D_fod_mrtrix.nii.gz is the MRtrix3 source FOD made here

Amplitudes are the SH function's values at the reported directions (sh2peaks writes
negative maxima as vectors too), evaluated through DIPY's basis functions.

usage: fibers_real.py --tk-fibers BUILD/bin/tk-fibers [--check [sh2peaks,complete,dipy,geometry,data]]
                      [--dipy-voxels N] [--geometries source,oblique,...] [--keep DIR]
Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel, python3-scipy) and MRtrix3.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

try:
    import nibabel as nib
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import real_fods
    import sh_maxima
    from dipy.data import default_sphere
    from dipy.direction.peaks import peak_directions_nl
    from dipy.reconst.shm import real_sh_descoteaux, real_sh_tournier
except ImportError as e:  # CTest reads SKIPPED as a skip
    print(f"SKIPPED: the validation needs numpy, scipy, nibabel and dipy ({e})")
    sys.exit(0)

ROOT = real_fods.ROOT
CHECKS = ("sh2peaks", "complete", "dipy", "geometry", "data")
NUM = 20  # peaks asked of both programs: more than any voxel here has above 10%
RELATIVE = 0.1  # "every peak above 10% of the voxel's largest"
MATCH_DEG = 0.1  # a peak is found where the other program has one this close
MEDIAN_DEG = 0.01
CONFIRM_AT_MOST = 300  # misses per run checked for being maxima (Newton's cost); the largest first
# sh2peaks' -threshold (none: its default) and the same threshold for tk-fibers: an explicit
# --threshold every time, "none" as a number below any amplitude
THRESHOLDS = (("none", None, "-1e300"), ("0", "0", "0"), ("0.1", "0.1", "0.1"))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stderr.strip()


def values_at(fod, coeffs, dirs):
    """The SH function of each voxel at world directions dirs (V, k, 3), NaN where absent."""
    v, k = dirs.shape[:2]
    flat = dirs.reshape(-1, 3)
    ok = np.isfinite(flat).all(axis=1)
    u = np.where(ok[:, None], flat, [0.0, 0.0, 1.0])
    if fod.basis == "descoteaux":  # DIPY's frame: voxel axes
        u = np.linalg.solve(fod.rotation, u.T).T
        u /= np.linalg.norm(u, axis=1)[:, None]
    theta, phi = np.arccos(np.clip(u[:, 2], -1, 1)), np.arctan2(u[:, 1], u[:, 0])
    if fod.basis == "descoteaux":
        basis = real_sh_descoteaux(8, theta, phi, legacy=True)[0]
    else:
        basis = real_sh_tournier(8, theta, phi, legacy=False)[0]
    vals = np.einsum("ij,ij->i", basis, np.repeat(coeffs, k, axis=0))
    return np.where(ok, vals, np.nan).reshape(v, k)


def nearest_deg(a, b):
    """Angle from each direction of a (V, k, 3) to the nearest of b (V, m, 3) in the same
    voxel, axes (sign ignored); NaN rows of b are skipped (180 where b has none), NaN rows
    of a give NaN."""
    cross = np.linalg.norm(np.cross(a[:, :, None, :], b[:, None, :, :]), axis=-1)
    dot = np.abs(np.einsum("vkd,vmd->vkm", a, b))
    ang = np.degrees(np.arctan2(cross, dot))
    ang = np.where(np.isfinite(ang), ang, 180.0).min(axis=2)
    return np.where(np.isfinite(a).all(axis=2), ang, np.nan)


def strict_maxima(world_coeffs, voxels, dirs, at_most=None):
    """Which of the directions dirs (n, 3) in voxels (n,) lie on a strict local maximum of
    the SH function (MRtrix3's basis, world frame): Newton on the sphere from each
    (sh_maxima.refine) ends on one within MATCH_DEG.  With at_most, only the first at_most
    are tried (the rest False): a failing run can have thousands of misses."""
    out = np.zeros(len(voxels), dtype=bool)
    n = len(voxels) if at_most is None else min(at_most, len(voxels))
    if n:
        x, _, strict = sh_maxima.refine(world_coeffs[voxels[:n]], dirs[:n])
        out[:n] = strict & (sh_maxima.angle_deg(x, dirs[:n]) < MATCH_DEG)
    return out


def tk_cmd(args, fod, threshold, out):
    cmd = [args.tk_fibers, "--quiet", "--backend", "cpu", "--num", str(NUM), "--threshold", threshold]
    if fod.basis == "descoteaux":
        cmd += ["--basis", "descoteaux", "--legacy"]
    return cmd + [fod.path, out]


def pct(a, q):
    return float(np.percentile(a, q)) if len(a) else float("nan")


class Row:
    def __init__(self, fod):
        self.fod, self.fig, self.fail = fod, {}, {c: [] for c in CHECKS}


def where(row, v):
    return tuple(int(i) for i in np.unravel_index(v, row.shape, order="F"))


def add_failures(failures, bad, at_most, describe, in_all):
    """The first at_most of bad as failures (describe(*item) each), then where there are
    more the line in_all saying how many."""
    failures.extend(describe(*item) for item in bad[:at_most])
    if len(bad) > at_most:
        failures.append(in_all)


def largest_of(*values):
    stacked = np.concatenate([np.where(np.isfinite(x), x, -np.inf) for x in values], axis=1)
    return stacked.max(axis=1)


def check_sh2peaks(row, coeffs, world, tk, ref):
    """sh2peaks' peaks of at least RELATIVE of the voxel's largest, each found by tk-fibers."""
    fod = row.fod
    ft, fr = values_at(fod, coeffs, tk), values_at(fod, coeffs, ref)
    largest = largest_of(ft, fr)[:, None]
    with np.errstate(invalid="ignore"):
        clear_ref = (fr >= RELATIVE * largest) & (largest > 0)
        clear_tk = (ft >= RELATIVE * largest) & (largest > 0)
    angles = nearest_deg(ref, tk)[clear_ref]
    v, q = np.nonzero(clear_ref & (nearest_deg(ref, tk) > MATCH_DEG))
    real = strict_maxima(world, v, ref[v, q])
    tv, tq = np.nonzero(clear_tk & (nearest_deg(tk, ref) > MATCH_DEG))
    tk_real = strict_maxima(world, tv, tk[tv, tq])
    row.fig["sh2peaks"] = (len(angles), len(angles) - len(v), int(real.sum()), np.median(angles) if len(angles) else
                           np.nan, pct(angles[angles <= MATCH_DEG], 99), len(tv), int(tk_real.sum()))
    for vv, qq in [(a, b) for a, b, r in zip(tv, tq, tk_real) if not r][:5]:
        row.fail["sh2peaks"].append(f"{fod.name}: voxel {where(row, vv)}: tk-fibers' peak {qq} {np.round(tk[vv, qq], 4)}"
                                    f" ({ft[vv, qq] / largest[vv, 0]:.0%} of the largest) is no strict local maximum")
    bad = [(vv, qq) for vv, qq, r in zip(v, q, real) if r]

    def not_found(vv, qq):
        return (f"{fod.name}: voxel {where(row, vv)}: sh2peaks' peak {qq} {np.round(ref[vv, qq], 4)} (amplitude "
                f"{fr[vv, qq]:.4g}, {fr[vv, qq] / largest[vv, 0]:.0%} of the largest), a strict local maximum, is "
                f"{nearest_deg(ref[vv:vv + 1, qq:qq + 1], tk[vv:vv + 1])[0, 0]:.3g} deg from tk-fibers' nearest peak")
    add_failures(row.fail["sh2peaks"], bad, 5, not_found, f"{fod.name}: ... {len(bad)} such peaks in all")
    if len(angles) and not np.median(angles) <= MEDIAN_DEG:
        row.fail["sh2peaks"].append(f"{fod.name}: median angle to sh2peaks {np.median(angles):.3g} deg > {MEDIAN_DEG}")


def stationary_kinds(world_coeffs, voxels, dirs):
    """What each of the directions dirs (n, 3) in voxels (n,) is on the SH function: the signs
    of its finite-difference Hessian's eigenvalues (beyond 1e-6 of their magnitudes' sum):
    'saddle', 'minimum', 'maximum' (negative definite) or 'flat'."""
    kinds = []
    if len(voxels):
        _, _, _, _, h11, h12, h22 = sh_maxima._derivatives(world_coeffs[voxels], sh_maxima._normalize(dirs), 1e-4)
        mean, rad = 0.5 * (h11 + h22), np.sqrt(0.25 * (h11 - h22) ** 2 + h12 ** 2)
        lo, hi, tol = mean - rad, mean + rad, 1e-6 * (np.abs(h11) + np.abs(h22) + 1e-300)
        for a, b, t in zip(lo, hi, tol):
            kinds.append("saddle" if a < -t and b > t else "minimum" if a > t else "maximum" if b < -t else "flat")
    return kinds


def check_complete(row, coeffs, world, runs):
    """Every peak sh2peaks reports (same threshold) found by tk-fibers, unless tk-fibers'
    NUM peaks are all larger: a miss fails where it is a strict local maximum, whatever its
    size or sign.  The other misses are counted by what they are (stationary_kinds)."""
    fod, figs = row.fod, []
    for label, tk, ref in runs:
        ft, fr = values_at(fod, coeffs, tk), values_at(fod, coeffs, ref)
        full = np.isfinite(ft).sum(axis=1) == NUM
        smallest_kept = np.where(full, np.nanmin(np.where(np.isfinite(ft), ft, np.inf), axis=1), -np.inf)[:, None]
        with np.errstate(invalid="ignore"):
            missing = np.isfinite(fr) & (fr > smallest_kept) & (nearest_deg(ref, tk) > MATCH_DEG)
        v, q = np.nonzero(missing)
        order = np.argsort(-fr[v, q], kind="stable")  # the largest misses first
        v, q = v[order], q[order]
        real = strict_maxima(world, v, ref[v, q], at_most=CONFIRM_AT_MOST)
        largest = np.nanmax(np.abs(fr), axis=1)
        strict = [(vv, qq) for vv, qq, r in zip(v, q, real) if r]
        bad = strict
        others = [(vv, qq) for vv, qq, r in zip(v, q, real) if not r]
        ov = np.array([vv for vv, _ in others], dtype=int)
        od = np.array([ref[vv, qq] for vv, qq in others]).reshape(-1, 3)
        kinds = stationary_kinds(world, ov, od)
        # A negative definite Hessian where no strict maximum lies within MATCH_DEG: sh2peaks'
        # Newton stopped short of one.  Where the ascent from the report reaches a strict
        # maximum, tk-fibers must report that one.
        if len(ov):
            xr, _, sr = sh_maxima.refine(world[ov], od)
            for j in range(len(kinds)):
                if kinds[j] != "maximum":
                    continue
                if not sr[j]:
                    kinds[j] = "flat"
                elif nearest_deg(xr[j:j + 1][None, :, :], tk[ov[j]:ov[j] + 1])[0, 0] <= MATCH_DEG:
                    kinds[j] = "short"
                else:
                    bad.append(others[j])
        counts = {k: kinds.count(k) for k in ("saddle", "minimum", "short", "flat")}
        figs.append((label, int(np.isfinite(fr).sum()), len(v), len(strict), min(len(v), CONFIRM_AT_MOST), counts))

        def missing(vv, qq):
            return (f"{fod.name}, threshold {label}: voxel {where(row, vv)}: sh2peaks' peak {qq} "
                    f"{np.round(ref[vv, qq], 4)} (amplitude {fr[vv, qq]:.4g}, {abs(fr[vv, qq]) / largest[vv]:.0%} of "
                    f"the largest magnitude), a strict local maximum, is missing from tk-fibers")
        add_failures(row.fail["complete"], bad, 3, missing,
                     f"{fod.name}, threshold {label}: ... {len(bad)} missing in all")
    row.fig["complete"] = figs


def dipy_peaks(fod, c):
    """DIPY's peaks of one voxel's coefficients, in world axes."""
    if fod.basis == "descoteaux":
        def evaluate(sphere):
            return real_sh_descoteaux(8, sphere.theta, sphere.phi, legacy=True)[0] @ c
    else:
        def evaluate(sphere):
            return real_sh_tournier(8, sphere.theta, sphere.phi, legacy=False)[0] @ c
    dirs, _ = peak_directions_nl(evaluate, relative_peak_threshold=RELATIVE, min_separation_angle=1,
                                 sphere=default_sphere)
    return dirs @ fod.rotation.T if fod.basis == "descoteaux" else dirs


def check_dipy(row, coeffs, world, tk, voxels):
    """DIPY's peaks (world axes) each within MATCH_DEG of a tk-fibers peak, where DIPY's
    Nelder-Mead stopped on a strict local maximum (it may stop short on a flat ridge)."""
    fod = row.fod
    found = [dipy_peaks(fod, coeffs[v]) for v in voxels]
    width = max([len(d) for d in found] + [1])
    dirs = np.full((len(voxels), width, 3), np.nan)
    for i, d in enumerate(found):
        dirs[i, : len(d)] = d
    ang = nearest_deg(dirs, tk[voxels])
    present = np.isfinite(dirs).all(axis=2)
    angles = ang[present]
    i, q = np.nonzero(present & (ang > MATCH_DEG))
    real = strict_maxima(world, voxels[i], dirs[i, q])
    row.fig["dipy"] = (len(voxels), len(angles), int(np.sum(angles <= MATCH_DEG)), int(real.sum()),
                       np.median(angles) if len(angles) else np.nan, pct(angles[angles <= MATCH_DEG], 100))
    bad = [(ii, qq) for ii, qq, r in zip(i, q, real) if r]

    def not_found(ii, qq):
        return (f"{fod.name}: voxel {where(row, voxels[ii])}: DIPY's peak {np.round(dirs[ii, qq], 4)} (world), a "
                f"strict local maximum, is {ang[ii, qq]:.3g} deg from tk-fibers' nearest")
    add_failures(row.fail["dipy"], bad, 5, not_found, f"{fod.name}: ... {len(bad)} such DIPY peaks in all")


def grid_error(affine, input_affine):
    """How far (mm) a file's voxel grid is from the input's: 0 where every input voxel centre
    is a voxel centre of the file and the axes only permute or reverse (a .mif's strides come
    out as MRtrix3 or we write them; the world geometry is the same), else the largest miss."""
    m = np.linalg.inv(affine) @ input_affine
    perm = np.rint(m[:3, :3])
    if not (np.abs(perm).sum(axis=0) == 1).all() or not (np.abs(perm).sum(axis=1) == 1).all():
        return float(np.abs(affine - input_affine).max())
    return float(np.abs(affine[:3, :3] @ (m[:3] - np.rint(m[:3]))).max())


def check_geometry(row, tk_out, ref_out):
    fod = row.fod
    want = nib.load(fod.nifti).affine
    got = nib.load(tk_out).affine
    err = grid_error(got, want)
    ref_err = grid_error(nib.load(ref_out).affine, want) if ref_out else float("nan")
    row.fig["geometry"] = (err, ref_err)
    if not err <= 1e-3:
        row.fail["geometry"].append(f"{fod.name}: tk-fibers' output grid differs from the input's by {err:.3g} mm:\n"
                                    f"{np.round(got, 4)}\ninput (nibabel, sform):\n{np.round(want, 4)}")


def check_committed(fods):
    """The committed MRtrix3 FOD of small_64D (make_small_64D_fods.py) against the one made
    here: the same coefficients (to 1e-5 of the largest) and header."""
    made = [f for f in fods if f.maker == "mrtrix3" and f.geometry == "source"]
    if not made:
        return [], "not made (no source geometry)"
    path = os.path.join(ROOT, "Data", "fibers", "small_64D_fod_mrtrix.nii.gz")
    a, b = nib.load(path), nib.load(made[0].path)
    x, y = np.asarray(a.dataobj, dtype=np.float64), np.asarray(b.dataobj, dtype=np.float64)
    if x.shape != y.shape or not np.allclose(a.affine, b.affine, atol=1e-4):
        return [f"{path}: its shape or affine differs from the MRtrix3 source FOD made here"], "differs"
    err = np.abs(x - y).max() / np.abs(y).max()
    fig = f"Data/fibers/small_64D_fod_mrtrix.nii.gz is the MRtrix3 source FOD made here to {err:.2g} of the largest coefficient"
    return ([] if err <= 1e-5 else [f"{path}: differs from the MRtrix3 source FOD made here by {err:.3g}"]), fig


def validate(args, fod, tmp, checks):
    row = Row(fod)
    img = nib.load(fod.nifti)
    row.shape = img.shape[:3]
    nvox = int(np.prod(row.shape))
    coeffs = np.asarray(img.dataobj, dtype=np.float64).reshape(nvox, -1, order="F")
    stem = os.path.join(tmp, "".join(c if c.isalnum() or c in "-_" else "_" for c in fod.name))
    tk, ref = {}, {}
    for label, ref_t, tk_t in THRESHOLDS:
        out = f"{stem}_tk_{label}.nii"
        rc, err = run(tk_cmd(args, fod, tk_t, out))
        if rc:
            for c in checks:
                row.fail[c].append(f"{fod.name}: tk-fibers --threshold {tk_t} failed ({rc}): {err}")
            return row
        tk[label] = peaks_voxels(out, nvox, img.affine, row.shape)
        if fod.basis == "tournier":
            out = f"{stem}_sh2peaks_{label}.nii"
            cmd = ["sh2peaks", "-quiet", "-force", "-num", str(NUM)] + (["-threshold", ref_t] if ref_t else [])
            rc, err = run(cmd + [fod.path, out])
            if rc:
                sys.exit(f"fibers_real: sh2peaks failed on {fod.path}: {err}")
            ref[label] = peaks_voxels(out, nvox, img.affine, row.shape)
    world = coeffs if fod.basis == "tournier" else real_fods.sh_world_from_voxel(coeffs, fod.rotation)
    if fod.basis == "tournier":
        check_sh2peaks(row, coeffs, world, tk["none"], ref["none"])
        check_complete(row, coeffs, world, [(label, tk[label], ref[label]) for label, _, _ in THRESHOLDS])
    nonzero = np.nonzero(np.abs(coeffs).sum(axis=1) > 0)[0]
    step = max(1, len(nonzero) // args.dipy_voxels) if args.dipy_voxels else 1
    if fod.dipy_check:
        check_dipy(row, coeffs, world, tk["none"], nonzero[::step][: args.dipy_voxels or None])
    check_geometry(row, f"{stem}_tk_none.nii", f"{stem}_sh2peaks_none.nii" if fod.basis == "tournier" else None)
    return row


def peaks_voxels(path, nvox, input_affine, shape):
    """Peaks as (voxels of the input in NIfTI order x fastest, NUM, 3) unit directions, NaN
    where absent: each input voxel's centre looked up in the file through both affines (a
    file read from a .mif may store the same voxels in another axis order)."""
    img = nib.load(path)
    data = np.asarray(img.dataobj, dtype=np.float64)
    ijk = np.indices(shape).reshape(3, -1, order="F")
    world = input_affine[:3, :3] @ ijk + input_affine[:3, 3:]
    at = np.rint(np.linalg.solve(img.affine[:3, :3], world - img.affine[:3, 3:])).astype(int)
    if (at < 0).any() or (at >= np.array(data.shape[:3])[:, None]).any():
        sys.exit(f"fibers_real: {path} does not cover the input's voxels")
    p = data[at[0], at[1], at[2]].reshape(nvox, -1, 3)
    norm = np.linalg.norm(p, axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = p / norm[..., None]
    d[~(np.isfinite(norm) & (norm > 0))] = np.nan
    return d


def fmt(x, spec=".3g"):
    return format(x, spec) if x == x else "-"


def report(rows):
    def status(row, c):
        return "FAIL" if row.fail[c] else "pass"

    print("\n### tk-fibers against sh2peaks (peaks >= 10% of the voxel's largest, no threshold, "
          f"-num {NUM}; found: within {MATCH_DEG} deg)\n")
    print("| FOD | sh2peaks peaks | found by tk-fibers | not found, strict maxima | median angle (deg) | "
          "99th pct of found (deg) | tk-fibers peaks sh2peaks lacks (strict maxima) | check |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "sh2peaks" in r.fig:
            n, found, real, med, p99, extra, extra_real = r.fig["sh2peaks"]
            print(f"| {r.fod.name} | {n} | {found} | {real} | {fmt(med)} | {fmt(p99)} | {extra} ({extra_real}) | "
                  f"{status(r, 'sh2peaks')} |")
    print("\n### Nothing sh2peaks reports is missing from tk-fibers (same threshold, -num / --num "
          f"{NUM}; missing: no tk-fibers peak within {MATCH_DEG} deg)\n")
    print("Any strict maximum missed fails the check, whatever its size or sign.  The reports that "
          "tk-fibers lacks are no strict maxima: sh2peaks' Newton stops at any stationary point, and "
          "sometimes short of one; each is classified by the finite-difference Hessian there: saddles s, "
          "minima m, short of a maximum that tk-fibers reports r (the ascent from the report reaches it "
          "beyond 0.1 deg; were tk-fibers to lack it, the check would fail), flat or degenerate f.\n")
    print("| FOD | " + " | ".join(f"threshold {t[0]}: reported / missing (strict maxima; s, m, r, f)"
                                  for t in THRESHOLDS)
          + " | check |")
    print("|---|" + "---|" * (len(THRESHOLDS) + 1))
    for r in rows:
        if "complete" in r.fig:
            cells = [f"{n} / {m} ({s}{'' if tried == m else f' of the largest {tried}'}; {k['saddle']}, "
                     f"{k['minimum']}, {k['short']}, {k['flat']})" for _, n, m, s, tried, k in r.fig["complete"]]
            print(f"| {r.fod.name} | " + " | ".join(cells) + f" | {status(r, 'complete')} |")
    print(f"\n### DIPY's peak_directions_nl, in world axes, against tk-fibers (found: within {MATCH_DEG} deg)\n")
    print("| FOD | voxels | DIPY peaks | found by tk-fibers | not found, strict maxima | median angle (deg) | "
          "max angle of found (deg) | check |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "dipy" in r.fig:
            nv, n, found, real, med, mx = r.fig["dipy"]
            print(f"| {r.fod.name} | {nv} | {n} | {found} | {real} | {fmt(med)} | {fmt(mx)} | {status(r, 'dipy')} |")
    print("\n### Output geometry (largest distance of the input's voxel centres from the output's, mm; axes may permute)\n")
    print("| FOD | tk-fibers | sh2peaks | check |")
    print("|---|---|---|---|")
    for r in rows:
        if "geometry" in r.fig:
            print(f"| {r.fod.name} | {fmt(r.fig['geometry'][0])} | {fmt(r.fig['geometry'][1])} | "
                  f"{status(r, 'geometry')} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tk-fibers", required=True)
    p.add_argument("--check", nargs="?", const=",".join(CHECKS), default="",
                   help="fail (exit 1) on these comma-separated checks (default all): " + ", ".join(CHECKS))
    p.add_argument("--dipy-voxels", type=int, default=0,
                   help="DIPY's peaks on this many voxels of each FOD, spread evenly (default 0: all; "
                        "DIPY takes ~0.1 s a voxel)")
    p.add_argument("--geometries", default=",".join(real_fods.GEOMETRIES))
    p.add_argument("--keep", help="make the FODs and outputs in this folder and keep them")
    args = p.parse_args()
    checks = [c for c in args.check.split(",") if c] if args.check else []
    for c in checks:
        if c not in CHECKS:
            sys.exit(f"fibers_real: unknown check '{c}' (known: {', '.join(CHECKS)})")
    if not real_fods.have_tools():
        print("SKIPPED: the validation needs MRtrix3 (mrconvert, dwi2fod, sh2peaks)")
        return 0
    warnings.simplefilter("ignore")
    tmp = args.keep or tempfile.mkdtemp(prefix="tk_fibers_real_")
    try:
        start = time.time()
        fods = real_fods.make(tmp, [g for g in args.geometries.split(",") if g])
        fods.append(real_fods.Fod("bundled small_101D", os.path.join(ROOT, "Data", "fibers", "small_101D_fod.nii.gz"),
                                  "tournier", "dipy", "source"))
        print(f"made {len(fods)} FODs in {time.time() - start:.0f} s")
        data_failures, data_figure = check_committed(fods)
        rows = [validate(args, fod, tmp, CHECKS) for fod in fods]
        print(f"validated in {time.time() - start:.0f} s")
    finally:
        if not args.keep:
            shutil.rmtree(tmp)
    report(rows)
    unread = [r.fod.name for r in rows if not r.fig]
    if unread:
        print(f"\nNo figures for {', '.join(unread)}: tk-fibers failed on them (below).")
    print(f"\ndata: {data_figure}: {'FAIL' if data_failures else 'pass'}")
    failures = [m for r in rows for c in checks for m in r.fail[c]] + (data_failures if "data" in checks else [])
    failures = list(dict.fromkeys(failures))  # a tool's failure is every check's: said once
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        return 1
    if checks:
        print("\nPASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
