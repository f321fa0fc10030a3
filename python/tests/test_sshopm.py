"""tensorkernels.sshopm / eigenpairs against the eigenpair definition A x^(m-1) = lambda x
(the tensor unpacked with itertools, not the core) and a tensor with known maxima."""
import numpy as np
import pytest

import tensorkernels as tk
from conftest import apply_m1, full_tensor, packed_tensor


@pytest.mark.parametrize("order,dim,dtype,tol", [(4, 3, np.float64, 1e-8), (3, 3, np.float64, 1e-8),
                                                 (6, 3, np.float64, 1e-8), (4, 4, np.float32, 2e-4)])
def test_converged_starts_are_eigenpairs(order, dim, dtype, tol):
    k = tk.num_unique(order, dim)
    t = np.random.default_rng(order * 10 + dim).standard_normal((6, k)).astype(dtype)
    s = tk.sshopm(t, order, dim, num_starts=32, backend="cpu")
    assert s.eigenvalues.shape == (6, 32) and s.eigenvectors.shape == (6, 32, dim)
    assert s.eigenvalues.dtype == dtype and s.converged.dtype == np.bool_
    assert s.converged.mean() > 0.9
    for i in range(6):
        full = full_tensor(t[i].astype(np.float64), order, dim)
        for j in np.flatnonzero(s.converged[i]):
            x = s.eigenvectors[i, j].astype(np.float64)
            lam = float(s.eigenvalues[i, j])
            assert abs(np.linalg.norm(x) - 1) < tol
            assert np.linalg.norm(apply_m1(full, x) - lam * x) < tol * max(1, abs(lam)) * 10


def test_eigenpairs_of_an_orthogonal_decomposition():
    # A = sum_i w_i v_i^(x4) with orthonormal v_i: each v_i is a local maximum with lambda = w_i.
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    w = np.array([3.0, 2.0, 1.0])
    full = sum(w[i] * np.einsum("a,b,c,d->abcd", *(q[:, i],) * 4) for i in range(3))
    t = packed_tensor(full, 4, 3)[None, :]
    e = tk.eigenpairs(t, 4, 3, num_starts=64)
    maxima = [(lam, x) for lam, x, s in zip(e.eigenvalues, e.eigenvectors, e.stability)
              if tk.STABILITY[s] == "max"]
    assert len(maxima) == 3
    for i in range(3):
        lam, x = maxima[i]  # sorted by eigenvalue, descending
        assert lam == pytest.approx(w[i], abs=1e-9)
        assert abs(abs(x @ q[:, i]) - 1) < 1e-9
    assert np.all(e.tensor == 0) and np.all(e.num_starts >= 1)


def test_given_starts_and_minima():
    rng = np.random.default_rng(4)
    t = rng.standard_normal((3, 15))
    starts = rng.standard_normal((10, 3))
    a = tk.sshopm(t, 4, 3, starts=starts, maximize=False)
    assert a.eigenvalues.shape == (3, 10)
    b = tk.sshopm(t, 4, 3, starts=starts, shift=-1.0, max_iter=5000)
    for s in (a, b):
        for i in range(3):
            full = full_tensor(t[i], 4, 3)
            for j in np.flatnonzero(s.converged[i]):
                x = s.eigenvectors[i, j]
                assert np.linalg.norm(apply_m1(full, x) - s.eigenvalues[i, j] * x) < 1e-7


def test_sshopm_refusals_and_core_errors():
    with pytest.raises(ValueError, match="15 unique entries"):
        tk.sshopm(np.zeros((2, 14)), 4, 3)
    with pytest.raises(TypeError, match="float32 or float64"):
        tk.sshopm(np.zeros((2, 15), dtype=np.float16), 4, 3)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        tk.sshopm([[0.0] * 15], 4, 3)
    with pytest.raises(TypeError, match="float64"):  # starts in another dtype than the tensors
        tk.sshopm(np.zeros((2, 15)), 4, 3, starts=np.ones((4, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="sshopm: max_iter must be >= 0, got -1"):  # the core's own message
        tk.sshopm(np.zeros((2, 15)), 4, 3, max_iter=-1)
