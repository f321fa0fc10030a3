// tk-tucker complete end to end: the command line Slicer builds from tk-tucker --xml gives
// the filter's own result (same settings, same seed), the filled voxels approach the true
// low-rank image, 4-D layouts survive, and bad input fails clearly leaving no output.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "itkTuckerCompletionImageFilter.h"
#include "sh_image_io.h"
#include "itk_file_io.h"
#include "slicer_command_line.h"
#include "tk_cli_runner.h"
#include "tk_refusal_test_util.h"
#include "tk_tucker.h"

using namespace tk_test;

namespace {

const std::string exe = TK_TUCKER_EXE;
using Image3 = itk::Image<float, 3>;

// A rank-4 FastTucker model on the grid, around 1000 (as MR intensities).
std::vector<float> low_rank(const std::vector<uint32_t> &size, uint64_t seed)
{
    tk_tucker_model m;
    EXPECT_EQ(tk_tucker_model_alloc(&m, (int)size.size(), size.data(), 4, 4), TK_OK);
    tk_tucker_model_init(&m, seed, 0);
    size_t n = 1;
    for (auto s : size) n *= s;
    std::vector<float> dense(n);
    EXPECT_EQ(tk_tucker_predict_dense(&m, dense.data()), TK_OK);
    tk_tucker_model_free(&m);
    for (auto &x : dense) x = 1000.0f + 200.0f * x;
    return dense;
}

template <typename TImage> typename TImage::Pointer image_of(const std::vector<uint32_t> &size, const float *values)
{
    auto image = TImage::New();
    typename TImage::SizeType sz;
    for (unsigned n = 0; n < TImage::ImageDimension; ++n) sz[n] = size[n];
    image->SetRegions(typename TImage::RegionType(sz));
    image->Allocate();
    typename TImage::SpacingType sp;
    sp.Fill(1.5);
    image->SetSpacing(sp);
    for (size_t v = 0; v < image->GetLargestPossibleRegion().GetNumberOfPixels(); ++v)
        image->GetBufferPointer()[v] = static_cast<typename TImage::PixelType>(values[v]);
    return image;
}

}  // namespace

