// tk-pltf complete end to end.  The oracle is the truth each test builds itself: a known
// low-rank non-negative image, written with its missing voxels set to NaN (which the tool
// must never read), comes back close to that truth; the command line Slicer builds from
// tk-pltf --xml gives the filter's own result; 3-D, 4-D and vector-volume geometry
// survive; bad input fails clearly, leaving no output and the input unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "itkVectorImage.h"
#include "itk_file_io.h"
#include "slicer_command_line.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_npy.h"

using namespace tk_test;

namespace {

const std::string exe = TK_PLTF_EXE;
using Image3 = itk::Image<float, 3>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// Rank-R non-negative PARAFAC on a grid (x fastest): sum_r prod_d f_d(r, coordinate d),
// factor entries uniform in [0.2, 1.2], times scale.
std::vector<float> parafac_truth(const std::vector<size_t> &size, int rank, uint32_t seed, double scale)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.2, 1.2);
    std::vector<std::vector<double>> f(size.size());
    for (size_t d = 0; d < size.size(); ++d)
        for (size_t i = 0; i < size[d] * rank; ++i) f[d].push_back(u(rng));
    size_t n = 1;
    for (auto s : size) n *= s;
    std::vector<float> out(n);
    for (size_t v = 0; v < n; ++v) {
        double sum = 0;
        for (int r = 0; r < rank; ++r) {
            double p = scale;
            size_t rest = v;
            for (size_t d = 0; d < size.size(); ++d) p *= f[d][(rest % size[d]) * rank + r], rest /= size[d];
            sum += p;
        }
        out[v] = static_cast<float>(sum);
    }
    return out;
}

// Spatial maps times time courses: value(x, y, z, t) = sum_p map_p(x, y, z) course_p(t),
// each map and course its own random non-negative vector.
std::vector<float> maps_times_courses(const std::vector<size_t> &size, int components, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.1, 1.1);
    const size_t nvox = size[0] * size[1] * size[2], nt = size[3];
    std::vector<double> map(nvox * components), course(nt * components);
    for (auto &m : map) m = u(rng);
    for (auto &c : course) c = 50 * u(rng);
    std::vector<float> out(nvox * nt);
    for (size_t t = 0; t < nt; ++t)
        for (size_t v = 0; v < nvox; ++v) {
            double sum = 0;
            for (int p = 0; p < components; ++p) sum += map[v * components + p] * course[t * components + p];
            out[t * nvox + v] = static_cast<float>(sum);
        }
    return out;
}

// 1 = observed, 0 = missing (about `missing` of the entries).
std::vector<float> random_mask(size_t n, double missing, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::bernoulli_distribution drop(missing);
    std::vector<float> m(n);
    for (auto &x : m) x = drop(rng) ? 0.0f : 1.0f;
    return m;
}

std::vector<float> with_holes(std::vector<float> values, const std::vector<float> &mask)
{
    for (size_t v = 0; v < values.size(); ++v)
        if (!mask[v]) values[v] = kNaN;
    return values;
}

// A grid that is not the identity: anisotropic spacing, an origin, a 30-degree rotation.
template <typename TImage> void set_geometry(TImage *image)
{
    constexpr unsigned D = TImage::ImageDimension;
    typename TImage::SpacingType spacing;
    typename TImage::PointType origin;
    typename TImage::DirectionType direction;
    direction.SetIdentity();
    const double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
    direction[0][0] = c, direction[0][1] = -s, direction[1][0] = s, direction[1][1] = c;
    for (unsigned d = 0; d < D; ++d) spacing[d] = 1.5 + 0.5 * d, origin[d] = d < 3 ? -12.5 + 7.0 * d : 0.0;
    image->SetSpacing(spacing);
    image->SetOrigin(origin);
    image->SetDirection(direction);
}

template <typename TImage>
typename TImage::Pointer image_of(const std::vector<size_t> &size, const std::vector<float> &values)
{
    auto image = TImage::New();
    typename TImage::SizeType sz;
    for (unsigned d = 0; d < TImage::ImageDimension; ++d) sz[d] = size[d];
    image->SetRegions(typename TImage::RegionType(sz));
    image->Allocate();
    set_geometry(image.GetPointer());
    for (size_t v = 0; v < values.size(); ++v)
        image->GetBufferPointer()[v] = static_cast<typename TImage::PixelType>(values[v]);
    return image;
}

