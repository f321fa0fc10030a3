#!/usr/bin/env python3
"""3D Slicer's round trip through the Fiber Directions module, without Slicer.

A Slicer user loads an FOD (a 4-D NIfTI made a vector volume by scripts/nifti_to_vector_nrrd.py)
and runs the module.  Slicer reads `tk-fibers --xml` (here: ctk_cli, CommonTK's parser of the
same SlicerExecutionModel documents), writes the selected vector volume node to a temporary
NRRD named after the node, names temporary files for the outputs with each parameter's first
file extension (.nrrd for the peaks, .vtp for the glyph model), runs the tool with every flagged
parameter as --longflag value (booleans bare when true, unset optional files left out) and the
positional ones in index order, then loads the outputs: peaks as a vector volume, the .vtp as a
model node.  Checked here:
- the description: a vector image in, vector images and a geometry model (.vtp) out;
- the run: exit 0, no warning on stderr, every output written, no temporary left;
- the peaks equal a plain command-line run on the NIfTI itself, and their first directions
  match MRtrix3's sh2peaks on that NIfTI;
- the .vtp parses (VTK), says its points are RAS (field SPACE, which Slicer's model reader
  honours), and has one line per peak, centred on its voxel's world position as nibabel
  computes it from the NIfTI's affine, along the peak.
Needs ctk_cli (scripts/setup.sh installs it), nibabel, numpy and VTK's Python (python3-vtk9).
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np


def fail(message):
    sys.exit("FAILED: " + message)


try:
    import ctk_cli
except ImportError:
    fail("ctk_cli is not importable by %s: scripts/setup.sh installs it (pip package ctk-cli) into the "
         "build tree's python/ environment" % sys.executable)
import nibabel as nib
import vtk


def letters(text):
    """Slicer turns the digits of its temporary file names into letters (0 -> A)."""
    return "".join(chr(ord(c) + 17) if c.isdigit() else c for c in text)


def slicer_temporary(directory, node_id, parameter):
    """The file Slicer passes for an image or geometry parameter bound to node node_id."""
    default = {"image": ".nrrd", "geometry": ".vtp"}[parameter.typ]
    extension = parameter.fileExtensions[0] if parameter.fileExtensions else default
    return os.path.join(directory, letters(str(os.getpid())) + "_" + letters(node_id) + extension)


def slicer_command_line(module, tool, values):
    """Slicer's command line: values[name] for the nodes the user selected and the fields
    changed, every other flagged parameter at its default."""
    arguments, options, outputs = module.classifyParameters()
    if outputs:
        fail("unexpected simple return parameters %s" % outputs)
    command = [tool]
    for p in options:
        flag = p.longflag or p.flag
        value = values.get(p.name, p.default)
        if p.typ == "boolean":
            if value is True or value == "true":
                command.append(flag)
        elif p.isExternalType():
            if p.name in values:  # an unset optional image or model is left out
                command += [flag, values[p.name]]
        elif value is not None and value != "":
            command += [flag, str(value)]
    for p in arguments:  # sorted by index
        command.append(values[p.name])
    return command


def read_nrrd(path):
    """The NRRD files tk-fibers (ITK) writes: one file, raw or gzip, float, vector first."""
    with open(path, "rb") as f:
        blob = f.read()
    end = blob.index(b"\n\n")
    fields = {}
    for line in blob[:end].decode("ascii").split("\n")[1:]:
        if line.startswith("#") or ": " not in line:
            continue
        key, value = line.split(": ", 1)
        fields[key] = value
    body = blob[end + 2:]
    if fields.get("encoding") == "gzip":
        body = gzip.decompress(body)
    elif fields.get("encoding") != "raw":
        fail("%s: unexpected NRRD encoding %s" % (path, fields.get("encoding")))
    if fields.get("type") != "float" or fields.get("endian", "little") != "little":
        fail("%s: expected little-endian float, got %s" % (path, fields))
    sizes = [int(s) for s in fields["sizes"].split()]
    data = np.frombuffer(body, dtype="<f4", count=int(np.prod(sizes)))
    return data.reshape(sizes[::-1]).transpose(2, 1, 0, 3), fields  # (x, y, z, vector)


def angle_deg(a, b):
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0, 1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True, help="tk-fibers")
    parser.add_argument("--fod", required=True, help="a 4-D NIfTI of SH (MRtrix3's basis)")
    parser.add_argument("--converter", required=True, help="scripts/nifti_to_vector_nrrd.py")
    parser.add_argument("--sh2peaks", default="", help="MRtrix3's sh2peaks (the oracle of the directions)")
    args = parser.parse_args()

    module = ctk_cli.CLIModule(args.tool)  # runs `tk-fibers --xml`, as Slicer does at start-up
    params = {p.name: p for p in module.parameters()}
    sh_in, peaks_out, glyphs = params.get("inputSH"), params.get("outputPeaks"), params.get("glyphs")
    if not (sh_in and sh_in.typ == "image" and sh_in.subtype == "vector" and sh_in.channel == "input"
            and sh_in.index == 0 and sh_in.fileExtensions[0] == ".nrrd"):
        fail("the SH input is not a vector image taken as NRRD at index 0: %r" % sh_in)
    if not (peaks_out and peaks_out.typ == "image" and peaks_out.channel == "output" and peaks_out.index == 1):
        fail("the peaks output is not an image at index 1: %r" % peaks_out)
    if not (glyphs and glyphs.typ == "geometry" and glyphs.subtype == "model" and glyphs.channel == "output"
            and glyphs.fileExtensions == [".vtp"] and glyphs.longflag == "--vtp"):
        fail("no geometry (model, .vtp) output for the glyphs: %r" % glyphs)

    with tempfile.TemporaryDirectory(prefix="tk_slicer_") as tmp:
        # the user's file, loaded as a vector volume node
        loaded = os.path.join(tmp, "fod.nrrd")
        subprocess.run([sys.executable, args.converter, args.fod, loaded], check=True)
        slicer_tmp = os.path.join(tmp, "SlicerTemp")
        os.mkdir(slicer_tmp)
        with open(loaded, "rb") as src, open(slicer_temporary(slicer_tmp, "vtkMRMLVectorVolumeNode1", sh_in), "wb") as dst:
            dst.write(src.read())  # Slicer writes the node out again: the same NRRD
        values = {
            "inputSH": slicer_temporary(slicer_tmp, "vtkMRMLVectorVolumeNode1", sh_in),
            "outputPeaks": slicer_temporary(slicer_tmp, "vtkMRMLVectorVolumeNode2", peaks_out),
            "amplitudes": slicer_temporary(slicer_tmp, "vtkMRMLVectorVolumeNode3", params["amplitudes"]),
            "glyphs": slicer_temporary(slicer_tmp, "vtkMRMLModelNode4", glyphs),
            "backend": "cpu",  # the Computation panel's choice: the same numbers everywhere
        }
        command = slicer_command_line(module, args.tool, values)
        print(" ".join(command))
        for flag in ("--basis", "--legacy", "--num", "--glyph-scale", "--vtp", "--amplitudes"):
            if flag != "--legacy" and flag not in command:
                fail("Slicer's command line lacks %s: %s" % (flag, command))
        if "--legacy" in command:
            fail("--legacy is false by default and must not be passed")
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0 or run.stderr:
            fail("the Slicer-style run failed or warned (exit %d): %s" % (run.returncode, run.stderr))
        for name in ("outputPeaks", "amplitudes", "glyphs"):
            if not os.path.getsize(values[name]):
                fail("%s not written: %s" % (name, values[name]))
        left = sorted(set(os.listdir(slicer_tmp)) - {os.path.basename(v) for v in values.values() if v.startswith(slicer_tmp)})
        if left:
            fail("files left in Slicer's temporary directory: %s" % left)

        peaks, header = read_nrrd(values["outputPeaks"])
        amplitudes, _ = read_nrrd(values["amplitudes"])
        # The NRRD holds the vectors in its declared space, LPS, with an identity measurement
        # frame (what Slicer reads them as); the NIfTI run and sh2peaks hold them in RAS.
        if header.get("measurement frame", "").replace(" ", "") != "(1,0,0)(0,1,0)(0,0,1)":
            fail("the peaks NRRD has no identity measurement frame: %s" % header)
        peaks = peaks.copy()
        peaks[..., 0::3] *= -1
        peaks[..., 1::3] *= -1
        fod = nib.load(args.fod)
        if peaks.shape != fod.shape[:3] + (9,) or amplitudes.shape != fod.shape[:3] + (3,):
            fail("output shapes %s, %s for a %s FOD" % (peaks.shape, amplitudes.shape, fod.shape))
        if header.get("kinds", "").split()[0] not in ("vector", "list") or "left-posterior-superior" not in header.get("space", ""):
            fail("the peaks NRRD is not a vector volume in LPS: %s" % header)

        # the same numbers as the command line on the NIfTI itself
        plain = os.path.join(tmp, "plain_peaks.nii")
        subprocess.run([args.tool, args.fod, plain, "--backend", "cpu", "--quiet"], check=True)
        plain_peaks = np.asarray(nib.load(plain).dataobj, dtype=np.float32)
        same = (plain_peaks == peaks) | (np.isnan(plain_peaks) & np.isnan(peaks))
        if not same.all():
            fail("%d peak components differ from a plain run on the NIfTI" % np.sum(~same))

        # the first directions against MRtrix3's sh2peaks on the NIfTI
        if args.sh2peaks:
            ref = os.path.join(tmp, "sh2peaks.nii")
            subprocess.run([args.sh2peaks, "-quiet", "-force", "-num", "1", args.fod, ref], check=True)
            theirs = np.asarray(nib.load(ref).dataobj, dtype=np.float64)[..., :3].reshape(-1, 3)
            ours = peaks[..., :3].reshape(-1, 3).astype(np.float64)
            both = np.isfinite(theirs).all(1) & np.isfinite(ours).all(1) & (np.linalg.norm(theirs, axis=1) > 0)
            if both.sum() < 0.9 * len(ours):
                fail("only %d of %d voxels have a first peak in both" % (both.sum(), len(ours)))
            median = np.median(angle_deg(ours[both], theirs[both]))
            print("first peaks vs sh2peaks: median %.2g degrees over %d voxels" % (median, both.sum()))
            if median > 0.5:
                fail("first peaks are a median %.3g degrees from sh2peaks'" % median)
        else:
            print("sh2peaks not given: directions checked against the plain run only")

        # the glyph model
        reader = vtk.vtkXMLPolyDataReader()
        reader.SetFileName(values["glyphs"])
        reader.Update()
        poly = reader.GetOutput()
        if reader.GetErrorCode() or poly.GetNumberOfCells() == 0:
            fail("the .vtp does not parse or holds no lines")
        space = poly.GetFieldData().GetAbstractArray("SPACE")
        if space is None or space.GetValue(0) != "RAS":
            fail("the .vtp does not say its frame (field data SPACE = RAS): Slicer would take it for LPS")
        present = []  # (voxel ijk, peak vector) in the glyphs' order: z, y, x, then peak
        for k in range(peaks.shape[2]):
            for j in range(peaks.shape[1]):
                for i in range(peaks.shape[0]):
                    for p in range(3):
                        v = peaks[i, j, k, 3 * p:3 * p + 3].astype(np.float64)
                        a = amplitudes[i, j, k, p]
                        if np.all(np.isfinite(v)) and np.linalg.norm(v) > 0 and np.isfinite(a) and a > 0:
                            present.append(((i, j, k), v))
        if poly.GetNumberOfCells() != len(present):
            fail("%d glyph lines for %d peaks" % (poly.GetNumberOfCells(), len(present)))
        points = np.array([poly.GetPoint(n) for n in range(poly.GetNumberOfPoints())])
        ends = np.array([[poly.GetCell(c).GetPointId(0), poly.GetCell(c).GetPointId(1)] for c in range(len(present))])
        mid = 0.5 * (points[ends[:, 0]] + points[ends[:, 1]])
        along = points[ends[:, 1]] - points[ends[:, 0]]
        centres = nib.affines.apply_affine(fod.affine, np.array([ijk for ijk, _ in present], dtype=np.float64))
        off = np.max(np.linalg.norm(mid - centres, axis=1))
        # along the peak: the line's component across the peak direction (in mm, so that the short
        # lines of tiny peaks, whose float end points carry no direction to speak of, count as little)
        unit = np.array([v / np.linalg.norm(v) for _, v in present])
        across = np.max(np.linalg.norm(np.cross(along, unit), axis=1))
        print("%d glyph lines; centres within %.2g mm of nibabel's voxel centres (RAS), off their peaks' "
              "direction by at most %.2g mm" % (len(present), off, across))
        if off > 1e-3 or across > 1e-4:
            fail("the glyphs are not at their voxels' RAS centres along their peaks")
    print("Slicer round trip: OK")


if __name__ == "__main__":
    main()
