// The .npy reader and writer: round trips, every header version, and malformed files.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "tk_cli_runner.h"
#include "tk_npy.h"

using namespace tk_test;

namespace {

// A file made by hand, as numpy writes it: magic, version, length, dict, padding, data.
std::string npy_bytes(int major, const std::string &dict, const std::string &data)
{
    std::string header = dict;
    size_t pre = major == 1 ? 10 : 12;
    while ((pre + header.size() + 1) % 64) header += ' ';
    header += '\n';
    std::string out = "\x93NUMPY";
    out += (char)major;
    out += '\0';
    size_t len = header.size();
    out += (char)(len & 0xff);
    out += (char)((len >> 8) & 0xff);
    if (major > 1) out += (char)((len >> 16) & 0xff), out += (char)((len >> 24) & 0xff);
    return out + header + data;
}

std::string doubles(std::vector<double> v) { return std::string((const char *)v.data(), v.size() * sizeof(double)); }

}  // namespace

TEST(Npy, RoundTripsEveryDtype)
{
    auto dir = make_temp_dir("tk_npy");
    const size_t shape[3] = {2, 3, 4};
    for (tk_npy_dtype d : {TK_NPY_FLOAT32, TK_NPY_FLOAT64, TK_NPY_COMPLEX64, TK_NPY_COMPLEX128, TK_NPY_INT8,
                           TK_NPY_UINT8, TK_NPY_INT32, TK_NPY_INT64}) {
        size_t bytes = 24 * tk_npy_dtype_size(d);
        std::vector<unsigned char> data(bytes);
        for (size_t i = 0; i < bytes; ++i) data[i] = (unsigned char)(i * 37 + 11);
        std::string path = dir + "/a.npy";
        ASSERT_EQ(tk_npy_write(path.c_str(), d, 3, shape, data.data()), TK_OK) << tk_last_error();
        tk_npy_array a;
        ASSERT_EQ(tk_npy_read(path.c_str(), &a), TK_OK) << tk_last_error();
        EXPECT_EQ(a.dtype, d);
        ASSERT_EQ(a.ndim, 3);
        EXPECT_EQ(a.shape[2], 4u);
        EXPECT_EQ(a.count, 24u);
        EXPECT_EQ(0, std::memcmp(a.data, data.data(), bytes));
        tk_npy_free(&a);
    }
    // 1-D and 0-D shapes are written as numpy writes them: (5,) and ()
    double five[5] = {1, 2, 3, 4, 5};
    size_t one = 5;
    std::string path = dir + "/b.npy";
    ASSERT_EQ(tk_npy_write(path.c_str(), TK_NPY_FLOAT64, 1, &one, five), TK_OK);
    const std::string text = slurp(path);
    EXPECT_NE(text.find("'shape': (5,)"), std::string::npos);
    EXPECT_EQ(text.size() % 64, (5 * 8) % 64);  // data starts on a 64-byte boundary
    ASSERT_EQ(tk_npy_write(path.c_str(), TK_NPY_FLOAT64, 0, nullptr, five), TK_OK);
    tk_npy_array a;
    ASSERT_EQ(tk_npy_read(path.c_str(), &a), TK_OK);
    EXPECT_EQ(a.ndim, 0);
    EXPECT_EQ(a.count, 1u);
    tk_npy_free(&a);
}

