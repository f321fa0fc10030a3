#!/usr/bin/env python3
"""The per-voxel cores on a GPU from Python: NumPy arrays on the cuda backend (the host-device
copies included) against CuPy arrays and PyTorch CUDA tensors (no copy: the data stay on the GPU),
median of --repeat calls after a warm-up, one line each.  Data: the bundled real FOD
(Data/fibers/small_101D_fod_sh.npy, lmax 8) tiled to --voxels; random 4 x 4 matrices; random
packed (4, 3) tensors.  Needs a CUDA build of the package; CuPy and torch where installed.

  python gpu_arrays_timing.py [--voxels 600000] [--matrices 1000000] [--tensors 100000] [--repeat 5]
"""
import argparse
import importlib.util
import statistics
import time
from pathlib import Path

import numpy as np

import tensorkernels as tk

ap = argparse.ArgumentParser()
ap.add_argument("--voxels", type=int, default=600000)
ap.add_argument("--matrices", type=int, default=1000000)
ap.add_argument("--tensors", type=int, default=100000)
ap.add_argument("--repeat", type=int, default=5)
a = ap.parse_args()

src = np.load(Path(__file__).resolve().parents[2] / "Data" / "fibers" / "small_101D_fod_sh.npy")
sh = np.ascontiguousarray(np.resize(src, (a.voxels, src.shape[1])).astype(np.float32))
mats = np.random.default_rng(1).standard_normal((a.matrices, 4, 4))
tens = np.random.default_rng(2).standard_normal((a.tensors, 15)).astype(np.float32)

libs = {"numpy (cuda backend, copies included)": (lambda x: x, lambda: None)}
if importlib.util.find_spec("cupy"):
    import cupy
    libs["cupy"] = (cupy.asarray, lambda: cupy.cuda.Device().synchronize())
if importlib.util.find_spec("torch"):
    import torch
    if torch.cuda.is_available():
        libs["torch"] = (lambda x: torch.from_numpy(x).cuda(), torch.cuda.synchronize)


def median_ms(call, sync):
    call()
    sync()
    t = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        call()
        sync()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


for name, (move, sync) in libs.items():
    g_sh, g_mats, g_tens = move(sh), move(mats), move(tens)
    cuda = {"backend": "cuda"}
    ms = median_ms(lambda: tk.fibers.peaks(g_sh, **cuda), sync)
    print(f"fibers.peaks   {name}: {a.voxels} voxels lmax 8, median {ms:.1f} ms, {a.voxels / ms / 1e3:.2f} M voxels/s")
    ms = median_ms(lambda: tk.eig.eigvals(g_mats, **cuda), sync)
    print(f"eig.eigvals    {name}: {a.matrices} 4x4 float64, median {ms:.1f} ms, {a.matrices / ms / 1e3:.2f} M matrices/s")
    ms = median_ms(lambda: tk.sshopm(g_tens, 4, 3, num_starts=32, **cuda), sync)
    print(f"sshopm         {name}: {a.tensors} (4,3) float32 x 32 starts, median {ms:.1f} ms, "
          f"{a.tensors / ms / 1e3:.3f} M tensors/s")
