// itk::StreamlineTractographyFilter: a straight fiber on an oblique, flipped grid lies on the
// expected LPS line; the output equals the C core's own run on the same data with the
// test's own RAS affine (the oracle); masks and label maps; bad input throws.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "itkCommand.h"
#include "itkStreamlineTractographyFilter.h"
#include "tk_device.h"
#include "tracking_test_util.h"

namespace {

using SHImage = itk::VectorImage<float, 3>;
using MaskImage = itk::Image<unsigned char, 3>;
using LabelImage = itk::Image<short, 3>;
using Filter = itk::StreamlineTractographyFilter<>;
using tk_track_test::Volume;

const size_t kDims[3] = {14, 12, 10};
const double kSpacing[3] = {1.5, 1.25, 2.0};
const double kOriginLps[3] = {-7.0, 12.5, 3.0};

// An oblique direction matrix with a flipped axis (determinant -1): a rotation of 30 degrees
// about (1, 2, 2)/3, then the first column negated.
itk::Matrix<double, 3, 3> oblique_flipped()
{
    const double a[3] = {1 / 3.0, 2 / 3.0, 2 / 3.0}, t = 30.0 * tk_track_test::kPi / 180, c = std::cos(t), s = std::sin(t);
    itk::Matrix<double, 3, 3> m;
    for (int r = 0; r < 3; ++r)
        for (int q = 0; q < 3; ++q) {
            const double cross = r == q ? 0 : ((r + 1) % 3 == q ? -a[3 - r - q] : a[3 - r - q]);
            m[r][q] = (r == q ? c : 0) + (1 - c) * a[r] * a[q] + s * cross;
        }
    for (int r = 0; r < 3; ++r) m[r][0] = -m[r][0];
    return m;
}

// The test's own RAS vox2world of that geometry: RAS = diag(-1, -1, 1) LPS.
tk_tracking_grid ras_grid()
{
    const auto d = oblique_flipped();
    tk_tracking_grid g{};
    for (int r = 0; r < 3; ++r) {
        const double f = r < 2 ? -1 : 1;
        g.dims[r] = kDims[r];
        for (int q = 0; q < 3; ++q) g.vox2world[4 * r + q] = f * d[r][q] * kSpacing[q];
        g.vox2world[4 * r + 3] = f * kOriginLps[r];
    }
    g.vox2world[15] = 1;
    return g;
}

template <typename TImage>
void set_geometry(TImage *image)
{
    typename TImage::RegionType region;
    region.SetSize({{kDims[0], kDims[1], kDims[2]}});
    image->SetRegions(region);
    typename TImage::SpacingType sp;
    typename TImage::PointType o;
    for (int r = 0; r < 3; ++r) sp[r] = kSpacing[r], o[r] = kOriginLps[r];
    image->SetSpacing(sp);
    image->SetOrigin(o);
    image->SetDirection(oblique_flipped());
}

// The core's volume as an ITK image: the same floats, voxel-major as VectorImage holds them.
SHImage::Pointer to_itk(const Volume &v, unsigned components = tk_track_test::kCoeffs)
{
    auto image = SHImage::New();
    set_geometry(image.GetPointer());
    image->SetNumberOfComponentsPerPixel(components);
    image->Allocate();
    float *p = image->GetBufferPointer();
    for (size_t i = 0; i < v.voxels() * components; ++i) p[i] = i < v.sh.size() ? v.sh[i] : 0.f;
    return image;
}

template <typename TImage = MaskImage>
typename TImage::Pointer make_mask(const std::vector<uint8_t> &inside, typename TImage::PixelType on = 1)
{
    auto m = TImage::New();
    set_geometry(m.GetPointer());
    m->Allocate();
    for (size_t i = 0; i < inside.size(); ++i) m->GetBufferPointer()[i] = inside[i] ? on : 0;
    return m;
}

// Voxels with i in [i0, i1) (and all j, k).
std::vector<uint8_t> slab(size_t i0, size_t i1)
{
    std::vector<uint8_t> m(kDims[0] * kDims[1] * kDims[2], 0);
    for (size_t k = 0; k < kDims[2]; ++k)
        for (size_t j = 0; j < kDims[1]; ++j)
            for (size_t i = i0; i < i1; ++i) m[i + kDims[0] * (j + kDims[1] * k)] = 1;
    return m;
}

const double kFiberRas[3] = {0.48, -0.6, 0.64};  // unit, no zero component: a frame error shows

// Two crossing lobes, the second's weight varying over the grid, so that streamlines bend.
Volume crossing_field()
{
    return tk_track_test::make_volume(ras_grid(), [](size_t i, size_t j, size_t k, const double *, double *c) {
        const double v[3] = {0.0, 0.6, 0.8};
        tk_track_test::add_lobe(c, kFiberRas, 1.0);
        tk_track_test::add_lobe(c, v, 0.3 + 0.05 * double((i + 2 * j + 3 * k) % 7));
    });
}

// The filter's output against the core's run on the same floats: the same streamlines, seed
// indices and points to the bit, x and y negated (RAS to LPS).
void expect_same_as_core(const itk::StreamlineSet *out, const tk_track_test::TrackRun &core)
{
    ASSERT_EQ(core.status, TK_OK) << tk_last_error();
    ASSERT_EQ(out->GetNumberOfStreamlines(), core.count());
    ASSERT_EQ(out->GetNumberOfPoints(), core.result.total_points);
    for (size_t s = 0; s < core.count(); ++s) {
        EXPECT_EQ(out->GetSeedIndices()[s], core.result.seed_index[s]);
        ASSERT_EQ(out->GetNumberOfPoints(s), core.points(s));
        for (size_t i = 0; i < core.points(s); ++i) {
            const auto p = out->GetPoint(s, i);
            const float *q = core.point(s, i);
            ASSERT_EQ(p[0], -q[0]);
            ASSERT_EQ(p[1], -q[1]);
            ASSERT_EQ(p[2], q[2]);
        }
    }
}

// The lobe field vol as an ITK image, seeded at its centre voxel's physical point, on the
// CPU, first direction (LPS) near the fiber: a random one may climb to a side lobe of this
// sharp, truncated lobe, below the cutoff, and reject the seed.
struct CentreSeeded {
    SHImage::Pointer sh;
    SHImage::PointType seed;
    Filter::Pointer filter;
};

CentreSeeded centre_seeded(const Volume &vol)
{
    CentreSeeded run;
    run.sh = to_itk(vol);
    run.sh->TransformIndexToPhysicalPoint({{7, 6, 5}}, run.seed);
    run.filter = Filter::New();
    run.filter->SetInput(run.sh);
    run.filter->SetSeedPoints({run.seed});
    run.filter->SetBackend(Filter::BackendType::CPU);
    Filter::DirectionVectorType first;
    first[0] = -kFiberRas[0] + 0.1, first[1] = -kFiberRas[1], first[2] = kFiberRas[2];
    run.filter->SetSeedDirection(first);
    return run;
}

}  // namespace

