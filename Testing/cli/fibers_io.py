#!/usr/bin/python3
"""tk-fibers' files against the readers users rely on (issue 20: sform, NRRD frame, .mif).

    fibers_io.py --tk-fibers PATH --check nifti|nrrd|mif [--work DIR]

nifti: NIfTI orientation as nibabel and MRtrix3 read it.  Inputs made with nibabel: sform
    (code 2, rotated) unlike the qform (code 1, axis-aligned); a qform alone with qfac = -1;
    an oblique sform of code 4 (MNI) with no qform; the first again as .nii.gz.  tk-fibers'
    output keeps both transforms and both codes (field by field), its nibabel affine is the
    input's, its peaks are the fibers' world directions, and they equal sh2peaks' (run on the
    same file) voxel by voxel in world space.  With --basis descoteaux (DIPY's basis, defined
    in voxel axes) the peaks are rotated by the sform's axes, not the qform's.
nrrd: the NRRD output read as the NRRD format says (space directions and origin in `space`,
    vectors in that space unless a `measurement frame` maps them there; LPS to RAS) gives the
    world directions of the NIfTI output, voxel by voxel; the same for a detached .nhdr.
mif: MRtrix3's .mif: inputs made by mrconvert (layouts -1,2,3,4 / 2,3,4,1 / -3,1,-2,4,
    Float32BE, Float64, Int16 with scaling, .mif.gz, .mih with its .dat) give the peaks
    sh2peaks gives on the same file (both read back by mrconvert, compared in world space)
    and those of the NIfTI they came from; tk-fibers' .mif and .mif.gz outputs read in
    mrinfo with the input's transform and size and hold the NIfTI output's values; a Bit
    mask in .mif masks as the same mask in NIfTI does.

Needs nibabel and dipy (Debian's python3); the sh2peaks comparisons and the mif check need
MRtrix3 (mrconvert, mrinfo, sh2peaks): without them the run prints SKIPPED and passes.
"""
import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import nibabel as nib
    from dipy.reconst.shm import real_sh_descoteaux, real_sh_tournier
except ImportError as e:
    print("SKIPPED: %s (Debian: python3-nibabel, python3-dipy)" % e)
    sys.exit(0)

LMAX = 8
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    return r.stdout


# ---- synthetic FODs ---------------------------------------------------------------------

_FIT = {}


def sh_fit(basis):
    """The least-squares map from values on 4,000 directions to lmax-8 coefficients."""
    if basis not in _FIT:
        g = np.random.default_rng(0).standard_normal((4000, 3))
        g /= np.linalg.norm(g, axis=1)[:, None]
        theta, phi = np.arccos(np.clip(g[:, 2], -1, 1)), np.arctan2(g[:, 1], g[:, 0])
        fn = real_sh_tournier if basis == "tournier" else real_sh_descoteaux
        B = fn(LMAX, theta, phi, legacy=False)[0]
        _FIT[basis] = (g, np.linalg.pinv(B))
    return _FIT[basis]


def lobes_sh(dirs, weights, basis):
    """Coefficients of sum_k w_k (u . d_k)^8: maxima at +-d_k (apart by 70 degrees or more,
    each peak is its fiber's direction to well under 0.01 degrees)."""
    g, pinv = sh_fit(basis)
    return pinv @ sum(w * (g @ d) ** 8 for d, w in zip(dirs, weights))


def random_unit(rng):
    d = rng.standard_normal(3)
    return d / np.linalg.norm(d)


def fibers(shape, seed):
    """Per voxel one or two world directions (70+ degrees apart) and their weights."""
    rng = np.random.default_rng(seed)
    out = {}
    for ijk in np.ndindex(shape):
        d1 = random_unit(rng)
        dirs, w = [d1], [1.0]
        if sum(ijk) % 2:
            while True:
                d2 = random_unit(rng)
                if abs(d1 @ d2) < np.cos(np.radians(70)):
                    break
            dirs.append(d2)
            w.append(0.6)
        out[ijk] = (dirs, w)
    return out


def fod_volume(shape, truth, basis="tournier", to_voxel=None):
    """The SH volume of truth; to_voxel (3x3) maps world directions into the frame the
    basis is defined in (DIPY: voxel axes)."""
    data = np.zeros(shape + (45,), np.float32)
    for ijk, (dirs, w) in truth.items():
        frame = [d if to_voxel is None else to_voxel @ d for d in dirs]
        data[ijk] = lobes_sh(frame, w, basis)
    return data


