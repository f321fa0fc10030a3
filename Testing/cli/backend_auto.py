#!/usr/bin/python3
"""--backend auto, every tool's default: CUDA where a usable GPU is found, else the CPU (omp)
after exactly one warning line.

    backend_auto.py --bin BUILD/bin --tool teig|eig|tucker-train|pltf|fibers|tucker-complete|track|fixels

Without a usable GPU (this build has no CUDA, or no GPU or driver is there) the default run
must print exactly one line "TOOL: warning: no usable CUDA GPU (REASON); running on the CPU
(omp)" on stderr and write the same bytes as `--backend omp`; `--backend auto` is the same
as the default; with --quiet there is no warning; an explicit `--backend cuda` fails with
exit 1 and a message saying why, leaving no output.  With a usable GPU the default prints
no such warning, `--backend cuda` works too, and (where the CUDA backend is bit-for-bit
reproducible: teig, eig, fibers) the default writes what `--backend cuda` writes; tk-pltf's
fused kernels and FastTucker's SGD accumulate with float atomics, so their CUDA runs differ
in the last bits from run to run and are not compared.

tk-fixels' auto stays on the CPU until its CUDA backend has had a first GPU run
(Documentation/fixels.md): its default and `--backend auto` run omp with no warning on any
machine and write what `--backend omp` writes; `--backend cuda` asks for the GPU (without one:
exit 1 and why, no output).
"""
import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed for %s" % sys.executable)
    sys.exit(0)

rng = np.random.default_rng(11)


def nrrd(path, array, vector=False, pixel="float"):
    shape = array.shape
    sizes = ((shape[3],) if vector else ()) + (shape[2], shape[1], shape[0])
    kinds = ("vector " if vector else "") + "domain domain domain"
    header = "NRRD0004\ntype: %s\ndimension: %d\nsizes: %s\nkinds: %s\nencoding: raw\nendian: little\n\n" % (
        pixel, len(sizes), " ".join(map(str, sizes)), kinds)
    with open(path, "wb") as f:
        f.write(header.encode() + array.astype("<f4" if pixel == "float" else "u1").tobytes())


def make_inputs(tool, d):
    """The inputs, and the command (before --backend) with OUT where the output goes."""
    if tool == "teig":
        np.save(os.path.join(d, "t.npy"), rng.standard_normal((40, 15)))
        return ["--order", "4", "--dim", "3", "--starts", "16", "--input", "t.npy", "--output", "OUT"], "e.csv"
    if tool == "eig":
        np.save(os.path.join(d, "m.npy"), rng.standard_normal((300, 5, 5)))
        return ["m.npy", "OUT"], "v.npy"
    if tool == "tucker-train":
        rows = {}
        while len(rows) < 2000:
            rows[tuple(int(rng.integers(1, n + 1)) for n in (30, 20, 10))] = float(rng.uniform(1, 5))
        with open(os.path.join(d, "s.tns"), "w") as f:
            f.writelines("%d %d %d %.3f\n" % (k + (v,)) for k, v in rows.items())
        return ["train", "s.tns", "--iters", "3", "--rank-j", "4", "--rank-r", "4", "--seed", "3", "--out", "OUT"], "model"
    if tool == "pltf":
        np.save(os.path.join(d, "x.npy"), rng.uniform(0, 2, (6, 7, 8)))
        return ["--model", "parafac", "--input", "x.npy", "--dims", "a=3", "--iters", "5", "--out", "OUT"], "fit"
    if tool == "fibers":
        sh = rng.standard_normal((3, 4, 5, 15)).astype(np.float32)
        sh[..., 0] = 2 + np.abs(sh[..., 0])
        nrrd(os.path.join(d, "sh.nrrd"), sh, vector=True)
        return ["sh.nrrd", "OUT"], "peaks.nrrd"
    if tool == "tucker-complete":
        nrrd(os.path.join(d, "img.nrrd"), rng.uniform(1, 2, (5, 6, 7)))
        nrrd(os.path.join(d, "mask.nrrd"), (rng.uniform(0, 1, (5, 6, 7)) > 0.3), pixel="uchar")
        return ["complete", "img.nrrd", "OUT", "--mask", "mask.nrrd", "--iters", "3", "--rank-j", "4", "--rank-r",
                "4"], "out.nrrd"
    if tool == "track":
        # an FOD of 5x4x3 voxels of 2 mm (NRRD: LPS, origin 0) seeded in every voxel; the
        # streamlines' bytes depend on neither the backend's threads nor the run (Philox keys)
        sh = (rng.standard_normal((3, 4, 5, 15)) * 0.3).astype(np.float32)
        sh[..., 0] = 1 + np.abs(sh[..., 0])
        nrrd(os.path.join(d, "fod.nrrd"), sh, vector=True)
        nrrd(os.path.join(d, "seed.nrrd"), np.ones((3, 4, 5)), pixel="uchar")
        return ["fod.nrrd", "OUT", "--seed-mask", "seed.nrrd", "--seeds", "4"], "tracks.tck"
    if tool == "fixels":
        sh = (rng.standard_normal((3, 4, 5, 15)) * 0.4).astype(np.float32)
        sh[..., 0] = 1 + np.abs(sh[..., 0])
        nrrd(os.path.join(d, "fod.nrrd"), sh, vector=True)
        return ["fod.nrrd", "OUT", "--afd", "afd.mif"], "fixels"
    raise ValueError(tool)


