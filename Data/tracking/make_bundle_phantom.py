#!/usr/bin/python3
"""Synthetic FOD phantom of tube-shaped bundles with known centre curves: Data/tracking/bundles_*.

For tractography's bundle fidelity (Testing/validation/tracking_phantom.py): streamlines seeded in
a bundle should stay in it and fill it.  Ten bundles in five slabs of a 40 x 40 x 30 grid of
2 mm voxels (RAS, axis-aligned, centred on the origin), each slab in the plane z = const:

  z = -24 mm  straight   along x at y = -20 mm, the whole field (x -38..38 mm)
              arc        a half circle of radius 22 mm about (0, 8) in the xy plane
  z = -12 mm  cross90_a  along x at y = 0;  cross90_b  along y at x = 0: a 90-degree crossing
  z =   0 mm  cross45_a  along x at y = 0;  cross45_b  at 45 degrees through the origin
  z =  12 mm  cross30_a  along x at y = 0;  cross30_b  at 30 degrees through the origin
  z =  24 mm  kiss_a, kiss_b  two arcs of radius 40 mm bending away from each other whose centre
              curves come within 6 mm at x = 0 (tubes of radius 4 mm overlap there, parallel, over
              about 12 mm of their length): a kissing pair, touching tangentially then parting.

Every bundle is a tube of radius 4 mm about its centre curve with flat ends.  Slabs are 12 mm
apart, so two voxels of empty space lie between the tubes of neighbouring slabs and nothing
connects them.  At lmax 8 with these lobes two fibers 30 degrees apart give one merged maximum
halfway between them (Data/fibers/make_phantom.py): the FOD itself does not resolve the 30-degree
crossing, which is there to show what trackers do with it, not as a goal.

FOD: in each voxel, 4 x 4 x 4 sub-points; every sub-point inside a tube adds 1/64 of a fiber lobe
along the tube's local tangent there (the tube's direction, or the arc's tangent at the sub-point's
angle), so a voxel holds each bundle's lobe weighted by its volume fraction.  Where tubes overlap
(crossings, the kiss) the fractions sum above 1 and the voxel's FOD is divided by that sum (the
fibers share the voxel).  The lobe is make_phantom.py's (imported, not copied): a Watson lobe of
kappa 10 projected onto MRtrix3's tournier basis at lmax 8, whose projected peak is 1 at fraction 1.
Outside the tubes the FOD is exactly zero (the tracker's image support ends there).

Outputs (in --out, default beside this script):
  bundles_sh.nii.gz      4-D float32, 45 SH volumes (tk-track and tckgen read it)
  bundles_labels.nii.gz  4-D uint8 (X, Y, Z, 10): volume 0..9 is bundle b's voxels, those whose
                         volume fraction of b is at least 0.5 (seeding and coverage use them)
  bundles_truth.npz      names (10,); kind ('segment' or 'arc'); radius_mm; fractions (10, X, Y, Z)
                         float32, each bundle's volume fraction per voxel; curve_points (M, 3) and
                         curve_offsets (11,): bundle b's centre curve is curve_points[off[b]:off[b+1]]
                         in world mm (0.5 mm apart); segment (10, 2, 3) end points of straight ones
                         (NaN for arcs); arc (10, 6) centre xyz, radius, start and end angle (radians,
                         NaN for segments); affine; kappa; lmax; subsamples

Deterministic: no random numbers; regenerate with `make_bundle_phantom.py` (no arguments).
Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel).
"""
import argparse
import os
import sys

import nibabel as nib
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fibers"))
from make_phantom import KAPPA, LMAX, lobe_coefficients  # noqa: E402  the project's SH lobe

