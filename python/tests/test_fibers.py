"""tensorkernels.fibers.peaks against brute-force maxima of the SH function on a dense sphere,
with the SH bases evaluated by DIPY (an implementation independent of the core's)."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

import tensorkernels as tk
from conftest import fibonacci_sphere, sh_matrix

LMAX = 8
SPHERE = fibonacci_sphere(40000)  # about 1.1 degrees between neighbours


def synthetic_fods(rng, count, basis):
    """SH series (lmax 8) of 1-3 fibers of random directions (>= 50 degrees apart) and weights:
    least-squares fits of sums of sharp axial lobes, in `basis`."""
    b = sh_matrix(SPHERE, LMAX, basis)
    pinv = np.linalg.pinv(b)
    out = []
    for _ in range(count):
        dirs = []
        while len(dirs) < rng.integers(1, 4):
            d = rng.standard_normal(3)
            d /= np.linalg.norm(d)
            if all(abs(d @ e) < np.cos(np.radians(50)) for e in dirs):
                dirs.append(d)
        f = sum(rng.uniform(0.5, 1.5) * np.exp(-8 * (1 - (SPHERE @ d) ** 2)) for d in dirs)
        out.append(pinv @ f)
    return np.array(out)


def brute_force_maxima(coeffs, basis, rel=0.1):
    """Local maxima of the series on the dense sphere (no neighbour within 4 degrees is larger),
    one of each antipodal pair, with amplitude >= rel of the largest."""
    values = sh_matrix(SPHERE, LMAX, basis) @ coeffs
    tree = cKDTree(SPHERE)
    found = []
    for i in np.argsort(-values):
        if values[i] < rel * values.max():
            break
        nb = tree.query_ball_point(SPHERE[i], 2 * np.sin(np.radians(4) / 2))
        if values[i] >= values[nb].max() and all(abs(SPHERE[i] @ d) < np.cos(np.radians(5)) for d, _ in found):
            found.append((SPHERE[i], values[i]))
    return found


@pytest.mark.parametrize("basis", ["tournier", "descoteaux"])
def test_peaks_are_the_dense_sphere_maxima(basis):
    rng = np.random.default_rng(11 if basis == "tournier" else 12)
    coeffs = synthetic_fods(rng, 12, basis)
    sh = np.ascontiguousarray(coeffs.astype(np.float32).reshape(3, 4, 45))
    p = tk.fibers.peaks(sh, num_peaks=5, relative_threshold=0.1, basis=basis, backend="omp")
    assert p.directions.shape == (3, 4, 5, 3) and p.amplitudes.shape == (3, 4, 5) and p.bad_voxels == 0
    dirs = p.directions.reshape(12, 5, 3)
    amps = p.amplitudes.reshape(12, 5)
    b = None
    for v in range(12):
        want = brute_force_maxima(coeffs[v].astype(np.float32).astype(np.float64), basis)
        have = [(d, a) for d, a in zip(dirs[v], amps[v]) if np.isfinite(a)]
        assert len(have) == len(want), (v, have, want)
        for (d, a), (wd, wa) in zip(have, want):  # both sorted by amplitude, descending
            assert np.degrees(np.arccos(min(1, abs(d @ wd)))) < 1.5
            assert a == pytest.approx(wa, rel=5e-3)
            # the amplitude is the series' value at the direction, by DIPY's basis
            b = sh_matrix(d[None, :].astype(np.float64), LMAX, basis)[0]
            assert a == pytest.approx(b @ coeffs[v], rel=1e-4, abs=1e-5)
            assert np.linalg.norm(d) == pytest.approx(1, abs=1e-6)


def test_options_mask_and_bad_voxels():
    rng = np.random.default_rng(13)
    sh = synthetic_fods(rng, 6, "tournier").astype(np.float32)
    full = tk.fibers.peaks(sh, num_peaks=3)
    mask = np.array([True, False, True, True, False, True])
    m = tk.fibers.peaks(sh, num_peaks=3, mask=mask)
    assert np.all(np.isnan(m.amplitudes[~mask])) and np.all(np.isnan(m.directions[~mask]))
    np.testing.assert_array_equal(m.amplitudes[mask], full.amplitudes[mask])
    one = tk.fibers.peaks(sh, num_peaks=1)
    np.testing.assert_array_equal(one.amplitudes[:, 0], full.amplitudes[:, 0])
    thr = tk.fibers.peaks(sh, num_peaks=3, threshold=0.9)
    assert np.all(np.isnan(thr.amplitudes) | (thr.amplitudes > 0.9))
    bad = sh.copy()
    bad[2, 5] = np.inf
    r = tk.fibers.peaks(bad)
    assert r.bad_voxels == 1 and np.all(np.isnan(r.amplitudes[2]))


def test_backends_agree():
    sh = synthetic_fods(np.random.default_rng(14), 8, "tournier").astype(np.float32)
    a = tk.fibers.peaks(sh, backend="cpu")
    b = tk.fibers.peaks(sh, backend="omp", threads=2)
    np.testing.assert_array_equal(a.amplitudes, b.amplitudes)
    np.testing.assert_array_equal(a.directions, b.directions)


def test_fibers_refusals_and_core_errors():
    sh = np.zeros((4, 45), dtype=np.float32)
    with pytest.raises(TypeError, match="float32"):
        tk.fibers.peaks(sh.astype(np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        tk.fibers.peaks(np.zeros((45, 4), dtype=np.float32).T)
    with pytest.raises(ValueError, match="44 coefficients"):
        tk.fibers.peaks(np.zeros((4, 44), dtype=np.float32))
    with pytest.raises(ValueError, match="mask: expected shape"):
        tk.fibers.peaks(sh, mask=np.ones(5, dtype=bool))
    with pytest.raises(ValueError, match="basis"):
        tk.fibers.peaks(sh, basis="mrtrix")
    with pytest.raises(ValueError, match="backend"):
        tk.fibers.peaks(sh, backend="gpu")
    with pytest.raises(ValueError, match="fibers.peaks: .*relative threshold"):  # the core's message
        tk.fibers.peaks(sh, relative_threshold=2.0)
    if not tk.has_cuda():
        with pytest.raises(RuntimeError, match="no CUDA backend"):
            tk.fibers.peaks(sh, backend="cuda")