TEST(StreamlineTractographyFilter, StraightFiberLiesOnItsLpsLineOnAnObliqueFlippedGrid)
{
    const Volume vol = tk_track_test::lobe_field(ras_grid(), kFiberRas);
    const CentreSeeded run = centre_seeded(vol);
    const auto &sh = run.sh;
    const SHImage::PointType seed = run.seed;
    Filter *filter = run.filter;
    filter->SetStepSize(0.25);
    filter->Update();
    const itk::StreamlineSet *out = filter->GetOutput();
    const tk_tracking_stats &st = filter->GetStatistics();
    ASSERT_EQ(out->GetNumberOfStreamlines(), 1u) << "seeds rejected " << st.rejected_seed << ", no step "
                                                  << st.rejected_no_propagation << ", too short " << st.rejected_too_short;
    const size_t n = out->GetNumberOfPoints(0);
    ASSERT_GT(n, 20u);
    // the fiber in LPS: x and y of the RAS direction negated
    const double u[3] = {-kFiberRas[0], -kFiberRas[1], kFiberRas[2]};
    for (size_t i = 0; i < n; ++i) {
        const auto p = out->GetPoint(0, i);
        double d[3], along = 0, off = 0;
        for (int r = 0; r < 3; ++r) d[r] = p[r] - seed[r], along += d[r] * u[r];
        for (int r = 0; r < 3; ++r) off += (d[r] - along * u[r]) * (d[r] - along * u[r]);
        EXPECT_LT(std::sqrt(off), 1e-3) << "point " << i;
        if (i) {
            EXPECT_NEAR(p.EuclideanDistanceTo(out->GetPoint(0, i - 1)), 0.25, 1e-4);
        }
        // every point within the grid's extent (half a voxel past the outer voxel centres),
        // give or take the step that left it
        itk::ContinuousIndex<double, 3> ci;
        sh->TransformPhysicalPointToContinuousIndex(p, ci);
        for (int r = 0; r < 3; ++r) {
            EXPECT_GE(ci[r], -0.5 - 0.25 / kSpacing[r] - 1e-3);
            EXPECT_LE(ci[r], kDims[r] - 0.5 + 0.25 / kSpacing[r] + 1e-3);
        }
    }
    // both ends where the line leaves the grid: within a step of its extent along some axis
    for (size_t end : {size_t(0), n - 1}) {
        itk::ContinuousIndex<double, 3> ci;
        sh->TransformPhysicalPointToContinuousIndex(out->GetPoint(0, end), ci);
        bool edge = false;
        for (int r = 0; r < 3; ++r) {
            const double step = 0.25 / kSpacing[r] + 1e-3;
            edge = edge || ci[r] <= -0.5 + step || ci[r] >= kDims[r] - 0.5 - step;
        }
        EXPECT_TRUE(edge) << "end " << end << " at index " << ci;
    }
}

