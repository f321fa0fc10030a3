#include "sh_image_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "itkImageFileReader.h"
#include "itkImageFileWriter.h"
#include "itkImageIOFactory.h"
#include "itkImageRegionConstIterator.h"
#include "itk_zlib.h"

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
    if (stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory, not an image");
    if (st.st_size == 0) throw std::runtime_error(path + ": empty file");
}

bool ends_with(const std::string &path, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
}

// An uncompressed NIfTI file shorter than its header says: ITK would read it into a buffer
// of the claimed size (zeros where the file ends) before noticing, if at all.  (A claim
// beyond this machine's memory is refused after the header is read, with the shape.)
void check_nifti_not_truncated(const std::string &path, const itk::ImageIOBase *io)
{
    if (!ends_with(path, ".nii")) return;
    uint64_t stored = io->GetNumberOfComponents();
    bool overflow = __builtin_mul_overflow(stored, static_cast<uint64_t>(io->GetComponentSize()), &stored);
    for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d)
        overflow = overflow || __builtin_mul_overflow(stored, static_cast<uint64_t>(io->GetDimensions(d)), &stored);
    struct stat st;
    if (!overflow && stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) < stored)
        throw std::runtime_error(path + ": truncated: the header claims " + std::to_string(stored) +
                                 " bytes of voxel data but the file holds " + std::to_string(st.st_size) + " bytes");
}

// ITK 5.2's MetaIO trusts the header too far: it takes NDims at its word (a header claiming
// 10^120 dimensions keeps it reading for minutes) and copies each key, the text up to the
// next '=' even across lines, into a 255-byte buffer (a longer one overflows it).  So the
// header's records, up to ElementDataFile (the last), are checked here first.
void check_metaimage_header(const std::string &path)
{
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return;  // ITK reports it
    std::string text(1 << 20, '\0');
    text.resize(std::fread(&text[0], 1, text.size(), f));
    std::fclose(f);
    auto trim = [](const std::string &t) {
        const size_t a = t.find_first_not_of(" \t\r\n"), b = t.find_last_not_of(" \t\r\n");
        return a == std::string::npos ? std::string() : t.substr(a, b - a + 1);
    };
    for (size_t pos = 0; pos < text.size();) {
        const size_t eq = text.find('=', pos);
        if (eq == std::string::npos) break;  // ITK reports what is missing
        if (eq - pos > 128)
            throw std::runtime_error(path + ": malformed MetaImage header: " + std::to_string(eq - pos) +
                                     " bytes before an '=' (a key or a line without '=')");
        const size_t eol = std::min(text.find('\n', eq), text.size());
        // MetaIO takes a record's key from the line the '=' is on: junk lines before it
        // (no '=') do not hide an NDims from this check
        std::string raw = text.substr(pos, eq - pos);
        if (const size_t nl = raw.find_last_of('\n'); nl != std::string::npos) raw.erase(0, nl + 1);
        const std::string key = trim(raw), value = trim(text.substr(eq + 1, eol - eq - 1));
        if (key == "ElementDataFile") {
            // MetaIO uses a name with '%' as a printf format for numbered slice files
            // ("slice%03d.raw 1 40 1"): anything but one %d-style conversion would be a
            // format it cannot fill (it threw from inside the reader, or worse)
            const size_t pct = value.find('%');
            if (pct != std::string::npos) {
                size_t k = pct + 1;
                while (k < value.size() && value[k] >= '0' && value[k] <= '9') ++k;
                if (k >= value.size() || value[k] != 'd' || value.find('%', k) != std::string::npos)
                    throw std::runtime_error(path + ": malformed MetaImage header: ElementDataFile '" +
                                             value.substr(0, 40) + "' has a '%' that is not one %d file-number pattern");
            }
            break;
        }
        if (key == "NDims") {
            const bool small = !value.empty() && value.size() <= 2 && value.find_first_not_of("0123456789") == std::string::npos;
            if (!small || std::stoi(value) < 1 || std::stoi(value) > 16)
                throw std::runtime_error(path + ": NDims '" + value.substr(0, 40) + "' is not a dimension from 1 to 16");
        }
        pos = eol + 1;
    }
}

