/** TensorKernels: the types every core shares (backend, precision, timing), the build's
 * version and whether it has CUDA.  One declaration of each, so that a tool, a filter or a
 * binding names a backend the same way for every core. \file
 * \ingroup tk_group_common */
#ifndef TK_TYPES_H
#define TK_TYPES_H

#include "tk_export.h"

#include "tk_version.h" /* TK_VERSION_MAJOR, _MINOR, _PATCH, TK_VERSION_STRING: made by CMake */

TK_API_BEGIN

/** Floating-point precision of a core's data and arithmetic. */
typedef enum { TK_PRECISION_SINGLE = 0, TK_PRECISION_DOUBLE = 1 } tk_precision;

/** Where a core runs.  TK_BACKEND_AUTO is a request, not a backend: tools and ITK filters
 * resolve it (CUDA where a usable GPU is found, else the CPU with threads) before calling a
 * core; a core given TK_BACKEND_AUTO refuses it (TK_ERR_INVALID_ARGUMENT). */
typedef enum {
    TK_BACKEND_AUTO = -1,
    TK_BACKEND_CPU = 0,  /**< one thread */
    TK_BACKEND_OMP = 1,  /**< OpenMP threads */
    TK_BACKEND_CUDA = 2  /**< an NVIDIA GPU */
} tk_backend;

/** Where the time of one call went, in milliseconds; what a core does not measure is 0. */
typedef struct tk_timing {
    double total_ms;  /**< the whole call, host to host */
    double kernel_ms; /**< the computation alone (CUDA events on the GPU; on the CPU the call
                           without its set-up) */
    double setup_ms;  /**< one-time set-up inside the call: storage built, buffers uploaded */
} tk_timing;

/** "auto", "cpu", "omp" or "cuda" ("?" for a value outside the enum). */
const char *tk_backend_name(tk_backend backend);

/** 1 if this library was built with its CUDA backends (a GPU may still be absent at run
 * time: tk_cuda_device_usable in tk_device.h says whether one is usable). */
int tk_has_cuda(void);

/** The library's version, "MAJOR.MINOR.PATCH": that of the library linked, where
 * TK_VERSION_STRING is that of the headers compiled against. */
const char *tk_version(void);

TK_API_END
#endif
