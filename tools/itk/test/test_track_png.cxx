// tk-track --png: the bundle drawn offscreen and read back (its size, colour where the bundles
// project in the radiological axial view, red for x streamlines and green for y ones, as their
// tangents say), the picture with every output format and over several chunks, the bounded
// subsample it is drawn from (tk::StreamlineSample against its definition), and --png's
// refusals (no display, unwritable folder, wrong extension, an existing file) leaving nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "itk_file_io.h"
#include "sh_image_io.h"
#include "sh_volume_test_util.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_sh_test_util.h"
#include "tk_streamlines.h"
#include "track_sample.h"
#include "vtkImageData.h"
#include "vtkPNGReader.h"
#include "vtkSmartPointer.h"

using namespace tk_test;

namespace {

const std::string exe = TK_TRACK_EXE;

std::string render_prefix()
{
    // a display of our own under xvfb-run where it exists; the one we have otherwise
    if (std::system("command -v xvfb-run > /dev/null 2>&1") == 0) return "xvfb-run -a ";
    const char *display = std::getenv("DISPLAY");
    return display && *display ? "" : "NONE";
}

// 12 x 12 x 3 voxels of 2 mm, RAS-aligned: x fibers (red) in the posterior rows j < 4 across
// the whole width, y fibers (green) in the anterior part of the patient's right (j >= 4,
// i >= 8; +x is right), nothing elsewhere.  Seeds in every fiber voxel of the middle slice.
// x_only: x fibers everywhere, for the formats' runs.
void write_phantom(const std::string &dir, bool x_only = false)
{
    auto sh = sh_volume(12, 12, 3, 45);
    tk::VectorImage3::DirectionType lps_to_ras;  // RAS-aligned voxel axes, in ITK's LPS
    lps_to_ras.SetIdentity();
    lps_to_ras[0][0] = -1, lps_to_ras[1][1] = -1;
    tk::VectorImage3::SpacingType sp;
    sp.Fill(2.0);
    sh->SetDirection(lps_to_ras);
    sh->SetSpacing(sp);
    auto mask = tk::MaskImage3::New();
    mask->SetRegions(sh->GetLargestPossibleRegion());
    mask->SetDirection(lps_to_ras);
    mask->SetSpacing(sp);
    mask->Allocate();
    mask->FillBuffer(0);
    const auto red = sh_of_fibers(8, TK_SH_TOURNIER, 0, {{1, 0, 0}}, {1.0});
    const auto green = sh_of_fibers(8, TK_SH_TOURNIER, 0, {{0, 1, 0}}, {1.0});
    const std::vector<double> none(45, 0.0);
    for (size_t v = 0; v < sh->GetLargestPossibleRegion().GetNumberOfPixels(); ++v) {
        auto idx = sh->ComputeIndex(v);
        const bool x = x_only || idx[1] < 4, y = !x && idx[0] >= 8;
        set_voxel(sh, v, x ? red : (y ? green : none));
        if ((x || y) && idx[2] == 1) mask->GetBufferPointer()[v] = 1;
    }
    tk::write_vector_volume(sh, dir + "/fod.nrrd");
    write(mask.GetPointer(), dir + "/seeds.nrrd");
}

struct Counts {
    int width = 0, height = 0;
    long red_bottom = 0, red_elsewhere = 0, green_left_top = 0, green_elsewhere = 0, coloured = 0, other_hue = 0;
};

// Pixels of a PNG by colour and place (VTK's reader gives rows bottom-up: y = 0 is the bottom).
Counts count_pixels(const std::string &path)
{
    Counts k;
    auto png = vtkSmartPointer<vtkPNGReader>::New();
    png->SetFileName(path.c_str());
    png->Update();
    vtkImageData *img = png->GetOutput();
    int dims[3];
    img->GetDimensions(dims);
    k.width = dims[0], k.height = dims[1];
    if (img->GetNumberOfScalarComponents() < 3) return k;
    for (int y = 0; y < dims[1]; ++y)
        for (int x = 0; x < dims[0]; ++x) {
            auto *px = static_cast<unsigned char *>(img->GetScalarPointer(x, y, 0));
            const int R = px[0], G = px[1], B = px[2];
            if (R == G && G == B) continue;  // black background, white or grey labels
            ++k.coloured;
            const bool bottom = y < dims[1] * 35 / 100, left = x < dims[0] / 2;
            if (R > 180 && G < 80 && B < 80) (bottom ? k.red_bottom : k.red_elsewhere)++;
            else if (G > 180 && R < 80 && B < 80) (left && !bottom ? k.green_left_top : k.green_elsewhere)++;
            else ++k.other_hue;
        }
    return k;
}

}  // namespace

