"""tensorkernels.tracking: straight fibers of a synthetic FOD (DIPY's SH basis, not the core's)
tracked where geometry says they must go on an oblique, anisotropic grid, and the bundle
phantom's streamlines equal to `tk-track`'s for the same seeds (when the tool is built)."""
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk
from conftest import built_tool, fibonacci_sphere, sh_matrix, releases_gil

TR = tk.tracking
DATA = Path(__file__).resolve().parents[2] / "Data" / "tracking"
DIMS = (12, 9, 7)


def oblique_affine():
    th = np.deg2rad(30)
    rot = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
    a = np.eye(4)
    a[:3, :3] = rot @ np.diag([2.0, 1.5, 1.0])
    a[:3, 3] = [5, -3, 2]
    return a


@pytest.fixture(scope="module")
def straight_x():
    """Every voxel holds one fiber along world x: a sharp lobe fitted in DIPY's tournier07
    basis (MRtrix3's, defined in world RAS)."""
    d = fibonacci_sphere(4000)
    c, *_ = np.linalg.lstsq(sh_matrix(d, 8, "tournier"), np.exp(-20 * (1 - d[:, 0] ** 2)), rcond=None)
    return np.ascontiguousarray(np.broadcast_to(c.astype(np.float32), DIMS + (45,)))


def to_voxel(affine, pts):
    inv = np.linalg.inv(affine)
    return pts @ inv[:3, :3].T + inv[:3, 3]


def to_world(affine, vox):
    return np.ascontiguousarray(vox @ affine[:3, :3].T + affine[:3, 3])


def exit_distance(affine, seed, direction):
    """How far from seed along direction the line leaves the grid's box [-0.5, dim - 0.5]."""
    v0, dv = to_voxel(affine, seed[None])[0], np.linalg.inv(affine)[:3, :3] @ direction
    t = np.inf
    for k in range(3):
        if dv[k] > 1e-12:
            t = min(t, (DIMS[k] - 0.5 - v0[k]) / dv[k])
        elif dv[k] < -1e-12:
            t = min(t, (-0.5 - v0[k]) / dv[k])
    return t


def test_straight_fibers_run_to_the_grid_edges(straight_x):
    aff = oblique_affine()
    seeds = to_world(aff, np.array([[5.0, 4.0, 3.0], [2.2, 6.1, 1.3], [9.4, 1.7, 5.5]]))
    # the first direction given (tckgen -seed_direction): a random one may climb to a ripple of
    # the fitted lobe below the cutoff, which rejects the seed as tckgen would
    t = TR.track(straight_x, aff, seed_points=seeds, seed_direction=(1, 0, 0), backend="cpu")
    step = t.options["step_mm"]
    assert abs(step - 0.1 * 3.0 ** (1 / 3)) < 1e-9  # 0.1 voxel: the geometric mean of 2, 1.5, 1
    assert len(t.streamlines) == 3 and list(t.seed_index) == [0, 1, 2] and t.stats["accepted"] == 3
    for s, seed in zip(t.streamlines, seeds):
        assert s.dtype == np.float32 and s.shape[1] == 3
        np.testing.assert_allclose(s[:, 1:], np.broadcast_to(seed[1:], s[:, 1:].shape), atol=1e-4)  # along x
        np.testing.assert_allclose(np.abs(np.diff(s[:, 0])), step, rtol=1e-4)
        ends = sorted([s[0, 0] - seed[0], s[-1, 0] - seed[0]])
        x = np.array([1.0, 0, 0])
        assert abs(ends[1] - exit_distance(aff, seed, x)) < step + 1e-4
        assert abs(-ends[0] - exit_distance(aff, seed, -x)) < step + 1e-4
    # the same streamlines as one nibabel ArraySequence (DIPY's Streamlines)
    seq = t.to_streamlines()
    assert len(seq) == 3 and np.array_equal(seq[1], t.streamlines[1])


def test_seed_mask_is_read_on_the_arrays_grid(straight_x):
    aff = oblique_affine()
    seed_mask = np.zeros(DIMS, bool)
    seed_mask[2, 5, 4] = True  # (4, 5, 2) if the axes were read the other way round
    t = TR.track(straight_x, aff, seed_mask=seed_mask, seeds_per_voxel=6, rng_seed=5, seed_direction=(1, 0, 0),
                 backend="cpu")
    assert t.stats["seeds"] == 6 and len(t.streamlines) == 6
    for s in t.streamlines:
        v = to_voxel(aff, s.astype(np.float64))
        inside = np.all(np.abs(v - [2, 5, 4]) <= 0.5 + 1e-4, axis=1)
        assert inside.any()
    again = TR.track(straight_x, aff, seed_mask=seed_mask, seeds_per_voxel=6, rng_seed=5, seed_direction=(1, 0, 0),
                     backend="omp", threads=2)
    for a, b in zip(t.streamlines, again.streamlines):
        np.testing.assert_array_equal(a, b)  # the same key, the same streamlines, any backend and threads