// A vector volume of size[0..2] whose components are the 4th axis of values (volume-major).
itk::VectorImage<float, 3>::Pointer vector_volume_of(const std::vector<size_t> &size, const std::vector<float> &values)
{
    using V = itk::VectorImage<float, 3>;
    auto image = V::New();
    V::SizeType sz = {{size[0], size[1], size[2]}};
    image->SetRegions(V::RegionType(sz));
    image->SetNumberOfComponentsPerPixel(static_cast<unsigned>(size[3]));
    image->Allocate();
    set_geometry(image.GetPointer());
    const size_t nvox = size[0] * size[1] * size[2];
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < size[3]; ++t) image->GetBufferPointer()[v * size[3] + t] = values[t * nvox + v];
    return image;
}

template <typename TA, typename TB> void expect_same_geometry(const TA *got, const TB *want)
{
    ASSERT_EQ(got->GetLargestPossibleRegion().GetSize(), want->GetLargestPossibleRegion().GetSize());
    for (unsigned d = 0; d < TA::ImageDimension; ++d) {
        EXPECT_NEAR(got->GetSpacing()[d], want->GetSpacing()[d], 1e-6) << "axis " << d;
        EXPECT_NEAR(got->GetOrigin()[d], want->GetOrigin()[d], 1e-5) << "axis " << d;
        for (unsigned e = 0; e < TA::ImageDimension; ++e)
            EXPECT_NEAR(got->GetDirection()[d][e], want->GetDirection()[d][e], 1e-6) << d << "," << e;
    }
}

// RMS error over the entries where mask == want_mask, relative to the truth's RMS there.
double relative_rms(const float *got, const std::vector<float> &truth, const std::vector<float> &mask, float want_mask)
{
    double err = 0, norm = 0;
    for (size_t v = 0; v < truth.size(); ++v)
        if (mask[v] == want_mask) err += (got[v] - truth[v]) * (got[v] - truth[v]), norm += truth[v] * truth[v];
    return std::sqrt(err / norm);
}

}  // namespace

