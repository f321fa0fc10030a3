// The image inputs' recogniser and validator (cuda/tools/image_probe.c and its per-format
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

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "image_probe.h"
#include "tk_cli_runner.h"
#include "tk_status.h"

using namespace tk_test;

namespace {

void write_file(const std::string &path, const std::string &bytes)
{
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

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

// An MRtrix3 .mif: "mrtrix image", the lines given, "file: . OFFSET", "END", the data at
// OFFSET (the header padded with NUL bytes to a multiple of 4, as MRtrix3 pads).
std::string mif_file(const std::string &lines, const std::string &data)
{
    std::string head = "mrtrix image\n" + lines;
    size_t offset = head.size() + 24;
    offset += (4 - offset % 4) % 4;
    head += "file: . " + std::to_string(offset) + "\nEND\n";
    head.resize(offset, '\0');
    return head + data;
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
};

std::vector<Layout> layouts(const std::string &dir)
{
    const std::string nrrd_head = "NRRD0004\ntype: float\ndimension: 4\nsizes: 3 2 2 1\n"
                                  "kinds: vector domain domain domain\nencoding: raw\nendian: little\n"
                                  "space: left-posterior-superior\nspace directions: none (1,0,0) (0,1,0) (0,0,1.5)\n"
                                  "space origin: (0,0,0)\nspacings: nan 1 1 1.5\n";
    std::string nrrd_gz_head = nrrd_head;
    nrrd_gz_head.replace(nrrd_gz_head.find("encoding: raw"), 13, "encoding: gzip");
    const std::string mha_head = "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
                                 "TransformMatrix = 1 0 0 0 1 0 0 0 1\nOffset = 0 0 0\nElementSpacing = 1 1 1\n"
                                 "DimSize = 2 2 1\nElementNumberOfChannels = 3\nElementType = MET_FLOAT\n";
    const std::string data = floats(12), packed = zlib(data);
    const std::string mif_lines = "dim: 3,2,2\nvox: 1,1,1.5\nlayout: +0,+1,+2\ndatatype: Float32LE\n";
    std::vector<Layout> v = {
        {"nii", dir + "/a.nii", nifti1({2, 2, 1, 3}, false) + std::string(4, '\0') + data, "", "", 4, {2, 2, 1, 3}, 1,
         false},
        {"nii.gz named .dat", dir + "/b.dat", gzip(nifti1({2, 2, 1, 3}, false) + std::string(4, '\0') + data), "", "",
         4, {2, 2, 1, 3}, 1, false},
        {"NIfTI-2", dir + "/c.nii", nifti2({3, 2, 2}) + data, "", "", 3, {3, 2, 2}, 1, false},
        {"pair", dir + "/d.hdr", nifti1({3, 2, 2}, true), dir + "/d.img", data, 3, {3, 2, 2}, 1, true},
        {"NRRD raw", dir + "/e.nrrd", nrrd_head + "\n" + data, "", "", 4, {3, 2, 2, 1}, 1, false},
        {"NRRD gzip", dir + "/f.nrrd", nrrd_gz_head + "\n" + gzip(data), "", "", 4, {3, 2, 2, 1}, 1, false},
        {"NRRD detached", dir + "/g.nhdr", nrrd_head + "data file: g.raw\n", dir + "/g.raw", data, 4, {3, 2, 2, 1}, 1,
         true},
        {"MetaImage raw", dir + "/h.mha", mha_head + "ElementDataFile = LOCAL\n" + data, "", "", 3, {2, 2, 1}, 3, false},
        {"MetaImage zlib", dir + "/i.mha",
         mha_head + "CompressedData = True\nCompressedDataSize = " + std::to_string(packed.size()) +
             "\nElementDataFile = LOCAL\n" + packed,
         "", "", 3, {2, 2, 1}, 3, false},
        {"MetaImage detached", dir + "/j.mhd", mha_head + "ElementDataFile = j.raw\n", dir + "/j.raw", data, 3,
         {2, 2, 1}, 3, true},
        {"MRtrix3 .mif", dir + "/k.mif", mif_file(mif_lines, data), "", "", 3, {3, 2, 2}, 1, false},
        {"MRtrix3 .mif.gz named .nii", dir + "/l.nii", gzip(mif_file(mif_lines, data)), "", "", 3, {3, 2, 2}, 1, false},
        {"MRtrix3 .mih", dir + "/m.mih", "mrtrix image\n" + mif_lines + "file: m.dat 4\nEND\n", dir + "/m.dat",
         std::string(4, '\0') + data, 3, {3, 2, 2}, 1, true},
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
        {"x.mha", "", "ObjectType = Image\nNDims = 3\njunk\nElementDataFile = LOCAL\n", "line 3 is not a 'Key = Value'"},
        {"x.mha", "", "NDims = -5\n", "NDims '-5' is not from 1 to 5"},
        {"x.mhd", "", "NDims = 1\nDimSize = 2\nElementType = MET_UCHAR\nElementDataFile = s%03d.raw 1 2 1\n",
         "no numbered slice files"},
        {"x.nrrd", "", "NRRD0004\ntype: float\ndimension: 10\n", "dimension '10' is not from 1 to 5"},
        {"x.nrrd", "", "NRRD0004\ntype: float\ndimension: 1\nsizes: 2\nencoding: ascii\n\n1 2\n", "raw or gzip"},
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
    }
}
