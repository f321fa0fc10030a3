#!/usr/bin/python3
"""Make Data/fibers/small_101D_fod.nii.gz: a real FOD volume from real public DWI.

Input: DIPY's small_101D (6 x 10 x 10 voxels, 101 diffusion directions, shipped in Debian's
python3-dipy).  Its b-values are spread out (a DSI-like sampling), which MRtrix3's
dwi2response/dwi2fod reject ("not a HARDI sequence"), so DIPY's constrained spherical
deconvolution (CSD) fits it: response from the auto_response_ssst FA criterion, lmax 8.
The coefficients are written in MRtrix3's basis (tournier07, non-legacy) as a 4-D NIfTI
with the SH on the 4th axis, so sh2peaks, tk-fibers and DIPY read the same file; the
image is axis-aligned, so world and voxel frames agree.
Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel).
"""
import os
import warnings

import nibabel as nib
import numpy as np
from dipy.core.gradients import gradient_table
from dipy.data import get_fnames, get_sphere
from dipy.reconst.csdeconv import ConstrainedSphericalDeconvModel, auto_response_ssst
from dipy.reconst.shm import sf_to_sh, sh_to_sf

warnings.simplefilter("ignore")
here = os.path.dirname(os.path.abspath(__file__))
fimg, fbval, fbvec = get_fnames("small_101D")
img = nib.load(fimg)
data = img.get_fdata()
gtab = gradient_table(fbval, fbvec)
response, _ = auto_response_ssst(gtab, data, roi_radii=10, fa_thr=0.5)
model = ConstrainedSphericalDeconvModel(gtab, response, sh_order=8)
fit = model.fit(data)
# DIPY's default basis (descoteaux07, legacy) to MRtrix3's, through a dense sphere
sphere = get_sphere("repulsion724")
sf = sh_to_sf(fit.shm_coeff, sphere, sh_order=8)
sh = sf_to_sh(sf, sphere, sh_order=8, basis_type="tournier07", legacy=False)
affine = np.diag([2.0, 2.0, 2.0, 1.0])  # 2 mm isotropic, axis-aligned (the source has no orientation)
nib.save(nib.Nifti1Image(sh.astype(np.float32), affine), os.path.join(here, "small_101D_fod.nii.gz"))
