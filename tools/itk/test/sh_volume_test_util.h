// SH volumes (tk::VectorImage3) made in memory by the tk-fibers tests.
#pragma once

#include <cstddef>
#include <vector>

#include "sh_image_io.h"

namespace tk_test {

// An allocated nx x ny x nz volume of `components` coefficients a voxel, its values unset
// (spacing 1, origin 0, identity directions: a test sets any other geometry itself).
inline tk::VectorImage3::Pointer sh_volume(itk::SizeValueType nx, itk::SizeValueType ny, itk::SizeValueType nz,
                                           unsigned components)
{
    auto image = tk::VectorImage3::New();
    tk::VectorImage3::RegionType region;
    region.SetSize({{nx, ny, nz}});
    image->SetRegions(region);
    image->SetNumberOfComponentsPerPixel(components);
    image->Allocate();
    return image;
}

// Voxel v's coefficients set to the first of c, one for each component of the volume.
inline void set_voxel(tk::VectorImage3 *image, size_t v, const std::vector<double> &c)
{
    const size_t k = image->GetNumberOfComponentsPerPixel();
    for (size_t i = 0; i < k; ++i) image->GetBufferPointer()[v * k + i] = static_cast<float>(c[i]);
}

}  // namespace tk_test
