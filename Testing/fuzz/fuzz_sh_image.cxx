// Fuzz target: the SH / peak volume readers of the ITK tools (tools/itk/image/sh_image_io.cxx:
// probe_volume, read_vector_volume, read_mask, read_scalar_volume), through ITK's NIfTI,
// NRRD and MetaImage readers.
//
// Input: byte 0 picks the file name: .nii, .nii.gz, .nrrd, .nhdr, .mha or .mhd (byte 0
// mod 6); byte 1 the call (mod 4, in the order above).  The rest is the file, or for the
// detached headers (.nhdr, .mhd) the header, "@@FILE@@\n", then the data file, which the
// header names "data.raw".
//
// Asserts: a failure is a std::runtime_error whose message starts with the file's path
// (never another exception type); probe_volume's shape has 1+ axes and 1+ components;
// an accepted vector volume has the components the header promises (a 3-D vector image's
// own, or a 4-D image's 4th size), and every value equals the 4-D image's as ITK reads
// it (but a NIfTI's non-finite value, which ITK reads as 0; the transposition is checked voxel by voxel; the reference is ITK's own reader chosen
// by name, so teem for NRRD ascii and hex and MetaIO for slice files, mif_io for MRtrix3
// content, and for NRRD bzip2, which ITK 5.2 cannot read, a raw copy of the decoded data
// laid out by teem); tk-fibers' SH size rule
// (tk_sh_lmax_for_count) maps a count to an lmax whose count is that count; a mask or
// scalar volume is 3-D, and a mask is 1 exactly where the file's value is nonzero.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include <vector>

#include "fuzz_common.h"
#include "fuzz_quiet.h"
#include "image_probe.h"
#include "itkImageFileReader.h"
#include "mif_io.h"
#include "nifti_header.h"
#include "sh_image_io.h"
#include "tk_fibers.h"

namespace {

const char *const kNames[] = {"input.nii", "input.nii.gz", "input.nrrd", "input.nhdr", "input.mha", "input.mhd"};

std::string scratch(const char *name)
{
    char *p = tk_fuzz_scratch_path(name);
    std::string s(p);
    std::free(p);
    return s;
}

using Image4 = itk::Image<float, 4>;

// A bzip2 NRRD, which ITK 5.2 cannot read, as a raw NRRD it can: the header without its
// encoding, endian, skip and data file fields, then "encoding: raw" and the decoded data
// (tk_image_read_data, in this machine's order) attached.  So ITK's reader still lays the
// values out (the component axis moved to the fastest by teem), independently of the tools'.
std::string raw_copy_of_bzip2_nrrd(const std::string &path, const tk_image_info &info)
{
    std::vector<unsigned char> data(info.bytes);
    TK_FUZZ_CHECK(tk_image_read_data(path.c_str(), &info, data.data(), info.bytes), "accepted, but unreadable: %s",
                  tk_last_error());
    std::FILE *f = std::fopen(path.c_str(), "rb");
    std::string header;
    for (int c; f && (c = std::fgetc(f)) != EOF;) {
        header += static_cast<char>(c);
        if (header.size() >= 2 && header.compare(header.size() - 2, 2, "\n\n") == 0) break;
    }
    if (f) std::fclose(f);
    std::string out;
    std::istringstream lines(header);
    for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) break;
        bool drop = false;
        for (const char *field : {"encoding:", "endian:", "byte skip:", "byteskip:", "line skip:", "lineskip:",
                                  "data file:", "datafile:"})
            drop = drop || line.rfind(field, 0) == 0;
        if (!drop) out += line + "\n";
    }
    const uint16_t one = 1;
    const bool little = *reinterpret_cast<const unsigned char *>(&one) == 1;
    out += std::string("encoding: raw\nendian: ") + (little ? "little" : "big") + "\n\n";
    out.append(reinterpret_cast<const char *>(data.data()), data.size());
    const std::string copy = scratch("reference.nrrd");
    tk_fuzz_write_file(copy.c_str(), out.data(), out.size());
    return copy;
}

