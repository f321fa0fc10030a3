// What the two image-completion commands (tk-tucker complete, tk-pltf complete) share on
// their command lines: the operands "complete IN OUT" and the options --mask, --seed,
// --backend, --keep-observed and --quiet.
#pragma once

#include <cstdint>
#include <string>

#include "cli.h"

namespace tk {

struct CompleteShared {
    std::string input, output, mask;
    uint64_t seed = 0;
    tk_backend backend = TK_BACKEND_AUTO;
    bool keep_observed = false, quiet = false;
    int operands = 0;  // of "complete", IN, OUT, how many were given
};

// argv[*i] (and its value, *i advanced past it): one of the shared options or an operand.
// Called after a command's own options, so anything else starting with '-' is unknown.
// `command` ("tk-tucker complete") names the help to see.  False after printing the error.
bool parse_complete_shared(const char *prog, const char *command, int argc, char **argv, int *i, CompleteShared &s);

// After the last argument: were IN and OUT given?  False after printing the error.
bool complete_operands_given(const char *prog, const char *command, const CompleteShared &s);

}  // namespace tk
