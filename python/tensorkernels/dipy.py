"""DIPY interoperability: :func:`peaks_from_sh` returns DIPY's PeaksAndMetrics, so that
`dipy.io.peaks.save_peaks` (.pam5) and DIPY's trackers (LocalTracking with the peaks as the
direction getter) take the peaks the core found.

DIPY's conventions, kept here: directions in the voxel axes (DIPY's frame), peak_values 0 and
peak_indices -1 where a voxel has fewer peaks (not NaN), peak_indices the nearest vertex of
`sphere`, qa the peak minus the ODF's minimum on the sphere over the largest peak of the
volume, gfa of the ODF on the sphere (dipy.reconst.odf.gfa).  Unlike DIPY's peaks_from_model,
the peaks are exact maxima of the SH function (not vertices of the sphere).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from . import fibers
from .io import direction_matrix

__all__ = ["peaks_from_sh"]

_DIPY_BASIS = {"descoteaux": "descoteaux07", "tournier": "tournier07"}


def peaks_from_sh(sh: np.ndarray, sphere=None, *, relative_peak_threshold: float = 0.5,
                  min_separation_angle: float = 25.0, npeaks: int = 5, mask: Optional[np.ndarray] = None,
                  basis: str = "descoteaux", legacy: bool = True, affine: Optional[np.ndarray] = None,
                  gfa_thr: float = 0.0, normalize_peaks: bool = False, return_odf: bool = False,
                  backend: str = "auto", threads: int = 0):
    """Peaks of an SH volume as DIPY's PeaksAndMetrics (peaks_from_model's attributes).

    sh: float32, C order (x, y, z, C): DIPY's `shm_coeff` (np.ascontiguousarray(...,
        dtype=np.float32) of a fit's shm_coeff is the one copy).
    sphere: DIPY Sphere for peak_indices, the ODF, gfa and qa (None: dipy.data.default_sphere).
    relative_peak_threshold, min_separation_angle (degrees), npeaks, mask, gfa_thr,
        normalize_peaks, return_odf: as dipy.direction.peaks_from_model.
    basis, legacy: the SH basis (DIPY's default: "descoteaux", legacy=True in DIPY 1.x;
        "tournier" for MRtrix3's, which is defined in world RAS: its peaks are turned into
        DIPY's voxel axes by `affine`'s direction matrix, so affine is then required).
    affine: voxel to world, stored as pam.affine (save_peaks writes it).
    """
    from dipy.data import default_sphere
    from dipy.direction.peaks import PeaksAndMetrics
    from dipy.reconst.odf import gfa
    from dipy.reconst.shm import sh_to_sf_matrix

    if basis == "tournier" and affine is None:
        raise ValueError("basis 'tournier' (MRtrix3's) is defined in world coordinates: give the affine, "
                         "so the peaks can be put in DIPY's voxel axes")
    sphere = default_sphere if sphere is None else sphere
    p = fibers.peaks(sh, num_peaks=npeaks, basis=basis, legacy=legacy, threshold=None,
                     relative_threshold=relative_peak_threshold, min_separation=min_separation_angle, mask=mask,
                     backend=backend, threads=threads)
    lmax = fibers.lmax_for_count(sh.shape[-1])
    dirs = p.directions.astype(np.float64)
    if basis == "tournier":
        dirs = dirs @ direction_matrix(affine)  # R^T d: world RAS to voxel axes
    values = p.amplitudes.astype(np.float64)
    found = np.isfinite(values)
    # ODF on the sphere (DIPY's basis functions), for gfa and qa
    b, inv_b = sh_to_sf_matrix(sphere, sh_order=lmax, basis_type=_DIPY_BASIS[basis], return_inv=True,
                               legacy=legacy)
    odf = sh.astype(np.float64) @ b
    g = np.zeros(sh.shape[:-1])
    inside = np.ones(sh.shape[:-1], bool) if mask is None else np.asarray(mask, bool)
    g[inside] = gfa(odf[inside])
    keep = found & inside[..., None] & (g >= gfa_thr)[..., None]
    values = np.where(keep, values, 0.0)
    dirs = np.where(keep[..., None], dirs, 0.0)
    vertices = np.asarray(sphere.vertices, dtype=np.float64)
    indices = np.where(keep, np.argmax(dirs @ vertices.T, axis=-1), -1).astype(np.int32)
    global_max = values[..., 0].max() if values.size else 0.0
    qa = np.where(keep, values - odf.min(axis=-1)[..., None], 0.0)
    if global_max > 0:
        qa /= global_max
    if normalize_peaks:
        first = values[..., :1]
        values = np.divide(values, first, out=np.zeros_like(values), where=first > 0)
        dirs = dirs * values[..., None]
    pam = PeaksAndMetrics()
    pam.sphere = sphere
    pam.peak_dirs, pam.peak_values, pam.peak_indices = dirs, values, indices
    pam.gfa, pam.qa = g, qa
    pam.shm_coeff, pam.B = sh, b
    pam.odf = odf if return_odf else None
    pam.ang_thr = float(min_separation_angle)
    pam.total_weight = 0.5  # peaks_from_model's default
    if affine is not None:
        pam.affine = np.asarray(affine, dtype=np.float64)
    del inv_b
    return pam
