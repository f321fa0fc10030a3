/* The slim pull kernel at 112 registers a thread (18 warps an SM; TK_FIXELS_SLIM_REGS=112). */
#define TK_FX_SLIM_REGISTERS 112
#define FX_SLIM_ENTRY fx_slim_r112
#include "fixels_slim.cuh"
