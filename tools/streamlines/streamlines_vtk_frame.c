/* The frame of the VTK formats.  3D Slicer reads a model file's points in the frame its SPACE
 * tag names (vtkMRMLModelStorageNode: the legacy header line "... SPACE=LPS", or a string
 * array SPACE in a .vtp's field data) and assumes LPS where there is none; Slicer 5 writes
 * LPS, and SlicerDMRI's fibre bundles are read by the same code.  So we write LPS by default
 * (x = -R, y = -A) and tag it, or RAS tagged as such where the caller asks. */
#include <string.h>

#include "streamlines_internal.h"

const char *sl_vtk_space_name(const tk_streamlines_writer *w);
void sl_vtk_frame(tk_streamlines_writer *w);

const char *sl_vtk_space_name(const tk_streamlines_writer *w)
{
    return w->opts.vtk_space == TK_STREAMLINES_VTK_RAS ? "RAS" : "LPS";
}

void sl_vtk_frame(tk_streamlines_writer *w)
{
    double s = w->opts.vtk_space == TK_STREAMLINES_VTK_RAS ? 1.0 : -1.0;
    memset(w->xform, 0, sizeof w->xform);
    w->xform[0] = s;
    w->xform[5] = s;
    w->xform[10] = 1;
}
