// The image formats' own code (tools/io): MRtrix3's .mif reader and writer (mif_io) and
// the NIfTI header's geometry (nifti_header).  Files are written here byte by byte, so the
// reader is checked against the format as documented (MRtrix3's image_data.rst), not
// against our writer; Testing/cli/fibers_io.py checks both against mrconvert and mrinfo.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "mif_io.h"
#include "mif_test_util.h"
#include "nifti_header.h"
#include "tk_cli_runner.h"
#include "tk_message_style.h"
#include "tk_status.h"

using namespace tk_test;

namespace {

template <typename T> std::string raw(T v, bool big)
{
    std::string b(sizeof v, '\0');
    std::memcpy(&b[0], &v, sizeof v);
    if (big) b.assign(b.rbegin(), b.rend());
    return b;
}

// The value at index (i, j, k) of the test images.
float value(size_t i, size_t j, size_t k) { return static_cast<float>(i + 10 * j + 100 * k); }

struct Read {
    bool ok;
    tk_mif_header h;
    std::vector<float> data;
    std::string error;
};

Read read_mif(const std::string &path)
{
    Read r;
    float *data = nullptr;
    r.ok = tk_mif_read_header(path.c_str(), &r.h) && tk_mif_read_data(path.c_str(), &r.h, &data);
    if (r.ok) r.data.assign(data, data + tk_mif_count(&r.h));
    else r.error = tk_last_error();
    std::free(data);
    return r;
}

const size_t kDim[3] = {3, 2, 4};

}  // namespace

// Each layout stores the same image in another order: the reader gives it back in index
// order whatever the order on file.
TEST(MifIo, ReadsEveryLayout)
{
    const std::string dir = make_temp_dir("tk_mif_layout");
    struct Layout {
        const char *text;
        int rank[3];
        bool reversed[3];
    };
    const Layout layouts[] = {{"+0,+1,+2", {0, 1, 2}, {false, false, false}},
                              {"-0,+1,+2", {0, 1, 2}, {true, false, false}},
                              {"+2,+0,+1", {2, 0, 1}, {false, false, false}},
                              {"-1,+2,-0", {1, 2, 0}, {true, false, true}}};
    for (const Layout &l : layouts) {
        // storage order: the axis of rank 0 fastest, each axis from its end where reversed
        int axis_of_rank[3];
        for (int a = 0; a < 3; ++a) axis_of_rank[l.rank[a]] = a;
        std::string data;
        size_t pos[3];
        for (pos[2] = 0; pos[2] < kDim[axis_of_rank[2]]; ++pos[2])
            for (pos[1] = 0; pos[1] < kDim[axis_of_rank[1]]; ++pos[1])
                for (pos[0] = 0; pos[0] < kDim[axis_of_rank[0]]; ++pos[0]) {
                    size_t idx[3];
                    for (int r = 0; r < 3; ++r) {
                        const int a = axis_of_rank[r];
                        idx[a] = l.reversed[a] ? kDim[a] - 1 - pos[r] : pos[r];
                    }
                    data += raw(value(idx[0], idx[1], idx[2]), false);
                }
        const std::string path = dir + "/image.mif";
        write_file(path, mif_file(std::string("dim: 3,2,4\nvox: 1,1,1\nlayout: ") + l.text +
                                  "\ndatatype: Float32LE\n", data));
        Read r = read_mif(path);
        ASSERT_TRUE(r.ok) << l.text << ": " << r.error;
        ASSERT_EQ(r.data.size(), 24u);
        for (size_t k = 0; k < 4; ++k)
            for (size_t j = 0; j < 2; ++j)
                for (size_t i = 0; i < 3; ++i)
                    EXPECT_EQ(r.data[i + 3 * (j + 2 * k)], value(i, j, k)) << l.text << " at " << i << "," << j << "," << k;
    }
}

