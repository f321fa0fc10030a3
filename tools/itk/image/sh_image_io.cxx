#include "sh_image_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "itkImageFileReader.h"
#include "itkImageFileWriter.h"
#include "itkImageIOFactory.h"
#include "itkImageRegionConstIterator.h"
#include "itkMetaDataObject.h"
#include "itkMetaImageIO.h"
#include "itkNiftiImageIO.h"
#include "itkNrrdImageIO.h"
#include "image_grid.h"
#include "image_probe.h"
#include "mif_io.h"
#include "tk_output_set.h"
#include "tk_status.h"

#if __has_include(<zlib.h>)
#include <zlib.h>  // linked through tk_cli (ZLIB::ZLIB) wherever the header is found
#define TK_SH_IO_ZLIB 1
#endif

namespace tk {
namespace {

using Image4 = itk::Image<float, 4>;

// This machine's physical memory in bytes (0 when unknown).
double physical_memory()
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

void check_readable(const std::string &path)
{
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno) +
                                 "; check the name and that it is readable");
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory, not an image; give an image file");
    if (st.st_size == 0) throw std::runtime_error(path + ": empty file; copy or export the image again");
}

bool ends_with(const std::string &path, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
}

bool is_nifti(const std::string &path) { return ends_with(path, ".nii") || ends_with(path, ".nii.gz"); }
bool is_mif(const std::string &path)
{
    return ends_with(path, ".mif") || ends_with(path, ".mif.gz") || ends_with(path, ".mih");
}
bool is_nrrd(const std::string &path) { return ends_with(path, ".nrrd") || ends_with(path, ".nhdr"); }
// Formats that write the voxels to a second file named after the header.
// A header whose data sit in a second file: .nhdr and .mhd (data in NAME.raw, as ITK writes
// them) and the NIfTI/Analyze pair .hdr (data in NAME.img).
bool is_detached(const std::string &path)
{
    return ends_with(path, ".nhdr") || ends_with(path, ".mhd") || ends_with(path, ".hdr");
}

// The tools hold a volume as float (twice while converting layouts): refuse what cannot
// fit before anything is allocated.
void check_fits_memory(const std::string &path, const std::vector<size_t> &dims, size_t components)
{
    double values = static_cast<double>(components);
    std::ostringstream size;
    for (size_t d = 0; d < dims.size(); ++d) {
        values *= static_cast<double>(dims[d]);
        size << (d ? " x " : "") << dims[d];
    }
    const double bytes = 2 * values * sizeof(float), have = physical_memory();
    if (have > 0 && bytes > have) {
        std::ostringstream why;
        why.precision(3);
        why << path << ": the header claims " << size.str() << " voxels of " << components
            << " component(s), which need " << bytes / (1 << 30) << " GiB, more than this machine's "
            << have / (1 << 30) << " GiB of memory; read it on a machine with more memory, or crop it first";
        throw std::runtime_error(why.str());
    }
}

// Data the tools decode themselves (image_probe.h's own_read: NRRD's ascii, hex and bzip2;
// MetaImage data split over files, LIST or numbered): ITK's reader of the format (TReader)
// for the header (geometry, components, metadata, as for every file of the format), the
// decoder of image_nrrd.c or image_meta.c, the code that validated the data, for the values
// (MetaIO would read a missing or short slice file as zeros).  Then what ITK's NRRD reader
// does with raw data: the component axis (the first of a non-domain kind) moved to the
// fastest; MetaImage's layout, the files' one after the other and a voxel's channels
// together, is MetaIO's already.  ImageFileReader converts the values to the pixel type as
// for any file.
template <typename TReader> class DecodedImageIO : public TReader
{
public:
    using Self = DecodedImageIO;
    using Superclass = TReader;
    using Pointer = itk::SmartPointer<Self>;
    itkNewMacro(Self);
    itkTypeMacro(DecodedImageIO, TReader);

    void SetProbed(const tk_image_info &info) { m_Info = info; }

    void Read(void *buffer) override
    {
        const std::string path = this->GetFileName();
        const uint64_t bytes = m_Info.bytes;
        if (static_cast<uint64_t>(this->GetImageSizeInBytes()) != bytes)
            throw std::runtime_error(path + ": ITK's reading of the header asks for " +
                                     std::to_string(this->GetImageSizeInBytes()) + " bytes of data, the header's "
                                     "fields " + std::to_string(bytes) +
                                     ": a header the readers disagree on is not used; re-save it with the tool that "
                                     "wrote it");
        const int r = m_Info.range_axis;
        if (r <= 0) {  // the components (if any) are the fastest axis already
            if (!tk_image_read_data(path.c_str(), &m_Info, buffer, bytes)) throw std::runtime_error(tk_last_error());
            return;
        }
        std::vector<unsigned char> file(bytes);
        if (!tk_image_read_data(path.c_str(), &m_Info, file.data(), bytes)) throw std::runtime_error(tk_last_error());
        uint64_t inner = 1, outer = 1;
        for (int k = 0; k < m_Info.axes; ++k)
            if (k < r) inner *= m_Info.size[k];
            else if (k > r) outer *= m_Info.size[k];
        const uint64_t comps = m_Info.size[r], vb = static_cast<uint64_t>(m_Info.value_bytes);
        auto *dst = static_cast<unsigned char *>(buffer);
        for (uint64_t o = 0; o < outer; ++o)
            for (uint64_t c = 0; c < comps; ++c)
                for (uint64_t i = 0; i < inner; ++i)
                    std::memcpy(dst + ((o * inner + i) * comps + c) * vb,
                                file.data() + ((o * comps + c) * inner + i) * vb, vb);
    }

protected:
    DecodedImageIO() = default;

private:
    tk_image_info m_Info{};
};

