// 4-D images for the completion tools (tk-tucker complete, tk-pltf complete): a vector
// volume's components as the 4th axis and back, and masks on an image's grid.
#pragma once

#include <string>

#include "itkImage.h"
#include "sh_image_io.h"

namespace tk {

using MaskImage4 = itk::Image<unsigned char, 4>;

// What a completion tool takes from path: a 3-D scalar volume, a 4-D scalar image, or a
// 3-D vector volume; anything else throws, naming the file.
enum class CompletionInput { Scalar3, Scalar4, Vector3 };
CompletionInput completion_input(const std::string &path);

// The components of a vector volume as the 4th axis: same grid, volume-major (spacing 1
// and origin 0 along the new axis).
ScalarImage4::Pointer to_4d(const VectorImage3 *in);
// The values of a 4-D image (from to_4d) back into the vector volume it came from.
void copy_back(const ScalarImage4 *in, VectorImage3 *out);

// Throws (naming both files and both grids) unless mask lies on image's grid: the same
// size, origin, spacing and orientation within image_grid.h's tolerance; then gives mask
// the image's geometry exactly, so that header rounding does not make the filters refuse it.
void same_grid(const itk::ImageBase<3> *image, const std::string &image_path, itk::ImageBase<3> *mask,
               const std::string &path);

// A 4-D mask (nonzero = 1) on image's grid from path: a 3-D mask repeated over the
// volumes, or a 4-D one (4-D NIfTI or vector volume) with the image's volumes; on
// another spatial grid than image's (image_path, for the message) it throws as same_grid.
MaskImage4::Pointer mask_4d(const ScalarImage4 *image, const std::string &image_path, const std::string &path);

}  // namespace tk
