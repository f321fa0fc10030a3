#!/usr/bin/python3
"""tk-fixels --lobes: each fixel's lobe mask on the sphere, checked against MRtrix3's own
sampling of the FOD (sh2amp at FIXEL_DIR/lobe_directions.txt, an independent evaluation of the
SH series, in MRtrix3's frame):
  - the file is a fixel data file MRtrix3 reads (mrinfo: N x D x 1, N = the index's fixels);
  - every fixel's mask is non-empty and a voxel's masks are disjoint, so the voxel's count is
    the number of its distinct labels;
  - with --fmls-no-thresholds every positive lobe is kept, so the union of a voxel's masks is
    exactly the directions where sh2amp's amplitude is positive (up to 1e-5 of the voxel's
    largest amplitude, where float and double may disagree on the sign), but in a voxel whose
    64 slots are full (noise ripples on the 5121 set), where it is within them;
  - every masked direction's amplitude is in its lobe (positive), with the default thresholds too;
  - each fixel's direction (directions.nii, fod2fixel's mean direction, validated against it by
    fixels_fod2fixel.py) is its mask's amplitude-weighted mean direction (the same cells; within
    1 degree for fixels of at least 5% of the largest AFD);
  - --dirpeak: the set direction nearest each fixel's peak lies in that fixel's mask (FMLS keeps
    a peak only there);
  - the AFD is the masked amplitudes' integral: the sum of amplitude x solid angle (the
    direction's spherical Voronoi cell among the set and its antipodes, scipy) over the mask
    is the fixel's AFD (median and AFD-weighted mean within 1%: the cells are a quadrature of
    their own, not the set's weights);
  - --maxnum 1: one mask per voxel, the first fixel's of the full run.
Exits 77 (skip) without MRtrix3's sh2amp.

usage: tk_fixels_lobes.py TK_FIXELS FOD [TK_FIXELS OPTIONS...] (e.g. --directions 5121)"""
import os
import shutil
import sys
import tempfile

import nibabel as nib
import numpy as np
from scipy.spatial import SphericalVoronoi

from fixel_script_util import check, run


def load(d, name):
    return np.asarray(nib.load(os.path.join(d, name)).dataobj)


def fixels(tk, fod, d, extra):
    run([tk, fod, d, "--nii", "--lobes", "lobes.nii", "--afd", "afd.nii", "-q"] + extra + sys.argv[3:])
    index = load(d, "index.nii")
    n = int(index[..., 0].sum())
    lobes = load(d, "lobes.nii")
    dirs = np.loadtxt(os.path.join(d, "lobe_directions.txt"))
    check(lobes.dtype == np.uint8 and lobes.shape == (n, len(dirs), 1), "lobes.nii: N x D x 1 uint8, N = %d, D = %d: %s"
          % (n, len(dirs), lobes.shape))
    check(set(np.unique(lobes)) <= {0, 1}, "lobes.nii holds only 0 and 1")
    return index, lobes[..., 0].astype(bool), dirs, load(d, "afd.nii").ravel(), load(d, "directions.nii")[..., 0]


