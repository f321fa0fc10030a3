"""Real FODs for the validation of tk-fibers (fibers_real.py), made from DIPY's small_64D DWI
(10 x 10 x 10 voxels of 2 mm, 64 directions at b = 1000; sform and qform code 1, axes PLS,
14 degrees oblique) by both programs users run, on four geometries of the same DWI:

  source       the file as DIPY ships it
  oblique      its affine turned 25 degrees about (1, 2, 3) around the volume's centre
  flipped      the first voxel axis stored the other way (data reversed, affine column
               negated, origin moved): the same world image, det(affine) > 0 (qfac 1)
  sform-qform  sform code 2 the oblique affine, qform code 1 the source's snapped to the
               nearest axes: nibabel, MRtrix3 and ITK users expect the sform to win

Each geometry is a DWI file written by nibabel plus its gradients, from which the FODs are
made as a user would make them (only the header changes; the voxels stay the same except
for the flip, which stores the same image the other way):

  MRtrix3  mrconvert -fslgrad, then dwi2fod csd -lmax 8 with the response of
           Data/fibers/small_64D_response.txt (dwi2response tournier, one zonal response
           for all geometries).  SH in MRtrix3's basis (tournier07), world (scanner RAS) frame.
  DIPY     auto_response_ssst and ConstrainedSphericalDeconvModel(sh_order=8), DIPY's default
           basis (descoteaux07, legacy), the voxel frame of its b-vectors.

Gradients.  FSL's bvecs (MRtrix3's -fslgrad) are in the voxel frame with x negated where
det(affine) > 0; DIPY takes b-vectors in the voxel frame.  small_64D has det < 0, so its
b-vectors are both; the flipped copy keeps FSL's bvecs (the convention makes them
storage-independent) and gives DIPY the voxel frame's, x negated.

dwi2fod writes sform = qform; the sform-qform copy of the MRtrix3 FOD gets the DWI's two
transforms back (sform code 2, qform code 1) so that the FOD file itself carries them.  The
MRtrix3 FODs of the source, oblique and flipped geometries also come as .mif (dwi2fod's
own format), with a NIfTI copy (mrconvert) for nibabel to read.
For sh2peaks, each DIPY FOD also gets a copy in MRtrix3's basis and world frame: the value
at world direction w is DIPY's at voxel direction R^-1 w (R: the sform's 3x3 with unit
columns), refitted in tournier07 on a dense sphere (exact for a rotation).
"""
import os
import shutil
import subprocess
import sys
import warnings

import nibabel as nib
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESPONSE = os.path.join(ROOT, "Data", "fibers", "small_64D_response.txt")
GEOMETRIES = ("source", "oblique", "flipped", "sform-qform")
OBLIQUE_DEG, OBLIQUE_AXIS = 25.0, (1.0, 2.0, 3.0)
MIF_GEOMETRIES = ("source", "oblique", "flipped")  # a .mif has one transform: no sform-qform


class Fod:
    """One FOD file and how to read it: basis 'tournier' (world frame) or 'descoteaux'
    (legacy, voxel frame); rotation: voxel-to-world directions (unit columns of the affine
    nibabel gives the file)."""

    def __init__(self, name, path, basis, maker, geometry, dipy_check=True, nifti=None):
        self.name, self.path, self.basis, self.maker, self.geometry = name, path, basis, maker, geometry
        self.dipy_check = dipy_check  # False: a copy whose source the DIPY check already covers
        self.nifti = nifti or path  # what nibabel reads: a NIfTI copy of a .mif
        self.rotation = unit_columns(nib.load(self.nifti).affine)


def unit_columns(affine):
    """Voxel-to-world rotation of directions: the affine's 3x3 with unit columns."""
    return affine[:3, :3] / np.linalg.norm(affine[:3, :3], axis=0)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"real_fods: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def rotation_about(axis, degrees):
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    t = np.radians(degrees)
    return np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * k @ k


def turned(affine, shape, rotation):
    """The affine turned by rotation about the world position of the volume's centre."""
    centre = affine @ np.append((np.asarray(shape[:3]) - 1) / 2.0, 1.0)
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = centre[:3] - rotation @ centre[:3]
    return m @ affine


def snapped(affine):
    """The affine with each column moved onto its nearest world axis (same length, sign, origin)."""
    out = affine.copy()
    for c in range(3):
        col = affine[:3, c]
        r = int(np.argmax(np.abs(col)))
        out[:3, c] = 0
        out[r, c] = np.sign(col[r]) * np.linalg.norm(col)
    return out


def geometry_of(name, img):
    """(data, sform, sform_code, qform, qform_code, voxel_flip): voxel_flip negates DIPY's
    voxel-frame x where the voxels are stored the other way."""
    data = np.asarray(img.dataobj, dtype=np.float32)
    source = img.header.get_sform()
    if name == "source":
        return data, source, 1, img.header.get_qform(), 1, False
    oblique = turned(source, data.shape, rotation_about(OBLIQUE_AXIS, OBLIQUE_DEG))
    if name == "oblique":
        return data, oblique, 1, oblique, 1, False
    if name == "flipped":
        reverse = np.eye(4)
        reverse[0, 0], reverse[0, 3] = -1, data.shape[0] - 1
        flipped = source @ reverse
        return np.ascontiguousarray(data[::-1]), flipped, 1, flipped, 1, True
    if name == "sform-qform":
        return data, oblique, 2, snapped(source), 1, False
    raise ValueError(name)


