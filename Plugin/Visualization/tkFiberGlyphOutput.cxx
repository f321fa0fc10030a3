#include "tkFiberGlyphOutput.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "tkOffscreenRender.h"
#include "vtkActor.h"
#include "vtkCamera.h"
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkProperty.h"
#include "vtkRenderWindow.h"
#include "vtkRenderer.h"
#include "vtkSmartPointer.h"
#include "vtkTextProperty.h"
#include "vtkUnsignedCharArray.h"

namespace tk {

void RenderAxialSlicePNG(const PeaksImage &im, const float *background, const SliceRenderOptions &o,
                         const std::string &path)
{
    const double *m = im.ijk_to_ras;
    GlyphOptions g = o.glyphs;
    if (g.slice_axis < 0) g.slice_axis = AxialAxis(m);
    const int a = g.slice_axis, b = (a + 1) % 3, c = (a + 2) % 3;
    g.slice_index = o.slice_index < 0 ? long(im.size[a] / 2) : o.slice_index;
    if (!(g.scale > 0)) g.scale = AutomaticGlyphScale(im);  // from the whole volume: slices compare
    auto glyphs = PeaksToPolyData(im, g);  // checks the slice

    // Background: one quad per voxel of the slice, in world coordinates (any orientation).
    const size_t nb = im.size[b], nc = im.size[c];
    double largest = 0;
    auto value = [&](size_t ib, size_t ic) {
        size_t idx[3];
        idx[a] = size_t(g.slice_index), idx[b] = ib, idx[c] = ic;
        float x = background[(idx[2] * im.size[1] + idx[1]) * im.size[0] + idx[0]];
        return std::isfinite(x) ? double(x) : 0.0;
    };
    for (size_t ic = 0; ic < nc; ++ic)
        for (size_t ib = 0; ib < nb; ++ib) largest = std::max(largest, value(ib, ic));
    auto points = vtkSmartPointer<vtkPoints>::New();
    auto quads = vtkSmartPointer<vtkCellArray>::New();
    auto grey = vtkSmartPointer<vtkUnsignedCharArray>::New();
    grey->SetNumberOfComponents(3);
    double lo[2] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    double hi[2] = {-lo[0], -lo[1]};
    for (size_t ic = 0; ic < nc; ++ic)
        for (size_t ib = 0; ib < nb; ++ib) {
            vtkIdType ids[4];
            const double corner[4][2] = {{-0.5, -0.5}, {0.5, -0.5}, {0.5, 0.5}, {-0.5, 0.5}};
            for (int q = 0; q < 4; ++q) {
                double ijk[3];
                ijk[a] = double(g.slice_index), ijk[b] = ib + corner[q][0], ijk[c] = ic + corner[q][1];
                double w[3];
                for (int r = 0; r < 3; ++r) w[r] = m[4 * r] * ijk[0] + m[4 * r + 1] * ijk[1] + m[4 * r + 2] * ijk[2] + m[4 * r + 3];
                ids[q] = points->InsertNextPoint(w);
                // screen axes of the radiological view: right = -x (RAS), up = +y
                lo[0] = std::min(lo[0], -w[0]), hi[0] = std::max(hi[0], -w[0]);
                lo[1] = std::min(lo[1], w[1]), hi[1] = std::max(hi[1], w[1]);
            }
            quads->InsertNextCell(4, ids);
            unsigned char level = static_cast<unsigned char>(largest > 0 ? std::lround(30 + 170 * value(ib, ic) / largest) : 30);
            unsigned char rgb[3] = {level, level, level};
            grey->InsertNextTypedTuple(rgb);
        }
    auto slice = vtkSmartPointer<vtkPolyData>::New();
    slice->SetPoints(points);
    slice->SetPolys(quads);
    slice->GetCellData()->SetScalars(grey);

    auto slice_actor = UnlitActor(slice, ColoursPer::Cell);
    auto glyph_actor = UnlitActor(glyphs, ColoursPer::Point);

    // Picture size from the slice's extent on the screen.
    const double width_mm = std::max(hi[0] - lo[0], 1e-6), height_mm = std::max(hi[1] - lo[1], 1e-6);
    const double voxel_mm = std::max(std::min({std::sqrt(m[0] * m[0] + m[4] * m[4] + m[8] * m[8]),
                                                std::sqrt(m[1] * m[1] + m[5] * m[5] + m[9] * m[9]),
                                                std::sqrt(m[2] * m[2] + m[6] * m[6] + m[10] * m[10])}),
                                     1e-6);
    double longer = o.pixels_per_voxel * std::max(width_mm, height_mm) / voxel_mm;
    longer = std::clamp(longer, 400.0, 1600.0);
    const double px_per_mm = longer / std::max(width_mm, height_mm);
    const int margin = 40;
    const int w = int(std::lround(width_mm * px_per_mm)) + 2 * margin, h = int(std::lround(height_mm * px_per_mm)) + 2 * margin;
    glyph_actor->GetProperty()->SetLineWidth(float(std::clamp(px_per_mm * voxel_mm / 8, 1.0, 4.0)));

    // Glyphs on a layer of their own: the parts below the slice plane stay visible.
    auto back = vtkSmartPointer<vtkRenderer>::New(), front = vtkSmartPointer<vtkRenderer>::New();
    back->SetLayer(0), front->SetLayer(1);
    back->SetBackground(0, 0, 0);
    back->AddActor(slice_actor);
    front->AddActor(glyph_actor);
    front->SetActiveCamera(back->GetActiveCamera());
    double centre_x = -0.5 * (lo[0] + hi[0]), centre_y = 0.5 * (lo[1] + hi[1]);
    double centre_z = 0;
    {
        double ijk[3];
        ijk[a] = double(g.slice_index), ijk[b] = 0.5 * (nb - 1.0), ijk[c] = 0.5 * (nc - 1.0);
        centre_z = m[8] * ijk[0] + m[9] * ijk[1] + m[10] * ijk[2] + m[11];
    }
    vtkCamera *camera = back->GetActiveCamera();
    camera->ParallelProjectionOn();
    camera->SetFocalPoint(centre_x, centre_y, centre_z);
    camera->SetPosition(centre_x, centre_y, centre_z - 1000);  // from below: radiological
    camera->SetViewUp(0, 1, 0);
    camera->SetParallelScale(0.5 * h / px_per_mm);
    camera->SetClippingRange(1, 2000);

    auto label = [&](const std::string &text, int x, int y, int justify) {
        AddScreenLabel(front, text, x, y, justify);
    };
    label("R", margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("L", w - margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("axial slice " + std::to_string(g.slice_index) + " of " + std::to_string(im.size[a]) + " (voxel axis " +
              std::to_string(a) + ")",
          8, h - margin / 2, VTK_TEXT_LEFT);

    auto window = OffscreenWindow(w, h, path, "tk-fibers");
    window->SetNumberOfLayers(2);
    window->AddRenderer(back);
    window->AddRenderer(front);
    WriteWindowPNG(window, path);
}

}  // namespace tk