TEST(MifIo, ReadsEveryDatatypeWithScaling)
{
    const std::string dir = make_temp_dir("tk_mif_types");
    const std::string path = dir + "/image.mif";
    const int n = 24;
    auto check = [&](const std::string &type, const std::string &data, double offset, double scale,
                     auto expected) {
        write_file(path, mif_file("dim: 3,2,4\nvox: 2,2,2\nlayout: +0,+1,+2\ndatatype: " + type + "\nscaling: " +
                                      std::to_string(offset) + "," + std::to_string(scale) + "\n",
                                  data));
        Read r = read_mif(path);
        ASSERT_TRUE(r.ok) << type << ": " << r.error;
        for (int v = 0; v < n; ++v) EXPECT_FLOAT_EQ(r.data[v], offset + scale * expected(v)) << type << " value " << v;
    };
    std::string i8, u8, i16be, u16le, i32be, u32, i64le, u64be, f32be, f64le, bits(3, '\0');
    for (int v = 0; v < n; ++v) {
        i8 += raw<int8_t>(static_cast<int8_t>(v - 12), false);
        u8 += raw<uint8_t>(static_cast<uint8_t>(200 + v), false);
        i16be += raw<int16_t>(static_cast<int16_t>(-1000 * v), true);
        u16le += raw<uint16_t>(static_cast<uint16_t>(60000 + v), false);
        i32be += raw<int32_t>(-100000 * v, true);
        u32 += raw<uint32_t>(4000000000u + static_cast<uint32_t>(v), false);
        i64le += raw<int64_t>(-(int64_t(1) << 40) + v, false);
        u64be += raw<uint64_t>(uint64_t(v) << 20, true);
        f32be += raw<float>(0.5f * static_cast<float>(v) - 3, true);
        f64le += raw<double>(-0.25 * v, false);
        if (v % 3 == 0) bits[v / 8] = static_cast<char>(bits[v / 8] | (0x80 >> (v % 8)));  // MSB first
    }
    check("Int8", i8, 0, 1, [](int v) { return v - 12; });
    check("UInt8", u8, 1, 2, [](int v) { return 200 + v; });
    check("Int16BE", i16be, 0, 0.5, [](int v) { return -1000 * v; });
    check("UInt16LE", u16le, -5, 1, [](int v) { return 60000 + v; });
    check("Int32BE", i32be, 0, 1, [](int v) { return -100000.0 * v; });
    check("UInt32", u32, 0, 1, [](int v) { return 4000000000.0 + v; });
    check("Int64LE", i64le, 0, 1, [](int v) { return -1099511627776.0 + v; });
    check("uint64be", u64be, 0, 1, [](int v) { return double(uint64_t(v) << 20); });
    check("Float32BE", f32be, 0, 1, [](int v) { return 0.5 * v - 3; });
    check("Float64", f64le, 0, 1, [](int v) { return -0.25 * v; });
    check("Bit", bits, 0, 1, [](int v) { return v % 3 == 0 ? 1.0 : 0.0; });
}

