#!/usr/bin/python3
"""A 4-D NIfTI (SH coefficients or any per-voxel vector on the 4th axis: MRtrix3's dwi2fod,
DIPY's CSD) as the NRRD vector volume 3D Slicer loads as one vector volume node, which the
Fiber Directions module takes as its input.

    nifti_to_vector_nrrd.py fod.nii.gz fod.nrrd

The NRRD holds the same numbers with the vector first (kinds: vector domain domain domain) and
the NIfTI's voxel-to-world transform (sform, else qform, as nibabel reads it) written in
Slicer's file frame, LPS.  A .mif goes through mrconvert fod.mif fod.nii.gz first (tk-fibers
itself reads .mif on the command line).  Needs nibabel and numpy (Debian: python3-nibabel).
"""
import argparse
import gzip
import os
import sys

import nibabel as nib
import numpy as np


def vector_nrrd(nifti_path, nrrd_path):
    img = nib.load(nifti_path)
    if len(img.shape) != 4:
        raise ValueError("%s: expected a 4-D image (vectors on the 4th axis), got shape %s" % (nifti_path, img.shape))
    data = np.asarray(img.dataobj, dtype=np.float32)
    affine = img.affine
    ras_to_lps = np.diag([-1.0, -1.0, 1.0])
    directions = ras_to_lps @ affine[:3, :3]  # column c: one voxel step along axis c, in LPS mm
    origin = ras_to_lps @ affine[:3, 3]

    def vec(v):
        return "(" + ",".join("%.17g" % x for x in v) + ")"

    header = [
        "NRRD0004",
        "# %s as a vector volume (nifti_to_vector_nrrd.py)" % os.path.basename(nifti_path),
        "type: float",
        "dimension: 4",
        "space: left-posterior-superior",
        "sizes: %d %d %d %d" % (data.shape[3], data.shape[0], data.shape[1], data.shape[2]),
        "space directions: none " + " ".join(vec(directions[:, c]) for c in range(3)),
        "kinds: vector domain domain domain",
        "endian: little",
        "encoding: gzip",
        "space origin: " + vec(origin),
    ]
    # the vector fastest, then x, y, z: (z, y, x, vector) in C order
    body = np.ascontiguousarray(data.transpose(2, 1, 0, 3)).astype("<f4").tobytes()
    tmp = nrrd_path + ".part"
    with open(tmp, "wb") as f:
        f.write(("\n".join(header) + "\n\n").encode("ascii"))
        f.write(gzip.compress(body, mtime=0))
    os.replace(tmp, nrrd_path)  # all or nothing


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("nifti", help="4-D NIfTI (.nii, .nii.gz)")
    parser.add_argument("nrrd", help="output vector volume (.nrrd)")
    args = parser.parse_args()
    if not args.nrrd.endswith(".nrrd"):
        parser.error("the output must be a .nrrd file: %s" % args.nrrd)
    try:
        vector_nrrd(args.nifti, args.nrrd)
    except (OSError, ValueError, nib.filebasedimages.ImageFileError) as e:
        sys.exit("nifti_to_vector_nrrd.py: %s" % e)


if __name__ == "__main__":
    main()
