/* The slim pull kernel at 128 registers a thread (16 warps an SM; the default). */
#define TK_FX_SLIM_REGISTERS 128
#define FX_SLIM_ENTRY fx_slim_r128
#include "fixels_slim.cuh"
