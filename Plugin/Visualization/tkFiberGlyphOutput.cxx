#include "tkFiberGlyphOutput.h"

#include <X11/Xlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "vtkActor.h"
#include "vtkCamera.h"
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkPNGWriter.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkPolyDataMapper.h"
#include "vtkProperty.h"
#include "vtkRenderWindow.h"
#include "vtkRenderer.h"
#include "vtkSmartPointer.h"
#include "vtkTextActor.h"
#include "vtkTextProperty.h"
#include "vtkUnsignedCharArray.h"
#include "vtkWindowToImageFilter.h"
#include "vtkXMLPolyDataWriter.h"

namespace tk {
namespace {

std::string temporary_beside(const std::string &path)
{
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    return dir + "/.tk-tmp-" + std::to_string(getpid()) + "-" + base;
}

void rename_into_place(const std::string &tmp, const std::string &path)
{
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
}

// Does the temporary exist and hold something?  VTK writers report some failures only on stderr.
bool written(const std::string &tmp)
{
    FILE *f = std::fopen(tmp.c_str(), "rb");
    if (!f) return false;
    bool any = std::fgetc(f) != EOF;
    std::fclose(f);
    return any;
}

// One connection for the whole process, opened by the first probe and handed to VTK's
// render window.  Closing a probe connection would let Xvfb reset (it does when its last
// client leaves), and VTK connecting during the reset aborts the program.
Display *shared_display(std::string &why)
{
    static Display *display = nullptr;
    static std::string failure;
    static bool tried = false;
    if (!tried) {
        tried = true;
        const char *name = std::getenv("DISPLAY");
        if (!name || !*name)
            failure = "no X display (DISPLAY is not set)";
        else if (!(display = XOpenDisplay(name)))
            failure = std::string("cannot open the X display '") + name + "'";
    }
    why = failure;
    return display;
}

// An actor drawing data in the RGB colours it holds (per cell: the slice's grey squares;
// per point: the glyphs' direction colours), unlit, so that the colours show as they are.
enum class ColoursPer { Cell, Point };
vtkSmartPointer<vtkActor> unlit_actor(vtkPolyData *data, ColoursPer per)
{
    auto mapper = vtkSmartPointer<vtkPolyDataMapper>::New();
    mapper->SetInputData(data);
    mapper->SetColorModeToDirectScalars();
    if (per == ColoursPer::Cell) mapper->SetScalarModeToUseCellData();
    else mapper->SetScalarModeToUsePointData();
    auto actor = vtkSmartPointer<vtkActor>::New();
    actor->SetMapper(mapper);
    actor->GetProperty()->LightingOff();
    return actor;
}

}  // namespace

void WritePolyDataXML(vtkPolyData *poly, const std::string &path)
{
    const std::string tmp = temporary_beside(path);
    auto writer = vtkSmartPointer<vtkXMLPolyDataWriter>::New();
    writer->SetFileName(tmp.c_str());
    writer->SetInputData(poly);
    writer->SetDataModeToAppended();
    writer->SetCompressorTypeToZLib();
    writer->GlobalWarningDisplayOff();  // its messages name the temporary; ours name the file
    if (writer->Write() != 1 || writer->GetErrorCode() != 0 || !written(tmp)) {
        std::string why = writer->GetErrorCode() ? std::strerror(writer->GetErrorCode()) : "VTK's XML writer failed";
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
    rename_into_place(tmp, path);
}

std::string RenderUnavailableReason()
{
    std::string why;
    shared_display(why);
    return why;
}

void RenderAxialSlicePNG(const PeaksImage &im, const float *background, const SliceRenderOptions &o,
                         const std::string &path)
{
    std::string why;
    Display *display = shared_display(why);
    if (!display)
        throw RenderUnavailable(path + ": cannot render: " + why +
                                "; run under Xvfb, e.g. `xvfb-run -a tk-fibers ... --png " + path + "`");
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

    auto slice_actor = unlit_actor(slice, ColoursPer::Cell);
    auto glyph_actor = unlit_actor(glyphs, ColoursPer::Point);

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
        auto t = vtkSmartPointer<vtkTextActor>::New();
        t->SetInput(text.c_str());
        t->GetTextProperty()->SetFontSize(18);
        t->GetTextProperty()->SetColor(1, 1, 1);
        t->GetTextProperty()->SetJustification(justify);
        t->GetTextProperty()->SetVerticalJustificationToCentered();
        t->SetDisplayPosition(x, y);
        front->AddActor2D(t);
    };
    label("R", margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("L", w - margin / 2, h / 2, VTK_TEXT_CENTERED);
    label("axial slice " + std::to_string(g.slice_index) + " of " + std::to_string(im.size[a]) + " (voxel axis " +
              std::to_string(a) + ")",
          8, h - margin / 2, VTK_TEXT_LEFT);

    auto window = vtkSmartPointer<vtkRenderWindow>::New();
    window->SetDisplayId(display);
    window->SetOffScreenRendering(1);
    window->SetNumberOfLayers(2);
    window->AddRenderer(back);
    window->AddRenderer(front);
    window->SetSize(w, h);
    window->SetMultiSamples(0);
    window->Render();
    auto grab = vtkSmartPointer<vtkWindowToImageFilter>::New();
    grab->SetInput(window);
    grab->ReadFrontBufferOff();
    grab->Update();

    const std::string tmp = temporary_beside(path);
    auto writer = vtkSmartPointer<vtkPNGWriter>::New();
    writer->SetFileName(tmp.c_str());
    writer->SetInputConnection(grab->GetOutputPort());
    writer->GlobalWarningDisplayOff();
    writer->Write();
    if (writer->GetErrorCode() != 0 || !written(tmp)) {
        std::string why = writer->GetErrorCode() ? std::strerror(writer->GetErrorCode()) : "VTK's PNG writer failed";
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
    rename_into_place(tmp, path);
}

}  // namespace tk
