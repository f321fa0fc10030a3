// What the offscreen pictures (tk-fibers' slice, tk-track's bundle) share: one X connection
// for the process, a render window on it, unlit actors in the data's own colours, and the
// PNG written under a temporary name and renamed, so that a failure leaves nothing.
// Not installed: the pictures' own helpers.
#pragma once

#include <string>

#include "tkTemporaryFile.h"
#include "vtkSmartPointer.h"

class vtkActor;
class vtkPolyData;
class vtkRenderWindow;
class vtkRenderer;

namespace tk {

// An offscreen render window of w x h pixels on the process's X connection.  Throws
// RenderUnavailable (tkFiberGlyphOutput.h) naming path and telling program's user to run
// under Xvfb when no display can be opened.
vtkSmartPointer<vtkRenderWindow> OffscreenWindow(int w, int h, const std::string &path, const std::string &program);

// Renders the window and writes its pixels as a PNG at path (through a temporary).
// Throws std::runtime_error naming path when the file cannot be written.
void WriteWindowPNG(vtkRenderWindow *window, const std::string &path);

// An actor drawing data in the RGB colours it holds (per point or per cell), unlit, so that
// the colours show as they are.
enum class ColoursPer { Cell, Point };
vtkSmartPointer<vtkActor> UnlitActor(vtkPolyData *data, ColoursPer per);

// A white 18-point label at display pixel (x, y) of renderer, centred vertically and justified
// as justify says (VTK_TEXT_LEFT, VTK_TEXT_CENTERED, ...): the pictures' orientation letters
// and captions.
void AddScreenLabel(vtkRenderer *renderer, const std::string &text, int x, int y, int justify);

}  // namespace tk
