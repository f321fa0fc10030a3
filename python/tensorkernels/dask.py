"""The per-voxel cores on Dask arrays: a volume larger than memory, or a stack of subjects,
runs chunk by chunk on whatever scheduler the caller uses (threads, processes, a
dask.distributed cluster).  Each function is lazy: it returns Dask arrays; `.compute()` runs it.

Chunking.  A core needs each voxel's whole series (the SH axis, a tensor's K entries, a matrix's
n x n), so those axes are made one chunk (rechunked where the input splits them); the voxel
axes keep the caller's chunks, which are the unit of work: choose them for memory (and, on the
GPU slice, for the device: about a million voxels a chunk).  A block Dask hands over as a
strided view is made C-contiguous (a copy of that block, chunk-sized, never of the whole
volume); blocks in C order are used in place.  Results equal the NumPy functions' bit for bit:
every voxel is computed alone.
"""
from __future__ import annotations

import numpy as np

from . import eig as _eig
from . import _sshopm
from . import fibers as _fibers

__all__ = ["peaks", "eigvals", "sshopm"]


def _whole_last(x, axes: int):
    """x with its last `axes` axes in one chunk each."""
    import dask.array as da

    x = da.asarray(x)
    if any(len(c) > 1 for c in x.chunks[-axes:]):
        x = x.rechunk({x.ndim - 1 - i: -1 for i in range(axes)})
    return x


def peaks(sh, *, num_peaks: int = 3, **options):
    """:func:`tensorkernels.fibers.peaks` on a Dask array of SH series (float32, (..., C)).

    Returns (directions, amplitudes) as Dask arrays of shapes (..., num_peaks, 3) and
    (..., num_peaks); the options are fibers.peaks' (mask: not here; mask by the result, or
    give NaN-free zeros, which have no peaks)."""
    sh = _whole_last(sh, 1)
    if sh.dtype != np.float32:
        raise TypeError(f"sh: dtype {sh.dtype} is not float32; convert explicitly (sh.astype(numpy.float32))")
    if "mask" in options or "out" in options:
        raise TypeError("tensorkernels.dask.peaks takes no mask or out (block-wise results are new arrays)")
    nd = sh.ndim

    def block(b):
        p = _fibers.peaks(np.ascontiguousarray(b), num_peaks=num_peaks, **options)
        return np.concatenate([p.directions, p.amplitudes[..., None]], axis=-1)

    both = sh.map_blocks(block, dtype=np.float32, drop_axis=nd - 1, new_axis=[nd - 1, nd],
                         chunks=sh.chunks[:-1] + ((num_peaks,), (4,)))
    return both[..., :3], both[..., 3]


def eigvals(a, **options):
    """:func:`tensorkernels.eig.eigvals` on a Dask array of matrices ((..., n, n), float32 or
    float64): a Dask array of complex eigenvalues (..., n)."""
    a = _whole_last(a, 2)
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"a: dtype {a.dtype} is not float32 or float64")
    if "out" in options or "return_status" in options:
        raise TypeError("tensorkernels.dask.eigvals takes no out or return_status")
    ctype = np.complex64 if a.dtype == np.float32 else np.complex128
    nd = a.ndim

    def block(b):
        return _eig.eigvals(np.ascontiguousarray(b), **options)

    return a.map_blocks(block, dtype=ctype, drop_axis=nd - 1, chunks=a.chunks[:-1])


def sshopm(tensors, order: int, dim: int = 3, *, num_starts: int = 128, **options):
    """:func:`tensorkernels.sshopm` on a Dask array of packed tensors ((..., K), float32 or
    float64); the starts (seed or given) are the same for every block, as in one call.

    Returns (eigenvalues (..., S), eigenvectors (..., S, dim), converged (..., S) bool) as Dask
    arrays (iterations are not kept)."""
    t = _whole_last(tensors, 1)
    if t.dtype not in (np.float32, np.float64):
        raise TypeError(f"tensors: dtype {t.dtype} is not float32 or float64")
    if "out" in options:
        raise TypeError("tensorkernels.dask.sshopm takes no out")
    if options.get("starts") is not None:
        num_starts = np.asarray(options["starts"]).shape[0]
    nd = t.ndim

    def block(b):
        s = _sshopm.sshopm(np.ascontiguousarray(b), order, dim, num_starts=num_starts, **options)
        return np.concatenate([s.eigenvectors, s.eigenvalues[..., None], s.converged[..., None].astype(b.dtype)],
                              axis=-1)

    both = t.map_blocks(block, dtype=t.dtype, drop_axis=nd - 1, new_axis=[nd - 1, nd],
                        chunks=t.chunks[:-1] + ((num_starts,), (dim + 2,)))
    return both[..., dim], both[..., :dim], both[..., dim + 1] > 0
