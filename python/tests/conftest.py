"""Independent oracles of the package's tests: SH bases from DIPY (not the core's), a dense
sphere, symmetric tensors unpacked with itertools (not tk_sym_unpack)."""
import itertools

import numpy as np
import pytest


def fibonacci_sphere(n):
    """n nearly even unit vectors on the sphere (the golden-angle spiral)."""
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    r = np.sqrt(1 - z * z)
    phi = np.pi * (1 + 5 ** 0.5) * i
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def sh_matrix(dirs, lmax, basis):
    """The SH basis of DIPY (tournier07 = MRtrix3's, descoteaux07), non-legacy, at unit vectors."""
    shm = pytest.importorskip("dipy.reconst.shm")
    theta = np.arccos(np.clip(dirs[:, 2], -1, 1))  # polar angle from +z
    phi = np.arctan2(dirs[:, 1], dirs[:, 0])  # azimuth from +x towards +y
    f = shm.real_sh_tournier if basis == "tournier" else shm.real_sh_descoteaux
    return f(lmax, theta, phi, full_basis=False, legacy=False)[0]


def full_tensor(packed, order, dim):
    """The full n^m tensor of a packed one: the unique entries are the non-decreasing index
    tuples in lexicographic order, i.e. itertools.combinations_with_replacement's order."""
    full = np.empty((dim,) * order, dtype=np.float64)
    for value, idx in zip(packed, itertools.combinations_with_replacement(range(dim), order)):
        for p in set(itertools.permutations(idx)):
            full[p] = value
    return full


def packed_tensor(full, order, dim):
    return np.array([full[idx] for idx in itertools.combinations_with_replacement(range(dim), order)])


def apply_m1(full, x):
    """A x^(m-1): contract every index but the first with x."""
    y = full
    for _ in range(full.ndim - 1):
        y = y @ x
    return y


def built_tool(name):
    """The project's command-line tool `name` in $TK_BUILD_DIR/bin (the CTest sets it), or None."""
    import os
    build = os.environ.get("TK_BUILD_DIR")
    path = os.path.join(build, "bin", name) if build else None
    return path if path and os.access(path, os.X_OK) else None


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA build of the package (TK_PYTHON_CUDA=ON) and a usable GPU")


def require_gpu():
    """Skips, saying why, unless the package has its CUDA backends and device 0 is usable."""
    import tensorkernels as tk
    if not tk.has_cuda():
        pytest.skip("SKIPPED: the package was built without CUDA (TK_PYTHON_CUDA=ON pip install ./python)")
    usable, why = tk._tensorkernels.cuda_usable(0)
    if not usable:
        pytest.skip(f"SKIPPED: no usable GPU here: {why}")


def releases_gil(call):
    """Runs call() in a thread while this thread counts loop turns: a core that let go of the
    GIL leaves this thread running (tens of thousands of turns a second); one that held it
    leaves a switch interval or two.  Returns (seconds the call took, its value)."""
    import threading
    import time

    done, out = threading.Event(), {}

    def work():
        try:
            t0 = time.perf_counter()
            out["value"] = call()
            out["seconds"] = time.perf_counter() - t0
        except BaseException as e:  # re-raised below, in the test's thread
            out["error"] = e
        finally:
            done.set()

    count = 0
    th = threading.Thread(target=work)
    th.start()
    time.sleep(0.01)
    while not done.is_set():
        count += 1
    th.join()
    if "error" in out:
        raise out["error"]
    assert out["seconds"] > 0.05, "the core call was too short to tell"
    assert count > 20000 * out["seconds"], (count, out["seconds"])
    return out["seconds"], out["value"]
