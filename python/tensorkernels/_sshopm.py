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

from . import _gpu_arrays as _gpu
from . import _tensorkernels as _core
from ._arrays import array, backend_code, output, resolve_gpus

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


def _packed_length(shape: tuple, order: int, dim: int) -> int:
    k = num_unique(order, dim)
    if k == 0:
        raise ValueError(f"order {order}, dim {dim}: need order >= 2 and dim >= 2")
    if shape[-1] != k:
        raise ValueError(f"tensors: the last axis must hold the {k} unique entries of an order-{order}, "
                         f"dimension-{dim} symmetric tensor, got shape {shape}")
    return k


def _starts_and_shift(starts, dtype, dim, num_starts, shift, maximize):
    """(starts, num_starts, adaptive, alpha): the start vectors are a plan parameter, read on
    the host, so a NumPy array whatever the tensors' device."""
    if starts is not None:
        _gpu.refuse("starts", starts, "the start vectors (read once by the plan, on the host)")
        starts = array("starts", starts, (np.dtype(dtype).type,), min_ndim=2)
        if starts.ndim != 2 or starts.shape[1] != dim:
            raise ValueError(f"starts: expected shape (num_starts, {dim}), got {starts.shape}")
        num_starts = starts.shape[0]
    if num_starts < 1:
        raise ValueError(f"num_starts must be >= 1, got {num_starts}")
    if shift == "adaptive":
        return starts, num_starts, 1, (0.0 if maximize else -1.0)
    return starts, num_starts, 0, float(shift)


def _run(tensors, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled, backend,
         threads, device, gpus, out):
    lib = _gpu.library(tensors, "tensors")
    if lib is not None:
        return _run_gpu(tensors, lib, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled,
                        backend, device, gpus, out)
    tensors = array("tensors", tensors, (np.float32, np.float64))
    _packed_length(tensors.shape, order, dim)
    starts, num_starts, adaptive, alpha = _starts_and_shift(starts, tensors.dtype, dim, num_starts, shift, maximize)
    batch = tensors.shape[:-1]
    o = out if out is not None else Starts(None, None, None, None)
    lam = output("eigenvalues", o.eigenvalues, batch + (num_starts,), tensors.dtype)
    x = output("eigenvectors", o.eigenvectors, batch + (num_starts, dim), tensors.dtype)
    it = output("iterations", o.iterations, batch + (num_starts,), np.int32)
    conv = output("converged", o.converged, batch + (num_starts,), np.bool_)
    dev = 0 if device is None else int(device)
    code = backend_code(backend, dev)
    _core.sshopm_solve(tensors, starts, lam, x, it, conv.view(np.uint8), order, dim, int(bool(unrolled)),
                       adaptive, alpha, float(tol), int(max_iter), int(num_starts), int(seed),
                       code, int(threads), dev, resolve_gpus(gpus, backend, code, dev))
    return tensors, Starts(lam, x, it, conv)


def _run_gpu(tensors, lib, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled, backend,
             device, gpus, out):
    """_run of a CuPy array or PyTorch CUDA tensor, on its GPU (tk_sshopm_plan_execute_device)."""
    dev = _gpu.device_for("tensors", tensors, lib, device)
    _gpu.check_backend("tensors", tensors, lib, backend, gpus)
    tensors = _gpu.check("tensors", tensors, (np.float32, np.float64), lib, dev)
    shape = tuple(tensors.shape)
    _packed_length(shape, order, dim)
    dtype = np.float32 if str(tensors.dtype).endswith("float32") else np.float64
    starts, num_starts, adaptive, alpha = _starts_and_shift(starts, dtype, dim, num_starts, shift, maximize)
    batch = shape[:-1]
    o = out if out is not None else Starts(None, None, None, None)
    lam = _gpu.empty("eigenvalues", o.eigenvalues, batch + (num_starts,), dtype, lib, dev)
    x = _gpu.empty("eigenvectors", o.eigenvectors, batch + (num_starts, dim), dtype, lib, dev)
    it = _gpu.empty("iterations", o.iterations, batch + (num_starts,), np.int32, lib, dev)
    conv = _gpu.empty("converged", o.converged, batch + (num_starts,), np.bool_, lib, dev)
    _core.sshopm_solve_device(tensors, starts, lam, x, it, _gpu.as_bytes(conv, lib), order, dim, int(bool(unrolled)),
                              adaptive, alpha, float(tol), int(max_iter), int(num_starts), int(seed), dev,
                              _gpu.stream(lib, dev))
    return tensors, Starts(lam, x, it, conv)


