"""CuPy arrays and PyTorch CUDA tensors through the per-voxel cores (marker `gpu`; skipped without
a CUDA build of the package, a usable GPU, or the library).

The probe: `_tensorkernels.array_transfer_bytes()` counts the bytes of callers' arrays that the
cores copy between host and device memory (tk_test_array_transfer_bytes).  A call on NumPy
arrays with backend="cuda" must add exactly its arrays' sizes (the probe sees the copies), and
the same call on GPU arrays must add nothing (no host round trip).  The oracle for the results:
the NumPy call on the same cuda backend, which the core promises bit for bit (the same kernels on
the same data); the NumPy call on the CPU agrees to the backends' stated tolerance elsewhere
(test_fibers / test_eig / test_sshopm, Testing/gpu)."""
import numpy as np
import pytest

import tensorkernels as tk
from conftest import require_gpu
from tensorkernels import _tensorkernels as core

pytestmark = pytest.mark.gpu


@pytest.fixture(params=["cupy", "torch"])
def lib(request):
    require_gpu()
    mod = pytest.importorskip(request.param, reason=f"SKIPPED: {request.param} is not installed here")
    if request.param == "torch" and not mod.cuda.is_available():
        pytest.skip("SKIPPED: this torch has no usable CUDA")
    return request.param


def to_gpu(lib, a):
    if lib == "cupy":
        import cupy
        return cupy.asarray(a)
    import torch
    return torch.from_numpy(np.ascontiguousarray(a)).to("cuda:0")


def to_host(lib, a):
    return a.get() if lib == "cupy" else a.cpu().numpy()


def assert_lib(lib, a, dtype):
    if lib == "cupy":
        import cupy
        assert isinstance(a, cupy.ndarray) and a.device.id == 0
        assert a.dtype == dtype
    else:
        import torch
        assert isinstance(a, torch.Tensor) and a.is_cuda and a.device.index == 0
        assert str(a.dtype) == "torch." + np.dtype(dtype).name


def same_bits(gpu, host):
    g = np.ascontiguousarray(gpu)
    return g.shape == host.shape and g.dtype == host.dtype and g.tobytes() == host.tobytes()


def crossed(call):
    """(call's value, bytes of callers' arrays the cores moved between host and device meanwhile)."""
    before = core.array_transfer_bytes()
    value = call()
    return value, core.array_transfer_bytes() - before


def sh_volume():
    """A float32 lmax-8 SH volume (12, 10, 9) with positive l=0 terms, a NaN voxel and a mask."""
    rng = np.random.default_rng(5)
    sh = rng.standard_normal((12, 10, 9, 45)).astype(np.float32) * 0.2
    sh[..., 0] = 1.5
    sh[3, 4, 5, 7] = np.nan
    mask = rng.random(sh.shape[:3]) > 0.2
    mask[3, 4, 5] = True
    return sh, mask


def test_peaks_of_gpu_arrays_stay_on_the_gpu(lib):
    sh, mask = sh_volume()
    host, moved = crossed(lambda: tk.fibers.peaks(sh, mask=mask, relative_threshold=0.1, backend="cuda"))
    assert moved == sh.nbytes + mask.nbytes + host.directions.nbytes + host.amplitudes.nbytes  # the probe sees copies
    g_sh, g_mask = to_gpu(lib, sh), to_gpu(lib, mask)
    gpu, moved = crossed(lambda: tk.fibers.peaks(g_sh, mask=g_mask, relative_threshold=0.1))
    assert moved == 0, "the GPU arrays made a host round trip"
    assert_lib(lib, gpu.directions, np.float32)
    assert_lib(lib, gpu.amplitudes, np.float32)
    assert same_bits(to_host(lib, gpu.directions), host.directions)
    assert same_bits(to_host(lib, gpu.amplitudes), host.amplitudes)
    assert gpu.bad_voxels == host.bad_voxels == 1


def test_peaks_write_into_gpu_out_arrays(lib):
    sh, _ = sh_volume()
    g_sh = to_gpu(lib, sh)
    first = tk.fibers.peaks(g_sh, num_peaks=2)
    out = (to_gpu(lib, np.zeros(sh.shape[:3] + (2, 3), np.float32)), to_gpu(lib, np.zeros(sh.shape[:3] + (2,), np.float32)))
    again = tk.fibers.peaks(g_sh, num_peaks=2, out=out)
    assert again.directions is out[0] and again.amplitudes is out[1]
    assert same_bits(to_host(lib, out[0]), to_host(lib, first.directions))


