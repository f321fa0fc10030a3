// tk-track end to end: streamlines on synthetic SH volumes checked against the field's
// geometry (a straight fiber gives straight lines through the whole volume), the .tck read by
// this test's own parser and by MRtrix3's tckinfo, seeds from a mask, a point list and
// tckgen's -output_seeds file, --select, and every refusal with no output left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "itk_file_io.h"
#include "sh_image_io.h"
#include "tk_cli_runner.h"
#include "tk_sh_test_util.h"

using namespace tk_test;

namespace {

const std::string exe = TK_TRACK_EXE;
const std::string tckinfo = TK_TCKINFO_EXE;

// nx x ny x nz voxels of 2 mm, identity orientation: one lmax-8 fiber along world x in every
// voxel (the SH are in world RAS; x is an axis of the grid whatever the LPS/RAS flip).
tk::VectorImage3::Pointer x_fiber_volume(unsigned nx, unsigned ny, unsigned nz, unsigned comps = 45)
{
    auto image = tk::VectorImage3::New();
    tk::VectorImage3::RegionType region;
    region.SetSize({{nx, ny, nz}});
    image->SetRegions(region);
    image->SetNumberOfComponentsPerPixel(comps);
    tk::VectorImage3::SpacingType sp;
    sp.Fill(2.0);
    image->SetSpacing(sp);
    image->Allocate();
    const std::vector<double> c = sh_of_fibers(8, TK_SH_TOURNIER, 0, {{1, 0, 0}}, {1.0});
    for (size_t v = 0; v < region.GetNumberOfPixels(); ++v)
        for (unsigned i = 0; i < comps; ++i) image->GetBufferPointer()[v * comps + i] = i < c.size() ? (float)c[i] : 0;
    return image;
}

// A mask on the same grid as x_fiber_volume (spacing 2 unless told), non-zero at the listed voxels.
void write_mask(const std::string &path, unsigned nx, unsigned ny, unsigned nz,
                const std::vector<std::vector<unsigned>> &on, double spacing = 2.0)
{
    auto m = tk::MaskImage3::New();
    tk::MaskImage3::RegionType region;
    region.SetSize({{nx, ny, nz}});
    m->SetRegions(region);
    tk::MaskImage3::SpacingType sp;
    sp.Fill(spacing);
    m->SetSpacing(sp);
    m->Allocate();
    m->FillBuffer(0);
    for (const auto &v : on) m->SetPixel({{v[0], v[1], v[2]}}, 1);
    write(m.GetPointer(), path);
}

// The streamlines of a .tck, read by the format's definition (MRtrix3's tracks file: a text
// header ending in END, "file: . OFFSET", float32 triples, NaN triple between streamlines,
// Inf triple at the end), and the header's count.
struct Tck {
    std::vector<std::vector<std::array<float, 3>>> lines;
    long count = -1;
};
Tck read_tck(const std::string &path)
{
    Tck t;
    const std::string bytes = slurp(path);
    EXPECT_EQ(bytes.compare(0, 13, "mrtrix tracks"), 0);
    std::istringstream header(bytes);
    std::string line;
    size_t offset = 0;
    while (std::getline(header, line) && line != "END") {
        if (line.rfind("count:", 0) == 0) t.count = std::stol(line.substr(6));
        if (line.rfind("file:", 0) == 0) offset = std::stoul(line.substr(line.rfind(' ') + 1));
        if (line.rfind("datatype:", 0) == 0) {
            EXPECT_NE(line.find("Float32LE"), std::string::npos) << line;
        }
    }
    EXPECT_GT(offset, 0u);
    std::vector<std::array<float, 3>> cur;
    for (size_t p = offset; p + 12 <= bytes.size(); p += 12) {
        std::array<float, 3> x;
        std::memcpy(x.data(), bytes.data() + p, 12);
        if (std::isinf(x[0])) break;
        if (std::isnan(x[0])) {
            t.lines.push_back(cur);
            cur.clear();
        } else {
            cur.push_back(x);
        }
    }
    return t;
}

std::vector<std::string> listed_options(const std::string &dir)
{
    auto r = run_tool(exe + " --list-options", dir);
    std::vector<std::string> names;
    std::istringstream s(r.out);
    std::string name, role;
    while (s >> name >> role) names.push_back(name);
    return names;
}

struct Scratch {
    TempDir dir{"tk_track"};
    std::string fod = dir / "fod.nii", seeds = dir / "seed.nii";
    Scratch()
    {
        tk::write_vector_volume(x_fiber_volume(10, 5, 4), fod);
        write_mask(seeds, 10, 5, 4, {{4, 2, 1}, {5, 1, 2}, {3, 3, 2}});
    }
};

}  // namespace

