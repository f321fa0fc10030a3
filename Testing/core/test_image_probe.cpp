// The image inputs' recogniser and validator (tools/io/image_probe.c and its per-format
// checks): files are written here byte by byte as the formats define them (NIfTI-1/2,
// NRRD, MetaImage; gzip through zlib), so the checks are measured against the formats,
// not against a reader.  The properties are those the tools rely on:
//   - every accepted layout (single file, pair, attached, detached, raw, gzip, zlib) is
//     accepted with the shape its header gives, whatever the file's name;
//   - every byte counts: each proper prefix of a valid file (of a detached header's data
//     file) is refused, as is any byte appended to one;
//   - a refusal names the file and says what is wrong.
#include <gtest/gtest.h>
#include <zlib.h>
#ifdef TK_TEST_BZIP2
#include <bzlib.h>
#endif

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "image_probe.h"
#include "mif_test_util.h"
#include "tk_cli_runner.h"
#include "tk_message_style.h"
#include "tk_status.h"

using namespace tk_test;

namespace {

template <typename T> void put(std::string &b, size_t at, T v) { std::memcpy(&b[at], &v, sizeof v); }

std::string floats(size_t n)
{
    std::string b(n * 4, '\0');
    for (size_t k = 0; k < n; ++k) put(b, 4 * k, static_cast<float>(0.25 * k));
    return b;
}

// A little-endian NIfTI-1 header (348 bytes) of float32 data, dims x y z t.
std::string nifti1(const std::vector<int16_t> &dims, bool pair)
{
    std::string h(348, '\0');
    put<int32_t>(h, 0, 348);
    put<int16_t>(h, 40, static_cast<int16_t>(dims.size()));
    for (size_t k = 0; k < 7; ++k) put<int16_t>(h, 42 + 2 * k, k < dims.size() ? dims[k] : 1);
    put<int16_t>(h, 70, 16);
    put<int16_t>(h, 72, 32);
    for (int k = 0; k < 8; ++k) put<float>(h, 76 + 4 * k, 1.0f);
    put<float>(h, 108, pair ? 0.0f : 352.0f);
    put<float>(h, 112, 1.0f);
    std::memcpy(&h[344], pair ? "ni1" : "n+1", 4);
    return h;
}

std::string nifti2(const std::vector<int64_t> &dims)
{
    std::string h(540, '\0');
    put<int32_t>(h, 0, 540);
    std::memcpy(&h[4], "n+2\0\r\n\032\n", 8);
    put<int16_t>(h, 12, 16);
    put<int16_t>(h, 14, 32);
    put<int64_t>(h, 16, static_cast<int64_t>(dims.size()));
    for (size_t k = 0; k < 7; ++k) put<int64_t>(h, 24 + 8 * k, k < dims.size() ? dims[k] : 1);
    for (int k = 0; k < 8; ++k) put<double>(h, 104 + 8 * k, 1.0);
    put<int64_t>(h, 168, 544);
    put<double>(h, 176, 1.0);
    return h + std::string(4, '\0');
}

std::string deflate(const std::string &data, int window_bits)
{
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, data.size()) + 32, '\0');
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef *>(&out[0]);
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}
std::string gzip(const std::string &data) { return deflate(data, 15 + 16); }
std::string zlib(const std::string &data) { return deflate(data, 15); }

#ifdef TK_TEST_BZIP2
std::string bzip2(const std::string &data)
{
    std::string out(data.size() + data.size() / 100 + 700, '\0');
    unsigned n = static_cast<unsigned>(out.size());
    EXPECT_EQ(BZ2_bzBuffToBuffCompress(&out[0], &n, const_cast<char *>(data.data()), static_cast<unsigned>(data.size()),
                                       9, 0, 0),
              BZ_OK);
    out.resize(n);
    return out;
}
#endif

// The floats of floats(n) as NRRD ascii text, one decimal each (0.25 k is exact in decimal).
std::string ascii_floats(size_t n, const char *separator)
{
    std::string t;
    for (size_t k = 0; k < n; ++k) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", 0.25 * static_cast<double>(k));
        t += (k ? separator : "") + std::string(b);
    }
    return t;
}

std::string hex(const std::string &bytes)
{
    static const char digits[] = "0123456789abcdef";
    std::string t;
    for (unsigned char c : bytes) t += std::string(1, digits[c >> 4]) + digits[c & 15];
    return t;
}