// The ITK reader of the format path's bytes are (image_probe.h), never the one its name
// suggests: ITK's own choice goes by the name, and by content among readers the tools do
// not take (libpng aborts the process on a corrupt PNG).
itk::ImageIOBase::Pointer itk_io_for(const std::string &path, const tk_image_info &info)
{
    const tk_image_format format = info.format;
    const int nifti_version = info.nifti_version;
    itk::ImageIOBase::Pointer io;
    const char *names = "", *kind = "";
    if (format == TK_IMAGE_NIFTI) io = itk::NiftiImageIO::New(), names = ".nii, .nii.gz or .hdr/.img", kind = "NIfTI";
    else if (format == TK_IMAGE_NRRD && info.own_read) {
        auto decoded = DecodedImageIO<itk::NrrdImageIO>::New();
        decoded->SetProbed(info);
        io = decoded, names = ".nrrd or .nhdr", kind = "NRRD";
    } else if (format == TK_IMAGE_NRRD) io = itk::NrrdImageIO::New(), names = ".nrrd or .nhdr", kind = "NRRD";
    else if (format == TK_IMAGE_METAIMAGE && info.own_read) {
        auto decoded = DecodedImageIO<itk::MetaImageIO>::New();
        decoded->SetProbed(info);
        io = decoded, names = ".mha or .mhd", kind = "MetaImage";
    } else if (format == TK_IMAGE_METAIMAGE) io = itk::MetaImageIO::New(), names = ".mha or .mhd", kind = "MetaImage";
    else throw std::runtime_error(format == TK_IMAGE_UNKNOWN ? std::string(tk_last_error())
                                                            : path + ": not read through ITK (an MRtrix3 image)");
    // ITK's readers open a file only under their own names: a NIfTI named .dat holds a
    // valid image that ITK would refuse with "could not create IO object"
    if (format == TK_IMAGE_NIFTI && nifti_version == 2)
        throw std::runtime_error(path + ": a NIfTI-2 file, which ITK 5.2's reader (behind this tool) does not read; "
                                        "convert it to NIfTI-1 (e.g. mrconvert IN OUT.nii, or nibabel's Nifti1Image)");
    if (!io->CanReadFile(path.c_str()))
        throw std::runtime_error(path + ": a " + kind + " image by its content, but its name does not end in " + names +
                                 "; rename it so that every reader takes it alike");
    io->SetFileName(path);
    return io;
}

// Every input, whatever its name: recognised by its bytes and validated whole, header and
// data (image_probe.h), before any reader sees it; then read by the reader of the format
// its bytes say (mif_io for MRtrix3, ITK's for the others).  ITK 5.2's readers act on what
// a header says (zero or negative sizes read as 1, short or truncated data read as zeros,
// NaN transforms abort the process).
tk_image_info probe_file(const std::string &path)
{
    check_readable(path);
    tk_image_info info;
    if (!tk_image_probe(path.c_str(), &info)) throw std::runtime_error(tk_last_error());
    return info;
}

// ITK's reading of a probed (non-MRtrix3) file's header, checked against the probe's.
itk::ImageIOBase::Pointer itk_header(const std::string &path, const tk_image_info &info)
{
    auto io = itk_io_for(path, info);
    try {
        io->ReadImageInformation();
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(path + ": unreadable image header: " + itk_message(e) +
                                 "; re-save it with the tool that wrote it");
    }
    // ITK's reading of the header against the check's: the same number of values, or the
    // two disagree on what the file is and neither is trusted
    uint64_t itk_values = io->GetNumberOfComponents(), values = info.components;
    for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d)
        itk_values = tk_image_mul(itk_values, io->GetDimensions(d));
    for (int d = 0; d < info.axes; ++d) values = tk_image_mul(values, info.size[d]);
    if (itk_values == 0 || itk_values != values)
        throw std::runtime_error(path + ": ITK reads this header as " + std::to_string(itk_values) +
                                 " values, the header's own fields say " + std::to_string(values) +
                                 ": a header the readers disagree on is not used; re-save it with the tool that wrote "
                                 "it");
    if (info.format == TK_IMAGE_NRRD && info.own_read) {
        // the layout the decoded values are put in: ITK's axes are the header's without the
        // component axis, which image_nrrd.c found where teem does
        std::vector<uint64_t> domain;
        uint64_t comps = 1;
        for (int d = 0; d < info.axes; ++d)
            if (d == info.range_axis) comps = info.size[d];
            else domain.push_back(info.size[d]);
        bool same = io->GetNumberOfComponents() == comps && io->GetNumberOfDimensions() == domain.size();
        for (unsigned d = 0; same && d < domain.size(); ++d) same = io->GetDimensions(d) == domain[d];
        if (!same)
            throw std::runtime_error(
                path + ": ITK reads this header's axes otherwise than its kinds field says: a "
                       "header the readers disagree on is not used; re-save it with the tool that wrote it");
    }
    std::vector<size_t> dims;
    for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d) dims.push_back(io->GetDimensions(d));
    check_fits_memory(path, dims, io->GetNumberOfComponents());
    return io;
}

// ---- geometry: a voxel-to-world RAS matrix m (world = m[:, 0:3] * ijk + m[:, 3]) and ITK's
// LPS origin, spacing and direction (RAS = diag(-1, -1, 1) * LPS) ---------------------------

double flip(unsigned r) { return r < 2 ? -1.0 : 1.0; }

template <typename TImage>
void set_world(TImage *image, const double m[3][4], const std::string &path, const char *what)
{
    double len[3];
    for (unsigned c = 0; c < 3; ++c) len[c] = std::sqrt(m[0][c] * m[0][c] + m[1][c] * m[1][c] + m[2][c] * m[2][c]);
    const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                       m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                       m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    if (!(std::fabs(det) > 1e-9 * len[0] * len[1] * len[2]) || !(len[0] > 0 && len[1] > 0 && len[2] > 0))
        throw std::runtime_error(path + ": " + what + " is singular: no orientation can be built from it; fix the "
                                 "transform, or re-save the image from the tool that made it");
    auto spacing = image->GetSpacing();
    auto origin = image->GetOrigin();
    auto direction = image->GetDirection();
    for (unsigned r = 0; r < 3; ++r) {
        spacing[r] = len[r];
        origin[r] = flip(r) * m[r][3];
        for (unsigned c = 0; c < 3; ++c) direction[r][c] = flip(r) * m[r][c] / len[c];
    }
    image->SetSpacing(spacing);
    image->SetOrigin(origin);
    image->SetDirection(direction);
}

template <typename TImage> void world_of(const TImage *image, double m[3][4])
{
    for (unsigned r = 0; r < 3; ++r) {
        for (unsigned c = 0; c < 3; ++c) m[r][c] = flip(r) * image->GetDirection()[r][c] * image->GetSpacing()[c];
        m[r][3] = flip(r) * image->GetOrigin()[r];
    }
}

// A NIfTI file's geometry by the NIfTI rule (h: its header), in place of the one ITK's reader chose.
template <typename TImage>
void apply_nifti_geometry(TImage *image, const std::string &path, const tk_nifti_header &h, FileGeometry *geometry)
{
    double m[3][4];
    const std::string which = tk_nifti_world_matrix(&h, m);
    set_world(image, m, path, ("NIfTI header: the " + which).c_str());
    if (geometry) geometry->nifti = true, geometry->header = h;
}

// ---- MRtrix3 .mif ------------------------------------------------------------------------

struct MifImage {
    tk_mif_header h;
    std::vector<size_t> dims;  // without trailing axes of size 1 past the third
    std::unique_ptr<float, void (*)(void *)> data{nullptr, std::free};
};