TEST(TuckerCompleteCli, SlicersCommandLineGivesTheFiltersResultAndFillsDroppedSlices)
{
    std::string dir = make_temp_dir("tk_tucker_complete");
    const std::vector<uint32_t> size = {20, 18, 16};
    const size_t voxels = 20 * 18 * 16, slice = 20 * 18;
    auto truth = low_rank(size, 3);
    auto image = image_of<Image3>(size, truth.data());
    std::vector<float> observed(voxels, 1.0f);
    // Half of three axial slices dropped (a whole slice leaves its row of the z factor
    // without data: no low-rank model can recover it).
    for (size_t z : {3, 8, 12})
        for (size_t v = 0; v < slice / 2; ++v) observed[z * slice + v] = 0;
    auto label = image_of<SlicerLabelMap>(size, observed.data());
    write(image.GetPointer(), dir + "/in.nrrd");
    write(label.GetPointer(), dir + "/mask.nrrd");

    SlicerRun slicer;
    ASSERT_NO_FATAL_FAILURE(
        run_complete_as_slicer(exe, dir, {{"keepObserved", "true"}, {"iterations", "150"}, {"seed", "7"}}, &slicer));
    EXPECT_EQ(slicer.flagged, 15);  // 11 of its own, and the standard --device, --threads, --quiet, --force
    auto out = read<Image3>(dir + "/out.nrrd");
    ASSERT_EQ(out->GetLargestPossibleRegion().GetSize(), image->GetLargestPossibleRegion().GetSize());
    EXPECT_NEAR(out->GetSpacing()[0], 1.5, 1e-9);

    // The oracle for the plumbing: the filter itself with the defaults the XML states.
    using Filter = itk::TuckerCompletionImageFilter<Image3>;
    auto filter = Filter::New();
    auto mask = image_of<Filter::MaskImageType>(size, observed.data());
    filter->SetInput(image);
    filter->SetMaskImage(mask);
    filter->SetNumberOfIterations(150);
    filter->SetSeed(7);
    filter->KeepObservedValuesOn();
    filter->Update();
    const float *want = filter->GetOutput()->GetBufferPointer(), *got = out->GetBufferPointer();
    double sse = 0, spread = 0, mean = 0;
    for (size_t v = 0; v < voxels; ++v) mean += truth[v] / voxels;
    for (size_t v = 0; v < voxels; ++v) {
        ASSERT_EQ(got[v], want[v]) << "voxel " << v;
        if (observed[v]) EXPECT_EQ(got[v], truth[v]);  // --keep-observed
        else sse += (got[v] - truth[v]) * (got[v] - truth[v]);
        spread += (truth[v] - mean) * (truth[v] - mean) / voxels;
    }
    // The dropped voxels come back close to the truth (a rank-4 image, ranks 8 fitted).
    EXPECT_LT(std::sqrt(sse / (3 * slice / 2)), 0.1 * std::sqrt(spread));

    // The documented order (command first) runs the same.
    auto r = run_tool(exe + " complete " + dir + "/in.nrrd " + dir + "/out2.nrrd --mask " + dir +
                          "/mask.nrrd --keep-observed --iters 150 --seed 7 --quiet",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out2 = read<Image3>(dir + "/out2.nrrd");
    for (size_t v = 0; v < voxels; ++v) ASSERT_EQ(out2->GetBufferPointer()[v], got[v]);
}

TEST(TuckerCompleteCli, FourDimensionalNiftiWithAThreeDimensionalMask)
{
    using Image4 = itk::Image<float, 4>;
    std::string dir = make_temp_dir("tk_tucker_complete4");
    const std::vector<uint32_t> size = {8, 7, 6, 5};
    const size_t nvox = 8 * 7 * 6, voxels = nvox * 5;
    auto truth = low_rank(size, 11);
    write(image_of<Image4>(size, truth.data()).GetPointer(), dir + "/dwi.nii.gz");
    std::vector<float> observed3(nvox, 1.0f), observed4(voxels);
    for (size_t v = 0; v < 8 * 7; ++v) observed3[2 * 8 * 7 + v] = 0;  // slice z = 2 dropped in every volume
    for (size_t t = 0; t < 5; ++t)
        for (size_t v = 0; v < nvox; ++v) observed4[t * nvox + v] = observed3[v];
    write(image_of<itk::Image<unsigned char, 3>>({8, 7, 6}, observed3.data()).GetPointer(), dir + "/mask.nii.gz");
    auto r = run_tool(exe + " complete " + dir + "/dwi.nii.gz " + dir + "/out.nii.gz --mask " + dir +
                          "/mask.nii.gz --iters 60 --quiet",
                      dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto out = read<Image4>(dir + "/out.nii.gz");
    ASSERT_EQ(out->GetLargestPossibleRegion().GetSize()[3], 5u);
    for (unsigned d = 0; d < 4; ++d)  // the 4th axis's spacing too (the volumes' interval)
        EXPECT_NEAR(out->GetSpacing()[d], 1.5, 1e-6) << "axis " << d;

    using Filter = itk::TuckerCompletionImageFilter<Image4>;
    auto filter = Filter::New();
    filter->SetInput(read<Image4>(dir + "/dwi.nii.gz"));
    filter->SetMaskImage(image_of<Filter::MaskImageType>(size, observed4.data()));
    filter->SetNumberOfIterations(60);
    filter->Update();
    for (size_t v = 0; v < voxels; ++v)
        ASSERT_EQ(out->GetBufferPointer()[v], filter->GetOutput()->GetBufferPointer()[v]) << "voxel " << v;
    EXPECT_EQ(filter->GetNumberOfObservedVoxels(), voxels - 5 * 8 * 7);
}

TEST(TuckerCompleteCli, BadInputsFailClearlyAndLeaveNoOutput)
{
    std::string dir = make_temp_dir("tk_tucker_complete_bad");
    auto values = low_rank({10, 9, 8}, 1);
    write(image_of<Image3>({10, 9, 8}, values.data()).GetPointer(), dir + "/in.nrrd");
    std::vector<float> ones(10 * 9 * 7, 1.0f);
    write(image_of<itk::Image<unsigned char, 3>>({10, 9, 7}, ones.data()).GetPointer(), dir + "/small_mask.nrrd");
    std::vector<float> zeros(10 * 9 * 8, 0.0f);
    write(image_of<itk::Image<unsigned char, 3>>({10, 9, 8}, zeros.data()).GetPointer(), dir + "/empty_mask.nrrd");
    std::string out = dir + "/out.nrrd";
    const Refusal cases[] = {
        {"complete " + dir + "/in.nrrd " + out + " --mask " + dir + "/small_mask.nrrd", "small_mask.nrrd: on another voxel grid than", 1},
        {"complete " + dir + "/in.nrrd " + out + " --mask " + dir + "/empty_mask.nrrd", "no voxel", 1},
        {"complete " + dir + "/missing.nrrd " + out, "missing.nrrd: cannot open", 1},
        {"complete " + dir + "/in.nrrd " + out + " --rank-j 2", "--rank-j", 2},
        {"complete " + dir + "/in.nrrd " + out + " --bogus", "unknown option '--bogus'", 2},
        {"complete " + dir + "/in.nrrd", "needs IN_IMAGE and OUT_IMAGE", 2},
        {"--iters 5 train " + dir + "/in.nrrd " + out, "unexpected argument 'train'", 2},
    };
    for (const auto &c : cases) {
        expect_refused(exe + " " + c.args, c.message, c.code, dir);
        EXPECT_FALSE(exists(out)) << c.args;
    }
}
