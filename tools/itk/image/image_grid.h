// Whether a second input (a mask) lies on an image's voxel grid: the same size, and the
// same origin, spacing and orientation within a stated tolerance.  A mask from another
// grid (another orientation, a shifted origin, another spacing) has the right number of
// voxels often enough to be used silently, voxel for voxel, on the wrong anatomy; so it is
// refused, with both grids in the message, rather than reinterpreted.
#pragma once

#include <string>

#include "itkImageBase.h"

namespace tk {

// The tolerance: 1e-3 of a voxel.  Spacings may differ by 1e-3 of the image's spacing,
// origins by 1e-3 of its smallest spacing (per coordinate, mm), direction cosines by 1e-3
// (about 0.06 degrees): header rounding (float32 NIfTI transforms, printed .mif and NRRD
// numbers) stays far below it, a real misregistration far above.
constexpr double kGridTolerance = 1e-3;

// The spatial grid of an ITK image (its first three axes; LPS, as ITK holds it).
struct Grid {
    size_t size[3];
    double origin[3], spacing[3], direction[3][3];
};
template <unsigned D> Grid grid_of(const itk::ImageBase<D> *image)
{
    static_assert(D >= 3, "a spatial grid needs three axes");
    Grid g;
    for (unsigned r = 0; r < 3; ++r) {
        g.size[r] = image->GetLargestPossibleRegion().GetSize()[r];
        g.origin[r] = image->GetOrigin()[r];
        g.spacing[r] = image->GetSpacing()[r];
        for (unsigned c = 0; c < 3; ++c) g.direction[r][c] = image->GetDirection()[r][c];
    }
    return g;
}

// Gives to the origin, spacing and direction of from's first three axes: ITK's geometry
// types are per dimension, so a 4-D image's do not assign to a 3-D one's (or back).  Any
// further axis of to keeps its own (a new image's: spacing 1, origin 0, not rotated).
template <unsigned DFrom, unsigned DTo>
void copy_spatial_geometry(const itk::ImageBase<DFrom> *from, itk::ImageBase<DTo> *to)
{
    static_assert(DFrom >= 3 && DTo >= 3, "a spatial grid needs three axes");
    auto origin = to->GetOrigin();
    auto spacing = to->GetSpacing();
    auto direction = to->GetDirection();
    for (unsigned r = 0; r < 3; ++r) {
        origin[r] = from->GetOrigin()[r];
        spacing[r] = from->GetSpacing()[r];
        for (unsigned c = 0; c < 3; ++c) direction[r][c] = from->GetDirection()[r][c];
    }
    to->SetOrigin(origin);
    to->SetSpacing(spacing);
    to->SetDirection(direction);
}

// "" when other lies on image's grid within the tolerance, else
// "OTHER_PATH: on another voxel grid than IMAGE_PATH (WHAT differs): IMAGE_PATH: size ...,
//  origin ..., spacing ..., directions ...; OTHER_PATH: ...; resample it onto the image's
//  grid (e.g. mrgrid OTHER regrid -template IMAGE -interp nearest OUT)".
std::string grid_mismatch(const Grid &image, const std::string &image_path, const Grid &other,
                          const std::string &other_path);

// Throws std::runtime_error with grid_mismatch's message, else gives other the image's
// geometry exactly (so that ITK's filters, which compare with their own tolerance, take
// it).
void require_same_grid(const itk::ImageBase<3> *image, const std::string &image_path, itk::ImageBase<3> *other,
                       const std::string &other_path);

}  // namespace tk
