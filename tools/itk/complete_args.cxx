#include "complete_args.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace tk {

bool parse_complete_shared(const char *prog, const char *command, int argc, char **argv, int *i, CompleteShared &s)
{
    const char *arg = argv[*i], *v = nullptr;
    if (tk_cli_is(arg, "--mask")) {
        if (!(v = tk_cli_value(prog, argc, argv, i, "--mask"))) return false;
        s.mask = v;
    } else if (tk_cli_is(arg, "--seed")) {
        if (!(v = tk_cli_value(prog, argc, argv, i, "--seed"))) return false;
        char *end = nullptr;
        errno = 0;
        const unsigned long long seed = std::strtoull(v, &end, 10);
        if (!*v || *end || *v == '-' || errno) {
            tk_cli_error(prog, "--seed expects a non-negative integer, got '%s'; give a whole number >= 0", v);
            return false;
        }
        s.seed = seed;
    } else if (tk_cli_is(arg, "--backend")) {
        if (!(v = tk_cli_value(prog, argc, argv, i, "--backend")) || !tk_cli_parse_backend(prog, v, 1, &s.backend))
            return false;
    } else if (!std::strcmp(arg, "--keep-observed")) {
        s.keep_observed = true;
    } else if (!std::strcmp(arg, "--quiet") || !std::strcmp(arg, "-q")) {
        s.quiet = true;
    } else if (arg[0] == '-' && arg[1] != '\0') {
        tk_cli_error(prog, "unknown option '%s' for complete; see %s --help for the options", arg, command);
        return false;
    } else if ((s.operands == 0 && std::strcmp(arg, "complete")) || s.operands >= 3) {
        tk_cli_error(prog, "unexpected argument '%s'; give IN_IMAGE and OUT_IMAGE once (see %s --help)", arg, command);
        return false;
    } else {
        if (s.operands == 1) s.input = arg;
        if (s.operands == 2) s.output = arg;
        ++s.operands;
    }
    return true;
}

bool complete_operands_given(const char *prog, const char *command, const CompleteShared &s)
{
    if (s.operands == 3) return true;
    tk_cli_error(prog, "complete needs IN_IMAGE and OUT_IMAGE; give both (see %s --help)", command);
    return false;
}

}  // namespace tk