struct Layout {
    const char *name;      // the test's label
    std::string file;      // the file probed
    std::string bytes;     // its bytes
    std::string data_file; // a second file ("" none)
    std::string data;      // its bytes
    int axes;
    std::vector<uint64_t> size;
    uint64_t components;
    bool prefixes_of_data;  // the property applies to the data file (detached layouts)
    bool text = false;      // NRRD ascii or hex: white space may follow, and a cut value may still be a value
};

std::vector<Layout> layouts(const std::string &dir)
{
    const std::string nrrd_head = "NRRD0004\ntype: float\ndimension: 4\nsizes: 3 2 2 1\n"
                                  "kinds: vector domain domain domain\nencoding: raw\nendian: little\n"
                                  "space: left-posterior-superior\nspace directions: none (1,0,0) (0,1,0) (0,0,1.5)\n"
                                  "space origin: (0,0,0)\nspacings: nan 1 1 1.5\n";
    std::string nrrd_gz_head = nrrd_head;
    nrrd_gz_head.replace(nrrd_gz_head.find("encoding: raw"), 13, "encoding: gzip");
    auto encoded = [&](const char *encoding) {
        std::string h = nrrd_head;
        return h.replace(h.find("encoding: raw"), 13, std::string("encoding: ") + encoding);
    };
    const std::string ascii_head = encoded("ascii"), text_head = encoded("text"), hex_head = encoded("hex"),
                      bz_head = encoded("bzip2"), bz2_head = encoded("bz2");
    const std::string mha_head = "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
                                 "TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 1 1 1\n"
                                 "DimSize = 2 2 1\nElementNumberOfChannels = 3\nElementType = MET_FLOAT\n";
    const std::string data = floats(12), packed = zlib(data);
    const std::string mif_lines = "dim: 3,2,2\nvox: 1,1,1.5\nlayout: +0,+1,+2\ndatatype: Float32LE\n";
    std::vector<Layout> v = {
        {"nii",
         dir + "/a.nii",
         nifti1({2, 2, 1, 3}, false) + std::string(4, '\0') + data,
         "",
         "",
         4,
         {2, 2, 1, 3},
         1,
         false},
        {"nii.gz named .dat",
         dir + "/b.dat",
         gzip(nifti1({2, 2, 1, 3}, false) + std::string(4, '\0') + data),
         "",
         "",
         4,
         {2, 2, 1, 3},
         1,
         false},
        {"NIfTI-2", dir + "/c.nii", nifti2({3, 2, 2}) + data, "", "", 3, {3, 2, 2}, 1, false},
        {"pair", dir + "/d.hdr", nifti1({3, 2, 2}, true), dir + "/d.img", data, 3, {3, 2, 2}, 1, true},
        {"NRRD raw", dir + "/e.nrrd", nrrd_head + "\n" + data, "", "", 4, {3, 2, 2, 1}, 1, false},
        {"NRRD gzip", dir + "/f.nrrd", nrrd_gz_head + "\n" + gzip(data), "", "", 4, {3, 2, 2, 1}, 1, false},
        {"NRRD detached",
         dir + "/g.nhdr",
         nrrd_head + "data file: g.raw\n",
         dir + "/g.raw",
         data,
         4,
         {3, 2, 2, 1},
         1,
         true},
        {"MetaImage raw",
         dir + "/h.mha",
         mha_head + "ElementDataFile = LOCAL\n" + data,
         "",
         "",
         3,
         {2, 2, 1},
         3,
         false},
        {"MetaImage zlib",
         dir + "/i.mha",
         mha_head + "CompressedData = True\nCompressedDataSize = " + std::to_string(packed.size()) +
             "\nElementDataFile = LOCAL\n" + packed,
         "",
         "",
         3,
         {2, 2, 1},
         3,
         false},
        {"MetaImage detached",
         dir + "/j.mhd",
         mha_head + "ElementDataFile = j.raw\n",
         dir + "/j.raw",
         data,
         3,
         {2, 2, 1},
         3,
         true},
        {"NRRD ascii",
         dir + "/n.nrrd",
         ascii_head + "\n" + ascii_floats(12, " "),
         "",
         "",
         4,
         {3, 2, 2, 1},
         1,
         false,
         true},
        {"NRRD text, commas beside values, detached",
         dir + "/o.nhdr",
         text_head + "data file: o.txt\n",
         dir + "/o.txt",
         ascii_floats(12, ",\n "),
         4,
         {3, 2, 2, 1},
         1,
         true,
         true},
        {"NRRD hex",
         dir + "/p.nrrd",
         hex_head + "\n" + hex(data.substr(0, 20)) + "\n  " + hex(data.substr(20)),
         "",
         "",
         4,
         {3, 2, 2, 1},
         1,
         false,
         true},
#ifdef TK_TEST_BZIP2
        {"NRRD bzip2", dir + "/q.nrrd", bz_head + "\n" + bzip2(data), "", "", 4, {3, 2, 2, 1}, 1, false},
        {"NRRD bz2, two streams, detached",
         dir + "/r.nhdr",
         bz2_head + "data file: r.raw.bz2\n",
         dir + "/r.raw.bz2",
         bzip2(data.substr(0, 13)) + bzip2(data.substr(13)),
         4,
         {3, 2, 2, 1},
         1,
         true},
#endif
        {"MRtrix3 .mif", dir + "/k.mif", mif_file(mif_lines, data), "", "", 3, {3, 2, 2}, 1, false},
        {"MRtrix3 .mif.gz named .nii", dir + "/l.nii", gzip(mif_file(mif_lines, data)), "", "", 3, {3, 2, 2}, 1, false},
        {"MRtrix3 .mih",
         dir + "/m.mih",
         "mrtrix image\n" + mif_lines + "file: m.dat 4\nEND\n",
         dir + "/m.dat",
         std::string(4, '\0') + data,
         3,
         {3, 2, 2},
         1,
         true},
    };
    return v;
}