// The file's values as an independent reader gives them, index order (x fastest), with the
// size of each axis: ITK's own reader chosen by ITK (by name) for ITK's formats (teem reads
// NRRD ascii and hex itself; bzip2, which it cannot read, is handed to it as a raw copy);
// for an MRtrix3 image (recognised by content under any name) mif_io's reader, which the
// tools reach only after image_probe.
template <typename TPixel, unsigned D>
std::vector<double> reference_values(std::string path, std::vector<size_t> &size)
{
    std::vector<double> values;
    size.clear();
    tk_image_info info;
    if (tk_image_probe(path.c_str(), &info) && info.format == TK_IMAGE_NRRD && info.encoding == TK_IMAGE_ENCODING_BZIP2)
        path = raw_copy_of_bzip2_nrrd(path, info);
    if (tk_image_sniff(path.c_str()) == TK_IMAGE_MIF) {
        tk_mif_header h;
        float *data = nullptr;
        TK_FUZZ_CHECK(tk_mif_read_header(path.c_str(), &h) && tk_mif_read_data(path.c_str(), &h, &data),
                      "accepted, but mif_io refuses it: %s", tk_last_error());
        for (int a = 0; a < h.ndim; ++a) size.push_back(h.dim[a]);
        values.assign(data, data + tk_mif_count(&h));
        std::free(data);
        return values;
    }
    auto reader = itk::ImageFileReader<itk::Image<TPixel, D>>::New();
    reader->SetFileName(path);
    reader->Update();
    const auto *image = reader->GetOutput();
    for (unsigned d = 0; d < D; ++d) size.push_back(image->GetLargestPossibleRegion().GetSize()[d]);
    const size_t n = image->GetLargestPossibleRegion().GetNumberOfPixels();
    values.assign(image->GetBufferPointer(), image->GetBufferPointer() + n);
    return values;
}

void check_vector(const std::string &path, const tk::VectorImage3 *image)
{
    const tk::VolumeShape shape = tk::probe_volume(path);
    const size_t comps = image->GetNumberOfComponentsPerPixel();
    const auto size = image->GetLargestPossibleRegion().GetSize();
    const size_t nvox = size[0] * size[1] * size[2];
    TK_FUZZ_CHECK(comps >= 1, "no components");
    const int lmax = tk_sh_lmax_for_count(comps);
    TK_FUZZ_CHECK(lmax < 0 || tk_sh_num_coeffs(lmax) == comps, "lmax %d for %zu coefficients", lmax, comps);
    if (shape.dimensions == 3) {
        TK_FUZZ_CHECK(shape.components > 1 && comps == shape.components, "%zu components, the header says %u", comps,
                      shape.components);
        return;
    }
    TK_FUZZ_CHECK(shape.dimensions == 4 && shape.components == 1, "accepted a %u-D image of %u components",
                  shape.dimensions, shape.components);
    std::vector<size_t> size4;
    const std::vector<double> src = reference_values<float, 4>(path, size4);
    while (size4.size() < 4) size4.push_back(1);
    TK_FUZZ_CHECK(size4[0] == size[0] && size4[1] == size[1] && size4[2] == size[2] && size4[3] == comps,
                  "grid differs from the 4-D image's");
    const float *dst = image->GetBufferPointer();
    // ITK's NIfTI library reads a non-finite float as 0, where the tools give the file's
    // value back (sh_image_io.cxx, restore_nifti_nonfinite): there ITK's value is that of a 0
    // in the file, 0 or, where ITK applies scl_slope and scl_inter, the intercept (0 * slope
    // + intercept: a fuzzed slope of 2e31 found that the intercept stands there then)
    const bool nifti = tk_image_sniff(path.c_str()) == TK_IMAGE_NIFTI;
    float zero_read = 0;
    tk_nifti_header h;
    const bool header = nifti && tk_nifti_read_header(path.c_str(), &h) == 1;
    if (header && std::isfinite(h.scl_inter)) zero_read = static_cast<float>(h.scl_inter);
    // scl_slope 0 (or not finite) means no scaling in the NIfTI standard, as nibabel and MRtrix3
    // read it, and the tools read unscaled float data so (sh_image_io.cxx, nifti_voxels_are_ours);
    // ITK adds scl_inter all the same, so there the reference is not the standard's value
    if (header && (h.datatype == 16 || h.datatype == 64) && (h.scl_slope == 0 || !std::isfinite(h.scl_slope)) &&
        h.scl_inter != 0)
        return;
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < comps; ++t) {
            const float want = static_cast<float>(src[t * nvox + v]), got = dst[v * comps + t];
            if (nifti && (want == 0 || want == zero_read) && !std::isfinite(got)) continue;
            TK_FUZZ_CHECK(!std::memcmp(&got, &want, sizeof(float)),
                          "voxel %zu, volume %zu: %g, the 4-D image's %g", v, t, static_cast<double>(got),
                          static_cast<double>(want));
        }
}

