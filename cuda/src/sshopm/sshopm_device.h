/* SS-HOPM's per-start math (sshopm_math.h) in both precisions, the CPU or the CUDA variant of
 * the precision macros as the compiler is (common/precision_<p>.h).  Included once per file. */
#include "common/precision_float.h"
#include "sshopm_math.h"
#include "common/precision_end.h"
#include "common/precision_double.h"
#include "sshopm_math.h"
#include "common/precision_end.h"
