"""What every binding promises: arrays used in place (no copies), outputs written into given
arrays, the GIL released while a core runs, the version on the command line."""
import re
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tensorkernels as tk
from conftest import releases_gil


def test_version_matches_the_project():
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    version = re.search(r"project\(TensorKernels VERSION ([0-9.]+)", cmake).group(1)
    assert tk.__version__ == version == tk.core_version()
    out = subprocess.run([sys.executable, "-m", "tensorkernels", "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(f"tensorkernels {version} (core {version}; backends: cpu, omp")


def test_outputs_are_the_given_arrays():
    sh = np.random.default_rng(1).standard_normal((50, 45)).astype(np.float32)
    d = np.empty((50, 3, 3), dtype=np.float32)
    a = np.empty((50, 3), dtype=np.float32)
    p = tk.fibers.peaks(sh, out=(d, a))
    assert p.directions is d and p.amplitudes is a
    m = np.random.default_rng(2).standard_normal((20, 4, 4))
    v = np.empty((20, 4), dtype=np.complex128)
    assert tk.eig.eigvals(m, out=v) is v
    t = np.random.default_rng(3).standard_normal((5, 15))
    first = tk.sshopm(t, 4, 3, num_starts=8)
    again = tk.sshopm(t, 4, 3, num_starts=8, out=first)
    assert all(x is y for x, y in zip(first, again))
    # the bool 'converged' and the complex results are the core's buffers seen through views
    assert np.shares_memory(again.converged, first.converged)


def test_inputs_are_not_copied():
    # NumPy reports its allocations to tracemalloc: a copy of the 36 MB input would show.
    sh = np.random.default_rng(4).standard_normal((200000, 45)).astype(np.float32)
    sh.flags.writeable = False  # read-only input is fine: the core only reads it
    d = np.empty((200000, 1, 3), dtype=np.float32)
    a = np.empty((200000, 1), dtype=np.float32)
    tracemalloc.start()
    try:
        tk.fibers.peaks(sh[:20000], num_peaks=1, out=(d[:20000], a[:20000]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < sh[:20000].nbytes / 20, peak
    m = np.random.default_rng(5).standard_normal((100000, 4, 4))
    vals = np.empty((100000, 4), dtype=np.complex128)
    tracemalloc.start()
    try:
        tk.eig.eigvals(m, out=vals)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < m.nbytes / 20, peak


def test_gil_released_while_a_core_runs():
    # While one thread is inside a core, another runs Python code: it could not if the core held the GIL.
    m = np.random.default_rng(6).standard_normal((60000, 12, 12))
    releases_gil(lambda: tk.eig.eigvals(m, backend="cpu"))


def test_list_and_bad_out_refused():
    with pytest.raises(TypeError, match="numpy.ndarray"):
        tk.fibers.peaks([[0.0] * 45])
    sh = np.zeros((3, 45), dtype=np.float32)
    with pytest.raises(ValueError, match="directions: expected shape"):
        tk.fibers.peaks(sh, out=(np.empty((3, 2, 3), np.float32), np.empty((3, 3), np.float32)))
    ro = np.empty((3, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tk.fibers.peaks(sh, out=(np.empty((3, 3, 3), np.float32), ro))


def test_ctrl_c_interrupts_between_chunks():
    # 600,000 12 x 12 matrices take about 4 s on one thread; SIGINT after 0.3 s stops the call at
    # the next chunk boundary (16,384 matrices, ~0.1 s) with KeyboardInterrupt.
    import os
    import signal
    big = np.random.default_rng(1).standard_normal((600000, 12, 12))
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tk.eig.eigvals(big, backend="cpu")
    timer.join()
    assert time.perf_counter() - t0 < 1.5


def test_chunked_calls_equal_their_pieces():
    # Calls longer than a chunk (bindings.h: 16,384 voxels or matrices, 4,096 tensors) give what
    # separate calls on the pieces give, bit for bit.
    rng = np.random.default_rng(9)
    sh = rng.standard_normal((40000, 15)).astype(np.float32)
    whole = tk.fibers.peaks(sh, num_peaks=2)
    for lo, hi in [(0, 10000), (10000, 30000), (30000, 40000)]:
        part = tk.fibers.peaks(sh[lo:hi], num_peaks=2)
        np.testing.assert_array_equal(part.directions, whole.directions[lo:hi])
        np.testing.assert_array_equal(part.amplitudes, whole.amplitudes[lo:hi])
    m = rng.standard_normal((40000, 3, 3))
    w = tk.eig.eigvals(m)
    np.testing.assert_array_equal(w[20000:], tk.eig.eigvals(m[20000:]))
    t = rng.standard_normal((9000, 15))
    s = tk.sshopm(t, 4, 3, num_starts=4)
    p = tk.sshopm(t[5000:], 4, 3, num_starts=4)
    np.testing.assert_array_equal(p.eigenvalues, s.eigenvalues[5000:])
    np.testing.assert_array_equal(p.eigenvectors, s.eigenvectors[5000:])


def test_type_stubs_cover_the_extension():
    # _tensorkernels.pyi names every function and class the extension defines, and nothing else;
    # each class's stub names its methods and attributes.
    import ast
    stub = Path(tk.__file__).with_name("_tensorkernels.pyi")
    tree = ast.parse(stub.read_text())
    stubbed = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    ext = tk._tensorkernels
    defined = {name for name in dir(ext) if not name.startswith("_")}
    assert set(stubbed) == defined
    for name, node in stubbed.items():
        if isinstance(node, ast.ClassDef):
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
            public = {m for m in dir(getattr(ext, name)) if not m.startswith("_")}
            assert members - {"__init__"} == public, name


def test_every_module_documents_its_functions():
    import inspect
    for module in (tk.fibers, tk.eig, tk.io, tk.tucker, tk.pltf, tk.tracking):
        assert module.__doc__
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert obj.__doc__, f"{module.__name__}.{name} has no docstring"


def test_cuda_probe_answers_in_any_build():
    # backend="auto" asks it in a CUDA build; it must answer (usable, reason) there and here
    usable, why = tk._tensorkernels.cuda_usable(0)
    assert isinstance(usable, bool) and isinstance(why, str)
    if not tk.has_cuda():
        assert not usable and why


class _OtherGpuArray:
    """An array of a library the package does not know, on a CUDA device (DLPack's kDLCUDA)."""

    def __dlpack_device__(self):
        return (2, 0)


def test_gpu_arrays_of_another_library_or_for_host_only_cores_are_refused():
    # no GPU needed: the refusals come before any core runs
    other = _OtherGpuArray()
    for call in (lambda: tk.fibers.peaks(other), lambda: tk.eig.eigvals(other), lambda: tk.sshopm(other, 4, 3)):
        with pytest.raises(TypeError, match="CuPy arrays and PyTorch CUDA tensors"):
            call()
    with pytest.raises(TypeError, match="values: "):
        tk.tucker.Coo(np.zeros((1, 3), np.uint32), other)
    with pytest.raises(TypeError, match="x: "):
        tk.pltf.fit(other, "parafac", dims={"a": 2})
    with pytest.raises(TypeError, match="affine: "):
        tk.tracking.track(np.zeros((2, 2, 2, 6), np.float32), other, seed_points=np.zeros((1, 3)))


def test_gpus_follows_the_tools_rule():
    sh = np.random.default_rng(6).standard_normal((10, 45)).astype(np.float32)
    # 0 (the default) asks for no GPU in particular; a count on the CPU is refused, as tk-fibers --gpus is
    assert tk.fibers.peaks(sh, backend="omp", gpus=0).bad_voxels == 0
    with pytest.raises(ValueError, match="gpus=1 applies to the cuda backend"):
        tk.fibers.peaks(sh, backend="omp", gpus=1)
    with pytest.raises(ValueError, match="gpus must be an integer >= 0"):
        tk.eig.eigvals(np.eye(3), gpus=-1)
    with pytest.raises(ValueError, match="gpus=2"):
        tk.sshopm(np.ones((2, 15)), 4, 3, backend="cpu", gpus=2)
    if not tk.has_cuda() or not tk._tensorkernels.cuda_usable(0)[0]:
        with pytest.raises(ValueError, match="backend='auto' runs on the CPU"):
            tk.fibers.peaks(sh, gpus=1)
