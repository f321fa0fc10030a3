// The writers' contract apart from the formats (those are checked by the field's readers,
// check_readers.py): the format by extension, clear errors naming the file, nothing left
// behind by a failure or an abort, a file already there untouched until a close succeeds.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "streamlines_sample.h"
#include "tk_streamlines.h"

namespace {

class StreamlinesWriter : public ::testing::Test {
protected:
    std::string dir;
    void SetUp() override
    {
        char tmpl[] = "/tmp/tk_streamlines_XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir = tmpl;
    }
    void TearDown() override
    {
        std::error_code ignored; // a scratch folder left behind is no test failure
        std::filesystem::remove_all(dir, ignored);
    }
    // The names in dir (temporaries of the output set included).
    std::vector<std::string> entries() const
    {
        std::vector<std::string> names;
        DIR *d = opendir(dir.c_str());
        while (dirent *e = d ? readdir(d) : nullptr)
            if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
        if (d) closedir(d);
        return names;
    }
    static std::string read(const std::string &path)
    {
        std::ifstream f(path, std::ios::binary);
        std::stringstream s;
        s << f.rdbuf();
        return s.str();
    }
};

TEST_F(StreamlinesWriter, FormatByExtensionAnyCase)
{
    tk_streamlines_format f;
    ASSERT_EQ(tk_streamlines_format_of("a/b.TCK", &f), TK_OK);
    EXPECT_EQ(f, TK_STREAMLINES_TCK);
    ASSERT_EQ(tk_streamlines_format_of("x.trk", &f), TK_OK);
    EXPECT_EQ(f, TK_STREAMLINES_TRK);
    ASSERT_EQ(tk_streamlines_format_of("x.Trx", &f), TK_OK);
    EXPECT_EQ(f, TK_STREAMLINES_TRX);
    ASSERT_EQ(tk_streamlines_format_of("x.vtp", &f), TK_OK);
    EXPECT_EQ(f, TK_STREAMLINES_VTP);
    ASSERT_EQ(tk_streamlines_format_of("x.vtk", &f), TK_OK);
    EXPECT_EQ(f, TK_STREAMLINES_VTK);
    EXPECT_EQ(tk_streamlines_format_of("x.tck.gz", &f), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_streamlines_format_of("dir.tck/x", &f), TK_ERR_ARGUMENT);
    EXPECT_EQ(tk_streamlines_format_of("", &f), TK_ERR_ARGUMENT);
}

TEST_F(StreamlinesWriter, UnknownExtensionNamesTheFileAndWritesNothing)
{
    tk_tracking_grid g = sample_grid(false);
    tk_streamlines_writer *w = reinterpret_cast<tk_streamlines_writer *>(1);
    std::string path = dir + "/out.fib";
    EXPECT_EQ(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_ERR_ARGUMENT);
    EXPECT_EQ(w, nullptr);
    EXPECT_NE(std::string(tk_last_error()).find(path), std::string::npos) << tk_last_error();
    EXPECT_NE(std::string(tk_last_error()).find(".tck"), std::string::npos) << tk_last_error();
    EXPECT_TRUE(entries().empty());
}

TEST_F(StreamlinesWriter, MissingOrUnwritableFolderNamesTheFile)
{
    tk_tracking_grid g = sample_grid(false);
    tk_streamlines_writer *w = nullptr;
    std::string path = dir + "/no/such/folder/out.tck";
    EXPECT_NE(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK);
    EXPECT_EQ(w, nullptr);
    EXPECT_NE(std::string(tk_last_error()).find("out.tck"), std::string::npos) << tk_last_error();
    // A file in the way of the folder (root may write anywhere, so this fails for everyone).
    std::ofstream(dir + "/plain") << "x";
    path = dir + "/plain/out.trk";
    EXPECT_NE(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK);
    EXPECT_NE(std::string(tk_last_error()).find("out.trk"), std::string::npos) << tk_last_error();
    // A read-only folder, where permissions apply (not as root).
    if (geteuid() != 0) {
        std::string ro = dir + "/ro";
        mkdir(ro.c_str(), 0555);
        path = ro + "/out.vtp";
        EXPECT_NE(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK);
        EXPECT_NE(std::string(tk_last_error()).find(ro), std::string::npos) << tk_last_error();
        chmod(ro.c_str(), 0755);
    }
    // A folder where the file should be.
    mkdir((dir + "/isdir.tck").c_str(), 0755);
    EXPECT_NE(tk_streamlines_writer_open((dir + "/isdir.tck").c_str(), &g, nullptr, &w), TK_OK);
    EXPECT_NE(std::string(tk_last_error()).find("isdir.tck"), std::string::npos) << tk_last_error();
}

TEST_F(StreamlinesWriter, AbortLeavesNoFileAndKeepsAnOldOne)
{
    tk_tracking_grid g = sample_grid(true);
    for (const char *ext : {".tck", ".trk", ".trx", ".vtp", ".vtk"}) {
        std::string fresh = dir + "/fresh" + ext, old = dir + "/old" + ext;
        std::ofstream(old) << "previous";
        for (const std::string &path : {fresh, old}) {
            tk_streamlines_writer *w = nullptr;
            ASSERT_EQ(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK) << tk_last_error();
            for (const SampleChunk &c : sample_chunks()) {
                tk_tracking_chunk v = c.view();
                ASSERT_EQ(tk_streamlines_writer_append(w, &v), TK_OK) << tk_last_error();
            }
            tk_streamlines_writer_abort(w);
        }
        struct stat st;
        EXPECT_NE(stat(fresh.c_str(), &st), 0) << fresh;
        EXPECT_EQ(read(old), "previous") << old;
    }
    // Only the old files: no temporaries either.
    EXPECT_EQ(entries().size(), 5u);
}

TEST_F(StreamlinesWriter, BadChunkFailsAndCloseThenWritesNothing)
{
    tk_tracking_grid g = sample_grid(false);
    std::string path = dir + "/bad.tck";
    tk_streamlines_writer *w = nullptr;
    ASSERT_EQ(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK);
    SampleChunk c = sample_chunks()[0];
    c.points[7] = NAN;  // .tck would read it as the end of a streamline
    tk_tracking_chunk v = c.view();
    EXPECT_EQ(tk_streamlines_writer_append(w, &v), TK_ERR_DATA);
    EXPECT_NE(std::string(tk_last_error()).find(path), std::string::npos) << tk_last_error();
    EXPECT_NE(tk_streamlines_writer_close(w), TK_OK);
    EXPECT_TRUE(entries().empty());

    ASSERT_EQ(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK);
    SampleChunk z = sample_chunks()[0];
    z.counts[1] = 0;  // a streamline without points
    v = z.view();
    EXPECT_EQ(tk_streamlines_writer_append(w, &v), TK_ERR_ARGUMENT);
    z = sample_chunks()[0];
    z.counts[0] += 1;  // counts that do not add up to the total
    v = z.view();
    EXPECT_EQ(tk_streamlines_writer_append(w, &v), TK_ERR_ARGUMENT);
    tk_streamlines_writer_abort(w);
    EXPECT_TRUE(entries().empty());
}

TEST_F(StreamlinesWriter, BadGridIsRefused)
{
    tk_tracking_grid g = sample_grid(false);
    g.vox2world[5] = 0;  // a singular affine
    g.vox2world[6] = 0;
    g.vox2world[4] = 0;
    tk_streamlines_writer *w = nullptr;
    EXPECT_EQ(tk_streamlines_writer_open((dir + "/g.trk").c_str(), &g, nullptr, &w), TK_ERR_ARGUMENT);
    g = sample_grid(false);
    g.dims[0] = 40000;  // a .trk header holds int16 dims
    EXPECT_EQ(tk_streamlines_writer_open((dir + "/g.trk").c_str(), &g, nullptr, &w), TK_ERR_UNSUPPORTED);
    EXPECT_TRUE(entries().empty());
}

TEST_F(StreamlinesWriter, EmptyFilesAreValid)
{
    // No streamline at all: every format still closes (counts 0); the readers' check of
    // contents is check_readers.py's.
    tk_tracking_grid g = sample_grid(false);
    for (const char *ext : {".tck", ".trk", ".trx", ".vtp", ".vtk"}) {
        std::string path = dir + "/empty" + ext;
        tk_streamlines_writer *w = nullptr;
        ASSERT_EQ(tk_streamlines_writer_open(path.c_str(), &g, nullptr, &w), TK_OK) << tk_last_error();
        tk_tracking_chunk none{};
        ASSERT_EQ(tk_streamlines_writer_append(w, &none), TK_OK);
        ASSERT_EQ(tk_streamlines_writer_close(w), TK_OK) << tk_last_error();
        struct stat st;
        ASSERT_EQ(stat(path.c_str(), &st), 0);
        EXPECT_GT(st.st_size, 0);
    }
    EXPECT_NE(read(dir + "/empty.tck").find("count: 0000000000\n"), std::string::npos);
}

}  // namespace
