#!/usr/bin/python3
"""The committed phantom (Data/fibers/phantom_*) is what make_phantom.py makes: regenerate it
into a temporary folder and compare every array.  Exit 1 naming the first difference.

Floating-point arrays match to 64 units in the last place of their own precision, relative
to the array's largest entry, with NaN in the same places; integers exactly.  Bit-for-bit
equality does not hold across machines: numpy picks its exp/arccos/arctan2 kernels, and
OpenBLAS its matrix-product kernels, by the CPU's SIMD features.  On another AMD EPYC the
regenerated SH differed from the committed ones in 71 of 34,560 float32 entries, by at most
1.1e-16 (entries up to 0.45); on an Intel Xeon the fiber directions (rotated by a matrix
product) in 1,424 of 4,896 entries, by at most 1.2e-15, 5.5 units of 2.2e-16.  Any change to
what the script makes moves entries by far more than 64 units."""
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


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return np.array_equal(a, b)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    scale = np.nanmax(np.abs(a)) if np.isfinite(a).any() else 0.0
    return bool(np.all(np.abs(a[~np.isnan(a)] - b[~np.isnan(b)]) <= 64 * np.finfo(a.dtype).eps * scale))


data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Data", "fibers")
with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([sys.executable, os.path.join(data, "make_phantom.py"), "--out", tmp], capture_output=True,
                       text=True)
    if r.returncode:
        sys.exit(f"make_phantom.py failed:\n{r.stderr}")
    for name in ("phantom_sh.nii.gz", "phantom_truth_peaks.nii.gz"):
        a, b = nib.load(os.path.join(data, name)), nib.load(os.path.join(tmp, name))
        if not same(a.dataobj, b.dataobj):
            sys.exit(f"{name}: the committed data differ from make_phantom.py's output")
        if not np.allclose(a.affine, b.affine):
            sys.exit(f"{name}: the committed affine differs from make_phantom.py's")
    a, b = np.load(os.path.join(data, "phantom_truth.npz")), np.load(os.path.join(tmp, "phantom_truth.npz"))
    for key in b.files:
        if key not in a.files or not same(a[key], b[key]):
            sys.exit(f"phantom_truth.npz: array '{key}' differs from make_phantom.py's output")
print("the committed phantom matches make_phantom.py")