MifImage mif_header(const std::string &path)
{
    MifImage im;
    if (!tk_mif_read_header(path.c_str(), &im.h)) throw std::runtime_error(tk_last_error());
    im.dims.assign(im.h.dim, im.h.dim + im.h.ndim);
    while (im.dims.size() > 3 && im.dims.back() == 1) im.dims.pop_back();
    check_fits_memory(path, im.dims, 1);
    return im;
}

MifImage read_mif(const std::string &path)
{
    MifImage im = mif_header(path);
    float *data = nullptr;
    if (!tk_mif_read_data(path.c_str(), &im.h, &data)) throw std::runtime_error(tk_last_error());
    im.data.reset(data);
    return im;
}

template <typename TImage> void set_mif_world(TImage *image, const tk_mif_header &h, const std::string &path)
{
    double m[3][4];
    for (unsigned r = 0; r < 3; ++r) {
        for (unsigned c = 0; c < 3; ++c) m[r][c] = h.transform[r][c] * (static_cast<int>(c) < h.ndim ? h.vox[c] : 1.0);
        m[r][3] = h.transform[r][3];
    }
    set_world(image, m, path, "the .mif transform");
}

// An ITK image's header for a .mif: dim and vox of its axes (then extra), its transform.
template <typename TImage>
tk_mif_header mif_header_of(const TImage *image, const std::vector<size_t> &dims, const std::vector<double> &vox,
                            const std::string &path)
{
    tk_mif_header h;
    tk_mif_header_init(&h, static_cast<int>(dims.size()), dims.data());
    double m[3][4];
    world_of(image, m);
    for (unsigned c = 0; c < dims.size(); ++c) h.vox[c] = vox[c];
    for (unsigned r = 0; r < 3; ++r) {
        for (unsigned c = 0; c < 3; ++c) h.transform[r][c] = m[r][c] / vox[c];
        h.transform[r][3] = m[r][3];
    }
    h.gzip = ends_with(path, ".mif.gz");
    return h;
}

// ---- writing ------------------------------------------------------------------------------

// ITK's messages name the temporary: name the output instead.
std::string without_temporary(std::string text, const std::string &tmp, const std::string &path)
{
    for (size_t at; (at = text.find(tmp)) != std::string::npos;) text.replace(at, tmp.size(), path);
    return text;
}

// Where a header written by ITK ends in an attached file (NRRD: the blank line; MetaImage:
// the line "ElementDataFile = LOCAL"), so that the file's size can be checked exactly:
// ITK's MetaImage writer reports a failed write (a full disk) on stderr and carries on.
// 0 when no complete header is found (the write failed before the data).
size_t attached_header_size(const std::string &file)
{
    std::FILE *f = std::fopen(file.c_str(), "rb");
    if (!f) return 0;
    std::string head(65536, '\0');
    head.resize(std::fread(&head[0], 1, head.size(), f));
    std::fclose(f);
    size_t at = head.find("\n\n");  // NRRD
    if (head.rfind("NRRD", 0) == 0) return at == std::string::npos ? 0 : at + 2;
    at = head.find("ElementDataFile = LOCAL");
    if (at == std::string::npos) return 0;
    at = head.find('\n', at);
    return at == std::string::npos ? 0 : at + 1;
}

// ITK's and our writers' messages name the temporary: name the output instead.
std::string without_temporaries(std::string text, tk_outset *set, int idx)
{
    const char *path = tk_outset_path(set, idx);
    for (int c = 0; tk_outset_temp(set, idx, c); ++c) text = without_temporary(text, tk_outset_temp(set, idx, c), path);
    return text;
}

// Writes output idx of set through write(temporary): the temporary sits in a private folder
// beside the output under the output's own name, so a detached header (.nhdr, .mhd) names
// its data file by the final name.  Then the sizes the commit must find: data_bytes of
// values in the data file (exactly, after the header, for ITK's attached formats and
// NIfTI), so a short write that a writer did not report is an error, not a short file.
template <typename TWrite>
void write_into(tk_outset *set, int idx, size_t data_bytes, TWrite write)
{
    const std::string path = tk_outset_path(set, idx), tmp = tk_outset_temp(set, idx, 0);
    try {
        write(tmp);
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(path + ": cannot write: " + without_temporaries(itk_message(e), set, idx));
    } catch (const std::runtime_error &e) {
        throw std::runtime_error(without_temporaries(e.what(), set, idx));
    }
    if (is_detached(path)) {
        tk_outset_expect_size(set, idx, 1, data_bytes);
    } else if (ends_with(path, ".nii")) {
        tk_outset_expect_size(set, idx, 0, 352 + static_cast<unsigned long long>(data_bytes));
    } else if (is_nrrd(path) || ends_with(path, ".mha")) {
        const size_t header = attached_header_size(tmp);
        if (!header)
            throw std::runtime_error(path + ": cannot write: the file ends inside its header (the disk may be full)");
        tk_outset_expect_size(set, idx, 0, header + static_cast<unsigned long long>(data_bytes));
    }
}

// The path-only writers: one output, committed at once; messages by exception.
template <typename TWrite>
std::vector<std::string> write_atomically(const std::string &path, size_t data_bytes, TWrite write)
{
    std::unique_ptr<tk_outset, void (*)(tk_outset *)> set(tk_outset_new(nullptr), tk_outset_free);
    if (!set) throw std::runtime_error(path + ": out of memory");
    const int idx = add_volume_output(set.get(), nullptr, path);
    if (idx < 0) throw std::runtime_error(tk_last_error());
    write_into(set.get(), idx, data_bytes, write);
    if (tk_outset_commit(set.get()) != 0) throw std::runtime_error(tk_last_error());
    return volume_files(path);
}

template <typename TImage> void itk_write(const TImage *image, const std::string &file)
{
    auto writer = itk::ImageFileWriter<TImage>::New();
    writer->SetFileName(file);
    writer->SetInput(image);
    writer->Update();
}

// The two ways every volume writer runs: writes(path, run) calls run(data bytes,
// write(temporary)) once; run writes alone at path, committed at once (write_alone), or
// as output idx of a set, committed with the set's other outputs (write_in_set).
template <typename TWrites> std::vector<std::string> write_alone(const std::string &path, TWrites writes)
{
    writes(path, [&](size_t bytes, auto write) { write_atomically(path, bytes, write); });
    return volume_files(path);
}

template <typename TWrites> void write_in_set(tk_outset *set, int idx, TWrites writes)
{
    writes(tk_outset_path(set, idx), [&](size_t bytes, auto write) { write_into(set, idx, bytes, write); });
}