TEST(StreamlineTractographyFilter, SeedDirectionIsLpsAndRegionStartIndexIsHonoured)
{
    const Volume vol = tk_track_test::lobe_field(ras_grid(), kFiberRas);
    const CentreSeeded run = centre_seeded(vol);
    Filter *filter = run.filter;
    filter->SetUnidirectional(true);
    // one way only, along the given LPS direction (near the fiber's LPS direction u)
    const double u[3] = {-kFiberRas[0], -kFiberRas[1], kFiberRas[2]};
    filter->Update();
    ASSERT_EQ(filter->GetOutput()->GetNumberOfStreamlines(), 1u);
    const auto a = filter->GetOutput()->GetPoint(0, 0), b = filter->GetOutput()->GetPoint(0, 1);
    EXPECT_GT((b[0] - a[0]) * u[0] + (b[1] - a[1]) * u[1] + (b[2] - a[2]) * u[2], 0.0);
    const auto whole = filter->GetOutput()->GetPoints();

    // the same voxels at the same physical points, indexed from (2, 3, 1): the same streamline
    auto shifted = to_itk(vol);
    SHImage::RegionType region = shifted->GetLargestPossibleRegion();
    region.SetIndex({{2, 3, 1}});
    shifted->SetRegions(region);
    SHImage::PointType origin;
    for (int r = 0; r < 3; ++r) {
        origin[r] = kOriginLps[r];
        for (int c = 0; c < 3; ++c) origin[r] -= oblique_flipped()[r][c] * kSpacing[c] * region.GetIndex()[c];
    }
    shifted->SetOrigin(origin);
    filter->SetInput(shifted);
    filter->Update();
    const auto &moved = filter->GetOutput()->GetPoints();
    ASSERT_EQ(moved.size(), whole.size());
    for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(moved[i], whole[i], 1e-4) << i;
}

