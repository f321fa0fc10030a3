#!/usr/bin/env python3
"""The Python side of scripts/demo.sh: fiber peaks of the bundled real FOD volume and the
eigenpairs of the bundled crossing-fiber tensors, through the tensorkernels package.

  python demo.py FOD.nii.gz TENSORS.npy OUTPUT_DIR

Writes OUTPUT_DIR/small_101D_peaks_python.npy (x, y, z, peak, 3: directions times amplitudes,
as sh2peaks lays them out) and prints a summary.
"""
import sys
import time
from pathlib import Path

import nibabel as nib
import numpy as np

import tensorkernels as tk


def main(fod_path, tensors_path, out_dir):
    img = nib.load(fod_path)
    # NIfTI data come in Fortran order (x fastest); the core wants each voxel's coefficients
    # together (C order), so this is the one deliberate copy, said here rather than hidden.
    sh = np.ascontiguousarray(np.asarray(img.dataobj, dtype=np.float32))
    t0 = time.perf_counter()
    # MRtrix3's basis (the file's, written by dwi2fod): directions come out in world RAS.
    p = tk.fibers.peaks(sh, num_peaks=3, basis="tournier")
    ms = (time.perf_counter() - t0) * 1e3
    found = np.isfinite(p.amplitudes).sum(axis=-1)
    print(f"fibers.peaks: {sh.shape[:-1]} voxels of lmax {tk.fibers.lmax_for_count(sh.shape[-1])} in {ms:.1f} ms; "
          f"voxels with 1/2/3 peaks: {[(found == k).sum() for k in (1, 2, 3)]}")
    out = Path(out_dir) / "small_101D_peaks_python.npy"
    np.save(out, p.directions * p.amplitudes[..., None])
    print(f"  output: {out} (directions x amplitudes, world RAS)")

    tensors = np.load(tensors_path)  # (16, 15): packed order-4 tensors in 3-D, float64
    e = tk.eigenpairs(tensors, order=4, dim=3)
    maxima = np.array([tk.STABILITY[s] == "max" for s in e.stability])
    print(f"eigenpairs: {maxima.sum()} local maxima over the {tensors.shape[0]} tensors of {tensors_path} "
          f"({len(e.tensor)} distinct pairs in all); tensor 0's maxima:")
    for lam, x in zip(e.eigenvalues[(e.tensor == 0) & maxima], e.eigenvectors[(e.tensor == 0) & maxima]):
        print(f"  lambda {lam:8.4f}  x ({x[0]:+.4f}, {x[1]:+.4f}, {x[2]:+.4f})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
