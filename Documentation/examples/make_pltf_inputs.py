#!/usr/bin/python3
"""Small inputs for the user guide's tk-pltf examples, written to the current folder, so that
the examples run as printed (the docs test runs them): non-negative low-rank data plus noise.

  counts.npy                Poisson counts of a rank-3 PARAFAC model, 20 x 30 x 10 (float32)
  x.npy, observed.npy       a Tucker-3 (4, 4, 3) tensor 12 x 12 x 8 with Gaussian noise, and
                            its mask (1 = observed, 80% of the entries)
  pet.nii.gz, frames_ok.nii.gz
                            a dynamic "PET" series, 16 x 16 x 8 voxels x 12 frames, three
                            spatial maps times three time courses (Poisson counts), and a 4-D
                            mask with slice 3 of frames 5 and 6 missing
  t1.nii.gz, observed.nii.gz
                            a smooth 3-D volume 24 x 24 x 16 and a mask with 30% of its
                            voxels missing

Usage: make_pltf_inputs.py (no arguments; Debian's numpy and nibabel).
"""
import sys

import nibabel as nib
import numpy as np


def main():
    if len(sys.argv) != 1:
        print("usage: make_pltf_inputs.py (writes the example inputs to the current folder)", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)

    factors = [rng.gamma(2.0, 1.0, (n, 3)) for n in (20, 30, 10)]
    rate = np.einsum("ia,ja,ka->ijk", *factors)
    np.save("counts.npy", rng.poisson(rate).astype(np.float32))

    core = rng.gamma(2.0, 1.0, (4, 4, 3))
    a, b, c = (rng.gamma(2.0, 1.0, (n, r)) for n, r in ((12, 4), (12, 4), (8, 3)))
    x = np.einsum("ip,jq,kr,pqr->ijk", a, b, c, core)
    x = np.abs(x + rng.normal(0, 0.05 * x.std(), x.shape))
    np.save("x.npy", x.astype(np.float32))
    np.save("observed.npy", (rng.random(x.shape) < 0.8).astype(np.float32))

    # NIfTI axes (x, y, z, t): spatial maps (x, y, z, p) times time courses (t, p).
    maps = rng.gamma(2.0, 1.0, (16, 16, 8, 3))
    courses = np.stack([np.exp(-np.arange(12) / s) for s in (2.0, 5.0, 20.0)], axis=1) * 20
    pet = rng.poisson(np.einsum("xyzp,tp->xyzt", maps, courses)).astype(np.float32)
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    nib.save(nib.Nifti1Image(pet, affine), "pet.nii.gz")
    frames_ok = np.ones(pet.shape, np.uint8)
    frames_ok[:, :, 3, 5:7] = 0
    nib.save(nib.Nifti1Image(frames_ok, affine), "frames_ok.nii.gz")

    i, j, k = np.meshgrid(np.arange(24), np.arange(24), np.arange(16), indexing="ij")
    t1 = 100 + 50 * np.sin(i / 5.0) * np.cos(j / 7.0) + 2 * k
    nib.save(nib.Nifti1Image(t1.astype(np.float32), np.diag([1.0, 1.0, 1.5, 1.0])), "t1.nii.gz")
    observed = (rng.random(t1.shape) < 0.7).astype(np.uint8)
    nib.save(nib.Nifti1Image(observed, np.diag([1.0, 1.0, 1.5, 1.0])), "observed.nii.gz")
    return 0


if __name__ == "__main__":
    sys.exit(main())
