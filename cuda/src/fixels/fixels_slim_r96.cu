/* The slim pull kernel (and its split form) at 96 registers a thread: an A/B unit for
 * TK_FIXELS_SLIM_REGS=96 (fixels_slim.h). */
#define TK_FX_SLIM_REGISTERS 96
#define FX_SLIM_ENTRY fx_slim_r96
#include "fixels_slim.cuh"
