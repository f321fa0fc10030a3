#include "tkStreamlinePicture.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tkFiberGlyphOutput.h"
#include "tkOffscreenRender.h"
#include "vtkActor.h"
#include "vtkCamera.h"
#include "vtkCellArray.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkProperty.h"
#include "vtkRenderWindow.h"
#include "vtkRenderer.h"
#include "vtkTextProperty.h"
#include "vtkUnsignedCharArray.h"

namespace tk {

void RenderStreamlinesPNG(const StreamlineBundleView &b, const std::string &path)
{
    auto points = vtkSmartPointer<vtkPoints>::New();
    auto lines = vtkSmartPointer<vtkCellArray>::New();
    auto colours = vtkSmartPointer<vtkUnsignedCharArray>::New();
    colours->SetNumberOfComponents(3);
    colours->SetName("RGB");
    double lo[3], hi[3];
    for (int c = 0; c < 3; ++c) lo[c] = std::numeric_limits<double>::max(), hi[c] = -lo[c];
    size_t at = 0;
    for (size_t s = 0; s < b.num_streamlines; ++s) {
        const size_t n = b.num_points[s];
        lines->InsertNextCell(vtkIdType(n));
        for (size_t i = 0; i < n; ++i, ++at) {
            const float *p = b.points + 3 * at;
            lines->InsertCellPoint(points->InsertNextPoint(p[0], p[1], p[2]));
            colours->InsertNextTypedTuple(b.rgb + 3 * at);
            for (int c = 0; c < 3; ++c) lo[c] = std::min(lo[c], double(p[c])), hi[c] = std::max(hi[c], double(p[c]));
        }
    }
    if (at == 0)
        for (int c = 0; c < 3; ++c) lo[c] = -1, hi[c] = 1;  // nothing to frame: a small empty view
    auto poly = vtkSmartPointer<vtkPolyData>::New();
    poly->SetPoints(points);
    poly->SetLines(lines);
    poly->GetPointData()->SetScalars(colours);

    // Screen axes of the radiological axial view: right = -x (RAS), up = +y (anterior).
    const double width_mm = std::max(hi[0] - lo[0], 1.0), height_mm = std::max(hi[1] - lo[1], 1.0);
    const double px_per_mm = 800.0 / std::max(width_mm, height_mm);
    const int margin = 40;
    const int w = std::max(int(std::lround(width_mm * px_per_mm)), 300) + 2 * margin;
    const int h = std::max(int(std::lround(height_mm * px_per_mm)), 300) + 2 * margin;

    auto renderer = vtkSmartPointer<vtkRenderer>::New();
    renderer->SetBackground(0, 0, 0);
    auto actor = UnlitActor(poly, ColoursPer::Point);
    // a sparse bundle gets wider lines to stay visible; a dense one thin lines to stay legible
    actor->GetProperty()->SetLineWidth(b.num_streamlines < 2000 ? 2.0f : 1.0f);
    renderer->AddActor(actor);
    const double centre[3] = {0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])};
    const double depth = hi[2] - lo[2] + 100;
    vtkCamera *camera = renderer->GetActiveCamera();
    camera->ParallelProjectionOn();
    camera->SetFocalPoint(centre);
    camera->SetPosition(centre[0], centre[1], centre[2] - depth);  // from below: radiological
    camera->SetViewUp(0, 1, 0);
    camera->SetParallelScale(0.5 * h / px_per_mm);
    camera->SetClippingRange(1, 2 * depth);

    auto label = [&](const std::string &text, int x, int y, int justify) {
        AddScreenLabel(renderer, text, x, y, justify);
    };
    label("R", margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("L", w - margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("A", w / 2, h - margin / 2, VTK_TEXT_CENTERED);
    label("axial, from below: " + std::to_string(b.num_streamlines) + " of " + std::to_string(b.streamlines_in_file) +
              " streamlines",
          8, margin / 2, VTK_TEXT_LEFT);

    auto window = OffscreenWindow(w, h, path, "tk-track");
    window->AddRenderer(renderer);
    WriteWindowPNG(window, path);
}

}  // namespace tk
