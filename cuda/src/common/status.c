/* Thread-local last-error message, so that the C API can report why it failed. */
#include "tk_status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char tk_error_message[1024];

const char *tk_last_error(void) { return tk_error_message; }

void tk_clear_error(void) { tk_error_message[0] = '\0'; }

tk_status tk_set_error(tk_status code, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(tk_error_message, sizeof tk_error_message, fmt, args);
    va_end(args);
    return code;
}

const char *tk_status_name(tk_status code)
{
    switch (code) {
    case TK_OK: return "ok";
    case TK_ERR_ARGUMENT: return "invalid argument";
    case TK_ERR_MEMORY: return "out of memory";
    case TK_ERR_IO: return "I/O error";
    case TK_ERR_FORMAT: return "malformed file";
    case TK_ERR_DATA: return "invalid data";
    case TK_ERR_UNSUPPORTED: return "unsupported";
    case TK_ERR_CUDA: return "CUDA error";
    }
    return "unknown status";
}
