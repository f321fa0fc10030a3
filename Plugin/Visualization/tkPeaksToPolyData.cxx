#include "tkPeaksToPolyData.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkFieldData.h"
#include "vtkFloatArray.h"
#include "vtkIntArray.h"
#include "vtkPointData.h"
#include "vtkPoints.h"
#include "vtkPolyData.h"
#include "vtkStringArray.h"
#include "vtkUnsignedCharArray.h"

namespace tk {
namespace {

// amplitude and unit direction of peak p of voxel v; false when the peak is absent
bool peak_at(const PeaksImage &im, std::size_t v, std::size_t p, double dir[3], double &amplitude)
{
    const float *q = im.peaks + (v * im.num_peaks + p) * 3;
    double len = std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2]);
    if (!(len > 0) || !std::isfinite(len)) return false;  // NaN, zero or infinite
    amplitude = im.amplitudes ? im.amplitudes[v * im.num_peaks + p] : len;
    if (!(amplitude > 0) || !std::isfinite(amplitude)) return false;
    for (int c = 0; c < 3; ++c) dir[c] = q[c] / len;
    return true;
}

double column_length(const double m[16], int axis)
{
    return std::sqrt(m[axis] * m[axis] + m[4 + axis] * m[4 + axis] + m[8 + axis] * m[8 + axis]);
}

void check(const PeaksImage &im)
{
    if (!im.peaks) throw std::invalid_argument("PeaksToPolyData: no peaks buffer");
    if (im.num_peaks == 0) throw std::invalid_argument("PeaksToPolyData: zero peaks per voxel");
    for (int a = 0; a < 3; ++a)
        if (!(column_length(im.ijk_to_ras, a) > 0))
            throw std::invalid_argument("PeaksToPolyData: the voxel-to-RAS matrix is singular");
}

}  // namespace

int AxialAxis(const double m[16])
{
    int best = 2;
    double best_s = -1;
    for (int a = 0; a < 3; ++a) {
        double s = std::fabs(m[8 + a]) / column_length(m, a);  // |cos| between the axis and S
        if (s > best_s + 1e-12) best = a, best_s = s;
    }
    return best;
}

double AutomaticGlyphScale(const PeaksImage &im)
{
    check(im);
    const std::size_t nvox = im.size[0] * im.size[1] * im.size[2];
    double largest = 0, dir[3], amp;
    for (std::size_t v = 0; v < nvox; ++v)
        for (std::size_t p = 0; p < im.num_peaks; ++p)
            if (peak_at(im, v, p, dir, amp)) largest = std::max(largest, amp);
    double spacing = std::min({column_length(im.ijk_to_ras, 0), column_length(im.ijk_to_ras, 1),
                               column_length(im.ijk_to_ras, 2)});
    return largest > 0 ? spacing / largest : 1.0;
}

vtkSmartPointer<vtkPolyData> PeaksToPolyData(const PeaksImage &im, const GlyphOptions &o)
{
    check(im);
    if (!(o.scale >= 0) || !std::isfinite(o.scale))
        throw std::invalid_argument("PeaksToPolyData: the glyph scale must be a finite number >= 0");
    if (o.slice_axis > 2 || o.slice_axis < -1)
        throw std::invalid_argument("PeaksToPolyData: the slice axis must be 0, 1 or 2 (or -1 for all)");
    if (o.slice_axis >= 0 && (o.slice_index < 0 || std::size_t(o.slice_index) >= im.size[o.slice_axis]))
        throw std::invalid_argument("PeaksToPolyData: slice " + std::to_string(o.slice_index) + " is outside 0.." +
                                    std::to_string(long(im.size[o.slice_axis]) - 1));
    const double scale = o.scale > 0 ? o.scale : AutomaticGlyphScale(im);
    const double *m = im.ijk_to_ras;

    auto points = vtkSmartPointer<vtkPoints>::New();
    points->SetDataTypeToFloat();
    auto lines = vtkSmartPointer<vtkCellArray>::New();
    auto rgb = vtkSmartPointer<vtkUnsignedCharArray>::New();
    rgb->SetName("RGB");
    rgb->SetNumberOfComponents(3);
    auto amplitude = vtkSmartPointer<vtkFloatArray>::New();
    amplitude->SetName("amplitude");
    auto rank = vtkSmartPointer<vtkIntArray>::New();
    rank->SetName("peak");

    std::size_t lo[3] = {0, 0, 0}, hi[3] = {im.size[0], im.size[1], im.size[2]};
    if (o.slice_axis >= 0) lo[o.slice_axis] = std::size_t(o.slice_index), hi[o.slice_axis] = lo[o.slice_axis] + 1;
    for (std::size_t k = lo[2]; k < hi[2]; ++k)
        for (std::size_t j = lo[1]; j < hi[1]; ++j)
            for (std::size_t i = lo[0]; i < hi[0]; ++i) {
                const std::size_t v = (k * im.size[1] + j) * im.size[0] + i;
                double centre[3];
                for (int r = 0; r < 3; ++r) centre[r] = m[4 * r] * i + m[4 * r + 1] * j + m[4 * r + 2] * k + m[4 * r + 3];
                for (std::size_t p = 0; p < im.num_peaks; ++p) {
                    double dir[3], amp;
                    if (!peak_at(im, v, p, dir, amp)) continue;
                    const double half = 0.5 * scale * amp;
                    vtkIdType ends[2];
                    ends[0] = points->InsertNextPoint(centre[0] - half * dir[0], centre[1] - half * dir[1],
                                                      centre[2] - half * dir[2]);
                    ends[1] = points->InsertNextPoint(centre[0] + half * dir[0], centre[1] + half * dir[1],
                                                      centre[2] + half * dir[2]);
                    lines->InsertNextCell(2, ends);
                    unsigned char colour[3];
                    for (int c = 0; c < 3; ++c)
                        colour[c] = static_cast<unsigned char>(std::lround(std::min(1.0, std::fabs(dir[c])) * 255));
                    rgb->InsertNextTypedTuple(colour);
                    rgb->InsertNextTypedTuple(colour);
                    amplitude->InsertNextValue(static_cast<float>(amp));
                    rank->InsertNextValue(static_cast<int>(p));
                }
            }
    auto poly = vtkSmartPointer<vtkPolyData>::New();
    poly->SetPoints(points);
    poly->SetLines(lines);
    poly->GetPointData()->SetScalars(rgb);
    poly->GetCellData()->AddArray(amplitude);
    poly->GetCellData()->AddArray(rank);
    // The frame of the points, where Slicer's model reader looks for it (a string array SPACE in
    // the field data); without it Slicer takes a model file for LPS and mirrors the glyphs.
    auto space = vtkSmartPointer<vtkStringArray>::New();
    space->SetName("SPACE");
    space->InsertNextValue("RAS");
    poly->GetFieldData()->AddArray(space);
    return poly;
}

}  // namespace tk
