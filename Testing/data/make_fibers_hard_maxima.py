#!/usr/bin/python3
"""Testing/data/fibers_hard_maxima_sh.npy and fibers_hard_maxima_starts.npy: SH series (MRtrix3's
tournier07 basis, lmax 8, float64, one row a voxel) whose maxima an earlier finder missed, and
for each the directions sh2peaks reports on it (NaN-padded, 20 a voxel), which the test
refines by its own ascent into maxima the finder must report.

The voxels: the strict maxima sh2peaks found and tk-fibers missed in the validation
(Testing/validation/fibers_real.py: dwi2fod's and DIPY's FODs of small_64D in oblique and source
geometry: flat bumps on slopes, a bump across a saddle from a grid maximum, an elongated
maximum whose Levenberg-Marquardt climb crawled), and voxels of the bundled FODs and of random
series where the earlier finder reported fewer maxima than the present one.

usage: make_fibers_hard_maxima.py  (writes beside this script; needs MRtrix3's sh2peaks, nibabel,
dipy; Testing/validation/real_fods.py makes the oblique FODs)
"""
import os
import subprocess
import sys
import tempfile

import nibabel as nib
import numpy as np
from dipy.reconst.shm import real_sh_descoteaux, real_sh_tournier

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "Testing", "validation"))
import real_fods  # noqa: E402


def descoteaux_legacy_to_tournier(c):
    """The same function in MRtrix3's basis: both bases' values on 2,000 directions."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 3))
    x /= np.linalg.norm(x, axis=1)[:, None]
    th, ph = np.arccos(x[:, 2]), np.arctan2(x[:, 1], x[:, 0])
    d = real_sh_descoteaux(8, th, ph, legacy=True)[0]
    t = real_sh_tournier(8, th, ph, legacy=False)[0]
    return np.linalg.lstsq(t, d @ c.T, rcond=None)[0].T


def main():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fods = {f.name: f for f in real_fods.make(tmp, geometries=["source", "oblique"])}
        picks = [("MRtrix3 oblique", (4, 0, 6)), ("MRtrix3 oblique", (9, 1, 1)), ("MRtrix3 oblique", (9, 3, 5)),
                 ("DIPY oblique (as MRtrix3)", (5, 9, 5)), ("DIPY oblique (as MRtrix3)", (0, 8, 2)),
                 ("MRtrix3 source", (9, 7, 1))]
        for name, v in picks:
            rows.append(np.asarray(nib.load(fods[name].path).dataobj, dtype=np.float64)[v])
    data = os.path.join(ROOT, "Data", "fibers")
    real = np.load(os.path.join(data, "small_101D_fod_sh.npy")).reshape(-1, 45).astype(np.float64)
    rows += [real[i] for i in (190, 251)]
    mrtrix = np.load(os.path.join(data, "small_64D_fod_mrtrix_sh.npy")).reshape(-1, 45).astype(np.float64)
    rows += [mrtrix[i] for i in (179, 246, 677)]
    dipy = np.load(os.path.join(data, "small_64D_fod_dipy_sh.npy")).reshape(-1, 45).astype(np.float64)
    rows += list(descoteaux_legacy_to_tournier(dipy[[31, 776, 796, 845, 958]]))
    rng = np.random.default_rng(5)  # the comparison's random lmax-8 series (float32 then)
    rand = rng.normal(size=(3000, 45)).astype(np.float32).astype(np.float64)
    rows += [rand[i] for i in (98, 145, 877, 1538)]
    sh = np.array(rows)
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "sh.nii")
        nib.save(nib.Nifti1Image(sh.reshape(len(sh), 1, 1, 45).astype(np.float32), np.eye(4)), img)
        out = os.path.join(tmp, "peaks.nii")
        subprocess.run(["sh2peaks", "-quiet", "-force", "-num", "20", img, out], check=True)
        peaks = np.asarray(nib.load(out).dataobj, dtype=np.float64).reshape(len(sh), 20, 3)
    norm = np.linalg.norm(peaks, axis=2, keepdims=True)
    starts = np.where(norm > 0, peaks / np.where(norm > 0, norm, 1), np.nan)
    np.save(os.path.join(HERE, "fibers_hard_maxima_sh.npy"), sh.astype(np.float32).astype(np.float64))
    np.save(os.path.join(HERE, "fibers_hard_maxima_starts.npy"), starts)
    print(f"{len(sh)} voxels")


if __name__ == "__main__":
    main()