// The NIfTI header of an output on image's grid: the input's (both transforms and codes)
// where geometry holds one whose transform is this grid's, else both from the grid.
template <typename TImage>
tk_nifti_header nifti_output_header(const TImage *image, const FileGeometry *geometry, const std::vector<size_t> &dims,
                                    double pixdim4)
{
    double m[3][4];
    world_of(image, m);
    tk_nifti_header h{};
    bool kept = false;
    if (geometry && geometry->nifti) {
        double stored[3][4], scale = 1, worst = 0;
        tk_nifti_world_matrix(&geometry->header, stored);
        for (unsigned r = 0; r < 3; ++r)
            for (unsigned c = 0; c < 4; ++c) {
                scale = std::max(scale, std::fabs(stored[r][c]));
                worst = std::max(worst, std::fabs(stored[r][c] - m[r][c]));
            }
        kept = worst <= 1e-6 * scale;
    }
    if (kept) {
        h = geometry->header;
    } else {
        tk_nifti_set_qform(&h, m, 1);  // NIFTI_XFORM_SCANNER_ANAT
        std::memcpy(h.srow, m, sizeof h.srow);
        h.sform_code = 1;
        h.xyzt_units = 2 | 8;  // mm, s
    }
    h.ndim = static_cast<int>(dims.size());
    for (unsigned k = 0; k < dims.size(); ++k) h.dim[k + 1] = static_cast<int64_t>(dims[k]);
    for (unsigned k = 4; k < 8; ++k) h.pixdim[k] = 1;
    if (dims.size() > 3) h.pixdim[4] = pixdim4;
    return h;
}

void write_nifti(const std::string &file, const tk_nifti_header &h, const float *data, const std::string &path)
{
    if (!tk_nifti1_write_f32(file.c_str(), &h, data, ends_with(path, ".nii.gz")))
        throw std::runtime_error(without_temporary(tk_last_error(), file, path));
}

void write_mif(const std::string &file, const tk_mif_header &h, const float *data, const std::string &path)
{
    if (!tk_mif_write(file.c_str(), &h, data)) throw std::runtime_error(without_temporary(tk_last_error(), file, path));
}

// The writes of a scalar image, 3-D or 4-D (with its 4th axis' spacing, such as a frame
// time), through run(data bytes, write(temporary)).
template <typename TImage, typename TRun>
void scalar_image_writes(const TImage *image, const std::string &path, TRun run)
{
    constexpr unsigned dimension = TImage::ImageDimension;
    const auto size = image->GetLargestPossibleRegion().GetSize();
    const auto sp = image->GetSpacing();
    std::vector<size_t> dims;
    std::vector<double> vox;
    for (unsigned d = 0; d < dimension; ++d) dims.push_back(size[d]), vox.push_back(sp[d]);
    const double pixdim4 = dimension > 3 ? sp[dimension - 1] : 1.0;
    const size_t bytes = image->GetLargestPossibleRegion().GetNumberOfPixels() * sizeof(float);
    run(bytes, [&](const std::string &file) {
        if (is_nifti(path)) {
            write_nifti(file, nifti_output_header(image, nullptr, dims, pixdim4), image->GetBufferPointer(), path);
        } else if (is_mif(path)) {
            write_mif(file, mif_header_of(image, dims, vox, path), image->GetBufferPointer(), path);
        } else {
            itk_write(image, file);
        }
    });
}

// A reader's allocations failing (the header's size passed the memory check, but the
// memory was not there): a message naming the file, not a bare std::bad_alloc.
template <typename TRead> auto naming_memory(const std::string &path, TRead read) -> decltype(read())
{
    try {
        return read();
    } catch (const std::bad_alloc &) {
        throw std::runtime_error(path + ": out of memory while reading it; free memory, or read a smaller image");
    }
}

// A NIfTI file's data bytes, read plainly from a byte offset: through zlib, which reads a
// file that is no gzip stream as it is, where the build has it; else (no .nii.gz accepted
// then: image_probe refuses compressed data) with stdio.
class NiftiDataFile
{
public:
    explicit NiftiDataFile(const std::string &file)
    {
#ifdef TK_SH_IO_ZLIB
        gz_ = gzopen(file.c_str(), "rb");
        if (gz_) gzbuffer(gz_, 1 << 17);
#else
        f_ = std::fopen(file.c_str(), "rb");
#endif
    }
    ~NiftiDataFile()
    {
#ifdef TK_SH_IO_ZLIB
        if (gz_) gzclose(gz_);
#else
        if (f_) std::fclose(f_);
#endif
    }
    NiftiDataFile(const NiftiDataFile &) = delete;
    NiftiDataFile &operator=(const NiftiDataFile &) = delete;
    bool ok() const
    {
#ifdef TK_SH_IO_ZLIB
        return gz_ != nullptr;
#else
        return f_ != nullptr;
#endif
    }
    bool seek(uint64_t offset)
    {
#ifdef TK_SH_IO_ZLIB
        return gzseek(gz_, static_cast<z_off_t>(offset), SEEK_SET) == static_cast<z_off_t>(offset);
#else
        return fseeko(f_, static_cast<off_t>(offset), SEEK_SET) == 0;
#endif
    }
    // Exactly n bytes, or false.
    bool read(unsigned char *out, size_t n)
    {
#ifdef TK_SH_IO_ZLIB
        while (n) {
            const unsigned k = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
            const int got = gzread(gz_, out, k);
            if (got <= 0) return false;
            out += got, n -= static_cast<size_t>(got);
        }
        return true;
#else
        return std::fread(out, 1, n, f_) == n;
#endif
    }

private:
#ifdef TK_SH_IO_ZLIB
    gzFile gz_ = nullptr;
#else
    FILE *f_ = nullptr;
#endif
};

