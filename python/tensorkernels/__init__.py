"""TensorKernels' cores on NumPy arrays: SS-HOPM eigenpairs of symmetric tensors
(:func:`sshopm`, :func:`eigenpairs`), fiber peaks of spherical-harmonic volumes
(:func:`tensorkernels.fibers.peaks`), batched eigenvalues (:mod:`tensorkernels.eig`), sparse
FastTucker (:mod:`tensorkernels.tucker`), PLTF (:mod:`tensorkernels.pltf`) and streamline
tractography (:mod:`tensorkernels.tracking`).

Arrays are read and written in place: C-order float32/float64 as each function says, anything
else refused with a TypeError or ValueError rather than copied.  `fibers.peaks`, `sshopm` and
`eig` also take CuPy arrays and PyTorch CUDA tensors, which stay on their GPU (the results are
arrays of the same library there).  Errors of the cores are Python
exceptions with the core's message; the GIL is released while a core runs, so threads of one
process can run cores side by side.  Documentation/python.md.
"""
from __future__ import annotations

from . import _tensorkernels
from . import eig, fibers, io, pltf, tracking, tucker
# tensorkernels.dipy (DIPY interop) is imported on use: DIPY is optional.
from ._sshopm import STABILITY, Eigenpairs, Starts, eigenpairs, num_unique, sshopm

__version__: str = _tensorkernels.core_version()

__all__ = ["__version__", "core_version", "has_cuda", "sshopm", "eigenpairs", "Starts", "Eigenpairs",
           "STABILITY", "num_unique", "fibers", "eig", "io", "tucker", "pltf", "tracking"]


def core_version() -> str:
    """The version of the C core the extension links (the project's, MAJOR.MINOR.PATCH)."""
    return _tensorkernels.core_version()


def has_cuda() -> bool:
    """Whether the core was built with its CUDA backends (pip install ./python builds the CPU ones)."""
    return bool(_tensorkernels.has_cuda())
