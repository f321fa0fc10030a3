// Fuzz target: tk-track's --seeds-file parser (tools/itk/track_seeds_file.cxx,
// tk::read_seed_points): plain "x y z" lines or MRtrix3 tckgen -output_seeds' file.
//
// Input: the file, as it is.
//
// Asserts: a refusal is a std::runtime_error whose message starts with the file's path (a
// line's refusal "PATH:LINE: ...") and ends with what to do ("; give ..." / "; use ..."
// / "; check ..."); an accepted file gives 3 coordinates for each of its data lines (the lines
// that hold anything but blanks and do not start with '#', counted here by this target's own
// reading of the bytes), at least one point, every coordinate finite, and holds no NUL byte
// (a line cut at a NUL would otherwise be read as its first part).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "track_seeds_file.h"

namespace {

// The data lines of the bytes as the file format defines them: '\n' ends a line; blanks are
// ' ', '\t' and '\r'; a line whose first other byte is '#' is a comment.
size_t data_lines(const uint8_t *data, size_t size)
{
    size_t lines = 0;
    bool start = true, counted = false;
    for (size_t i = 0; i < size; ++i) {
        const uint8_t c = data[i];
        if (c == '\n') {
            start = true, counted = false;
            continue;
        }
        if (!start || c == ' ' || c == '\t' || c == '\r') continue;
        start = false;  // the first byte that is no blank decides the line
        if (c != '#' && !counted) ++lines, counted = true;
    }
    return lines;
}

bool ends_with_advice(const std::string &message)
{
    const size_t at = message.rfind("; ");
    if (at == std::string::npos) return false;
    for (const char *verb : {"give ", "use ", "check "})
        if (message.compare(at + 2, std::strlen(verb), verb) == 0) return true;
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *p = tk_fuzz_scratch_path("seeds.txt");
    const std::string path(p);
    std::free(p);
    tk_fuzz_write_file(path.c_str(), data, size);
    std::vector<double> points;
    try {
        points = tk::read_seed_points(path);
    } catch (const std::runtime_error &e) {
        const std::string why = e.what();
        TK_FUZZ_CHECK(why.compare(0, path.size(), path) == 0, "the message does not name the file: %s", e.what());
        TK_FUZZ_CHECK(ends_with_advice(why), "the message does not end with what to do: %s", e.what());
        return 0;
    }
    TK_FUZZ_CHECK(std::memchr(data, 0, size) == nullptr, "accepted a file holding a NUL byte");
    const size_t lines = data_lines(data, size);
    TK_FUZZ_CHECK(!points.empty() && points.size() == 3 * lines, "%zu coordinates from %zu data lines", points.size(),
                  lines);
    for (size_t i = 0; i < points.size(); ++i)
        TK_FUZZ_CHECK(std::isfinite(points[i]), "coordinate %zu is %g", i, points[i]);
    return 0;
}
