#include "tkOffscreenRender.h"

#include <X11/Xlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "tkFiberGlyphOutput.h"
#include "vtkActor.h"
#include "vtkPNGWriter.h"
#include "vtkPolyData.h"
#include "vtkPolyDataMapper.h"
#include "vtkProperty.h"
#include "vtkRenderWindow.h"
#include "vtkRenderer.h"
#include "vtkTextActor.h"
#include "vtkTextProperty.h"
#include "vtkWindowToImageFilter.h"

namespace tk {
namespace {

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

}  // namespace

std::string RenderUnavailableReason()
{
    std::string why;
    shared_display(why);
    return why;
}

vtkSmartPointer<vtkRenderWindow> OffscreenWindow(int w, int h, const std::string &path, const std::string &program)
{
    std::string why;
    Display *display = shared_display(why);
    if (!display)
        throw RenderUnavailable(path + ": cannot render: " + why + "; run under Xvfb, e.g. `xvfb-run -a " + program +
                                " ... --png " + path + "`");
    auto window = vtkSmartPointer<vtkRenderWindow>::New();
    window->SetDisplayId(display);
    window->SetOffScreenRendering(1);
    window->SetSize(w, h);
    window->SetMultiSamples(0);  // the same pixels on every driver: the tests count them
    return window;
}

void WriteWindowPNG(vtkRenderWindow *window, const std::string &path)
{
    window->Render();
    auto grab = vtkSmartPointer<vtkWindowToImageFilter>::New();
    grab->SetInput(window);
    grab->ReadFrontBufferOff();
    grab->Update();

    const std::string tmp = TemporaryBeside(path);
    auto writer = vtkSmartPointer<vtkPNGWriter>::New();
    writer->SetFileName(tmp.c_str());
    writer->SetInputConnection(grab->GetOutputPort());
    writer->GlobalWarningDisplayOff();  // its messages name the temporary; ours name the file
    writer->Write();
    if (writer->GetErrorCode() != 0 || !WrittenFile(tmp)) {
        std::string why = writer->GetErrorCode() ? std::strerror(writer->GetErrorCode()) : "VTK's PNG writer failed";
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
    RenameIntoPlace(tmp, path);
}

vtkSmartPointer<vtkActor> UnlitActor(vtkPolyData *data, ColoursPer per)
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

void AddScreenLabel(vtkRenderer *renderer, const std::string &text, int x, int y, int justify)
{
    auto t = vtkSmartPointer<vtkTextActor>::New();
    t->SetInput(text.c_str());
    t->GetTextProperty()->SetFontSize(18);
    t->GetTextProperty()->SetColor(1, 1, 1);
    t->GetTextProperty()->SetJustification(justify);
    t->GetTextProperty()->SetVerticalJustificationToCentered();
    t->SetDisplayPosition(x, y);
    renderer->AddActor2D(t);
}

}  // namespace tk
