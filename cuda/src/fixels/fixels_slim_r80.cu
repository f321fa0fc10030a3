/* The slim pull kernel (and its split form) at 80 registers a thread: an A/B unit for
 * TK_FIXELS_SLIM_REGS=80 (fixels_slim.h). */
#define TK_FX_SLIM_REGISTERS 80
#define FX_SLIM_ENTRY fx_slim_r80
#include "fixels_slim.cuh"
