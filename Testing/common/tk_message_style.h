/* The image readers' message style (issue 21): "FILE: what is wrong; what to do".  A
 * message follows it when it starts with the file and its last "; " clause starts with one
 * of the verbs the readers advise with (re-save it, convert it, copy it again, ...).
 * Header-only C, for the unit tests and the fuzz targets alike. */
#ifndef TK_MESSAGE_STYLE_H
#define TK_MESSAGE_STYLE_H

#include <string.h>

static inline int tk_message_advises(const char *msg)
{
    static const char *const verbs[] = {"re-save ", "convert ", "rename ", "check ", "copy ", "give ", "install ",
                                        "fix ", "remove ", "extract ", "free ", "read ", "put ", "report ", "correct ",
                                        "end ", "join ", "resample ", NULL};
    const char *last = NULL;
    for (const char *p = strstr(msg, "; "); p; p = strstr(p + 2, "; ")) last = p + 2;
    if (!last) return 0;
    for (int k = 0; verbs[k]; ++k)
        if (!strncmp(last, verbs[k], strlen(verbs[k]))) return 1;
    return 0;
}

/* starts with path and ": " */
static inline int tk_message_names(const char *msg, const char *path)
{
    const size_t n = strlen(path);
    return !strncmp(msg, path, n) && msg[n] == ':';
}

#endif
