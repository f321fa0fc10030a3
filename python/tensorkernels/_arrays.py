"""Argument checks shared by every binding: arrays reach the C cores as they are, or not at all.

The cores read and write C-order buffers of float32 or float64.  An array of another dtype or
layout is refused with a TypeError (dtype) or ValueError (layout, shape) that names the argument
and says how to convert it, rather than copied silently: a silent copy of a 10 GB volume doubles
the memory a user budgeted for.  A GPU slice will add DLPack / __cuda_array_interface__ arrays
here (the check then also says which device the array lives on), with the same messages.
"""
from __future__ import annotations

import numpy as np

from . import _tensorkernels as _core

BACKENDS = {"cpu": 0, "omp": 1, "cuda": 2}


def backend_code(backend: str, device: int = 0) -> int:
    """The core's tk_backend for a name; "auto" is CUDA where the build has it and GPU `device`
    is usable, else OpenMP threads (the tools' and filters' rule)."""
    if backend == "auto":
        if _core.has_cuda() and _core.cuda_usable(device)[0]:
            return BACKENDS["cuda"]
        return BACKENDS["omp"]
    try:
        return BACKENDS[backend]
    except (KeyError, TypeError):
        raise ValueError(f"backend must be one of 'auto', 'cpu', 'omp', 'cuda', not {backend!r}") from None


def array(name: str, a, dtypes: tuple, min_ndim: int = 1) -> np.ndarray:
    """`a` itself when it is a C-contiguous, aligned NumPy array of one of `dtypes`; else a
    TypeError (not an array, wrong dtype) or ValueError (layout, dimensions)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: expected a numpy.ndarray, got {type(a).__name__} "
                        f"(numpy.asarray(..., dtype=numpy.{dtypes[0].__name__}) makes one)")
    if a.dtype.type not in dtypes:
        names = " or ".join(d.__name__ for d in dtypes)
        raise TypeError(f"{name}: dtype {a.dtype} is not {names}; convert explicitly "
                        f"({name}.astype(numpy.{dtypes[0].__name__}), a copy) if that is meant")
    if not a.flags.c_contiguous or not a.flags.aligned:
        raise ValueError(f"{name}: the array is not C-contiguous (a view with strides {a.strides}); the core "
                         f"reads it in place, so pass numpy.ascontiguousarray({name}) (a copy) if that is meant")
    if a.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimensions, got shape {a.shape}")
    return a


def output(name: str, out, shape: tuple, dtype) -> np.ndarray:
    """A new C-order array of shape and dtype, or `out` when it is one (the results are then
    written into it, no allocation)."""
    if out is None:
        return np.empty(shape, dtype=dtype)
    out = array(name, out, (np.dtype(dtype).type,))
    if out.shape != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {out.shape}")
    if not out.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    return out
