// What every binding file shares: the array types the C API is called with, the core's errors
// as Python exceptions, and the registration function of each core.  The bindings hold no
// logic of their own beyond argument checks: the Python layer (tensorkernels/*.py) checks
// dtypes, layouts and shapes with messages that name the argument; the checks here are the
// safety net that keeps a wrong-sized buffer from ever reaching a core.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>

#include "tk_status.h"
#include "tk_types.h"

namespace tkpy {
namespace nb = nanobind;

// C-contiguous arrays in host memory, never converted: an argument of another dtype or layout
// does not match (nb::arg(...).noconvert()), so no silent copy is made.
template <typename T> using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;
template <typename T> using Out = nb::ndarray<T, nb::c_contig, nb::device::cpu>;
// Their twins in CUDA device memory (CuPy arrays, PyTorch CUDA tensors, through DLPack): handed
// to the cores' device-array entry points (tk_*_plan_execute_device), which never copy them to
// the host.  The caller's stream comes as an integer (a cudaStream_t; 0: the legacy default).
template <typename T> using DIn = nb::ndarray<const T, nb::c_contig, nb::device::cuda>;
template <typename T> using DOut = nb::ndarray<T, nb::c_contig, nb::device::cuda>;
inline void *cuda_stream(std::uintptr_t stream) { return reinterpret_cast<void *>(stream); }

// Raises the Python exception for a failed core call: ValueError for bad arguments or data,
// MemoryError, RuntimeError otherwise; the message is the core's (tk_last_error) after `what`.
[[noreturn]] void raise_status(tk_status status, const char *what);
inline void check(tk_status status, const char *what) {
    if (status != TK_OK) raise_status(status, what);
}

// ValueError "what: expected N elements, got M" when a buffer's size is not what the core
// will read or write.
void check_size(const char *what, std::size_t got, std::size_t expected);

// Long calls run in chunks of the core's plan, the GIL released during each, and Python's
// signal handlers run between them, so Ctrl-C (KeyboardInterrupt) stops a call within a chunk's
// time.  Every item (voxel, matrix, tensor) is computed alone, so the results are those of one
// call, bit for bit.  `run(start, count)` executes one chunk and returns its status.
template <typename Run> void in_chunks(const char *what, std::size_t total, std::size_t chunk, Run run) {
    for (std::size_t start = 0; start < total; start += chunk) {
        const std::size_t count = total - start < chunk ? total - start : chunk;
        tk_status st;
        {
            nb::gil_scoped_release unlocked;  // the arrays stay alive: the caller's frame holds them
            st = run(start, count);
        }
        check(st, what);
        if (PyErr_CheckSignals() != 0) throw nb::python_error();  // KeyboardInterrupt, or a handler's error
    }
}

void bind_sshopm(nb::module_ &m);
void bind_fibers(nb::module_ &m);
void bind_eig(nb::module_ &m);
void bind_tucker(nb::module_ &m);
void bind_pltf(nb::module_ &m);
void bind_tracking(nb::module_ &m);
}  // namespace tkpy
