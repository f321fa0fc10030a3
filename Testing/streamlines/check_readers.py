#!/usr/bin/env python3
"""Reads the writers' sample files (write_samples.cpp) back with the field's own readers and
compares them with the reference the writer was given:
  tck  nibabel.streamlines.load, and MRtrix3's tckinfo -count (header and actual count);
  trk  nibabel.streamlines.load (world RAS mm to 1e-4 mm; an oblique, flipped grid too);
  vtk  VTK's vtkXMLPolyDataReader (.vtp) and vtkPolyDataReader (.vtk): points in the frame the
       SPACE tag names, the polylines, the DEC colours ("Colors", recomputed here);
  trx  trx-python's trx_file_memmap.load (SKIPPED, for CTest, when trx-python is missing).
Exit 0 only if every comparison holds."""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

GRIDS = ("ident", "oblique")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def reference(folder):
    pts = np.fromfile(os.path.join(folder, "reference.f32"), dtype="<f4").reshape(-1, 3)
    counts = np.fromfile(os.path.join(folder, "reference.counts"), dtype="<u8")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int)
    return [pts[s:s + int(n)] for s, n in zip(starts, counts)]


def grid(folder, name):
    aff = np.fromfile(os.path.join(folder, name + ".affine"), dtype="<f8").reshape(4, 4)
    dims = np.fromfile(os.path.join(folder, name + ".dims"), dtype="<u8")
    return aff, dims


def same_streamlines(got, ref, tol, what):
    if len(got) != len(ref):
        check(False, "%s: %d streamlines, expected %d" % (what, len(got), len(ref)))
        return
    worst = 0.0
    for g, r in zip(got, ref):
        g = np.asarray(g, dtype=np.float64)
        if g.shape != r.shape:
            check(False, "%s: a streamline of shape %s, expected %s" % (what, g.shape, r.shape))
            return
        worst = max(worst, float(np.max(np.abs(g - r))) if len(r) else 0.0)
    check(worst <= tol, "%s: %d streamlines, largest point difference %.3g mm (<= %g)" % (what, len(ref), worst, tol))


def dec_colours(s):
    """The DEC colour of each point: |tangent| (central differences, one-sided at the ends)."""
    n = len(s)
    if n == 1:
        return np.full((1, 3), 128)
    idx = np.arange(n)
    t = s[np.minimum(idx + 1, n - 1)].astype(np.float64) - s[np.maximum(idx - 1, 0)]
    return np.rint(255 * np.abs(t) / np.linalg.norm(t, axis=1)[:, None])


def check_tck(folder, ref):
    import nibabel as nib
    for name in GRIDS:
        path = os.path.join(folder, name + ".tck")
        tck = nib.streamlines.load(path)
        check(int(tck.header["count"]) == len(ref), "%s: nibabel count %s" % (path, tck.header["count"]))
        same_streamlines(list(tck.streamlines), ref, 0.0, path + " (nibabel, exact)")
        tckinfo = shutil.which("tckinfo") or "/usr/bin/tckinfo"
        if not os.path.exists(tckinfo):
            check(False, "tckinfo (MRtrix3) not found")
            continue
        out = subprocess.run([tckinfo, path, "-count", "-quiet"], capture_output=True, text=True)
        # "count: 0000000010" (the header) and "actual count in file: 10" (tckinfo counting)
        counts = [int(line.split(":")[-1]) for line in out.stdout.splitlines()
                  if line.strip().startswith(("count:", "actual count in file:"))]
        check(out.returncode == 0 and counts == [len(ref), len(ref)],
              "%s: tckinfo -count gives %s (header and file), expected %d" % (path, counts, len(ref)))
        tckconvert = shutil.which("tckconvert")
        if tckconvert:  # MRtrix3's own reading of every point, as text
            prefix = os.path.join(folder, name + "_ascii_")
            out = subprocess.run([tckconvert, "-force", path, prefix + "[].txt", "-quiet"], capture_output=True, text=True)
            # one file a streamline, numbered with zero padding
            files = sorted(f for f in os.listdir(folder) if f.startswith(name + "_ascii_"))
            got = [np.loadtxt(os.path.join(folder, f), ndmin=2) for f in files]
            check(out.returncode == 0, "%s: tckconvert ran (%s)" % (path, out.stderr.strip()[:200]))
            same_streamlines(got, ref, 1e-4, path + " (tckconvert)")


