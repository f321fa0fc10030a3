#!/usr/bin/env python3
"""fibers.peaks' time against the C API's (tk-bench fibers) on the same data: the bundled real
FOD (Data/fibers/small_101D_fod_sh.npy, 600 voxels of lmax 8) tiled to --voxels, 3 peaks,
median of --repeat calls after a warm-up.  Prints one line; Documentation/python.md has figures.

  python peaks_timing.py [--voxels 64000] [--threads 2] [--backend omp] [--repeat 7]
"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import tensorkernels as tk

ap = argparse.ArgumentParser()
ap.add_argument("--voxels", type=int, default=64000)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--backend", default="omp")
ap.add_argument("--repeat", type=int, default=7)
a = ap.parse_args()
src = np.load(Path(__file__).resolve().parents[2] / "Data" / "fibers" / "small_101D_fod_sh.npy")
sh = np.ascontiguousarray(np.resize(src, (a.voxels, src.shape[1])).astype(np.float32))
d = np.empty((a.voxels, 3, 3), np.float32)
amp = np.empty((a.voxels, 3), np.float32)
times = {}
for name, call in [
    ("peaks (one call: plan made and destroyed)",
     lambda: tk.fibers.peaks(sh, backend=a.backend, threads=a.threads, out=(d, amp))),
]:
    call()
    t = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        call()
        t.append((time.perf_counter() - t0) * 1e3)
    times[name] = statistics.median(t)
    print(f"{name}: {a.voxels} voxels, {a.backend} x{a.threads}: median {times[name]:.1f} ms "
          f"(min {min(t):.1f}, max {max(t):.1f})")