// ITK 5.2 reads NIfTI voxels through its bundled NIfTI library, whose nifti_read_buffer
// (nifti1_io.c) replaces every non-finite float32 or float64 value with 0 and says so only
// at its debug level 2: a NaN coefficient reached the tools as a plausible 0, so tk-track
// could not refuse it and tk-fibers gave that voxel peaks instead of NaN.  After ITK's read
// the values are read again here straight from the file (proven whole by image_probe
// before), and each non-finite one is put back where ITK's buffer holds it, scaled as ITK
// scales (slope * v + intercept where scl_slope is set: NaN stays NaN, an infinity stays
// one).  ITK's buffer is the file's order (x fastest) for a scalar image; a NIfTI vector
// image (dim[5] > 1) has its components fastest.  Integer data hold no non-finite value.
//
// every_value: the same pass writes every value, not only the non-finite ones, so that ITK
// need not read the voxels at all (nifti_voxels_are_ours: unscaled float data, where the
// value is the file's, exactly); a .nii.gz is then decompressed once, not twice.
template <typename T>
void restore_nifti_nonfinite(const std::string &path, const tk_nifti_header &h, const tk_image_info &info, T *buffer,
                             uint64_t pixels, uint64_t comps, bool every_value = false)
{
    const int vb = h.datatype == 16 ? 4 : h.datatype == 64 ? 8 : 0;  // NIFTI_TYPE_FLOAT32, FLOAT64
    if (!vb || h.version != 1) {
        if (every_value) throw std::logic_error("restore_nifti_nonfinite: every value asked of data that is not float");
        return;
    }
    const uint64_t values = info.bytes / static_cast<uint64_t>(vb);
    if (values != pixels * comps)
        throw std::runtime_error(path + ": ITK's image holds " + std::to_string(pixels * comps) +
                                 " values, the header's fields say " + std::to_string(values) +
                                 ": a header the readers disagree on is not used; re-save it with the tool that wrote it");
    // the byte order: the NIfTI-1 header's first field, sizeof_hdr, is 348 in the file's order
    unsigned char head[4];
    NiftiDataFile header_file(path);
    if (!header_file.ok() || !header_file.read(head, 4))
        throw std::runtime_error(path + ": cannot read its header again: " + std::strerror(errno) +
                                 "; check that it is readable");
    int32_t sizeof_hdr;
    std::memcpy(&sizeof_hdr, head, 4);
    const bool swap = sizeof_hdr != 348;
    NiftiDataFile data(info.data_file);
    if (!data.ok() || !data.seek(static_cast<uint64_t>(h.vox_offset)))
        throw std::runtime_error(path + ": cannot read its data again (" + info.data_file +
                                 "); check that it is readable and not changing");
    const bool scaled = h.scl_slope != 0 && std::isfinite(h.scl_slope) && (h.scl_slope != 1 || h.scl_inter != 0);
    std::vector<unsigned char> chunk(size_t(1) << 20);  // a whole number of values of either size
    for (uint64_t k0 = 0; k0 < values;) {
        const uint64_t n = std::min<uint64_t>(values - k0, chunk.size() / static_cast<size_t>(vb));
        if (!data.read(chunk.data(), static_cast<size_t>(n) * static_cast<size_t>(vb)))
            throw std::runtime_error(path + ": cannot read its data again (" + info.data_file +
                                     "); check that it is readable and not changing");
        for (uint64_t i = 0; i < n; ++i) {
            unsigned char b[8];
            const unsigned char *src = chunk.data() + i * static_cast<uint64_t>(vb);
            for (int j = 0; j < vb; ++j) b[j] = swap ? src[vb - 1 - j] : src[j];
            double v;
            if (vb == 4) {
                float f;
                std::memcpy(&f, b, 4);
                v = f;
            } else {
                std::memcpy(&v, b, 8);
            }
            if (!every_value && std::isfinite(v)) continue;
            if (scaled) v = v * h.scl_slope + h.scl_inter;
            const uint64_t k = k0 + i;
            buffer[comps == 1 ? k : (k % pixels) * comps + k / pixels] = static_cast<T>(v);
        }
        k0 += n;
    }
}

// Whether the voxels of a NIfTI can be read here in one pass instead of by ITK (then read
// again for the non-finite values): a NIfTI-1 file of float32 or float64 values, unscaled
// (scl_slope 0, or 1 with intercept 0), into an image of float or double components, where
// each value is the file's, converted as ITK converts it (a static_cast).
template <typename TImage> bool nifti_voxels_are_ours(const tk_nifti_header &h)
{
    using Component = typename itk::NumericTraits<typename TImage::PixelType>::ValueType;
    if (!std::is_floating_point<Component>::value) return false;
    const bool float_data = h.datatype == 16 || h.datatype == 64;
    const bool unscaled = h.scl_slope == 0 || !std::isfinite(h.scl_slope) || (h.scl_slope == 1 && h.scl_inter == 0);
    return h.version == 1 && float_data && unscaled;
}

// ITK's NIfTI library finds a gzip file's voxels by trying the name without ".gz" first
// (nifti1_io.c, nifti_findimgname: NAME.nii before NAME.nii.gz, NAME.img before NAME.img.gz),
// so FOD.nii lying beside FOD.nii.gz had its voxels read under FOD.nii.gz's header, silently
// (and `gunzip -k` leaves exactly that pair).  The file proven whole (info.data_file) is the
// one meant: where such a file shadows it, ITK reads it under its own name from a private
// folder holding links to the header and the data and nothing else; the folder goes with
// the reading.
class UnshadowedNifti {
public:
    UnshadowedNifti(const std::string &path, const tk_image_info &info) : path_(path)
    {
        const std::string data = info.data_file;
        if (data.size() < 4 || (data.compare(data.size() - 3, 3, ".gz") != 0 && data.compare(data.size() - 3, 3, ".GZ") != 0))
            return;
        const std::string shadow = data.substr(0, data.size() - 3);
        struct stat st;
        if (stat(shadow.c_str(), &st) != 0) return;
        const char *tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tk-nifti-XXXXXX";
        std::vector<char> name(pattern.begin(), pattern.end());
        name.push_back('\0');
        if (!mkdtemp(name.data()))
            throw std::runtime_error(path + ": " + shadow + " lies beside " + data +
                                     ", and ITK's NIfTI library (behind this tool) would read the voxels of " + shadow +
                                     " in place of " + data + "'s; the private folder to read it from could not be made (" +
                                     std::strerror(errno) + "); rename or move one of the two");
        dir_ = name.data();
        path_ = link(path);
        if (data != path) link(data);
    }
    ~UnshadowedNifti()
    {
        for (const std::string &l : links_) unlink(l.c_str());
        if (!dir_.empty()) rmdir(dir_.c_str());
    }
    UnshadowedNifti(const UnshadowedNifti &) = delete;
    UnshadowedNifti &operator=(const UnshadowedNifti &) = delete;
    // the name ITK reads the image under
    const std::string &path() const { return path_; }

private:
    std::string link(const std::string &file)
    {
        std::unique_ptr<char, decltype(&std::free)> real(realpath(file.c_str(), nullptr), &std::free);
        const size_t slash = file.find_last_of('/');
        const std::string at = dir_ + "/" + (slash == std::string::npos ? file : file.substr(slash + 1));
        if (!real || symlink(real.get(), at.c_str()) != 0)
            throw std::runtime_error(file + ": cannot be linked into a private folder (" + std::string(std::strerror(errno)) +
                                     ") to be read without the file without .gz beside it; rename or move that one");
        links_.push_back(at);
        return at;
    }
    std::string path_, dir_;
    std::vector<std::string> links_;
};