TEST(StreamlineTractographyFilter, EqualsTheCoreOnTheSameDataWithSeedImageAndRegions)
{
    const Volume vol = crossing_field();
    auto sh = to_itk(vol);
    const auto seedVoxels = slab(5, 8), stop = slab(1, 13), exclude = slab(12, 13);
    auto filter = Filter::New();
    filter->SetInput(sh);
    filter->SetSeedImage(make_mask(seedVoxels));
    filter->SetStoppingImage(make_mask(stop));
    filter->SetExcludeImage(make_mask(exclude));
    filter->SetSeedsPerVoxel(2);
    filter->SetRandomSeed(42);
    filter->SetBackend(Filter::BackendType::CPU);
    filter->Update();

    tk_tracking_options o = tk_track_test::default_options();
    o.rng_seed = 42;
    tk_tracking_seeds seeds{};
    seeds.mask = seedVoxels.data(), seeds.mask_voxels = seedVoxels.size(), seeds.per_voxel = 2;
    tk_tracking_regions regions{};
    regions.stop_mask = stop.data(), regions.exclude = exclude.data(), regions.mask_voxels = stop.size();
    tk_track_test::TrackRun core;
    tk_track_test::run_tracking(core, vol, o, seeds, &regions);
    ASSERT_GT(core.count(), 50u);
    ASSERT_GT(core.stats.rejected_exclude, 0u);  // the regions act, so a dropped one would show
    expect_same_as_core(filter->GetOutput(), core);
    EXPECT_EQ(filter->GetStatistics().rejected_exclude, core.stats.rejected_exclude);
    EXPECT_EQ(filter->GetStatistics().ended_exit_mask, core.stats.ended_exit_mask);

    // iFOD1 on OpenMP with 2 threads and small chunks: the core's run as well
    filter->SetAlgorithm(Filter::AlgorithmType::IFOD1);
    filter->SetBackend(Filter::BackendType::OMP);
    filter->SetNumberOfThreads(2);
    filter->SetChunkSeeds(7);
    filter->Update();
    o.algorithm = TK_TRACK_IFOD1;
    tk_track_test::TrackRun ifod;
    tk_track_test::run_tracking(ifod, vol, o, seeds, &regions);
    ASSERT_GT(ifod.count(), 50u);
    expect_same_as_core(filter->GetOutput(), ifod);
}

TEST(StreamlineTractographyFilter, StoppingImageEndsStreamlinesInsideIt)
{
    const Volume vol = tk_track_test::lobe_field(ras_grid(), kFiberRas);
    auto sh = to_itk(vol);
    const auto stop = slab(4, 10);
    auto filter = Filter::New();
    filter->SetInput(sh);
    filter->SetSeedImage(make_mask(slab(6, 8)));
    filter->SetStoppingImage(make_mask(stop));
    filter->SetMinimumLength(-1);
    filter->SetBackend(Filter::BackendType::CPU);
    filter->Update();
    const itk::StreamlineSet *out = filter->GetOutput();
    ASSERT_GT(out->GetNumberOfStreamlines(), 10u);
    // every point's nearest voxel is inside the stopping image (MRtrix3's mask lookup)
    for (size_t s = 0; s < out->GetNumberOfStreamlines(); ++s)
        for (size_t i = 0; i < out->GetNumberOfPoints(s); ++i) {
            itk::ContinuousIndex<double, 3> ci;
            sh->TransformPhysicalPointToContinuousIndex(out->GetPoint(s, i), ci);
            const long x = std::lround(ci[0]);
            EXPECT_GE(x, 4) << "streamline " << s << " point " << i;
            EXPECT_LT(x, 10) << "streamline " << s << " point " << i;
        }
}

TEST(StreamlineTractographyFilter, LabelMapsAndIncludeImagesActAsBinaryMasks)
{
    const Volume vol = crossing_field();
    auto sh = to_itk(vol);
    using LabelFilter = itk::StreamlineTractographyFilter<SHImage, LabelImage>;
    auto labels = LabelFilter::New();
    labels->SetInput(sh);
    labels->SetSeedImage(make_mask<LabelImage>(slab(5, 8), 256));  // 256: no byte of it is nonzero
    labels->AddIncludeImage(make_mask<LabelImage>(slab(1, 2), -3));
    labels->SetBackend(LabelFilter::BackendType::CPU);
    labels->Update();

    tk_tracking_options o = tk_track_test::default_options();
    const auto seedVoxels = slab(5, 8), inc = slab(1, 2);
    const uint8_t *incs[1] = {inc.data()};
    tk_tracking_seeds seeds{};
    seeds.mask = seedVoxels.data(), seeds.mask_voxels = seedVoxels.size(), seeds.per_voxel = 1;
    tk_tracking_regions regions{};
    regions.include = incs, regions.num_include = 1, regions.mask_voxels = inc.size();
    tk_track_test::TrackRun core;
    tk_track_test::run_tracking(core, vol, o, seeds, &regions);
    ASSERT_GT(core.stats.rejected_missed_include, 0u);
    ASSERT_GT(core.count(), 0u);
    expect_same_as_core(labels->GetOutput(), core);

    // without the include image: more streamlines
    labels->ClearIncludeImages();
    labels->Update();
    EXPECT_GT(labels->GetOutput()->GetNumberOfStreamlines(), core.count());
}