TEST(TrackPng, BundlesShowWhereTheyProjectInTheirTangentColours)
{
    const std::string prefix = render_prefix();
    if (prefix == "NONE") GTEST_SKIP() << "SKIPPED: no X display and no xvfb-run (Debian's xvfb): cannot render";
    const std::string dir = make_temp_dir("tk_track_png");
    write_phantom(dir);
    auto r = run_tool(prefix + exe + " --quiet " + dir + "/fod.nrrd " + dir + "/t.tck --seed-mask " + dir +
                          "/seeds.nrrd --seeds 4 --backend cpu --png " + dir + "/b.png",
                      dir);
    if (r.exit_code != 0 && r.err.find("cannot render") != std::string::npos)
        GTEST_SKIP() << "SKIPPED: no display to render on: " << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(exists(dir + "/t.tck"));
    const Counts k = count_pixels(dir + "/b.png");
    // the frame fits the bundle (24 x 24 mm): about 800 pixels plus margins each way
    EXPECT_GE(k.width, 700);
    EXPECT_GE(k.height, 700);
    // x streamlines: the posterior rows, the picture's bottom quarter, across its width
    EXPECT_GT(k.red_bottom, 5000) << "x streamlines must show red at the bottom (posterior)";
    EXPECT_LT(k.red_elsewhere, k.red_bottom / 20);
    // y streamlines: the patient's right (the picture's left: radiological), anterior of them
    EXPECT_GT(k.green_left_top, 3000) << "y streamlines (right, anterior) must show green at the top left";
    EXPECT_LT(k.green_elsewhere, k.green_left_top / 20);
    // pure tangents give pure colours: little else (the joints of the two bundles)
    EXPECT_LT(k.other_hue, k.coloured / 10) << k.other_hue << " of " << k.coloured << " coloured pixels";
}

TEST(TrackPng, EveryFormatAndSeveralChunks)
{
    const std::string prefix = render_prefix();
    if (prefix == "NONE") GTEST_SKIP() << "SKIPPED: no X display and no xvfb-run (Debian's xvfb): cannot render";
    const std::string dir = make_temp_dir("tk_track_png_formats");
    write_phantom(dir, true);
    // 144 seed voxels x 30 seeds: 4320 seeds, two chunks of the core's 4096
    for (const char *ext : {"tck", "trk", "trx", "vtp", "vtk"}) {
        const std::string out = dir + "/t." + ext, png = dir + "/" + ext + ".png";
        auto r = run_tool(prefix + exe + " " + dir + "/fod.nrrd " + out + " --seed-mask " + dir +
                              "/seeds.nrrd --seeds 30 --backend cpu --png " + png,
                          dir);
        if (r.exit_code != 0 && r.err.find("cannot render") != std::string::npos)
            GTEST_SKIP() << "SKIPPED: no display to render on: " << r.err;
        ASSERT_EQ(r.exit_code, 0) << ext << ": " << r.err;
        EXPECT_TRUE(exists(out)) << ext;
        std::smatch m;  // every kept streamline drawn (fewer than the sample's 20000)
        ASSERT_TRUE(std::regex_search(r.out, m, std::regex("4320 seeds, (\\d+) streamlines kept"))) << r.out;
        EXPECT_NE(r.out.find("all " + m[1].str() + " streamlines drawn"), std::string::npos) << r.out;
        const Counts k = count_pixels(png);
        const long red = k.red_bottom + k.red_elsewhere;
        EXPECT_GT(red, k.width * k.height / 2) << ext << ": a straight x bundle fills the frame in red";
        EXPECT_LT(k.coloured - red, red / 100) << ext << ": and nothing but red";
    }
}