TEST(PltfCompleteCli, SlicersCommandLineFillsMissingVoxelsOfALowRankVolume)
{
    std::string dir = make_temp_dir("tk_pltf_complete");
    const std::vector<size_t> size = {20, 18, 16};
    const auto truth = parafac_truth(size, 3, 1, 100.0);
    const auto observed = random_mask(truth.size(), 0.3, 2);
    write(image_of<Image3>(size, with_holes(truth, observed)).GetPointer(), dir + "/in.nrrd");
    write(image_of<SlicerLabelMap>(size, observed).GetPointer(), dir + "/mask.nrrd");

    SlicerRun slicer;
    ASSERT_NO_FATAL_FAILURE(run_complete_as_slicer(
        exe, dir, {{"rank", "3"}, {"iterations", "400"}, {"seed", "7"}, {"backend", "cpu"}}, &slicer));
    EXPECT_EQ(slicer.flagged, 12);  // 8 of its own (--dims left out: empty), and the standard --device, --threads, --quiet, --force
    auto in = read<Image3>(dir + "/in.nrrd");
    auto out = read<Image3>(dir + "/out.nrrd");
    EXPECT_NEAR(in->GetSpacing()[2], 2.5, 1e-9);  // the grid is not the identity
    expect_same_geometry(out.GetPointer(), in.GetPointer());

    // Against the truth: the missing voxels (never seen) and the observed ones.
    const float *got = out->GetBufferPointer();
    // (filling with the observed mean instead is off by about 35-40%)
    EXPECT_LT(relative_rms(got, truth, observed, 0.0f), 0.01);
    EXPECT_LT(relative_rms(got, truth, observed, 1.0f), 0.01);

    // The plumbing: the filter itself with the defaults the XML states.
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<Image3>;
    auto filter = Filter::New();
    filter->SetInput(in);
    filter->SetMaskImage(image_of<Filter::MaskImageType>(size, observed));
    filter->SetRank(3);
    filter->SetNumberOfIterations(400);
    filter->SetSeed(7);
    filter->Update();
    for (size_t v = 0; v < truth.size(); ++v) ASSERT_EQ(got[v], filter->GetOutput()->GetBufferPointer()[v]) << v;

    // The documented order (command first) runs the same.
    auto r = run_tool(exe + " complete " + dir + "/in.nrrd " + dir + "/out2.nrrd --mask " + dir +
                          "/mask.nrrd --rank 3 --iters 400 --seed 7 --backend cpu --quiet",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    auto out2 = read<Image3>(dir + "/out2.nrrd");
    for (size_t v = 0; v < truth.size(); ++v) ASSERT_EQ(out2->GetBufferPointer()[v], got[v]) << v;
}

TEST(PltfCompleteCli, FourDimensionalNiftiKeepsItsGeometryAndObservedVoxels)
{
    using Image4 = itk::Image<float, 4>;
    std::string dir = make_temp_dir("tk_pltf_complete4");
    const std::vector<size_t> size = {12, 10, 8, 6};
    const size_t nvox = 12 * 10 * 8;
    const auto truth = parafac_truth(size, 2, 3, 20.0);
    // One 3-D mask for every volume.
    const auto observed3 = random_mask(nvox, 0.25, 4);
    std::vector<float> observed(truth.size());
    for (size_t v = 0; v < truth.size(); ++v) observed[v] = observed3[v % nvox];
    write(image_of<Image4>(size, with_holes(truth, observed)).GetPointer(), dir + "/pet.nii.gz");
    write(image_of<itk::Image<unsigned char, 3>>({12, 10, 8}, observed3).GetPointer(), dir + "/mask.nii.gz");
    auto r = run_tool(exe + " complete " + dir + "/pet.nii.gz " + dir + "/out.nii.gz --mask " + dir +
                          "/mask.nii.gz --rank 2 --iters 400 --keep-observed --backend omp",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("model ijkl=ia,ja,ka,la (a=2), 400 iterations on omp"), std::string::npos) << r.err;
    auto in = read<Image4>(dir + "/pet.nii.gz");
    auto out = read<Image4>(dir + "/out.nii.gz");
    EXPECT_NEAR(in->GetSpacing()[3], 3.0, 1e-6);  // the frame spacing, kept
    expect_same_geometry(out.GetPointer(), in.GetPointer());
    const float *got = out->GetBufferPointer();
    for (size_t v = 0; v < truth.size(); ++v) {
        if (observed[v]) {
            ASSERT_EQ(got[v], in->GetBufferPointer()[v]) << "--keep-observed, voxel " << v;
        }
    }
    EXPECT_LT(relative_rms(got, truth, observed, 0.0f), 0.005);
}

TEST(PltfCompleteCli, VectorVolumeWithAModelExpressionAndAFourDimensionalMask)
{
    using V = itk::VectorImage<float, 3>;
    std::string dir = make_temp_dir("tk_pltf_complete_vector");
    const std::vector<size_t> size = {10, 9, 8, 7};
    const auto truth = maps_times_courses(size, 2, 5);
    const auto observed = random_mask(truth.size(), 0.2, 6);  // per volume
    write(vector_volume_of(size, with_holes(truth, observed)).GetPointer(), dir + "/frames.nrrd");
    write(vector_volume_of(size, observed).GetPointer(), dir + "/mask.nrrd");
    // t is the components' axis: two spatial maps (zyxp) times two time courses (tp).
    auto r = run_tool(exe + " --model tzyx=tp,zyxp --dims p=2 --divergence euclidean --iters 600 --quiet --mask " +
                          dir + "/mask.nrrd complete " + dir + "/frames.nrrd " + dir + "/out.nrrd",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto in = read<V>(dir + "/frames.nrrd");
    auto out = read<V>(dir + "/out.nrrd");
    ASSERT_EQ(out->GetNumberOfComponentsPerPixel(), 7u);
    expect_same_geometry(out.GetPointer(), in.GetPointer());
    const size_t nvox = 10 * 9 * 8;
    std::vector<float> got(truth.size());
    for (size_t v = 0; v < nvox; ++v)
        for (size_t t = 0; t < 7; ++t) got[t * nvox + v] = out->GetBufferPointer()[v * 7 + t];
    EXPECT_LT(relative_rms(got.data(), truth, observed, 0.0f), 0.005);
}

TEST(PltfCompleteCli, BackendAutoRunsOnTheCpuWithOneWarningWithoutAGpu)
{
    std::string dir = make_temp_dir("tk_pltf_complete_auto");
    const std::vector<size_t> size = {9, 8, 7};
    write(image_of<Image3>(size, parafac_truth(size, 2, 8, 10.0)).GetPointer(), dir + "/in.mha");
    const std::string common = " complete " + dir + "/in.mha ";
    auto omp = run_tool(exe + common + dir + "/omp.mha --iters 50 --backend omp --quiet", dir);
    ASSERT_EQ(omp.exit_code, 0) << omp.err;
    auto r = run_tool(exe + common + dir + "/auto.mha --iters 50", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string warning = "tk-pltf: warning: no usable CUDA GPU (";
    const size_t at = r.err.find(warning);
    if (at == std::string::npos) {  // a GPU answered: nothing to fall back from
        EXPECT_NE(r.err.find("iterations on cuda"), std::string::npos) << r.err;
        GTEST_SKIP() << "SKIPPED: a CUDA device is usable, --backend auto ran on it";
    }
    EXPECT_EQ(r.err.find(warning, at + 1), std::string::npos) << "one warning line:\n" << r.err;
    EXPECT_NE(r.err.find("; running on the CPU (omp)\n"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("iterations on omp"), std::string::npos) << r.err;
    auto a = read<Image3>(dir + "/auto.mha"), b = read<Image3>(dir + "/omp.mha");
    for (size_t v = 0; v < 9 * 8 * 7; ++v) ASSERT_EQ(a->GetBufferPointer()[v], b->GetBufferPointer()[v]) << v;
    // --quiet silences the warning too.
    r = run_tool(exe + common + dir + "/auto2.mha --iters 5 --quiet", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    // Asked for by name, CUDA is an error here, and leaves nothing behind.
    r = run_tool(exe + common + dir + "/cuda.mha --iters 5 --backend cuda", dir);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("tk-pltf: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cuda"), std::string::npos) << r.err;
    EXPECT_FALSE(exists(dir + "/cuda.mha"));
}

TEST(PltfCompleteCli, BadInputsFailClearlyLeaveNoOutputAndTheInputUnchanged)
{
    using Mask3 = itk::Image<unsigned char, 3>;
    std::string dir = make_temp_dir("tk_pltf_complete_bad");
    const std::vector<size_t> size = {10, 9, 8};
    auto values = parafac_truth(size, 2, 9, 10.0);
    write(image_of<Image3>(size, values).GetPointer(), dir + "/in.nrrd");
    auto negative = values;
    negative[(1 * 9 + 2) * 10 + 3] = -5;  // voxel (3, 2, 1)
    write(image_of<Image3>(size, negative).GetPointer(), dir + "/negative.nrrd");
    auto nan = values;
    nan[4] = kNaN;  // voxel (4, 0, 0)
    write(image_of<Image3>(size, nan).GetPointer(), dir + "/nan.nrrd");
    write(image_of<Mask3>({10, 9, 7}, std::vector<float>(10 * 9 * 7, 1)).GetPointer(), dir + "/small_mask.nrrd");
    write(image_of<Mask3>(size, std::vector<float>(10 * 9 * 8, 0)).GetPointer(), dir + "/empty_mask.nrrd");
    write(image_of<itk::Image<unsigned char, 4>>({10, 9, 8, 2}, std::vector<float>(10 * 9 * 8 * 2, 1)).GetPointer(),
          dir + "/mask4.nii.gz");
    write(image_of<itk::Image<float, 2>>({10, 9}, std::vector<float>(90, 1)).GetPointer(), dir + "/flat.nrrd");
    {
        FILE *f = std::fopen((dir + "/junk.nrrd").c_str(), "w");
        ASSERT_TRUE(f);
        std::fputs("not an image\n", f);
        std::fclose(f);
    }
    const std::string before = slurp(dir + "/in.nrrd");
    const std::string in = dir + "/in.nrrd", out = dir + "/out.nrrd";
    const Refusal cases[] = {
        {"complete " + in + " " + out + " --mask " + dir + "/small_mask.nrrd", "small_mask.nrrd: on another voxel grid than", 1},
        {"complete " + in + " " + out + " --mask " + dir + "/empty_mask.nrrd", "empty_mask.nrrd: no voxel is observed",
         1},
        {"complete " + in + " " + out + " --mask " + dir + "/mask4.nii.gz", "mask4.nii.gz: a mask must be a 3-D", 1},
        {"complete " + dir + "/missing.nrrd " + out, "missing.nrrd: cannot open", 1},
        {"complete " + dir + "/junk.nrrd " + out, "junk.nrrd: not an image in a format the tools read", 1},
        {"complete " + dir + "/flat.nrrd " + out, "flat.nrrd: expected a 3-D or 4-D image", 1},
        {"complete " + dir + "/negative.nrrd " + out, "negative.nrrd: voxel (3, 2, 1) = -5 is negative", 1},
        {"complete " + dir + "/nan.nrrd " + out + " --divergence euclidean",
         "nan.nrrd: voxel (4, 0, 0) = nan is not finite", 1},
        {"complete " + in + " " + out + " --model ijk=ia,j2,ka",
         "--model: model \"ijk=ia,j2,ka\": not an index letter", 2},
        {"complete " + in + " " + out + " --model ij=ia,ja",
         "in.nrrd: a 3-D image, but model \"ij=ia,ja\" observes 2 indices", 1},
        {"complete " + in + " " + out + " --dims i=3", "--dims sets 'i', an observed index", 2},
        {"complete " + in + " " + out + " --dims q=3", "--dims:", 2},
        {"complete " + in + " " + out + " --model tucker --dims p=1000000 --rank 1024",
         "(p=1000000,q=1024,r=1024) needs about", 1},  // a 1e12-entry core: refused before any allocation
        {"complete " + in + " " + out + " --rank 0", "--rank", 2},
        {"complete " + in + " " + out + " --backend gpu", "--backend expects auto, cpu, omp or cuda, got 'gpu'", 2},
        {"complete " + in + " " + out + " --bogus", "unknown option '--bogus'", 2},
        {"complete " + in, "needs IN_IMAGE and OUT_IMAGE", 2},
        {"--iters 5 fit " + in + " " + out + " complete", "unexpected argument 'fit'", 2},
        {"complete " + in + " " + dir + "/no/such/dir/out.nrrd --iters 2", "out.nrrd: cannot write", 1},
    };
    for (const auto &c : cases) {
        expect_refused(exe + " " + c.args, c.message, c.code, dir);
        EXPECT_FALSE(exists(out)) << c.args;
    }
    EXPECT_EQ(slurp(dir + "/in.nrrd"), before);
    // Nothing half-written left beside the outputs (the temporaries start with .tk-tmp-).
    auto ls = run_tool("ls -A " + dir, dir);
    EXPECT_EQ(ls.out.find(".tk-tmp-"), std::string::npos) << ls.out;
}

TEST(PltfCompleteCli, TheNpyModeStillRunsWithTheWordCompleteAsAValue)
{
    std::string dir = make_temp_dir("tk_pltf_complete_npy");
    const std::vector<size_t> size = {4, 5, 6};
    const auto x = parafac_truth(size, 2, 10, 1.0);
    const size_t shape[3] = {6, 5, 4};  // C order
    ASSERT_EQ(tk_npy_write((dir + "/x.npy").c_str(), TK_NPY_FLOAT32, 3, shape, x.data()), TK_OK);
    auto r = run_tool(
        "cd " + dir + " && " + exe + " --model parafac --input x.npy --dims a=2 --iters 3 --out complete --quiet", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(exists(dir + "/complete/xhat.npy"));
}