// keep_nonfinite: a NIfTI's non-finite values as the file holds them (restore_nifti_nonfinite),
// for the SH and peak volumes, where a NaN must be seen (a mask's NaN stays ITK's 0).
template <typename TImage>
typename TImage::Pointer read(const std::string &path, const tk_image_info &info, FileGeometry *geometry = nullptr,
                              bool keep_nonfinite = false)
{
    auto reader = itk::ImageFileReader<TImage>::New();
    const tk_image_format format = info.format;
    std::unique_ptr<UnshadowedNifti> unshadowed;
    if (format == TK_IMAGE_NIFTI) unshadowed.reset(new UnshadowedNifti(path, info));
    const std::string &name = unshadowed ? unshadowed->path() : path;
    reader->SetImageIO(itk_io_for(name, info));
    reader->SetFileName(name);
    // A NIfTI's header, read here once for the voxels' reading, the geometry and the non-finite
    // values; a header this reader refuses is said after ITK's own verdict, as before.
    tk_nifti_header h{};
    const bool nifti = format == TK_IMAGE_NIFTI;
    const bool header = nifti && tk_nifti_read_header(path.c_str(), &h) != 0;
    const std::string header_error = nifti && !header ? tk_last_error() : "";
    const bool ours = header && keep_nonfinite && nifti_voxels_are_ours<TImage>(h);
    // ITK reads the header (the geometry, the vector length) and, unless the voxels are
    // ours to read, the voxels.
    try {
        if (ours)
            reader->UpdateOutputInformation();
        else
            reader->Update();
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(path + ": cannot read: " + itk_message(e) +
                                 "; re-save it with the tool that wrote it");
    }
    typename TImage::Pointer image = reader->GetOutput();
    if (ours) {
        // standalone, so that no later pipeline update has the reader fill it again
        image->DisconnectPipeline();
        image->SetBufferedRegion(image->GetLargestPossibleRegion());
        image->Allocate();
    }
    if (nifti) {
        if (!header) throw std::runtime_error(header_error);
        apply_nifti_geometry(image.GetPointer(), path, h, geometry);
        if (keep_nonfinite)
            restore_nifti_nonfinite(path, h, info, image->GetBufferPointer(),
                                    image->GetLargestPossibleRegion().GetNumberOfPixels(),
                                    image->GetNumberOfComponentsPerPixel(), ours);
    }
    return image;
}

// An image of TImage's type on a .mif's grid (its first ImageDimension axes; a 4th axis'
// spacing from vox, 1 where that is no positive number), allocated, its values not set.
template <typename TImage> typename TImage::Pointer on_mif_grid(const MifImage &im, const std::string &path)
{
    constexpr unsigned dimension = TImage::ImageDimension;
    typename TImage::SizeType size;
    for (unsigned d = 0; d < dimension; ++d) size[d] = im.dims[d];
    auto out = TImage::New();
    out->SetRegions(typename TImage::RegionType(size));
    if (dimension > 3) {
        auto spacing = out->GetSpacing();
        const double vox = im.h.vox[dimension - 1];
        spacing[dimension - 1] = std::isfinite(vox) && vox > 0 ? vox : 1.0;
        out->SetSpacing(spacing);
    }
    set_mif_world(out.GetPointer(), im.h, path);
    out->Allocate();
    return out;
}

// A scalar image of TImage's type from any format the tools read, where problem(dims,
// components) of its header says "" (else it throws that message).
template <typename TImage, typename TProblem>
typename TImage::Pointer read_scalar(const std::string &path, TProblem problem)
{
    return naming_memory(path, [&]() -> typename TImage::Pointer {
        const tk_image_info info = probe_file(path);
        if (info.format == TK_IMAGE_MIF) {
            MifImage im = read_mif(path);
            const std::string why = problem(im.dims, 1);
            if (!why.empty()) throw std::runtime_error(why);
            auto out = on_mif_grid<TImage>(im, path);
            std::copy(im.data.get(), im.data.get() + out->GetLargestPossibleRegion().GetNumberOfPixels(),
                      out->GetBufferPointer());
            return out;
        }
        auto io = itk_header(path, info);
        std::vector<size_t> dims;
        for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d) dims.push_back(io->GetDimensions(d));
        const std::string why = problem(dims, io->GetNumberOfComponents());
        if (!why.empty()) throw std::runtime_error(why);
        // NaN as the file holds it: a completion input's NaN is no observed 0 (the filters
        // refuse a non-finite observed voxel, and a masked-out one is no observation)
        return read<TImage>(path, info, nullptr, true);
    });
}

const char *const kOutputExtensions[] = {".nii", ".nii.gz", ".mif", ".mif.gz", ".nrrd", ".nhdr", ".mha", ".mhd"};

}  // namespace

std::string itk_message(const itk::ExceptionObject &e)
{
    std::vector<std::string> lines;
    std::istringstream in(e.GetDescription());
    for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == ':')) line.pop_back();
        if (!line.empty()) lines.push_back(line);
    }
    if (lines.empty()) return "unknown ITK error";
    std::string first = lines.front();
    if (first.rfind("ITK ERROR: ", 0) == 0) {  // "ITK ERROR: NrrdImageIO(0x55...): Read: ..."
        size_t close = first.find("): ");
        if (close != std::string::npos) first = first.substr(close + 3);
    }
    if (lines.size() > 1) {
        std::string last = lines.back();  // "[nrrd] _nrrdEncodingRaw_read: fread got only ..."
        if (!last.empty() && last[0] == '[') {
            size_t colon = last.find(": ");
            if (colon != std::string::npos) last = last.substr(colon + 2);
        }
        first += ": " + last;
    }
    return first;
}


VolumeShape probe_volume(const std::string &path)
{
    const tk_image_info info = probe_file(path);
    if (info.format == TK_IMAGE_MIF) {
        const MifImage im = mif_header(path);
        return {static_cast<unsigned>(im.dims.size()), 1};
    }
    auto io = itk_header(path, info);
    return {io->GetNumberOfDimensions(), io->GetNumberOfComponents()};
}

ScalarImage3::Pointer read_scalar_volume(const std::string &path)
{
    return read_scalar<ScalarImage3>(path, [&](const std::vector<size_t> &dims, unsigned components) {
        const bool three_d = dims.size() == 3 || (dims.size() == 4 && dims[3] == 1);
        return components == 1 && three_d ? std::string() : path + ": expected a 3-D scalar image";
    });
}

std::vector<std::string> write_scalar_volume(const ScalarImage3 *image, const std::string &path)
{
    return write_alone(path, [&](const std::string &p, auto run) { scalar_image_writes(image, p, run); });
}

