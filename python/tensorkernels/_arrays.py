"""Argument checks shared by every binding: arrays reach the C cores as they are, or not at all.

The cores read and write C-order buffers of float32 or float64.  An array of another dtype or
layout is refused with a TypeError (dtype) or ValueError (layout, shape) that names the argument
and says how to convert it, rather than copied silently: a silent copy of a 10 GB volume doubles
the memory a user budgeted for.  GPU arrays (CuPy, PyTorch CUDA) are checked in _gpu_arrays.py
with the same rules, and go to the cores' device-array entry points instead.
"""
from __future__ import annotations

import numpy as np

from . import _gpu_arrays as _gpu
from . import _tensorkernels as _core

BACKENDS = {"cpu": 0, "omp": 1, "cuda": 2}


def resolve_gpus(gpus: int, backend: str, code: int, device: int) -> int:
    """The cores' cuda_device_count for `gpus=`, with the tools' --gpus rule: on the cuda backend
    the GPUs device .. device+gpus-1 share a batch (a contiguous share each, the results one
    GPU's bit for bit), 0 (the default) every visible GPU from `device` on; more than exist is a
    ValueError.  A run on the CPU (`code` not cuda) takes 0 and refuses a count: whoever names a
    GPU count expects GPUs, not a silent CPU run."""
    if isinstance(gpus, bool) or not isinstance(gpus, (int, np.integer)) or gpus < 0:
        raise ValueError(f"gpus must be an integer >= 0 (0: every visible GPU from `device` on), not {gpus!r}")
    if code != BACKENDS["cuda"]:
        if gpus == 0:
            return 1
        if backend == "auto":
            raise ValueError(f"gpus={gpus}: no usable CUDA GPU here, so backend='auto' runs on the CPU; leave gpus "
                             "out to run there, or run where the GPUs are")
        raise ValueError(f"gpus={gpus} applies to the cuda backend, and backend={backend!r} was given; leave gpus out, "
                         "or pass backend='cuda'")
    visible = int(_core.cuda_device_count())
    available = max(visible - int(device), 0)
    if gpus > available:
        raise ValueError(f"gpus={gpus}: {visible} CUDA device(s) visible, {available} of them from device {device} on; "
                         f"pass gpus={available} or fewer (0: all of them)")
    return int(gpus) if gpus else max(available, 1)


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
        _gpu.refuse(name, a, "this function (only fibers.peaks, sshopm and eig.eigvals/eig take GPU arrays)")
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
