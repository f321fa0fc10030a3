# Where the GPU's iFOD1 streamlines part from the CPU's (python_gpu.sh's package on PYTHONPATH):
# test_gpu.py's noisy lobe, mask seeds (its set-up), then many seed points given, so that each
# streamline's seed is known; for every point that differs: its distance in points from the
# seed, which half it is in, and the size of the difference.
import sys
import numpy as np
import tensorkernels as tk

rng = np.random.default_rng(6)
sh = (0.03 * rng.standard_normal((12, 10, 14, 15))).astype(np.float32)
sh[..., 0], sh[..., 3] = 1.0, 0.8  # l = 0, and l = 2, m = 0: a lobe along z (MRtrix3's basis)
aff = np.array([[2.0, 0, 0, -11], [0, 2.5, 0, 3], [0, 0, 1.5, 7], [0, 0, 0, 1]])
n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
vox = np.random.default_rng(7).uniform(0, 1, (n, 3)) * (np.array(sh.shape[:3]) - 1)
seeds = np.ascontiguousarray(vox @ aff[:3, :3].T + aff[:3, 3])
for algorithm in ("sd_stream", "ifod1"):
    kw = dict(seed_points=seeds, rng_seed=5, algorithm=algorithm)
    cpu = tk.tracking.track(sh, aff, backend="omp", **kw)
    gpu = tk.tracking.track(sh, aff, backend="cuda", **kw)
    c = {int(i): s for i, s in zip(cpu.seed_index, cpu.streamlines)}
    g = {int(i): s for i, s in zip(gpu.seed_index, gpu.streamlines)}
    streams = pts = 0
    rel, halves, sizes, firsts = [], [], [], []
    for i in sorted(set(c) & set(g)):
        a, b = c[i], g[i]
        if a.shape != b.shape:
            print(algorithm, "seed", i, "lengths", len(a), len(b))
            continue
        bad = np.nonzero(np.any(a != b, axis=1))[0]
        if not len(bad):
            continue
        streams += 1
        pts += len(bad)
        s = np.nonzero(np.all(a == seeds[i].astype(np.float32), axis=1))[0]
        at = int(s[0]) if len(s) else -1
        firsts.append(int(bad[0]))
        for k in bad:
            rel.append(int(k) - at)
            halves.append("seed" if k == at else ("first" if k < at else "second"))
            sizes.append(float(np.max(np.abs(a[k].astype(np.float64) - b[k]))))
    only = (len(set(c) ^ set(g)))
    print(f"{algorithm}: {len(c)} cpu, {len(g)} gpu streamlines ({only} in one only), {streams} differ in "
          f"{pts} points of {sum(len(x) for x in c.values())}")
    if rel:
        print("  points from the seed:", sorted(rel)[:40], "halves:", {h: halves.count(h) for h in set(halves)})
        print("  largest difference %.3g, median %.3g; first differing index per streamline:" % (max(sizes), np.median(sizes)),
              firsts[:20])
