#!/usr/bin/python3
"""Make Data/fibers/small_64D_response.txt: MRtrix3's single-fibre response function
(`dwi2response tournier`, Debian's mrtrix3 3.0.3) of DIPY's small_64D DWI (10 x 10 x 10 voxels
of 2 mm, 64 directions at b = 1000, shipped in Debian's python3-dipy).

Testing/validation/fibers_real.py makes its MRtrix3 FODs with `dwi2fod csd -lmax 8` from this
response: dwi2response takes about 20 s of CPU (100 s on a busy 2-core machine), too long to
repeat for every test run, and a response is a zonal (axially symmetric) function, the same
whatever the image's orientation, so one serves the oblique, flipped and sform copies too.
Deterministic: two runs agree to 1e-12.  DIPY ships small_64D's b-vectors as 65 rows of
3 with NaN for the b = 0 volume; they are written here as FSL's 3 rows with zeros.  Run with
Debian's /usr/bin/python3 (python3-dipy, python3-nibabel) and MRtrix3 on PATH.
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
p.add_argument("--out", default=os.path.join(here, "small_64D_response.txt"))
args = p.parse_args()

fimg, fbval, fbvec = get_fnames("small_64D")
bvals, bvecs = read_bvals_bvecs(fbval, fbvec)
tmp = tempfile.mkdtemp(prefix="small_64D_response_")
try:
    np.savetxt(os.path.join(tmp, "bvecs"), np.nan_to_num(bvecs).T, fmt="%.10f")
    np.savetxt(os.path.join(tmp, "bvals"), bvals[None], fmt="%.6f")
    r = subprocess.run(["dwi2response", "tournier", "-quiet", "-force", "-nthreads", "1", "-fslgrad",
                        os.path.join(tmp, "bvecs"), os.path.join(tmp, "bvals"), fimg, os.path.join(tmp, "response.txt")],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"dwi2response failed ({r.returncode}):\n{r.stderr}")
    # keep the coefficients only: the header's command history names temporary files
    with open(os.path.join(tmp, "response.txt")) as f:
        coeffs = [line for line in f if not line.startswith("#")]
    with open(args.out, "w") as f:
        f.write("# dwi2response tournier of DIPY's small_64D (Data/fibers/make_small_64D_response.py)\n")
        f.writelines(coeffs)
finally:
    shutil.rmtree(tmp)
