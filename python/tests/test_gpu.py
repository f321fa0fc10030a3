"""The CUDA backends through the package (marker `gpu`; skipped without a CUDA build of the
package or a usable GPU): each against the CPU backend on the same data and start, with the
agreement the core promises (tk_tucker.h: float rounding of atomic sums; tk_pltf.h's GPU
engine in float; Documentation/tracking.md: SD_STREAM's streamlines bit for bit)."""
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk
from conftest import require_gpu

pytestmark = pytest.mark.gpu
DATA = Path(__file__).resolve().parents[2] / "Data"


@pytest.mark.parametrize("factor_update,rates", [("sgd", {"lr_a": 0.2}), ("als", {})])
def test_tucker_cuda_trains_the_cpu_model(factor_update, rates):
    # SGD with the rate this test always used; ALS-WR (the default) at its defaults: the row
    # solves in double on both, the GPU's sums of v v^T in another order (relative tolerance:
    # the balanced core leaves A(n) of any scale)
    require_gpu()
    c = tk.tucker.synth((300, 400, 500), 200000, rank_j=8, rank_r=8, noise=0.01, seed=1)
    cpu = tk.tucker.train(c, rank_j=8, rank_r=8, iterations=3, factor_update=factor_update, backend="cpu", seed=2,
                          **rates)
    gpu = tk.tucker.train(c, rank_j=8, rank_r=8, iterations=3, factor_update=factor_update, backend="cuda", seed=2,
                          **rates)
    for x, y in zip(gpu.a + gpu.b, cpu.a + cpu.b):
        assert np.max(np.abs(x - y)) < 2e-3 * max(1.0, float(np.max(np.abs(y))))
    assert abs(gpu.history[-1]["train_rmse"] - cpu.history[-1]["train_rmse"]) < 1e-3 * cpu.history[-1]["train_rmse"]
    idx = c.indices[:1000]
    np.testing.assert_allclose(tk.tucker.predict(gpu, idx), tk.tucker.predict(cpu, idx), atol=5e-3)


@pytest.mark.parametrize("model,dims", [("parafac", {"a": 4}), ("tucker3", {"p": 3, "q": 3, "r": 2})])
def test_pltf_cuda_fits_the_cpu_factors(model, dims):
    require_gpu()
    rng = np.random.default_rng(3)
    x = rng.uniform(0.1, 2.0, (20, 30, 25))
    mask = rng.random(x.shape) > 0.2
    cpu = tk.pltf.fit(x, model, dims=dims, mask=mask, iterations=15, seed=9, backend="cpu")
    gpu = tk.pltf.fit(x, model, dims=dims, mask=mask, iterations=15, seed=9, backend="cuda")
    tol = 2e-4
    assert np.all(np.abs(gpu.divergence - cpu.divergence) <= tol * (1 + cpu.divergence))
    for g, c in zip(gpu.factors, cpu.factors):
        assert np.all(np.abs(g - c) <= 10 * tol * (1 + np.abs(c)))
    assert np.all(np.abs(gpu.xhat - cpu.xhat) <= 10 * tol * (1 + cpu.xhat))
    ops = [rng.standard_normal(s) for s in [(20, 4), (30, 4), (25, 4)]]
    np.testing.assert_allclose(tk.pltf.gtm("parafac", ops, backend="cuda"),
                               np.einsum("ia,ja,ka->ijk", *ops), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("algorithm", ["sd_stream", "ifod1"])
def test_tracking_cuda_gives_the_cpu_streamlines(algorithm):
    require_gpu()
    pytest.importorskip("nibabel", reason="SKIPPED: nibabel (the phantom's reader) is not installed here")
    img = tk.io.load_sh(DATA / "tracking" / "bundles_sh.nii.gz")
    rng = np.random.default_rng(4)
    vox = rng.uniform(0, 1, (5000, 3)) * (np.array(img.sh.shape[:3]) - 1)
    seeds = np.ascontiguousarray(vox @ img.affine[:3, :3].T + img.affine[:3, 3])
    cpu = tk.tracking.track(img.sh, img.affine, seed_points=seeds, algorithm=algorithm, rng_seed=5, backend="omp")
    gpu = tk.tracking.track(img.sh, img.affine, seed_points=seeds, algorithm=algorithm, rng_seed=5, backend="cuda")
    assert len(cpu.streamlines) > 100
    same = {int(i): s for i, s in zip(cpu.seed_index, cpu.streamlines)}
    equal = sum(1 for i, s in zip(gpu.seed_index, gpu.streamlines)
                if int(i) in same and same[int(i)].shape == s.shape and np.array_equal(same[int(i)], s))
    if algorithm == "sd_stream":  # no transcendental function on its path: bit for bit
        assert len(gpu.streamlines) == len(cpu.streamlines) == equal
    else:  # bit for bit in the C test's set-ups (Ifod1IsTheCpusBitForBit), not always: below
        assert len(gpu.streamlines) == len(cpu.streamlines) and equal >= 0.99 * len(cpu.streamlines)


@pytest.mark.parametrize("algorithm", ["sd_stream", "ifod1"])
def test_tracking_cuda_seeds_a_mask_as_the_cpu(algorithm):
    """Mask seeding through the package (the core's reversed_axes: x-fastest numbering, x-first
    draws) on the CUDA tracker as on the CPU's; no nibabel needed: a lobe along z with noise."""
    require_gpu()
    rng = np.random.default_rng(6)
    sh = (0.03 * rng.standard_normal((12, 10, 14, 15))).astype(np.float32)
    sh[..., 0], sh[..., 3] = 1.0, 0.8  # l = 0, and l = 2, m = 0: a lobe along z (MRtrix3's basis)
    aff = np.array([[2.0, 0, 0, -11], [0, 2.5, 0, 3], [0, 0, 1.5, 7], [0, 0, 0, 1]])
    mask = rng.random(sh.shape[:3]) > 0.9
    kw = dict(seed_mask=mask, seeds_per_voxel=3, rng_seed=4, algorithm=algorithm)
    cpu = tk.tracking.track(sh, aff, backend="omp", **kw)
    gpu = tk.tracking.track(sh, aff, backend="cuda", **kw)
    assert len(cpu.streamlines) > 100
    same = {int(i): s for i, s in zip(cpu.seed_index, cpu.streamlines)}
    equal = sum(1 for i, s in zip(gpu.seed_index, gpu.streamlines)
                if int(i) in same and same[int(i)].shape == s.shape and np.array_equal(same[int(i)], s))
    if algorithm == "sd_stream":
        assert len(gpu.streamlines) == len(cpu.streamlines) == equal
    else:  # measured on an H200 (session 26): the same 449 streamlines, 448 equal to the bit; in
        # the other (seed 351) one point of 100 is a float ulp apart (x 1.4216060 against the
        # CPU's 1.4216059), the points before and after it equal (Documentation/tracking.md)
        assert len(gpu.streamlines) == len(cpu.streamlines) and equal >= 0.99 * len(cpu.streamlines)
