#include "image_layout.h"

#include "image_grid.h"

#include <stdexcept>
#include <string>

namespace tk {

CompletionInput completion_input(const std::string &path)
{
    const auto shape = probe_volume(path);
    if (shape.components == 1 && shape.dimensions == 3) return CompletionInput::Scalar3;
    if (shape.components == 1 && shape.dimensions == 4) return CompletionInput::Scalar4;
    if (shape.components > 1 && shape.dimensions == 3) return CompletionInput::Vector3;
    throw std::runtime_error(path + ": expected a 3-D or 4-D image (or a 3-D vector volume), got " +
                             std::to_string(shape.dimensions) + "-D with " + std::to_string(shape.components) +
                             " component(s); give a 3-D or 4-D image");
}

ScalarImage4::Pointer to_4d(const VectorImage3 *in)
{
    auto out = ScalarImage4::New();
    ScalarImage4::RegionType region;
    const auto size3 = in->GetLargestPossibleRegion().GetSize();
    for (unsigned r = 0; r < 3; ++r) region.SetSize(r, size3[r]);
    const size_t nt = in->GetNumberOfComponentsPerPixel(), nvox = in->GetLargestPossibleRegion().GetNumberOfPixels();
    region.SetSize(3, nt);
    out->SetRegions(region);
    copy_spatial_geometry(in, out.GetPointer());  // the 4th axis: a new image's spacing 1, origin 0
    out->Allocate();
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < nt; ++t) out->GetBufferPointer()[t * nvox + v] = in->GetBufferPointer()[v * nt + t];
    return out;
}

void copy_back(const ScalarImage4 *in, VectorImage3 *out)
{
    const size_t nt = out->GetNumberOfComponentsPerPixel(), nvox = out->GetLargestPossibleRegion().GetNumberOfPixels();
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < nt; ++t) out->GetBufferPointer()[v * nt + t] = in->GetBufferPointer()[t * nvox + v];
}

void same_grid(const itk::ImageBase<3> *image, const std::string &image_path, itk::ImageBase<3> *mask,
               const std::string &path)
{
    require_same_grid(image, image_path, mask, path);
}

MaskImage4::Pointer mask_4d(const ScalarImage4 *image, const std::string &image_path, const std::string &path)
{
    auto mask = MaskImage4::New();
    mask->CopyInformation(image);  // same grid
    mask->SetRegions(image->GetLargestPossibleRegion());
    mask->Allocate();
    const auto size = image->GetLargestPossibleRegion().GetSize();
    const size_t nvox = size[0] * size[1] * size[2], nt = size[3];
    const auto shape = probe_volume(path);
    if (shape.components == 1 && shape.dimensions == 3) {
        auto m3 = read_mask(path);
        const std::string why = grid_mismatch(grid_of(image), image_path, grid_of<3>(m3.GetPointer()), path);
        if (!why.empty()) throw std::runtime_error(why);
        for (size_t t = 0; t < nt; ++t)
            for (size_t v = 0; v < nvox; ++v) mask->GetBufferPointer()[t * nvox + v] = m3->GetBufferPointer()[v] != 0;
    } else {
        auto m = to_4d(read_vector_volume(path));
        const std::string why = grid_mismatch(grid_of(image), image_path, grid_of<4>(m.GetPointer()), path);
        if (!why.empty()) throw std::runtime_error(why);
        if (m->GetLargestPossibleRegion().GetSize() != size)
            throw std::runtime_error(path + ": the mask's size differs from the input image's; give a 3-D mask (it "
                                            "applies to every volume) or a 4-D one with the image's volumes");
        for (size_t i = 0; i < nvox * nt; ++i) mask->GetBufferPointer()[i] = m->GetBufferPointer()[i] != 0;
    }
    return mask;
}

}  // namespace tk
