#!/usr/bin/env python3
"""3D Slicer's round trip through the Tractography module (tk-track), without Slicer.

As slicer_round_trip.py does for tk-fibers (whose helpers this script uses): Slicer reads
`tk-track --xml` (here ctk_cli), writes the FOD vector volume node and the seed label map to
temporary NRRDs named after the nodes, names the fiber bundle's temporary file with the
output's first extension (.vtp), runs the tool with every flagged parameter at its value or
default and the positional ones in index order, and loads the .vtp as a fiber bundle.
Checked here:
- the description: a vector image in (NRRD first), a `geometry` of type fiberbundle out (.vtp
  first), the seed mask a label image;
- the run: exit 0, nothing on stderr (Slicer logs stderr as errors), the .vtp written, no
  other file left in Slicer's temporary folder;
- the .vtp as Slicer's fiber bundle reader takes it: VTK parses it, its field SPACE names its
  frame (LPS, what Slicer assumes and writes), one polyline per streamline, the points equal a
  plain command-line run's .tck on the NIfTI (nibabel reads it: world RAS mm) after LPS to RAS,
  and its point scalars are the tangent colours (UInt8 RGB, the active scalars, which the
  fiber bundle display shows with direct colour mapping), checked against 255 |t| / ||t|| of
  central differences computed here.
Needs ctk_cli (scripts/setup.sh installs it), nibabel, numpy and VTK's Python (python3-vtk9).
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slicer_round_trip import fail, slicer_command_line, slicer_temporary  # noqa: E402 (ctk_cli checked there)

import ctk_cli  # noqa: E402
import nibabel as nib  # noqa: E402
import vtk  # noqa: E402
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402


def write_label_nrrd(mask, affine, path):
    """A label map as Slicer writes a label volume node: short, LPS, gzip (the FOD NRRD's grid)."""
    ras_to_lps = np.diag([-1.0, -1.0, 1.0])
    directions = ras_to_lps @ affine[:3, :3]
    origin = ras_to_lps @ affine[:3, 3]

    def vec(v):
        return "(" + ",".join("%.17g" % x for x in v) + ")"

    header = ["NRRD0004", "type: short", "dimension: 3", "space: left-posterior-superior",
              "sizes: %d %d %d" % mask.shape, "space directions: " + " ".join(vec(directions[:, c]) for c in range(3)),
              "kinds: domain domain domain", "endian: little", "encoding: gzip", "space origin: " + vec(origin)]
    body = np.ascontiguousarray(mask.transpose(2, 1, 0)).astype("<i2").tobytes()
    with open(path, "wb") as f:
        f.write(("\n".join(header) + "\n\n").encode("ascii"))
        f.write(gzip.compress(body, mtime=0))


def tangent_colours(points):
    """255 |t| / ||t|| per point, t by central differences (one-sided at the ends)."""
    n = len(points)
    if n < 2:
        return np.full((n, 3), 128)
    ahead = points[np.minimum(np.arange(n) + 1, n - 1)]
    behind = points[np.maximum(np.arange(n) - 1, 0)]
    t = ahead.astype(np.float64) - behind.astype(np.float64)
    return np.rint(255 * np.abs(t) / np.linalg.norm(t, axis=1, keepdims=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True, help="tk-track")
    parser.add_argument("--fod", required=True, help="a 4-D NIfTI of SH (MRtrix3's basis)")
    parser.add_argument("--converter", required=True, help="scripts/nifti_to_vector_nrrd.py")
    args = parser.parse_args()

    module = ctk_cli.CLIModule(args.tool)  # runs `tk-track --xml`, as Slicer does at start-up
    params = {p.name: p for p in module.parameters()}
    fod_in, tracks, seeds = params.get("inputFOD"), params.get("outputTracks"), params.get("seedMask")
    if not (fod_in and fod_in.typ == "image" and fod_in.subtype == "vector" and fod_in.channel == "input"
            and fod_in.index == 0 and fod_in.fileExtensions[0] == ".nrrd"):
        fail("the FOD input is not a vector image taken as NRRD at index 0: %r" % fod_in)
    if not (tracks and tracks.typ == "geometry" and tracks.subtype == "fiberbundle" and tracks.channel == "output"
            and tracks.index == 1 and tracks.fileExtensions[0] == ".vtp"):
        fail("the output is not a fiber bundle geometry written as .vtp at index 1: %r" % tracks)
    if not (seeds and seeds.typ == "image" and seeds.subtype == "label" and seeds.longflag == "--seed-mask"):
        fail("the seed mask is not a label image given by --seed-mask: %r" % seeds)

    fod = nib.load(args.fod)
    with tempfile.TemporaryDirectory(prefix="tk_slicer_track_") as tmp:
        # the user's files: the FOD loaded as a vector volume, a seed label map where the FOD
        # is above the cutoff (l = 0 coefficient), and the same mask as NIfTI for the plain run
        loaded = os.path.join(tmp, "fod.nrrd")
        subprocess.run([sys.executable, args.converter, args.fod, loaded], check=True)
        mask = (np.asarray(fod.dataobj)[..., 0] > 0.1).astype(np.int16)
        mask_nii = os.path.join(tmp, "mask.nii")
        nib.save(nib.Nifti1Image(mask.astype(np.uint8), fod.affine, fod.header), mask_nii)
        slicer_tmp = os.path.join(tmp, "SlicerTemp")
        os.mkdir(slicer_tmp)
        values = {
            "inputFOD": slicer_temporary(slicer_tmp, "vtkMRMLVectorVolumeNode1", fod_in),
            "seedMask": slicer_temporary(slicer_tmp, "vtkMRMLLabelMapVolumeNode2", seeds),
            "outputTracks": slicer_temporary(slicer_tmp, "vtkMRMLFiberBundleNode3", tracks),
            "seedsPerVoxel": "2",
            "backend": "cpu",  # the Computation panel's choice: the same numbers everywhere
        }
        with open(loaded, "rb") as src, open(values["inputFOD"], "wb") as dst:
            dst.write(src.read())  # Slicer writes the node out again: the same NRRD
        write_label_nrrd(mask, fod.affine, values["seedMask"])
        command = slicer_command_line(module, args.tool, values)
        print(" ".join(command))
        for flag in ("--seed-mask", "--seeds", "--algorithm", "--step", "--cutoff", "--seed", "--backend"):
            if flag not in command:
                fail("Slicer's command line lacks %s: %s" % (flag, command))
        for flag in ("--seeds-file", "--mask", "--include", "--exclude", "--seed-direction", "--unidirectional",
                     "--legacy", "--png"):
            if flag in command:
                fail("Slicer's command line passes %s, unset: %s" % (flag, command))
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0 or run.stderr:
            fail("the Slicer-style run failed or wrote to stderr (exit %d): %s" % (run.returncode, run.stderr))
        if not os.path.getsize(values["outputTracks"]):
            fail("the fiber bundle was not written: %s" % values["outputTracks"])
        left = sorted(set(os.listdir(slicer_tmp)) - {os.path.basename(v) for v in values.values()
                                                     if v.startswith(slicer_tmp)})
        if left:
            fail("files left in Slicer's temporary directory: %s" % left)

        # the same run on the command line, on the NIfTI files, as .tck (world RAS mm)
        plain = os.path.join(tmp, "plain.tck")
        subprocess.run([args.tool, args.fod, plain, "--seed-mask", mask_nii, "--seeds", "2", "--backend", "cpu",
                        "--quiet"], check=True)
        theirs = [np.asarray(s, dtype=np.float64) for s in nib.streamlines.load(plain).streamlines]
        if len(theirs) < 100:
            fail("the plain run kept only %d streamlines" % len(theirs))

        # the fiber bundle as Slicer loads it
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(values["outputTracks"])
        reader.Update()
        poly = reader.GetOutput()
        if reader.GetErrorCode() or poly.GetNumberOfLines() == 0:
            fail("the .vtp does not parse or holds no lines")
        space = poly.GetFieldData().GetAbstractArray("SPACE")
        if space is None or space.GetValue(0) != "LPS":
            fail("the .vtp does not say its frame is LPS (field data SPACE), which Slicer's fiber bundle reader "
                 "takes for the points' frame")
        points = vtk_to_numpy(poly.GetPoints().GetData()).astype(np.float64) * np.array([-1.0, -1.0, 1.0])  # to RAS
        lines = poly.GetLines()
        offsets = vtk_to_numpy(lines.GetOffsetsArray())
        connectivity = vtk_to_numpy(lines.GetConnectivityArray())
        ours = [points[connectivity[offsets[i]:offsets[i + 1]]] for i in range(len(offsets) - 1)]
        if len(ours) != len(theirs) or poly.GetNumberOfCells() != len(theirs):
            fail("%d polylines (%d cells) for the plain run's %d streamlines" % (len(ours), poly.GetNumberOfCells(),
                                                                                 len(theirs)))
        lengths = [(len(a), len(b)) for a, b in zip(ours, theirs) if len(a) != len(b)]
        if lengths:
            fail("%d streamlines differ in point count from the plain run's, e.g. %s" % (len(lengths), lengths[:3]))
        off = max(np.max(np.abs(a - b)) for a, b in zip(ours, theirs))
        print("%d streamlines, %d points: the .vtp (LPS to RAS) within %.2g mm of the plain run's .tck"
              % (len(ours), len(points), off))
        if off > 1e-4:
            fail("the .vtp's points are %.3g mm from the plain run's .tck" % off)

        # the per-point tangent colours the fiber bundle display shows
        colours = poly.GetPointData().GetScalars()
        if colours is None or colours.GetNumberOfComponents() != 3 or colours.GetDataType() != vtk.VTK_UNSIGNED_CHAR:
            fail("no RGB UInt8 point scalars (the tangent colours) are the .vtp's active scalars: %r" % colours)
        rgb = vtk_to_numpy(colours).astype(np.float64)
        expected = np.concatenate([tangent_colours(points[connectivity[offsets[i]:offsets[i + 1]]])
                                   for i in range(len(offsets) - 1)])
        worst = np.max(np.abs(rgb[connectivity] - expected))
        print("tangent colours (point scalars %s): within %g of 255 |t| / ||t||" % (colours.GetName(), worst))
        if worst > 1:
            fail("the point colours are up to %g from the tangents' 255 |t| / ||t||" % worst)
    print("Slicer round trip (tk-track): OK")


if __name__ == "__main__":
    main()
