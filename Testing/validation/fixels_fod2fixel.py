#!/usr/bin/python3
"""tk-fixels against MRtrix3's fod2fixel on one FOD: both directories read back through
MRtrix3's own fixel2voxel / fixel2peaks (so the voxels are matched in MRtrix3's grid), fixels
matched within a voxel by direction.  Prints the share of voxels with the same number of
fixels, and the matched fixels' AFD relative difference, peak amplitude difference and mean
direction angle; exits 1 when a goal (issue 25) is missed, 77 (skip) without fod2fixel.

usage: fixels_fod2fixel.py TK_FIXELS FOD [--threads N] [--worst K]
(--worst: also list the K fixels of largest AFD difference, voxel in MRtrix3's grid)"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    tk, fod = sys.argv[1], sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    threads, worst = opts.get("--threads", "1"), int(opts.get("--worst", "0"))
    if not shutil.which("fod2fixel"):
        print("SKIPPED: no fod2fixel (MRtrix3) on PATH")
        return 77
    import nibabel as nib
    tmp = tempfile.mkdtemp()
    try:
        def run(cmd):
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ours, theirs = os.path.join(tmp, "ours"), os.path.join(tmp, "theirs")
        run([tk, fod, ours, "--afd", "afd.mif", "--peak-amp", "peak_amp.mif", "--threads", threads, "-q"])
        run(["fod2fixel", fod, theirs, "-afd", "afd.mif", "-peak_amp", "peak_amp.mif", "-nthreads", threads, "-quiet"])
        maps = {}
        for name, d in (("ours", ours), ("theirs", theirs)):
            m = {}
            for metric in ("afd", "peak_amp"):
                out = os.path.join(tmp, name + metric + ".nii")
                run(["fixel2voxel", os.path.join(d, metric + ".mif"), "none", out, "-fill", "nan"])
                m[metric] = np.asarray(nib.load(out).dataobj, dtype=np.float64)
            out = os.path.join(tmp, name + "count.nii")
            run(["fixel2voxel", os.path.join(d, "afd.mif"), "count", out])
            m["count"] = np.asarray(nib.load(out).dataobj).astype(int)
            out = os.path.join(tmp, name + "dirs.nii")
            run(["fixel2peaks", d, out, "-nan"])
            m["dirs"] = np.asarray(nib.load(out).dataobj, dtype=np.float64)
            maps[name] = m
        a, b = maps["ours"], maps["theirs"]

        def as4(x):
            return x if x.ndim == 4 else x[..., None]
        afd_a, afd_b = as4(a["afd"]), as4(b["afd"])
        amp_a, amp_b = as4(a["peak_amp"]), as4(b["peak_amp"])
        na, nb = a["count"], b["count"]
        voxels = (na > 0) | (nb > 0)
        same = np.mean(na[voxels] == nb[voxels])
        rel, damp, ang, where = [], [], [], []
        for idx in zip(*np.nonzero(voxels)):
            n = min(na[idx], nb[idx])
            da = a["dirs"][idx].reshape(-1, 3)[:na[idx]]
            db = b["dirs"][idx].reshape(-1, 3)[:nb[idx]]
            free = list(range(nb[idx]))
            for i in range(na[idx]):
                if not free:
                    break
                dots = [abs(np.dot(da[i], db[j])) / (np.linalg.norm(da[i]) * np.linalg.norm(db[j])) for j in free]
                j = free.pop(int(np.argmax(dots)))
                if n == 0:
                    break
                rel.append(abs(afd_a[idx][i] - afd_b[idx][j]) / afd_b[idx][j])
                damp.append(abs(amp_a[idx][i] - amp_b[idx][j]))
                ang.append(np.degrees(np.arccos(min(1.0, max(dots)))))
                where.append((idx, i, j, afd_a[idx][i], afd_b[idx][j], amp_a[idx][i], amp_b[idx][j]))
        rel, damp, ang = np.array(rel), np.array(damp), np.array(ang)
        print("%s: %d voxels with fixels, same count in %.2f%%; %d matched fixels" % (fod, voxels.sum(), 100 * same, len(rel)))
        for what, x, goal in (("AFD relative difference", rel, 0.01), ("peak amplitude difference", damp, 1e-4),
                              ("mean direction angle (deg)", ang, 0.5)):
            print("  %-28s median %.3g  p99 %.3g  max %.3g  within goal %.2f%%  (goal %g)"
                  % (what, np.median(x), np.percentile(x, 99), x.max(), 100 * np.mean(x <= goal), goal))
        for w in sorted(range(len(rel)), key=lambda q: -rel[q])[:worst]:
            print("  voxel %s fixel %d/%d: AFD %.6g vs %.6g, peak %.6g vs %.6g" % where[w])
        ok = same >= 0.99 and np.mean(rel <= 0.01) >= 0.99 and np.mean(ang <= 0.5) >= 0.99
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
