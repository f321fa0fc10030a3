// A command line a tool must refuse, and the checks every refusal gets: the tool ends by
// itself (no signal) with the exit code given and a message that says what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tk_cli_runner.h"

namespace tk_test {

// The arguments of a refused run, words its message must hold, and its exit code (1: bad
// data or files, 2: a bad command line).
struct Refusal {
    std::string args, message;
    int code;
};

// Runs command (in scratch) and checks the refusal; the caller checks what the tool must
// not have left behind, with the run returned.
inline RunResult expect_refused(const std::string &command, const std::string &message, int code,
                                const std::string &scratch)
{
    RunResult r = run_tool(command, scratch);
    EXPECT_EQ(r.signal, 0) << command;
    EXPECT_EQ(r.exit_code, code) << command << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << command << "\nstderr: " << r.err;
    return r;
}

}  // namespace tk_test