void write_layout(const Layout &l)
{
    write_file(l.file, l.bytes);
    if (!l.data_file.empty()) write_file(l.data_file, l.data);
}

}  // namespace

TEST(ImageProbe, AcceptsEveryLayoutWithItsShapeWhateverItsName)
{
    const std::string dir = make_temp_dir("tk_probe_ok");
    for (const Layout &l : layouts(dir)) {
        SCOPED_TRACE(l.name);
        write_layout(l);
        tk_image_info info;
        ASSERT_EQ(tk_image_probe(l.file.c_str(), &info), 1) << tk_last_error();
        EXPECT_EQ(info.axes, l.axes);
        for (int k = 0; k < l.axes; ++k) EXPECT_EQ(info.size[k], l.size[k]) << "axis " << k;
        EXPECT_EQ(info.components, l.components);
        EXPECT_EQ(info.bytes, 48u);
    }
}

TEST(ImageProbe, EveryPrefixAndEveryAppendedByteIsRefused)
{
    const std::string dir = make_temp_dir("tk_probe_cut");
    for (const Layout &l : layouts(dir)) {
        if (l.text) continue;  // EncodedNrrdText
        SCOPED_TRACE(l.name);
        write_layout(l);
        const std::string &whole = l.prefixes_of_data ? l.data : l.bytes;
        const std::string &target = l.prefixes_of_data ? l.data_file : l.file;
        for (size_t n = 1; n < whole.size(); ++n) {
            write_file(target, whole.substr(0, n));
            tk_image_info info;
            ASSERT_EQ(tk_image_probe(l.file.c_str(), &info), 0) << "a prefix of " << n << " of " << whole.size()
                                                                 << " bytes was accepted";
            EXPECT_EQ(std::string(tk_last_error()).rfind(dir, 0), 0u) << tk_last_error();
            EXPECT_TRUE(tk_message_advises(tk_last_error())) << "no advice: " << tk_last_error();
        }
        for (const char *tail : {"\n", "\0", "junk"}) {
            write_file(target, whole + std::string(tail, std::max<size_t>(1, std::strlen(tail))));
            tk_image_info info;
            EXPECT_EQ(tk_image_probe(l.file.c_str(), &info), 0) << "a tail was accepted";
        }
        write_layout(l);
    }
}

TEST(ImageProbe, GzipClaimsBeyondDeflatesReachAreRefusedBeforeInflating)
{
    const std::string dir = make_temp_dir("tk_probe_claim");
    // 1000 x 1000 x 1500 float32 (6 GB) in a gzip file of a few dozen bytes
    std::string h = nifti1({1000, 1000, 1500}, false) + std::string(4, '\0');
    write_file(dir + "/claim.nii.gz", gzip(h));
    tk_image_info info;
    ASSERT_EQ(tk_image_probe((dir + "/claim.nii.gz").c_str(), &info), 0);
    EXPECT_NE(std::string(tk_last_error()).find("cannot inflate to more than"), std::string::npos) << tk_last_error();
}

