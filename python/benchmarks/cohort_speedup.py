#!/usr/bin/env python3
"""The cohort runner's speed-up: 8 subjects (synthetic SH volumes, lmax 8) with 1 and with 2
LocalCluster worker processes (1 thread each), each run timed from the first task to the last
result (the cluster's start-up, ~4 s, apart) and as a whole.  Documentation/python.md.

  python cohort_speedup.py [--subjects 8] [--size 40] [--repeat 2]
"""
import argparse
import shutil
import tempfile
import time
from pathlib import Path

import nibabel as nib
import numpy as np
from dask.distributed import Client, LocalCluster

from tensorkernels import cohort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, default=8)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tk-cohort-"))
    try:
        rng = np.random.default_rng(0)
        (root / "in").mkdir()
        for i in range(a.subjects):
            sh = rng.standard_normal((a.size,) * 3 + (45,)).astype(np.float32) * 0.3
            sh[..., 0] = 2.0
            nib.save(nib.Nifti1Image(sh, np.eye(4)), str(root / "in" / f"sub-{i:02d}_fod.nii.gz"))
        for workers in (1, 2) * a.repeat:
            t0 = time.perf_counter()
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
                    Client(c) as client:
                t1 = time.perf_counter()
                out = root / f"out{workers}"
                shutil.rmtree(out, ignore_errors=True)
                r = cohort.run_cohort(str(root / "in"), str(out), client=client, options={"threads": 1})
                t2 = time.perf_counter()
            assert len(r["done"]) == a.subjects, r
            print(f"{workers} worker(s): {a.subjects} subjects of {a.size}^3 voxels in {t2 - t1:.2f} s "
                  f"(with the cluster's start and stop: {time.perf_counter() - t0:.2f} s)", flush=True)
    finally:
        shutil.rmtree(root)


# The guard matters: the workers are spawned processes that import this file as a module.
if __name__ == "__main__":
    main()
