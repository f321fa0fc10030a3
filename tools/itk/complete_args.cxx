#include "complete_args.h"

#include <cstring>

namespace tk {

bool parse_complete(const tk_command *cmd, int argc, char **argv, void *values, const tk_complete_values &common,
                    CompleteShared &s)
{
    tk_parsed parsed;
    if (!tk_cli_parse_options(cmd, argc, argv, 1, values, &parsed)) return false;
    if (parsed.num_positional > 0 && std::strcmp(parsed.positional[0], "complete")) {
        tk_cli_error(cmd->prog, "unexpected argument '%s'; %s (see %s complete --help)", parsed.positional[0],
                     cmd->positional_hint, cmd->prog);
        return false;
    }
    if (parsed.num_positional > 3) {
        tk_cli_error(cmd->prog, "unexpected argument '%s'; %s (see %s complete --help)", parsed.positional[3],
                     cmd->positional_hint, cmd->prog);
        return false;
    }
    if (parsed.num_positional != 3) {
        tk_cli_error(cmd->prog, "complete needs IN_IMAGE and OUT_IMAGE; give both (see %s complete --help)", cmd->prog);
        return false;
    }
    s.input = parsed.positional[1];
    s.output = parsed.positional[2];
    s.mask = common.mask ? common.mask : "";
    s.seed = common.seed;
    s.keep_observed = common.keep_observed != 0;
    s.standard = common.std;
    s.backend = common.std.backend;
    s.device = common.std.device;
    s.quiet = common.std.quiet != 0;
    return true;
}

int prepare_complete_output(const char *prog, const CompleteShared &a, VolumeOutput &out)
{
    const char *inputs[] = {a.input.c_str(), a.mask.empty() ? nullptr : a.mask.c_str(), nullptr};
    if (int bad = tk_cli_check_output(prog, a.output.c_str(), 0, inputs)) return bad;
    if (int bad = register_volume_output(prog, {{"IN_IMAGE", a.input}, {"--mask", a.mask}}, "OUT_IMAGE", a.output, out))
        return bad;
    // after the output set's checks (a file of an input says so)
    return tk_cli_refuse_existing(prog, &a.standard, a.output.c_str(), 0);
}

}  // namespace tk
