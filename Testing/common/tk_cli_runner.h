// Run a command-line tool, capturing its exit code, stdout and stderr; the scratch folders,
// whole-file reads and writes and file counts the command-line and file-format tests share.
#pragma once

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace tk_test {

struct RunResult {
    int exit_code = -1;  // -1 when the tool died from a signal
    int signal = 0;
    std::string out, err;
};

inline std::string slurp(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Replaces path with exactly these bytes (NUL bytes too).
inline void write_file(const std::string &path, const std::string &bytes)
{
    std::ofstream(path, std::ios::binary) << bytes;
}

inline RunResult run_tool(const std::string &command, const std::string &scratch)
{
    RunResult r;
    std::string out = scratch + "/stdout.txt", err = scratch + "/stderr.txt";
    int status = std::system((command + " > '" + out + "' 2> '" + err + "' < /dev/null").c_str());
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

inline bool exists(const std::string &path)
{
    struct stat st;
    return stat(path.c_str(), &st) == 0;
}

inline std::string make_temp_dir(const char *prefix)
{
    std::string tmpl = std::string("/tmp/") + prefix + "_XXXXXX";
    return mkdtemp(&tmpl[0]);
}

// A scratch folder for one test; dir / "name" is a path in it.
struct TempDir {
    std::string path;
    explicit TempDir(const char *prefix) : path(make_temp_dir(prefix)) {}
    std::string operator/(const std::string &name) const { return path + "/" + name; }
};

// The entries of a folder, hidden ones left out (0 for a folder that is not there).
inline size_t count_files(const std::string &dir)
{
    size_t n = 0;
    DIR *d = opendir(dir.c_str());
    if (!d) return 0;
    while (dirent *e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

}  // namespace tk_test