def rotation(axis, degrees):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    t = np.radians(degrees)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K


def affine(R, zooms, offset):
    A = np.eye(4)
    A[:3, :3] = R @ np.diag(zooms)
    A[:3, 3] = offset
    return A


def save_nifti(path, data, qform=None, qcode=0, sform=None, scode=0):
    # pixdim from the transform the file means (as FSL and ANTs write them; ITK 5.2, which
    # still reads the voxels, refuses an sform alone whose columns disagree with pixdim)
    img = nib.Nifti1Image(data, sform if sform is not None else qform)
    if qform is not None:
        img.set_qform(qform, code=qcode)
    else:
        img.set_qform(None, code=0)
    if sform is not None:
        img.set_sform(sform, code=scode)
    else:
        img.set_sform(None, code=0)
    nib.save(img, path)
    return img


# ---- peaks in world space ---------------------------------------------------------------

def world_key(p):
    return tuple(np.round(np.asarray(p, float), 3) + 0.0)


def peaks_by_world(positions, vectors):
    """{voxel centre (RAS mm, rounded): (num, 3) array of peak vectors}."""
    return {world_key(p): v.reshape(-1, 3) for p, v in zip(positions, vectors)}


def nifti_peaks(path):
    img = nib.load(path)
    data = np.asarray(img.dataobj, dtype=np.float64)
    ijk = np.array(list(np.ndindex(data.shape[:3])))
    pos = (img.affine @ np.c_[ijk, np.ones(len(ijk))].T).T[:, :3]
    return peaks_by_world(pos, [data[tuple(i)] for i in ijk])


def angle_deg(a, b):
    c = abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
    return np.degrees(np.arccos(min(1.0, c)))


def present(v):
    return np.isfinite(v).all() and np.linalg.norm(v) > 0


def compare_peaks(ours, ref, tol_deg, rel_amp, what, same_count=True):
    """Every voxel of ref at the same world position in ours, each of ref's present peaks
    found among ours (the nearest within tol_deg, with ref's amplitude); same_count: and no
    more peaks in ours (sh2peaks may miss a small lobe a voxel has: not counted there)."""
    if set(ours) != set(ref):
        return check(False, "%s: the voxel centres differ in world space (%d of %d shared)"
                     % (what, len(set(ours) & set(ref)), len(ref)))
    worst_angle, worst_amp, count = 0.0, 0.0, 0
    for key, r in ref.items():
        mine = [v for v in ours[key] if present(v)]
        theirs = [v for v in r if present(v)]
        if not mine and theirs or same_count and len(mine) != len(theirs):
            return check(False, "%s: voxel at %s: %d peaks, the reference %d" % (what, key, len(mine), len(theirs)))
        for v in theirs:
            best = min(mine, key=lambda m: angle_deg(m, v))
            worst_angle = max(worst_angle, angle_deg(best, v))
            worst_amp = max(worst_amp, abs(np.linalg.norm(best) - np.linalg.norm(v)) / np.linalg.norm(v))
            count += 1
    return check(count > 0 and worst_angle <= tol_deg and worst_amp <= rel_amp,
                 "%s: %d peaks, largest angle %.2g deg (limit %g), amplitude %.2g (limit %g)"
                 % (what, count, worst_angle, tol_deg, worst_amp, rel_amp))


def compare_truth(peaks, truth, affine4, tol_deg, what):
    """Peaks (by world position) against the fibers' world directions, largest first."""
    worst = 0.0
    for ijk, (dirs, _) in truth.items():
        key = world_key((affine4 @ np.r_[ijk, 1.0])[:3])
        if key not in peaks:
            return check(False, "%s: no output voxel at voxel %s's world position %s" % (what, ijk, key))
        got = peaks[key]
        for p, d in enumerate(dirs):
            if not present(got[p]):
                return check(False, "%s: voxel %s: peak %d missing" % (what, ijk, p))
            worst = max(worst, angle_deg(got[p], d))
    return check(worst <= tol_deg, "%s: largest angle to the true world directions %.2g deg (limit %g)"
                 % (what, worst, tol_deg))


def header_fields(path):
    h = nib.load(path).header
    return {k: np.asarray(h[k]).copy() for k in ("qform_code", "sform_code", "quatern_b", "quatern_c", "quatern_d",
                                                "qoffset_x", "qoffset_y", "qoffset_z", "srow_x", "srow_y", "srow_z")} | {
        "pixdim[0:4]": np.asarray(h["pixdim"][:4]).copy()}