TEST(ImageProbe, RefusalsSayWhatIsWrong)
{
    const std::string dir = make_temp_dir("tk_probe_why");
    const std::string data = floats(12);
    std::string nan_sform = nifti1({3, 2, 2}, false);
    put<int16_t>(nan_sform, 254, 1);
    put<float>(nan_sform, 280, std::nanf(""));
    std::string neg = nifti1({3, 2, 2}, false);
    put<int16_t>(neg, 44, -3);
    std::string analyze = nifti1({3, 2, 2}, false);
    std::memset(&analyze[344], 0, 4);
    const struct {
        const char *name, *bytes_note;
        std::string bytes, expect;
    } cases[] = {
        {"x.NII", "", nan_sform + std::string(4, '\0') + data, "the sform holds nan"},
        {"x.nii", "", neg + std::string(4, '\0') + data, "dim[2] is -3"},
        {"x.hdr", "", analyze, "ANALYZE 7.5"},
        {"x.mha", "", "ObjectType = Image\nNDims : 3\n", "uses ':'"},
        {"x.mha", "", "ObjectType = Image\nNDims = 3\njunk\nElementDataFile = LOCAL\n",
         "line 3 is not a 'Key = Value'"},
        {"x.mha", "", "NDims = -5\n", "NDims '-5' is not from 1 to 5"},
        {"x.mhd", "", "NDims = 1\nDimSize = 2\nElementType = MET_UCHAR\nElementDataFile = s%03d.raw 1 2 1\n",
         "slice file 1 of 2, " + dir + "/s001.raw, cannot be opened: No such file or directory"},
        {"x.nrrd", "", "NRRD0004\ntype: float\ndimension: 10\n", "dimension '10' is not from 1 to 5"},
        {"x.nrrd", "", "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nencoding: zrl\n\n1 2\n",
         "encoding 'zrl' is none of raw, gzip (gz), ascii (text, txt), hex, bzip2 (bz2)"},
        {"x.nrrd", "", "NRRD0004\ntype: uchar\ndimension: 1\nsizes: 2\nencoding: ascii\n\n1 300\n", "'300'"},
        {"x.nrrd", "", "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nencoding: raw\nendian: little\nbogus: 1\n\n",
         "unknown field"},
        {"x.txt", "", "just some text\n", "not an image in a format the tools read"},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.expect);
        const std::string path = dir + "/" + c.name;
        write_file(path, c.bytes);
        tk_image_info info;
        ASSERT_EQ(tk_image_probe(path.c_str(), &info), 0);
        const std::string why = tk_last_error();
        EXPECT_EQ(why.rfind(path, 0), 0u) << why;
        EXPECT_NE(why.find(c.expect), std::string::npos) << why;
        EXPECT_TRUE(tk_message_advises(why.c_str())) << "no advice: " << why;
    }
}

// tk_image_read_data of an accepted own-read layout gives the data's bytes: floats(12).
TEST(ImageProbe, DecodedNrrdDataAreTheValuesWritten)
{
    const std::string dir = make_temp_dir("tk_probe_decode");
    const std::string data = floats(12);
    int decoded = 0;
    for (const Layout &l : layouts(dir)) {
        write_layout(l);
        tk_image_info info;
        ASSERT_EQ(tk_image_probe(l.file.c_str(), &info), 1) << l.name << ": " << tk_last_error();
        if (!info.own_read) continue;
        SCOPED_TRACE(l.name);
        ++decoded;
        std::string out(info.bytes, '\x55');
        ASSERT_EQ(tk_image_read_data(l.file.c_str(), &info, &out[0], info.bytes), 1) << tk_last_error();
        EXPECT_EQ(out, data);
        EXPECT_EQ(info.range_axis, 0);  // kinds: vector domain domain domain
    }
#ifdef TK_TEST_BZIP2
    EXPECT_EQ(decoded, 5);
#else
    EXPECT_EQ(decoded, 3);
#endif
}

// ascii and hex: a value cut from the end, or any byte that is not white space after the
// data, is refused; white space after them is what teem writes and is accepted.
TEST(ImageProbe, EncodedNrrdText)
{
    const std::string dir = make_temp_dir("tk_probe_text");
    for (const Layout &l : layouts(dir)) {
        if (!l.text) continue;
        SCOPED_TRACE(l.name);
        write_layout(l);
        const std::string &whole = l.prefixes_of_data ? l.data : l.bytes;
        const std::string &target = l.prefixes_of_data ? l.data_file : l.file;
        const bool is_hex = l.name == std::string("NRRD hex");
        tk_image_info info;
        // ascii: a cut inside the last value ("2.75" to "2.7") leaves a value, as text does;
        // every cut that drops a value must be refused
        const size_t last_value = is_hex ? whole.size() : whole.find_last_of(" \n,") + 1;
        for (size_t n = 1; n < whole.size(); ++n) {
            write_file(target, whole.substr(0, n));
            const int ok = tk_image_probe(l.file.c_str(), &info);
            if (n > last_value) {
                EXPECT_EQ(ok, 1) << "a cut inside the last value, still a value: " << n;
            } else {
                EXPECT_EQ(ok, 0) << "a prefix of " << n << " of " << whole.size() << " bytes was accepted";
                if (!ok) {
                    EXPECT_EQ(std::string(tk_last_error()).rfind(dir, 0), 0u) << tk_last_error();
                }
            }
        }
        for (const char *space : {"\n", " \t\r\n", "\n\n"}) {
            write_file(target, whole + space);
            EXPECT_EQ(tk_image_probe(l.file.c_str(), &info), 1) << tk_last_error();
        }
        for (const char *junk : {"x", "\n1", "\n-", "#", is_hex ? "0" : ",,2"}) {
            write_file(target, whole + junk);
            EXPECT_EQ(tk_image_probe(l.file.c_str(), &info), 0) << "a tail '" << junk << "' was accepted";
        }
        if (is_hex) {  // a NUL byte is no white space
            write_file(target, whole + std::string(1, '\0'));
            EXPECT_EQ(tk_image_probe(l.file.c_str(), &info), 0);
        }
        write_layout(l);
    }
}