TEST(StreamlineTractographyFilter, KeepsItsPlanAndRerunsOnAChange)
{
    const Volume vol = crossing_field();
    auto filter = Filter::New();
    filter->SetInput(to_itk(vol));
    filter->SetSeedImage(make_mask(slab(6, 7)));
    filter->SetBackend(Filter::BackendType::CPU);
    filter->Update();
    const auto first = filter->GetOutput()->GetPoints();
    filter->Update();  // nothing changed: the same output
    EXPECT_EQ(filter->GetOutput()->GetPoints(), first);
    filter->SetRandomSeed(9);  // a new key: other seed positions
    filter->Update();
    EXPECT_NE(filter->GetOutput()->GetPoints(), first);
    filter->SetRandomSeed(0);
    filter->Update();
    EXPECT_EQ(filter->GetOutput()->GetPoints(), first);
}

TEST(StreamlineTractographyFilter, ReportsProgressPerChunkAndAbortsBetweenChunks)
{
    auto filter = Filter::New();
    filter->SetInput(to_itk(crossing_field()));
    filter->SetSeedImage(make_mask(slab(6, 7)));  // 120 seeds
    filter->SetChunkSeeds(16);
    filter->SetBackend(Filter::BackendType::CPU);
    std::vector<float> progress;
    auto observer = itk::CStyleCommand::New();
    struct Watch {
        Filter *filter;
        std::vector<float> *progress;
        bool abort;
    } watch{filter.GetPointer(), &progress, false};
    observer->SetClientData(&watch);
    observer->SetCallback([](itk::Object *, const itk::EventObject &, void *data) {
        auto *w = static_cast<Watch *>(data);
        w->progress->push_back(w->filter->GetProgress());
        if (w->abort && w->progress->size() == 3) w->filter->AbortGenerateDataOn();
    });
    filter->AddObserver(itk::ProgressEvent(), observer);
    filter->Update();
    // 120 seeds in chunks of 16: 8 chunks, the last at 1 (ITK adds its own 0 and 1)
    std::vector<float> chunks;
    for (float p : progress)
        if (p > 0 && (chunks.empty() || p != chunks.back())) chunks.push_back(p);
    ASSERT_EQ(chunks.size(), 8u);
    EXPECT_FLOAT_EQ(chunks[0], 16.f / 120.f);
    EXPECT_FLOAT_EQ(chunks.back(), 1.f);

    progress.clear();
    watch.abort = true;
    filter->SetRandomSeed(3);  // a change, so that Update runs again
    EXPECT_THROW(filter->Update(), itk::ProcessAborted);
    EXPECT_EQ(filter->GetOutput()->GetNumberOfStreamlines(), 0u);
}

namespace {
// Update() throws an itk::ExceptionObject whose message contains `words`.
void expect_throws_saying(itk::ProcessObject *filter, const std::string &words)
{
    try {
        filter->Update();
        ADD_FAILURE() << "no exception; expected one saying '" << words << "'";
    } catch (const itk::ExceptionObject &e) {
        EXPECT_NE(std::string(e.GetDescription()).find(words), std::string::npos) << e.GetDescription();
    }
}
}  // namespace

