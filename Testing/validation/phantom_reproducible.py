#!/usr/bin/python3
"""The committed phantom (Data/fibers/phantom_*) is what make_phantom.py makes: regenerate it
into a temporary folder and compare every array.  Exit 1 naming the first difference."""
import os
import subprocess
import sys
import tempfile

try:
    import nibabel as nib
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: needs numpy and nibabel ({e})")
    sys.exit(0)

data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Data", "fibers")
with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([sys.executable, os.path.join(data, "make_phantom.py"), "--out", tmp], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"make_phantom.py failed:\n{r.stderr}")
    for name in ("phantom_sh.nii.gz", "phantom_truth_peaks.nii.gz"):
        a, b = nib.load(os.path.join(data, name)), nib.load(os.path.join(tmp, name))
        if not np.array_equal(np.asarray(a.dataobj), np.asarray(b.dataobj), equal_nan=True):
            sys.exit(f"{name}: the committed data differ from make_phantom.py's output")
        if not np.allclose(a.affine, b.affine):
            sys.exit(f"{name}: the committed affine differs from make_phantom.py's")
    a, b = np.load(os.path.join(data, "phantom_truth.npz")), np.load(os.path.join(tmp, "phantom_truth.npz"))
    for key in b.files:
        if key not in a.files or not np.array_equal(a[key], b[key], equal_nan=a[key].dtype.kind == "f"):
            sys.exit(f"phantom_truth.npz: array '{key}' differs from make_phantom.py's output")
print("the committed phantom matches make_phantom.py")
