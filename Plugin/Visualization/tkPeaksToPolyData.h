// Fiber peaks as VTK glyph lines: one line per peak, centred on its voxel, in world (RAS)
// coordinates, for ParaView, Slicer and VTK programs.  No ITK: the peaks come as a plain
// buffer, the image geometry as the voxel-to-RAS matrix (Slicer's IJKToRAS, NIfTI's sform).
#pragma once

#include <cstddef>

#include "vtkPolyData.h"
#include "vtkSmartPointer.h"

namespace tk {

struct PeaksImage {
    // num_peaks peaks per voxel, voxel-major with x fastest: voxel v, peak p, component c at
    // peaks[(v * num_peaks + p) * 3 + c].  As MRtrix3's sh2peaks and tk-fibers write them: the
    // direction (RAS) times the amplitude; a peak whose components are NaN or zero is absent.
    const float *peaks = nullptr;
    // Optional, amplitudes[v * num_peaks + p]; without it the length of each peak vector.
    // Peaks with amplitude NaN or <= 0 are absent.
    const float *amplitudes = nullptr;
    std::size_t num_peaks = 0;
    std::size_t size[3] = {0, 0, 0};
    // Voxel index (i, j, k, 1) to RAS world millimetres, row-major 4 x 4.
    double ijk_to_ras[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
};

struct GlyphOptions {
    // Line length per unit amplitude, in mm; 0: the largest peak spans the smallest voxel spacing.
    double scale = 0;
    // Only the voxels of one slice: slice_axis 0, 1 or 2 (voxel axes), slice_index; -1: all.
    int slice_axis = -1;
    long slice_index = 0;
};

// vtkPolyData with one line cell (2 points) per present peak, in voxel then peak order.
// Point scalars "RGB" (unsigned char, |x|, |y|, |z| of the RAS direction times 255), cell
// data "amplitude" (float) and "peak" (int, 0 = largest), field data "SPACE" = "RAS" (read by
// Slicer, whose default for model files is LPS).  Throws std::invalid_argument on
// bad input (null buffer, no peaks, negative scale, slice out of range).
vtkSmartPointer<vtkPolyData> PeaksToPolyData(const PeaksImage &image, const GlyphOptions &options = {});

// The length per unit amplitude that option scale 0 picks for this image.
double AutomaticGlyphScale(const PeaksImage &image);

// The voxel axis closest to the superior (RAS z) direction: the axis of axial slices.
int AxialAxis(const double ijk_to_ras[16]);

}  // namespace tk