def sshopm(tensors: np.ndarray, order: int, dim: int = 3, *, num_starts: int = 128, shift="adaptive",
           maximize: bool = True, tol: float = 0.0, max_iter: int = 1000, seed: int = 0,
           starts: Optional[np.ndarray] = None, unrolled: bool = False, backend: str = "auto",
           threads: int = 0, device: Optional[int] = None, gpus: int = 0, out: Optional[Starts] = None) -> Starts:
    """SS-HOPM from every start of every tensor.

    tensors: float32 or float64, C order, shape (..., K): packed symmetric tensors (module doc).
        A NumPy array, or a CuPy array / PyTorch CUDA tensor: that one stays on its GPU and the
        results are arrays of the same library there (`starts` stays a NumPy array).
    order, dim: m >= 2 and n >= 2.
    num_starts: random unit starts per tensor (the same for every tensor; `seed` picks them),
        or starts: (S, dim) start vectors in the tensors' dtype (normalized by the core).
    shift: "adaptive" (GEAP's shift; `maximize` picks local maxima or minima of A x^m) or a
        fixed alpha (>= 0 converges to maxima, < 0 to minima).
    tol: converged when |x_{k+1} - x_k| <= tol (0: 1e-6 for float32, 1e-12 for float64).
    max_iter: iteration cap per start.  unrolled: the unrolled kernels of (4,3), (6,3), (8,3).
    backend/threads/device/gpus: as in :func:`tensorkernels.fibers.peaks`.
    out: optional Starts of arrays to write into (the result's shapes and dtypes).
    """
    return _run(tensors, order, dim, num_starts, shift, maximize, tol, max_iter, seed, starts, unrolled, backend,
                threads, device, gpus, out)[1]


def eigenpairs(tensors: np.ndarray, order: int, dim: int = 3, *, merge_tol: float = 0.0,
               **kwargs) -> Eigenpairs:
    """The distinct eigenpairs SS-HOPM reaches (as `tk-teig` lists them): converged starts merged
    when their vectors are within merge_tol (0: the precision's default; for even order x and -x
    are one pair, reported with its largest-magnitude entry positive), each classified from the
    projected Hessian in double, on the host: NumPy tensors only.  Other arguments as :func:`sshopm`.
    """
    _gpu.refuse("tensors", tensors, "eigenpairs (its merge runs on the host)")
    tensors, s = _run(tensors, order, dim, kwargs.pop("num_starts", 128), kwargs.pop("shift", "adaptive"),
                      kwargs.pop("maximize", True), kwargs.pop("tol", 0.0), kwargs.pop("max_iter", 1000),
                      kwargs.pop("seed", 0), kwargs.pop("starts", None), kwargs.pop("unrolled", False),
                      kwargs.pop("backend", "auto"), kwargs.pop("threads", 0), kwargs.pop("device", None),
                      kwargs.pop("gpus", 0), None)
    if kwargs:
        raise TypeError(f"eigenpairs: unexpected arguments {sorted(kwargs)}")
    t, lam, x, stab, ns = _core.sshopm_distinct(tensors, s.eigenvalues, s.eigenvectors, s.iterations,
                                                s.converged.view(np.uint8), order, dim, s.eigenvalues.shape[-1],
                                                float(merge_tol))
    return Eigenpairs(t, lam, x, stab, ns)