def save(data, sform, sform_code, qform, qform_code, path):
    header = nib.Nifti1Header()
    header.set_data_dtype(np.float32)
    header.set_xyzt_units("mm", "sec")
    img = nib.Nifti1Image(np.asarray(data, dtype=np.float32), None, header)
    img.header.set_qform(qform, code=qform_code)
    img.header.set_sform(sform, code=sform_code)
    nib.save(img, path)


def sh_world_from_voxel(coeffs, rotation):
    """DIPY's coefficients (descoteaux07 legacy, voxel frame) as MRtrix3's (tournier07, world):
    the conversion that makes the bundled small_101D FOD."""
    sys.path.insert(0, os.path.join(ROOT, "Data", "fibers"))
    from make_small_101D_fod import world_tournier

    return world_tournier(coeffs, rotation)


def make(out, geometries=GEOMETRIES, makers=("mrtrix3", "dipy")):
    """Write the DWI copies and FODs under out; return the Fod list."""
    warnings.simplefilter("ignore")
    from dipy.core.gradients import gradient_table
    from dipy.data import get_fnames
    from dipy.io import read_bvals_bvecs
    from dipy.reconst.csdeconv import ConstrainedSphericalDeconvModel, auto_response_ssst

    fimg, fbval, fbvec = get_fnames("small_64D")
    source = nib.load(fimg)
    bvals, bvecs = read_bvals_bvecs(fbval, fbvec)
    bvecs = np.nan_to_num(bvecs)  # DIPY ships NaN for the b = 0 volume
    if np.linalg.det(source.affine[:3, :3]) >= 0:
        sys.exit("real_fods: small_64D was expected with det(affine) < 0 (FSL's bvecs = voxel frame)")
    os.makedirs(out, exist_ok=True)
    np.savetxt(os.path.join(out, "bvals"), bvals[None], fmt="%.6f")
    np.savetxt(os.path.join(out, "bvecs"), bvecs.T, fmt="%.10f")  # FSL: the same for every geometry
    fods = []
    for g in geometries:
        data, sform, scode, qform, qcode, flip = geometry_of(g, source)
        dwi = os.path.join(out, f"dwi_{g}.nii")
        save(data, sform, scode, qform, qcode, dwi)
        if "mrtrix3" in makers:
            mif = os.path.join(out, f"dwi_{g}.mif")
            run(["mrconvert", "-quiet", "-force", "-fslgrad", os.path.join(out, "bvecs"), os.path.join(out, "bvals"),
                 dwi, mif])
            fod = os.path.join(out, f"fod_mrtrix3_{g}.nii")
            run(["dwi2fod", "-quiet", "-force", "csd", "-lmax", "8", mif, RESPONSE, fod])
            made = nib.load(fod, mmap=False)  # rewritten below: no mapping of a file being replaced
            if not np.allclose(made.affine, sform, atol=1e-4):
                sys.exit(f"real_fods: dwi2fod wrote {fod} with another voxel order or affine:\n{made.affine}")
            if (scode, qcode) != (1, 1):  # the sform-qform copy: dwi2fod wrote both as the sform
                save(np.asarray(made.dataobj), sform, scode, qform, qcode, fod)
            fods.append(Fod(f"MRtrix3 {g}", fod, "tournier", "mrtrix3", g))
            if g in MIF_GEOMETRIES:  # MRtrix3's own format, as dwi2fod writes it by default
                mif_fod, twin = os.path.join(out, f"fod_mrtrix3_{g}.mif"), os.path.join(out, f"fod_mrtrix3_{g}_mif.nii")
                run(["dwi2fod", "-quiet", "-force", "csd", "-lmax", "8", mif, RESPONSE, mif_fod])
                run(["mrconvert", "-quiet", "-force", mif_fod, twin])
                fods.append(Fod(f"MRtrix3 {g} (.mif)", mif_fod, "tournier", "mrtrix3", g, dipy_check=False, nifti=twin))
            os.remove(mif)
        if "dipy" in makers:
            voxel_bvecs = bvecs * ([-1.0, 1.0, 1.0] if flip else [1.0, 1.0, 1.0])
            gtab = gradient_table(bvals, voxel_bvecs)
            response, _ = auto_response_ssst(gtab, data, roi_radii=10, fa_thr=0.7)
            fit = ConstrainedSphericalDeconvModel(gtab, response, sh_order=8).fit(data)
            native = os.path.join(out, f"fod_dipy_{g}.nii")
            save(fit.shm_coeff, sform, scode, qform, qcode, native)
            fods.append(Fod(f"DIPY {g}", native, "descoteaux", "dipy", g))
            world = os.path.join(out, f"fod_dipy_{g}_mrtrix3.nii")
            save(sh_world_from_voxel(fit.shm_coeff, unit_columns(sform)), sform, scode, qform, qcode, world)
            fods.append(Fod(f"DIPY {g} (as MRtrix3)", world, "tournier", "dipy", g, dipy_check=False))
    return fods


def have_tools():
    return all(shutil.which(t) for t in ("mrconvert", "dwi2fod", "sh2peaks"))
