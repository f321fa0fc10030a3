/** TensorKernels: status codes and the last error message, shared by every core. \file
 * \ingroup tk_group_common */
#ifndef TK_STATUS_H
#define TK_STATUS_H

#include "tk_export.h"

TK_API_BEGIN

typedef enum tk_status {
    TK_OK = 0,
    TK_ERR_ARGUMENT = 1,    /**< an argument is out of range or inconsistent */
    TK_ERR_MEMORY = 2,      /**< an allocation failed or a size overflows */
    TK_ERR_IO = 3,          /**< a file could not be opened, read or written */
    TK_ERR_FORMAT = 4,      /**< a file's contents are malformed */
    TK_ERR_DATA = 5,        /**< input values are invalid (NaN, not symmetric, ...) */
    TK_ERR_UNSUPPORTED = 6, /**< a valid request this build or implementation cannot serve */
    TK_ERR_CUDA = 7         /**< the CUDA runtime failed or no device is present */
} tk_status;

/** The message of the last failing call in this thread ("" if none). */
const char *tk_last_error(void);

/** Record a message for tk_last_error() and return code; used by every core. */
tk_status tk_set_error(tk_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void tk_clear_error(void);

/** A short name of a status code ("argument", "memory", ...). */
const char *tk_status_name(tk_status code);

TK_API_END
#endif
