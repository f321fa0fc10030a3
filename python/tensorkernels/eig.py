"""Eigenvalues (and eigenvectors) of a batch of small real, generally nonsymmetric matrices, as
LAPACK's dgeev computes them (balancing, Hessenberg reduction, double-shift QR): numpy.linalg's
eigvals/eig for stacks of matrices up to order 64, on the cores' CPU threads (or a GPU).

Order.  Each matrix's eigenvalues are sorted by real part, then imaginary part (a conjugate pair
is x - iy, x + iy); numpy.linalg does not sort.  Eigenvectors are the columns of `vectors`
(numpy's convention), unit 2-norm, largest-magnitude component real and positive.  A matrix
that does not converge or holds NaN/Inf gets NaN results (status: 1 not converged, 2 non-finite).
"""
from __future__ import annotations

from typing import Optional, Tuple, Union

import numpy as np

from . import _gpu_arrays as _gpu
from . import _tensorkernels as _core
from ._arrays import array, backend_code, output, resolve_gpus

__all__ = ["eigvals", "eig", "MAX_N"]

MAX_N = int(_core.eig_max_n())


def _shape(shape: tuple):
    """(n, batch) of matrices of `shape`, or the ValueError naming what is wrong."""
    n = shape[-1]
    if shape[-2] != n:
        raise ValueError(f"a: the last two axes must be square, got shape {shape}")
    if not 1 <= n <= MAX_N:
        raise ValueError(f"a: matrix order {n} is outside 1..{MAX_N}")
    return n, shape[:-2]


def _solve(a, vectors: bool, balance: bool, max_iter: int, backend: str, threads: int, device, gpus: int,
           out_values, out_vectors):
    lib = _gpu.library(a, "a")
    if lib is not None:
        return _solve_gpu(a, lib, vectors, balance, max_iter, backend, device, gpus, out_values, out_vectors)
    a = array("a", a, (np.float32, np.float64), min_ndim=2)
    n, batch = _shape(a.shape)
    ctype = np.complex64 if a.dtype == np.float32 else np.complex128
    values = output("values", out_values, batch + (n,), ctype)
    vecs = output("vectors", out_vectors, batch + (n, n), ctype) if vectors else None
    status = np.empty(batch, dtype=np.int8)
    dev = 0 if device is None else int(device)
    code = backend_code(backend, dev)
    # The complex arrays' float views: the core writes (re, im) pairs straight into them.
    failed = _core.eig_solve(a, values.view(a.dtype), None if vecs is None else vecs.view(a.dtype), status, n,
                             int(bool(balance)), int(max_iter), code, int(threads), dev,
                             resolve_gpus(gpus, backend, code, dev))
    return values, vecs, status, int(failed)


def _solve_gpu(a, lib, vectors, balance, max_iter, backend, device, gpus, out_values, out_vectors):
    """_solve of a CuPy array or PyTorch CUDA tensor, on its GPU (tk_eig_plan_execute_device)."""
    dev = _gpu.device_for("a", a, lib, device)
    _gpu.check_backend("a", a, lib, backend, gpus)
    a = _gpu.check("a", a, (np.float32, np.float64), lib, dev, min_ndim=2)
    n, batch = _shape(tuple(a.shape))
    single = str(a.dtype).endswith("float32")
    ctype = np.complex64 if single else np.complex128
    values = _gpu.empty("values", out_values, batch + (n,), ctype, lib, dev)
    vecs = _gpu.empty("vectors", out_vectors, batch + (n, n), ctype, lib, dev) if vectors else None
    status = _gpu.empty("status", None, batch, np.int8, lib, dev)
    _core.eig_solve_device(a, _gpu.as_floats(values, lib), None if vecs is None else _gpu.as_floats(vecs, lib), status,
                           n, int(bool(balance)), int(max_iter), dev, _gpu.stream(lib, dev))
    return values, vecs, status, None


def eigvals(a: np.ndarray, *, balance: bool = True, max_iter: int = 0, backend: str = "auto", threads: int = 0,
            device: Optional[int] = None, gpus: int = 0, return_status: bool = False, out: Optional[np.ndarray] = None
            ) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """Eigenvalues of every matrix of `a`.

    a: float32 or float64, C order, shape (..., n, n), 1 <= n <= 64; read in place.  A NumPy
        array, or a CuPy array / PyTorch CUDA tensor: that one stays on its GPU and the results
        (status included) are arrays of the same library there.
    balance: LAPACK-style balancing first (default on).  max_iter: QR iterations per
        eigenvalue (0: LAPACK's 30 * max(10, n)).
    backend/threads/device/gpus: as in :func:`tensorkernels.fibers.peaks`.
    out: optional complex64/complex128 (matching `a`) array of shape (..., n) to write into.
    Returns complex (..., n) values sorted per matrix by real then imaginary part; with
    return_status=True, (values, status) where status is int8 (...): 0 converged,
    1 not converged, 2 non-finite input.
    """
    values, _, status, _ = _solve(a, False, balance, max_iter, backend, threads, device, gpus, out, None)
    return (values, status) if return_status else values


def eig(a: np.ndarray, *, balance: bool = True, max_iter: int = 0, backend: str = "auto", threads: int = 0,
        device: Optional[int] = None, gpus: int = 0, return_status: bool = False, out: Optional[tuple] = None):
    """Eigenvalues and right eigenvectors of every matrix of `a` (numpy.linalg.eig's layout).

    Returns (values (..., n), vectors (..., n, n)), complex; column k of vectors is the unit
    eigenvector of values[..., k].  With return_status=True a third item, the int8 status.
    out: optional (values, vectors) arrays to write into.  Other arguments as :func:`eigvals`.
    """
    ov, ox = out if out is not None else (None, None)
    values, vecs, status, _ = _solve(a, True, balance, max_iter, backend, threads, device, gpus, ov, ox)
    return (values, vecs, status) if return_status else (values, vecs)
