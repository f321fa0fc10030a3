// Reading and writing SH and peak volumes the way MRtrix3 and DIPY store them: 4-D NIfTI
// with the coefficients (or peak components) on the 4th axis, or 3-D vector images (NRRD,
// MHA).  ITK reads 4-D NIfTI as a 4-D scalar image; these convert to and from
// itk::VectorImage<float, 3>.
#pragma once

#include <string>

#include "itkImage.h"
#include "itkVectorImage.h"

namespace tk {

using VectorImage3 = itk::VectorImage<float, 3>;
using MaskImage3 = itk::Image<unsigned char, 3>;
using ScalarImage3 = itk::Image<float, 3>;

// Dimension and components per pixel from the header alone.
struct VolumeShape {
    unsigned dimensions, components;
};
VolumeShape probe_volume(const std::string &path);

// An ITK exception's description as one line for a tool's message: without ITK's
// "ITK ERROR: Class(0x...): " prefix, the first line and (for multi-line reports such as
// NRRD's) the innermost reason.
std::string itk_message(const itk::ExceptionObject &e);

// Throws std::runtime_error naming the file and the problem (an image too large for this
// machine's memory is refused from its header, before any allocation).
VectorImage3::Pointer read_vector_volume(const std::string &path);
MaskImage3::Pointer read_mask(const std::string &path);
ScalarImage3::Pointer read_scalar_volume(const std::string &path);

// 4-D for NIfTI names (.nii, .nii.gz), a vector image otherwise; written to a temporary
// beside path and renamed, so a failure leaves nothing behind.
void write_vector_volume(const VectorImage3 *image, const std::string &path);
void write_scalar_volume(const ScalarImage3 *image, const std::string &path);

// A 4-D scalar image (e.g. a 4-D NIfTI) as it is, with its 4-D geometry (the 4th axis'
// spacing, such as a frame time, included); written atomically as above.
using ScalarImage4 = itk::Image<float, 4>;
ScalarImage4::Pointer read_scalar_image4(const std::string &path);
void write_scalar_image4(const ScalarImage4 *image, const std::string &path);

}  // namespace tk
