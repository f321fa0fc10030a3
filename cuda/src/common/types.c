/* The shared types' helpers (tk_types.h); tk_has_cuda is in device_cuda.cu / device_nocuda.c. */
#include "tk_types.h"

const char *tk_backend_name(tk_backend backend)
{
    switch (backend) {
    case TK_BACKEND_AUTO: return "auto";
    case TK_BACKEND_CPU: return "cpu";
    case TK_BACKEND_OMP: return "omp";
    case TK_BACKEND_CUDA: return "cuda";
    }
    return "?";
}

const char *tk_version(void) { return TK_VERSION_STRING; }