DIMS = (40, 40, 30)
VOXEL = 2.0
RADIUS = 4.0
SUB = 4  # sub-points per voxel axis
CORE = 0.5  # the label: volume fraction at least this
AFFINE = np.array([[VOXEL, 0, 0, -39.0], [0, VOXEL, 0, -39.0], [0, 0, VOXEL, -29.0], [0, 0, 0, 1]])
# name, kind, parameters: segment (p0, p1); arc (centre, radius, angle from, angle to) in the slab's plane
C30, S30 = np.cos(np.pi / 6), np.sin(np.pi / 6)
BUNDLES = (
    ("straight", "segment", ((-38, -20, -24), (38, -20, -24))),
    ("arc", "arc", ((0, 8, -24), 22.0, 0.0, np.pi)),
    ("cross90_a", "segment", ((-38, 0, -12), (38, 0, -12))),
    ("cross90_b", "segment", ((0, -38, -12), (0, 38, -12))),
    ("cross45_a", "segment", ((-38, 0, 0), (38, 0, 0))),
    ("cross45_b", "segment", ((-36, -36, 0), (36, 36, 0))),
    ("cross30_a", "segment", ((-38, 0, 12), (38, 0, 12))),
    ("cross30_b", "segment", ((-38 * C30, -38 * S30, 12), (38 * C30, 38 * S30, 12))),
    # kiss_a bends down (centre below), kiss_b up; the nearest points (0, -3) and (0, 3)
    ("kiss_a", "arc", ((0, -43, 24), 40.0, np.pi / 2 - np.arcsin(36 / 40), np.pi / 2 + np.arcsin(36 / 40))),
    ("kiss_b", "arc", ((0, 43, 24), 40.0, -np.pi / 2 - np.arcsin(36 / 40), -np.pi / 2 + np.arcsin(36 / 40))),
)


def inside_and_tangent(kind, params, pts):
    """For points (N, 3) in world mm: inside the tube (N,) bool and the centre curve's unit tangent
    at the nearest centre point (N, 3)."""
    if kind == "segment":
        p0, p1 = (np.asarray(p, dtype=np.float64) for p in params)
        axis = p1 - p0
        length = np.linalg.norm(axis)
        u = axis / length
        t = (pts - p0) @ u
        radial = np.linalg.norm(pts - p0 - t[:, None] * u, axis=1)
        inside = (t >= 0) & (t <= length) & (radial <= RADIUS)  # flat ends
        return inside, np.broadcast_to(u, pts.shape)
    centre, radius, a0, a1 = params
    d = pts - np.asarray(centre, dtype=np.float64)
    rho = np.hypot(d[:, 0], d[:, 1])
    ang = np.arctan2(d[:, 1], d[:, 0])
    ang = np.where(ang < a0 - 1e-12, ang + 2 * np.pi, ang)  # into [a0, a0 + 2 pi)
    inside = (ang <= a1) & (np.hypot(rho - radius, d[:, 2]) <= RADIUS)
    tangent = np.stack([-np.sin(ang), np.cos(ang), np.zeros_like(ang)], axis=1)
    return inside, tangent


def steps(length, spacing):
    """Steps of at most spacing that cover length.  A length within a billionth of a step of a
    whole number of steps is that number: cross30_b's 76 mm comes out of cos/sin and the norm as
    152.00000000000003 steps on one CPU and 152 on another, and a bare ceil made the committed
    curve one point longer or shorter by machine."""
    return int(np.ceil(length / spacing - 1e-9))


def centre_curve(kind, params, spacing=0.5):
    if kind == "segment":
        p0, p1 = (np.asarray(p, dtype=np.float64) for p in params)
        n = steps(np.linalg.norm(p1 - p0), spacing) + 1
        return p0 + np.linspace(0, 1, n)[:, None] * (p1 - p0)
    centre, radius, a0, a1 = params
    n = steps(radius * (a1 - a0), spacing) + 1
    a = np.linspace(a0, a1, n)
    return np.asarray(centre, dtype=np.float64) + np.stack([radius * np.cos(a), radius * np.sin(a), 0 * a], axis=1)