def check_trk(folder, ref):
    import nibabel as nib
    for name in GRIDS:
        path = os.path.join(folder, name + ".trk")
        aff, dims = grid(folder, name)
        trk = nib.streamlines.load(path)
        h = trk.header
        check(int(h["nb_streamlines"]) == len(ref), "%s: nb_streamlines %s" % (path, h["nb_streamlines"]))
        check(np.allclose(h["voxel_to_rasmm"], aff, atol=1e-5), "%s: vox_to_ras is the grid's" % path)
        check(list(h["dimensions"]) == list(dims), "%s: dimensions %s" % (path, list(h["dimensions"])))
        vs = np.linalg.norm(aff[:3, :3], axis=0)
        check(np.allclose(h["voxel_sizes"], vs, rtol=1e-6), "%s: voxel sizes %s" % (path, h["voxel_sizes"]))
        order = h["voxel_order"]
        order = order.decode() if isinstance(order, bytes) else order
        check(order == "".join(nib.aff2axcodes(aff)), "%s: voxel_order %s is nibabel's aff2axcodes" % (path, order))
        same_streamlines(list(trk.streamlines), ref, 1e-4, path + " (nibabel, world RAS mm)")


def check_vtk(folder, ref):
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy
    for name in GRIDS + ("oblique_ras",):
        for ext in (".vtp", ".vtk"):
            path = os.path.join(folder, name + ext)
            if ext == ".vtp":
                reader = vtk.vtkXMLPolyDataReader()
            else:
                reader = vtk.vtkPolyDataReader()
                reader.ReadAllColorScalarsOn()
            reader.SetFileName(path)
            reader.Update()
            pd = reader.GetOutput()
            if ext == ".vtp":
                arr = pd.GetFieldData().GetAbstractArray("SPACE")
                space = arr.GetValue(0) if arr else None
            else:
                header = reader.GetHeader() or ""
                space = header.split("SPACE=")[-1].strip() if "SPACE=" in header else None
            expected = "RAS" if name.endswith("_ras") else "LPS"
            check(space == expected, "%s: SPACE tag %s, expected %s" % (path, space, expected))
            check(pd.GetNumberOfLines() == len(ref), "%s: %d lines" % (path, pd.GetNumberOfLines()))
            if pd.GetNumberOfPoints() == 0:
                check(False, path + ": no points read")
                continue
            pts = vtk_to_numpy(pd.GetPoints().GetData()).astype(np.float64)
            if space == "LPS":
                pts = pts * np.array([-1.0, -1.0, 1.0])
            lines = pd.GetLines()
            offsets = vtk_to_numpy(lines.GetOffsetsArray())
            conn = vtk_to_numpy(lines.GetConnectivityArray())
            got = [pts[conn[offsets[i]:offsets[i + 1]]] for i in range(len(offsets) - 1)]
            same_streamlines(got, ref, 0.0, path + " (VTK, points through the lines)")
            colours = pd.GetPointData().GetArray("Colors")
            if colours is None:
                check(False, path + ": no Colors array")
                continue
            c = vtk_to_numpy(colours)
            if colours.GetDataTypeAsString() != "unsigned char" or c.ndim != 2 or c.shape[1] != 3:
                check(False, "%s: Colors is %s x %s, expected unsigned char x 3" %
                      (path, colours.GetDataTypeAsString(), colours.GetNumberOfComponents()))
                continue
            expect = np.concatenate([dec_colours(s) for s in ref])
            worst = int(np.max(np.abs(c.astype(int) - expect)))
            check(worst <= 1, "%s: DEC colours within %d of |tangent| (<= 1)" % (path, worst))


def check_trx(folder, ref):
    try:
        from trx.trx_file_memmap import load
    except ImportError as e:
        print("SKIPPED: trx-python is not importable by %s (%s); scripts/setup.sh's python env, then "
              "'pip install trx-python', enables this check" % (sys.executable, e))
        sys.exit(0)
    for name in GRIDS:
        path = os.path.join(folder, name + ".trx")
        aff, dims = grid(folder, name)
        # trx-python maps the zip's entries read-write; a copy keeps the sample as written.
        copy = os.path.join(folder, name + "_copy.trx")
        shutil.copyfile(path, copy)
        trx = load(copy)
        check(int(trx.header["NB_STREAMLINES"]) == len(ref), "%s: NB_STREAMLINES %s" % (path, trx.header["NB_STREAMLINES"]))
        check(int(trx.header["NB_VERTICES"]) == sum(len(s) for s in ref), "%s: NB_VERTICES" % path)
        check(np.allclose(trx.header["VOXEL_TO_RASMM"], aff, atol=1e-5), "%s: VOXEL_TO_RASMM is the grid's" % path)
        check(list(trx.header["DIMENSIONS"]) == list(dims), "%s: DIMENSIONS" % path)
        same_streamlines([np.asarray(s) for s in trx.streamlines], ref, 0.0, path + " (trx-python)")
        trx.close()
        import zipfile
        with zipfile.ZipFile(path) as z:
            check(z.testzip() is None, "%s: every zip entry's CRC holds (zipfile.testzip)" % path)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--samples", required=True)
    p.add_argument("--format", required=True, choices=("tck", "trk", "vtk", "trx"))
    a = p.parse_args()
    ref = reference(a.samples)
    {"tck": check_tck, "trk": check_trk, "vtk": check_vtk, "trx": check_trx}[a.format](a.samples, ref)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