// Every NRRD type from ascii and hex, values at the ends of each range, and what is refused:
// the bytes expected are written here from the values (this machine's order), not by a reader.
TEST(ImageProbe, NrrdAsciiAndHexValuesOfEveryType)
{
    const std::string dir = make_temp_dir("tk_probe_types"), path = dir + "/v.nrrd";
    auto nrrd = [&](const char *type, size_t n, const char *encoding, const char *endian, const std::string &body) {
        write_file(path, std::string("NRRD0005\ntype: ") + type + "\ndimension: 1\nsizes: " + std::to_string(n) +
                             "\nencoding: " + encoding + "\n" +
                             (endian ? std::string("endian: ") + endian + "\n" : "") + "\n" + body);
    };
    auto bytes_of = [](auto... v) {
        std::string b;
        for (auto x : {v...}) b.append(reinterpret_cast<const char *>(&x), sizeof x);
        return b;
    };
    auto decoded = [&]() {
        tk_image_info info;
        if (!tk_image_probe(path.c_str(), &info)) return std::string("refused: ") + tk_last_error();
        std::string out(info.bytes, '\0');
        if (!tk_image_read_data(path.c_str(), &info, &out[0], info.bytes))
            return std::string("unread: ") + tk_last_error();
        return out;
    };
    const struct {
        const char *type, *text;
        std::string want;
    } ok[] = {
        {"int8", "-128 127 +0", bytes_of(int8_t(-128), int8_t(127), int8_t(0))},
        {"uchar", "0 255 7", bytes_of(uint8_t(0), uint8_t(255), uint8_t(7))},
        {"short", "-32768 32767 -1", bytes_of(int16_t(-32768), int16_t(32767), int16_t(-1))},
        {"unsigned short", "0 65535 00012", bytes_of(uint16_t(0), uint16_t(65535), uint16_t(12))},
        {"int", "-2147483648 2147483647 5", bytes_of(int32_t(INT32_MIN), int32_t(INT32_MAX), int32_t(5))},
        {"uint32", "4294967295 0 1", bytes_of(uint32_t(4294967295u), uint32_t(0), uint32_t(1))},
        {"int64", "-9223372036854775808 9223372036854775807 -3", bytes_of(INT64_MIN, INT64_MAX, int64_t(-3))},
        {"ulonglong", "18446744073709551615 0 2", bytes_of(UINT64_MAX, uint64_t(0), uint64_t(2))},
        {"float", "3.4028235e38 -1.5e-3 1e-45", bytes_of(3.4028235e38f, -1.5e-3f, 1e-45f)},
        {"double", "1.7976931348623157e308 -0.1 2.5E-3", bytes_of(1.7976931348623157e308, -0.1, 2.5e-3)},
    };
    for (const auto &c : ok) {
        SCOPED_TRACE(std::string(c.type) + ": " + c.text);
        nrrd(c.type, 3, "ascii", nullptr, c.text);
        EXPECT_EQ(decoded(), c.want);
        nrrd(c.type, 3, "hex", "little", hex(c.want));  // this machine (x86, aarch64) is little-endian
        EXPECT_EQ(decoded(), c.want);
        std::string big;
        const size_t w = c.want.size() / 3;
        for (size_t v = 0; v < 3; ++v)
            big += std::string(c.want.rbegin() + static_cast<long>(c.want.size() - (v + 1) * w),
                               c.want.rbegin() + static_cast<long>(c.want.size() - v * w));
        nrrd(c.type, 3, "hex", "big", hex(big));
        EXPECT_EQ(decoded(), c.want);
    }
    const struct {
        const char *type, *text, *says;
    } bad[] = {
        {"int8", "-129 0 0", "'-129' at byte"},
        {"uchar", "0 256 0", "'256' at byte"},
        {"uchar", "0 -0 0", "'-0'"},
        {"short", "1 2 1.5", "'1.5'"},
        {"int", "1 2 0x10", "'0x10'"},
        {"uint", "1 2 -1", "'-1'"},
        {"int64", "9223372036854775808 0 0", "'9223372036854775808'"},
        {"uint64", "18446744073709551616 0 0", "'18446744073709551616'"},
        {"float", "1 2 3.5e38", "'3.5e38' at byte"},
        {"float", "1 2 nan", "'nan'"},
        {"double", "1 2 inf", "'inf'"},
        {"double", "1 2 1e309", "'1e309'"},
        {"double", "1 2 1,5", "'1,5'"},
        {"double", "1 2 .", "'.'"},
        {"double", "1 2", "truncated: NRRD ascii data of 2 values, the header claims 3"},
        {"double", "1 2 3 4", "more values than the header's 3"},
        {"double", "1 2 3 #", "more values than the header's 3"},
    };
    for (const auto &c : bad) {
        SCOPED_TRACE(std::string(c.type) + ": " + c.text);
        nrrd(c.type, 3, "ascii", nullptr, c.text);
        const std::string got = decoded();
        EXPECT_EQ(got.rfind("refused: " + path + ": NRRD", 0) == 0 ||
                      got.rfind("refused: " + path + ": truncated", 0) == 0,
                  true)
            << got;
        EXPECT_NE(got.find(c.says), std::string::npos) << got;
        EXPECT_TRUE(tk_message_advises(got.c_str())) << "no advice: " << got;
    }
    nrrd("uchar", 3, "ascii", nullptr, "1 2 " + std::string(200, '3'));
    EXPECT_NE(decoded().find("a value of more than 128 characters"), std::string::npos);
    nrrd("short", 2, "hex", nullptr, "00010002");
    EXPECT_NE(decoded().find("without \"endian\""), std::string::npos);
    nrrd("uchar", 3, "hex", nullptr, "01 02 g3");
    EXPECT_NE(decoded().find("is 'g' (0x67), not a hex digit"), std::string::npos) << decoded();
    nrrd("uchar", 3, "hex", nullptr, "01 02 0");
    EXPECT_NE(decoded().find("truncated: NRRD hex data of 5 hex digits, the header's 3 bytes need 6"),
              std::string::npos)
        << decoded();
    nrrd("uchar", 3, "hex", nullptr, "01 02 03 04");
    EXPECT_NE(decoded().find("more than the header's 3 bytes"), std::string::npos) << decoded();
    // byte skip before ascii and hex data (teem skips bytes of the file), -1 for raw only
    write_file(path, "NRRD0004\ntype: uchar\ndimension: 1\nsizes: 2\nencoding: hex\nbyte skip: 3\n\nxyz0a0b");
    EXPECT_EQ(decoded(), bytes_of(uint8_t(10), uint8_t(11)));
    write_file(path, "NRRD0004\ntype: uchar\ndimension: 1\nsizes: 2\nencoding: ascii\nbyte skip: -1\n\n1 2");
    EXPECT_NE(decoded().find("byte skip -1 is for raw data only"), std::string::npos);
}

