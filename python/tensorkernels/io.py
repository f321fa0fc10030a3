"""SH volumes from files through nibabel, with the command-line tools' frame rules, and peaks
in world coordinates.

Frames (Documentation/user-guide.md, "Coordinate frames"): a voxel's world (RAS, mm) position
is `affine @ (i, j, k, 1)` with nibabel's affine, which follows the NIfTI rule the tools use
(the sform where sform_code > 0, else the qform where qform_code > 0).  MRtrix3's SH basis
("tournier") is defined in world RAS already; DIPY's ("descoteaux") in the voxel axes, so its
peaks are turned into world RAS by the affine's direction matrix (its columns scaled to unit
length, reflections included), exactly as `tk-fibers` writes them.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple, Optional

import numpy as np

from . import _tensorkernels as _core
from . import fibers

__all__ = ["SHImage", "load_sh", "direction_matrix", "peaks", "save_peaks"]


class SHImage(NamedTuple):
    """An SH volume as :func:`load_sh` reads it."""

    sh: np.ndarray  #: float32 (x, y, z, C), C order: each voxel's coefficients together
    affine: np.ndarray  #: float64 4 x 4: voxel (i, j, k) to world RAS millimetres
    lmax: int
    basis: str  #: "tournier" (MRtrix3) or "descoteaux" (DIPY)
    legacy: bool
    path: str


def direction_matrix(affine: np.ndarray) -> np.ndarray:
    """The 3 x 3 direction matrix of an affine: its columns at unit length (a rotation, or a
    rotation with a reflection).  ValueError when they are not orthogonal (a sheared affine,
    which the tools refuse too)."""
    m = np.asarray(affine, dtype=np.float64)[:3, :3]
    norms = np.linalg.norm(m, axis=0)
    if np.any(norms == 0):
        raise ValueError(f"the affine has a zero column: {m.tolist()}")
    r = m / norms
    if not np.allclose(r.T @ r, np.eye(3), atol=1e-4):
        raise ValueError(f"the affine's axes are not orthogonal (sheared): {m.tolist()}")
    return r


def load_sh(path: str, *, basis: str = "tournier", legacy: bool = False, check_basis: bool = True) -> SHImage:
    """Read a 4-D SH volume (NIfTI or anything nibabel reads; the last axis holds one even-order
    series, 6, 15, 28, 45, ... coefficients) as float32 in C order.

    NIfTI stores x fastest, so the C-order array is a copy made here, once.  basis/legacy:
    the basis the file was written in, as `tk-fibers --basis/--legacy` (default MRtrix3's).
    check_basis: warn (UserWarning) when the data look like another basis than the one given
    (tk_sh_guess_basis, as tk-fibers does), naming the arguments that read them.
    Raises ValueError naming the file for data of another shape.
    """
    import nibabel as nib  # only this module needs it

    img = nib.load(path)
    shape = img.shape
    if len(shape) != 4 or fibers.lmax_for_count(shape[3]) < 0:
        raise ValueError(f"{path}: expected a 4-D SH volume whose last axis holds 6, 15, 28, 45, ... "
                         f"coefficients, got shape {shape}")
    if basis not in fibers.BASES:
        raise ValueError(f"basis must be 'tournier' or 'descoteaux', not {basis!r}")
    sh = np.ascontiguousarray(np.asarray(img.dataobj, dtype=np.float32))
    lmax = fibers.lmax_for_count(shape[3])
    if check_basis:
        g = _core.sh_guess_basis(sh, lmax, fibers.BASES[basis], int(bool(legacy)))
        if g["contradicts"]:
            flags = f"basis='{g['basis']}'" + (f", legacy={bool(g['legacy'])}" if g["legacy_known"] else "")
            warnings.warn(f"{path}: the data look like another SH basis than {basis}"
                          f"{' legacy' if legacy else ''} ({g['evidence']:.1f} times likelier: {flags}); "
                          f"read as asked", UserWarning, stacklevel=2)
    return SHImage(sh, np.array(img.affine, dtype=np.float64), lmax, basis, bool(legacy), str(path))


def peaks(image: SHImage, **options) -> fibers.Peaks:
    """:func:`tensorkernels.fibers.peaks` of a loaded volume in its basis, with the directions in
    world RAS (rotated in place by the direction matrix where the basis is DIPY's)."""
    p = fibers.peaks(image.sh, basis=image.basis, legacy=image.legacy, **options)
    if image.basis == "descoteaux":
        r = direction_matrix(image.affine).astype(np.float32)
        p.directions[...] = p.directions @ r.T
    return p


def save_peaks(path: str, p: fibers.Peaks, like: SHImage) -> None:
    """Write peaks in sh2peaks' layout (and tk-fibers'): a float32 NIfTI of shape (x, y, z, 3 * num)
    holding each peak's direction times its amplitude, NaN where none, on the grid of `like`."""
    import nibabel as nib

    data = (p.directions * p.amplitudes[..., None]).reshape(p.amplitudes.shape[:-1] + (-1,))
    nib.save(nib.Nifti1Image(data.astype(np.float32), like.affine), path)