def same_transforms(out, inp, what):
    a, b = header_fields(out), header_fields(inp)
    differ = [k for k in b if not np.array_equal(a[k], b[k])]
    check(not differ, "%s: both transforms and codes kept (qform_code %d, sform_code %d)%s"
          % (what, a["qform_code"], a["sform_code"],
             "" if not differ else "; differ: " + ", ".join("%s %s (input %s)" % (k, a[k], b[k]) for k in differ)))
    check(np.allclose(nib.load(out).affine, nib.load(inp).affine, atol=1e-5),
          "%s: the output's affine (nibabel) is the input's" % what)


# ---- the checks ---------------------------------------------------------------------------

def check_nifti(exe, work, mrtrix):
    shape = (5, 4, 3)
    truth = fibers(shape, 1)
    R = rotation([1, 2, 3], 25)
    cases = []
    # sform (code 2, oblique) unlike the qform (code 1, axis-aligned): FSL / ANTs outputs
    qa, sa = affine(np.eye(3), [2, 2, 2], [-10, -20, -30]), affine(R, [2, 2, 2], [5, -6, 7])
    cases.append(("qform 1 axis-aligned, sform 2 rotated", "qs.nii", dict(qform=qa, qcode=1, sform=sa, scode=2), sa))
    cases.append(("the same, .nii.gz", "qs.nii.gz", dict(qform=qa, qcode=1, sform=sa, scode=2), sa))
    # a qform alone, with qfac = -1 (a left-handed voxel grid)
    qf = affine(rotation([0, 1, 1], 20), [1.5, 2, 2.5], [3, 4, -5]) @ np.diag([1, 1, -1, 1])
    cases.append(("qform 1 with qfac -1, no sform", "qfac.nii", dict(qform=qf, qcode=1), qf))
    # an oblique sform, code 4 (MNI), anisotropic voxels, no qform
    so = affine(rotation([3, -1, 2], 40), [2, 2.5, 3], [-90, 120, -70])
    cases.append(("sform 4 oblique, no qform", "mni.nii", dict(sform=so, scode=4), so))
    for what, name, forms, world in cases:
        for basis in ("tournier", "descoteaux"):
            # MRtrix3's SH are in world axes; DIPY's in voxel axes (world -> voxel: the
            # inverse of the affine's rotation, a reflection included)
            D = world[:3, :3] / np.linalg.norm(world[:3, :3], axis=0)
            data = fod_volume(shape, truth, basis, None if basis == "tournier" else np.linalg.inv(D))
            inp = os.path.join(work, basis + "_" + name)
            save_nifti(inp, data, **forms)
            out = os.path.join(work, basis + "_peaks_" + name)
            label = "%s (%s)" % (what, basis)
            try:
                run([exe, inp, out, "--num", "3", "--basis", basis, "--quiet", "--backend", "omp"], work)
            except RuntimeError as e:
                check(False, "%s: %s" % (label, e))
                continue
            same_transforms(out, inp, label)
            compare_truth(nifti_peaks(out), truth, nib.load(inp).affine, 0.05, label)
            if basis == "tournier" and mrtrix:
                ref = os.path.join(work, "sh2peaks_" + name)
                run(["sh2peaks", "-quiet", "-force", "-num", "3", inp, ref], work)
                compare_peaks(nifti_peaks(out), nifti_peaks(ref), 0.05, 1e-3, label + " against sh2peaks",
                              same_count=False)


