/* CPU backends of SS-HOPM: sequential (cpu) and OpenMP (omp), general and unrolled. */
#include "sshopm_internal.h"

#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/tk_hd.h"

/* Starts per SIMD batch of the fixed-shift unrolled kernels: two AVX vectors of float. */
#define TK_CPU_LANES 16
/* Clone the lane kernels for AVX2+FMA and pick at run time, so one portable binary
 * uses the wide vectors where the CPU has them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define TK_CPU_TARGETS __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TK_CPU_TARGETS
#endif
#ifdef _OPENMP
#define TK_SIMD _Pragma("omp simd")
#define TK_SIMD_ANY _Pragma("omp simd reduction(| : any)")
#else
#define TK_SIMD
#define TK_SIMD_ANY
#endif

size_t tk_sshopm_cpu_scratch(int dim)
{
    /* x, y, x_new, then the adaptive shift's 3 dim^2 + 2 dim */
    return (size_t)3 * (size_t)dim + (size_t)3 * (size_t)dim * (size_t)dim + (size_t)2 * (size_t)dim;
}

#define TK_SSHOPM_BODY "sshopm_cpu_body.h"
#include "sshopm_device.h"

tk_status tk_sshopm_solve_cpu(const tk_sshopm_options *o, const tk_sshopm_tables *tables, size_t num_tensors,
                              const void *packed, const void *starts, tk_sshopm_starts_result *out)
{
    if (o->precision == TK_PRECISION_DOUBLE)
        return cpu_solve_d(o, tables, num_tensors, (const double *)packed, (const double *)starts, out);
    return cpu_solve_f(o, tables, num_tensors, (const float *)packed, (const float *)starts, out);
}