REPRODUCIBLE_ON_CUDA = {"teig", "eig", "fibers"}
AUTO_ON_CPU = {"fixels"}  # auto does not pick CUDA yet (see above)
EXE = {"teig": "tk-teig", "eig": "tk-eig", "tucker-train": "tk-tucker", "pltf": "tk-pltf", "fibers": "tk-fibers",
       "tucker-complete": "tk-tucker", "track": "tk-track", "fixels": "tk-fixels"}


def same_output(a, b):
    if os.path.isdir(a):
        names = sorted(n for n in os.listdir(a) if n != "manifest.txt")  # the manifest names the backend
        return names == sorted(n for n in os.listdir(b) if n != "manifest.txt") and all(
            filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False) for n in names)
    return filecmp.cmp(a, b, shallow=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tool", required=True, choices=sorted(EXE))
    a = ap.parse_args()
    exe = os.path.abspath(os.path.join(a.bin, EXE[a.tool]))
    prog = EXE[a.tool]
    d = tempfile.mkdtemp(prefix="tk_backend_auto_")
    problems = []
    try:
        args, out = make_inputs(a.tool, d)
        env = dict(os.environ, LC_ALL="C")

        def run(name, extra):
            cmd = [exe] + [name if x == "OUT" else x for x in args] + extra
            p = subprocess.run(cmd, cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, timeout=300)
            return p.returncode, p.stderr.decode(errors="replace")

        def where(name):
            return os.path.join(d, name)

        code, err = run("default_" + out, [])
        if code != 0:
            problems.append("the default run failed (%d): %s" % (code, err.strip()))
        pattern = re.compile(r"^%s: warning: no usable CUDA GPU \((.+)\); running on the CPU \(omp\)$" % prog)
        fallback = [l for l in err.splitlines() if pattern.match(l)]
        warnings = [l for l in err.splitlines() if "warning" in l or "CUDA" in l]
        cuda_code, cuda_err = run("cuda_" + out, ["--backend", "cuda"])
        if a.tool in AUTO_ON_CPU:
            if code == 0 and warnings:
                problems.append("the default run warned (auto stays on the CPU here):\n  " + "\n  ".join(warnings))
            for name, extra in (("omp_", ["--backend", "omp"]), ("auto_", ["--backend", "auto"])):
                c, e = run(name + out, extra)
                if c != 0 or "warning" in e:
                    problems.append("%s: exit %d, stderr %r" % (" ".join(extra), c, e))
                elif not same_output(where("default_" + out), where(name + out)):
                    problems.append("the default run's output differs from %s's" % " ".join(extra))
            gpu = cuda_code == 0
            print("--backend cuda: %s" % ("ran on the GPU" if gpu else cuda_err.strip()))
            if not gpu and (cuda_code != 1 or "--backend cuda: no usable CUDA GPU" not in cuda_err):
                problems.append("--backend cuda without a GPU: exit %d, stderr %r (expected exit 1 and why)"
                                % (cuda_code, cuda_err))
            if not gpu and os.path.exists(where("cuda_" + out)):
                problems.append("--backend cuda without a GPU left an output behind")
        elif fallback:
            print("no usable GPU here: %s" % pattern.match(fallback[0]).group(1))
            if len(warnings) != 1:
                problems.append("expected exactly one warning line, got %d:\n  %s" % (len(warnings), "\n  ".join(warnings)))
            code, omp_err = run("omp_" + out, ["--backend", "omp"])
            if code != 0 or "warning" in omp_err:
                problems.append("--backend omp: exit %d, stderr %r" % (code, omp_err))
            elif not same_output(where("default_" + out), where("omp_" + out)):
                problems.append("the default run's output differs from --backend omp's")
            code, auto_err = run("auto_" + out, ["--backend", "auto"])
            if code != 0 or [l for l in auto_err.splitlines() if pattern.match(l)] != fallback:
                problems.append("--backend auto did not do what the default did: exit %d, %r" % (code, auto_err))
            elif not same_output(where("default_" + out), where("auto_" + out)):
                problems.append("--backend auto's output differs from the default's")
            code, quiet_err = run("quiet_" + out, ["--quiet"])
            if code != 0 or "warning" in quiet_err:
                problems.append("--quiet: exit %d, stderr %r (expected no warning)" % (code, quiet_err))
            if cuda_code != 1 or "--backend cuda: no usable CUDA GPU" not in cuda_err:
                problems.append("--backend cuda without a GPU: exit %d, stderr %r (expected exit 1 and why)"
                                % (cuda_code, cuda_err))
            if os.path.exists(where("cuda_" + out)):
                problems.append("--backend cuda without a GPU left an output behind")
        else:
            print("a usable GPU is here: the default runs on CUDA")
            if warnings:
                problems.append("unexpected warnings:\n  " + "\n  ".join(warnings))
            if cuda_code != 0:
                problems.append("the default found a usable GPU but --backend cuda failed: %s" % cuda_err.strip())
            elif a.tool in REPRODUCIBLE_ON_CUDA and not same_output(where("default_" + out), where("cuda_" + out)):
                problems.append("the default run's output differs from --backend cuda's")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    for p in problems:
        print("FAIL: " + p)
    print("%s: %s" % (a.tool, "ok" if not problems else "%d problems" % len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
