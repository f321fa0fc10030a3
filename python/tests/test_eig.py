"""tensorkernels.eig against numpy.linalg (LAPACK's dgeev through NumPy)."""
import numpy as np
import pytest

import tensorkernels as tk


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_eigvals_match_numpy_float64(n):
    a = np.random.default_rng(n).standard_normal((300, n, n))
    got = tk.eig.eigvals(a)
    want = np.linalg.eigvals(a)
    assert got.dtype == np.complex128 and got.shape == (300, n)
    np.testing.assert_allclose(got, np.sort_complex(want), atol=1e-10 * max(1, n))
    # sorted per matrix by real part, then imaginary part
    assert np.all(np.diff(got.real, axis=-1) >= -1e-12)


def test_eigvals_float32_batch_shape():
    a = np.random.default_rng(5).standard_normal((4, 25, 5, 5)).astype(np.float32)
    got = tk.eig.eigvals(a, backend="cpu")
    assert got.dtype == np.complex64 and got.shape == (4, 25, 5)
    want = np.sort_complex(np.linalg.eigvals(a.astype(np.float64)))
    np.testing.assert_allclose(got, want, atol=2e-4)


def test_eig_vectors_are_eigenvectors():
    a = np.random.default_rng(7).standard_normal((200, 6, 6))
    values, vectors = tk.eig.eig(a)
    # A v = lambda v column by column; unit norms; largest component real and positive
    np.testing.assert_allclose(a @ vectors, vectors * values[..., None, :], atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-2), 1, atol=1e-12)
    big = np.take_along_axis(vectors, np.abs(vectors).argmax(axis=-2)[..., None, :], axis=-2)
    assert np.all(np.abs(big.imag) < 1e-12) and np.all(big.real > 0)


def test_nonfinite_matrix_fails_alone():
    a = np.random.default_rng(8).standard_normal((3, 4, 4))
    a[1, 2, 2] = np.nan
    values, status = tk.eig.eigvals(a, return_status=True)
    assert list(status) == [0, 2, 0]
    assert np.all(np.isnan(values[1])) and np.all(np.isfinite(values[[0, 2]]))


def test_eig_refusals():
    with pytest.raises(TypeError, match="dtype int64"):
        tk.eig.eigvals(np.zeros((2, 3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="square"):
        tk.eig.eigvals(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="outside 1..64"):
        tk.eig.eigvals(np.zeros((1, 65, 65)))
    with pytest.raises(ValueError, match="C-contiguous"):
        tk.eig.eigvals(np.zeros((3, 3, 2)).transpose(2, 0, 1))
    with pytest.raises(TypeError, match="complex128"):
        tk.eig.eigvals(np.zeros((2, 3, 3)), out=np.empty((2, 3), dtype=np.complex64))
