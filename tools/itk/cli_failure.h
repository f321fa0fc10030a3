// The CLI modules' last word on a failure thrown from their work: one message naming the
// input, in the tools' style, for each kind of exception that reaches main.
#pragma once

#include <string>

namespace tk {

// Call only inside a catch (...) block: reports the exception in flight for `prog` reading
// `input` and returns the exit code.  `out_of_memory` is the tool's own advice for
// std::bad_alloc, whose what() says nothing of which work or what to do.
int report_failure(const char *prog, const std::string &input, const std::string &out_of_memory);

// That advice for the tools whose memory goes to one volume and its results (a --mask
// shrinks the work where the tool has one: with_mask_hint).
std::string volume_out_of_memory(bool with_mask_hint);

}  // namespace tk
