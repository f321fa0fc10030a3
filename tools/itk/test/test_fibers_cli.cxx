// tk-fibers end to end: peaks against the core and against MRtrix3's sh2peaks, formats,
// and every bad input ending in a clear message with no output left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "itkImageFileReader.h"
#include "itkImageFileWriter.h"

#include <fstream>
#ifdef TK_TEST_BZIP2
#include <bzlib.h>
#endif
#include <zlib.h>
#include "sh_image_io.h"
#include "sh_volume_test_util.h"
#include "slicer_command_line.h"
#include "tk_cli_runner.h"
#include "tk_fibers.h"
#include "tk_refusal_test_util.h"
#include "tk_sh_test_util.h"

using namespace tk_test;

namespace {

const std::string exe = TK_FIBERS_EXE;

// The command running tk-fibers quietly on the omp backend, from in to out (paths).
std::string fibers_omp(const std::string &in, const std::string &out)
{
    return exe + " " + in + " " + out + " --quiet --backend omp";
}

// A 4 x 3 x 2 volume of lmax-8 SH: voxel v holds 1-3 random "fibers" (w (u.x)^8 lobes);
// each voxel's coefficients also go to *coeffs where given.
tk::VectorImage3::Pointer phantom(unsigned seed, std::vector<std::vector<double>> *coeffs = nullptr)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> g;
    std::uniform_real_distribution<double> u(0.3, 1.0);
    auto image = sh_volume(4, 3, 2, 45);
    tk::VectorImage3::SpacingType sp;
    sp.Fill(2.0);
    image->SetSpacing(sp);
    if (coeffs) coeffs->clear();
    for (size_t v = 0; v < image->GetLargestPossibleRegion().GetNumberOfPixels(); ++v) {
        int fibers = 1 + v % 3;
        std::vector<std::vector<double>> dirs;
        std::vector<double> weights;
        for (int k = 0; k < fibers; ++k) {
            double d[3] = {g(rng), g(rng), g(rng)}, n = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            dirs.push_back({d[0] / n, d[1] / n, d[2] / n});
            weights.push_back(u(rng));
        }
        auto c = sh_of_fibers(8, TK_SH_TOURNIER, 0, dirs, weights);
        if (coeffs) coeffs->push_back(c);
        set_voxel(image, v, c);
    }
    return image;
}

using Image4 = itk::Image<float, 4>;
Image4::Pointer read4(const std::string &path)
{
    auto r = itk::ImageFileReader<Image4>::New();
    r->SetFileName(path);
    r->Update();
    return r->GetOutput();
}

// Peaks from a NRRD output, back in world RAS: tk-fibers writes them in the file's space
// (LPS, "space: left-posterior-superior"), so x and y are negated there.
tk::VectorImage3::Pointer read_peaks_ras(const std::string &path)
{
    auto peaks = tk::read_vector_volume(path);
    float *p = peaks->GetBufferPointer();
    const size_t n = peaks->GetLargestPossibleRegion().GetNumberOfPixels() * peaks->GetNumberOfComponentsPerPixel();
    for (size_t i = 0; i < n; ++i)
        if (i % 3 < 2) p[i] = -p[i];
    return peaks;
}

double angle_deg(const float *a, const float *b)
{
    // atan2 of |a x b| and |a . b|: exact near 0, where acos of a rounded dot product is not
    double c0 = (double)a[1] * b[2] - (double)a[2] * b[1], c1 = (double)a[2] * b[0] - (double)a[0] * b[2],
           c2 = (double)a[0] * b[1] - (double)a[1] * b[0];
    double d = std::fabs((double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2]);
    return std::atan2(std::sqrt(c0 * c0 + c1 * c1 + c2 * c2), d) * 180 / 3.14159265358979;
}

// tk-fibers (omp) on dir/reference, then on dir/NAME + extension for each NAME of inputs:
// the peaks of each (in p_NAME.nrrd) are, byte for byte, the reference's (p_REFERENCE.nrrd);
// which names the reference in a failure's message.
void expect_peaks_of_reference(const std::string &dir, const std::string &reference,
                               const std::vector<std::string> &inputs, const std::string &extension,
                               const std::string &which)
{
    const std::string peaks = dir + "/p_" + reference.substr(0, reference.find('.')) + ".nrrd";
    auto r = run_tool(fibers_omp(dir + "/" + reference, peaks), dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string want = slurp(peaks);
    for (const std::string &in : inputs) {
        r = run_tool(fibers_omp(dir + "/" + in + extension, dir + "/p_" + in + ".nrrd"), dir);
        ASSERT_EQ(r.exit_code, 0) << in << ": " << r.err;
        EXPECT_TRUE(slurp(dir + "/p_" + in + ".nrrd") == want) << in << ": the peaks differ from " << which;
    }
}

}  // namespace