TEST(StreamlineTractographyFilter, BadInputThrowsWithAClearMessage)
{
    const Volume vol = tk_track_test::lobe_field(ras_grid(), kFiberRas);
    SHImage::PointType seed;
    auto sh = to_itk(vol);
    sh->TransformIndexToPhysicalPoint({{7, 6, 5}}, seed);
    {
        auto f = Filter::New();
        f->SetInput(to_itk(vol, 7));  // 7 components: no SH size
        f->SetSeedPoints({seed});
        expect_throws_saying(f, "7 components per voxel, which is no even-degree SH size");
    }
    {
        auto f = Filter::New();
        f->SetInput(sh);
        f->SetSeedPoints({seed});
        auto small = MaskImage::New();
        MaskImage::RegionType r;
        r.SetSize({{kDims[0], kDims[1], kDims[2] - 1}});
        small->SetRegions(r);
        small->Allocate(true);
        f->SetStoppingImage(small);
        expect_throws_saying(f, "the stopping image has [14, 12, 9] voxels, the SH image [14, 12, 10]");
    }
    {
        auto f = Filter::New();
        f->SetInput(sh);
        auto moved = make_mask(slab(0, 14));
        auto o = moved->GetOrigin();
        o[2] += 1.0;
        moved->SetOrigin(o);
        f->SetSeedImage(moved);
        expect_throws_saying(f, "the seed image is not on the SH image's grid");
    }
    {
        auto f = Filter::New();
        f->SetInput(sh);
        expect_throws_saying(f, "no seeds");
    }
    {
        auto f = Filter::New();
        f->SetInput(sh);
        f->SetSeedPoints({seed});
        f->SetMaximumAngle(120);
        f->SetBackend(Filter::BackendType::CPU);
        expect_throws_saying(f, "refused");
    }
    {
        auto f = Filter::New();
        f->SetInput(sh);
        f->SetSeedPoints({seed});
        f->SetBackend(Filter::BackendType::CUDA);
        f->SetCudaDevice(-1);
        expect_throws_saying(f, "refused");
    }
}

// The CUDA tracker through the filter: the CPU's streamlines by the rule of the core's GPU
// tests (Documentation/tracking.md, "The CUDA tracker"): the same seeds kept, points within
// 1e-3 mm, at most 1% of the streamlines of another length (a stop decided the other way
// within rounding).  Skipped without a usable GPU.
TEST(StreamlineTractographyFilter, CudaEqualsCpu)
{
    char why[256] = "";
    if (!tk_cuda_device_usable(0, why, sizeof why)) GTEST_SKIP() << "SKIPPED: no usable CUDA GPU (" << why << ")";
    const Volume vol = crossing_field();
    auto filter = Filter::New();
    filter->SetInput(to_itk(vol));
    filter->SetSeedImage(make_mask(slab(3, 11)));
    filter->SetSeedsPerVoxel(2);
    filter->SetBackend(Filter::BackendType::CPU);
    filter->Update();
    const auto cpuSeeds = filter->GetOutput()->GetSeedIndices();
    const auto cpuOffsets = filter->GetOutput()->GetOffsets();
    const auto cpuPoints = filter->GetOutput()->GetPoints();
    ASSERT_GT(cpuSeeds.size(), 100u);
    filter->SetBackend(Filter::BackendType::Auto);
    filter->Update();
    EXPECT_EQ(filter->GetResolvedBackend(), Filter::BackendType::CUDA);
    const itk::StreamlineSet *gpu = filter->GetOutput();
    ASSERT_EQ(gpu->GetSeedIndices(), cpuSeeds);
    size_t otherLength = 0;
    for (size_t s = 0; s < cpuSeeds.size(); ++s) {
        const size_t n = cpuOffsets[s + 1] - cpuOffsets[s];
        if (gpu->GetNumberOfPoints(s) != n) {  // a half stopped a step apart: its points are offset
            ++otherLength;
            continue;
        }
        for (size_t i = 0; i < n; ++i)
            for (int r = 0; r < 3; ++r)
                ASSERT_NEAR(gpu->GetPoint(s, i)[r], cpuPoints[3 * (cpuOffsets[s] + i) + r], 1e-3) << s << ' ' << i;
    }
    EXPECT_LE(otherLength, cpuSeeds.size() / 100);
}