def make():
    ijk = np.stack(np.meshgrid(*[np.arange(n) for n in DIMS], indexing="ij"), axis=-1).reshape(-1, 3)
    centres = ijk * VOXEL + AFFINE[:3, 3]
    offsets = (np.arange(SUB) + 0.5) / SUB - 0.5  # sub-point offsets in voxels
    sub = np.stack(np.meshgrid(offsets, offsets, offsets, indexing="ij"), axis=-1).reshape(-1, 3) * VOXEL
    nvox = len(centres)
    fractions = np.zeros((len(BUNDLES), nvox))
    sh = np.zeros((nvox, 45))
    for b, (name, kind, params) in enumerate(BUNDLES):
        idx = np.flatnonzero(near_voxels(kind, params, centres))
        pts = (centres[idx, None, :] + sub[None, :, :]).reshape(-1, 3)
        inside, tangent = inside_and_tangent(kind, params, pts)
        owner = np.repeat(idx, len(sub))[inside]
        fractions[b] = np.bincount(owner, minlength=nvox) / len(sub)
        lobes = lobe_coefficients(tangent[inside], np.full(int(inside.sum()), 1.0 / len(sub)), KAPPA)
        for c in range(45):  # sum the sub-points' lobes per voxel
            sh[:, c] += np.bincount(owner, weights=lobes[:, c], minlength=nvox)
    total = fractions.sum(axis=0)
    sh /= np.maximum(total, 1.0)[:, None]
    return sh.reshape(DIMS + (45,)), fractions.reshape((len(BUNDLES),) + DIMS)


def near_voxels(kind, params, centres):
    """Voxels that may hold part of the tube: the tube widened by half a voxel's diagonal (and the
    segment lengthened by it)."""
    margin = VOXEL * np.sqrt(3) / 2
    if kind == "segment":
        p0, p1 = (np.asarray(p, dtype=np.float64) for p in params)
        u = (p1 - p0) / np.linalg.norm(p1 - p0)
        t = (centres - p0) @ u
        radial = np.linalg.norm(centres - p0 - t[:, None] * u, axis=1)
        return (t >= -margin) & (t <= np.linalg.norm(p1 - p0) + margin) & (radial <= RADIUS + margin)
    centre, radius, _, _ = params
    d = centres - np.asarray(centre, dtype=np.float64)
    return np.hypot(np.hypot(d[:, 0], d[:, 1]) - radius, d[:, 2]) <= RADIUS + margin


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=here, help="output folder (default: beside this script)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sh, fractions = make()
    labels = np.moveaxis(fractions >= CORE, 0, -1).astype(np.uint8)
    curves = [centre_curve(kind, params) for _, kind, params in BUNDLES]
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in curves])])
    segment = np.full((len(BUNDLES), 2, 3), np.nan)
    arc = np.full((len(BUNDLES), 6), np.nan)
    for b, (_, kind, params) in enumerate(BUNDLES):
        if kind == "segment":
            segment[b] = np.asarray(params, dtype=np.float64)
        else:
            arc[b] = np.concatenate([np.asarray(params[0], dtype=np.float64), params[1:]])
    nib.save(nib.Nifti1Image(sh.astype(np.float32), AFFINE), os.path.join(args.out, "bundles_sh.nii.gz"))
    nib.save(nib.Nifti1Image(labels, AFFINE), os.path.join(args.out, "bundles_labels.nii.gz"))
    np.savez_compressed(os.path.join(args.out, "bundles_truth.npz"), names=np.array([b[0] for b in BUNDLES]),
                        kind=np.array([b[1] for b in BUNDLES]), radius_mm=RADIUS,
                        fractions=fractions.astype(np.float32), curve_points=np.concatenate(curves),
                        curve_offsets=offsets, segment=segment, arc=arc, affine=AFFINE, kappa=KAPPA, lmax=LMAX,
                        subsamples=SUB, core_fraction=CORE)
    for b, (name, _, _) in enumerate(BUNDLES):
        print(f"{name:10s} voxels with any fraction {int((fractions[b] > 0).sum()):4d}, "
              f"labelled (>= {CORE}) {int(labels[..., b].sum()):4d}")
    print(f"{args.out}: bundles_sh.nii.gz {DIMS} x 45, bundles_labels.nii.gz, bundles_truth.npz")


if __name__ == "__main__":
    main()
