#!/usr/bin/python3
"""Make Data/fibers/small_101D_fod.nii.gz: a real FOD volume from real public DWI.

Input: DIPY's small_101D (6 x 10 x 10 voxels of 2.5 mm, 101 diffusion directions, shipped in
Debian's python3-dipy; sform and qform code 1, axes LAS, 0.9 degrees oblique).  Its b-values
are spread out (a DSI-like sampling), which MRtrix3's dwi2response/dwi2fod reject ("not a
HARDI sequence"), so DIPY's constrained spherical deconvolution (CSD) fits it: response from
the auto_response_ssst FA criterion, lmax 8.

Frames.  DIPY fits in the frame of its b-vectors, the voxel axes (FSL's bvec frame, which is
the voxel frame here because det(affine) < 0).  MRtrix3's SH are defined in world (scanner,
RAS) axes.  The output carries the source's sform and qform (codes and matrices) and holds
the coefficients in MRtrix3's basis (tournier07, non-legacy) and frame: each world direction
w of a dense sphere takes the DIPY fit's value at the voxel direction R^-1 w (R: the sform's
3x3 with unit columns, the rotation ITK, MRtrix3 and nibabel give the image) and the
tournier07 coefficients are the least-squares fit to those values (exact: a rotated degree-8
function is a degree-8 function).  So sh2peaks, tk-fibers and DIPY read the same fibers at
the same world directions.  The SH are on the 4th axis of a 4-D NIfTI.
Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel).
"""
import argparse
import os
import warnings

import nibabel as nib
import numpy as np
from dipy.core.gradients import gradient_table
from dipy.data import get_fnames, get_sphere
from dipy.reconst.csdeconv import ConstrainedSphericalDeconvModel, auto_response_ssst
from dipy.reconst.shm import real_sh_descoteaux, real_sh_tournier


def dipy_fit():
    """The source image and DIPY's CSD fit of it (descoteaux07 legacy basis, voxel frame)."""
    warnings.simplefilter("ignore")
    fimg, fbval, fbvec = get_fnames("small_101D")
    img = nib.load(fimg)
    data = img.get_fdata()
    gtab = gradient_table(fbval, fbvec)
    response, _ = auto_response_ssst(gtab, data, roi_radii=10, fa_thr=0.5)
    return img, ConstrainedSphericalDeconvModel(gtab, response, sh_order=8).fit(data)


def unit_columns(affine):
    """Voxel-to-world rotation of directions: the 3x3 of the affine with unit columns."""
    return affine[:3, :3] / np.linalg.norm(affine[:3, :3], axis=0)


def angles(v):
    return np.arccos(np.clip(v[:, 2], -1, 1)), np.arctan2(v[:, 1], v[:, 0])


def world_tournier(coeffs, rotation):
    """DIPY's coefficients (voxel frame) as MRtrix3's (tournier07, world frame): world
    directions w of a dense sphere, DIPY's values at R^-1 w, least-squares tournier07 fit."""
    world = get_sphere("repulsion724").vertices
    voxel = np.linalg.solve(rotation, world.T).T
    voxel /= np.linalg.norm(voxel, axis=1)[:, None]
    values = coeffs.reshape(-1, 45) @ real_sh_descoteaux(8, *angles(voxel), legacy=True)[0].T
    sh = np.linalg.lstsq(real_sh_tournier(8, *angles(world), legacy=False)[0], values.T, rcond=None)[0].T
    return sh.reshape(coeffs.shape)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                   help="output folder (default: the script's, Data/fibers)")
    args = p.parse_args()
    img, fit = dipy_fit()
    sform = img.header.get_sform()
    sh = world_tournier(fit.shm_coeff, unit_columns(sform))
    header = nib.Nifti1Header()
    header.set_data_dtype(np.float32)
    header.set_xyzt_units("mm", "sec")
    out = nib.Nifti1Image(sh.astype(np.float32), None, header)
    out.header.set_qform(img.header.get_qform(), code=int(img.header["qform_code"]))
    out.header.set_sform(sform, code=int(img.header["sform_code"]))
    nib.save(out, os.path.join(args.out, "small_101D_fod.nii.gz"))


if __name__ == "__main__":
    main()
