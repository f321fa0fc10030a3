"""GPU arrays (CuPy arrays, PyTorch CUDA tensors): checked here, handed to the cores' device-array
entry points (tk_*_plan_execute_device) through DLPack, and answered with arrays of the same
library on the same GPU.  No byte of them goes to the host: a GPU array given to a CPU backend is
an error, not a silent copy (the same rule as for NumPy arrays of another layout).

Neither library is imported unless the caller's array is one of its arrays.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["library", "check", "check_backend", "empty", "stream", "as_floats", "as_bytes", "refuse", "device_for"]

_KDL_CUDA = 2  # DLPack's device type of CUDA device memory


def library(a, name: str = "array") -> Optional[str]:
    """"cupy" or "torch" for a CuPy array or a PyTorch CUDA tensor, None for anything else on
    the host; a TypeError for another library's GPU array (its results could not come back as
    that library's arrays)."""
    root = type(a).__module__.split(".", 1)[0]
    if root == "cupy" and hasattr(a, "__cuda_array_interface__"):
        return "cupy"
    if root == "torch" and getattr(a, "is_cuda", False):
        return "torch"
    dev = getattr(a, "__dlpack_device__", None)
    on_gpu = hasattr(a, "__cuda_array_interface__")
    if not on_gpu and callable(dev):
        try:
            on_gpu = int(dev()[0]) == _KDL_CUDA
        except Exception:  # a host array's odd __dlpack_device__: not a GPU array
            on_gpu = False
    if on_gpu:
        raise TypeError(f"{name}: a {type(a).__module__}.{type(a).__name__} on a GPU: the package takes CuPy arrays and "
                        "PyTorch CUDA tensors (cupy.from_dlpack(x) or torch.from_dlpack(x) views it without a copy)")
    return None


def _device(a, lib: str) -> int:
    return int(a.device.id) if lib == "cupy" else int(a.device.index)


def device_for(name: str, a, lib: str, device: Optional[int]) -> int:
    """The GPU the call runs on: the array's; `device`, where given, must name the same one."""
    d = _device(a, lib)
    if device is not None and int(device) != d:
        raise ValueError(f"{name} is on GPU {d}, but device={device} was asked for: a GPU array is computed on its "
                         "own GPU (leave device out, or move the array there)")
    return d


def _numpy_dtype(a, lib: str) -> np.dtype:
    if lib == "cupy":
        return np.dtype(a.dtype)
    name = str(a.dtype).replace("torch.", "")
    return np.dtype({"bool": "bool", "complex64": "complex64", "complex128": "complex128"}.get(name, name))


def check(name: str, a, dtypes: tuple, lib: str, device: int, min_ndim: int = 1):
    """`a` itself when it is a C-contiguous GPU array of `lib` on `device` with one of `dtypes`;
    else the TypeError (library, dtype) or ValueError (device, layout, dimensions) naming it."""
    got = library(a, name)
    if got != lib:
        what = "a NumPy (host) array" if got is None else f"a {got} array"
        raise TypeError(f"{name}: expected a {lib} array on GPU {device} like the call's first array, got {what}; "
                        "all arrays of a call live in one library on one GPU (no copy is made between them)")
    if _device(a, lib) != device:
        raise ValueError(f"{name}: the array is on GPU {_device(a, lib)}, the call's on GPU {device}")
    dt = _numpy_dtype(a, lib)
    if dt.type not in dtypes:
        names = " or ".join(d.__name__ for d in dtypes)
        raise TypeError(f"{name}: dtype {dt} is not {names}; convert explicitly ({name}.astype(...), a copy on the "
                        "GPU) if that is meant")
    contiguous = a.flags.c_contiguous if lib == "cupy" else a.is_contiguous()
    if not contiguous:
        raise ValueError(f"{name}: the array is not C-contiguous; the core reads it in place, so pass a contiguous "
                         f"copy ({'cupy.ascontiguousarray' if lib == 'cupy' else '.contiguous()'}) if that is meant")
    if lib == "torch" and a.requires_grad:
        raise ValueError(f"{name}: the tensor requires grad; the cores are not differentiable: pass {name}.detach()")
    if a.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimensions, got shape {tuple(a.shape)}")
    return a


def empty(name: str, out, shape: tuple, dtype, lib: str, device: int):
    """A new C-order array of `lib` on `device`, or `out` when it is one of that shape and dtype."""
    if out is not None:
        out = check(name, out, (np.dtype(dtype).type,), lib, device, min_ndim=0)
        if tuple(out.shape) != tuple(shape):
            raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(out.shape)}")
        return out
    if lib == "cupy":
        import cupy
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=dtype)
    import torch
    return torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name), device=f"cuda:{device}")


def stream(lib: str, device: int) -> int:
    """The library's current stream on `device` as a cudaStream_t (0: the legacy default): the
    core waits for the work queued there (what wrote the inputs) before it reads them."""
    if lib == "cupy":
        import cupy
        with cupy.cuda.Device(device):
            return int(cupy.cuda.get_current_stream().ptr)
    import torch
    return int(torch.cuda.current_stream(device).cuda_stream)


def as_floats(a, lib: str):
    """The real view of a complex GPU array (interleaved re, im), as NumPy's .view(float)."""
    if lib == "cupy":
        import cupy
        return a.view(cupy.float32 if a.dtype == cupy.complex64 else cupy.float64)
    import torch
    return torch.view_as_real(a)


def as_bytes(a, lib: str):
    """The uint8 view of a bool GPU array (one byte 0/1 per item)."""
    if lib == "cupy":
        import cupy
        return a.view(cupy.uint8)
    import torch
    return a.view(torch.uint8)


def refuse(name: str, a, what: str) -> None:
    """A TypeError naming `name` where `a` is a GPU array and `what` takes host arrays only."""
    lib = library(a, name)
    if lib is not None:
        raise TypeError(f"{name}: {what} takes host (NumPy) arrays, not a {lib} array on the GPU; copy it to the host "
                        f"explicitly ({name}.get() for CuPy, {name}.cpu().numpy() for PyTorch) if that is meant")


def check_backend(name: str, a, lib: str, backend: str, gpus: int) -> None:
    """A GPU array runs on the cuda backend of its own GPU: "auto" and "cuda" do; a CPU backend
    would need a copy to the host, and several GPUs a copy between them: ValueError."""
    if backend not in ("auto", "cuda"):
        raise ValueError(f"{name} is a {lib} array on the GPU, but backend={backend!r} runs on the CPU: pass "
                         f"backend='cuda' (or 'auto'), or copy {name} to the host explicitly if that is meant")
    if int(gpus) > 1:
        raise ValueError(f"{name} is a {lib} array on one GPU: gpus={gpus} would spread it over several (a copy "
                         "each); leave gpus out (or 1), or pass a NumPy array to spread over several GPUs")
