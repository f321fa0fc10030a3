# Where the GPU's streamlines part from the CPU's on test_gpu.py's mask-seeded lobe (python_gpu.sh's package)
import numpy as np, tensorkernels as tk
for algorithm in ("sd_stream", "ifod1"):
    rng = np.random.default_rng(6)
    sh = (0.03 * rng.standard_normal((12, 10, 14, 15))).astype(np.float32)
    sh[..., 0], sh[..., 3] = 1.0, 0.8
    aff = np.array([[2.0, 0, 0, -11], [0, 2.5, 0, 3], [0, 0, 1.5, 7], [0, 0, 0, 1]])
    mask = rng.random(sh.shape[:3]) > 0.9
    kw = dict(seed_mask=mask, seeds_per_voxel=3, rng_seed=4, algorithm=algorithm)
    cpu = tk.tracking.track(sh, aff, backend="omp", **kw)
    gpu = tk.tracking.track(sh, aff, backend="cuda", **kw)
    c = {int(i): s for i, s in zip(cpu.seed_index, cpu.streamlines)}
    g = {int(i): s for i, s in zip(gpu.seed_index, gpu.streamlines)}
    print(algorithm, "cpu", len(c), "gpu", len(g), "only cpu", sorted(set(c) - set(g))[:10], "only gpu", sorted(set(g) - set(c))[:10])
    for i in sorted(set(c) | set(g)):
        a, b = c.get(i), g.get(i)
        if a is None or b is None:
            s = a if a is not None else b
            print("  seed", i, "only", "cpu" if b is None else "gpu", "points", len(s), "first", s[0], "last", s[-1])
            continue
        if a.shape == b.shape and np.array_equal(a, b): continue
        n = min(len(a), len(b)); d = next((k for k in range(n) if not np.array_equal(a[k], b[k])), n)
        print("  seed", i, "cpu points", len(a), "gpu points", len(b), "first difference at point", d)
        print("    cpu", a[max(d-1,0):d+2].tolist(), "\n    gpu", b[max(d-1,0):d+2].tolist())
