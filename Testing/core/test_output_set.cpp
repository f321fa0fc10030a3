// The output set (tk_output_set.h): outputs against inputs and each other by path and by
// inode, all-or-nothing commits, size checks, folder swaps that keep a user's files and
// follow no link, cleanup on SIGTERM/SIGINT (in a child process) and after kill -9.
// Commits failing or killed in the middle use Testing/fault/fault_rename.c, compiled into this
// test: TK_FAULT_RENAME makes chosen renames fail, or kills the process at one.
#include <gtest/gtest.h>

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

#include "tk_cli_runner.h"
#include "tk_npy.h"
#include "tk_output_set.h"
#include "tk_status.h"

namespace {

using tk_test::slurp;
using tk_test::write_file;

std::string temp_dir() { return tk_test::make_temp_dir("tk_outset"); }

// Whether path names anything, a dangling link too (lstat: links are not followed).
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

// A folder d holding one earlier file, and a set whose outputs --a (d/a.txt) and --b
// (d/b.txt) are registered and written, not committed yet.
struct TwoOutputs {
    const std::string d = temp_dir();
    Set set;
    int a = -1, b = -1;

    void write(const std::string &earlier, const std::string &earlier_bytes, const std::string &new_a,
               const std::string &new_b)
    {
        write_file(d + "/" + earlier, earlier_bytes);
        a = tk_outset_add(set.s, "--a", (d + "/a.txt").c_str(), nullptr);
        b = tk_outset_add(set.s, "--b", (d + "/b.txt").c_str(), nullptr);
        ASSERT_GE(a, 0) << tk_last_error();
        ASSERT_GE(b, 0) << tk_last_error();
        write_output(set.s, a, 0, new_a);
        write_output(set.s, b, 0, new_b);
    }
};

TEST(OutputSet, CommitPutsEveryOutputInPlaceAndLeavesNoTemporary)
{
    TwoOutputs t;
    ASSERT_NO_FATAL_FAILURE(t.write("b.txt", "old b", "new a", "new b"));
    EXPECT_EQ(slurp(t.d + "/b.txt"), "old b");  // nothing in place before the commit
    EXPECT_FALSE(exists(t.d + "/a.txt"));
    ASSERT_EQ(tk_outset_commit(t.set.s), 0) << tk_last_error();
    EXPECT_EQ(slurp(t.d + "/a.txt"), "new a");
    EXPECT_EQ(slurp(t.d + "/b.txt"), "new b");
    EXPECT_EQ(names(t.d), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(OutputSet, AnOldFileIsRemovedOnCommitOnly)
{
    const std::string d = temp_dir();
    write_file(d + "/old4.npy", "from an earlier, larger set");
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
    TwoOutputs t;
    ASSERT_NO_FATAL_FAILURE(t.write("a.txt", "old a", "new a", "short"));
    tk_outset_expect_size(t.set.s, t.b, 0, 100);  // a writer that lost bytes without saying so
    EXPECT_EQ(tk_outset_commit(t.set.s), 1);
    EXPECT_NE(std::string(tk_last_error()).find("only 5 of 100 bytes"), std::string::npos) << tk_last_error();
    EXPECT_NE(std::string(tk_last_error()).find("b.txt"), std::string::npos) << tk_last_error();
    EXPECT_EQ(slurp(t.d + "/a.txt"), "old a");
    EXPECT_EQ(names(t.d), (std::vector<std::string>{"a.txt"}));
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
    write_file(d + "/in.npy", "input");
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
    EXPECT_EQ(slurp(d + "/in.npy"), "input");
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
        write_file(d + "/old.npy", "x");
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
    EXPECT_EQ(slurp(d + "/old.npy"), "x");
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
    write_file(d + "/model/A1.npy", "old A1");
    write_file(d + "/model/A4.npy", "old A4");  // ours, from a model of higher order: goes
    write_file(d + "/model/notes.txt", "the user's");
    ASSERT_EQ(mkdir((d + "/model/plots").c_str(), 0777), 0);
    write_file(d + "/model/plots/p.png", "picture");
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
    EXPECT_EQ(slurp(d + "/model/A1.npy"), "new A1");
    EXPECT_EQ(names(d + "/model"), (std::vector<std::string>{"A1.npy", "manifest.txt", "notes.txt", "plots"}));
    struct stat after;
    ASSERT_EQ(stat((d + "/model/notes.txt").c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);  // the same file, not a copy
    EXPECT_EQ(slurp(d + "/model/plots/p.png"), "picture");
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

// ---- commits that fail or are killed in the middle --------------------------------------

extern "C" void tk_fault_reset(void);  // fault_rename.c: the rules' counts start afresh

// TK_FAULT_RENAME (and TK_FAULT_NO_EXCHANGE) for one scope.
struct Fault {
    explicit Fault(const char *rules, bool no_exchange = false)
    {
        tk_fault_reset();
        setenv("TK_FAULT_RENAME", rules, 1);
        if (no_exchange) setenv("TK_FAULT_NO_EXCHANGE", "1", 1);
    }
    ~Fault()
    {
        unsetenv("TK_FAULT_RENAME");
        unsetenv("TK_FAULT_NO_EXCHANGE");
    }
};

std::string err() { return tk_last_error(); }

// A folder of earlier outputs: a.txt, the pair b.mhd/b.raw, a link l.txt to target.txt; c.txt
// is new.  The set replaces all of them.
struct Earlier {
    std::string d = temp_dir();
    Earlier()
    {
        write_file(d + "/a.txt", "old a");
        write_file(d + "/b.mhd", "old header");
        write_file(d + "/b.raw", "old data");
        write_file(d + "/target.txt", "the link's target");
        EXPECT_EQ(symlink("target.txt", (d + "/l.txt").c_str()), 0);
    }
    // Registers and writes the new outputs into set.
    void write_new(tk_outset *set) const
    {
        const std::string raw = d + "/b.raw";
        const char *companions[] = {raw.c_str(), nullptr};
        const int a = tk_outset_add(set, "--a", (d + "/a.txt").c_str(), nullptr);
        const int b = tk_outset_add(set, "--b", (d + "/b.mhd").c_str(), companions);
        const int l = tk_outset_add(set, "--l", (d + "/l.txt").c_str(), nullptr);
        const int c = tk_outset_add(set, "--c", (d + "/c.txt").c_str(), nullptr);
        ASSERT_GE(a, 0) << err();
        ASSERT_GE(b, 0) << err();
        ASSERT_GE(l, 0) << err();
        ASSERT_GE(c, 0) << err();
        write_output(set, a, 0, "new a");
        write_output(set, b, 0, "new header");
        write_output(set, b, 1, "new data");
        write_output(set, l, 0, "new l");
        write_output(set, c, 0, "new c");
    }
    // Every output as before the call, and nothing else in the folder.
    void expect_unchanged(const std::string &why) const
    {
        EXPECT_EQ(slurp(d + "/a.txt"), "old a") << why;
        EXPECT_EQ(slurp(d + "/b.mhd"), "old header") << why;
        EXPECT_EQ(slurp(d + "/b.raw"), "old data") << why;
        char target[64] = {0};
        EXPECT_GT(readlink((d + "/l.txt").c_str(), target, sizeof target - 1), 0) << why << ": l.txt is no link";
        EXPECT_STREQ(target, "target.txt") << why;
        EXPECT_EQ(slurp(d + "/target.txt"), "the link's target") << why;
        EXPECT_EQ(names(d), (std::vector<std::string>{"a.txt", "b.mhd", "b.raw", "l.txt", "target.txt"})) << why;
    }
};

TEST(OutputSet, ARenameFailingInTheMiddleOfTheCommitLeavesEveryOutputAsItWas)
{
    // Each rename of the commit fails in turn (b.raw, the data file, goes before its header),
    // with the exchange the file system offers and without it (the previous file moved aside).
    for (bool no_exchange : {false, true})
        for (const char *name : {"a.txt", "b.raw", "b.mhd", "l.txt", "c.txt"}) {
            const std::string why = std::string(name) + (no_exchange ? " (no exchange)" : "");
            Earlier e;
            Set set;
            e.write_new(set.s);
            {
                Fault f(name, no_exchange);
                EXPECT_EQ(tk_outset_commit(set.s), 1) << why;
            }
            EXPECT_NE(err().find(std::string(name) + ": cannot move the new file into place: Input/output error; "
                                 "no output of this call was changed"), std::string::npos) << why << ": " << err();
            EXPECT_NE(err().find("; check the folder and the disk, and run again"), std::string::npos) << err();
            e.expect_unchanged(why);
        }
}

TEST(OutputSet, WithoutAFailureTheCommitReplacesEveryOutputAndNoLinkTarget)
{
    for (bool no_exchange : {false, true}) {
        Earlier e;
        Set set;
        e.write_new(set.s);
        {
            Fault f("", no_exchange);
            ASSERT_EQ(tk_outset_commit(set.s), 0) << err();
        }
        EXPECT_EQ(slurp(e.d + "/a.txt"), "new a");
        EXPECT_EQ(slurp(e.d + "/b.mhd"), "new header");
        EXPECT_EQ(slurp(e.d + "/b.raw"), "new data");
        EXPECT_EQ(slurp(e.d + "/c.txt"), "new c");
        struct stat st;
        ASSERT_EQ(lstat((e.d + "/l.txt").c_str(), &st), 0);
        EXPECT_TRUE(S_ISREG(st.st_mode));  // the link replaced, not followed
        EXPECT_EQ(slurp(e.d + "/l.txt"), "new l");
        EXPECT_EQ(slurp(e.d + "/target.txt"), "the link's target");
        EXPECT_EQ(names(e.d), (std::vector<std::string>{"a.txt", "b.mhd", "b.raw", "c.txt", "l.txt", "target.txt"}));
    }
}

TEST(OutputSet, AFolderInTheWayAtCommitTimeIsLeftAloneAndTheOtherOutputsPutBack)
{
    Earlier e;
    Set set;
    e.write_new(set.s);
    ASSERT_EQ(mkdir((e.d + "/c.txt").c_str(), 0777), 0);  // made after the checks of tk_outset_add
    write_file(e.d + "/c.txt/inside", "someone's");
    EXPECT_EQ(tk_outset_commit(set.s), 1);
    EXPECT_NE(err().find("c.txt: cannot move the new file into place: a folder of that name is in the way; no output "
                         "of this call was changed (the files already there are as they were); remove what is in the "
                         "way, or choose another output path, and run again"), std::string::npos) << err();
    EXPECT_EQ(slurp(e.d + "/c.txt/inside"), "someone's");
    ASSERT_EQ(rmdir((e.d + "/c.txt").c_str()) != 0 && unlink((e.d + "/c.txt/inside").c_str()) == 0 &&
                  rmdir((e.d + "/c.txt").c_str()) == 0, true);
    e.expect_unchanged("folder in the way");
}

// A model folder replaced whole (tk-tucker), then a file output (OUT.tns) that fails.
struct Model {
    std::string d = temp_dir();
    struct stat notes_before {};
    explicit Model(bool exists = true)
    {
        if (!exists) return;
        EXPECT_EQ(mkdir((d + "/model").c_str(), 0777), 0);
        write_file(d + "/model/A1.npy", "old A1");
        write_file(d + "/model/A4.npy", "old A4");
        write_file(d + "/model/manifest.txt", "old manifest");
        write_file(d + "/model/notes.txt", "the user's");
        EXPECT_EQ(mkdir((d + "/model/plots").c_str(), 0777), 0);
        write_file(d + "/model/plots/p.png", "picture");
        EXPECT_EQ(stat((d + "/model/notes.txt").c_str(), &notes_before), 0);
        write_file(d + "/out.tns", "old out");
    }
    void write_new(tk_outset *set) const
    {
        const char *files[] = {"A1.npy", "manifest.txt", nullptr};
        const int m = tk_outset_add_folder(set, "--out", (d + "/model").c_str(), files, [](const char *n) {
            return n[0] == 'A' || !std::strcmp(n, "manifest.txt") ? 1 : 0;
        });
        const int o = tk_outset_add(set, "OUT", (d + "/out.tns").c_str(), nullptr);
        ASSERT_GE(m, 0) << err();
        ASSERT_GE(o, 0) << err();
        write_output(set, m, 0, "new A1");
        write_output(set, m, 1, "new manifest");
        write_output(set, o, 0, "new out");
    }
    void expect_unchanged(const std::string &why) const
    {
        EXPECT_EQ(names(d + "/model"),
                  (std::vector<std::string>{"A1.npy", "A4.npy", "manifest.txt", "notes.txt", "plots"})) << why;
        EXPECT_EQ(slurp(d + "/model/A1.npy"), "old A1") << why;
        EXPECT_EQ(slurp(d + "/model/A4.npy"), "old A4") << why;
        EXPECT_EQ(slurp(d + "/model/manifest.txt"), "old manifest") << why;
        EXPECT_EQ(slurp(d + "/model/plots/p.png"), "picture") << why;
        struct stat after;
        ASSERT_EQ(stat((d + "/model/notes.txt").c_str(), &after), 0) << why;
        EXPECT_EQ(after.st_ino, notes_before.st_ino) << why;
        EXPECT_EQ(after.st_nlink, 1u) << why;  // no second name left in a temporary
        EXPECT_EQ(slurp(d + "/out.tns"), "old out") << why;
        EXPECT_EQ(names(d), (std::vector<std::string>{"model", "out.tns"})) << why;
    }
};

TEST(OutputSet, AFolderSwappedInIsSwappedBackWhenALaterOutputFails)
{
    // "model": the exchange itself fails (the user's folder moved into the new one goes back);
    // "out.tns": the swap is done when the next output fails.
    for (const char *name : {"model", "out.tns"}) {
        Model m;
        Set set;
        m.write_new(set.s);
        {
            Fault f(name);
            EXPECT_EQ(tk_outset_commit(set.s), 1) << name;
        }
        EXPECT_NE(err().find("no output of this call was changed"), std::string::npos) << err();
        m.expect_unchanged(name);
    }
    Model fresh(false);  // a model folder that did not exist goes again
    Set set;
    fresh.write_new(set.s);
    {
        Fault f("out.tns");
        EXPECT_EQ(tk_outset_commit(set.s), 1);
    }
    EXPECT_TRUE(names(fresh.d).empty()) << names(fresh.d).size();
}

TEST(OutputSet, FilesOfAFolderOutputArePutBackOrRemovedWithTheFolder)
{
    for (bool exists : {true, false}) {  // tk-pltf --out fit: an earlier fit, or none
        const std::string d = temp_dir();
        if (exists) {
            ASSERT_EQ(mkdir((d + "/fit").c_str(), 0777), 0);
            write_file(d + "/fit/ia.npy", "old ia");
            write_file(d + "/fit/xhat.npy", "old xhat");
        }
        Set set;
        const int a = tk_outset_add_in_folder(set.s, "--out", (d + "/fit").c_str(), "ia.npy");
        const int x = tk_outset_add_in_folder(set.s, "--out", (d + "/fit").c_str(), "xhat.npy");
        ASSERT_GE(a, 0) << err();
        ASSERT_GE(x, 0) << err();
        write_output(set.s, a, 0, "new ia");
        write_output(set.s, x, 0, "new xhat");
        {
            Fault f("xhat.npy");
            EXPECT_EQ(tk_outset_commit(set.s), 1);
        }
        EXPECT_NE(err().find("--out " + d + "/fit/xhat.npy: cannot move"), std::string::npos) << err();
        if (exists) {
            EXPECT_EQ(names(d), std::vector<std::string>{"fit"});
            EXPECT_EQ(names(d + "/fit"), (std::vector<std::string>{"ia.npy", "xhat.npy"}));
            EXPECT_EQ(slurp(d + "/fit/ia.npy"), "old ia");
            EXPECT_EQ(slurp(d + "/fit/xhat.npy"), "old xhat");
        } else {
            EXPECT_TRUE(names(d).empty());  // the folder made by the commit goes too
        }
    }
}

// A temporary folder (".tk-tmp-*") of d, or "".
std::string temporary_of(const std::string &d)
{
    for (const std::string &n : names(d))
        if (n.rfind(".tk-tmp-", 0) == 0) return n;
    return "";
}

// The commit of Earlier's outputs in a child process, with rules; the child's exit status.
int commit_in_child(const Earlier &e, const char *rules)
{
    pid_t pid = fork();
    if (pid == 0) {
        tk_fault_reset();
        setenv("TK_FAULT_RENAME", rules, 1);
        tk_outset *s = tk_outset_new(nullptr);
        e.write_new(s);
        const int r = tk_outset_commit(s);
        _exit(r == 0 ? 0 : 3);  // no cleanup at exit: the set's temporaries stay as they are
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

TEST(OutputSet, ACommitKilledInTheMiddleIsUndoneByTheNextRun)
{
    for (const char *name : {"a.txt", "b.raw", "b.mhd", "l.txt", "c.txt"}) {
        Earlier e;
        const int status = commit_in_child(e, (std::string(name) + "!").c_str());
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << name;
        EXPECT_FALSE(temporary_of(e.d).empty()) << name;  // what a kill -9 leaves
        EXPECT_EQ(tk_outset_remove_stale(e.d.c_str()), 4) << name;  // four temporaries, one an output
        e.expect_unchanged(std::string("killed at ") + name);
    }
}

TEST(OutputSet, AFolderSwapKilledBeforeTheNextOutputIsUndoneByTheNextRun)
{
    Model m;
    pid_t pid = fork();
    if (pid == 0) {
        tk_fault_reset();
        setenv("TK_FAULT_RENAME", "out.tns!", 1);
        tk_outset *s = tk_outset_new(nullptr);
        m.write_new(s);
        tk_outset_commit(s);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_EQ(slurp(m.d + "/model/A1.npy"), "new A1");  // swapped in when the process died
    EXPECT_EQ(tk_outset_remove_stale(m.d.c_str()), 2);
    m.expect_unchanged("killed after the swap");
}

TEST(OutputSet, AnOutputChangedAfterAKilledCommitKeepsTheChangeAndThePreviousFile)
{
    Earlier e;
    const int status = commit_in_child(e, "c.txt!");  // a.txt, b and l.txt were in place
    ASSERT_TRUE(WIFSIGNALED(status));
    write_file(e.d + "/a.txt.edit", "the user's own a");
    ASSERT_EQ(rename((e.d + "/a.txt.edit").c_str(), (e.d + "/a.txt").c_str()), 0);  // a new file at a.txt
    EXPECT_EQ(tk_outset_remove_stale(e.d.c_str()), 3);  // a.txt's temporary stays
    EXPECT_EQ(slurp(e.d + "/a.txt"), "the user's own a");
    EXPECT_EQ(slurp(e.d + "/b.mhd"), "old header");
    EXPECT_EQ(slurp(e.d + "/b.raw"), "old data");
    EXPECT_FALSE(exists(e.d + "/c.txt"));
    const std::string t = temporary_of(e.d);
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(slurp(e.d + "/" + t + "/new/a.txt"), "old a");  // the previous file, kept
    EXPECT_EQ(tk_outset_remove_stale(e.d.c_str()), 0);      // and kept by later runs too
    EXPECT_EQ(slurp(e.d + "/" + t + "/new/a.txt"), "old a");
}

TEST(OutputSet, AnUndoThatFailsKeepsThePreviousFileSaysWhereAndTheNextRunPutsItBack)
{
    {
        Earlier e;
        Set set;
        e.write_new(set.s);
        Fault f("c.txt,a.txt@2");  // c.txt cannot go in place, nor a.txt back
        EXPECT_EQ(tk_outset_commit(set.s), 1);
        EXPECT_NE(err().find("c.txt: cannot move the new file into place: Input/output error; putting back the "
                             "earlier outputs failed too: "), std::string::npos) << err();
        const std::string t = temporary_of(e.d);
        ASSERT_FALSE(t.empty());
        EXPECT_NE(err().find(e.d + "/a.txt: cannot put the previous file back; its previous version is kept as " +
                             e.d + "/" + t + "/new/a.txt: move it back by hand"), std::string::npos) << err();
        EXPECT_EQ(slurp(e.d + "/" + t + "/new/a.txt"), "old a");
        EXPECT_EQ(slurp(e.d + "/a.txt"), "new a");
        EXPECT_EQ(slurp(e.d + "/b.mhd"), "old header");  // the others are back
        EXPECT_FALSE(exists(e.d + "/c.txt"));
        EXPECT_EQ(tk_outset_remove_stale(e.d.c_str()), 0);  // its process runs: not stale
    }
    Earlier e;  // the same in a process that then ends: the next run puts a.txt back
    EXPECT_TRUE(WIFEXITED(commit_in_child(e, "c.txt,a.txt@2")));
    EXPECT_EQ(slurp(e.d + "/a.txt"), "new a");
    EXPECT_EQ(tk_outset_remove_stale(e.d.c_str()), 1);
    e.expect_unchanged("undo finished by the next run");
}

// A signal may be handled on any thread that does not block it (tk-pltf's BLAS and OpenMP
// threads): the process's main thread is then wherever it is, here stopped just after making a
// temporary folder and before the set has it (TK_FAULT_MKDIR_STOP).  The handler on the other
// thread must still remove it.  (The matrix's SIGTERM row for tk-pltf failed so, now and then.)
TEST(OutputSet, ASignalOnAnotherThreadWhileATemporaryIsMadeLeavesNothing)
{
    const std::string d = temp_dir();
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("TK_FAULT_MKDIR_STOP", "new", 1);
        setenv("TK_FAULT_STOP_FD", std::to_string(p[1]).c_str(), 1);
        std::thread other([] {
            for (;;) pause();  // the signals are not blocked here
        });
        tk_outset *s = tk_outset_new("child");
        tk_outset_add(s, "--out", (d + "/x.npy").c_str(), nullptr);  // stops inside
        _exit(3);
    }
    struct pollfd ready = {p[0], POLLIN, 0};
    ASSERT_EQ(poll(&ready, 1, 10000), 1) << "the child never made its temporary folder's new/";
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    EXPECT_TRUE(names(d).empty()) << names(d).size() << " left, first " << (names(d).empty() ? "" : names(d)[0]);
    close(p[0]);
    close(p[1]);
}

// A signal handled on another thread in the middle of a commit waits for the commit: the
// process then ends by it with every output in place (or every one as it was), never half.
TEST(OutputSet, ASignalOnAnotherThreadDuringTheCommitWaitsForIt)
{
    Earlier e;
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
        tk_fault_reset();
        setenv("TK_FAULT_RENAME", "b.mhd~", 1);  // the commit waits 300 ms at the header's rename
        setenv("TK_FAULT_STOP_FD", std::to_string(p[1]).c_str(), 1);
        std::thread other([] {
            for (;;) pause();
        });
        tk_outset *s = tk_outset_new("child");
        e.write_new(s);
        tk_outset_commit(s);
        _exit(3);  // not reached: the deferred signal ends the process
    }
    struct pollfd ready = {p[0], POLLIN, 0};
    ASSERT_EQ(poll(&ready, 1, 10000), 1) << "the child never reached b.mhd's rename";
    kill(pid, SIGTERM);  // a.txt and b.raw are in place, b.mhd, l.txt and c.txt are not yet
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    EXPECT_EQ(slurp(e.d + "/a.txt"), "new a");
    EXPECT_EQ(slurp(e.d + "/b.mhd"), "new header");
    EXPECT_EQ(slurp(e.d + "/b.raw"), "new data");
    EXPECT_EQ(slurp(e.d + "/c.txt"), "new c");
    EXPECT_EQ(slurp(e.d + "/l.txt"), "new l");
    EXPECT_EQ(names(e.d), (std::vector<std::string>{"a.txt", "b.mhd", "b.raw", "c.txt", "l.txt", "target.txt"}));
    close(p[0]);
    close(p[1]);
}

// A child that registers an output in d, writes part of it, tells the parent through a pipe,
// and waits for a signal; *pid is the child's once its temporary is there.
void start_child_with_temporary(const std::string &d, pid_t *pid)
{
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    *pid = fork();
    if (*pid == 0) {
        tk_outset *s = tk_outset_new("child");
        int idx = tk_outset_add(s, "--out", (d + "/out.npy").c_str(), nullptr);
        int fd = idx >= 0 ? tk_outset_open(s, idx, 0) : -1;
        if (fd >= 0) (void)!write(fd, "partial", 7);
        (void)!write(p[1], "r", 1);
        for (;;) pause();
    }
    char c;
    const bool ready = *pid > 0 && read(p[0], &c, 1) == 1;
    close(p[0]);
    close(p[1]);
    ASSERT_GT(*pid, 0);
    ASSERT_TRUE(ready) << "the child never said its temporary was there";
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
        pid_t pid = -1;
        ASSERT_NO_FATAL_FAILURE(start_child_with_temporary(d, &pid));
        EXPECT_TRUE(has_temporary(d));  // the child's temporary exists while it runs
        kill(pid, sig);
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig;
        EXPECT_TRUE(names(d).empty()) << "signal " << sig;
    }
}

TEST(OutputSet, TheProbeTellsWhetherAFileCanBeMadeAndLeavesNothing)
{
    const std::string d = temp_dir();
    write_file(d + "/out.nii", "a user's file");
    EXPECT_EQ(tk_outset_probe((d + "/out.nii").c_str()), 0);
    EXPECT_EQ(tk_outset_probe((d + "/new.tck").c_str()), 0);
    EXPECT_EQ(names(d), std::vector<std::string>{"out.nii"});
    EXPECT_EQ(slurp(d + "/out.nii"), "a user's file");
    EXPECT_EQ(tk_outset_probe((d + "/missing/out.tck").c_str()), ENOENT);
    EXPECT_NE(tk_outset_probe("/proc/out.tck"), 0);  // access(2) calls /proc writable for root
    EXPECT_NE(tk_outset_probe(""), 0);
}

// The probe comes before any set (tk-track and tk-fibers check their outputs first): a SIGTERM
// or SIGINT while it exists, on the probing thread or on another, must not leave it behind.
// (The matrix's SIGINT row for tk-track left ".tk-tmp-PID-probe-out.trx" under load.)
TEST(OutputSet, ASignalWhileProbingLeavesNoProbe)
{
    for (int round = 0; round < 40; ++round) {
        const int sig = round % 2 ? SIGINT : SIGTERM;
        const std::string d = temp_dir();
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        pid_t pid = fork();
        if (pid == 0) {
            std::thread other([] {
                for (;;) pause();  // the signals are not blocked here: the handler may run on this thread
            });
            (void)!write(p[1], "r", 1);
            for (;;) tk_outset_probe((d + "/out.trx").c_str());
        }
        char c;
        ASSERT_EQ(read(p[0], &c, 1), 1);
        close(p[0]);
        close(p[1]);
        usleep(200 * (round % 10));  // somewhere in the loop: before, while or after a probe exists
        kill(pid, sig);
        int status = 0;
        waitpid(pid, &status, 0);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "round " << round;
        EXPECT_TRUE(names(d).empty()) << "round " << round << ": " << (names(d).empty() ? "" : names(d)[0]);
    }
}

TEST(OutputSet, ATemporaryOfAKilledRunIsRemovedByTheNextRunOnly)
{
    const std::string d = temp_dir();
    pid_t pid = -1;
    ASSERT_NO_FATAL_FAILURE(start_child_with_temporary(d, &pid));
    // a running writer's temporary is not stale
    EXPECT_EQ(tk_outset_remove_stale(d.c_str()), 0);
    EXPECT_TRUE(has_temporary(d));
    kill(pid, SIGKILL);  // no handler runs: the temporary stays behind
    waitpid(pid, nullptr, 0);
    EXPECT_TRUE(has_temporary(d));
    // a look-alike of a live process (init, pid 1) and a user's file of a similar name stay
    ASSERT_EQ(mkdir((d + "/.tk-tmp-1-abcdef").c_str(), 0700), 0);
    write_file(d + "/.tk-tmp-notes", "mine");
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
