// Fiber glyphs: tk::PeaksToPolyData against a direct construction, tk-fibers --vtp read
// back with VTK (one line per present peak, at the voxel's RAS position, along the peak), and
// --png rendered offscreen (coloured where the fibers are, on the side the view puts them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "sh_image_io.h"
#include "sh_volume_test_util.h"
#include "tkPeaksToPolyData.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_sh_test_util.h"
#include "vtkCellArray.h"
#include "vtkCellData.h"
#include "vtkDataArray.h"
#include "vtkImageData.h"
#include "vtkPNGReader.h"
#include "vtkPointData.h"
#include "vtkPolyData.h"
#include "vtkSmartPointer.h"
#include "vtkUnsignedCharArray.h"
#include "vtkXMLPolyDataReader.h"

using namespace tk_test;

namespace {

const std::string exe = TK_FIBERS_EXE;
const float nan_f = std::numeric_limits<float>::quiet_NaN();

// 4 x 3 x 2 voxels, 2 peaks each; some absent (NaN, zero, negative amplitude).
struct SmallPeaks {
    std::vector<float> peaks, amps;
    tk::PeaksImage image;
    SmallPeaks()
    {
        const size_t nvox = 24;
        peaks.assign(nvox * 6, nan_f);
        amps.assign(nvox * 2, nan_f);
        for (size_t v = 0; v < nvox; ++v) {
            double d[3] = {std::cos(0.3 * v), std::sin(0.3 * v) * 0.6, std::sin(0.3 * v) * 0.8};
            amps[v * 2] = 0.5f + 0.1f * float(v);
            for (int c = 0; c < 3; ++c) peaks[v * 6 + c] = float(d[c] * amps[v * 2]);
            if (v % 3 == 0) {  // a second peak
                amps[v * 2 + 1] = 0.25f;
                peaks[v * 6 + 3] = 0.25f, peaks[v * 6 + 4] = 0, peaks[v * 6 + 5] = 0;
            }
        }
        peaks[5 * 6] = peaks[5 * 6 + 1] = peaks[5 * 6 + 2] = 0;  // zero vector: absent
        amps[7 * 2] = -1;                                          // negative amplitude: absent
        image.peaks = peaks.data();
        image.amplitudes = amps.data();
        image.num_peaks = 2;
        image.size[0] = 4, image.size[1] = 3, image.size[2] = 2;
        // rotated 30 degrees about S, anisotropic, shifted
        const double c = std::cos(0.5235987755982988), s = std::sin(0.5235987755982988);
        const double m[16] = {2 * c, -3 * s, 0, 10, 2 * s, 3 * c, 0, -20, 0, 0, 4, 5, 0, 0, 0, 1};
        for (int i = 0; i < 16; ++i) image.ijk_to_ras[i] = m[i];
    }
};

void expect_line(vtkPolyData *poly, vtkIdType cell, const double centre[3], const double dir[3], double length,
                 const std::string &what)
{
    vtkIdType n;
    const vtkIdType *ids;
    poly->GetLines()->GetCellAtId(cell, n, ids);
    ASSERT_EQ(n, 2) << what;
    double a[3], b[3];
    poly->GetPoint(ids[0], a);
    poly->GetPoint(ids[1], b);
    double len = 0;
    for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(0.5 * (a[c] + b[c]), centre[c], 1e-4) << what << " centre " << c;
        len += (b[c] - a[c]) * (b[c] - a[c]);
    }
    len = std::sqrt(len);
    EXPECT_NEAR(len, length, 1e-4 * (1 + length)) << what;
    double dot = 0;
    for (int c = 0; c < 3; ++c) dot += (b[c] - a[c]) / len * dir[c];
    EXPECT_GT(std::fabs(dot), 1 - 1e-6) << what << " direction";
    auto *rgb = vtkUnsignedCharArray::SafeDownCast(poly->GetPointData()->GetArray("RGB"));
    ASSERT_NE(rgb, nullptr);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(rgb->GetComponent(ids[0], c), std::fabs(dir[c]) * 255, 0.51) << what;
}

std::string render_prefix()
{
    // a display of our own under xvfb-run where it exists; the one we have otherwise
    if (std::system("command -v xvfb-run > /dev/null 2>&1") == 0) return "xvfb-run -a ";
    const char *display = std::getenv("DISPLAY");
    return display && *display ? "" : "NONE";
}

}  // namespace

