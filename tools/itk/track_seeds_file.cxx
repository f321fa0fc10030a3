// tk-track --seeds-file: see track_seeds_file.h for the two layouts.
#include "track_seeds_file.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

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
    std::ifstream f(path);
    if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    std::vector<double> points, row;
    std::string line, bad;
    size_t columns = 0, number = 0;
    while (std::getline(f, line)) {
        ++number;
        const size_t first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '#') continue;
        const std::string where = path + ":" + std::to_string(number) + ": ";
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
    if (f.bad()) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
    if (points.empty())
        throw std::runtime_error(path + ": no seed points; give 'x y z' (world RAS mm) a line, or tckgen "
                                 "-output_seeds' file");
    return points;
}

}  // namespace tk
