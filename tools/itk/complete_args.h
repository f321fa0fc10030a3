// The image-completion commands (tk-tucker complete, tk-pltf complete) on the C++ side:
// their command line parsed by the command's table (complete_options.h) into the values
// the tools use.
#pragma once

#include <cstdint>
#include <string>

#include "cli.h"
#include "complete_options.h"
#include "sh_image_io.h"

namespace tk {

struct CompleteShared {
    std::string input, output, mask;
    uint64_t seed = 0;
    tk_backend backend = TK_BACKEND_AUTO;
    int device = 0;
    bool keep_observed = false, quiet = false;
    tk_standard_values standard{};
};

// The whole command line (options and the operands "complete IN OUT" in any order, as
// Slicer writes them) into values (the command's struct, defaults set), whose shared part
// is common; then the shared part into s.  False after printing the error.
bool parse_complete(const tk_command *cmd, int argc, char **argv, void *values, const tk_complete_values &common,
                    CompleteShared &s);

// OUT_IMAGE, before any work: a path it may write (tk_cli_check_output), registered in out
// (an output set: no file of an input, a detached header's data file included, a temporary
// removed on a signal, renamed at the end), and refused if it exists without --force.
// 0, or the exit code after a message.
int prepare_complete_output(const char *prog, const CompleteShared &a, VolumeOutput &out);

}  // namespace tk