def test_regions(straight_x):
    aff = oblique_affine()
    x = {"seed_direction": (1, 0, 0)}
    seeds = to_world(aff, np.array([[2.0, 4.0, 3.0]]))
    slab = np.zeros(DIMS, np.uint8)
    slab[8] = 1  # every voxel of x index 8: the line from x = 2 along world x crosses it
    dropped = TR.track(straight_x, aff, seed_points=seeds, exclude=slab, backend="cpu", **x)
    assert len(dropped.streamlines) == 0 and dropped.stats["rejected_exclude"] == 1
    kept = TR.track(straight_x, aff, seed_points=seeds, include=[slab.astype(bool)], backend="cpu", **x)
    assert len(kept.streamlines) == 1
    missed = TR.track(straight_x, aff, seed_points=seeds, include=[np.zeros(DIMS, np.uint8)], backend="cpu", **x)
    assert len(missed.streamlines) == 0 and missed.stats["rejected_missed_include"] == 1
    stop = np.zeros(DIMS, bool)
    stop[:7] = True  # x index 0..6
    cut = TR.track(straight_x, aff, seed_points=seeds, mask=stop, backend="cpu", **x)
    v = np.rint(to_voxel(aff, cut.streamlines[0].astype(np.float64))).astype(int)
    assert v[:, 0].max() <= 6 and cut.stats["ended_exit_mask"] >= 1


def test_refusals(straight_x):
    aff = oblique_affine()
    seeds = to_world(aff, np.array([[5.0, 4.0, 3.0]]))
    with pytest.raises(TypeError, match="sh: dtype float64"):
        TR.track(straight_x.astype(np.float64), aff, seed_points=seeds)
    with pytest.raises(ValueError, match="not C-contiguous"):
        TR.track(np.asfortranarray(straight_x), aff, seed_points=seeds)
    with pytest.raises(ValueError, match="one of them"):
        TR.track(straight_x, aff)
    with pytest.raises(ValueError, match=r"mask: expected the volume's grid \(12, 9, 7\)"):
        TR.track(straight_x, aff, seed_points=seeds, mask=np.ones((7, 9, 12), bool))
    with pytest.raises(ValueError, match="no even-degree SH size"):
        TR.track(np.zeros(DIMS + (44,), np.float32), aff, seed_points=seeds)
    bad = straight_x.copy()
    bad[3, 3, 3, 0] = np.nan
    with pytest.raises(ValueError, match="tracking.track: .*(finite|NaN)"):
        TR.track(bad, aff, seed_points=seeds, backend="cpu")
    assert len(TR.track(bad, aff, seed_points=seeds, allow_nonfinite=True, backend="cpu").streamlines) == 1
    with pytest.raises(ValueError, match="tracking.track: .*angle"):
        TR.track(straight_x, aff, seed_points=seeds, angle=120)


def test_progress_stops_gil_released_and_ctrl_c_interrupts(straight_x):
    aff = oblique_affine()
    rng = np.random.default_rng(1)
    seeds = to_world(aff, rng.uniform(0, 1, (20000, 3)) * (np.array(DIMS) - 1))
    picked = TR.track(straight_x, aff, seed_points=seeds[:1000], chunk_seeds=64, seed_direction=(1, 0, 0),
                      select=100, backend="cpu")
    full = TR.track(straight_x, aff, seed_points=seeds[:1000], seed_direction=(1, 0, 0), backend="cpu")
    assert len(picked.streamlines) == 100 and list(picked.seed_index) == list(full.seed_index[:100])
    for a, b in zip(picked.streamlines, full.streamlines):
        np.testing.assert_array_equal(a, b)
    calls = []
    t = TR.track(straight_x, aff, seed_points=seeds[:1000], chunk_seeds=100, backend="cpu",
                 progress=lambda done, total: calls.append((done, total)) or done < 300)
    assert calls == [(100, 1000), (200, 1000), (300, 1000)] and t.stats["seeds"] == 300
    assert len(t.streamlines) == len(t.seed_index) and t.seed_index.max() < 300
    # the GIL released while the core tracks: another thread runs Python meanwhile
    seconds, _ = releases_gil(lambda: TR.track(straight_x, aff, seed_points=seeds[:2000], chunk_seeds=100,
                                                backend="cpu"))
    per_chunk = seconds / 20
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        TR.track(straight_x, aff, seed_points=np.ascontiguousarray(np.tile(seeds, (20, 1))), chunk_seeds=100,
                 backend="cpu")
    timer.join()
    assert time.perf_counter() - t0 < 0.2 + 3 * per_chunk + 1.0