TEST(TrackCli, StraightFiberGivesStraightStreamlinesThroughTheVolume)
{
    Scratch s;
    auto r = run_tool(exe + " " + s.fod + " " + s.dir / "out.tck --seed-mask " + s.seeds + " --seeds 4 --seed-direction 1,0,0 --quiet",
                      s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Tck t = read_tck(s.dir / "out.tck");
    ASSERT_EQ(t.lines.size(), 12u);  // 3 voxels x 4 seeds, each crossing the whole volume
    EXPECT_EQ(t.count, 12);
    for (const auto &l : t.lines) {
        ASSERT_GT(l.size(), 2u);
        float xmin = 1e9, xmax = -1e9;
        for (const auto &p : l) {
            EXPECT_NEAR(p[1], l[0][1], 1e-4);  // along x only
            EXPECT_NEAR(p[2], l[0][2], 1e-4);
            xmin = std::min(xmin, p[0]), xmax = std::max(xmax, p[0]);
        }
        // 10 voxels of 2 mm: the image's edges are half a voxel past the outer centres, 20 mm
        // apart; as in MRtrix3, each half keeps the step that left the image (the next one finds
        // no data), so each end lies within one step (0.2 mm) past its edge
        EXPECT_GE(xmax - xmin, 20.0f - 1e-3f);
        EXPECT_LT(xmax - xmin, 20.4f);
        for (size_t i = 1; i < l.size(); ++i)  // 0.1 voxel steps, MRtrix3's default
            EXPECT_NEAR(std::fabs(l[i][0] - l[i - 1][0]), 0.2f, 1e-4);
    }
    if (!tckinfo.empty()) {  // the field's own reader agrees on the count
        auto info = run_tool(tckinfo + " -count " + s.dir / "out.tck", s.dir.path);
        ASSERT_EQ(info.exit_code, 0) << info.err;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(info.out, m, std::regex("actual count in file:\\s*(\\d+)"))) << info.out;
        EXPECT_EQ(m[1], "12");
    }
}

TEST(TrackCli, PowerAndTrialsReachTheIfod1Sampler)
{
    // iFOD1 along the x fiber: one trial a step ends most streamlines within a few steps; a
    // high power concentrates the draws on the lobe's axis, so the steps turn less
    Scratch s;
    struct Run {
        size_t points = 0, lines = 0;
        double lateral = 0;  // mean |dy| + |dz| of a step
    };
    auto run = [&](const std::string &name, const std::string &extra) {
        auto r = run_tool(exe + " " + s.fod + " " + s.dir / name + " --algorithm ifod1 --seed-mask " + s.seeds +
                              " --seeds 20 --seed-direction 1,0,0 --min-length 0.4 --seed 3 --quiet" + extra,
                          s.dir.path);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        Run out;
        size_t steps = 0;
        for (const auto &l : read_tck(s.dir / name).lines) {
            out.points += l.size(), ++out.lines;
            for (size_t i = 1; i < l.size(); ++i, ++steps)
                out.lateral += std::fabs(l[i][1] - l[i - 1][1]) + std::fabs(l[i][2] - l[i - 1][2]);
        }
        out.lateral /= steps ? (double)steps : 1.0;
        return out;
    };
    const Run base = run("base.tck", ""), one = run("one.tck", " --trials 1"), sharp = run("sharp.tck", " --power 8");
    ASSERT_GT(base.lines, 30u);
    EXPECT_LT(one.points, base.points / 2) << "--trials 1 should end most streamlines early";
    EXPECT_LT(sharp.lateral, 0.8 * base.lateral) << "--power 8 should turn less than power 1";
    const Run same = run("same.tck", " --trials 1000 --power 1");  // the defaults, given
    EXPECT_EQ(same.points, base.points);
    EXPECT_EQ(same.lateral, base.lateral);
}