// The subsample against its definition: every stride-th streamline in the order added, the
// stride the least power of two that fits the limits, the .vtp's colours.
TEST(TrackPng, SampleKeepsEveryKthStreamlineWithinItsLimits)
{
    std::vector<float> pts;
    std::vector<size_t> counts;
    std::vector<uint64_t> seeds;
    for (size_t s = 0; s < 1000; ++s) {
        const size_t n = 1 + s % 7;
        counts.push_back(n);
        seeds.push_back(s);
        for (size_t i = 0; i < n; ++i) {
            pts.push_back(float(s));
            pts.push_back(float(i * (s % 3)));
            pts.push_back(float(i * i));
        }
    }
    tk::StreamlineSample sample(100, 1000000);
    size_t at = 0, first = 0;
    for (size_t chunk : {1, 300, 0, 250, 449}) {  // 1000 in chunks, one empty
        tk_tracking_chunk c{};
        c.num_streamlines = chunk;
        c.num_points = counts.data() + first;
        c.seed_index = seeds.data() + first;
        c.points = pts.data() + 3 * at;
        for (size_t s = 0; s < chunk; ++s) c.total_points += counts[first + s];
        sample.add(c);
        first += chunk, at += c.total_points;
    }
    EXPECT_EQ(sample.seen(), 1000u);
    EXPECT_EQ(sample.stride(), 16u);  // 1000 / 8 = 125 > 100, 1000 / 16 = 63
    ASSERT_EQ(sample.size(), 63u);
    size_t p = 0;
    for (size_t s = 0; s < sample.size(); ++s) {
        const size_t index = 16 * s, n = counts[index];
        ASSERT_EQ(sample.num_points()[s], n) << s;
        std::vector<unsigned char> rgb(3 * n);
        size_t offset = 0;
        for (size_t q = 0; q < index; ++q) offset += counts[q];
        tk_streamlines_tangent_colours(pts.data() + 3 * offset, n, rgb.data());
        for (size_t i = 0; i < 3 * n; ++i) {
            ASSERT_EQ(sample.points()[3 * p + i], pts[3 * offset + i]) << s;
            ASSERT_EQ(sample.rgb()[3 * p + i], rgb[i]) << s;
        }
        p += n;
    }
    EXPECT_EQ(sample.points().size(), 3 * p);

    // the point limit: 1000 streamlines of 1..7 points (4 on average), at most 500 points
    tk::StreamlineSample by_points(1000000, 500);
    tk_tracking_chunk all{1000, counts.data(), seeds.data(), pts.data(), pts.size() / 3, 1000, 1000};
    by_points.add(all);
    EXPECT_LE(by_points.points().size() / 3, 500u);
    EXPECT_EQ(by_points.stride(), 8u);  // 3997 points / 8: about 500, / 4 about 1000
}

TEST(TrackPng, RefusalsLeaveNothing)
{
    const std::string dir = make_temp_dir("tk_track_png_bad");
    write_phantom(dir, true);
    const std::string in = exe + " " + dir + "/fod.nrrd " + dir + "/t.tck --seed-mask " + dir + "/seeds.nrrd";
    write_file(dir + "/old.png", "not ours");
    std::vector<Refusal> cases = {
        {"env -u DISPLAY " + in + " --png " + dir + "/b.png", "--png " + dir + "/b.png: cannot render: no X display", 1},
        {in + " --png " + dir + "/no/such/b.png", "b.png: cannot write: the folder", 1},
        {in + " --png " + dir + "/b.jpg", "give a name ending in .png", 2},
        {in + " --png " + dir + "/old.png", "--force", 2},
        {in + " --png " + dir + "/fod.nrrd", ".png", 2},
    };
    for (const auto &k : cases) {
        expect_refused(k.args, k.message, k.code, dir);
        EXPECT_FALSE(exists(dir + "/t.tck")) << k.args;
        EXPECT_FALSE(exists(dir + "/b.png")) << k.args;
    }
    EXPECT_EQ(slurp(dir + "/old.png"), "not ours");
    auto listing = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(listing.out, "fod.nrrd\nold.png\nseeds.nrrd\nstderr.txt\nstdout.txt\n");
}