@pytest.mark.skipif(built_tool("tk-track") is None, reason="tk-track not built (TK_BUILD_DIR/bin; needs ITK)")
@pytest.mark.parametrize("algorithm", ["sd_stream", "ifod1"])
def test_same_streamlines_as_tk_track(algorithm, tmp_path):
    nib = pytest.importorskip("nibabel")
    img = tk.io.load_sh(DATA / "bundles_sh.nii.gz")
    labels = np.asarray(nib.load(DATA / "bundles_labels.nii.gz").dataobj).any(axis=3)
    rng = np.random.default_rng(2)
    vox = np.argwhere(labels)[rng.choice(int(labels.sum()), 150, replace=False)] + rng.uniform(-0.5, 0.5, (150, 3))
    seeds = to_world(img.affine, vox)
    np.savetxt(tmp_path / "seeds.txt", seeds, fmt="%.17g")
    stop = labels.copy()
    nib.save(nib.Nifti1Image(stop.astype(np.uint8), img.affine), tmp_path / "mask.nii.gz")
    for extra, kwargs in [([], {}), (["--mask", str(tmp_path / "mask.nii.gz")], {"mask": stop})]:
        out = tmp_path / f"{algorithm}.tck"
        subprocess.run([built_tool("tk-track"), str(DATA / "bundles_sh.nii.gz"), str(out), "--seeds-file",
                        str(tmp_path / "seeds.txt"), "--algorithm", algorithm, "--seed", "7", "--backend", "cpu",
                        "--quiet", "--force"] + extra, check=True, capture_output=True)
        theirs = nib.streamlines.load(str(out)).streamlines
        ours = TR.track(img.sh, img.affine, seed_points=seeds, algorithm=algorithm, rng_seed=7, backend="omp",
                        **kwargs)
        assert len(ours.streamlines) == len(theirs) > 20
        for a, b in zip(ours.streamlines, theirs):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, atol=1e-4)
    # --select 7: the first 7 streamlines kept in seed order
    subprocess.run([built_tool("tk-track"), str(DATA / "bundles_sh.nii.gz"), str(out), "--seeds-file",
                    str(tmp_path / "seeds.txt"), "--algorithm", algorithm, "--seed", "7", "--backend", "cpu",
                    "--select", "7", "--quiet", "--force"], check=True, capture_output=True)
    theirs = nib.streamlines.load(str(out)).streamlines
    ours = TR.track(img.sh, img.affine, seed_points=seeds, algorithm=algorithm, rng_seed=7, select=7, chunk_seeds=16,
                    backend="cpu")
    assert len(ours.streamlines) == len(theirs) == 7 and len(ours.seed_index) == 7
    for a, b in zip(ours.streamlines, theirs):
        np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.skipif(built_tool("tk-track") is None, reason="tk-track not built (TK_BUILD_DIR/bin; needs ITK)")
@pytest.mark.parametrize("algorithm", ["sd_stream", "ifod1"])
def test_seed_mask_seeds_as_tk_track(algorithm, tmp_path):
    """One rule for mask seeds: the k-th masked voxel counted x fastest, its point drawn x first,
    as tk-track numbers a NIfTI mask, so the same mask and seed give the same streamlines (the
    C-order array's own order, z fastest, would give other seeds)."""
    nib = pytest.importorskip("nibabel")
    img = tk.io.load_sh(DATA / "bundles_sh.nii.gz")
    labels = np.asarray(nib.load(DATA / "bundles_labels.nii.gz").dataobj).any(axis=3)
    rng = np.random.default_rng(12)
    seed_mask = np.zeros(labels.shape, bool)
    seed_mask[tuple(np.argwhere(labels)[rng.choice(int(labels.sum()), 40, replace=False)].T)] = True
    nib.save(nib.Nifti1Image(seed_mask.astype(np.uint8), img.affine), tmp_path / "seeds.nii.gz")
    out = tmp_path / "mask_seeded.tck"
    subprocess.run([built_tool("tk-track"), str(DATA / "bundles_sh.nii.gz"), str(out), "--seed-mask",
                    str(tmp_path / "seeds.nii.gz"), "--seeds", "3", "--algorithm", algorithm, "--seed", "11",
                    "--backend", "cpu", "--quiet", "--force"], check=True, capture_output=True)
    theirs = nib.streamlines.load(str(out)).streamlines
    ours = TR.track(img.sh, img.affine, seed_mask=seed_mask, seeds_per_voxel=3, algorithm=algorithm, rng_seed=11,
                    backend="omp")
    assert len(ours.streamlines) == len(theirs) > 20
    for a, b in zip(ours.streamlines, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-4)
    # seed k of voxel v (x fastest) is k + 3 v: the indices the tool's order gives
    order = np.argwhere(seed_mask.transpose(2, 1, 0))[:, ::-1]  # x fastest
    first = {tuple(v): 3 * n for n, v in enumerate(order)}
    inv = np.linalg.inv(img.affine)
    for s, idx in zip(ours.streamlines[:10], ours.seed_index[:10]):
        # the seed lies on the streamline; its voxel is the one the index names
        vox = np.rint(s @ inv[:3, :3].T + inv[:3, 3]).astype(int)
        assert any(first.get(tuple(v)) == int(idx) - int(idx) % 3 for v in vox)