#ifdef TK_TEST_BZIP2
TEST(ImageProbe, NrrdBzip2IsCheckedWhole)
{
    const std::string dir = make_temp_dir("tk_probe_bz2"), path = dir + "/b.nrrd";
    const std::string head = "NRRD0004\ntype: float\ndimension: 1\nsizes: 12\nencoding: bzip2\nendian: little\n";
    const std::string data = floats(12), packed = bzip2(data);
    tk_image_info info;
    auto says = [&](const std::string &bytes, const char *what) {
        write_file(path, bytes);
        EXPECT_EQ(tk_image_probe(path.c_str(), &info), 0);
        EXPECT_NE(std::string(tk_last_error()).find(what), std::string::npos) << tk_last_error();
    };
    says(head + "\n" + packed.substr(0, packed.size() - 4), "truncated: the bzip2 data end before their stream does");
    says(head + "\n" + packed + "junk", "4 bytes of something else follow the end of the bzip2 data");
    says(head + "\n" + bzip2(data.substr(4)), "the bzip2 data hold 44 bytes, the header claims 48");
    says(head + "\n" + bzip2(data + "x"), "hold more than the 48 bytes");
    std::string corrupt = packed;
    corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 0x10);
    says(head + "\n" + corrupt, "bzip2 data after");
    says(head + "\n" + packed + "BZh9", "truncated");  // a second stream cut short
    // byte skip counts decompressed bytes (teem), the bytes skipped are not data
    write_file(path, head + "byte skip: 5\n\n" + bzip2("skip!" + data));
    ASSERT_EQ(tk_image_probe(path.c_str(), &info), 1) << tk_last_error();
    std::string out(48, '\0');
    ASSERT_EQ(tk_image_read_data(path.c_str(), &info, &out[0], 48), 1) << tk_last_error();
    EXPECT_EQ(out, data);
    // a claim beyond bzip2's densest expansion of the bytes there is refused before decompressing
    says("NRRD0004\ntype: float\ndimension: 3\nsizes: 100000 100000 1000\nencoding: bz2\nendian: little\n\n" + packed,
         "bytes of bzip2 cannot hold more than");
}
#endif

