#!/usr/bin/python3
"""tk-fixels on the command line: outputs MRtrix3's layout (.mif and --nii), --mask, --maxnum,
--dirpeak, an existing FIXEL_DIR refused (kept whole) and replaced with --force, bad names and
a missing input refused with nothing written.  With MRtrix3 on PATH, also --maxnum 2 --dirpeak
--nii next to fod2fixel's (counts equal, peak directions within 0.5 degree).

usage: tk_fixels_cli.py TK_FIXELS FOD"""
import os
import shutil
import sys
import tempfile

import nibabel as nib
import numpy as np

from fixel_script_util import check, run


def main():
    tk, fod = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()
    try:
        d = os.path.join(tmp, "fx")
        run([tk, fod, d, "--afd", "afd.nii", "--peak-amp", "amp.nii", "--disp", "disp.nii", "--nii", "-q"])
        check(sorted(os.listdir(d)) == ["afd.nii", "amp.nii", "directions.nii", "disp.nii", "index.nii"],
              "the directory holds exactly its files: %s" % os.listdir(d))
        index = np.asarray(nib.load(os.path.join(d, "index.nii")).dataobj)
        check(index.dtype == np.uint32 and index.ndim == 4 and index.shape[3] == 2, "index: X x Y x Z x 2 uint32")
        n = int(index[..., 0].sum())
        dirs = np.asarray(nib.load(os.path.join(d, "directions.nii")).dataobj)
        afd = np.asarray(nib.load(os.path.join(d, "afd.nii")).dataobj)
        amp = np.asarray(nib.load(os.path.join(d, "amp.nii")).dataobj)
        disp = np.asarray(nib.load(os.path.join(d, "disp.nii")).dataobj)
        check(dirs.shape[:2] == (n, 3) and afd.shape[0] == n, "directions N x 3, afd N (N = %d)" % n)
        check(np.allclose(np.linalg.norm(dirs.reshape(n, 3), axis=1), 1, atol=1e-5), "unit directions")
        check(np.allclose(disp.ravel(), afd.ravel() / amp.ravel(), rtol=1e-6), "disp = afd / peak")
        # offsets: each voxel's fixels follow the previous voxels' (voxel order)
        cnt, off = index[..., 0].ravel(order="F"), index[..., 1].ravel(order="F")
        nz = cnt > 0
        check(np.array_equal(off[nz], np.concatenate([[0], np.cumsum(cnt[nz])[:-1]])), "offsets in voxel order")
        # the voxel maps (count, AFD sum) and the glyphs beside the directory, in the same set
        cm, am = os.path.join(tmp, "count.nii"), os.path.join(tmp, "afd.nii.gz")
        extra = ["--count-map", cm, "--afd-map", am]
        vtp = os.path.join(tmp, "fixels.vtp")
        if "not in this build" not in run([tk, "--help"]).stdout.split("--vtp", 1)[1].split("\n")[0]:
            extra += ["--vtp", vtp]
        run([tk, fod, os.path.join(tmp, "maps"), "--afd", "afd.nii", "--nii", "-q"] + extra)
        cnt = np.asarray(nib.load(cm).dataobj)
        check(np.array_equal(cnt, index[..., 0].astype(cnt.dtype)), "--count-map: the index's counts")
        sums = np.zeros(index.shape[:3])
        flat = afd.ravel()
        for ijk in zip(*np.nonzero(index[..., 0])):
            o, c = index[ijk + (1,)], index[ijk + (0,)]
            sums[ijk] = flat[o:o + c].sum()
        check(np.allclose(np.asarray(nib.load(am).dataobj), sums, rtol=1e-5, atol=1e-6), "--afd-map: the AFD sums")
        if "--vtp" in extra:
            with open(vtp) as f:
                check('NumberOfLines="%d"' % n in f.read(), "--vtp: one line per fixel")
        # an existing directory: refused and kept; replaced with --force
        run([tk, fod, d, "--nii", "-q"], expect=1)
        check(os.path.exists(os.path.join(d, "afd.nii")), "a refused run keeps the old directory")
        run([tk, fod, d, "--nii", "--maxnum", "1", "-q", "--force"])
        check(not os.path.exists(os.path.join(d, "afd.nii")), "--force replaces the directory whole")
        one = np.asarray(nib.load(os.path.join(d, "index.nii")).dataobj)
        check(one[..., 0].max() == 1 and np.array_equal(one[..., 0] > 0, index[..., 0] > 0), "--maxnum 1")
        # --mask: half the voxels
        img = nib.load(fod)
        mask = np.zeros(img.shape[:3], np.uint8)
        mask[: img.shape[0] // 2] = 1
        mpath = os.path.join(tmp, "mask.nii")
        nib.save(nib.Nifti1Image(mask, img.affine), mpath)
        dm = os.path.join(tmp, "masked")
        run([tk, fod, dm, "--mask", mpath, "--nii", "-q"])
        im = np.asarray(nib.load(os.path.join(dm, "index.nii")).dataobj)
        check(np.all(im[mask == 0, 0] == 0) and np.array_equal(im[mask == 1, 0], index[mask == 1, 0]), "--mask")
        # refusals, with nothing written
        for bad in (["--afd", "sub/afd.mif"], ["--afd", "afd.txt"], ["--afd", "index.mif"]):
            run([tk, fod, os.path.join(tmp, "bad"), "-q"] + bad, expect=2)
            check(not os.path.exists(os.path.join(tmp, "bad")), "a refused %s writes nothing" % bad)
        run([tk, os.path.join(tmp, "missing.nii"), os.path.join(tmp, "bad"), "-q"], expect=1)
        check(not os.path.exists(os.path.join(tmp, "bad")), "a missing input writes nothing")
        if shutil.which("fod2fixel"):
            ours, theirs = os.path.join(tmp, "o"), os.path.join(tmp, "t")
            run([tk, fod, ours, "--maxnum", "2", "--dirpeak", "-q"])
            run(["fod2fixel", fod, theirs, "-maxnum", "2", "-dirpeak", "-quiet", "-nthreads", "1"])
            got = {}
            for name, path in (("o", ours), ("t", theirs)):
                out = os.path.join(tmp, name + ".nii")
                run(["fixel2peaks", path, out, "-nan", "-quiet"])
                got[name] = np.asarray(nib.load(out).dataobj, dtype=np.float64)
            a, b = got["o"], got["t"]
            check(a.shape == b.shape and np.array_equal(np.isnan(a), np.isnan(b)), "--maxnum 2: the same counts")
            ok = ~np.isnan(a[..., 0::3])
            dot = np.abs(a[..., 0::3] * b[..., 0::3] + a[..., 1::3] * b[..., 1::3] + a[..., 2::3] * b[..., 2::3])[ok]
            check(np.mean(np.degrees(np.arccos(np.clip(dot, -1, 1))) <= 0.5) >= 0.999, "--dirpeak: peaks agree")
            print("fod2fixel -maxnum 2 -dirpeak: the same counts, peak angle max %.3g degree"
                  % np.degrees(np.arccos(np.clip(dot.min(), -1, 1))))
        print("tk-fixels command line: ok")
        return 0
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