void write_scalar_volume(const ScalarImage3 *image, tk_outset *set, int idx)
{
    write_in_set(set, idx, [&](const std::string &p, auto run) { scalar_image_writes(image, p, run); });
}

ScalarImage4::Pointer read_scalar_image4(const std::string &path)
{
    return read_scalar<ScalarImage4>(path, [&](const std::vector<size_t> &dims, unsigned components) {
        return components == 1 && dims.size() == 4 ? std::string()
                                                   : path + ": expected a 4-D scalar image, got " +
                                                         std::to_string(dims.size()) + "-D with " +
                                                         std::to_string(components) + " component(s)";
    });
}

std::vector<std::string> write_scalar_image4(const ScalarImage4 *image, const std::string &path)
{
    return write_alone(path, [&](const std::string &p, auto run) { scalar_image_writes(image, p, run); });
}

void write_scalar_image4(const ScalarImage4 *image, tk_outset *set, int idx)
{
    write_in_set(set, idx, [&](const std::string &p, auto run) { scalar_image_writes(image, p, run); });
}

VectorImage3::Pointer read_vector_volume(const std::string &path, FileGeometry *geometry)
{
    return naming_memory(path, [&]() -> VectorImage3::Pointer {
        if (geometry) *geometry = FileGeometry();
        Image4::Pointer in;  // ITK's 4-D image (values), or a .mif's geometry only
        MifImage im;
        std::vector<size_t> size4;
        const tk_image_info info = probe_file(path);
        if (info.format == TK_IMAGE_MIF) {
            im = mif_header(path);
            if (im.dims.size() != 4)
                throw std::runtime_error(path +
                                         ": expected a 4-D image (SH on the 4th axis) or a 3-D vector image, got " +
                                         std::to_string(im.dims.size()) + "-D with 1 component(s); give the SH volume "
                                         "(e.g. the FOD of dwi2fod)");
            size4 = im.dims;
            in = Image4::New();
            set_mif_world(in.GetPointer(), im.h, path);
        } else {
            auto io = itk_header(path, info);
            const unsigned dims = io->GetNumberOfDimensions(), comps = io->GetNumberOfComponents();
            if (dims == 3 && comps > 1) return read<VectorImage3>(path, info, geometry, true);
            if (dims != 4 || comps != 1)
                throw std::runtime_error(path +
                                         ": expected a 4-D image (SH on the 4th axis) or a 3-D vector image, got " +
                                         std::to_string(dims) + "-D with " + std::to_string(comps) +
                                         " component(s); give the SH volume (e.g. the FOD of dwi2fod)");
            in = read<Image4>(path, info, geometry, true);
            const auto s = in->GetLargestPossibleRegion().GetSize();
            size4 = {s[0], s[1], s[2], s[3]};
        }
        auto out = VectorImage3::New();
        VectorImage3::RegionType region;
        for (unsigned r = 0; r < 3; ++r) region.SetSize(r, size4[r]);
        out->SetRegions(region);
        copy_spatial_geometry(in.GetPointer(), out.GetPointer());
        out->SetNumberOfComponentsPerPixel(static_cast<unsigned>(size4[3]));
        out->Allocate();
        float *dst = out->GetBufferPointer();
        const size_t nvox = region.GetNumberOfPixels(), nt = size4[3];
        if (info.format == TK_IMAGE_MIF) {
            // the volumes fastest, as the vector image holds its components (then x, y, z and
            // any trailing axes of size 1): one pass
            int order[TK_MIF_MAX_AXES] = {3, 0, 1, 2};
            for (int a = 4; a < im.h.ndim; ++a) order[a] = a;
            if (!tk_mif_read_data_into(path.c_str(), &im.h, order, dst)) throw std::runtime_error(tk_last_error());
            return out;
        }
        // ITK's 4-D buffer is x-fastest: voxel v, volume t sits at t * nvox + v; transposed in
        // blocks of voxels whose components stay in the cache
        const float *src = in->GetBufferPointer();
        const size_t block = 256;
        for (size_t v0 = 0; v0 < nvox; v0 += block) {
            const size_t v1 = std::min(nvox, v0 + block);
            for (size_t t = 0; t < nt; ++t)
                for (size_t v = v0; v < v1; ++v) dst[v * nt + t] = src[t * nvox + v];
        }
        return out;
    });
}

namespace {
// A mask holds 0 (outside) and anything else (inside); NaN is neither, and tools disagree on
// it (MRtrix3 takes it as inside, ITK's NIfTI reader hands it over as 0): refused, naming the
// first such voxel, rather than guessed.
template <typename T> void refuse_nan_in_mask(const std::string &path, const T *values, const MaskImage3 *grid)
{
    const auto size = grid->GetLargestPossibleRegion().GetSize();
    const size_t n = grid->GetLargestPossibleRegion().GetNumberOfPixels();
    for (size_t v = 0; v < n; ++v)
        if (std::isnan(values[v]))
            throw std::runtime_error(path + ": NaN at voxel (" + std::to_string(v % size[0]) + ", " +
                                     std::to_string(v / size[0] % size[1]) + ", " +
                                     std::to_string(v / size[0] / size[1]) +
                                     "): a mask holds 0 (outside) or another number (inside); make its NaN voxels "
                                     "0 or 1 (mrcalc MASK -finite MASK 0 -if OUT makes them 0)");
}
}  // namespace

MaskImage3::Pointer read_mask(const std::string &path)
{
    return naming_memory(path, [&]() -> MaskImage3::Pointer {
        const tk_image_info info = probe_file(path);
        if (info.format == TK_IMAGE_MIF) {
            MifImage im = read_mif(path);
            if (im.dims.size() != 3 && !(im.dims.size() == 4 && im.dims[3] == 1))
                throw std::runtime_error(path + ": a mask must be a 3-D image");
            auto mask = on_mif_grid<MaskImage3>(im, path);
            const size_t n = mask->GetLargestPossibleRegion().GetNumberOfPixels();
            refuse_nan_in_mask(path, im.data.get(), mask.GetPointer());
            for (size_t v = 0; v < n; ++v) mask->GetBufferPointer()[v] = im.data.get()[v] != 0;
            return mask;
        }
        auto io = itk_header(path, info);
        if (io->GetNumberOfDimensions() != 3 && !(io->GetNumberOfDimensions() == 4 && io->GetDimensions(3) == 1))
            throw std::runtime_error(path + ": a mask must be a 3-D image");
        if (io->GetNumberOfComponents() != 1) throw std::runtime_error(path + ": a mask must have one component");
        // Read as double, then nonzero -> 1 (what every user of a mask tests): ITK's own cast to
        // unsigned char would turn a probability mask's 0.5 into 0 and is undefined for values
        // outside 0..255; every voxel type converts to double exactly enough for "!= 0".
        // A NIfTI's NaN as the file holds it (ITK's library reads it as 0), to be refused.
        auto values = read<itk::Image<double, 3>>(path, info, nullptr, true);
        auto mask = MaskImage3::New();
        mask->CopyInformation(values);
        mask->SetRegions(values->GetLargestPossibleRegion());
        mask->Allocate();
        const size_t n = values->GetLargestPossibleRegion().GetNumberOfPixels();
        const double *src = values->GetBufferPointer();
        refuse_nan_in_mask(path, src, mask.GetPointer());
        unsigned char *dst = mask->GetBufferPointer();
        for (size_t v = 0; v < n; ++v) dst[v] = src[v] != 0;
        return mask;
    });
}

