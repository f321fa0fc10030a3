// tensorkernels._tensorkernels: the compiled half of the package (the Python half,
// tensorkernels/*.py, is the API users call).
#include "bindings.h"

// std::string results (cuda_usable's reason) need nanobind's caster: without it the tuple
// is built at run time only in a CUDA build, and fails there with std::bad_cast.
#include <nanobind/stl/string.h>

#include <string>

#include "tk_bench_hooks.h"
#include "tk_device.h"

namespace nb = nanobind;

NB_MODULE(_tensorkernels, m) {
    m.doc() = "TensorKernels' C API for the tensorkernels package (private: use tensorkernels.*)";
    m.def("core_version", [] { return tk_version(); }, "The C core's version, MAJOR.MINOR.PATCH.");
    m.def("has_cuda", [] { return tk_has_cuda() != 0; }, "Whether the core was built with its CUDA backends.");
    m.def(
        "cuda_usable",
        [](int device) {
            char reason[256] = "";
            int ok = tk_cuda_device_usable(device, reason, sizeof reason);
            return nb::make_tuple(ok != 0, std::string(reason));
        },
        nb::arg("device") = 0, "(usable, reason): whether CUDA device `device` can run the cores.");
    m.def("cuda_device_count", [] { return tk_cuda_device_count(); }, "CUDA devices found (0 without CUDA).");
    // The tests' probe (tk_bench_hooks.h): bytes of callers' arrays the per-voxel cores copied
    // between host and device so far; a call on CuPy/PyTorch arrays must leave it unchanged.
    m.def("array_transfer_bytes", [] { return tk_test_array_transfer_bytes(); },
          "Bytes of callers' arrays the per-voxel cores copied between host and device (a test probe).");
    tkpy::bind_sshopm(m);
    tkpy::bind_fibers(m);
    tkpy::bind_eig(m);
    tkpy::bind_tucker(m);
    tkpy::bind_pltf(m);
    tkpy::bind_tracking(m);
}
