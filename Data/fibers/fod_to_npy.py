#!/usr/bin/python3
"""Make Data/fibers/small_101D_fod_sh.npy from small_101D_fod.nii.gz: the same coefficients
as a (voxels, 45) float32 array, voxels in NIfTI order (x fastest), for programs that read
.npy rather than NIfTI (tk-bench fibers --input).  Run with Debian's /usr/bin/python3
(python3-nibabel)."""
import os

import nibabel as nib
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
data = np.asarray(nib.load(os.path.join(here, "small_101D_fod.nii.gz")).dataobj, dtype=np.float32)
sh = data.transpose(2, 1, 0, 3).reshape(-1, data.shape[-1])  # z, y, x order: x fastest
np.save(os.path.join(here, "small_101D_fod_sh.npy"), np.ascontiguousarray(sh, dtype=np.float32))
