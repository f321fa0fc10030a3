#!/usr/bin/python3
"""Synthetic FOD phantom with known fibers: Data/fibers/phantom_sh.nii.gz and its truth.

Each voxel holds 1-3 fibers.  A fiber is an axially symmetric Watson lobe
exp(kappa ((u.x)^2 - 1)) around its direction u, projected exactly onto the even
spherical harmonics up to lmax 8 (Funk-Hecke: coefficient l of an axially symmetric
function is its Legendre coefficient times Y_lm(u)), scaled so that one fiber's projected
peak is 1, and weighted by its volume fraction (1/n for n fibers).  kappa = 10 is as sharp
as lmax 8 carries without strong ringing (negative side lobes 1.4% of the peak): crossings
of 40 degrees and more give separate maxima, 30-degree crossings merge into one, as in
real CSD at lmax 8.

Grid (x, y, z) = (configuration, sample, noise level):
  x: 0 one fiber; 1-5 two fibers crossing at 30, 45, 60, 75, 90 degrees; 6 three fibers
     mutually at 90 degrees; 7 three coplanar fibers 60 degrees apart.
  y: random orientations of the configuration (a uniformly random rotation per sample);
     the same fibers in every z of a column.
  z: noise sigma 0, 0.02, 0.05, 0.1: white Gaussian noise on the coefficients whose
     standard deviation on the sphere (at any direction) is sigma times a single fiber's
     peak amplitude (for an orthonormal basis, sum_lm Y_lm(x)^2 = 45 / (4 pi) at lmax 8).

The coefficients use MRtrix3's basis (tournier07, non-legacy), in the world (RAS) frame;
the image is axis-aligned (2 mm, RAS), so voxel axes and world axes agree.

Outputs (in --out, default beside this script):
  phantom_sh.nii.gz           4-D float32, 45 SH volumes (sh2peaks, tk-fibers, DIPY read it)
  phantom_truth.npz           count (X,Y,Z) int; directions (X,Y,Z,3,3) unit vectors (RAS),
                              NaN rows where absent, sorted by fraction; fractions (X,Y,Z,3);
                              crossing_deg (X,) (0 for one fiber; the smallest pairwise angle
                              otherwise); config (X,) names; noise (Z,); kappa; seed; lmax
  phantom_truth_peaks.nii.gz  the truth in sh2peaks' layout (9 volumes: direction x fraction,
                              NaN where absent), for MRtrix3's peak tools

Deterministic: numpy's PCG64 seeded with --seed (default 2026).  The committed files are
`make_phantom.py` with the defaults (24 samples, 768 voxels).  For benchmarks, a larger
variant: `make_phantom.py --samples 2500 --out /tmp/phantom_big` (80,000 voxels).
Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel).
"""
import argparse
import os

import nibabel as nib
import numpy as np
from dipy.reconst.shm import real_sh_tournier

