// The SH images the tests of the filters on SH input (FiberDirections, Fixels) start from:
// two lobes of known axes, every voxel alike.
#pragma once

#include <vector>

#include "itkVectorImage.h"
#include "tk_sh_test_util.h"

namespace tk_test {

using SHImage = itk::VectorImage<float, 3>;

// The two fibers' axes: 0.6, 0, 0.8 and the y axis, orthogonal.
inline const double kFiberV[3] = {0.6, 0.0, 0.8}, kFiberW[3] = {0.0, 1.0, 0.0};

// SH coefficients (lmax 8) of (v.x)^8 + 0.5 (w.x)^8: two lobes, nonnegative everywhere.
inline std::vector<double> two_fibers(tk_sh_basis basis, const double *v, const double *w)
{
    return sh_of_fibers(8, basis, 0, {{v[0], v[1], v[2]}, {w[0], w[1], w[2]}}, {1.0, 0.5});
}

// A 4 x 3 x 2 image of `components` components per voxel, each voxel c (zero past its end).
inline SHImage::Pointer sh_image(const std::vector<double> &c, unsigned components = 45)
{
    auto image = SHImage::New();
    SHImage::RegionType region;
    region.SetSize({{4, 3, 2}});
    image->SetRegions(region);
    image->SetNumberOfComponentsPerPixel(components);
    image->Allocate();
    SHImage::PixelType p(components);
    for (unsigned i = 0; i < components; ++i) p[i] = i < c.size() ? static_cast<float>(c[i]) : 0.f;
    image->FillBuffer(p);
    return image;
}

// DIPY's SH live in voxel axes, so a direction matrix turns the peaks with the image: the
// image turned 90 degrees about z (LPS direction x -> y, y -> -x), the tests' oblique case;
// returns the direction set.
inline SHImage::DirectionType turn_90_about_z(SHImage *image)
{
    SHImage::DirectionType d;
    d.Fill(0);
    d[0][1] = -1, d[1][0] = 1, d[2][2] = 1;
    image->SetDirection(d);
    return d;
}

}  // namespace tk_test
