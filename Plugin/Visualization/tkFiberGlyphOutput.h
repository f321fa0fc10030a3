// Writing fiber glyphs: VTK XML PolyData for ParaView and Slicer, and an offscreen-rendered
// picture of one axial slice.  Both are written to a temporary beside the target and renamed,
// so a failure leaves nothing behind.
#pragma once

#include <stdexcept>
#include <string>

#include "tkPeaksToPolyData.h"

class vtkPolyData;

namespace tk {

// Throws std::runtime_error naming the file and the problem.
void WritePolyDataXML(vtkPolyData *poly, const std::string &path);

// No display to render on (VTK's render windows here need X; Xvfb serves).
struct RenderUnavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Empty when a render window can be opened here, else why not.
std::string RenderUnavailableReason();

struct SliceRenderOptions {
    GlyphOptions glyphs;      // slice_axis -1: the axial axis (AxialAxis); scale as in PeaksToPolyData
    long slice_index = -1;    // -1: the middle slice
    int pixels_per_voxel = 48;  // picture size, clamped to 400..1600 pixels along its longer side
};

// PNG of one axial slice: the glyph lines (RGB by direction) over a grey picture of
// background (one value per voxel, x fastest; NaN drawn as 0), viewed from below with
// anterior up (radiological convention: the patient's right on the left, labelled).
// Throws RenderUnavailable without a display, std::invalid_argument for a bad slice,
// std::runtime_error naming the file for write errors.
void RenderAxialSlicePNG(const PeaksImage &image, const float *background, const SliceRenderOptions &options,
                         const std::string &path);

}  // namespace tk