// MetaImage data split over files: LIST (names after the header line) and numbered files
// (NAME%d [MIN [MAX STEP]]), raw or compressed; every slice file present and exactly one
// slice's bytes, the data read back in file order whatever the files' byte order.
TEST(ImageProbe, MetaImageSliceFiles)
{
    const std::string dir = make_temp_dir("tk_probe_slices"), data = floats(12);
    // 3 x 2 x 2 floats: a slice of the last axis is 6 values (24 bytes), a row 3 (12 bytes)
    const std::string head =
        "ObjectType = Image\nNDims = 3\nBinaryData = True\nDimSize = 3 2 2\nElementType = MET_FLOAT\n";
    auto big = [](const std::string &little) {
        std::string b = little;
        for (size_t v = 0; v + 4 <= b.size(); v += 4) std::swap(b[v], b[v + 3]), std::swap(b[v + 1], b[v + 2]);
        return b;
    };
    mkdir((dir + "/sub").c_str(), 0755);
    write_file(dir + "/a.raw", data.substr(0, 24));
    write_file(dir + "/sub/b.raw", data.substr(24));
    write_file(dir + "/s03.raw", data.substr(0, 24));
    write_file(dir + "/s05.raw", data.substr(24));
    write_file(dir + "/z1.gz", gzip(data.substr(0, 24)));
    write_file(dir + "/z2.zlib", zlib(data.substr(24)));
    std::string rows;
    for (int r = 0; r < 4; ++r) {
        write_file(dir + "/r" + std::to_string(r) + ".be", big(data.substr(12 * r, 12)));
        rows += "r" + std::to_string(r) + ".be\n";
    }
    const struct {
        const char *name;
        std::string header;
        uint64_t files;
    } ok[] = {
        {"LIST", head + "ElementDataFile = LIST\na.raw\nsub/b.raw\n", 2},
        {"LIST 2D, blank lines after, CRLF",
         head + "ElementDataFile = LIST 2D\r\na.raw\r\n" + dir + "/sub/b.raw\r\n\n \n", 2},
        {"LIST 1D of big-endian rows", head + "BinaryDataByteOrderMSB = True\nElementDataFile = LIST 1\n" + rows, 4},
        {"LIST 3D: one file", head + "ElementDataFile = LIST 3D\nall.raw\n", 1},
        {"numbered, MIN MAX STEP", head + "ElementDataFile = s%02d.raw 3 5 2\n", 2},
        {"numbered, MIN", head + "ElementDataFile = s%02d.raw 3\n", 0}, // 3, 4: s04 missing (below)
        {"compressed slices, gzip and zlib", head + "CompressedData = True\nElementDataFile = LIST\nz1.gz\nz2.zlib\n",
         2},
    };
    write_file(dir + "/all.raw", data);
    for (const auto &c : ok) {
        SCOPED_TRACE(c.name);
        write_file(dir + "/x.mhd", c.header);
        tk_image_info info;
        const int got = tk_image_probe((dir + "/x.mhd").c_str(), &info);
        if (!c.files) {
            EXPECT_EQ(got, 0);
            EXPECT_NE(std::string(tk_last_error()).find("slice file 2 of 2, " + dir + "/s04.raw, cannot be opened"),
                      std::string::npos) << tk_last_error();
            continue;
        }
        ASSERT_EQ(got, 1) << tk_last_error();
        EXPECT_EQ(info.own_read, 1);
        EXPECT_EQ(info.files, c.files);
        EXPECT_EQ(info.bytes, 48u);
        std::string out(48, '\0');
        ASSERT_EQ(tk_image_read_data((dir + "/x.mhd").c_str(), &info, &out[0], 48), 1) << tk_last_error();
        EXPECT_EQ(out, data);
    }
    // every prefix of a slice file and every byte after one is refused, naming the slice
    write_file(dir + "/x.mhd", head + "ElementDataFile = LIST\na.raw\nsub/b.raw\n");
    const std::string second = data.substr(24);
    for (size_t n = 0; n <= second.size() + 1; ++n) {
        if (n == second.size()) continue;
        write_file(dir + "/sub/b.raw", n < second.size() ? second.substr(0, n) : second + "x");
        tk_image_info info;
        ASSERT_EQ(tk_image_probe((dir + "/x.mhd").c_str(), &info), 0) << n;
        EXPECT_EQ(std::string(tk_last_error()).rfind(dir + "/x.mhd: slice file 2 of 2, " + dir + "/sub/b.raw: ", 0), 0u)
            << tk_last_error();
    }
    write_file(dir + "/sub/b.raw", second);
    write_file(dir + "/z2.zlib", zlib(second).substr(0, 10));
    const struct {
        std::string header, says;
    } bad[] = {
        {head + "ElementDataFile = LIST\na.raw\n", "1 file names for the 2 slice files DimSize gives"},
        {head + "ElementDataFile = LIST\na.raw\nsub/b.raw", "the last file name, sub/b.raw, has no line end"},
        {head + "ElementDataFile = LIST\na.raw\nsub/b.raw\na.raw\n", "more file names than the 2 slice files"},
        {head + "ElementDataFile = LIST\na.raw\n\nsub/b.raw\n", "line 2 of the list, '', is not a file name"},
        {head + "ElementDataFile = LIST\na.raw\n sub/b.raw\n", "line 2 of the list, ' sub/b.raw', is not a file name"},
        {head + "ElementDataFile = LIST\na.raw\nsub/b\001.raw\n", "is not a file name"},
        {head + "ElementDataFile = LIST 4D\nall.raw\n", "the slice files' dimension is not from 1 to NDims 3"},
        {head + "ElementDataFile = LIST 0\nall.raw\n", "the slice files' dimension is not from 1 to NDims 3"},
        {head + "ElementDataFile = LIST 2 3\na.raw\n", "is not LIST or LIST k"},
        {head + "ElementDataFile = s%02d.raw 3 5\n", "give NAME, NAME MIN, or NAME MIN MAX STEP"},
        {head + "ElementDataFile = s%02d.raw 3 7 2\n", "MIN MAX STEP must number exactly the 2 slices"},
        {head + "ElementDataFile = s%02d.raw 3 5 0\n", "MIN MAX STEP must number exactly the 2 slices"},
        {head + "ElementDataFile = s%02d.raw 5 3 -2\n", "MIN MAX STEP must number exactly the 2 slices"},
        {head + "ElementDataFile = s%s.raw\n", "holds one %d"},
        {head + "ElementDataFile = s%d%d.raw\n", "holds one %d"},
        {head + "ElementDataFile = s%100d.raw\n", "holds one %d"},
        {head + "CompressedData = True\nCompressedDataSize = 30\nElementDataFile = LIST\nz1.gz\nz2.zlib\n",
         "CompressedDataSize with data in several files"},
        {head + "CompressedData = True\nHeaderSize = 4\nElementDataFile = LIST\nz1.gz\nz2.zlib\n",
         "HeaderSize with compressed slice files"},
        {head + "CompressedData = True\nElementDataFile = LIST\nz1.gz\nz2.zlib\n",
         "slice file 2 of 2, " + dir + "/z2.zlib: "},
        {head +
             "BinaryDataByteOrderMSB = True\nElementByteOrderMSB = False\nElementDataFile = LIST\na.raw\nsub/b.raw\n",
         "BinaryDataByteOrderMSB and ElementByteOrderMSB disagree"},
        {head + "ElementDataFile = a.raw b.raw\n", "a file name with spaces"},
        {head + "ElementDataFile = LISTING.raw\n", "MetaIO reads a name starting with LIST as a LIST"},
    };
    for (const auto &c : bad) {
        SCOPED_TRACE(c.header.substr(head.size()));
        write_file(dir + "/x.mhd", c.header);
        tk_image_info info;
        ASSERT_EQ(tk_image_probe((dir + "/x.mhd").c_str(), &info), 0);
        const std::string why = tk_last_error();
        EXPECT_EQ(why.rfind(dir + "/x.mhd: ", 0), 0u) << why;
        EXPECT_NE(why.find(c.says), std::string::npos) << why;
        EXPECT_TRUE(tk_message_advises(why.c_str())) << "no advice: " << why;
    }
}
