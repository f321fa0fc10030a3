// Writing a file whole or not at all: a temporary beside the target, checked, then renamed.
// Shared by the .vtp writer and the offscreen pictures; not installed.
#pragma once

#include <string>

namespace tk {

// A file name beside path for writing it whole first (".tk-tmp-PID-name").
std::string TemporaryBeside(const std::string &path);
// Does the file exist and hold something?  VTK writers report some failures only on stderr.
bool WrittenFile(const std::string &path);
// Renames tmp to path; on failure removes tmp and throws std::runtime_error naming path.
void RenameIntoPlace(const std::string &tmp, const std::string &path);

}  // namespace tk
