"""python -m tensorkernels.cohort on a real dask.distributed LocalCluster of 2 worker processes:
outputs equal the single-process peaks bit for bit, a rerun skips finished subjects, a corrupt
subject fails alone, a worker killed mid-run loses no output and leaves no partial file."""
import os
import signal
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk

pytest.importorskip("dask.distributed")
nib = pytest.importorskip("nibabel")
from dask.distributed import Client, LocalCluster  # noqa: E402

from tensorkernels import cohort  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # tornado under Debian's distributed

AFFINE = np.array([[-2.0, 0, 0, 90], [0, 2, 0, -120], [0, 0, 2, -70], [0, 0, 0, 1]])


def make_cohort(folder: Path, count: int, shape=(8, 8, 8)):
    rng = np.random.default_rng(31)
    folder.mkdir()
    for i in range(count):
        sh = rng.standard_normal(shape + (45,)).astype(np.float32) * 0.3
        sh[..., 0] = 2.0
        nib.save(nib.Nifti1Image(sh, AFFINE), str(folder / f"sub-{i:02d}_fod.nii.gz"))
    (folder / "sub-99_fod.nii.gz").write_bytes(b"not a NIfTI file at all" * 10)  # corrupt
    (folder / "notes.txt").write_text("not a subject")


def expected(path: Path):
    img = tk.io.load_sh(str(path), check_basis=False)
    p = tk.io.peaks(img, num_peaks=3, backend="cpu")
    return (p.directions * p.amplitudes[..., None]).reshape(img.sh.shape[:3] + (9,))


def no_temporaries(out: Path):
    return not [f for f in os.listdir(out) if cohort.TMP_MARK in f]


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as c:
        yield c


def test_cli_outputs_rerun_and_corrupt_subject(tmp_path, capsys):
    inp, out = tmp_path / "in", tmp_path / "out"
    make_cohort(inp, 4)
    rc = cohort.main([str(inp), str(out), "--workers", "2", "--quiet"])
    captured = capsys.readouterr()
    assert rc == 1  # the corrupt subject failed ...
    assert "4 subjects done, 0 already done (skipped), 1 failed" in captured.out
    assert "sub-99_fod.nii.gz" in captured.err
    for i in range(4):  # ... and the others are complete, equal to one process's peaks bit for bit
        got = np.asarray(nib.load(str(out / f"sub-{i:02d}_fod_peaks.nii.gz")).dataobj)
        np.testing.assert_array_equal(got, expected(inp / f"sub-{i:02d}_fod.nii.gz"))
    assert sorted(os.listdir(out)) == [f"sub-{i:02d}_fod_peaks.nii.gz" for i in range(4)]
    # a rerun recomputes nothing that is done
    before = {f: (out / f).stat().st_mtime_ns for f in os.listdir(out)}
    rc = cohort.main([str(inp), str(out), "--workers", "1", "--quiet"])
    assert rc == 1 and "0 subjects done, 4 already done (skipped), 1 failed" in capsys.readouterr().out
    assert before == {f: (out / f).stat().st_mtime_ns for f in os.listdir(out)}
    assert cohort.main([str(tmp_path / "missing"), str(out), "--quiet"]) == 2


def test_killed_worker_loses_nothing(tmp_path, client):
    inp, out = tmp_path / "in", tmp_path / "out"
    make_cohort(inp, 8, shape=(32, 32, 32))  # ~0.3 s a subject: the kill lands mid-run
    (inp / "sub-99_fod.nii.gz").unlink()
    pids = client.run(os.getpid)  # worker address -> process id
    killed = []

    def on_done(path, err):
        if not killed:  # the first subject is done: kill a worker that is running a subject now
            busy = [w for w, tasks in client.processing().items() if tasks and w in pids]
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append(busy[0])

    r = cohort.run_cohort(str(inp), str(out), client=client, options={"threads": 1}, on_done=on_done)
    assert killed and not r["failed"], r
    assert len(r["done"]) == 8
    assert no_temporaries(out)
    for i in range(8):
        got = np.asarray(nib.load(str(out / f"sub-{i:02d}_fod_peaks.nii.gz")).dataobj)
        np.testing.assert_array_equal(got, expected(inp / f"sub-{i:02d}_fod.nii.gz"))


def test_stale_temporaries_removed(tmp_path, client):
    inp, out = tmp_path / "in", tmp_path / "out"
    make_cohort(inp, 1)
    out.mkdir()
    stale = out / f".sub-00_fod_peaks{cohort.TMP_MARK}dead.nii.gz"
    stale.write_bytes(b"half")
    r = cohort.run_cohort(str(inp), str(out), client=client)
    assert len(r["done"]) == 1 and len(r["failed"]) == 1 and not stale.exists()


def test_one_gpu_a_worker():
    # LocalCluster's workers are named 0, 1, ...: worker i takes GPU i modulo the GPUs it sees;
    # a batch job's worker (another name; its GPU given by CUDA_VISIBLE_DEVICES) the first
    assert [cohort.worker_gpu(2, name) for name in (0, 1, 2, 3)] == [0, 1, 0, 1]
    assert [cohort.worker_gpu(4, name) for name in ("0", "3", "5")] == [0, 3, 1]
    assert cohort.worker_gpu(2, "tcp://10.0.0.7:4312") == 0 and cohort.worker_gpu(0, 3) == 0
    assert cohort.worker_gpu(2) == 0  # outside a worker


def test_each_local_worker_takes_its_own_gpu(client):
    # the two worker processes of a real LocalCluster, asked on which of 2 GPUs they would run
    assert sorted(client.run(cohort.worker_gpu, 2).values()) == [0, 1]


def test_cuda_backend_without_a_gpu_is_a_clear_error(tmp_path, capsys):
    if tk._tensorkernels.cuda_device_count() > 0:
        pytest.skip("this machine has a CUDA GPU")
    inp = tmp_path / "in"
    make_cohort(inp, 1)
    assert cohort.main([str(inp), str(tmp_path / "out"), "--backend", "cuda", "--quiet"]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err