TEST(Npy, ReadsVersions2And3AndBigEndian)
{
    auto dir = make_temp_dir("tk_npy");
    for (int major : {1, 2, 3}) {
        std::string path = dir + "/v.npy";
        write_file(path, npy_bytes(major, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", doubles({1.5, -2})));
        tk_npy_array a;
        ASSERT_EQ(tk_npy_read(path.c_str(), &a), TK_OK) << tk_last_error();
        EXPECT_EQ(((double *)a.data)[1], -2.0);
        tk_npy_free(&a);
    }
    const std::string be("\x3f\xf8\0\0\0\0\0\0", 8);  // 1.5 as a big-endian double
    std::string path = dir + "/be.npy";
    write_file(path, npy_bytes(1, "{\"descr\": \">f8\", \"fortran_order\": False, \"shape\": (1, )}", be));
    tk_npy_array a;
    ASSERT_EQ(tk_npy_read(path.c_str(), &a), TK_OK) << tk_last_error();
    EXPECT_EQ(((double *)a.data)[0], 1.5);
    tk_npy_free(&a);
}

TEST(Npy, MalformedFilesFailWithTheFileNamed)
{
    auto dir = make_temp_dir("tk_npy");
    struct Case {
        const char *name;
        std::string bytes;
        const char *message;
    };
    const std::string good = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
    std::vector<Case> cases = {
        {"empty", "", "empty file"},
        {"magic", "NOTNUMPY0123456789", "not a .npy file"},
        {"version", npy_bytes(9, good, doubles({1, 2})), "version"},
        {"truncated", npy_bytes(1, good, doubles({1})), "truncated"},
        {"trailing", npy_bytes(1, good, doubles({1, 2, 3})), "unexpected bytes"},
        {"fortran", npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", doubles({1, 2})), "Fortran"},
        {"object", npy_bytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", doubles({1, 2})), "dtype"},
        {"structured", npy_bytes(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", doubles({1, 2})),
         "structured"},
        {"huge", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", doubles({1})),
         "truncated"},
        {"overflow", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", ""),
         "overflow"},
        {"badshape", npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, x), }", doubles({1, 2})),
         "shape"},
        {"nokey", npy_bytes(1, "{'descr': '<f8', 'shape': (2,), }", doubles({1, 2})), "needs"},
        {"short header", std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 18), "truncated"},
    };
    for (const auto &c : cases) {
        std::string path = dir + "/" + c.name + ".npy";
        write_file(path, c.bytes);
        tk_npy_array a;
        EXPECT_NE(tk_npy_read(path.c_str(), &a), TK_OK) << c.name;
        EXPECT_NE(std::string(tk_last_error()).find(path), std::string::npos) << c.name << ": " << tk_last_error();
        EXPECT_NE(std::string(tk_last_error()).find(c.message), std::string::npos) << c.name << ": " << tk_last_error();
        EXPECT_EQ(a.data, nullptr);
    }
    tk_npy_array a;
    EXPECT_EQ(tk_npy_read((dir + "/missing.npy").c_str(), &a), TK_ERR_IO);
    EXPECT_NE(std::string(tk_last_error()).find("No such file"), std::string::npos);
    EXPECT_EQ(tk_npy_read(dir.c_str(), &a), TK_ERR_IO);
    EXPECT_NE(std::string(tk_last_error()).find("directory"), std::string::npos);
}

TEST(Npy, EveryTruncationOfAGoodFileIsRejected)
{
    auto dir = make_temp_dir("tk_npy");
    std::string bytes = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", std::string(24, '\1'));
    for (size_t cut = 0; cut < bytes.size(); ++cut) {
        tk_npy_array a;
        EXPECT_NE(tk_npy_parse(bytes.data(), cut, "mem", &a), TK_OK) << cut;
    }
    tk_npy_array a;
    ASSERT_EQ(tk_npy_parse(bytes.data(), bytes.size(), "mem", &a), TK_OK);
    tk_npy_free(&a);
}

TEST(Npy, FailedWriteLeavesNothingBehind)
{
    auto dir = make_temp_dir("tk_npy");
    double v = 1;
    size_t one = 1;
    std::string path = dir + "/missing/sub/out.npy";
    EXPECT_EQ(tk_npy_write(path.c_str(), TK_NPY_FLOAT64, 1, &one, &v), TK_ERR_IO);
    EXPECT_NE(std::string(tk_last_error()).find(path), std::string::npos);
    struct stat st;
    EXPECT_NE(stat((dir + "/missing").c_str(), &st), 0);
}
