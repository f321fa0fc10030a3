/* Whether a core's AVX2 copy (cmake's tk_core_avx2_copy: the same operations as the portable
 * text, so the same bits) runs: the CPU has AVX2 and the core's A/B switch, the environment
 * variable off_env (TK_TRACK_NO_AVX2, TK_TUCKER_NO_AVX2), is unset or 0 (the portable text, for
 * A/B runs on one binary).  x86-64 with GCC or Clang only: where tk_core_avx2_copy compiles the
 * copy. */
#ifndef TK_COMMON_AVX2_COPY_H
#define TK_COMMON_AVX2_COPY_H

#include <stdlib.h>
#include <string.h>

static inline int tk_avx2_copy_enabled(const char *off_env)
{
#if defined(__x86_64__) || defined(__i386__)
    const char *off = getenv(off_env);
    if (off && *off && strcmp(off, "0") != 0) return 0;
    return __builtin_cpu_supports("avx2");
#else
    (void)off_env;
    return 0;
#endif
}

#endif
