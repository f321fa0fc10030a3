// The output set (tk_output_set.h): outputs against inputs and each other by path and by
// inode, all-or-nothing commits, size checks, folder swaps that keep a user's files and
// follow no link, cleanup on SIGTERM/SIGINT (in a child process) and after kill -9.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tk_npy.h"
#include "tk_output_set.h"
#include "tk_status.h"

namespace {

std::string temp_dir()
{
    char tmpl[] = "/tmp/tk_outset_XXXXXX";
    return mkdtemp(tmpl);
}

void put(const std::string &path, const std::string &bytes)
{
    std::ofstream f(path, std::ios::binary);
    f << bytes;
}

std::string get(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

bool exists(const std::string &path)
{
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
}

// The names in dir, sorted ("." and ".." left out).
std::vector<std::string> names(const std::string &dir)
{
    std::vector<std::string> out;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *e = readdir(d))
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.push_back(e->d_name);
        closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Write bytes into output idx through the set's checked helpers.
void write_output(tk_outset *s, int idx, int companion, const std::string &bytes)
{
    int fd = tk_outset_open(s, idx, companion);
    ASSERT_GE(fd, 0) << tk_last_error();
    ASSERT_EQ(tk_write_all(fd, bytes.data(), bytes.size()), 0);
    ASSERT_EQ(tk_fsync_close(fd), 0);
}

struct Set {
    tk_outset *s = tk_outset_new(nullptr);  // quiet: messages through tk_last_error()
    ~Set() { tk_outset_free(s); }
};

TEST(OutputSet, CommitPutsEveryOutputInPlaceAndLeavesNoTemporary)
{
    const std::string d = temp_dir();
    put(d + "/b.txt", "old b");
    Set set;
    const int a = tk_outset_add(set.s, "--a", (d + "/a.txt").c_str(), nullptr);
    const int b = tk_outset_add(set.s, "--b", (d + "/b.txt").c_str(), nullptr);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    write_output(set.s, a, 0, "new a");
    write_output(set.s, b, 0, "new b");
    EXPECT_EQ(get(d + "/b.txt"), "old b");  // nothing in place before the commit
    EXPECT_FALSE(exists(d + "/a.txt"));
    ASSERT_EQ(tk_outset_commit(set.s), 0) << tk_last_error();
    EXPECT_EQ(get(d + "/a.txt"), "new a");
    EXPECT_EQ(get(d + "/b.txt"), "new b");
    EXPECT_EQ(names(d), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(OutputSet, AnOldFileIsRemovedOnCommitOnly)
{
    const std::string d = temp_dir();
    put(d + "/old4.npy", "from an earlier, larger set");
    {
        Set set;
        ASSERT_GE(tk_outset_remove_on_commit(set.s, (d + "/old4.npy").c_str()), 0);
        tk_outset_abort(set.s);
    }
    EXPECT_TRUE(exists(d + "/old4.npy"));
    Set set;
    ASSERT_GE(tk_outset_remove_on_commit(set.s, (d + "/old4.npy").c_str()), 0);
    ASSERT_GE(tk_outset_remove_on_commit(set.s, (d + "/never.npy").c_str()), 0);  // a missing one is no error
    ASSERT_EQ(tk_outset_commit(set.s), 0) << tk_last_error();
    EXPECT_TRUE(names(d).empty());
}

TEST(OutputSet, AFailedOutputLeavesNoneOfTheCallsOutputsAndTheOldFiles)
{
    const std::string d = temp_dir();
    put(d + "/a.txt", "old a");
    Set set;
    const int a = tk_outset_add(set.s, "--a", (d + "/a.txt").c_str(), nullptr);
    const int b = tk_outset_add(set.s, "--b", (d + "/b.txt").c_str(), nullptr);
    write_output(set.s, a, 0, "new a");
    write_output(set.s, b, 0, "short");
    tk_outset_expect_size(set.s, b, 0, 100);  // a writer that lost bytes without saying so
    EXPECT_EQ(tk_outset_commit(set.s), 1);
    EXPECT_NE(std::string(tk_last_error()).find("only 5 of 100 bytes"), std::string::npos) << tk_last_error();
    EXPECT_NE(std::string(tk_last_error()).find("b.txt"), std::string::npos) << tk_last_error();
    EXPECT_EQ(get(d + "/a.txt"), "old a");
    EXPECT_EQ(names(d), (std::vector<std::string>{"a.txt"}));
}

TEST(OutputSet, AMissingCompanionFileIsAnError)
{
    const std::string d = temp_dir();
    Set set;
    const std::string raw = d + "/v.raw";
    const char *companions[] = {raw.c_str(), nullptr};
    const int v = tk_outset_add(set.s, "OUT", (d + "/v.mhd").c_str(), companions);
    ASSERT_GE(v, 0);
    // the companion sits beside the header, under its final name
    EXPECT_EQ(std::string(tk_outset_temp(set.s, v, 1)).substr(std::string(tk_outset_temp(set.s, v, 1)).rfind('/')),
              "/v.raw");
    write_output(set.s, v, 0, "ElementDataFile = v.raw\n");
    EXPECT_EQ(tk_outset_commit(set.s), 1);
    EXPECT_NE(std::string(tk_last_error()).find("v.raw"), std::string::npos) << tk_last_error();
    EXPECT_TRUE(names(d).empty());
}

TEST(OutputSet, OutputsThatAreInputsAreRefusedByPathAndByInode)
{
    const std::string d = temp_dir();
    put(d + "/in.npy", "input");
    ASSERT_EQ(link((d + "/in.npy").c_str(), (d + "/hard.npy").c_str()), 0);
    ASSERT_EQ(symlink("in.npy", (d + "/soft.npy").c_str()), 0);
    ASSERT_EQ(mkdir((d + "/sub").c_str(), 0777), 0);
    ASSERT_EQ(symlink(".", (d + "/here").c_str()), 0);
    for (const std::string &out : {d + "/in.npy", d + "/./in.npy", d + "/sub/../in.npy", d + "/here/in.npy",
                                   d + "/hard.npy", d + "/soft.npy"}) {
        Set set;
        ASSERT_EQ(tk_outset_input(set.s, "--input", (d + "/in.npy").c_str()), 0);
        EXPECT_EQ(tk_outset_add(set.s, "--out", out.c_str(), nullptr), -2) << out;
        EXPECT_NE(std::string(tk_last_error()).find("refusing to overwrite an input"), std::string::npos) << out;
    }
    EXPECT_EQ(get(d + "/in.npy"), "input");
    EXPECT_EQ(names(d), (std::vector<std::string>{"hard.npy", "here", "in.npy", "soft.npy", "sub"}));
}

TEST(OutputSet, TwoOutputsOnOneFileAndOutputsInsideAnInputFolderAreRefused)
{
    const std::string d = temp_dir();
    ASSERT_EQ(mkdir((d + "/model").c_str(), 0777), 0);
    ASSERT_EQ(symlink("model", (d + "/link").c_str()), 0);
    {
        Set set;
        ASSERT_GE(tk_outset_add(set.s, "OUTPUT", (d + "/p.nrrd").c_str(), nullptr), 0);
        EXPECT_EQ(tk_outset_add(set.s, "--amplitudes", (d + "/./p.nrrd").c_str(), nullptr), -2);
        EXPECT_NE(std::string(tk_last_error()).find("same file"), std::string::npos) << tk_last_error();
    }
    {
        Set set;  // two names of one existing file: a hard link and a symbolic link
        put(d + "/old.npy", "x");
        ASSERT_EQ(link((d + "/old.npy").c_str(), (d + "/hard.npy").c_str()), 0);
        ASSERT_EQ(symlink("old.npy", (d + "/soft.npy").c_str()), 0);
        ASSERT_GE(tk_outset_add(set.s, "OUTPUT", (d + "/old.npy").c_str(), nullptr), 0);
        EXPECT_EQ(tk_outset_add(set.s, "--vectors", (d + "/hard.npy").c_str(), nullptr), -2);
        EXPECT_EQ(tk_outset_add(set.s, "--status", (d + "/soft.npy").c_str(), nullptr), -2);
        EXPECT_NE(std::string(tk_last_error()).find("same file"), std::string::npos) << tk_last_error();
    }
    {
        Set set;  // a detached header's data file counts: p.nhdr and q.mhd would both write p.raw
        const std::string raw = d + "/p.raw";
        const char *companions[] = {raw.c_str(), nullptr};
        ASSERT_GE(tk_outset_add(set.s, "OUTPUT", (d + "/p.nhdr").c_str(), companions), 0);
        EXPECT_EQ(tk_outset_add(set.s, "--amplitudes", raw.c_str(), nullptr), -2);
    }
    for (const std::string &out : {d + "/model/A1.npy", d + "/link/A1.npy"}) {
        Set set;
        ASSERT_EQ(tk_outset_input_dir(set.s, "MODEL_DIR", (d + "/model").c_str()), 0);
        EXPECT_EQ(tk_outset_add(set.s, "OUT", out.c_str(), nullptr), -2) << out;
        EXPECT_NE(std::string(tk_last_error()).find("inside the input folder"), std::string::npos) << out;
    }
    EXPECT_EQ(names(d + "/model"), std::vector<std::string>{});
    EXPECT_EQ(get(d + "/old.npy"), "x");
}

TEST(OutputSet, PathProblemsAreReportedBeforeAnyWork)
{
    const std::string d = temp_dir();
    ASSERT_EQ(mkdir((d + "/dir").c_str(), 0777), 0);
    Set set;
    EXPECT_EQ(tk_outset_add(set.s, "--out", (d + "/nodir/x.npy").c_str(), nullptr), -1);
    EXPECT_NE(std::string(tk_last_error()).find("does not exist"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_outset_add(set.s, "--out", (d + "/dir").c_str(), nullptr), -1);
    EXPECT_NE(std::string(tk_last_error()).find("is a directory"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_outset_add(set.s, "--out", "/proc/x.npy", nullptr), -1);
    EXPECT_NE(std::string(tk_last_error()).find("cannot create"), std::string::npos) << tk_last_error();
    EXPECT_EQ(tk_outset_add(set.s, "--out", "", nullptr), -2);
}

TEST(OutputSet, AFolderIsSwappedInWholeKeepingTheUsersFilesAndALink)
{
    const std::string d = temp_dir();
    ASSERT_EQ(mkdir((d + "/model").c_str(), 0777), 0);
    put(d + "/model/A1.npy", "old A1");
    put(d + "/model/A4.npy", "old A4");  // ours, from a model of higher order: goes
    put(d + "/model/notes.txt", "the user's");
    ASSERT_EQ(mkdir((d + "/model/plots").c_str(), 0777), 0);
    put(d + "/model/plots/p.png", "picture");
    ASSERT_EQ(symlink("model", (d + "/link").c_str()), 0);
    struct stat before;
    ASSERT_EQ(stat((d + "/model/notes.txt").c_str(), &before), 0);
    Set set;
    const char *files[] = {"A1.npy", "manifest.txt", nullptr};
    const int m = tk_outset_add_folder(set.s, "--out", (d + "/link").c_str(), files,
                                       [](const char *n) { return n[0] == 'A' || !std::strcmp(n, "manifest.txt") ? 1 : 0; });
    ASSERT_GE(m, 0) << tk_last_error();
    write_output(set.s, m, 0, "new A1");
    write_output(set.s, m, 1, "format = x\n");
    ASSERT_EQ(tk_outset_commit(set.s), 0) << tk_last_error();
    char target[256] = {0};
    ASSERT_GT(readlink((d + "/link").c_str(), target, sizeof target - 1), 0);
    EXPECT_STREQ(target, "model");  // the link stays a link
    EXPECT_EQ(get(d + "/model/A1.npy"), "new A1");
    EXPECT_EQ(names(d + "/model"), (std::vector<std::string>{"A1.npy", "manifest.txt", "notes.txt", "plots"}));
    struct stat after;
    ASSERT_EQ(stat((d + "/model/notes.txt").c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);  // the same file, not a copy
    EXPECT_EQ(get(d + "/model/plots/p.png"), "picture");
    EXPECT_EQ(names(d), (std::vector<std::string>{"link", "model"}));
}

TEST(OutputSet, AFolderOutputIsCreatedOnCommitOnly)
{
    const std::string d = temp_dir();
    Set set;
    const int a = tk_outset_add_in_folder(set.s, "--out", (d + "/fit").c_str(), "ia.npy");
    const int x = tk_outset_add_in_folder(set.s, "--out", (d + "/fit").c_str(), "xhat.npy");
    ASSERT_GE(a, 0);
    ASSERT_GE(x, 0);
    EXPECT_EQ(tk_outset_add_in_folder(set.s, "--out", (d + "/fit").c_str(), "ia.npy"), -2);  // a factor twice
    write_output(set.s, a, 0, "ia");
    EXPECT_FALSE(exists(d + "/fit"));
    tk_outset_abort(set.s);  // a failure before the commit: no folder at all
    EXPECT_TRUE(names(d).empty());
}

TEST(OutputSet, NpyWriteReportsAFullDiskAndLeavesNothing)
{
    // RLIMIT_FSIZE with SIGXFSZ ignored: write(2) fails with EFBIG, as on a full disk.
    const std::string d = temp_dir();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        std::vector<double> big(10000, 1.0);
        const size_t shape[1] = {big.size()};
        tk_status s = tk_npy_write((d + "/big.npy").c_str(), TK_NPY_FLOAT64, 1, shape, big.data());
        _exit(s != TK_OK && std::strstr(tk_last_error(), "big.npy") && std::strstr(tk_last_error(), "large") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "tk_npy_write did not report the short write";
    EXPECT_TRUE(names(d).empty());
}

// A child that registers an output, writes part of it, tells the parent, and waits.
pid_t child_with_temporary(const std::string &d, int ready_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        tk_outset *s = tk_outset_new("child");
        int idx = tk_outset_add(s, "--out", (d + "/out.npy").c_str(), nullptr);
        int fd = idx >= 0 ? tk_outset_open(s, idx, 0) : -1;
        if (fd >= 0) (void)!write(fd, "partial", 7);
        (void)!write(ready_fd, "r", 1);
        for (;;) pause();
    }
    return pid;
}

bool has_temporary(const std::string &d)
{
    for (const std::string &n : names(d))
        if (n.rfind(".tk-tmp-", 0) == 0) return true;
    return false;
}

TEST(OutputSet, SigtermAndSigintRemoveTheTemporariesAndStillEndTheProcess)
{
    for (int sig : {SIGTERM, SIGINT}) {
        const std::string d = temp_dir();
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        pid_t pid = child_with_temporary(d, p[1]);
        ASSERT_GT(pid, 0);
        char c;
        ASSERT_EQ(read(p[0], &c, 1), 1);
        EXPECT_TRUE(has_temporary(d));  // the child's temporary exists while it runs
        kill(pid, sig);
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig;
        EXPECT_TRUE(names(d).empty()) << "signal " << sig;
        close(p[0]);
        close(p[1]);
    }
}

TEST(OutputSet, ATemporaryOfAKilledRunIsRemovedByTheNextRunOnly)
{
    const std::string d = temp_dir();
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = child_with_temporary(d, p[1]);
    ASSERT_GT(pid, 0);
    char c;
    ASSERT_EQ(read(p[0], &c, 1), 1);
    close(p[0]);
    close(p[1]);
    // a running writer's temporary is not stale
    EXPECT_EQ(tk_outset_remove_stale(d.c_str()), 0);
    EXPECT_TRUE(has_temporary(d));
    kill(pid, SIGKILL);  // no handler runs: the temporary stays behind
    waitpid(pid, nullptr, 0);
    EXPECT_TRUE(has_temporary(d));
    // a look-alike of a live process (init, pid 1) and a user's file of a similar name stay
    ASSERT_EQ(mkdir((d + "/.tk-tmp-1-abcdef").c_str(), 0700), 0);
    put(d + "/.tk-tmp-notes", "mine");
    Set set;  // the next run writing to the folder
    ASSERT_GE(tk_outset_add(set.s, "--out", (d + "/other.npy").c_str(), nullptr), 0);
    tk_outset_abort(set.s);
    EXPECT_EQ(names(d), (std::vector<std::string>{".tk-tmp-1-abcdef", ".tk-tmp-notes"}));
}

TEST(OutputSet, TheProcessExitingWithoutACommitLeavesNothing)
{
    const std::string d = temp_dir();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        tk_outset *s = tk_outset_new(nullptr);
        int idx = tk_outset_add(s, "--out", (d + "/x.npy").c_str(), nullptr);
        int fd = tk_outset_open(s, idx, 0);
        (void)!write(fd, "x", 1);
        exit(3);  // an error path that forgot the set: the atexit cleanup takes it
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    EXPECT_TRUE(names(d).empty());
}

}  // namespace
