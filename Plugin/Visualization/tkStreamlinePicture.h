// A picture of a streamline bundle (tk-track --png): the polylines in their per-point colours,
// rendered offscreen in 3D and written as a PNG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tk {

// The streamlines to draw: points one after another (x, y, z world RAS mm), each point's
// RGB (the files' tangent colours), and each streamline's point count.
struct StreamlineBundleView {
    const float *points = nullptr;
    const unsigned char *rgb = nullptr;
    const size_t *num_points = nullptr;
    size_t num_streamlines = 0;
    uint64_t streamlines_in_file = 0;  // the caption's "N of M": how many the drawn ones stand for
};

// PNG at path: the bundle seen axially from below with anterior up (the radiological
// convention of tk-fibers' slice and Slicer's axial view: the patient's right on the
// picture's left, labelled), parallel projection framing the bundle's extent, black
// background, lines unlit in their own colours.  About 800 pixels along the longer side.
// Throws RenderUnavailable (tkFiberGlyphOutput.h) without a display, std::runtime_error
// naming path when it cannot be written.  An empty bundle gives the empty frame and caption.
void RenderStreamlinesPNG(const StreamlineBundleView &bundle, const std::string &path);

}  // namespace tk