// ITK 5.2's NIfTI reader builds the orientation from pixdim and the qform or sform its codes
// select, and aborts the process (vnl's assert_finite) when they hold NaN, or values so
// large that the matrix overflows.  A NIfTI-1 header (gzipped or not: gzread reads both) is
// checked for that first; nothing in millimetres comes near 1e6.
void check_nifti_header(const std::string &path)
{
    unsigned char h[348];
    gzFile g = gzopen(path.c_str(), "rb");
    if (!g) return;  // ITK reports it
    const int got = gzread(g, h, sizeof h);
    gzclose(g);
    if (got != static_cast<int>(sizeof h)) return;
    // NIfTI-1 by its size field (either byte order) or by its magic: ITK's reader takes a
    // header with the magic whatever the size field says.
    const bool big348 = h[0] == 0 && h[1] == 0 && h[2] == 1 && h[3] == 0x5c;
    const bool little348 = h[0] == 0x5c && h[1] == 1 && h[2] == 0 && h[3] == 0;
    const bool magic = h[344] == 'n' && (h[345] == '+' || h[345] == 'i') && h[346] == '1' && h[347] == 0;
    if (!big348 && !little348 && !magic) return;  // not NIfTI-1: ITK decides
    // The byte order as the NIfTI library reads it: dim[0] (1..7) decides where it is set,
    // else the size field.
    const int dim0_little = h[40] | h[41] << 8, dim0_big = h[41] | h[40] << 8;
    const bool swap = (dim0_little >= 1 && dim0_little <= 7) ? false
                      : (dim0_big >= 1 && dim0_big <= 7) ? true
                                                           : big348;
    auto bytes = [&](size_t at, unsigned n, unsigned char *out) {
        for (unsigned k = 0; k < n; ++k) out[k] = h[at + (swap ? n - 1 - k : k)];
    };
    auto f32 = [&](size_t at) {
        unsigned char b[4];
        bytes(at, 4, b);
        float v;
        std::memcpy(&v, b, 4);
        return v;
    };
    auto i16 = [&](size_t at) {
        unsigned char b[2];
        bytes(at, 2, b);
        int16_t v;
        std::memcpy(&v, b, 2);
        return v;
    };
    auto check = [&](const char *what, size_t at, int count) {
        for (int k = 0; k < count; ++k) {
            const float v = f32(at + 4 * static_cast<size_t>(k));
            if (!std::isfinite(v) || std::fabs(v) > 1e6f)
                throw std::runtime_error(path + ": NIfTI header: " + what + " holds " + std::to_string(v) +
                                         ", no orientation can be built from it");
        }
    };
    const int dims = std::min<int>(std::max<int>(i16(40), 1), 7);
    check("pixdim", 80, dims);                     // pixdim[1..dim[0]]; pixdim[0] is qfac, a sign
    if (i16(252) > 0) check("the qform", 256, 6);  // quatern_b, c, d, qoffset_x, y, z
    if (i16(254) > 0) check("the sform", 280, 12); // srow_x, srow_y, srow_z
}

itk::ImageIOBase::Pointer probe(const std::string &path)
{
    check_readable(path);
    if (ends_with(path, ".mha") || ends_with(path, ".mhd")) check_metaimage_header(path);
    if (ends_with(path, ".nii") || ends_with(path, ".nii.gz")) check_nifti_header(path);
    auto io = itk::ImageIOFactory::CreateImageIO(path.c_str(), itk::CommonEnums::IOFileMode::ReadMode);
    if (!io) throw std::runtime_error(path + ": not an image format ITK can read");
    // ITK picks a reader by content too: bytes that start like a PNG go to libpng, which
    // aborts the process on a corrupt one.  Volumes come in the three formats documented.
    const std::string kind = io->GetNameOfClass();
    if (kind != "NiftiImageIO" && kind != "NrrdImageIO" && kind != "MetaImageIO")
        throw std::runtime_error(path + ": read as " + kind + "; volumes are read from NIfTI (.nii, .nii.gz), NRRD "
                                        "(.nrrd, .nhdr) or MetaImage (.mha, .mhd) files");
    io->SetFileName(path);
    try {
        io->ReadImageInformation();
        for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d)
            if (io->GetDimensions(d) == 0)
                throw std::runtime_error(path + ": the header gives axis " + std::to_string(d + 1) +
                                         " size 0 (an empty image)");
        if (io->GetNumberOfComponents() == 0) throw std::runtime_error(path + ": the header gives 0 components per voxel");
        check_nifti_not_truncated(path, io);  // ITK throws for a component type it does not know
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(path + ": unreadable image header: " + itk_message(e));
    }
    // The tools hold it as float (twice while converting layouts): refuse what cannot fit
    // before ITK tries to allocate it.
    double values = io->GetNumberOfComponents();
    std::ostringstream size;
    for (unsigned d = 0; d < io->GetNumberOfDimensions(); ++d) {
        values *= static_cast<double>(io->GetDimensions(d));
        size << (d ? " x " : "") << io->GetDimensions(d);
    }
    const double bytes = 2 * values * sizeof(float), have = physical_memory();
    if (have > 0 && bytes > have) {
        std::ostringstream why;
        why.precision(3);
        why << path << ": the header claims " << size.str() << " voxels of " << io->GetNumberOfComponents()
            << " component(s), which need " << bytes / (1 << 30) << " GiB, more than this machine's "
            << have / (1 << 30) << " GiB of memory";
        throw std::runtime_error(why.str());
    }
    return io;
}

