// Two voxels, the first with two peaks, the second with none: PeaksToPolyData must give two
// lines of 2 points each, centred on voxel 0, the longer one along x.
#include <cmath>
#include <cstdio>
#include <limits>

#include "tkPeaksToPolyData.h"
#include "vtkCellArray.h"

int main()
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float peaks[2 * 2 * 3] = {2, 0, 0, 0, 1, 0, nan, nan, nan, nan, nan, nan};
    tk::PeaksImage image;
    image.peaks = peaks;
    image.num_peaks = 2;
    image.size[0] = 2, image.size[1] = 1, image.size[2] = 1;
    tk::GlyphOptions options;
    options.scale = 1;  // 1 mm per unit amplitude
    vtkSmartPointer<vtkPolyData> lines = tk::PeaksToPolyData(image, options);
    const vtkIdType cells = lines->GetNumberOfLines(), points = lines->GetNumberOfPoints();
    double a[3], b[3];
    lines->GetPoint(0, a);
    lines->GetPoint(1, b);
    std::printf("%lld lines, %lld points, first line from (%g, %g, %g) to (%g, %g, %g)\n", (long long)cells,
                (long long)points, a[0], a[1], a[2], b[0], b[1], b[2]);
    const bool ok = cells == 2 && points == 4 && std::fabs(std::fabs(b[0] - a[0]) - 2) < 1e-9 &&
                    std::fabs(a[0] + b[0]) < 1e-9 && a[1] == 0 && b[1] == 0;
    return ok ? 0 : 1;
}
