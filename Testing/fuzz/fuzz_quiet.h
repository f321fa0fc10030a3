/* The parsers under test print their usage errors to stderr; a fuzz run would print
 * millions.  These point the stdio stream at /dev/null around the call (glibc lets
 * stderr be assigned) while leaving file descriptor 2, where the sanitizers and
 * TK_FUZZ_CHECK report, alone. */
#ifndef TK_FUZZ_QUIET_H
#define TK_FUZZ_QUIET_H

#include <stdio.h>
#include <stdlib.h>

static FILE *tk_fuzz_saved_stderr;

static inline void tk_fuzz_quiet_begin(void)
{
    static FILE *devnull;
    if (getenv("TK_FUZZ_VERBOSE")) return;
    if (!devnull && !(devnull = fopen("/dev/null", "w"))) abort();
    tk_fuzz_saved_stderr = stderr;
    stderr = devnull;
}

static inline void tk_fuzz_quiet_end(void)
{
    if (tk_fuzz_saved_stderr) stderr = tk_fuzz_saved_stderr;
    tk_fuzz_saved_stderr = NULL;
}

#endif
