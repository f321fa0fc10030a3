"""python -m tensorkernels.cohort INPUT_DIR OUTPUT_DIR [--pattern '*_fod.nii.gz'] [--scheduler ADDRESS]

Fiber peaks of every subject of a cohort as Dask tasks: each SH volume matching --pattern in
INPUT_DIR gives OUTPUT_DIR/<name>_peaks.nii.gz (sh2peaks' layout, world RAS directions times
amplitudes, as tk-fibers writes them).  Without --scheduler a dask.distributed LocalCluster of
--workers processes runs them on this machine (on the cuda backend, the default where a usable
GPU is found, one worker a GPU, each on its own GPU); with one, the tasks go to that scheduler's
workers (dask-jobqueue's SLURMCluster or PBSCluster, dask-kubernetes, `dask scheduler` by
hand: Documentation/python.md), each of which needs the package installed.

Resumable and safe: an output is written to a hidden temporary file beside it and renamed into
place when whole, so an output that exists is complete and is not recomputed; a subject that
fails (an unreadable file, a wrong shape) is reported and the others go on; a worker that dies
mid-task has its tasks rerun elsewhere by the scheduler, and the temporary files of interrupted
runs are removed.  Exit status 0 when every subject has its output, 1 when some failed, 2 for
bad arguments.  Progress (a line per subject) on stderr when it is a terminal, unless --quiet.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Dict, List, Optional

SUFFIX = "_peaks.nii.gz"
TMP_MARK = ".tk-tmp-"


def output_name(path: Path) -> str:
    name = path.name
    for ext in (".nii.gz", ".nii", ".mif.gz", ".mif"):
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    return name + SUFFIX


def worker_gpu(visible: int, name=None) -> int:
    """The GPU of the Dask worker running this task, one GPU a worker: a LocalCluster names its
    workers 0, 1, ..., and worker i takes GPU i (modulo the GPUs it sees).  A worker of another
    name (a batch job of dask-jobqueue, which its scheduler gives one GPU through
    CUDA_VISIBLE_DEVICES, e.g. SLURM's --gres=gpu:1) takes the first GPU it sees.  `name`: the
    worker's name (default: the running worker's; outside a worker, GPU 0)."""
    if name is None:
        try:
            from dask.distributed import get_worker

            name = get_worker().name
        except (ImportError, ValueError):
            return 0
    if isinstance(name, str) and name.isdigit():
        name = int(name)
    return name % visible if isinstance(name, int) and visible > 0 else 0


def subject_peaks(in_path: str, out_path: str, options: dict) -> str:
    """One subject (a Dask task): read, find peaks, write atomically.  Returns out_path.  On the
    cuda backend each worker runs on its own GPU (worker_gpu)."""
    from . import _tensorkernels as _core
    from . import io

    backend, device = options.get("backend", "omp"), None
    if backend == "cuda":
        device = worker_gpu(int(_core.cuda_device_count()))
    img = io.load_sh(in_path, basis=options.get("basis", "tournier"), legacy=options.get("legacy", False),
                     check_basis=False)
    p = io.peaks(img, num_peaks=options.get("num_peaks", 3), threshold=options.get("threshold", 0.0),
                 relative_threshold=options.get("relative_threshold", 0.0),
                 min_separation=options.get("min_separation", 0.0), backend=backend, device=device,
                 threads=options.get("threads", 1))
    out = Path(out_path)
    tmp = out.with_name(f".{out.name[:-len('.nii.gz')]}{TMP_MARK}{uuid.uuid4().hex}.nii.gz")
    try:
        io.save_peaks(str(tmp), p, img)
        os.replace(tmp, out)  # atomic on one file system: the output is whole or absent
    finally:
        if tmp.exists():
            tmp.unlink()
    return out_path


def remove_stale_temporaries(out_dir: Path) -> int:
    n = 0
    for f in out_dir.glob(f".*{TMP_MARK}*"):
        f.unlink(missing_ok=True)
        n += 1
    return n


def run_cohort(input_dir: str, output_dir: str, pattern: str = "*_fod.nii.gz", *, client=None,
               options: Optional[dict] = None, progress: Optional[Callable[[str], None]] = None,
               on_done: Optional[Callable[[str, Optional[str]], None]] = None) -> Dict[str, List[str]]:
    """Run the cohort on a dask.distributed Client; returns {"done", "skipped", "failed"}: the
    subjects' input paths (failed: "path: message").  on_done(path, error) is called as each
    subject finishes (the tests use it)."""
    from dask.distributed import as_completed

    options = dict(options or {})
    inp, out = Path(input_dir), Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    subjects = sorted(p for p in inp.iterdir() if p.is_file() and fnmatch.fnmatch(p.name, pattern))
    result: Dict[str, List[str]] = {"done": [], "skipped": [], "failed": []}
    todo = []
    for s in subjects:
        if (out / output_name(s)).exists():
            result["skipped"].append(str(s))
        else:
            todo.append(s)
    # pure=False: a rerun after a failure recomputes; retries: a task whose worker died runs again
    futures = {client.submit(subject_peaks, str(s), str(out / output_name(s)), options, pure=False, retries=2): s
               for s in todo}
    n, t0 = len(todo), time.perf_counter()
    for k, f in enumerate(as_completed(futures), 1):
        s = futures[f]
        try:
            f.result()
            result["done"].append(str(s))
            err = None
        except Exception as e:  # one subject's failure is reported; the rest go on
            err = f"{type(e).__name__}: {e}"
            result["failed"].append(f"{s}: {err}")
        if progress:
            progress(f"[{k}/{n}] {s.name}: {'done' if err is None else 'FAILED: ' + err} "
                     f"({time.perf_counter() - t0:.1f} s)")
        if on_done:
            on_done(str(s), err)
    remove_stale_temporaries(out)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorkernels.cohort", description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input_dir")
    ap.add_argument("output_dir")
    ap.add_argument("--pattern", default="*_fod.nii.gz", help="subjects' file names (glob; default *_fod.nii.gz)")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler (default: a LocalCluster here)")
    ap.add_argument("--workers", type=int, default=None,
                    help="LocalCluster worker processes (default: one a GPU on the cuda backend, else 2)")
    ap.add_argument("--backend", choices=("auto", "omp", "cuda"), default="auto",
                    help="auto (default): cuda where a usable GPU is found, one GPU a worker; else omp")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP threads per subject (default 1)")
    ap.add_argument("--num", type=int, default=3, help="peaks per voxel (default 3)")
    ap.add_argument("--basis", choices=("tournier", "descoteaux"), default="tournier")
    ap.add_argument("--legacy", action="store_true")
    ap.add_argument("--threshold", type=float, default=0.0)
    ap.add_argument("--relative-threshold", type=float, default=0.0)
    ap.add_argument("--min-separation", type=float, default=0.0, help="degrees")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args(argv)
    if not Path(a.input_dir).is_dir():
        print(f"tensorkernels.cohort: input directory {a.input_dir} does not exist", file=sys.stderr)
        return 2
    if a.workers is not None and a.workers < 1:
        print(f"tensorkernels.cohort: --workers must be >= 1, got {a.workers}", file=sys.stderr)
        return 2
    from dask.distributed import Client, LocalCluster

    from ._arrays import BACKENDS, backend_code
    from . import _tensorkernels as _core

    backend = "cuda" if backend_code(a.backend) == BACKENDS["cuda"] else "omp"
    gpus = int(_core.cuda_device_count()) if backend == "cuda" else 0
    if a.backend == "cuda" and gpus == 0:
        print("tensorkernels.cohort: --backend cuda: no CUDA GPU found (or a build without CUDA); use --backend omp",
              file=sys.stderr)
        return 2
    workers = a.workers if a.workers is not None else (gpus if gpus else 2)
    options = dict(num_peaks=a.num, basis=a.basis, legacy=a.legacy, threshold=a.threshold,
                   relative_threshold=a.relative_threshold, min_separation=a.min_separation, threads=a.threads,
                   backend=backend)
    show = (lambda line: print(line, file=sys.stderr, flush=True)) if sys.stderr.isatty() and not a.quiet else None
    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        r = run_cohort(a.input_dir, a.output_dir, a.pattern, client=client, options=options, progress=show)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(f"{len(r['done'])} subjects done, {len(r['skipped'])} already done (skipped), {len(r['failed'])} failed; "
          f"outputs in {a.output_dir}")
    for f in r["failed"]:
        print(f"failed: {f}", file=sys.stderr)
    return 1 if r["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