def read_nrrd(path):
    """A float NRRD as its format defines it: (positions RAS, vectors RAS) per voxel, the
    component axis first (kinds vector / list), the three spatial axes after it."""
    raw = open(path, "rb").read()
    head, _, data = raw.partition(b"\n\n")
    lines = head.decode().splitlines()
    assert lines[0].startswith("NRRD"), path
    f = {}
    for line in lines[1:]:
        if line.startswith("#") or ":=" in line:
            continue
        key, value = line.split(":", 1)
        f[key.strip()] = value.strip()
    if "data file" in f:
        data = open(os.path.join(os.path.dirname(path), f["data file"]), "rb").read()
    if f.get("encoding") in ("gzip", "gz"):
        data = gzip.decompress(data)
    assert f.get("encoding") in ("raw", "gzip", "gz") and f["type"] == "float", f
    sizes = [int(s) for s in f["sizes"].split()]
    dtype = np.dtype("<f4" if f.get("endian", "little") == "little" else ">f4")
    values = np.frombuffer(data, dtype=dtype)[: int(np.prod(sizes))].reshape(sizes[::-1])

    def vectors(text):
        return [None if t == "none" else np.array([float(x) for x in t.strip("()").split(",")])
                for t in text.split()]
    dirs = vectors(f["space directions"])
    assert dirs[0] is None and all(d is not None for d in dirs[1:]), "component axis first"
    origin = vectors(f["space origin"])[0]
    space = f["space"].lower()
    to_ras = {"left-posterior-superior": np.diag([-1.0, -1, 1]), "lps": np.diag([-1.0, -1, 1]),
              "right-anterior-superior": np.eye(3), "ras": np.eye(3)}[space]
    # measurement frame: its vectors are the columns of the map from the values' frame to space
    mf = np.eye(3)
    if "measurement frame" in f:
        mf = np.column_stack(vectors(f["measurement frame"]))
    positions, vecs = [], []
    for k in range(sizes[3]):
        for j in range(sizes[2]):
            for i in range(sizes[1]):
                positions.append(to_ras @ (origin + i * dirs[1] + j * dirs[2] + k * dirs[3]))
                v = values[k, j, i].reshape(-1, 3)
                vecs.append(np.array([to_ras @ (mf @ x) for x in v]))
    return peaks_by_world(positions, vecs), f


def check_nrrd(exe, work):
    shape = (5, 4, 3)
    truth = fibers(shape, 2)
    sa = affine(rotation([1, -2, 1], 30), [2, 2.5, 2], [12, -7, 3])
    inp = os.path.join(work, "sh.nii")
    save_nifti(inp, fod_volume(shape, truth), qform=sa, qcode=1, sform=sa, scode=1)
    run([exe, inp, os.path.join(work, "peaks.nii"), "--num", "2", "--quiet", "--backend", "omp"], work)
    ref = nifti_peaks(os.path.join(work, "peaks.nii"))
    compare_truth(ref, truth, sa, 0.05, "NIfTI output (the reference)")
    for name in ("peaks.nrrd", "peaks.nhdr"):
        run([exe, inp, os.path.join(work, name), "--num", "2", "--quiet", "--backend", "omp"], work)
        got, fields = read_nrrd(os.path.join(work, name))
        compare_peaks(got, ref, 1e-4, 1e-6, "%s (space: %s, measurement frame: %s) read by the NRRD rules"
                      % (name, fields["space"], fields.get("measurement frame", "none")))


def mrinfo(path, option):
    return run(["mrinfo", path, option], os.path.dirname(path)).split()