TEST(TrackCli, IncludeExcludeAndStoppingMaskByTheLinesTheyCross)
{
    // each seed voxel's streamlines run along x in their own row of voxels (j, k fixed)
    Scratch s;
    const std::string inc = s.dir / "inc.nii", exc = s.dir / "exc.nii", stop = s.dir / "stop.nii";
    write_mask(inc, 10, 5, 4, {{0, 2, 1}});  // the row of seed voxel (4, 2, 1)
    write_mask(exc, 10, 5, 4, {{9, 3, 2}});  // the row of seed voxel (3, 3, 2)
    std::vector<std::vector<unsigned>> box;  // i = 2..7 of every row
    for (unsigned k = 0; k < 4; ++k)
        for (unsigned j = 0; j < 5; ++j)
            for (unsigned i = 2; i < 8; ++i) box.push_back({i, j, k});
    write_mask(stop, 10, 5, 4, box);
    const std::string common = " --seed-mask " + s.seeds + " --seeds 4 --seed-direction 1,0,0 --quiet";
    auto r = run_tool(exe + " " + s.fod + " " + s.dir / "inc.tck --include " + inc + common, s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Tck t = read_tck(s.dir / "inc.tck");
    ASSERT_EQ(t.lines.size(), 4u);
    for (const auto &l : t.lines) EXPECT_NEAR(l[0][1], -4, 1.0 + 1e-4);  // y of row j = 2: -4 +- half a voxel
    r = run_tool(exe + " " + s.fod + " " + s.dir / "exc.tck --exclude " + exc + common, s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_tck(s.dir / "exc.tck").lines.size(), 8u);
    r = run_tool(exe + " " + s.fod + " " + s.dir / "stop.tck --mask " + stop + common, s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    t = read_tck(s.dir / "stop.tck");
    ASSERT_EQ(t.lines.size(), 12u);
    for (const auto &l : t.lines)  // i = 2..7 is RAS x in [-15, -3]; a half ends at its first point outside
        for (const auto &p : l) {
            EXPECT_GT(p[0], -15.0f - 0.2f - 1e-4f);
            EXPECT_LT(p[0], -3.0f + 0.2f + 1e-4f);
        }
}

TEST(TrackCli, SeedsFileInBothLayoutsAndSelect)
{
    Scratch s;
    {
        std::ofstream plain(s.dir / "plain.txt"), tckgen(s.dir / "tckgen.txt");
        tckgen << "# tckgen ... -output_seeds tckgen.txt (version=3.0.3)\n#Track_index,Seed_index,Pos_x,Pos_y,Pos_z,\n";
        // world RAS of voxel centres: the NIfTI's x and y are ITK's negated (LPS)
        const double pts[3][3] = {{-8, -4, 2}, {-6, -2, 4}, {-10.5, -6.25, 3.5}};
        for (int i = 0; i < 3; ++i) {
            plain << pts[i][0] << " " << pts[i][1] << " " << pts[i][2] << "\n";
            tckgen << i << "," << 40 + i << "," << pts[i][0] << "," << pts[i][1] << "," << pts[i][2] << ",\n";
        }
    }
    for (const char *f : {"plain", "tckgen"}) {
        auto r = run_tool(exe + " " + s.fod + " " + s.dir / (std::string(f) + ".tck") + " --seeds-file " +
                              s.dir / (std::string(f) + ".txt") + " --seed-direction -1,0,0 --quiet",
                          s.dir.path);
        ASSERT_EQ(r.exit_code, 0) << f << ": " << r.err;
    }
    Tck a = read_tck(s.dir / "plain.tck"), b = read_tck(s.dir / "tckgen.tck");
    ASSERT_EQ(a.lines.size(), 3u);
    ASSERT_EQ(b.lines.size(), 3u);
    EXPECT_EQ(slurp(s.dir / "plain.tck").substr(slurp(s.dir / "plain.tck").find("\nEND\n")),
              slurp(s.dir / "tckgen.tck").substr(slurp(s.dir / "tckgen.tck").find("\nEND\n")));
    EXPECT_NEAR(a.lines[0][0][1], -4, 1e-5);  // the seed's y kept along the line
    // --select K: exactly K streamlines, from a mask (rounds of seeds) or a file (its first K kept)
    auto r = run_tool(exe + " " + s.fod + " " + s.dir / "sel.tck --seed-mask " + s.seeds + " --select 7 --quiet", s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_tck(s.dir / "sel.tck").lines.size(), 7u);
    r = run_tool(exe + " " + s.fod + " " + s.dir / "sel2.tck --seeds-file " + s.dir / "plain.txt" + " --select 2 --quiet",
                 s.dir.path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_tck(s.dir / "sel2.tck").lines.size(), 2u);
    // the same --seed, the same file, whatever the threads
    for (const char *threads : {"1", "3"}) {
        r = run_tool(exe + " " + s.fod + " " + s.dir / (std::string("t") + threads + ".tck") + " --seed-mask " + s.seeds +
                         " --seeds 5 --algorithm ifod1 --seed 9 --threads " + threads + " --quiet",
                     s.dir.path);
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const std::string t1 = slurp(s.dir / "t1.tck"), t3 = slurp(s.dir / "t3.tck");
    EXPECT_EQ(t1.substr(t1.find("\nEND\n")), t3.substr(t3.find("\nEND\n")));
}

TEST(TrackCli, OtherFormatsByExtension)
{
    Scratch s;
    for (const char *ext : {".trk", ".vtp", ".vtk", ".trx"}) {
        auto r = run_tool(exe + " " + s.fod + " " + s.dir / (std::string("o") + ext) + " --seed-mask " + s.seeds +
                              " --quiet",
                          s.dir.path);
        EXPECT_EQ(r.exit_code, 0) << ext << ": " << r.err;
        EXPECT_TRUE(exists(s.dir / (std::string("o") + ext))) << ext;
    }
}

TEST(TrackCli, RefusalsNameTheFlagAndLeaveNothing)
{
    Scratch s;
    const std::string out = s.dir / "out.tck";
    struct Case {
        std::string args, expect;
        int code;
    };
    const std::string wrong = s.dir / "wrong.nii", empty = s.dir / "empty.nii", nan = s.dir / "nan.nrrd",
                      sixteen = s.dir / "sixteen.nii";
    write_mask(wrong, 10, 5, 4, {{1, 1, 1}}, 2.5);  // same size, another spacing
    write_mask(empty, 10, 5, 4, {});
    auto bad = x_fiber_volume(10, 5, 4);
    bad->GetBufferPointer()[45 * 17 + 3] = NAN;
    tk::write_vector_volume(bad, nan);  // NRRD here; a NIfTI's NaN is refused alike (bad-input matrix)
    tk::write_vector_volume(x_fiber_volume(10, 5, 4, 16), sixteen);
    const size_t files = count_files(s.dir.path);
    const std::vector<Case> cases = {
        {s.fod + " " + out, "--seed-mask", 2},
        {s.fod + " " + out + " --seeds 3", "--seed-mask", 2},
        {s.fod + " " + out + " --seed-mask " + s.seeds + " --seeds-file x.txt", "one of them", 2},
        {s.fod + " " + out + " --seeds-file x.txt --seeds 3", "drop --seeds", 2},
        {s.fod + " " + out + " --seed-mask " + wrong, "--seed-mask " + wrong, 1},
        {s.fod + " " + out + " --seed-mask " + s.seeds + " --mask " + wrong, "--mask " + wrong + ": on another voxel grid", 1},
        {s.fod + " " + out + " --seed-mask " + empty, "--seed-mask", 1},
        {nan + " " + out + " --seed-mask " + s.seeds, "nan.nrrd", 1},
        {sixteen + " " + out + " --seed-mask " + s.seeds, "no even-degree SH size", 1},
        {s.fod + " " + s.dir / "out.xyz" + " --seed-mask " + s.seeds, "unknown streamline format", 2},
        {s.fod + " /nonexistent_dir/out.tck --seed-mask " + s.seeds, "nonexistent_dir", 1},
        {s.fod + " " + out + " --seed-direction 0,0,0 --seed-mask " + s.seeds, "--seed-direction", 2},
        {s.fod + " " + out + " --seed-mask " + s.seeds + " --backend cuda --device 999", "--backend cuda: no usable CUDA GPU", 1},
        {s.fod + " " + out + " --seeds-file " + s.dir / "none.txt", "none.txt", 1},
    };
    for (const Case &c : cases) {
        auto r = run_tool(exe + " " + c.args, s.dir.path);
        EXPECT_EQ(r.exit_code, c.code) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find("tk-track: error:"), std::string::npos) << r.err;
        EXPECT_EQ(count_files(s.dir.path), files + 2) << c.args;  // stdout.txt, stderr.txt: no output, no temporary
    }
    // an existing output: refused without --force and left as it was, replaced with it
    { std::ofstream(out) << "keep"; }
    auto r = run_tool(exe + " " + s.fod + " " + out + " --seed-mask " + s.seeds, s.dir.path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(out), "keep");
    r = run_tool(exe + " " + s.fod + " " + out + " --seed-mask " + s.seeds + " --seed-direction 1,0,0 --force --quiet",
                 s.dir.path);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_tck(out).lines.size(), 3u);
}

TEST(TrackCli, HelpAndXmlListEveryOption)
{
    TempDir dir("tk_track_help");
    const std::vector<std::string> names = listed_options(dir.path);
    ASSERT_GT(names.size(), 20u);
    auto help = run_tool(exe + " --help", dir.path);
    ASSERT_EQ(help.exit_code, 0);
    for (const std::string &n : names) EXPECT_NE(help.out.find(n), std::string::npos) << n << " not in --help";
    for (const char *spec : {"--seed-mask", "--seeds", "--mask", "--algorithm", "--step", "--angle", "--cutoff",
                             "--min-length", "--max-length", "--select", "--include", "--exclude", "--seeds-file",
                             "--seed-direction", "--backend", "--threads", "--seed", "--force", "--quiet"})
        EXPECT_NE(std::find(names.begin(), names.end(), spec), names.end()) << spec;
    auto xml = run_tool(exe + " --xml", dir.path);
    ASSERT_EQ(xml.exit_code, 0) << xml.err;
    EXPECT_NE(xml.out.find("<geometry type=\"fiberbundle\""), std::string::npos) << xml.out;
    EXPECT_NE(xml.out.find("<image type=\"vector\""), std::string::npos);
    EXPECT_NE(xml.out.find("<longflag>--seed-mask</longflag>"), std::string::npos);
}
