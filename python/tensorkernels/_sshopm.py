"""Z-eigenpairs of symmetric tensors by SS-HOPM (Kolda and Mayo): (lambda, x) with
A x^(m-1) = lambda x and |x| = 1, from many starts per tensor.

Storage.  A symmetric tensor of order m and dimension n is packed: its K = binom(m+n-1, m)
unique entries in lexicographic order of non-decreasing index tuples (m=4, n=3: 0000, 0001,
0002, 0011, 0012, 0022, 0111, ..., 2222), as `tk-teig` reads them.  A batch is an array of
shape (..., K).  Eigenvectors are in the tensor's own frame (its index axes); eigenvalues in
the tensor's units.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from . import _tensorkernels as _core
from ._arrays import array, backend_code, output

__all__ = ["Starts", "Eigenpairs", "sshopm", "eigenpairs", "num_unique", "STABILITY"]

STABILITY = ("max", "min", "saddle", "degenerate")


class Starts(NamedTuple):
    """Per-start results of :func:`sshopm`, each indexed [..., start]."""

    eigenvalues: np.ndarray  #: (..., S), the tensors' dtype
    eigenvectors: np.ndarray  #: (..., S, n), unit vectors
    iterations: np.ndarray  #: int32 (..., S)
    converged: np.ndarray  #: bool (..., S)


class Eigenpairs(NamedTuple):
    """Distinct eigenpairs of :func:`eigenpairs`, sorted by tensor then eigenvalue descending."""

    tensor: np.ndarray  #: int64 (P,), flat index of the tensor in the batch
    eigenvalues: np.ndarray  #: float64 (P,)
    eigenvectors: np.ndarray  #: float64 (P, n)
    stability: np.ndarray  #: int8 (P,): index into STABILITY (0 max, 1 min, 2 saddle, 3 degenerate)
    num_starts: np.ndarray  #: int32 (P,): how many starts reached the pair


def num_unique(order: int, dim: int) -> int:
    """K = binom(order+dim-1, order), the packed length of one tensor (0 if invalid)."""
    return int(_core.sym_num_unique(order, dim))


def _run(tensors, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled, backend,
         threads, device, out):
    tensors = array("tensors", tensors, (np.float32, np.float64))
    k = num_unique(order, dim)
    if k == 0:
        raise ValueError(f"order {order}, dim {dim}: need order >= 2 and dim >= 2")
    if tensors.shape[-1] != k:
        raise ValueError(f"tensors: the last axis must hold the {k} unique entries of an order-{order}, "
                         f"dimension-{dim} symmetric tensor, got shape {tensors.shape}")
    if starts is not None:
        starts = array("starts", starts, (tensors.dtype.type,), min_ndim=2)
        if starts.ndim != 2 or starts.shape[1] != dim:
            raise ValueError(f"starts: expected shape (num_starts, {dim}), got {starts.shape}")
        num_starts = starts.shape[0]
    if num_starts < 1:
        raise ValueError(f"num_starts must be >= 1, got {num_starts}")
    if shift == "adaptive":
        adaptive, alpha = 1, (0.0 if maximize else -1.0)
    else:
        adaptive, alpha = 0, float(shift)
    batch = tensors.shape[:-1]
    o = out if out is not None else Starts(None, None, None, None)
    lam = output("eigenvalues", o.eigenvalues, batch + (num_starts,), tensors.dtype)
    x = output("eigenvectors", o.eigenvectors, batch + (num_starts, dim), tensors.dtype)
    it = output("iterations", o.iterations, batch + (num_starts,), np.int32)
    conv = output("converged", o.converged, batch + (num_starts,), np.bool_)
    _core.sshopm_solve(tensors, starts, lam, x, it, conv.view(np.uint8), order, dim, int(bool(unrolled)),
                       adaptive, alpha, float(tol), int(max_iter), int(num_starts), int(seed),
                       backend_code(backend, device), int(threads), int(device))
    return tensors, Starts(lam, x, it, conv)


def sshopm(tensors: np.ndarray, order: int, dim: int = 3, *, num_starts: int = 128, shift="adaptive",
           maximize: bool = True, tol: float = 0.0, max_iter: int = 1000, seed: int = 0,
           starts: Optional[np.ndarray] = None, unrolled: bool = False, backend: str = "auto",
           threads: int = 0, device: int = 0, out: Optional[Starts] = None) -> Starts:
    """SS-HOPM from every start of every tensor.

    tensors: float32 or float64, C order, shape (..., K): packed symmetric tensors (module doc).
    order, dim: m >= 2 and n >= 2.
    num_starts: random unit starts per tensor (the same for every tensor; `seed` picks them),
        or starts: (S, dim) start vectors in the tensors' dtype (normalized by the core).
    shift: "adaptive" (GEAP's shift; `maximize` picks local maxima or minima of A x^m) or a
        fixed alpha (>= 0 converges to maxima, < 0 to minima).
    tol: converged when |x_{k+1} - x_k| <= tol (0: 1e-6 for float32, 1e-12 for float64).
    max_iter: iteration cap per start.  unrolled: the unrolled kernels of (4,3), (6,3), (8,3).
    backend/threads/device: as in :func:`tensorkernels.fibers.peaks`.
    out: optional Starts of arrays to write into (the result's shapes and dtypes).
    """
    return _run(tensors, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled, backend,
                threads, device, out)[1]


def eigenpairs(tensors: np.ndarray, order: int, dim: int = 3, *, merge_tol: float = 0.0,
               **kwargs) -> Eigenpairs:
    """The distinct eigenpairs SS-HOPM reaches (as `tk-teig` lists them): converged starts merged
    when their vectors are within merge_tol (0: the precision's default; for even order x and -x
    are one pair, reported with its largest-magnitude entry positive), each classified from the
    projected Hessian in double.  Other arguments as :func:`sshopm`.
    """
    tensors, s = _run(tensors, order, dim, kwargs.pop("num_starts", 128), kwargs.pop("shift", "adaptive"),
                      kwargs.pop("maximize", True), kwargs.pop("tol", 0.0), kwargs.pop("max_iter", 1000),
                      kwargs.pop("seed", 0), kwargs.pop("starts", None), kwargs.pop("unrolled", False),
                      kwargs.pop("backend", "auto"), kwargs.pop("threads", 0), kwargs.pop("device", 0), None)
    if kwargs:
        raise TypeError(f"eigenpairs: unexpected arguments {sorted(kwargs)}")
    t, lam, x, stab, ns = _core.sshopm_distinct(tensors, s.eigenvalues, s.eigenvectors, s.iterations,
                                                s.converged.view(np.uint8), order, dim, s.eigenvalues.shape[-1],
                                                float(merge_tol))
    return Eigenpairs(t, lam, x, stab, ns)