def main():
    tk, fod = sys.argv[1], sys.argv[2]
    if not shutil.which("sh2amp"):
        print("SKIPPED: no sh2amp (MRtrix3) on PATH")
        return 77
    tmp = tempfile.mkdtemp()
    try:
        full = os.path.join(tmp, "full")
        index, masks, dirs, afd, means = fixels(tk, fod, full, ["--fmls-no-thresholds"])
        info = run(["mrinfo", os.path.join(full, "lobes.nii"), "-size"]).stdout.split()
        check(info == [str(masks.shape[0]), str(len(dirs)), "1"], "mrinfo reads lobes.nii as N x D x 1: %s" % info)
        check(np.allclose(np.linalg.norm(dirs, axis=1), 1, atol=1e-8), "lobe_directions.txt: unit rows")
        amp_path = os.path.join(tmp, "amp.nii")
        run(["sh2amp", fod, os.path.join(full, "lobe_directions.txt"), amp_path, "-quiet"])
        amp_img = nib.load(amp_path)
        amp = np.asarray(amp_img.dataobj, dtype=np.float64)
        # voxel (i, j, k) of our index (the FOD's file axes) in sh2amp's grid, by the affines
        to_amp = np.linalg.inv(amp_img.affine) @ nib.load(os.path.join(full, "index.nii")).affine
        # each direction's solid angle: its spherical Voronoi cell among the set and its
        # antipodes (scipy), an independent quadrature; the FOD is antipodal, so a lobe's
        # integral over the sphere (fod2fixel's AFD: the lobe and its antipode) is twice the
        # cells' sum over the mask
        solid = 2 * SphericalVoronoi(np.vstack([dirs, -dirs])).calculate_areas()[:len(dirs)]
        worst_cover, rel, angle = 0, [], []
        for ijk in zip(*np.nonzero(index[..., 0])):
            c, o = int(index[ijk + (0,)]), int(index[ijk + (1,)])
            a = amp[tuple(np.rint(to_amp @ np.r_[ijk, 1]).astype(int)[:3])]
            m = masks[o:o + c]
            check(m.any(axis=1).all(), "voxel %s: a fixel with an empty mask" % (ijk,))
            check(m.sum(axis=0).max() <= 1, "voxel %s: masks overlap" % (ijk,))
            tol = 1e-5 * np.abs(a).max()
            union = m.any(axis=0)
            check((a[union] > -tol).all(), "voxel %s: a masked direction of negative amplitude %g" % (ijk, a[union].min()))
            diff = (union != (a > 0)) & (np.abs(a) > tol)
            if c == 64:  # the slots are full: lobes past the 64th (noise ripples) are in no mask
                diff &= union
            wrong = np.count_nonzero(diff)
            worst_cover = max(worst_cover, wrong)
            rel += [abs((a[m[f]] * solid[m[f]]).sum() - afd[o + f]) / afd[o + f] for f in range(c)]
            for f in range(c):  # the mask's mean direction: each weighted, turned to the fixel's side
                u = dirs[m[f]] * np.sign(dirs[m[f]] @ means[o + f])[:, None]
                mean = (u * (a[m[f]] * solid[m[f]])[:, None]).sum(axis=0)
                if afd[o + f] > 0.05 * afd.max():
                    angle.append(np.degrees(np.arccos(min(1.0, abs(mean @ means[o + f]) / np.linalg.norm(mean)))))
        check(worst_cover == 0, "--fmls-no-thresholds: the masks' union differs from the positive amplitudes in %d "
              "directions of a voxel" % worst_cover)
        check(np.median(rel) < 0.01, "AFD = the masked amplitudes' integral: median relative difference %.3g"
              % np.median(rel))
        total = np.sum(np.array(rel) * afd) / afd.sum()  # the AFD-weighted mean: small lobes count little
        check(total < 0.01, "AFD = the masked amplitudes' integral: AFD-weighted difference %.3g" % total)
        check(max(angle) < 1.0, "directions.nii = the masks' weighted mean directions: up to %.3g degrees" % max(angle))
        # default thresholds and --dirpeak: masks within the positive amplitudes, peaks inside
        peak = os.path.join(tmp, "peak")
        index_p, masks_p, _, _, pdirs = fixels(tk, fod, peak, ["--dirpeak"])
        for ijk in zip(*np.nonzero(index_p[..., 0])):
            c, o = int(index_p[ijk + (0,)]), int(index_p[ijk + (1,)])
            a = amp[tuple(np.rint(to_amp @ np.r_[ijk, 1]).astype(int)[:3])]
            check((a[masks_p[o:o + c].any(axis=0)] > -1e-5 * np.abs(a).max()).all(), "default: a negative direction")
            for f in range(c):
                nearest = int(np.argmax(np.abs(dirs @ pdirs[o + f])))
                check(masks_p[o + f, nearest], "voxel %s fixel %d: the peak's nearest direction is not in its mask"
                      % (ijk, f))
        # --maxnum 1: the first mask of each voxel of the same run
        one = os.path.join(tmp, "one")
        index_1, masks_1, _, _, _ = fixels(tk, fod, one, ["--dirpeak", "--maxnum", "1"])
        check(np.array_equal(index_1[..., 0] > 0, index_p[..., 0] > 0) and index_1[..., 0].max() == 1, "--maxnum 1")
        firsts = index_p[..., 1][index_p[..., 0] > 0]
        check(np.array_equal(masks_1, masks_p[np.sort(firsts)]), "--maxnum 1: the first fixel's mask")
        print("tk-fixels --lobes: %d fixels, masks = sh2amp's positive directions, AFD from the masks: median %.2g, "
              "AFD-weighted %.2g relative; mean directions from the masks within %.2g degrees"
              % (len(afd), np.median(rel), total, max(angle)))
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