TEST(FiberGlyphs, OneLinePerPresentPeakInWorldCoordinates)
{
    SmallPeaks s;
    tk::GlyphOptions o;
    o.scale = 3.0;
    auto poly = tk::PeaksToPolyData(s.image, o);
    vtkIdType cell = 0;
    for (size_t k = 0; k < 2; ++k)
        for (size_t j = 0; j < 3; ++j)
            for (size_t i = 0; i < 4; ++i) {
                const size_t v = (k * 3 + j) * 4 + i;
                double centre[3];
                for (int r = 0; r < 3; ++r)
                    centre[r] = s.image.ijk_to_ras[4 * r] * i + s.image.ijk_to_ras[4 * r + 1] * j +
                                s.image.ijk_to_ras[4 * r + 2] * k + s.image.ijk_to_ras[4 * r + 3];
                for (int p = 0; p < 2; ++p) {
                    const float *q = &s.peaks[v * 6 + p * 3];
                    const float amp = s.amps[v * 2 + p];
                    double n = std::sqrt(double(q[0]) * q[0] + double(q[1]) * q[1] + double(q[2]) * q[2]);
                    if (!(amp > 0) || !(n > 0)) continue;
                    const double dir[3] = {q[0] / n, q[1] / n, q[2] / n};
                    expect_line(poly, cell, centre, dir, 3.0 * amp, "voxel " + std::to_string(v));
                    EXPECT_FLOAT_EQ(float(poly->GetCellData()->GetArray("amplitude")->GetTuple1(cell)), amp);
                    EXPECT_EQ(poly->GetCellData()->GetArray("peak")->GetTuple1(cell), p);
                    ++cell;
                }
            }
    EXPECT_EQ(poly->GetNumberOfLines(), cell);
    EXPECT_EQ(cell, 24 - 2 + 8);  // 22 first peaks, 8 second ones
}