LMAX = 8
KAPPA = 10.0
NOISE = (0.0, 0.02, 0.05, 0.1)
CONFIGS = (  # name, crossing angle (smallest pairwise), unit directions before rotation
    ("1 fiber", 0, [[0, 0, 1]]),
    ("2 fibers 30 deg", 30, None),
    ("2 fibers 45 deg", 45, None),
    ("2 fibers 60 deg", 60, None),
    ("2 fibers 75 deg", 75, None),
    ("2 fibers 90 deg", 90, None),
    ("3 fibers 90 deg", 90, [[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    ("3 fibers 60 deg coplanar", 60, [[1, 0, 0], [0.5, np.sqrt(0.75), 0], [-0.5, np.sqrt(0.75), 0]]),
)


def sh_basis(dirs):
    """MRtrix3's (tournier07, non-legacy) lmax-8 basis at unit vectors dirs (N, 3): (N, 45)."""
    dirs = np.asarray(dirs, dtype=np.float64).reshape(-1, 3)
    theta = np.arccos(np.clip(dirs[:, 2], -1, 1))
    phi = np.arctan2(dirs[:, 1], dirs[:, 0])
    return real_sh_tournier(LMAX, theta, phi, legacy=False)[0]


def watson_legendre(kappa, lmax):
    """Legendre coefficients a_l of exp(kappa (t^2 - 1)) on [-1, 1] (Gauss-Legendre, exact to rounding)."""
    t, w = np.polynomial.legendre.leggauss(200)
    f = np.exp(kappa * (t * t - 1))
    a = np.zeros(lmax + 1)
    for l in range(0, lmax + 1, 2):
        a[l] = (2 * l + 1) / 2 * np.sum(w * f * np.polynomial.legendre.legval(t, [0] * l + [1]))
    return a


def lobe_coefficients(directions, fractions, kappa):
    """SH of each fraction_k * lobe(u_k), (K, 45), each lobe's projected peak scaled to 1."""
    a = watson_legendre(kappa, LMAX)
    peak = np.polynomial.legendre.legval(1.0, a)  # the projected lobe's value at its own axis
    degrees = np.concatenate([[l] * (2 * l + 1) for l in range(0, LMAX + 1, 2)])
    # Funk-Hecke / addition theorem: P_l(u.x) = 4 pi / (2l+1) sum_m Y_lm(u) Y_lm(x)
    scale = a[degrees] * 4 * np.pi / (2 * degrees + 1) / peak
    return np.asarray(fractions)[:, None] * sh_basis(directions) * scale[None, :]


def random_rotation(rng):
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def config_directions(config):
    name, angle, dirs = config
    if dirs is None:  # two fibers in the xz plane, `angle` apart
        t = np.radians(angle)
        dirs = [[0, 0, 1], [np.sin(t), 0, np.cos(t)]]
    return np.asarray(dirs, dtype=np.float64)


def make(samples, seed):
    rng = np.random.Generator(np.random.PCG64(seed))
    nx, ny, nz = len(CONFIGS), samples, len(NOISE)
    count = np.zeros((nx, ny, nz), dtype=np.int32)
    directions = np.full((nx, ny, nz, 3, 3), np.nan)
    fractions = np.full((nx, ny, nz, 3), np.nan)
    noise = np.zeros((nx, ny, nz, 45))
    for x, config in enumerate(CONFIGS):  # the draws in a fixed order: rotation, then noise per level
        base = config_directions(config)
        n = len(base)
        for y in range(ny):
            dirs = base @ random_rotation(rng).T
            dirs *= np.where(dirs[:, 2:3] < 0, -1, 1)  # canonical sign: z >= 0
            for z in range(nz):
                noise[x, y, z] = rng.normal(size=45)
                count[x, y, z] = n
                directions[x, y, z, :n] = dirs
                fractions[x, y, z, :n] = 1.0 / n
    # the noiseless lobes of all columns at once (the basis is evaluated once per direction)
    clean = np.zeros((nx, ny, 45))
    for x, config in enumerate(CONFIGS):
        n = len(config_directions(config))
        coeffs = lobe_coefficients(directions[x, :, 0, :n].reshape(-1, 3), np.full(ny * n, 1.0 / n), KAPPA)
        clean[x] = coeffs.reshape(ny, n, 45).sum(axis=1)
    coefficient_sigma = 1 / np.sqrt(45 / (4 * np.pi))  # unit noise std on the sphere
    sigma = np.asarray(NOISE)[None, None, :, None]
    return clean[:, :, None, :] + sigma * coefficient_sigma * noise, count, directions, fractions


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=here, help="output folder (default: beside this script)")
    p.add_argument("--samples", type=int, default=24, help="orientations per configuration (default 24)")
    p.add_argument("--seed", type=int, default=2026)
    args = p.parse_args()
    if args.samples < 1:
        p.error("--samples must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    sh, count, directions, fractions = make(args.samples, args.seed)
    affine = np.array([[2.0, 0, 0, -7.0], [0, 2.0, 0, -11.0], [0, 0, 2.0, -3.0], [0, 0, 0, 1]])
    nib.save(nib.Nifti1Image(sh.astype(np.float32), affine), os.path.join(args.out, "phantom_sh.nii.gz"))
    peaks = (directions * fractions[..., None]).reshape(count.shape + (9,))
    nib.save(nib.Nifti1Image(peaks.astype(np.float32), affine), os.path.join(args.out, "phantom_truth_peaks.nii.gz"))
    np.savez_compressed(os.path.join(args.out, "phantom_truth.npz"), count=count, directions=directions,
                        fractions=fractions, crossing_deg=np.array([c[1] for c in CONFIGS], dtype=np.float64),
                        config=np.array([c[0] for c in CONFIGS]), noise=np.array(NOISE), kappa=KAPPA,
                        seed=args.seed, lmax=LMAX, affine=affine)
    print(f"{args.out}: phantom_sh.nii.gz {count.shape} voxels x 45, phantom_truth.npz, phantom_truth_peaks.nii.gz")


if __name__ == "__main__":
    main()
