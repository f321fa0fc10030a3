"""tensorkernels.dask: chunk-by-chunk results equal the NumPy functions' bit for bit, whatever
the chunking (the SH / matrix axes split by the caller are made whole)."""
import numpy as np
import pytest

import tensorkernels as tk

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import tensorkernels.dask as tkd  # noqa: E402


@pytest.mark.parametrize("chunks", [(3, 5, 4, 45), (2, 2, 3, 10), (6, 10, 4, 45)])
def test_peaks_blockwise_equal_numpy(chunks):
    rng = np.random.default_rng(21)
    sh = rng.standard_normal((6, 10, 4, 45)).astype(np.float32)
    sh[..., 0] = 4
    want = tk.fibers.peaks(sh, num_peaks=3, relative_threshold=0.1)
    d, a = tkd.peaks(da.from_array(sh, chunks=chunks), num_peaks=3, relative_threshold=0.1)
    assert d.shape == (6, 10, 4, 3, 3) and a.shape == (6, 10, 4, 3)
    with dask.config.set(scheduler="threads", num_workers=2):
        d, a = dask.compute(d, a)
    np.testing.assert_array_equal(d, want.directions)
    np.testing.assert_array_equal(a, want.amplitudes)


def test_eigvals_blockwise_equal_numpy():
    m = np.random.default_rng(22).standard_normal((40, 30, 5, 5))
    want = tk.eig.eigvals(m)
    got = tkd.eigvals(da.from_array(m, chunks=(7, 11, 5, 2))).compute(scheduler="threads")
    assert got.dtype == np.complex128
    np.testing.assert_array_equal(got, want)


def test_sshopm_blockwise_equal_numpy():
    t = np.random.default_rng(23).standard_normal((50, 4, 15))
    want = tk.sshopm(t, 4, 3, num_starts=8)
    lam, x, conv = dask.compute(*tkd.sshopm(da.from_array(t, chunks=(13, 3, 7)), 4, 3, num_starts=8),
                                scheduler="threads")
    np.testing.assert_array_equal(lam, want.eigenvalues)
    np.testing.assert_array_equal(x, want.eigenvectors)
    np.testing.assert_array_equal(conv, want.converged)


def test_dask_refusals():
    with pytest.raises(TypeError, match="float32"):
        tkd.peaks(da.zeros((4, 45), dtype=np.float64))
    with pytest.raises(TypeError, match="no mask"):
        tkd.peaks(da.zeros((4, 45), dtype=np.float32), mask=np.ones(4, bool))