TEST(FiberGlyphs, AutomaticScaleSliceAndBadInput)
{
    SmallPeaks s;
    // largest amplitude 0.5 + 2.3 = 2.8 spans the smallest spacing (2 mm)
    EXPECT_NEAR(tk::AutomaticGlyphScale(s.image), 2.0 / 2.8, 1e-6);
    s.image.amplitudes = nullptr;  // lengths from the peak vectors: the same here
    EXPECT_NEAR(tk::AutomaticGlyphScale(s.image), 2.0 / 2.8, 1e-6);
    EXPECT_EQ(tk::AxialAxis(s.image.ijk_to_ras), 2);
    tk::GlyphOptions o;
    o.slice_axis = 2, o.slice_index = 1;
    auto poly = tk::PeaksToPolyData(s.image, o);
    EXPECT_EQ(poly->GetNumberOfLines(), 12 + 4);  // voxels 12..23; 12, 15, 18 and 21 have two peaks
    for (vtkIdType p = 0; p < poly->GetNumberOfPoints(); ++p)
        EXPECT_NEAR(poly->GetPoint(p)[2], 4 * 1 + 5, 0.5 * 2.0 + 1e-9);  // around the slice plane z = 9
    o.slice_index = 2;
    EXPECT_THROW(tk::PeaksToPolyData(s.image, o), std::invalid_argument);
    o.slice_index = 0, o.scale = -1;
    EXPECT_THROW(tk::PeaksToPolyData(s.image, o), std::invalid_argument);
    tk::PeaksImage none;
    EXPECT_THROW(tk::PeaksToPolyData(none), std::invalid_argument);
    // a reoriented image whose second voxel axis points superior: axial slices along it
    const double sagittal[16] = {0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
    EXPECT_EQ(tk::AxialAxis(sagittal), 1);
}

TEST(FiberGlyphs, VtpReadsBackWithOneLinePerPeakAtTheVoxelsRasPosition)
{
    std::string dir = make_temp_dir("tk_fibers_vtp");
    // 5 x 4 x 3 voxels of 1-3 fibers, in an oblique, anisotropic LPS frame (ITK's)
    auto sh = sh_volume(5, 4, 3, 45);
    tk::VectorImage3::SpacingType spacing;
    spacing[0] = 1.5, spacing[1] = 2.0, spacing[2] = 2.5;
    sh->SetSpacing(spacing);
    tk::VectorImage3::PointType origin;
    origin[0] = 12, origin[1] = -7, origin[2] = 30;
    sh->SetOrigin(origin);
    tk::VectorImage3::DirectionType direction;
    const double c = std::cos(0.4), s = std::sin(0.4);
    direction[0][0] = c, direction[0][1] = -s, direction[0][2] = 0;
    direction[1][0] = s, direction[1][1] = c, direction[1][2] = 0;
    direction[2][0] = 0, direction[2][1] = 0, direction[2][2] = -1;
    sh->SetDirection(direction);
    const size_t nvox = sh->GetLargestPossibleRegion().GetNumberOfPixels();
    for (size_t v = 0; v < nvox; ++v) {
        std::vector<std::vector<double>> dirs = {{1, 0.1 * v, 0.2}};
        std::vector<double> weights = {1.0};
        if (v % 2) dirs.push_back({0, 1, 0.05 * v}), weights.push_back(0.7);
        if (v % 3 == 0) dirs.push_back({0.1, -0.2, 1}), weights.push_back(0.5);
        for (auto &d : dirs) {
            double n = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            for (auto &x : d) x /= n;
        }
        set_voxel(sh, v, sh_of_fibers(8, TK_SH_TOURNIER, 0, dirs, weights));
    }
    tk::write_vector_volume(sh, dir + "/sh.nrrd");
    auto r = run_tool(exe + " --quiet --relative-threshold 0.2 " + dir + "/sh.nrrd " + dir + "/peaks.nrrd --amplitudes " +
                          dir + "/amp.nrrd --vtp " + dir + "/fibers.vtp --glyph-scale 2",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto peaks = tk::read_vector_volume(dir + "/peaks.nrrd");
    auto amps = tk::read_vector_volume(dir + "/amp.nrrd");
    auto reader = vtkSmartPointer<vtkXMLPolyDataReader>::New();
    reader->SetFileName((dir + "/fibers.vtp").c_str());
    reader->Update();
    vtkPolyData *poly = reader->GetOutput();
    ASSERT_NE(poly, nullptr);
    vtkIdType cell = 0;
    size_t present = 0;
    for (size_t v = 0; v < nvox; ++v) {
        // the voxel's world position through ITK (LPS), then to RAS
        auto index = sh->ComputeIndex(v);
        tk::VectorImage3::PointType p;
        sh->TransformIndexToPhysicalPoint(index, p);
        const double centre[3] = {-p[0], -p[1], p[2]};
        for (int q = 0; q < 3; ++q) {
            const float *pk = peaks->GetBufferPointer() + v * 9 + q * 3;
            const float amp = amps->GetBufferPointer()[v * 3 + q];
            if (std::isnan(amp)) continue;
            ++present;
            // the NRRD holds the peaks in its LPS space; the glyphs are RAS
            const double d[3] = {-pk[0] / amp, -pk[1] / amp, pk[2] / amp};
            ASSERT_LT(cell, poly->GetNumberOfLines());
            expect_line(poly, cell, centre, d, 2.0 * amp, "voxel " + std::to_string(v) + " peak " + std::to_string(q));
            ++cell;
        }
    }
    EXPECT_GT(present, nvox * 3 / 2);
    EXPECT_EQ(poly->GetNumberOfLines(), vtkIdType(present));
    EXPECT_EQ(poly->GetNumberOfPoints(), vtkIdType(2 * present));
}

TEST(FiberGlyphs, PngShowsColouredFibersWhereTheyAre)
{
    const std::string prefix = render_prefix();
    if (prefix == "NONE") GTEST_SKIP() << "SKIPPED: no X display and no xvfb-run (Debian's xvfb): cannot render";
    std::string dir = make_temp_dir("tk_fibers_png");
    // 12 x 10 x 3 voxels, RAS-aligned: x fibers (red) in the patient's right half (i >= 6,
    // +x is right), y fibers (green) in the left half's anterior part (i < 6, j >= 5), nothing
    // elsewhere.  The view is radiological: right on the picture's left, anterior up.
    auto sh = sh_volume(12, 10, 3, 45);
    tk::VectorImage3::DirectionType lps_to_ras;  // RAS-aligned voxel axes, in ITK's LPS
    lps_to_ras.SetIdentity();
    lps_to_ras[0][0] = -1, lps_to_ras[1][1] = -1;
    sh->SetDirection(lps_to_ras);
    auto red = sh_of_fibers(8, TK_SH_TOURNIER, 0, {{1, 0, 0}}, {1.0});
    auto green = sh_of_fibers(8, TK_SH_TOURNIER, 0, {{0, 1, 0}}, {1.0});
    const std::vector<double> none(45, 0.0);
    for (size_t v = 0; v < sh->GetLargestPossibleRegion().GetNumberOfPixels(); ++v) {
        auto idx = sh->ComputeIndex(v);
        set_voxel(sh, v, idx[0] >= 6 ? red : (idx[1] >= 5 ? green : none));
    }
    tk::write_vector_volume(sh, dir + "/sh.nrrd");
    auto r = run_tool(prefix + exe + " --quiet " + dir + "/sh.nrrd " + dir + "/peaks.nrrd --png " + dir + "/slice.png",
                      dir);
    if (r.exit_code != 0 && r.err.find("cannot render") != std::string::npos)
        GTEST_SKIP() << "SKIPPED: no display to render on: " << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto png = vtkSmartPointer<vtkPNGReader>::New();
    png->SetFileName((dir + "/slice.png").c_str());
    png->Update();
    vtkImageData *img = png->GetOutput();
    int dims[3];
    img->GetDimensions(dims);
    ASSERT_GE(dims[0], 400);
    ASSERT_GE(dims[1], 300);
    const int comps = img->GetNumberOfScalarComponents();
    ASSERT_GE(comps, 3);
    // PNG rows come bottom-up from VTK's reader: y = 0 is the bottom of the picture
    long red_left = 0, red_right = 0, green_right_top = 0, green_elsewhere = 0, grey = 0;
    for (int y = 0; y < dims[1]; ++y)
        for (int x = 0; x < dims[0]; ++x) {
            auto *px = static_cast<unsigned char *>(img->GetScalarPointer(x, y, 0));
            const int R = px[0], G = px[1], B = px[2];
            const bool left = x < dims[0] / 2, top = y > dims[1] / 2;
            if (R > 180 && G < 80 && B < 80) (left ? red_left : red_right)++;
            if (G > 180 && R < 80 && B < 80) (!left && top ? green_right_top : green_elsewhere)++;
            if (R == G && G == B && R >= 25 && R <= 205) ++grey;
        }
    EXPECT_GT(red_left, 500) << "x fibers (patient's right) must show red on the picture's left";
    EXPECT_LT(red_right, red_left / 50);
    EXPECT_GT(green_right_top, 300) << "y fibers (left, anterior) must show green at the top right";
    EXPECT_LT(green_elsewhere, green_right_top / 50);
    EXPECT_GT(grey, dims[0] * dims[1] / 4) << "the grey background slice";
}

TEST(FiberGlyphs, BadVisualizationRequestsFailClearlyAndLeaveNoOutput)
{
    std::string dir = make_temp_dir("tk_fibers_vis_bad");
    auto sh = sh_volume(3, 3, 4, 15);
    auto c = sh_of_fibers(4, TK_SH_TOURNIER, 0, {{0, 0, 1}}, {1.0});
    for (size_t v = 0; v < sh->GetLargestPossibleRegion().GetNumberOfPixels(); ++v) set_voxel(sh, v, c);
    tk::write_vector_volume(sh, dir + "/sh.nrrd");
    const std::string in = dir + "/sh.nrrd " + dir + "/out.nrrd";
    std::vector<Refusal> cases = {
        {"env -u DISPLAY " + exe + " " + in + " --vtp " + dir + "/f.vtp --png " + dir + "/s.png", "no X display", 1},
        {exe + " " + in + " --vtp " + dir + "/no/such/dir/f.vtp", "f.vtp: cannot write", 1},
        {exe + " " + in + " --slice 2", "--slice only applies with --png", 2},
        {exe + " " + in + " --glyph-scale -1 --vtp " + dir + "/f.vtp", "--glyph-scale", 2},  // 0: automatic
        {exe + " " + in + " --vtp", "--vtp", 2},
    };
    const std::string prefix = render_prefix();
    if (prefix != "NONE")
        cases.push_back({prefix + exe + " " + in + " --png " + dir + "/s.png --slice 4", "--slice 4 is outside", 2});
    for (const auto &k : cases) {
        expect_refused(k.args, k.message, k.code, dir);
        EXPECT_FALSE(exists(dir + "/out.nrrd")) << k.args;
        EXPECT_FALSE(exists(dir + "/f.vtp")) << k.args;
        EXPECT_FALSE(exists(dir + "/s.png")) << k.args;
    }
    auto listing = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(listing.out, "sh.nrrd\nstderr.txt\nstdout.txt\n");
}
