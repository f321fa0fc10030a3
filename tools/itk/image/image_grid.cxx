#include "image_grid.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace tk {
namespace {

std::string describe(const Grid &g, const std::string &path)
{
    std::ostringstream o;
    o.precision(6);
    o << path << ": size " << g.size[0] << " x " << g.size[1] << " x " << g.size[2] << ", origin (" << g.origin[0]
      << ", " << g.origin[1] << ", " << g.origin[2] << ") mm, spacing (" << g.spacing[0] << ", " << g.spacing[1] << ", "
      << g.spacing[2] << ") mm, directions (";
    for (unsigned c = 0; c < 3; ++c)
        o << (c ? "; " : "") << g.direction[0][c] << " " << g.direction[1][c] << " " << g.direction[2][c];
    o << ")";
    return o.str();
}

}  // namespace

std::string grid_mismatch(const Grid &image, const std::string &image_path, const Grid &other,
                          const std::string &other_path)
{
    std::string what;
    auto add = [&](const char *name) { what += (what.empty() ? "" : ", ") + std::string(name); };
    if (image.size[0] != other.size[0] || image.size[1] != other.size[1] || image.size[2] != other.size[2]) add("size");
    const double smallest = std::min({image.spacing[0], image.spacing[1], image.spacing[2]});
    bool origin = false, spacing = false, direction = false;
    for (unsigned r = 0; r < 3; ++r) {
        // written as !(difference <= bound) so that a NaN counts as a difference
        origin = origin || !(std::fabs(image.origin[r] - other.origin[r]) <= kGridTolerance * smallest);
        spacing = spacing || !(std::fabs(image.spacing[r] - other.spacing[r]) <= kGridTolerance * image.spacing[r]);
        for (unsigned c = 0; c < 3; ++c)
            direction = direction || !(std::fabs(image.direction[r][c] - other.direction[r][c]) <= kGridTolerance);
    }
    if (origin) add("origin");
    if (spacing) add("spacing");
    if (direction) add("orientation");
    if (what.empty()) return "";
    return other_path + ": on another voxel grid than " + image_path + " (" + what + " differ" +
           (what.find(',') == std::string::npos ? "s" : "") + " beyond 1e-3 of a voxel; LPS) -- " +
           describe(image, image_path) + "; " + describe(other, other_path) +
           "; resample it onto the image's grid (e.g. mrgrid " + other_path + " regrid -template " + image_path +
           " -interp nearest OUT)";
}

void require_same_grid(const itk::ImageBase<3> *image, const std::string &image_path, itk::ImageBase<3> *other,
                       const std::string &other_path)
{
    const std::string why = grid_mismatch(grid_of(image), image_path, grid_of(other), other_path);
    if (!why.empty()) throw std::runtime_error(why);
    other->SetOrigin(image->GetOrigin());
    other->SetSpacing(image->GetSpacing());
    other->SetDirection(image->GetDirection());
}

}  // namespace tk