TEST(MifIo, GeometryAsMRtrix3MeansIt)
{
    const std::string dir = make_temp_dir("tk_mif_geometry");
    const std::string data(24 * 4, '\0');
    tk_mif_header h;
    // no transform: axis-aligned, centred on the origin
    write_file(dir + "/a.mif", mif_file("dim: 3,2,4\nvox: 2,3,4\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data));
    ASSERT_TRUE(tk_mif_read_header((dir + "/a.mif").c_str(), &h)) << tk_last_error();
    EXPECT_DOUBLE_EQ(h.transform[0][3], -2.0);
    EXPECT_DOUBLE_EQ(h.transform[1][3], -1.5);
    EXPECT_DOUBLE_EQ(h.transform[2][3], -6.0);
    EXPECT_DOUBLE_EQ(h.transform[0][0], 1.0);
    // columns not of unit length: normalised, the voxel sizes scaled to match (MRtrix3's sanitise)
    write_file(dir + "/b.mif", mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n"
                                        "transform: 0,2,0,5\ntransform: -2,0,0,6\ntransform: 0,0,3,7\n# a comment\n",
                                        data));
    ASSERT_TRUE(tk_mif_read_header((dir + "/b.mif").c_str(), &h)) << tk_last_error();
    EXPECT_DOUBLE_EQ(h.vox[0], 2.0);
    EXPECT_DOUBLE_EQ(h.vox[2], 3.0);
    EXPECT_DOUBLE_EQ(h.transform[1][0], -1.0);
    EXPECT_DOUBLE_EQ(h.transform[0][1], 1.0);
    EXPECT_DOUBLE_EQ(h.transform[2][3], 7.0);
    // a .mih and its data file beside it; the header may end without END there
    write_file(dir + "/c.mih", "mrtrix image\ndim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n"
                               "file: c.dat 8\n");
    std::string values(8, '\0');
    for (size_t v = 0; v < 24; ++v) values += raw(static_cast<float>(v), false);
    write_file(dir + "/c.dat", values);
    Read r = read_mif(dir + "/c.mih");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.data[23], 23.0f);
    // .mif.gz: the whole file compressed
    const std::string whole = mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: -0,+1,+2\ndatatype: Float32LE\n",
                                       values.substr(8));
    gzFile g = gzopen((dir + "/d.mif.gz").c_str(), "wb");
    gzwrite(g, whole.data(), static_cast<unsigned>(whole.size()));
    gzclose(g);
    r = read_mif(dir + "/d.mif.gz");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.data[0], 2.0f);  // stored right to left
    EXPECT_EQ(r.data[2], 0.0f);
}