TEST(FibersCli, PeaksMatchTheCoreAndTheLayoutIsSh2peaks)
{
    std::string dir = make_temp_dir("tk_fibers");
    std::vector<std::vector<double>> coeffs;
    tk::write_vector_volume(phantom(1, &coeffs), dir + "/sh.nrrd");
    auto r = run_tool(exe + " " + dir + "/sh.nrrd " + dir + "/peaks.nii --amplitudes " + dir + "/amp.nii --num 3", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto peaks4 = read4(dir + "/peaks.nii");  // 4-D, 3 volumes per peak, as sh2peaks writes
    ASSERT_EQ(peaks4->GetLargestPossibleRegion().GetSize()[3], 9u);
    EXPECT_NEAR(peaks4->GetSpacing()[0], 2.0, 1e-9);
    ASSERT_EQ(read4(dir + "/amp.nii")->GetLargestPossibleRegion().GetSize()[3], 3u);
    // Values through NRRD: ITK 5.2's NIfTI reader turns NaN into 0 (nibabel and MRtrix3 keep it).
    r = run_tool(exe + " " + dir + "/sh.nrrd " + dir + "/peaks.nrrd --amplitudes " + dir + "/amp.nrrd --quiet", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto peaks = read_peaks_ras(dir + "/peaks.nrrd"), amps = tk::read_vector_volume(dir + "/amp.nrrd");
    ASSERT_EQ(peaks->GetNumberOfComponentsPerPixel(), 9u);
    const size_t nvox = 24;
    for (size_t v = 0; v < nvox; ++v) {
        double d[3 * 8], a[8];
        std::vector<double> stored(coeffs[v].size());  // the coefficients as the float volume holds them
        for (size_t i = 0; i < stored.size(); ++i) stored[i] = static_cast<float>(coeffs[v][i]);
        int n = tk_fibers_all_maxima(8, TK_SH_TOURNIER, 0, stored.data(), 8, d, a);
        int kept = 0;
        for (int p = 0; p < n && kept < 3; ++p) kept += a[p] > 0;
        for (int p = 0; p < 3; ++p) {
            float got[3], amp = amps->GetBufferPointer()[v * 3 + p];
            for (int i = 0; i < 3; ++i) got[i] = peaks->GetBufferPointer()[v * 9 + 3 * p + i];
            if (p < kept) {  // the 4-D NIfTI holds the same numbers, volume-major
                EXPECT_EQ(peaks4->GetBufferPointer()[(3 * p) * nvox + v], got[0]);
            }
            if (p >= kept) {
                EXPECT_TRUE(std::isnan(got[0]) && std::isnan(amp))
                    << "voxel " << v << " peak " << p << " n " << n << " got " << amp << " a0 " << a[0];
                continue;
            }
            EXPECT_NEAR(amp, a[p], 1e-4 * (1 + a[p]));
            EXPECT_NEAR(std::sqrt(got[0] * got[0] + got[1] * got[1] + got[2] * got[2]), a[p], 1e-4 * (1 + a[p]));
            float want[3] = {(float)d[p * 3], (float)d[p * 3 + 1], (float)d[p * 3 + 2]};
            EXPECT_LT(angle_deg(got, want), 1e-3);
        }
    }
}

TEST(FibersCli, FindsEveryPeakSh2peaksFinds)
{
    const std::string sh2peaks = TK_SH2PEAKS_EXE;
    if (sh2peaks.empty()) GTEST_SKIP() << "sh2peaks (Debian's mrtrix3) not installed";
    std::string dir = make_temp_dir("tk_fibers_mrtrix");
    tk::write_vector_volume(phantom(7), dir + "/sh.nii");
    auto ref = run_tool(sh2peaks + " -quiet -force -num 3 " + dir + "/sh.nii " + dir + "/ref.nii", dir);
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    auto ours = run_tool(exe + " --quiet --num 3 " + dir + "/sh.nii " + dir + "/ours.nrrd", dir);
    ASSERT_EQ(ours.exit_code, 0) << ours.err;
    auto a = read4(dir + "/ref.nii");  // absent peaks read back as 0 (see above)
    auto b = read_peaks_ras(dir + "/ours.nrrd");
    const size_t nvox = 24;
    int matched = 0;
    for (size_t v = 0; v < nvox; ++v)
        for (int p = 0; p < 3; ++p) {
            float rp[3];
            for (int i = 0; i < 3; ++i) rp[i] = a->GetBufferPointer()[(3 * p + i) * nvox + v];
            if (std::isnan(rp[0]) || (rp[0] == 0 && rp[1] == 0 && rp[2] == 0)) continue;
            double best = 180, amp_ref = std::sqrt(rp[0] * rp[0] + rp[1] * rp[1] + rp[2] * rp[2]), amp_ours = 0;
            for (int q = 0; q < 3; ++q) {
                float op[3];
                for (int i = 0; i < 3; ++i) op[i] = b->GetBufferPointer()[v * 9 + 3 * q + i];
                if (std::isnan(op[0])) continue;
                double ang = angle_deg(rp, op);
                if (ang < best) best = ang, amp_ours = std::sqrt(op[0] * op[0] + op[1] * op[1] + op[2] * op[2]);
            }
            EXPECT_LT(best, 0.05) << "voxel " << v << ": sh2peaks peak " << p << " not found";
            EXPECT_NEAR(amp_ours, amp_ref, 1e-3 * (1 + amp_ref));
            ++matched;
        }
    EXPECT_GT(matched, 30);
}

TEST(FibersCli, RealVolumeMatchesSh2peaks)
{
    // Data/fibers/small_101D_fod.nii.gz: CSD of DIPY's small_101D DWI (600 voxels, lmax 8; LAS,
    // 2.5 mm, sform and qform code 1, SH in world axes).
    const std::string sh2peaks = TK_SH2PEAKS_EXE;
    if (sh2peaks.empty()) GTEST_SKIP() << "sh2peaks (Debian's mrtrix3) not installed";
    std::string dir = make_temp_dir("tk_fibers_real"), input = TK_DATA_DIR "/fibers/small_101D_fod.nii.gz";
    auto ref = run_tool(sh2peaks + " -quiet -force -num 3 " + input + " " + dir + "/ref.nii", dir);
    ASSERT_EQ(ref.exit_code, 0) << ref.err;
    auto ours = run_tool(exe + " --quiet --num 3 " + input + " " + dir + "/ours.nrrd", dir);
    ASSERT_EQ(ours.exit_code, 0) << ours.err;
    auto a = read4(dir + "/ref.nii");
    auto b = read_peaks_ras(dir + "/ours.nrrd");
    const size_t nvox = a->GetLargestPossibleRegion().GetSize()[0] * a->GetLargestPossibleRegion().GetSize()[1] *
                        a->GetLargestPossibleRegion().GetSize()[2];
    std::vector<double> angles;
    for (size_t v = 0; v < nvox; ++v)
        for (int p = 0; p < 3; ++p) {
            float rp[3];
            for (int i = 0; i < 3; ++i) rp[i] = a->GetBufferPointer()[(3 * p + i) * nvox + v];
            if (std::isnan(rp[0]) || (rp[0] == 0 && rp[1] == 0 && rp[2] == 0)) continue;
            double best = 180;
            for (int q = 0; q < 3; ++q) {
                const float *op = b->GetBufferPointer() + v * 9 + 3 * q;
                if (!std::isnan(op[0])) best = std::min(best, angle_deg(rp, op));
            }
            angles.push_back(best);
        }
    ASSERT_GT(angles.size(), 1000u);
    std::sort(angles.begin(), angles.end());
    size_t within = std::lower_bound(angles.begin(), angles.end(), 1.0) - angles.begin();
    // Measured: 1,798 of sh2peaks' 1,800 peaks matched within 1 degree, median 0.0003 degrees;
    // the other 2 are third peaks below 0.4% of their voxel's largest that tk-fibers leaves out.
    EXPECT_GE(within, angles.size() * 995 / 1000);
    EXPECT_LT(angles[angles.size() / 2], 0.01);
}

TEST(FibersCli, BadInputsFailClearlyAndLeaveNoOutput)
{
    std::string dir = make_temp_dir("tk_fibers_bad");
    auto good = phantom(3);
    tk::write_vector_volume(good, dir + "/sh.nii");
    auto odd = tk::VectorImage3::New();  // 44 components: no SH size
    odd->SetRegions(good->GetLargestPossibleRegion());
    odd->SetNumberOfComponentsPerPixel(44);
    odd->Allocate();
    tk::write_vector_volume(odd, dir + "/odd.nii");
    auto mask = tk::MaskImage3::New();
    tk::MaskImage3::RegionType small;
    small.SetSize({{2, 2, 2}});
    mask->SetRegions(small);
    mask->Allocate();
    mask->FillBuffer(1);
    {
        auto w = itk::ImageFileWriter<tk::MaskImage3>::New();
        w->SetFileName(dir + "/mask.nii");
        w->SetInput(mask);
        w->Update();
    }
    { std::ofstream(dir + "/empty.nii"); }
    { std::ofstream(dir + "/junk.nii") << "this is not a NIfTI file at all, just text"; }
    const std::string out = " " + dir + "/out.nii";
    const std::vector<Refusal> cases = {
        {dir + "/missing.nii" + out, "missing.nii: cannot open", 1},
        {dir + out, "is a directory", 1},
        {dir + "/empty.nii" + out, "empty file", 1},
        {dir + "/junk.nii" + out, "junk.nii", 1},
        {dir + "/odd.nii" + out, "44 volumes is no even-degree SH size", 1},
        {dir + "/sh.nii" + out + " --mask " + dir + "/mask.nii", "mask.nii: on another voxel grid than", 1},
        {dir + "/sh.nii" + out + " --frobnicate", "unknown option '--frobnicate'", 2},
        {dir + "/sh.nii" + out + " --num 0", "--num expects an integer from 1 to 64", 2},
        {dir + "/sh.nii" + out + " --basis mrtrix", "--basis expects tournier or descoteaux", 2},
        {dir + "/sh.nii", "INPUT_SH and OUTPUT_PEAKS are required", 2},
        {dir + "/sh.nii " + dir + "/no/such/dir/out.nii", "cannot write", 1},
    };
    for (const auto &c : cases) {
        expect_refused(exe + " " + c.args, c.message, c.code, dir);
        EXPECT_FALSE(exists(dir + "/out.nii")) << c.args;
    }
    // nothing but the inputs is left in the folder (no temporaries)
    auto listing = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(listing.out, "empty.nii\njunk.nii\nmask.nii\nodd.nii\nsh.nii\nstderr.txt\nstdout.txt\n");
}

// A volume read in another basis than it was written in gives wrong peaks (DIPY's default
// read as MRtrix3's: a median 72 degrees off on small_64D), so tk-fibers warns, naming the
// flags that read it right, from the data or, for --legacy on MRtrix3's files, the header;
// not for the right flags, --quiet, MRtrix3's own output, or the bundled tournier volumes
// (real and phantom).  The files are DIPY's and MRtrix3's own
// (Data/fibers/make_small_64D_fods.py).  A warning changes nothing else: exit 0, outputs written.
TEST(FibersCli, WarnsWhenTheDataLookLikeAnotherBasis)
{
    std::string dir = make_temp_dir("tk_fibers_basis");
    const std::string data = TK_DATA_DIR "/fibers/", dipy = data + "small_64D_fod_dipy.nii.gz",
                      mrtrix = data + "small_64D_fod_mrtrix.nii.gz";
    const struct {
        std::string input, flags, warning;  // warning: what stderr must say, "" for nothing at all
    } cases[] = {
        {dipy, "", "looks like DIPY's default basis (descoteaux07, legacy), not the given --basis tournier"},
        {dipy, "--basis descoteaux", "rerun with --basis descoteaux --legacy (--quiet silences this)"},
        {dipy, "--basis descoteaux --legacy", ""},
        {dipy, "--quiet", ""},
        {mrtrix, "", ""},
        // tournier's two scales look alike in the data; MRtrix3's header tells (mrconvert's description)
        {mrtrix, "--legacy", "was written by MRtrix3 (its description says 'MRtrix version: 3.0.3'), whose SH "
                             "basis is tournier07, not the given --basis tournier --legacy"},
        {mrtrix, "--basis descoteaux --legacy", "rerun with --basis tournier and without --legacy"},
        {data + "phantom_sh.nii.gz", "", ""},
        {data + "phantom_sh.nii.gz", "--legacy", ""},  // no header to tell: no false alarm
        {data + "small_101D_fod.nii.gz", "", ""},
        {data + "small_101D_fod.nii.gz", "--basis descoteaux --legacy",
         "looks like MRtrix3's basis (tournier07), not the given --basis descoteaux --legacy"},
    };
    for (const auto &c : cases) {
        std::remove((dir + "/peaks.nii.gz").c_str());
        auto r = run_tool(exe + " " + c.input + " " + dir + "/peaks.nii.gz --num 1 --backend omp " + c.flags, dir);
        SCOPED_TRACE(c.input + " " + c.flags);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(exists(dir + "/peaks.nii.gz"));
        if (c.warning.empty()) {
            EXPECT_EQ(r.err, "");
        } else {
            EXPECT_NE(r.err.find("tk-fibers: warning: " + c.input + " "), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(c.warning), std::string::npos) << r.err;
            EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
        }
    }
    // mrconvert stamps MRtrix3's description on DIPY's file too: there the data, not the header, decide
    const std::string sh2peaks = TK_SH2PEAKS_EXE;
    if (!sh2peaks.empty()) {
        const std::string mrconvert = sh2peaks.substr(0, sh2peaks.rfind('/') + 1) + "mrconvert";
        ASSERT_EQ(run_tool(mrconvert + " -quiet " + dipy + " " + dir + "/dipy_via_mrconvert.nii", dir).exit_code, 0);
        auto r = run_tool(exe + " " + dir + "/dipy_via_mrconvert.nii " + dir +
                              "/p.nii --num 1 --backend omp --basis descoteaux --legacy",
                          dir);
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_EQ(r.err, "") << "DIPY's data with MRtrix3's description, read right";
    }
    // the fix it names works: DIPY's file read as it says gives MRtrix3's peaks of the same data
    // (the two tools' CSDs differ; their main fiber directions agree in most voxels)
    ASSERT_EQ(
        run_tool(exe + " " + dipy + " " + dir + "/dipy.nii --num 1 --backend omp --quiet --basis descoteaux --legacy",
                 dir)
            .exit_code,
        0);
    ASSERT_EQ(run_tool(exe + " " + dipy + " " + dir + "/wrong.nii --num 1 --backend omp --quiet", dir).exit_code, 0);
    ASSERT_EQ(run_tool(exe + " " + mrtrix + " " + dir + "/mrtrix.nii --num 1 --backend omp --quiet", dir).exit_code, 0);
    auto right = read4(dir + "/dipy.nii"), wrong = read4(dir + "/wrong.nii"), truth = read4(dir + "/mrtrix.nii");
    std::vector<double> right_deg, wrong_deg;
    for (size_t v = 0; v < 1000; ++v) {
        float a[3], b[3], t[3];
        for (int j = 0; j < 3; ++j)
            a[j] = right->GetBufferPointer()[j * 1000 + v], b[j] = wrong->GetBufferPointer()[j * 1000 + v],
            t[j] = truth->GetBufferPointer()[j * 1000 + v];
        if (std::isnan(a[0]) || std::isnan(b[0]) || std::isnan(t[0])) continue;
        right_deg.push_back(angle_deg(a, t));
        wrong_deg.push_back(angle_deg(b, t));
    }
    ASSERT_GT(right_deg.size(), 900u);
    std::sort(right_deg.begin(), right_deg.end());
    std::sort(wrong_deg.begin(), wrong_deg.end());
    EXPECT_LT(right_deg[right_deg.size() / 2], 15.0);
    EXPECT_GT(wrong_deg[wrong_deg.size() / 2], 45.0);
}

// What 3D Slicer runs: every flag of the --xml description with its default (a boolean's
// flag only when true), then the positional images in <index> order, all as NRRD (a
// vector volume and a short label map).  The result must equal a plain run's.
TEST(FibersCli, AcceptsSlicersCommandLineBuiltFromItsXml)
{
    std::string dir = make_temp_dir("tk_fibers_slicer");
    tk::write_vector_volume(phantom(11), dir + "/sh.nrrd");
    auto label = SlicerLabelMap::New();
    label->SetRegions(tk::VectorImage3::RegionType({{0, 0, 0}}, {{4, 3, 2}}));
    label->Allocate();
    for (size_t v = 0; v < 24; ++v) label->GetBufferPointer()[v] = v % 5 ? 1 : 0;
    label->SetSpacing(tk::VectorImage3::SpacingType(2.0));
    auto w = itk::ImageFileWriter<SlicerLabelMap>::New();
    w->SetInput(label);
    w->SetFileName(dir + "/mask.nrrd");
    w->Update();

    SlicerRun slicer;
    ASSERT_NO_FATAL_FAILURE(run_as_slicer(exe, dir,
                                          {{"inputSH", dir + "/sh.nrrd"},
                                           {"outputPeaks", dir + "/peaks_slicer.nrrd"},
                                           {"mask", dir + "/mask.nrrd"},
                                           {"amplitudes", dir + "/amp_slicer.nrrd"},
                                           {"numberOfPeaks", "2"}},  // not the default: seen to reach the filter
                                          &slicer));
    // with VTK the glyph scale too (the glyphs output itself, unset, is left out as Slicer does);
    // with the standard --device, --quiet, --force, and --gpus (0: Slicer passes the default)
    EXPECT_EQ(slicer.flagged, slicer.xml.find("<geometry") != std::string::npos ? 15 : 14);
    auto plain = run_tool(exe + " --quiet " + dir + "/sh.nrrd " + dir + "/peaks.nrrd --num 2 --mask " + dir +
                              "/mask.nrrd --amplitudes " + dir + "/amp.nrrd",
                          dir);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    for (const char *name : {"peaks", "amp"}) {
        auto a = tk::read_vector_volume(dir + "/" + name + ".nrrd");
        auto b = tk::read_vector_volume(dir + "/" + name + "_slicer.nrrd");
        ASSERT_EQ(a->GetNumberOfComponentsPerPixel(), b->GetNumberOfComponentsPerPixel());
        const size_t n = 24 * a->GetNumberOfComponentsPerPixel();
        int masked = 0;
        for (size_t i = 0; i < n; ++i) {
            const float x = a->GetBufferPointer()[i], y = b->GetBufferPointer()[i];
            if (std::isnan(x)) EXPECT_TRUE(std::isnan(y)) << name << " " << i;
            else EXPECT_EQ(x, y) << name << " " << i;
            masked += (i / a->GetNumberOfComponentsPerPixel()) % 5 == 0 && std::isnan(y);
        }
        EXPECT_EQ(masked, 5 * (int)a->GetNumberOfComponentsPerPixel()) << name << ": masked voxels are NaN";
    }
}

// Every output is checked before any work (issue 20, item 6): its format by its extension,
// its folder, no two outputs the same file.  A problem ends the run at once, naming the flag
// and the file, with nothing written and the input not even opened (a broken input then
// still gets the output's message).
TEST(FibersCli, OutputsAreCheckedBeforeAnyWork)
{
    std::string dir = make_temp_dir("tk_fibers_outputs");
    tk::write_vector_volume(phantom(5), dir + "/sh.nii");
    { std::ofstream(dir + "/junk.nii") << "this is not a NIfTI file at all, just text"; }
    const bool vtk = run_tool(exe + " --help", dir).out.find("--vtp FIBERS.vtp") != std::string::npos;
    struct Case {
        std::string outputs, names, says;
        int code;
    };
    const std::string d = dir + "/";
    std::vector<Case> cases = {
        {d + "out.xyz", "OUTPUT_PEAKS " + d + "out.xyz", "unknown output format (by its extension)", 2},
        {d + "out", "OUTPUT_PEAKS " + d + "out:", "unknown output format", 2},
        {d + "out.nii --amplitudes " + d + "amp.xyz", "--amplitudes " + d + "amp.xyz", "unknown output format", 2},
        {d + "out.nii --amplitudes " + d + "amp.nii.zip", "--amplitudes " + d + "amp.nii.zip", ".mif.gz", 2},
        {d + "out.nii --amplitudes " + d + "out.nii", "OUTPUT_PEAKS and --amplitudes", "same file", 2},
        {d + "out.nhdr --amplitudes " + d + "out.mhd", "OUTPUT_PEAKS and --amplitudes", "same file 'out.raw'", 2},
        {d + "out.nii --amplitudes " + d + "nodir/amp.nii", d + "nodir/amp.nii", "does not exist", 1},
        {d + "out.nii --amplitudes /proc/amp.nii", "/proc/amp.nii", "cannot", 1},
    };
    if (vtk) {
        cases.push_back(
            {d + "out.nii --vtp " + d + "fibers.txt", "--vtp " + d + "fibers.txt", "ending in .vtp (what --vtp writes)", 2});
        cases.push_back(
            {d + "out.nii --png " + d + "slice.jpg", "--png " + d + "slice.jpg", "ending in .png (what --png writes)", 2});
        cases.push_back({d + "out.nii --vtp " + d + "nodir/f.vtp", d + "nodir/f.vtp", "does not exist", 1});
    }
    for (const auto &c : cases)
        for (const std::string &input : {d + "sh.nii", d + "junk.nii"}) {
            auto r = expect_refused(fibers_omp(input, c.outputs), c.says, c.code, dir);
            EXPECT_NE(r.err.find(c.names), std::string::npos) << c.outputs << "\nstderr: " << r.err;
            EXPECT_EQ(r.err.find("junk.nii"), std::string::npos) << "the input was read first: " << r.err;
        }
    auto listing = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(listing.out, "junk.nii\nsh.nii\nstderr.txt\nstdout.txt\n") << "nothing written, no temporaries";
}

// Every volume format the check accepts is written, and reads back as the .mif output (the
// NRRD and MetaImage ones with their vectors in LPS); a detached header's data file is
// named after it (not after a temporary) and nothing else is left.
TEST(FibersCli, WritesEveryVolumeFormatItAccepts)
{
    std::string dir = make_temp_dir("tk_fibers_formats");
    tk::write_vector_volume(phantom(9), dir + "/sh.nii");
    auto r = run_tool(fibers_omp(dir + "/sh.nii", dir + "/ref.mif"), dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto ref = tk::read_vector_volume(dir + "/ref.mif");
    ASSERT_EQ(ref->GetNumberOfComponentsPerPixel(), 9u);
    for (const char *ext : {".mif.gz", ".nii.gz", ".nrrd", ".nhdr", ".mha", ".mhd"}) {
        const std::string out = dir + "/peaks" + ext;
        r = run_tool(fibers_omp(dir + "/sh.nii", out), dir);
        ASSERT_EQ(r.exit_code, 0) << ext << ": " << r.err;
        const std::string e = ext;
        const bool lps = e == ".nrrd" || e == ".nhdr" || e == ".mha" || e == ".mhd";  // vectors in the file's LPS
        auto got = lps ? read_peaks_ras(out) : tk::read_vector_volume(out);
        ASSERT_EQ(got->GetNumberOfComponentsPerPixel(), 9u) << ext;
        int differ = 0;
        for (size_t i = 0; i < 24 * 9; ++i) {
            const float a = ref->GetBufferPointer()[i], b = got->GetBufferPointer()[i];
            // NaN back as NaN in every format (ITK 5.2's NIfTI library zeroes it; our reader,
            // sh_image_io.cxx, puts it back)
            differ += std::isnan(a) ? !std::isnan(b) : a != b;
        }
        EXPECT_EQ(differ, 0) << ext;
        for (unsigned r3 = 0; r3 < 3; ++r3)
            EXPECT_NEAR(got->GetOrigin()[r3], ref->GetOrigin()[r3], 1e-9) << ext;
    }
    EXPECT_NE(slurp(dir + "/peaks.nhdr").find("data file: peaks.raw"), std::string::npos);
    EXPECT_NE(slurp(dir + "/peaks.mhd").find("ElementDataFile = peaks.raw"), std::string::npos);
    auto listing = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(listing.out,
              "peaks.mha\npeaks.mhd\npeaks.mif.gz\npeaks.nhdr\npeaks.nii.gz\npeaks.nrrd\npeaks.raw\nref.mif\n"
              "sh.nii\nstderr.txt\nstdout.txt\n");
}

// NRRD's ascii, hex and bzip2 encodings (decoded by the tools; ITK 5.2 has no bzip2) give
// the peaks of the same volume stored raw, byte for byte, and so does the raw volume with
// its component axis stored last (ITK's reader moves it to the fastest; so must ours).
TEST(FibersCli, ReadsEveryNrrdEncodingAlike)
{
    std::string dir = make_temp_dir("tk_fibers_encodings");
    auto sh = phantom(11);
    tk::write_vector_volume(sh.GetPointer(), dir + "/raw.nrrd");
    const auto size = sh->GetLargestPossibleRegion().GetSize();
    const size_t nvox = size[0] * size[1] * size[2], nc = sh->GetNumberOfComponentsPerPixel();
    const float *v = sh->GetBufferPointer();
    std::string raw(reinterpret_cast<const char *>(v), nvox * nc * sizeof(float)), text, hex, last;
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < nvox * nc; ++i) {
        char b[32];
        std::snprintf(b, sizeof b, "%.9g%s", static_cast<double>(v[i]), i % nc == nc - 1 ? "\n" : " ");
        text += b;
    }
    for (unsigned char c : raw)
        hex += std::string(1, digits[c >> 4]) + digits[c & 15] + (hex.size() % 64 == 62 ? "\n" : "");
    for (size_t c = 0; c < nc; ++c)
        for (size_t x = 0; x < nvox; ++x) last.append(reinterpret_cast<const char *>(&v[x * nc + c]), sizeof(float));
    // the geometry lines ITK wrote, for every variant
    const std::string written = slurp(dir + "/raw.nrrd");
    std::string geometry;
    for (const char *field : {"space: ", "space directions: ", "space origin: "}) {
        const size_t at = written.find(std::string("\n") + field);
        ASSERT_NE(at, std::string::npos) << field;
        geometry += written.substr(at + 1, written.find('\n', at + 1) - at);
    }
    auto nrrd = [&](const std::string &encoding, const std::string &data, bool components_last = false) {
        const std::string sizes =
            std::to_string(size[0]) + " " + std::to_string(size[1]) + " " + std::to_string(size[2]);
        std::string g = geometry;
        if (components_last) {  // "space directions: none (1,0,0) ..." -> "... (0,0,1) none"
            g.erase(g.find("none "), 5);
            g.insert(g.find('\n', g.find("space directions: ")), " none");
        }
        return "NRRD0004\ntype: float\ndimension: 4\nsizes: " +
               (components_last ? sizes + " " + std::to_string(nc) : std::to_string(nc) + " " + sizes) +
               "\nkinds: " + (components_last ? "domain domain domain vector" : "vector domain domain domain") +
               "\nendian: little\n" + "encoding: " + encoding + "\n" + g + "\n" + data;
    };
    std::ofstream(dir + "/ascii.nrrd", std::ios::binary) << nrrd("ascii", text);
    std::ofstream(dir + "/hex.nrrd", std::ios::binary) << nrrd("hex", hex);
    std::ofstream(dir + "/plain.nrrd", std::ios::binary) << nrrd("raw", raw);
    std::ofstream(dir + "/last.nrrd", std::ios::binary) << nrrd("raw", last, true);
    std::vector<std::string> inputs = {"plain", "ascii", "hex", "last"};
#ifdef TK_TEST_BZIP2
    for (const auto *data : {&raw, &last}) {
        std::string packed(data->size() + 1000, '\0');
        unsigned n = static_cast<unsigned>(packed.size());
        ASSERT_EQ(BZ2_bzBuffToBuffCompress(&packed[0], &n, const_cast<char *>(data->data()),
                                           static_cast<unsigned>(data->size()), 9, 0, 0), BZ_OK);
        packed.resize(n);
        const std::string name = data == &raw ? "bzip2" : "bzip2_last";
        std::ofstream(dir + "/" + name + ".nrrd", std::ios::binary) << nrrd("bzip2", packed, data == &last);
        inputs.push_back(name);
    }
#endif
    expect_peaks_of_reference(dir, "raw.nrrd", inputs, ".nrrd", "the raw volume's");
}

// MetaImage data split over slice files (LIST, numbered files; raw, big-endian rows,
// compressed, with HeaderSize) give the peaks of the same volume in one .mha, byte for byte.
TEST(FibersCli, ReadsMetaImageSliceFilesAlike)
{
    std::string dir = make_temp_dir("tk_fibers_slices");
    auto sh = phantom(13);
    tk::write_vector_volume(sh.GetPointer(), dir + "/one.mha");
    const auto size = sh->GetLargestPossibleRegion().GetSize();
    const size_t nc = sh->GetNumberOfComponentsPerPixel(), row = size[0] * nc, plane = row * size[1];
    const float *v = sh->GetBufferPointer();
    auto bytes = [&](size_t from, size_t n, bool big) {
        std::string b(reinterpret_cast<const char *>(v + from), n * sizeof(float));
        for (size_t i = 0; big && i < b.size(); i += 4) std::swap(b[i], b[i + 3]), std::swap(b[i + 1], b[i + 2]);
        return b;
    };
    auto zipped = [](const std::string &b) {
        uLongf n = compressBound(b.size());
        std::string z(n, '\0');
        compress(reinterpret_cast<Bytef *>(&z[0]), &n, reinterpret_cast<const Bytef *>(b.data()), b.size());
        z.resize(n);
        return z;
    };
    std::string list, rows, zlist, hlist;
    for (size_t k = 0; k < size[2]; ++k) {
        const std::string n = std::to_string(k + 1);
        std::ofstream(dir + "/s" + n + ".raw", std::ios::binary) << bytes(k * plane, plane, false);
        std::ofstream(dir + "/z" + n + ".raw", std::ios::binary) << zipped(bytes(k * plane, plane, false));
        std::ofstream(dir + "/h" + n + ".raw", std::ios::binary) << "HEAD" + bytes(k * plane, plane, false);
        list += "s" + n + ".raw\n", zlist += "z" + n + ".raw\n", hlist += "h" + n + ".raw\n";
        for (size_t j = 0; j < size[1]; ++j) {
            const std::string r = "r" + n + "_" + std::to_string(j) + ".be";
            std::ofstream(dir + "/" + r, std::ios::binary) << bytes(k * plane + j * row, row, true);
            rows += r + "\n";
        }
    }
    // the one-file header ITK wrote, its ElementDataFile line replaced
    std::string head = slurp(dir + "/one.mha");
    head = head.substr(0, head.find("ElementDataFile = LOCAL\n"));
    auto with = [&](const std::string &records, bool big_endian = false) {
        std::string h = head;
        if (big_endian) h.replace(h.find("BinaryDataByteOrderMSB = False"), 30, "BinaryDataByteOrderMSB = True");
        return h + records;
    };
    std::ofstream(dir + "/list.mhd", std::ios::binary) << with("ElementDataFile = LIST\n" + list);
    std::ofstream(dir + "/numbered.mhd", std::ios::binary) << with("ElementDataFile = s%d.raw 1 " +
                                                                     std::to_string(size[2]) + " 1\n");
    std::ofstream(dir + "/rows.mhd", std::ios::binary) << with("ElementDataFile = LIST 1D\n" + rows, true);
    std::ofstream(dir + "/zlist.mhd", std::ios::binary) << with("ElementDataFile = LIST\n" + zlist);
    std::ofstream(dir + "/hlist.mhd", std::ios::binary) << with("HeaderSize = 4\nElementDataFile = LIST\n" + hlist);
    {  // CompressedData = True for the compressed slices
        std::string h = slurp(dir + "/zlist.mhd");
        const size_t at = h.find("CompressedData = False");
        if (at != std::string::npos) h.replace(at, 22, "CompressedData = True");
        else h.insert(h.find("ElementDataFile"), "CompressedData = True\n");
        std::ofstream(dir + "/zlist.mhd", std::ios::binary) << h;
    }
    expect_peaks_of_reference(dir, "one.mha", {"list", "numbered", "rows", "zlist", "hlist"}, ".mhd",
                              "the one-file volume's");
}

// --threads P (issue 20, item 11): ITK's threader runs the omp backend in at most P pieces
// at once; the peaks do not depend on it.  0 is all cores (the default); --help and the
// Slicer description list it.
TEST(FibersCli, ThreadsSetsTheThreaderAndNotTheResult)
{
    std::string dir = make_temp_dir("tk_fibers_threads");
    tk::write_vector_volume(phantom(13), dir + "/sh.nii");
    auto r = run_tool(fibers_omp(dir + "/sh.nii", dir + "/all.mif"), dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string all = slurp(dir + "/all.mif");
    for (const char *threads : {"1", "2", "7", "0"}) {
        const std::string out = dir + "/t" + threads + ".mif";
        r = run_tool(fibers_omp(dir + "/sh.nii", out) + " --threads " + threads, dir);
        ASSERT_EQ(r.exit_code, 0) << threads << ": " << r.err;
        EXPECT_EQ(slurp(out), all) << "--threads " << threads;
    }
    for (const char *bad : {"-1", "4097", "two", "1.5"}) {
        r = run_tool(exe + " " + dir + "/sh.nii " + dir + "/bad.mif --threads " + bad, dir);
        EXPECT_EQ(r.exit_code, 2) << bad;
        EXPECT_NE(r.err.find("--threads expects an integer from 0 to 4096"), std::string::npos) << r.err;
    }
    EXPECT_NE(run_tool(exe + " --help", dir).out.find("--threads P"), std::string::npos);
    EXPECT_NE(run_tool(exe + " --xml", dir).out.find("<longflag>--threads</longflag>"), std::string::npos);
}
