// The core's status codes as Python exceptions, carrying the core's own message.
#include <string>

#include "bindings.h"

namespace tkpy {

void raise_status(tk_status status, const char *what) {
    std::string msg = std::string(what) + ": " + tk_last_error();
    switch (status) {
    case TK_ERR_ARGUMENT:
    case TK_ERR_DATA:
    case TK_ERR_FORMAT:  // a malformed file: bad data, named with its line (tucker's .tns, model files)
        throw nb::value_error(msg.c_str());
    case TK_ERR_IO:  // a file that cannot be opened, read or written
        PyErr_SetString(PyExc_OSError, msg.c_str());
        throw nb::python_error();
    case TK_ERR_MEMORY:
        // std::bad_alloc carries no message; MemoryError with one says what failed to fit.
        PyErr_SetString(PyExc_MemoryError, msg.c_str());
        throw nb::python_error();
    default:
        throw std::runtime_error(msg + " (" + tk_status_name(status) + ")");
    }
}

void check_size(const char *what, std::size_t got, std::size_t expected) {
    if (got != expected)
        throw nb::value_error(
            (std::string(what) + ": expected " + std::to_string(expected) + " elements, got " + std::to_string(got))
                .c_str());
}

}  // namespace tkpy