// Bad headers and data: a message naming the file and the problem, never a crash.
TEST(MifIo, RefusesMalformedFilesClearly)
{
    const std::string dir = make_temp_dir("tk_mif_bad");
    const std::string data(24 * 4, '\0'), ok = "dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n";
    struct Case {
        std::string bytes, says;
    };
    std::string huge_header = "mrtrix image\n";
    while (huge_header.size() < (17u << 20)) huge_header += "comments: " + std::string(1000, 'x') + "\n";
    const std::vector<Case> cases = {
        {"", "empty file"},
        {"MRTRIX IMAGE\n" + ok + "file: . 200\nEND\n", "not a .mif file"},
        {"mrtrix image\n" + ok, "no END line"},
        {"mrtrix image\n" + ok + "file: . 100\n", "no END line (the file ends in the header)"},
        {huge_header, "no END line in the first 16 MiB"},
        {"mrtrix image\n" + ok + "file: . 100\n" + std::string(2u << 20, 'y') + "\nEND\n", "longer than 1 MiB"},
        {std::string("mrtrix image\ndim: 3,2\0,4\n", 25) + "END\n", "binary data before the END line"},
        {mif_file("vox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "no 'dim' entry"},
        {mif_file("dim: 3,0,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "not a list of sizes of 1 or more"},
        {mif_file("dim: 3,-2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "not a list of sizes"},
        {mif_file("dim: 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\nvox: 1,1,1\nlayout: +0\ndatatype: Float32LE\n", data),
         "more than 16 axes"},
        {mif_file("dim: 3,2,4\ndim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "two 'dim' entries"},
        {mif_file("dim: 3,2,4\nvox: 1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "vox has 2 values for 3 axes"},
        {mif_file("dim: 3,2,4\nvox: 1,-1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "spatial axis 1"},
        {mif_file("dim: 3,2,4\nvox: 1,nan,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data), "spatial axis 1"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1\ndatatype: Float32LE\n", data), "layout has 2 entries for 3 axes"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+1\ndatatype: Float32LE\n", data), "rank 1 is given to two axes"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+5\ndatatype: Float32LE\n", data), "outside 0..2"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: 0,1,x\ndatatype: Float32LE\n", data), "signed axis ranks"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float16\n", data), "datatype 'Float16' is none of"},
        {mif_file("dim: 3,2,4\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: CFloat32\n", data), "complex data"},
        {mif_file(ok + "transform: 1,0,0,0\ntransform: 0,1,0,0\n", data), "'transform' needs 3 rows"},
        {mif_file(ok + "transform: 1,0,0\n", data), "not a row of 4 numbers"},
        {mif_file(ok + "transform: 1,0,0,inf\n", data), "4 finite numbers"},
        {mif_file(ok + "transform: 1,0,0,0\ntransform: 0,1,0,0\ntransform: 0,0,1,0\ntransform: 0,0,1,0\n", data),
         "a 4th may only be 0,0,0,1"},
        {mif_file(ok + "transform: 0,0,0,0\ntransform: 0,1,0,0\ntransform: 0,0,1,0\n", data), "column 0 is zero"},
        {mif_file(ok + "scaling: 2\n", data), "'offset,scale'"},
        {mif_file(ok + "this line has no colon\n", data), "no 'key: value' entry"},
        {mif_file(ok + ": 3\n", data), "no key before its ':'"},
        {mif_file(ok + "dim:\n", data), "'dim:' has no value"},
        {mif_file(ok + "file: other.dat\n", data), "several files"},
        {"mrtrix image\n" + ok + "file: . 10\nEND\n" + data, "lies inside the header"},
        {"mrtrix image\n" + ok + "file: . 1x\nEND\n" + data, "not a whole number of bytes"},
        {"mrtrix image\n" + ok + "file:  \nEND\n" + data, "'file:' has no value"},
        {mif_file(ok, data.substr(0, 50)), "truncated: the header claims 96 bytes of data"},
        {mif_file(ok, data + "junk"), "4 bytes after the data that the header does not account for"},
        {mif_file("dim: 4294967296,4294967296,4294967296\nvox: 1,1,1\nlayout: +0,+1,+2\ndatatype: Float32LE\n", data),
         "overflows"},
        {"mrtrix image\n" + ok + "file: missing.dat\n", "cannot open its data file"},
    };
    int k = 0;
    for (const Case &c : cases) {
        const std::string path = dir + "/bad" + std::to_string(k++) + ".mif";
        write_file(path, c.bytes);
        Read r = read_mif(path);
        EXPECT_FALSE(r.ok) << c.says;
        EXPECT_EQ(r.error.rfind(path, 0), 0u) << "the message names the file: " << r.error;
        EXPECT_NE(r.error.find(c.says), std::string::npos) << "expected '" << c.says << "' in: " << r.error;
        EXPECT_TRUE(tk_message_advises(r.error.c_str())) << "no advice: " << r.error;
    }
    // a directory, a missing file, a truncated gzip stream, a .mif.gz naming another file
    Read r = read_mif(dir);
    EXPECT_NE(r.error.find("is a directory"), std::string::npos) << r.error;
    r = read_mif(dir + "/missing.mif");
    EXPECT_NE(r.error.find("cannot open: No such file or directory"), std::string::npos) << r.error;
    std::string noise(96, '\0');  // data that does not compress: the cut falls in it
    for (size_t i = 0, x = 12345; i < noise.size(); ++i) x = x * 1103515245 + 12345, noise[i] = static_cast<char>(x >> 16);
    const std::string whole = mif_file(ok, noise);
    gzFile g = gzopen((dir + "/cut.mif.gz").c_str(), "wb");
    gzwrite(g, whole.data(), static_cast<unsigned>(whole.size()));
    gzclose(g);
    std::string gz;
    {
        std::ifstream f(dir + "/cut.mif.gz", std::ios::binary);
        gz.assign(std::istreambuf_iterator<char>(f), {});
    }
    write_file(dir + "/cut.mif.gz", gz.substr(0, gz.size() - 30));
    r = read_mif(dir + "/cut.mif.gz");
    EXPECT_NE(r.error.find("truncated"), std::string::npos) << r.error;
    const std::string named = "mrtrix image\n" + ok + "file: other.dat\nEND\n";
    g = gzopen((dir + "/named.mif.gz").c_str(), "wb");
    gzwrite(g, named.data(), static_cast<unsigned>(named.size()));
    gzclose(g);
    r = read_mif(dir + "/named.mif.gz");
    EXPECT_NE(r.error.find("must hold its data"), std::string::npos) << r.error;
}

// The writer's files read back as written (layout, voxel sizes, transform, values; gzip).
TEST(MifIo, WritesWhatItReads)
{
    const std::string dir = make_temp_dir("tk_mif_write");
    const size_t dim[4] = {3, 2, 4, 5};
    tk_mif_header h;
    tk_mif_header_init(&h, 4, dim);
    const int layout[4] = {2, 3, 4, 1};  // +1,+2,+3,+0: volumes fastest
    std::copy(layout, layout + 4, h.layout);
    const double vox[4] = {1.5, 2, 2.5, 1};
    std::copy(vox, vox + 4, h.vox);
    const double c = std::cos(0.3), s = std::sin(0.3);
    const double t[3][4] = {{c, -s, 0, -10}, {s, c, 0, 20.5}, {0, 0, -1, 7}};
    std::memcpy(h.transform, t, sizeof t);
    std::vector<float> data(120);
    for (size_t v = 0; v < 24; ++v)
        for (size_t q = 0; q < 5; ++q) data[v * 5 + q] = static_cast<float>(v) + 0.125f * q;
    for (int gzip : {0, 1}) {
        h.gzip = gzip;
        const std::string path = dir + (gzip ? "/w.mif.gz" : "/w.mif");
        ASSERT_TRUE(tk_mif_write(path.c_str(), &h, data.data())) << tk_last_error();
        Read r = read_mif(path);
        ASSERT_TRUE(r.ok) << r.error;
        EXPECT_EQ(r.h.ndim, 4);
        for (int a = 0; a < 4; ++a) EXPECT_EQ(r.h.layout[a], layout[a]);
        for (int a = 0; a < 3; ++a) EXPECT_DOUBLE_EQ(r.h.vox[a], vox[a]);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 4; ++j) EXPECT_DOUBLE_EQ(r.h.transform[i][j], t[i][j]);
        for (size_t v = 0; v < 24; ++v)
            for (size_t q = 0; q < 5; ++q) EXPECT_EQ(r.data[v + 24 * q], data[v * 5 + q]);
    }
    // tk-bench's exchange with sh2peaks
    size_t back[4];
    float *values = nullptr;
    const size_t bench_dim[4] = {24, 1, 1, 5};
    ASSERT_TRUE(tk_mif_write_f32((dir + "/bench.mif").c_str(), bench_dim, data.data()));
    ASSERT_TRUE(tk_mif_read_f32((dir + "/bench.mif").c_str(), back, &values)) << tk_last_error();
    EXPECT_EQ(back[0], 24u);
    EXPECT_EQ(back[3], 5u);
    EXPECT_EQ(0, std::memcmp(values, data.data(), data.size() * sizeof(float)));
    std::free(values);
    // refused: a layout that is no permutation
    h.layout[3] = 2;
    EXPECT_FALSE(tk_mif_write((dir + "/x.mif").c_str(), &h, data.data()));
    EXPECT_NE(std::string(tk_last_error()).find("layout"), std::string::npos);
}

// ---- NIfTI ------------------------------------------------------------------------------

namespace {

void rotation(double axis_x, double axis_y, double axis_z, double degrees, double r[3][3])
{
    const double n = std::sqrt(axis_x * axis_x + axis_y * axis_y + axis_z * axis_z), x = axis_x / n, y = axis_y / n,
                 z = axis_z / n, t = degrees * 3.14159265358979323846 / 180, c = std::cos(t), s = std::sin(t), C = 1 - c;
    const double m[3][3] = {{c + x * x * C, x * y * C - z * s, x * z * C + y * s},
                            {y * x * C + z * s, c + y * y * C, y * z * C - x * s},
                            {z * x * C - y * s, z * y * C + x * s, c + z * z * C}};
    std::memcpy(r, m, sizeof m);
}

}  // namespace

TEST(NiftiHeader, QformFromMatrixAndBack)
{
    double R[3][3], m[3][4], back[3][4];
    rotation(1, 2, 3, 140, R);  // a large angle: the quaternion's other branches
    const double zoom[3] = {1.5, 2, -2.5};  // a reflection: qfac -1
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) m[r][c] = R[r][c] * zoom[c];
        m[r][3] = 10.0 * (r + 1);
    }
    tk_nifti_header h{};
    tk_nifti_set_qform(&h, m, 1);
    EXPECT_EQ(h.qform_code, 1);
    EXPECT_EQ(h.pixdim[0], -1.0);
    EXPECT_DOUBLE_EQ(h.pixdim[3], 2.5);
    tk_nifti_qform_matrix(&h, back);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) EXPECT_NEAR(back[r][c], m[r][c], 1e-12) << r << "," << c;
    // a sheared matrix has no qform
    m[0][1] += 0.3;
    tk_nifti_set_qform(&h, m, 1);
    EXPECT_EQ(h.qform_code, 0);
}

// The NIfTI rule (nibabel, MRtrix3): the sform where sform_code > 0, else the qform where
// qform_code > 0, else pixdim; encoded and parsed back field for field.
TEST(NiftiHeader, WorldMatrixFollowsTheCodes)
{
    double R[3][3], q[3][4], s[3][4], m[3][4];
    rotation(0, 0, 1, 30, R);
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) q[r][c] = (r == c) * 2.0, s[r][c] = 2.0 * R[r][c];
        q[r][3] = -10.0 * r, s[r][3] = 5.0 + r;
    }
    tk_nifti_header h{};
    h.ndim = 4;
    h.dim[1] = 4, h.dim[2] = 3, h.dim[3] = 2, h.dim[4] = 45;
    tk_nifti_set_qform(&h, q, 1);
    std::memcpy(h.srow, s, sizeof s);
    h.sform_code = 2;
    h.xyzt_units = 10;
    unsigned char bytes[348];
    ASSERT_TRUE(tk_nifti1_encode_f32(&h, bytes)) << tk_last_error();
    tk_nifti_header back;
    ASSERT_EQ(tk_nifti_parse(bytes, sizeof bytes, &back, "test"), 1) << tk_last_error();
    EXPECT_EQ(back.version, 1);
    EXPECT_EQ(back.qform_code, 1);
    EXPECT_EQ(back.sform_code, 2);
    EXPECT_EQ(back.dim[4], 45);
    EXPECT_EQ(back.datatype, 16);
    EXPECT_EQ(back.vox_offset, 352.0);
    EXPECT_STREQ(tk_nifti_world_matrix(&back, m), "sform");
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) EXPECT_NEAR(m[r][c], s[r][c], 1e-6);
    back.sform_code = 0;
    EXPECT_STREQ(tk_nifti_world_matrix(&back, m), "qform");
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) EXPECT_NEAR(m[r][c], q[r][c], 1e-6);
    back.qform_code = 0;
    EXPECT_STREQ(tk_nifti_world_matrix(&back, m), "pixdim");
    EXPECT_DOUBLE_EQ(m[1][1], 2.0);
    EXPECT_DOUBLE_EQ(m[0][3], 0.0);
    // a NaN in the sform its code selects: refused, naming what; ignored where the code is 0
    h.srow[1][2] = NAN;
    ASSERT_TRUE(tk_nifti1_encode_f32(&h, bytes));
    EXPECT_EQ(tk_nifti_parse(bytes, sizeof bytes, &back, "f.nii"), -1);
    EXPECT_NE(std::string(tk_last_error()).find("f.nii: NIfTI header: the sform holds nan"), std::string::npos)
        << tk_last_error();
    h.sform_code = 0;
    ASSERT_TRUE(tk_nifti1_encode_f32(&h, bytes));
    EXPECT_EQ(tk_nifti_parse(bytes, sizeof bytes, &back, "f.nii"), 1);
    // not NIfTI at all
    unsigned char text[348] = "not a header";
    EXPECT_EQ(tk_nifti_parse(text, sizeof text, &back, "t.nii"), 0);
    // sizes beyond NIfTI-1's 16 bits
    h.dim[1] = 40000;
    EXPECT_FALSE(tk_nifti1_encode_f32(&h, bytes));
}
