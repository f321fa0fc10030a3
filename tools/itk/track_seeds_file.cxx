// tk-track --seeds-file: see track_seeds_file.h for the two layouts.
#include "track_seeds_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <sys/stat.h>

namespace tk {

namespace {

// The numbers of one line; false at the first word that is no number.
bool numbers_of(const std::string &line, std::vector<double> &out, std::string &bad)
{
    out.clear();
    const char *s = line.c_str();
    while (*s) {
        while (*s == ',' || *s == ' ' || *s == '\t' || *s == '\r') ++s;
        if (!*s) break;
        char *end;
        errno = 0;
        const double v = std::strtod(s, &end);
        if (end == s || (*end && !std::strchr(", \t\r", *end)) || !std::isfinite(v)) {
            const size_t n = std::strcspn(s, ", \t\r");
            bad.assign(s, n);
            return false;
        }
        out.push_back(v);
        s = end;
    }
    return true;
}

}  // namespace

std::vector<double> read_seed_points(const std::string &path)
{
    // a folder opens as a stream that reads nothing: say what it is, not "no points"
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw std::runtime_error(path + ": is a directory, not a seeds file; give a text file of points");
    std::ifstream f(path);
    if (!f)
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno) +
                                 "; check the name and that it is readable");
    std::vector<double> points, row;
    std::string line, bad;
    size_t columns = 0, number = 0, comments = 0;
    while (std::getline(f, line)) {
        ++number;
        const std::string where = path + ":" + std::to_string(number) + ": ";
        if (line.find('\0') != std::string::npos)  // c_str() would end the line there: junk after it unseen
            throw std::runtime_error(where + "a NUL byte: not a text file; give 'x y z' (world RAS mm) a line, or "
                                     "tckgen -output_seeds' rows");
        const size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos) continue;
        if (line[first] == '#') {
            ++comments;
            continue;
        }
        if (!numbers_of(line, row, bad))
            throw std::runtime_error(where + "'" + bad + "' is no finite number; give 'x y z' (world RAS mm) a line, "
                                     "or tckgen -output_seeds' rows");
        if (row.size() != 3 && row.size() != 5)
            throw std::runtime_error(where + std::to_string(row.size()) +
                                     " numbers; give 'x y z' (world RAS mm) a line, or tckgen -output_seeds' 5 "
                                     "columns 'index,seed_index,x,y,z,'");
        if (columns && row.size() != columns)
            throw std::runtime_error(where + std::to_string(row.size()) + " numbers where the lines before have " +
                                     std::to_string(columns) + "; use one layout for the whole file");
        columns = row.size();
        points.insert(points.end(), row.end() - 3, row.end());  // x y z are the last three either way
    }
    if (f.bad())
        throw std::runtime_error(path + ": cannot read: " + std::strerror(errno) + "; check that it is readable");
    if (points.empty() && comments)  // tckgen -output_seeds of a run that kept no streamline writes its header only
        throw std::runtime_error(path + ": only comment lines ('#'), no seed points (a tckgen -output_seeds file of a "
                                 "run that kept no streamline holds its header only); give a file with points");
    if (points.empty())
        throw std::runtime_error(path + ": no seed points; give 'x y z' (world RAS mm) a line, or tckgen "
                                 "-output_seeds' file");
    return points;
}

}  // namespace tk
