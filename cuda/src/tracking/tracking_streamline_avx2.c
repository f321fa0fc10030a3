/* tk_tracking_streamline (tracking_streamline.h) compiled a second time for AVX2, which
 * tracking_execute.c calls where the CPU has it (TK_TRACK_NO_AVX2=1 keeps the baseline build
 * for A/B runs).  Why a translation unit and not target_clones: the step's hot functions
 * (the interpolation, the SH-to-tensor product, the climb's rows, iFOD1's four-lane
 * polynomial) are static inline headers that GCC inlines or not as it likes; compiled here
 * with -mavx2 every one of them is AVX2 code, where a clone would take AVX2 only into what
 * is inlined into it.
 *
 * The same streamlines to the bit: this file is built with -mavx2 -mno-fma (CMakeLists.txt),
 * so no a * b + c is contracted into a fused multiply-add (the project builds with
 * -ffp-contract=fast, harmless only where the target has no FMA), and without -ffast-math no
 * sum is reassociated: the wider vectors only run the same IEEE operations on more
 * independent values at once.  sin, cos, sqrt and division round as the baseline build's
 * (the C library's functions; sqrt and division are correctly rounded in every ISA). */
#include "tracking_internal.h"
#include "tracking_streamline.h"

#if !defined(__AVX2__) || defined(__FMA__)
#error "tracking_streamline_avx2.c must be compiled with -mavx2 -mno-fma"
#endif

int tk_tracking_streamline_avx2(const tk_tracking_field *f, const double *seed, tk_philox *rng, tk_tracking_work *w,
                                size_t *n)
{
    return tk_tracking_streamline(f, seed, rng, w, n);
}
