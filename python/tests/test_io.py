"""tensorkernels.io: SH volumes through nibabel with the tools' frame rules, against MRtrix3's
sh2peaks (world RAS peaks of MRtrix3's basis) and against DIPY's bases rotated into world
coordinates (DIPY's basis lives in the voxel axes)."""
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk
from conftest import fibonacci_sphere, sh_matrix

nib = pytest.importorskip("nibabel")
DATA = Path(__file__).resolve().parents[2] / "Data" / "fibers"


def angle_deg(a, b):
    return np.degrees(np.arccos(np.clip(abs(float(a @ b)), 0, 1)))


@pytest.mark.skipif(shutil.which("sh2peaks") is None, reason="no MRtrix3 sh2peaks (Debian's mrtrix3)")
def test_mrtrix_volume_matches_sh2peaks(tmp_path):
    path = DATA / "small_101D_fod.nii.gz"
    img = tk.io.load_sh(str(path))
    assert img.sh.flags.c_contiguous and img.sh.shape == (6, 10, 10, 45) and img.lmax == 8
    p = tk.io.peaks(img, num_peaks=3, threshold=None)
    out = tmp_path / "sh2peaks.nii.gz"
    subprocess.run(["sh2peaks", str(path), str(out), "-num", "3", "-quiet", "-force"], check=True)
    ref = np.asarray(nib.load(str(out)).dataobj, dtype=np.float64).reshape(6, 10, 10, 3, 3)
    compared = 0
    for v in np.ndindex(6, 10, 10):
        amps = np.linalg.norm(ref[v], axis=-1)
        ok = np.isfinite(amps) & (amps > 0)
        if not ok.any():
            continue
        for r, a in zip(ref[v][ok], amps[ok]):
            if a < 0.1 * amps[ok].max():
                continue
            mine = [(d, m) for d, m in zip(p.directions[v], p.amplitudes[v]) if np.isfinite(m)]
            best = min(mine, key=lambda dm: angle_deg(dm[0], r / a))
            assert angle_deg(best[0], r / a) < 0.5, (v, r, mine)
            assert best[1] == pytest.approx(a, rel=2e-3)
            compared += 1
    assert compared > 500


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # DIPY on its legacy basis
def test_dipy_volume_is_rotated_into_world(tmp_path):
    # The DIPY file's affine is oblique and permuted.  The oracle re-expresses each voxel's SH
    # function in world coordinates with DIPY's bases (exact: a rotation keeps the degree) and
    # takes its peaks in MRtrix3's basis, which is defined in world coordinates.
    path = DATA / "small_64D_fod_dipy.nii.gz"
    img = tk.io.load_sh(str(path), basis="descoteaux", legacy=True)
    # world = r @ voxel-frame direction; r from the file's header by nibabel, not by the package
    aff = nib.load(str(path)).affine[:3, :3]
    r = aff / np.linalg.norm(aff, axis=0)
    assert abs(abs(np.linalg.det(r)) - 1) < 1e-6 and not np.allclose(r, np.eye(3))
    np.testing.assert_allclose(tk.io.direction_matrix(img.affine), r, atol=1e-12)
    p = tk.io.peaks(img, num_peaks=3, relative_threshold=0.2)

    shm = pytest.importorskip("dipy.reconst.shm")
    world = fibonacci_sphere(2000)
    vox = world @ r  # r^T u for each row u: the voxel-frame direction of a world direction
    theta, phi = np.arccos(np.clip(vox[:, 2], -1, 1)), np.arctan2(vox[:, 1], vox[:, 0])
    b_vox = shm.real_sh_descoteaux(8, theta, phi, full_basis=False, legacy=True)[0]
    refit = np.linalg.pinv(sh_matrix(world, 8, "tournier")) @ b_vox  # (45, 45): voxel SH -> world SH
    sh_world = np.ascontiguousarray((img.sh.reshape(-1, 45).astype(np.float64) @ refit.T).astype(np.float32))
    want = tk.fibers.peaks(sh_world, num_peaks=3, relative_threshold=0.2, basis="tournier")
    got_d, got_a = p.directions.reshape(-1, 3, 3), p.amplitudes.reshape(-1, 3)
    n = 0
    for v in range(sh_world.shape[0]):
        for d, a, wd, wa in zip(got_d[v], got_a[v], want.directions[v], want.amplitudes[v]):
            if np.isfinite(wa) and wa > 0.25 * np.nanmax(want.amplitudes[v]):
                assert angle_deg(d, wd) < 0.2, (v, d, wd)
                assert a == pytest.approx(wa, rel=1e-3, abs=1e-5)
                n += 1
    assert n > 500


def test_basis_warning_and_bad_files(tmp_path):
    path = str(DATA / "small_64D_fod_dipy.nii.gz")
    with pytest.warns(UserWarning, match="basis='descoteaux', legacy=True"):
        tk.io.load_sh(path)  # read as MRtrix3's, the default: the data say otherwise
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tk.io.load_sh(path, basis="descoteaux", legacy=True)
    bad = tmp_path / "three_d.nii.gz"
    nib.save(nib.Nifti1Image(np.zeros((4, 4, 4), np.float32), np.eye(4)), str(bad))
    with pytest.raises(ValueError, match="three_d.nii.gz: expected a 4-D SH volume"):
        tk.io.load_sh(str(bad))
    with pytest.raises(ValueError, match="sheared"):
        tk.io.direction_matrix(np.array([[1, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]))


def test_save_peaks_layout(tmp_path):
    img = tk.io.load_sh(str(DATA / "small_101D_fod.nii.gz"))
    p = tk.io.peaks(img, num_peaks=2)
    out = tmp_path / "peaks.nii.gz"
    tk.io.save_peaks(str(out), p, img)
    back = nib.load(str(out))
    assert back.shape == (6, 10, 10, 6)
    np.testing.assert_allclose(back.affine, img.affine)
    data = np.asarray(back.dataobj).reshape(6, 10, 10, 2, 3)
    np.testing.assert_array_equal(data, p.directions * p.amplitudes[..., None])
