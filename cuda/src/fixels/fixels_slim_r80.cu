/* The slim pull kernel (and its split form) at 80 registers a thread: the split form's
 * segmentation kernel runs from this unit (fixels_slim.h). */
#define TK_FX_SLIM_REGISTERS 80
#define FX_SLIM_ENTRY fx_slim_r80
#include "fixels_slim.cuh"
