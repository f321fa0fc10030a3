// MRtrix3's fixel directory files: .mif (MRtrix3's own header) and .nii (NIfTI-1, or NIfTI-2
// where an axis is longer than NIfTI-1's int16 dims hold: MRtrix3's File::NIfTI::version does
// the same, so fod2fixel's .nii output of more than 32,767 fixels is NIfTI-2 too).
#include "fixel_files.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tk_output_set.h"

namespace tk {

namespace {

bool ends_with(const std::string &s, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

size_t type_bytes(FixelType t) { return t == FixelType::UInt8 ? 1 : 4; }

std::string mif_header(const FixelGeometry &g, const size_t *dim, int ndim, FixelType type, const char *extra_key)
{
    char line[512];
    std::string head = "mrtrix image\ndim: ";
    for (int i = 0; i < ndim; ++i) head += std::to_string(dim[i]) + (i + 1 < ndim ? "," : "\n");
    std::snprintf(line, sizeof line, "vox: %.17g,%.17g,%.17g%s\n", g.vox[0], g.vox[1], g.vox[2], ndim == 4 ? ",1" : "");
    head += line;
    head += ndim == 4 ? "layout: +0,+1,+2,+3\n" : "layout: +0,+1,+2\n";
    head += type == FixelType::UInt8 ? "datatype: UInt8\n" : type == FixelType::UInt32 ? "datatype: UInt32LE\n"
                                                                                       : "datatype: Float32LE\n";
    for (int r = 0; r < 3; ++r) {
        std::snprintf(line, sizeof line, "transform: %.17g,%.17g,%.17g,%.17g\n", g.rot[r][0], g.rot[r][1], g.rot[r][2],
                      g.origin[r]);
        head += line;
    }
    if (extra_key) head += extra_key;
    // "file: . OFFSET" with the offset past the header's own end, 16-byte aligned
    size_t offset = (head.size() + 32 + 15) / 16 * 16;
    head += "file: . " + std::to_string(offset) + "\nEND\n";
    if (head.size() > offset) throw std::runtime_error("a .mif header outgrew its data offset; report this as a bug");
    head.resize(offset, '\0');
    return head;
}

// NIfTI codes: datatype and bits per voxel
int16_t nifti_datatype(FixelType t) { return t == FixelType::UInt8 ? 2 : t == FixelType::UInt32 ? 768 : 16; }

std::string nifti1_header(const FixelGeometry &g, const size_t *dim, int ndim, FixelType type)
{
    unsigned char h[352] = {0};
    auto put32 = [&](int at, int32_t x) { std::memcpy(h + at, &x, 4); };
    auto put16 = [&](int at, int16_t x) { std::memcpy(h + at, &x, 2); };
    auto putf = [&](int at, float x) { std::memcpy(h + at, &x, 4); };
    put32(0, 348);
    put16(40, (int16_t)ndim);
    for (int i = 0; i < 7; ++i) put16(42 + 2 * i, i < ndim ? (int16_t)dim[i] : 1);
    put16(70, nifti_datatype(type));
    put16(72, (int16_t)(8 * type_bytes(type)));
    putf(76, 1.0f);
    for (int i = 0; i < 3; ++i) putf(80 + 4 * i, (float)g.vox[i]);
    putf(92, 1.0f);
    putf(108, 352.0f);  // vox_offset
    putf(112, 1.0f);    // scl_slope
    put16(254, 2);      // sform_code: aligned
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) putf(280 + 16 * r + 4 * c, (float)(g.rot[r][c] * g.vox[c]));
        putf(280 + 16 * r + 12, (float)g.origin[r]);
    }
    std::memcpy(h + 344, "n+1", 4);
    return std::string(reinterpret_cast<char *>(h), sizeof h);
}

// NIfTI-2 (the same fields as NIfTI-1, 64-bit dims and doubles): header 540 bytes, the
// 4-byte extension flag, data at 544.
std::string nifti2_header(const FixelGeometry &g, const size_t *dim, int ndim, FixelType type)
{
    unsigned char h[544] = {0};
    auto put64 = [&](int at, int64_t x) { std::memcpy(h + at, &x, 8); };
    auto put32 = [&](int at, int32_t x) { std::memcpy(h + at, &x, 4); };
    auto put16 = [&](int at, int16_t x) { std::memcpy(h + at, &x, 2); };
    auto putd = [&](int at, double x) { std::memcpy(h + at, &x, 8); };
    put32(0, 540);
    std::memcpy(h + 4, "n+2\0\r\n\032\n", 8);
    put16(12, nifti_datatype(type));
    put16(14, (int16_t)(8 * type_bytes(type)));
    put64(16, ndim);
    for (int i = 0; i < 7; ++i) put64(24 + 8 * i, i < ndim ? (int64_t)dim[i] : 1);
    putd(104, 1.0);  // pixdim[0]: qfac
    for (int i = 0; i < 3; ++i) putd(112 + 8 * i, g.vox[i]);
    putd(136, 1.0);
    put64(168, 544);  // vox_offset
    putd(176, 1.0);   // scl_slope
    put32(348, 2);    // sform_code: aligned
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) putd(400 + 32 * r + 8 * c, g.rot[r][c] * g.vox[c]);
        putd(400 + 32 * r + 24, g.origin[r]);
    }
    return std::string(reinterpret_cast<char *>(h), sizeof h);
}

}  // namespace

FixelGeometry realigned(const FixelGeometry &in)
{
    FixelGeometry g = in;
    int used[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
        int row = 0;
        double best = -1;
        for (int r = 0; r < 3; ++r)
            if (!used[r] && std::fabs(in.rot[r][i]) > best) best = std::fabs(in.rot[r][i]), row = r;
        used[row] = 1;
        const double sign = in.rot[row][i] < 0 ? -1.0 : 1.0;
        for (int r = 0; r < 3; ++r) {
            g.rot[r][row] = sign * in.rot[r][i];
            if (sign < 0) g.origin[r] += in.rot[r][i] * in.vox[i] * (double)(in.dim[i] - 1);
        }
        g.vox[row] = in.vox[i], g.dim[row] = in.dim[i];
    }
    return g;
}

void write_fixel_image(tk_outset *set, int idx, int k, const std::string &name, const std::string &path_for_messages,
                       const FixelGeometry &g, const size_t *dim, int ndim, FixelType type, const void *data,
                       const char *extra_key)
{
    size_t count = 1;
    bool nifti2 = false;
    for (int i = 0; i < ndim; ++i) count *= dim[i], nifti2 = nifti2 || dim[i] > kNifti1MaxDim;
    const std::string head = ends_with(name, ".mif") ? mif_header(g, dim, ndim, type, extra_key)
                             : nifti2                ? nifti2_header(g, dim, ndim, type)
                                                     : nifti1_header(g, dim, ndim, type);
    write_fixel_file(set, idx, k, path_for_messages, head, data, count * type_bytes(type));
}

void write_fixel_file(tk_outset *set, int idx, int k, const std::string &path_for_messages, const std::string &head,
                      const void *data, size_t bytes)
{
    const int fd = tk_outset_open(set, idx, k);
    if (fd < 0) throw FixelWriteError();
    int err = tk_write_all(fd, head.data(), head.size());
    if (!err && bytes) err = tk_write_all(fd, data, bytes);
    if (close(fd) != 0 && !err) err = errno ? errno : EIO;
    tk_outset_expect_size(set, idx, k, head.size() + bytes);
    if (err)
        throw std::runtime_error(path_for_messages + ": cannot write: " + std::strerror(err) + "; " +
                                 tk_write_advice(err));
}

}  // namespace tk