def check_mif(exe, work):
    shape = (5, 4, 3)
    truth = fibers(shape, 3)
    sa = affine(rotation([2, 1, -1], 35), [2, 2.5, 3], [-4, 9, 15])
    base = os.path.join(work, "fod.nii")
    save_nifti(base, fod_volume(shape, truth), qform=sa, qcode=1, sform=sa, scode=1)
    run([exe, base, os.path.join(work, "from_nii.nii"), "--num", "3", "--quiet", "--backend", "omp"], work)
    from_nii = nifti_peaks(os.path.join(work, "from_nii.nii"))
    variants = [("fod.mif", []), ("fod_strides_-1,2,3,4.mif", ["-strides", "-1,2,3,4"]),
                ("fod_strides_2,3,4,1.mif", ["-strides", "2,3,4,1"]),
                ("fod_strides_-3,1,-2,4.mif", ["-strides", "-3,1,-2,4"]),
                ("fod_float32be.mif", ["-datatype", "float32be"]), ("fod_float64.mif", ["-datatype", "float64"]),
                ("fod_int16_scaled.mif", ["-datatype", "int16", "-scaling", "0,0.0001"]),
                ("fod.mif.gz", []), ("fod.mih", [])]
    for name, options in variants:
        path = os.path.join(work, name)
        run(["mrconvert", "-quiet", "-force", base, path] + options, work)
        stem = name.replace(".", "_")
        ours, ref = os.path.join(work, stem + "_peaks.mif"), os.path.join(work, stem + "_sh2peaks.mif")
        run([exe, path, ours, "--num", "3", "--quiet", "--backend", "omp"], work)
        run(["sh2peaks", "-quiet", "-force", "-num", "3", path, ref], work)
        for m in (ours, ref):
            run(["mrconvert", "-quiet", "-force", m, m + ".nii"], work)
        label = "%s (%s)" % (name, open(path, "rb").read(200).split(b"layout: ")[1].split(b"\n")[0].decode()
                             if not name.endswith(".gz") else "gzip")
        # the values as MRtrix3 reads them (mrconvert to float32 NIfTI): the same peaks exactly
        run(["mrconvert", "-quiet", "-force", path, "-datatype", "float32", path + ".nii"], work)
        run([exe, path + ".nii", path + "_peaks.nii", "--num", "3", "--quiet", "--backend", "omp"], work)
        compare_peaks(nifti_peaks(ours + ".nii"), nifti_peaks(path + "_peaks.nii"), 1e-4, 1e-7,
                      label + " against its values as mrconvert reads them")
        if "int16" not in name:  # float values: those of the NIfTI it came from; sh2peaks' peaks
            compare_peaks(nifti_peaks(ours + ".nii"), from_nii, 1e-4, 1e-7, label + " against the NIfTI it came from")
            compare_peaks(nifti_peaks(ours + ".nii"), nifti_peaks(ref + ".nii"), 0.05, 1e-3, label + " against sh2peaks",
                          same_count=False)
        numbers = lambda p, o, n: np.array(mrinfo(p, o)[:n], float)
        same = (np.allclose(numbers(ours, "-transform", 16), numbers(path, "-transform", 16), atol=1e-6) and
                mrinfo(ours, "-size")[:3] == mrinfo(path, "-size")[:3] and
                np.allclose(numbers(ours, "-spacing", 3), numbers(path, "-spacing", 3)))
        check(same and mrinfo(ours, "-size")[3] == "9",
              "%s: mrinfo reads tk-fibers' .mif with the input's transform, size and voxel sizes (and 9 volumes)" % label)
    # .mif.gz out; the same values as the NIfTI output
    gz = os.path.join(work, "peaks.mif.gz")
    run([exe, base, gz, "--num", "3", "--quiet", "--backend", "omp"], work)
    run(["mrconvert", "-quiet", "-force", gz, gz + ".nii"], work)
    a, b = nib.load(gz + ".nii"), nib.load(os.path.join(work, "from_nii.nii"))
    check(np.array_equal(np.asarray(a.dataobj), np.asarray(b.dataobj), equal_nan=True) and
          np.allclose(a.affine, b.affine, atol=1e-5), "tk-fibers' .mif.gz output (through mrconvert) holds the NIfTI output")
    # a Bit mask in .mif, stored right to left: the same as the NIfTI mask
    mask = np.zeros(shape, np.uint8)
    mask[1:4, 1:3, :2] = 1
    save_nifti(os.path.join(work, "mask.nii"), mask, qform=sa, qcode=1, sform=sa, scode=1)
    run(["mrconvert", "-quiet", "-force", "mask.nii", "mask.mif", "-datatype", "bit", "-strides", "-1,2,3"], work)
    for m in ("mask.nii", "mask.mif"):
        run([exe, base, "masked_%s.nii" % m[-3:], "--num", "3", "--quiet", "--backend", "omp", "--mask", m], work)
    a, b = (np.asarray(nib.load(os.path.join(work, "masked_%s.nii" % e)).dataobj) for e in ("nii", "mif"))
    inside = np.isfinite(a[..., 0])
    check(np.array_equal(a, b, equal_nan=True) and inside.sum() == mask.sum() and (inside == (mask > 0)).all(),
          "a Bit mask in .mif (layout -0,+1,+2) masks as the NIfTI mask does (%d voxels in)" % inside.sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tk-fibers", required=True)
    ap.add_argument("--check", required=True, choices=["nifti", "nrrd", "mif"])
    ap.add_argument("--work", help="keep the files here (default: a temporary folder, removed)")
    a = ap.parse_args()
    mrtrix = all(shutil.which(t) for t in ("mrconvert", "mrinfo", "sh2peaks"))
    if a.check == "mif" and not mrtrix:
        print("SKIPPED: MRtrix3 (mrconvert, mrinfo, sh2peaks) is not installed")
        return 0
    if a.check == "nifti" and not mrtrix:
        print("note: sh2peaks not installed: the comparisons with it are left out")
    work = a.work or tempfile.mkdtemp(prefix="tk_fibers_io_")
    os.makedirs(work, exist_ok=True)
    exe = os.path.abspath(a.tk_fibers)
    try:
        if a.check == "nifti":
            check_nifti(exe, work, mrtrix)
        elif a.check == "nrrd":
            check_nrrd(exe, work)
        else:
            check_mif(exe, work)
    except RuntimeError as e:
        check(False, str(e))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
