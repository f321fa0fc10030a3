"""tensorkernels.dipy.peaks_from_sh against DIPY's own peak search (peak_directions on the ODF
sampled on a dense sphere), DIPY's .pam5 writer and reader, and DIPY's tracker."""
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk
import tensorkernels.dipy  # noqa: F401  (imported on use)

pytest.importorskip("dipy")
nib = pytest.importorskip("nibabel")
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # DIPY's legacy basis
DATA = Path(__file__).resolve().parents[2] / "Data" / "fibers"


def dipy_volume():
    img = nib.load(str(DATA / "small_64D_fod_dipy.nii.gz"))  # DIPY's CSD, descoteaux07 legacy
    return np.ascontiguousarray(np.asarray(img.dataobj, dtype=np.float32)), img.affine


def test_peaks_match_dipys_peak_directions():
    from dipy.data import get_sphere
    from dipy.direction.peaks import peak_directions
    from dipy.reconst.shm import sh_to_sf

    sh, affine = dipy_volume()
    pam = tk.dipy.peaks_from_sh(sh, relative_peak_threshold=0.5, min_separation_angle=25, npeaks=5)
    assert pam.peak_dirs.shape == sh.shape[:-1] + (5, 3) and pam.peak_indices.dtype == np.int32
    dense = get_sphere("symmetric724").subdivide(2)  # ~11,500 vertices, ~2 degrees apart
    odf = sh_to_sf(sh.astype(np.float64), dense, sh_order=8, basis_type="descoteaux07", legacy=True)
    agree = total = 0
    for v in np.ndindex(sh.shape[:-1]):
        d, pk, _ = peak_directions(odf[v], dense, relative_peak_threshold=0.5, min_separation_angle=25)
        mine = pam.peak_indices[v] >= 0
        total += 1
        if len(pk[:5]) != mine.sum():
            continue  # a peak at the relative threshold's edge on one side only
        agree += 1
        for dd in d[:5]:  # each of DIPY's matches one of ours (two near-equal peaks may swap ranks)
            cos = np.abs(pam.peak_dirs[v][mine] @ dd)
            assert np.degrees(np.arccos(min(1, cos.max()))) < 3, (v, d, pam.peak_dirs[v])  # DIPY's are vertices
    assert agree >= 0.95 * total, (agree, total)
    # DIPY's conventions: zeros and -1 where no peak; indices point at the nearest vertex
    none = pam.peak_indices < 0
    assert np.all(pam.peak_values[none] == 0) and np.all(pam.peak_dirs[none] == 0)
    some = ~none
    v = pam.sphere.vertices[pam.peak_indices[some]]
    dots = pam.peak_dirs[some] @ pam.sphere.vertices.T
    np.testing.assert_allclose(np.einsum("ij,ij->i", v, pam.peak_dirs[some]), dots.max(axis=1))
    assert np.all((pam.gfa >= 0) & (pam.gfa <= 1)) and np.all(pam.qa[some] > 0) and np.all(pam.qa[none] == 0)


def test_pam5_round_trip_and_tracking(tmp_path):
    pytest.importorskip("h5py")
    from dipy.io.peaks import load_peaks, save_peaks
    from dipy.tracking.local_tracking import LocalTracking
    from dipy.tracking.stopping_criterion import ThresholdStoppingCriterion
    from dipy.tracking.streamline import Streamlines
    from dipy.tracking.utils import seeds_from_mask

    sh, affine = dipy_volume()
    pam = tk.dipy.peaks_from_sh(sh, affine=affine)
    path = str(tmp_path / "peaks.pam5")
    save_peaks(path, pam)
    back = load_peaks(path)
    np.testing.assert_array_equal(back.peak_dirs, pam.peak_dirs)
    np.testing.assert_array_equal(back.peak_indices, pam.peak_indices)
    np.testing.assert_allclose(back.affine, affine)
    # DIPY's tracker takes the peaks as its direction getter
    seeds = seeds_from_mask(pam.gfa > 0.1, np.eye(4), density=1)[:50]
    sc = ThresholdStoppingCriterion(pam.gfa, 0.05)
    lines = Streamlines(LocalTracking(pam, sc, seeds, np.eye(4), step_size=0.5))
    assert len(lines) > 0 and max(len(s) for s in lines) > 5


def test_tournier_needs_affine_and_is_put_in_voxel_axes():
    img = tk.io.load_sh(str(DATA / "small_101D_fod.nii.gz"))
    with pytest.raises(ValueError, match="give the affine"):
        tk.dipy.peaks_from_sh(img.sh, basis="tournier", legacy=False)
    pam = tk.dipy.peaks_from_sh(img.sh, basis="tournier", legacy=False, affine=img.affine)
    world = tk.fibers.peaks(img.sh, num_peaks=5, relative_threshold=0.5, min_separation=25, threshold=None)
    aff = img.affine[:3, :3]
    r = aff / np.linalg.norm(aff, axis=0)
    ok = pam.peak_indices >= 0
    np.testing.assert_allclose(pam.peak_dirs[ok] @ r.T, world.directions[ok], atol=1e-6)
