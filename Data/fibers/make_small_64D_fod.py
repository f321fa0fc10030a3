#!/usr/bin/python3
"""Make Data/fibers/small_64D_fod.nii.gz: MRtrix3's FOD of DIPY's small_64D DWI, the way an
MRtrix3 user makes one: `mrconvert -fslgrad` and `dwi2fod csd -lmax 8` with the response of
small_64D_response.txt (`dwi2response tournier`, make_small_64D_response.py), Debian's
mrtrix3 3.0.3.  10 x 10 x 10 voxels of 2 mm in the source's geometry (axes PLS, 14 degrees
oblique, sform = qform, code 1); MRtrix3's basis (tournier07) in world axes.

The file the real-FOD validation (Testing/validation/fibers_real.py, "MRtrix3 source") makes
in its run, committed for tests that need a real MRtrix3 FOD: voxel (4, 0, 9) holds a strict
local maximum of amplitude 0.1753 (19% of the voxel's largest) at (-0.953, 0.237, 0.189)
that sh2peaks -threshold 0 reports (issue 20, item 4).  Deterministic (dwi2fod fits each
voxel alone).  Run with Debian's /usr/bin/python3 (python3-dipy, python3-nibabel) and MRtrix3
on PATH.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from dipy.data import get_fnames
from dipy.io import read_bvals_bvecs

here = os.path.dirname(os.path.abspath(__file__))
p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--out", default=os.path.join(here, "small_64D_fod.nii.gz"))
args = p.parse_args()

fimg, fbval, fbvec = get_fnames("small_64D")
bvals, bvecs = read_bvals_bvecs(fbval, fbvec)
tmp = tempfile.mkdtemp(prefix="small_64D_fod_")
try:
    # DIPY ships 65 rows of 3 with NaN for the b = 0 volume; FSL's layout is 3 rows, zeros there
    np.savetxt(os.path.join(tmp, "bvecs"), np.nan_to_num(bvecs).T, fmt="%.10f")
    np.savetxt(os.path.join(tmp, "bvals"), bvals[None], fmt="%.6f")
    for cmd in (["mrconvert", "-quiet", "-force", "-fslgrad", os.path.join(tmp, "bvecs"), os.path.join(tmp, "bvals"),
                 fimg, os.path.join(tmp, "dwi.mif")],
                ["dwi2fod", "-quiet", "-force", "csd", "-lmax", "8", os.path.join(tmp, "dwi.mif"),
                 os.path.join(here, "small_64D_response.txt"), args.out]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
finally:
    shutil.rmtree(tmp)