def test_peaks_wait_for_the_callers_stream(lib):
    """The SH are written by work queued on a non-default stream, current while peaks runs."""
    sh, _ = sh_volume()
    want = tk.fibers.peaks(sh, backend="cuda")
    if lib == "cupy":
        import cupy
        base = cupy.asarray(sh / 4)
        with cupy.cuda.Stream(non_blocking=True):
            g_sh = base * 4  # queued on the side stream
            got = tk.fibers.peaks(g_sh)
    else:
        import torch
        base = to_gpu(lib, sh / 4)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            g_sh = base * 4
            got = tk.fibers.peaks(g_sh)
    assert same_bits(to_host(lib, got.amplitudes), want.amplitudes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sshopm_of_gpu_arrays_stays_on_the_gpu(lib, dtype):
    rng = np.random.default_rng(8)
    t = rng.standard_normal((300, 15)).astype(dtype)
    host, moved = crossed(lambda: tk.sshopm(t, order=4, dim=3, num_starts=16, backend="cuda"))
    assert moved == t.nbytes + sum(a.nbytes for a in host)
    gpu, moved = crossed(lambda: tk.sshopm(to_gpu(lib, t), order=4, dim=3, num_starts=16))
    assert moved == 0, "the GPU arrays made a host round trip"
    for g, h in zip(gpu, host):
        assert_lib(lib, g, h.dtype)
        assert same_bits(to_host(lib, g), h)
    assert host.converged.mean() > 0.9
    starts = np.linalg.qr(rng.standard_normal((3, 3)))[0].astype(dtype)
    assert same_bits(to_host(lib, tk.sshopm(to_gpu(lib, t), order=4, dim=3, starts=starts).eigenvalues),
                     tk.sshopm(t, order=4, dim=3, starts=starts, backend="cuda").eigenvalues)


def test_sshopm_refuses_a_non_finite_tensor_in_the_host_calls_words(lib):
    t = np.random.default_rng(9).standard_normal((50, 15))
    t[17, 3] = np.inf
    with pytest.raises(ValueError) as host:
        tk.sshopm(t, order=4, dim=3, backend="cuda")
    with pytest.raises(ValueError) as gpu:
        tk.sshopm(to_gpu(lib, t), order=4, dim=3)
    assert str(gpu.value) == str(host.value) and "tensor 17" in str(gpu.value)


@pytest.mark.parametrize("dtype,n", [(np.float64, 4), (np.float32, 3), (np.float64, 7)])
def test_eig_of_gpu_arrays_stays_on_the_gpu(lib, dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((20000, n, n)).astype(dtype)
    a[11, 0, 0] = np.nan
    (hw, hv, hs), moved = crossed(lambda: tk.eig.eig(a, backend="cuda", return_status=True))
    assert moved == a.nbytes + hw.nbytes + hv.nbytes + hs.nbytes
    (gw, gv, gs), moved = crossed(lambda: tk.eig.eig(to_gpu(lib, a), return_status=True))
    assert moved == 0, "the GPU arrays made a host round trip"
    assert_lib(lib, gw, hw.dtype)
    assert_lib(lib, gv, hv.dtype)
    assert_lib(lib, gs, np.int8)
    assert same_bits(to_host(lib, gw), hw) and same_bits(to_host(lib, gv), hv) and same_bits(to_host(lib, gs), hs)
    assert hs[11] == 2 and np.count_nonzero(hs) == 1
    w, moved = crossed(lambda: tk.eig.eigvals(to_gpu(lib, a)))
    assert moved == 0
    assert same_bits(to_host(lib, w), tk.eig.eigvals(a, backend="cuda"))
    # and numpy.linalg's values (sorted), where the matrices converged
    ref = np.sort_complex(np.linalg.eigvals(a[12:200].astype(np.float64)))
    tol = 1e-3 if dtype == np.float32 else 1e-9
    assert np.allclose(to_host(lib, w)[12:200], ref, atol=tol * 10, rtol=tol)


def test_gpu_arrays_are_refused_where_they_would_cross(lib):
    sh, mask = sh_volume()
    g_sh = to_gpu(lib, sh)
    with pytest.raises(ValueError, match="backend='omp' runs on the CPU"):
        tk.fibers.peaks(g_sh, backend="omp")
    with pytest.raises(ValueError, match="gpus=2"):
        tk.fibers.peaks(g_sh, gpus=2)
    with pytest.raises(TypeError, match="mask: expected a .* array on GPU 0"):
        tk.fibers.peaks(g_sh, mask=mask)  # a NumPy mask with a GPU sh
    with pytest.raises(TypeError, match="mask: .* not a .* array on the GPU"):
        tk.fibers.peaks(sh, mask=to_gpu(lib, mask))  # a GPU mask with a NumPy sh
    with pytest.raises(ValueError, match="device=1 was asked for"):
        tk.fibers.peaks(g_sh, device=1)
    with pytest.raises(TypeError, match="dtype float64"):
        tk.fibers.peaks(to_gpu(lib, sh.astype(np.float64)))
    with pytest.raises(TypeError, match="tensors: eigenpairs"):
        tk.eigenpairs(to_gpu(lib, np.ones((2, 15))), order=4, dim=3)
    with pytest.raises(TypeError, match="starts: the start vectors"):
        tk.sshopm(to_gpu(lib, np.ones((2, 15))), order=4, dim=3, starts=to_gpu(lib, np.eye(3)))
    # the cores that take host arrays only: a TypeError naming the argument
    with pytest.raises(TypeError, match="sh: this function"):
        tk.tracking.track(g_sh, np.eye(4), seed_points=np.zeros((1, 3)))
    with pytest.raises(TypeError, match="values: this function"):
        tk.tucker.Coo(np.zeros((1, 3), np.uint32), to_gpu(lib, np.ones(1, np.float32)))
    with pytest.raises(TypeError, match="x: this function"):
        tk.pltf.fit(to_gpu(lib, np.ones((3, 4, 5))), "parafac", dims={"a": 2}, iterations=1)


def test_torch_tensors_that_require_grad_are_refused():
    require_gpu()
    torch = pytest.importorskip("torch", reason="SKIPPED: torch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("SKIPPED: this torch has no usable CUDA")
    t = torch.ones((4, 15), dtype=torch.float64, device="cuda:0", requires_grad=True)
    with pytest.raises(ValueError, match="detach"):
        tk.sshopm(t, order=4, dim=3)