// The temporary an output goes to first, created here so that an unwritable place is
// reported with the system's reason (ITK's writers do not say why).
std::string make_temporary(const std::string &path)
{
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string tmp = dir + "/.tk-tmp-" + std::to_string(getpid()) + "-" + base;
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
    close(fd);
    return tmp;
}

// ITK's messages name the temporary: name the output instead.
std::string without_temporary(std::string text, const std::string &tmp, const std::string &path)
{
    for (size_t at; (at = text.find(tmp)) != std::string::npos;) text.replace(at, tmp.size(), path);
    return text;
}

bool is_nifti(const std::string &path) { return ends_with(path, ".nii") || ends_with(path, ".nii.gz"); }

template <typename TImage> typename TImage::Pointer read(const std::string &path)
{
    auto reader = itk::ImageFileReader<TImage>::New();
    reader->SetFileName(path);
    try {
        reader->Update();
    } catch (const itk::ExceptionObject &e) {
        throw std::runtime_error(path + ": cannot read: " + itk_message(e));
    }
    return reader->GetOutput();
}

// Written to a temporary beside path (keeping the extension ITK picks the format from)
// and renamed: a failure leaves nothing behind.
template <typename TImage> void write_atomically(const TImage *image, const std::string &path)
{
    const std::string tmp = make_temporary(path);
    try {
        auto writer = itk::ImageFileWriter<TImage>::New();
        writer->SetFileName(tmp);
        writer->SetInput(image);
        writer->Update();
    } catch (const itk::ExceptionObject &e) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + without_temporary(itk_message(e), tmp, path));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
}

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
    auto io = probe(path);
    return {io->GetNumberOfDimensions(), io->GetNumberOfComponents()};
}

ScalarImage3::Pointer read_scalar_volume(const std::string &path)
{
    auto io = probe(path);
    if (io->GetNumberOfComponents() != 1 ||
        !(io->GetNumberOfDimensions() == 3 || (io->GetNumberOfDimensions() == 4 && io->GetDimensions(3) == 1)))
        throw std::runtime_error(path + ": expected a 3-D scalar image");
    return read<ScalarImage3>(path);
}

void write_scalar_volume(const ScalarImage3 *image, const std::string &path) { write_atomically(image, path); }

ScalarImage4::Pointer read_scalar_image4(const std::string &path)
{
    auto io = probe(path);
    if (io->GetNumberOfComponents() != 1 || io->GetNumberOfDimensions() != 4)
        throw std::runtime_error(path + ": expected a 4-D scalar image, got " +
                                 std::to_string(io->GetNumberOfDimensions()) + "-D with " +
                                 std::to_string(io->GetNumberOfComponents()) + " component(s)");
    return read<ScalarImage4>(path);
}

void write_scalar_image4(const ScalarImage4 *image, const std::string &path) { write_atomically(image, path); }

