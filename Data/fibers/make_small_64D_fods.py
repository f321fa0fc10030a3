#!/usr/bin/python3
"""Make Data/fibers/small_64D_fod_{dipy,mrtrix}.nii.gz (and _sh.npy): one real DWI volume's
fiber ODFs as each tool writes them, in its own SH basis, for the basis detector's tests.

Input: DIPY's small_64D (10 x 10 x 10 voxels of a real brain, 64 directions at b = 1000 and
one b = 0, shipped in Debian's python3-dipy).
- small_64D_fod_dipy.nii.gz: DIPY's constrained spherical deconvolution with DIPY's defaults
  (response from auto_response_ssst, sh_order 8), saved as DIPY users do: shm_coeff as is,
  i.e. in DIPY's default basis, descoteaux07 legacy.
- small_64D_fod_mrtrix.nii.gz: MRtrix3's dwi2response tournier + dwi2fod csd -lmax 8 on the
  same data, converted to NIfTI by mrconvert: MRtrix3's basis, tournier07 (non-legacy).
- *_sh.npy: the same coefficients as a (voxels, 45) float32 array, voxels x fastest (the
  C tests read .npy).
Both keep the DWI's affine.  Run with Debian's /usr/bin/python3 (python3-dipy,
python3-nibabel) with MRtrix3's commands on PATH (Debian's mrtrix3).
"""
import os
import subprocess
import tempfile
import warnings

import nibabel as nib
import numpy as np
from dipy.core.gradients import gradient_table
from dipy.data import get_fnames
from dipy.reconst.csdeconv import ConstrainedSphericalDeconvModel, auto_response_ssst

warnings.simplefilter("ignore")
here = os.path.dirname(os.path.abspath(__file__))
fimg, fbval, fbvec = get_fnames("small_64D")
img = nib.load(fimg)


def save(sh, name):
    sh = np.asarray(sh, dtype=np.float32)
    nib.save(nib.Nifti1Image(sh, img.affine), os.path.join(here, name + ".nii.gz"))
    voxels = sh.transpose(2, 1, 0, 3).reshape(-1, sh.shape[-1])  # z, y, x order: x fastest
    np.save(os.path.join(here, name + "_sh.npy"), np.ascontiguousarray(voxels))


data = img.get_fdata()
gtab = gradient_table(fbval, fbvec)
response, _ = auto_response_ssst(gtab, data, roi_radii=10, fa_thr=0.5)
fit = ConstrainedSphericalDeconvModel(gtab, response, sh_order=8).fit(data)
save(fit.shm_coeff, "small_64D_fod_dipy")

with tempfile.TemporaryDirectory() as tmp:
    def run(*args):
        subprocess.run(["/usr/bin/" + args[0], "-quiet", "-force", "-nthreads", "1"] + list(args[1:]), check=True)
    run("mrconvert", fimg, "-fslgrad", fbvec, fbval, os.path.join(tmp, "dwi.mif"))
    run("dwi2response", "tournier", os.path.join(tmp, "dwi.mif"), os.path.join(tmp, "response.txt"),
        "-scratch", os.path.join(tmp, "scratch"))
    run("dwi2fod", "csd", os.path.join(tmp, "dwi.mif"), os.path.join(tmp, "response.txt"),
        os.path.join(tmp, "fod.mif"), "-lmax", "8")
    run("mrconvert", os.path.join(tmp, "fod.mif"), os.path.join(tmp, "fod.nii"))
    fod = nib.load(os.path.join(tmp, "fod.nii"))
    # mrconvert's own NIfTI, its header (MRtrix3's description) included; same affine as the DWI
    assert np.allclose(fod.affine, img.affine, atol=1e-4), (fod.affine, img.affine)
    sh = np.asarray(fod.dataobj, dtype=np.float32)
    nib.save(nib.Nifti1Image(sh, img.affine, fod.header), os.path.join(here, "small_64D_fod_mrtrix.nii.gz"))
    voxels = sh.transpose(2, 1, 0, 3).reshape(-1, sh.shape[-1])
    np.save(os.path.join(here, "small_64D_fod_mrtrix_sh.npy"), np.ascontiguousarray(voxels))
