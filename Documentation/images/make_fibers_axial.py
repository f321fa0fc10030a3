#!/usr/bin/python3
"""Draws Documentation/images/fibers_axial.png (the Slicer extension's screenshot): the
fiber directions tk-fibers finds in the bundled FOD volume, one axial slice, as line glyphs
coloured by direction (red |x|, green |y|, blue |z|) over the largest peak amplitude.

    build/bin/tk-fibers Data/fibers/small_101D_fod.nii.gz /tmp/peaks.nii.gz --amplitudes /tmp/amp.nii.gz
    Documentation/images/make_fibers_axial.py /tmp/peaks.nii.gz /tmp/amp.nii.gz [SLICE]   (the picture: slice 3)

Needs nibabel and matplotlib (Debian: python3-nibabel, python3-matplotlib)."""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nibabel as nib  # noqa: E402
import numpy as np  # noqa: E402


def main(peaks_path, amps_path, slice_arg=None):
    img = nib.load(peaks_path)
    peaks = np.asarray(img.dataobj, dtype=float)  # x, y, z, 3 * num (RAS vectors)
    # RAS vectors into voxel axes, where the picture is drawn (the bundled volume is LAS)
    to_voxel = np.linalg.inv(img.affine[:3, :3] / np.linalg.norm(img.affine[:3, :3], axis=0))
    amps = np.asarray(nib.load(amps_path).dataobj, dtype=float)    # x, y, z, num
    k = int(slice_arg) if slice_arg is not None else peaks.shape[2] // 2
    nx, ny = peaks.shape[:2]
    largest = np.nan_to_num(amps[:, :, k, 0])
    fig, ax = plt.subplots(figsize=(6, 6 * ny / nx))
    ax.imshow(largest.T, origin="lower", cmap="gray", extent=(-0.5, nx - 0.5, -0.5, ny - 0.5))
    scale = 0.45 / max(np.nanmax(amps[:, :, k, :]), 1e-12)  # the largest peak spans most of a voxel
    for i in range(nx):
        for j in range(ny):
            for p in range(peaks.shape[3] // 3):
                v = peaks[i, j, k, 3 * p:3 * p + 3]
                if not np.all(np.isfinite(v)) or not v.any():
                    continue  # ITK's NIfTI writer keeps NaN; absent peaks may read back as 0
                colour = np.abs(v) / np.linalg.norm(v)
                d = to_voxel @ v * scale  # in-plane projection, voxel axes
                ax.plot([i - d[0], i + d[0]], [j - d[1], j + d[1]], color=colour, lw=2.5, solid_capstyle="round")
    ax.set_xlim(-0.5, nx - 0.5)
    ax.set_ylim(-0.5, ny - 0.5)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title("TensorKernels fiber directions, axial slice %d" % k, fontsize=10)
    fig.tight_layout()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fibers_axial.png")
    fig.savefig(out, dpi=100)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