template <typename TImage> void check_3d(const std::string &path, const TImage *image)
{
    const tk::VolumeShape shape = tk::probe_volume(path);
    TK_FUZZ_CHECK(shape.components == 1, "%u components", shape.components);
    const auto size = image->GetLargestPossibleRegion().GetSize();
    TK_FUZZ_CHECK(size[0] * size[1] * size[2] > 0 && image->GetBufferPointer(), "an empty volume came back");
}

// A mask is 1 exactly where the file's value (read here as double) is nonzero.
void check_mask(const std::string &path, const tk::MaskImage3 *mask)
{
    check_3d(path, mask);
    std::vector<size_t> size3;
    const std::vector<double> values = reference_values<double, 3>(path, size3);
    const size_t n = mask->GetLargestPossibleRegion().GetNumberOfPixels();
    TK_FUZZ_CHECK(values.size() == n, "mask size differs");
    for (size_t v = 0; v < n; ++v)
        TK_FUZZ_CHECK(mask->GetBufferPointer()[v] == (values[v] != 0), "voxel %zu: mask %d for value %g", v,
                      mask->GetBufferPointer()[v], values[v]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    const int format = data[0] % 6, call = data[1] % 4;
    const std::string path = scratch(kNames[format]), raw = scratch("data.raw");
    const uint8_t *body = data + 2;
    size_t body_size = size - 2;
    std::remove(raw.c_str());
    // one input file at a time: ITK's NIfTI library reads input.nii's voxels for input.nii.gz
    // where both exist (the tools refuse that; the reference reader here would not)
    for (const char *name : kNames)
        if (name != kNames[format]) std::remove(scratch(name).c_str());
    if (format == 3 || format == 5) {
        static const char sep[] = "@@FILE@@\n";
        const uint8_t *at = static_cast<const uint8_t *>(memmem(body, body_size, sep, sizeof sep - 1));
        if (at) {
            const size_t head = static_cast<size_t>(at - body), skip = head + sizeof sep - 1;
            tk_fuzz_write_file(raw.c_str(), body + skip, body_size - skip);
            body_size = head;
        }
    }
    tk_fuzz_write_file(path.c_str(), body, body_size);

    // ITK's warnings and the NIfTI library's "** ERROR" lines would fill the log; the
    // verdict is the exception the reader throws.
    itk::Object::GlobalWarningDisplayOff();
    tk_fuzz_quiet_begin();
    try {
        if (call == 0) {
            const tk::VolumeShape shape = tk::probe_volume(path);
            TK_FUZZ_CHECK(shape.dimensions >= 1 && shape.components >= 1,
                          "probed %u-D with %u components", shape.dimensions, shape.components);
        } else if (call == 1) {
            check_vector(path, tk::read_vector_volume(path).GetPointer());
        } else if (call == 2) {
            check_mask(path, tk::read_mask(path).GetPointer());
        } else {
            check_3d(path, tk::read_scalar_volume(path).GetPointer());
        }
        tk_fuzz_quiet_end();
    } catch (const std::runtime_error &e) {
        tk_fuzz_quiet_end();
        TK_FUZZ_CHECK(!std::strncmp(e.what(), path.c_str(), path.size()), "the message does not name the file: %s",
                      e.what());
    } catch (const itk::ExceptionObject &e) {
        tk_fuzz_quiet_end();
        TK_FUZZ_CHECK(false, "an ITK exception escaped the reader: %s", e.GetDescription());
    } catch (const std::exception &e) {
        tk_fuzz_quiet_end();
        TK_FUZZ_CHECK(false, "a %s escaped the reader: %s", typeid(e).name(), e.what());
    }
    return 0;
}