VectorImage3::Pointer read_vector_volume(const std::string &path)
{
    auto io = probe(path);
    const unsigned dims = io->GetNumberOfDimensions(), comps = io->GetNumberOfComponents();
    if (dims == 3 && comps > 1) return read<VectorImage3>(path);
    if (dims != 4 || comps != 1)
        throw std::runtime_error(path + ": expected a 4-D image (SH on the 4th axis) or a 3-D vector image, got " +
                                 std::to_string(dims) + "-D with " + std::to_string(comps) + " component(s)");
    auto in = read<Image4>(path);
    const auto size4 = in->GetLargestPossibleRegion().GetSize();
    auto out = VectorImage3::New();
    VectorImage3::RegionType region;
    VectorImage3::SpacingType spacing;
    VectorImage3::PointType origin;
    VectorImage3::DirectionType direction;
    for (unsigned r = 0; r < 3; ++r) {
        region.SetSize(r, size4[r]);
        spacing[r] = in->GetSpacing()[r];
        origin[r] = in->GetOrigin()[r];
        for (unsigned c = 0; c < 3; ++c) direction[r][c] = in->GetDirection()[r][c];
    }
    out->SetRegions(region);
    out->SetSpacing(spacing);
    out->SetOrigin(origin);
    out->SetDirection(direction);
    out->SetNumberOfComponentsPerPixel(static_cast<unsigned>(size4[3]));
    out->Allocate();
    // Both buffers are x-fastest: voxel v, volume t sits at t * nvox + v in the 4-D image.
    const size_t nvox = region.GetNumberOfPixels(), nt = size4[3];
    const float *src = in->GetBufferPointer();
    float *dst = out->GetBufferPointer();
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < nt; ++t) dst[v * nt + t] = src[t * nvox + v];
    return out;
}

MaskImage3::Pointer read_mask(const std::string &path)
{
    auto io = probe(path);
    if (io->GetNumberOfDimensions() != 3 && !(io->GetNumberOfDimensions() == 4 && io->GetDimensions(3) == 1))
        throw std::runtime_error(path + ": a mask must be a 3-D image");
    if (io->GetNumberOfComponents() != 1) throw std::runtime_error(path + ": a mask must have one component");
    // Read as double, then nonzero -> 1 (what every user of a mask tests): ITK's own cast to
    // unsigned char would turn a probability mask's 0.5 into 0 and is undefined for values
    // outside 0..255; every voxel type converts to double exactly enough for "!= 0".
    auto values = read<itk::Image<double, 3>>(path);
    auto mask = MaskImage3::New();
    mask->CopyInformation(values);
    mask->SetRegions(values->GetLargestPossibleRegion());
    mask->Allocate();
    const size_t n = values->GetLargestPossibleRegion().GetNumberOfPixels();
    const double *src = values->GetBufferPointer();
    unsigned char *dst = mask->GetBufferPointer();
    for (size_t v = 0; v < n; ++v) dst[v] = src[v] != 0;
    return mask;
}

void write_vector_volume(const VectorImage3 *image, const std::string &path)
{
    // temporary beside the target, keeping the extension ITK picks the format from
    const std::string tmp = make_temporary(path);
    try {
        if (is_nifti(path)) {
            auto out = Image4::New();
            Image4::RegionType region;
            Image4::SpacingType spacing;
            Image4::PointType origin;
            Image4::DirectionType direction;
            direction.SetIdentity();
            const auto size3 = image->GetLargestPossibleRegion().GetSize();
            const size_t nt = image->GetNumberOfComponentsPerPixel();
            for (unsigned r = 0; r < 3; ++r) {
                region.SetSize(r, size3[r]);
                spacing[r] = image->GetSpacing()[r];
                origin[r] = image->GetOrigin()[r];
                for (unsigned c = 0; c < 3; ++c) direction[r][c] = image->GetDirection()[r][c];
            }
            region.SetSize(3, nt);
            spacing[3] = 1;
            origin[3] = 0;
            out->SetRegions(region);
            out->SetSpacing(spacing);
            out->SetOrigin(origin);
            out->SetDirection(direction);
            out->Allocate();
            const size_t nvox = image->GetLargestPossibleRegion().GetNumberOfPixels();
            const float *src = image->GetBufferPointer();
            float *dst = out->GetBufferPointer();
            for (size_t v = 0; v < nvox; ++v)
                for (size_t t = 0; t < nt; ++t) dst[t * nvox + v] = src[v * nt + t];
            auto writer = itk::ImageFileWriter<Image4>::New();
            writer->SetFileName(tmp);
            writer->SetInput(out);
            writer->Update();
        } else {
            auto writer = itk::ImageFileWriter<VectorImage3>::New();
            writer->SetFileName(tmp);
            writer->SetInput(image);
            writer->Update();
        }
    } catch (const itk::ExceptionObject &e) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + without_temporary(itk_message(e), tmp, path));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
}

}  // namespace tk