template <typename TRun>
void vector_volume_writes(const VectorImage3 *image, const std::string &path, Components what,
                          const FileGeometry *geometry, TRun run)
{
    const auto size3 = image->GetLargestPossibleRegion().GetSize();
    const size_t nvox = image->GetLargestPossibleRegion().GetNumberOfPixels(),
                 nt = image->GetNumberOfComponentsPerPixel();
    const std::vector<size_t> dims = {size3[0], size3[1], size3[2], nt};
    const size_t bytes = nvox * nt * sizeof(float);
    if (is_nifti(path)) {
        // 4-D, volume-major: voxel v, volume t at t * nvox + v
        std::vector<float> volumes(nvox * nt);
        const float *src = image->GetBufferPointer();
        for (size_t v = 0; v < nvox; ++v)
            for (size_t t = 0; t < nt; ++t) volumes[t * nvox + v] = src[v * nt + t];
        const tk_nifti_header h = nifti_output_header(image, geometry, dims, 1);
        return run(bytes, [&](const std::string &file) { write_nifti(file, h, volumes.data(), path); });
    }
    if (is_mif(path)) {
        // the buffer as it is: layout +1,+2,+3,+0 (a voxel's values together, as dwi2fod writes)
        const auto sp = image->GetSpacing();
        tk_mif_header h = mif_header_of(image, dims, {sp[0], sp[1], sp[2], 1.0}, path);
        const int layout[4] = {2, 3, 4, 1};
        std::copy(layout, layout + 4, h.layout);
        return run(bytes, [&](const std::string &file) { write_mif(file, h, image->GetBufferPointer(), path); });
    }
    if (what == Components::Values) return run(bytes, [&](const std::string &file) { itk_write(image, file); });
    // RAS vectors into ITK's LPS frame (what NRRD's "space: left-posterior-superior" and
    // MetaImage's orientation declare): x and y of every triple negated
    if (nt % 3) throw std::runtime_error(path + ": cannot write " + std::to_string(nt) + " components as vectors");
    auto lps = VectorImage3::New();
    lps->CopyInformation(image);
    lps->SetRegions(image->GetLargestPossibleRegion());
    lps->SetNumberOfComponentsPerPixel(static_cast<unsigned>(nt));
    lps->Allocate();
    const float *src = image->GetBufferPointer();
    float *dst = lps->GetBufferPointer();
    for (size_t i = 0; i < nvox * nt; ++i) dst[i] = i % 3 < 2 && !std::isnan(src[i]) ? -src[i] : src[i];  // NaN as is
    if (is_nrrd(path)) {
        // said in the file too: the vectors' coordinates are those of the space (LPS)
        std::vector<std::vector<double>> frame = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        itk::EncapsulateMetaData<std::vector<std::vector<double>>>(lps->GetMetaDataDictionary(),
                                                                   "NRRD_measurement frame", frame);
    }
    return run(bytes, [&](const std::string &file) { itk_write(lps.GetPointer(), file); });
}

std::vector<std::string> write_vector_volume(const VectorImage3 *image, const std::string &path, Components what,
                                             const FileGeometry *geometry)
{
    return write_alone(path,
                       [&](const std::string &p, auto run) { vector_volume_writes(image, p, what, geometry, run); });
}

void write_vector_volume(const VectorImage3 *image, tk_outset *set, int idx, Components what,
                         const FileGeometry *geometry)
{
    write_in_set(set, idx,
                 [&](const std::string &p, auto run) { vector_volume_writes(image, p, what, geometry, run); });
}

const char *volume_output_extensions() { return ".nii, .nii.gz, .mif, .mif.gz, .nrrd, .nhdr, .mha or .mhd"; }

std::string volume_output_problem(const std::string &path)
{
    for (const char *ext : kOutputExtensions)
        if (ends_with(path, ext) && path.size() > std::strlen(ext) && path[path.size() - std::strlen(ext) - 1] != '/')
            return "";
    return path + ": unknown output format (by its extension): volumes are written as " + volume_output_extensions();
}

std::vector<std::string> volume_files(const std::string &path)
{
    if (!is_detached(path)) return {path};
    if (ends_with(path, ".hdr")) return {path.substr(0, path.size() - 4) + ".img", path};
    return {path.substr(0, path.size() - (ends_with(path, ".nhdr") ? 5 : 4)) + ".raw", path};
}

std::string creation_problem(const std::string &path)
{
    // the probe is made and removed with the cleanup signals held (tk_output_set.h): a Ctrl-C
    // at this moment must not leave it behind, as the bad-input matrix's SIGINT row once did
    const int err = tk_outset_probe(path.c_str());
    return err ? path + ": cannot create: " + std::strerror(err) : "";
}

int add_volume_output(tk_outset *set, const char *flag, const std::string &path)
{
    const std::vector<std::string> files = volume_files(path);
    if (files.size() == 1) return tk_outset_add(set, flag, path.c_str(), nullptr);
    const char *companions[] = {files[0].c_str(), nullptr};  // the data file, renamed before the header
    return tk_outset_add(set, flag, path.c_str(), companions);
}

int register_volume_output(const char *prog, const std::vector<std::pair<const char *, std::string>> &inputs,
                           const char *flag, const std::string &output, VolumeOutput &out)
{
    out.set.reset(tk_outset_new(prog));
    if (!out.set) {
        std::fprintf(stderr, "%s: error: out of memory\n", prog);
        return 1;
    }
    for (const auto &in : inputs)
        if (!in.second.empty())
            for (const std::string &f : volume_files(in.second))
                if (int bad = tk_outset_input(out.set.get(), in.first, f.c_str())) return bad;
    out.idx = add_volume_output(out.set.get(), flag, output);
    return out.idx < 0 ? -out.idx : 0;
}

}  // namespace tk
