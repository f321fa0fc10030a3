"""Fiber directions from spherical-harmonic (SH) series: the local maxima of each voxel's SH
function on the sphere, as `tk-fibers` (and MRtrix3's sh2peaks) find them.

Frames.  Directions are unit vectors in the frame the SH basis is defined in, the array's
x, y, z as the coefficients mean them: for MRtrix3's SH (basis "tournier", as `dwi2fod` writes
them) that is world RAS already, as `sh2peaks` and `tk-fibers` report them; for DIPY's
("descoteaux") it is the voxel axes, which the image's direction matrix (the sform's rotation)
turns into world RAS, as `tk-fibers` does (Documentation/user-guide.md, "Coordinate frames").
Directions are axes: d and -d are the same fiber.  SH conventions are those of `tk_fibers.h`:
coefficient j = l(l+1)/2 + m for even l; `legacy` picks the older variant of either basis.
Amplitudes are the SH function's values at the peaks, in the units of the coefficients
(an FOD's amplitude).
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from . import _gpu_arrays as _gpu
from . import _tensorkernels as _core
from ._arrays import array, backend_code, output, resolve_gpus

__all__ = ["Peaks", "peaks", "num_coeffs", "lmax_for_count", "BASES"]

BASES = {"tournier": 0, "descoteaux": 1}


class Peaks(NamedTuple):
    """Result of :func:`peaks`."""

    directions: np.ndarray  #: float32 (..., num_peaks, 3), unit vectors in the SH frame; NaN where none
    amplitudes: np.ndarray  #: float32 (..., num_peaks), descending; NaN where a voxel has fewer peaks
    bad_voxels: int  #: voxels with non-finite coefficients (their outputs are NaN)


def num_coeffs(lmax: int) -> int:
    """(lmax+1)(lmax+2)/2 for an even lmax >= 0, else 0."""
    return int(_core.sh_num_coeffs(lmax))


def lmax_for_count(count: int) -> int:
    """The even lmax with `count` coefficients (6 -> 2, 15 -> 4, 28 -> 6, 45 -> 8, ...), or -1."""
    return int(_core.sh_lmax_for_count(count))


def peaks(sh, *, num_peaks: int = 3, basis: str = "tournier", legacy: bool = False,
          threshold: Optional[float] = 0.0, relative_threshold: float = 0.0, min_separation: float = 0.0,
          mask=None, backend: str = "auto", threads: int = 0, device: Optional[int] = None, gpus: int = 0,
          out: Optional[tuple] = None) -> Peaks:
    """Peaks of every SH series of `sh` (the options of `tk-fibers`).

    sh: float32, C order, shape (..., C): the last axis holds one even-order series of
        C = (lmax+1)(lmax+2)/2 coefficients (C = 45: lmax 8); read in place, not copied.
        A NumPy array, or a CuPy array / PyTorch CUDA tensor: that one stays on its GPU (the
        cuda backend runs there, nothing is copied to the host) and the results are arrays of
        the same library on the same GPU.
    num_peaks: peaks kept per voxel (`--num`, sh2peaks' -num; default 3).
    basis, legacy: the SH basis of the coefficients ("tournier": MRtrix3, "descoteaux": DIPY).
    threshold: keep peaks whose amplitude > threshold (absolute, the SH function's units; the
        default 0 drops negative lobes; None keeps every maximum, as sh2peaks' default).
    relative_threshold: keep peaks >= this fraction of the voxel's largest (0..1).
    min_separation: drop a peak within this angle (degrees) of a larger one.
    mask: None or a bool/uint8 array of shape sh.shape[:-1] (of sh's library and GPU); 0 leaves
        a voxel's outputs NaN.
    backend: "auto" (CUDA where built and usable, else "omp"), "cpu" (one thread), "omp", "cuda".
    threads: OpenMP threads for "omp" (0: OpenMP's default).  device: the CUDA device (default
        0; a GPU array's own).  gpus: GPUs from `device` on that share the voxels (`--gpus`; 0:
        every visible one; cuda backend only, one for a GPU array).
    out: optional (directions, amplitudes) arrays to write into (float32, C order, the result's
        shapes): the results are then those arrays, no allocation.
    Returns Peaks(directions, amplitudes, bad_voxels).  Raises TypeError/ValueError for arrays
    of another dtype, layout, shape or device, ValueError with the core's message for bad options.
    """
    lib = _gpu.library(sh, "sh")
    if lib is not None:
        return _peaks_gpu(sh, lib, num_peaks, basis, legacy, threshold, relative_threshold, min_separation, mask,
                          backend, device, gpus, out)
    sh = array("sh", sh, (np.float32,))
    lmax, code = _check_options(sh.shape, num_peaks, basis)
    vox = sh.shape[:-1]
    if mask is not None:
        _gpu.refuse("mask", mask, "a call on a NumPy sh")
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
            mask = mask.view(np.uint8)  # same bytes (0/1): a view, not a copy
        mask = array("mask", mask, (np.uint8,), min_ndim=0)
        if mask.shape != vox:
            raise ValueError(f"mask: expected shape {vox} (sh's without its last axis), got {mask.shape}")
    d_out, a_out = out if out is not None else (None, None)
    directions = output("directions", d_out, vox + (num_peaks, 3), np.float32)
    amplitudes = output("amplitudes", a_out, vox + (num_peaks,), np.float32)
    dev = 0 if device is None else int(device)
    bcode = backend_code(backend, dev)
    bad = _core.fibers_peaks(sh, mask, directions, amplitudes, lmax, code, int(bool(legacy)), int(num_peaks),
                             -np.inf if threshold is None else float(threshold), float(relative_threshold),
                             float(min_separation), bcode, int(threads), dev, resolve_gpus(gpus, backend, bcode, dev))
    return Peaks(directions, amplitudes, int(bad))


def _check_options(shape: tuple, num_peaks: int, basis: str):
    """(lmax, the basis' code) for SH of `shape`, or the ValueError naming what is wrong."""
    lmax = lmax_for_count(shape[-1])
    if lmax < 0:
        raise ValueError(f"sh: the last axis has {shape[-1]} coefficients, not the count of an even-order "
                         "SH series (6, 15, 28, 45, 66, 91, ...)")
    if num_peaks < 1:
        raise ValueError(f"num_peaks must be >= 1, got {num_peaks}")
    try:
        return lmax, BASES[basis]
    except KeyError:
        raise ValueError(f"basis must be 'tournier' or 'descoteaux', not {basis!r}") from None


def _peaks_gpu(sh, lib, num_peaks, basis, legacy, threshold, relative_threshold, min_separation, mask, backend,
               device, gpus, out) -> Peaks:
    """peaks() of a CuPy array or PyTorch CUDA tensor, on its GPU (tk_fibers_plan_execute_device)."""
    dev = _gpu.device_for("sh", sh, lib, device)
    _gpu.check_backend("sh", sh, lib, backend, gpus)
    sh = _gpu.check("sh", sh, (np.float32,), lib, dev)
    lmax, code = _check_options(tuple(sh.shape), num_peaks, basis)
    vox = tuple(sh.shape[:-1])
    if mask is not None:
        if _gpu.library(mask, "mask") == lib and str(mask.dtype).endswith("bool"):
            mask = _gpu.check("mask", mask, (np.bool_,), lib, dev, min_ndim=0)
            mask = _gpu.as_bytes(mask, lib)
        mask = _gpu.check("mask", mask, (np.uint8,), lib, dev, min_ndim=0)
        if tuple(mask.shape) != vox:
            raise ValueError(f"mask: expected shape {vox} (sh's without its last axis), got {tuple(mask.shape)}")
    d_out, a_out = out if out is not None else (None, None)
    directions = _gpu.empty("directions", d_out, vox + (num_peaks, 3), np.float32, lib, dev)
    amplitudes = _gpu.empty("amplitudes", a_out, vox + (num_peaks,), np.float32, lib, dev)
    bad = _core.fibers_peaks_device(sh, mask, directions, amplitudes, lmax, code, int(bool(legacy)), int(num_peaks),
                                    -np.inf if threshold is None else float(threshold), float(relative_threshold),
                                    float(min_separation), dev, _gpu.stream(lib, dev))
    return Peaks(directions, amplitudes, int(bad))
