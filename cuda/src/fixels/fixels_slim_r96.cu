/* The slim pull kernel at 96 registers a thread (21 warps an SM, more of the climbs spilled;
 * TK_FIXELS_SLIM_REGS=96). */
#define TK_FX_SLIM_REGISTERS 96
#define FX_SLIM_ENTRY fx_slim_r96
#include "fixels_slim.cuh"
