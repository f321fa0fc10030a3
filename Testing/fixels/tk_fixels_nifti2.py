#!/usr/bin/python3
"""tk-fixels --nii past NIfTI-1's 32,767 voxels an axis: a FOD of more fixels than that (the
bundled small_64D FOD tiled 16 times along z, ~35,000 fixels) written as .nii.  As MRtrix3's
own writer does (File::NIfTI::version: NIfTI-2 where an axis exceeds int16), the N x 3 x 1 and
N x 1 x 1 files are NIfTI-2 and the index, whose axes are short, NIfTI-1; MRtrix3 reads the
directory (mrinfo on every file, fixel2voxel sum and count) and finds exactly what it finds in
the same run's .mif directory; nibabel reads the NIfTI-2 files as the .mif's values.  With
fod2fixel on PATH, its -afd afd.nii of the same FOD is checked to be NIfTI-2 too (fod2fixel
writes its index and directions as .mif whatever the metric's name).
Exits 77 (skip) without MRtrix3.

usage: tk_fixels_nifti2.py TK_FIXELS FOD"""
import os
import shutil
import struct
import sys
import tempfile

import nibabel as nib
import numpy as np

from fixel_script_util import check, run


def nifti_version(path):
    with open(path, "rb") as f:
        size = struct.unpack("<i", f.read(4))[0]
    return {348: 1, 540: 2}.get(size)


def main():
    tk, fod = sys.argv[1], sys.argv[2]
    if not shutil.which("fixel2voxel"):
        print("SKIPPED: no fixel2voxel (MRtrix3) on PATH")
        return 77
    tmp = tempfile.mkdtemp()
    try:
        img = nib.load(fod)
        tiled = os.path.join(tmp, "tiled.nii")
        nib.save(nib.Nifti1Image(np.tile(np.asarray(img.dataobj, np.float32), (1, 1, 16, 1)), img.affine), tiled)
        dirs = {}
        for ext in (".nii", ".mif"):
            d = os.path.join(tmp, "fx" + ext[1:])
            extra = ["--nii"] if ext == ".nii" else []
            run([tk, tiled, d, "--afd", "afd" + ext, "--peak-amp", "amp" + ext, "--lobes", "lobes" + ext, "-q"] + extra)
            dirs[ext] = d
        d = dirs[".nii"]
        n = int(run(["mrinfo", os.path.join(d, "directions.nii"), "-size"]).stdout.split()[0])
        check(n > 32767, "the tiled FOD has %d fixels, not more than 32767" % n)
        check(nifti_version(os.path.join(d, "index.nii")) == 1, "index.nii (short axes): NIfTI-1")
        for name in ("directions.nii", "afd.nii", "amp.nii", "lobes.nii"):
            check(nifti_version(os.path.join(d, name)) == 2, "%s (%d fixels): NIfTI-2" % (name, n))
            size = run(["mrinfo", os.path.join(d, name), "-size"]).stdout.split()
            check(size[0] == str(n), "mrinfo %s: %s fixels" % (name, size[0]))
            ours = np.asarray(nib.load(os.path.join(d, name)).dataobj)
            mif = os.path.join(tmp, name + ".nii")
            run(["mrconvert", os.path.join(dirs[".mif"], name.replace(".nii", ".mif")), mif, "-quiet"])
            check(np.array_equal(ours, np.asarray(nib.load(mif).dataobj)), "%s: the .mif directory's values" % name)
        for metric in ("afd", "amp"):
            for op in ("sum", "count"):
                maps = []
                for ext, dd in dirs.items():
                    out = os.path.join(tmp, "%s_%s_%s.nii" % (metric, op, ext[1:]))
                    run(["fixel2voxel", os.path.join(dd, metric + ext), op, out, "-quiet"])
                    maps.append(np.asarray(nib.load(out).dataobj))
                check(np.array_equal(maps[0], maps[1]), "fixel2voxel %s %s: .nii = .mif" % (metric, op))
        if shutil.which("fod2fixel"):
            theirs = os.path.join(tmp, "theirs")
            run(["fod2fixel", tiled, theirs, "-afd", "afd.nii", "-quiet", "-nthreads", "2"])
            check(nifti_version(os.path.join(theirs, "afd.nii")) == 2, "fod2fixel's afd.nii of %d fixels: NIfTI-2" % n)
        print("tk-fixels --nii: %d fixels; the data files NIfTI-2, the index NIfTI-1 (as fod2fixel writes them); "
              "MRtrix3 reads them as the .mif directory" % n)
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
