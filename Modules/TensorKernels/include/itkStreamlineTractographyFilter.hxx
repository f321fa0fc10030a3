/** itk::StreamlineTractographyFilter: the implementation. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkStreamlineTractographyFilter_hxx
#define itkStreamlineTractographyFilter_hxx

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "itkStreamlineTractographyFilter.h"
#include "tk_device.h"
#include "itkTensorKernelsBackend.h"

namespace itk
{
template <typename TInputImage, typename TMaskImage>
StreamlineTractographyFilter<TInputImage, TMaskImage>::StreamlineTractographyFilter()
{
    this->SetNumberOfRequiredInputs(1);
    this->SetNumberOfRequiredOutputs(1);
    this->SetNthOutput(0, this->MakeOutput(0));
}

template <typename TInputImage, typename TMaskImage>
void StreamlineTractographyFilter<TInputImage, TMaskImage>::AddIncludeImage(const MaskImageType *m)
{
    if (!m) itkExceptionMacro(<< "AddIncludeImage: a null image");
    this->ProcessObject::SetInput("IncludeImage" + std::to_string(m_NumberOfIncludeImages++), const_cast<MaskImageType *>(m));
}

template <typename TInputImage, typename TMaskImage>
void StreamlineTractographyFilter<TInputImage, TMaskImage>::ClearIncludeImages()
{
    for (unsigned i = 0; i < m_NumberOfIncludeImages; ++i) this->RemoveInput("IncludeImage" + std::to_string(i));
    m_NumberOfIncludeImages = 0;
    this->Modified();
}

template <typename TInputImage, typename TMaskImage>
tk_tracking_grid StreamlineTractographyFilter<TInputImage, TMaskImage>::CoreGrid(const ImageBase<3> *image)
{
    // ITK: LPS = origin + direction * spacing * index, the index counted from the largest
    // region's start (0 for a read image); the core counts voxels from 0 in RAS, so its
    // origin is the start voxel's centre and the first two rows are negated.
    tk_tracking_grid g{};
    const auto region = image->GetLargestPossibleRegion();
    typename ImageBase<3>::PointType start;
    image->TransformIndexToPhysicalPoint(region.GetIndex(), start);
    for (unsigned r = 0; r < 3; ++r) {
        const double flip = r < 2 ? -1.0 : 1.0;
        g.dims[r] = region.GetSize()[r];
        for (unsigned c = 0; c < 3; ++c) g.vox2world[4 * r + c] = flip * image->GetDirection()[r][c] * image->GetSpacing()[c];
        g.vox2world[4 * r + 3] = flip * start[r];
    }
    g.vox2world[15] = 1;
    return g;
}

template <typename TInputImage, typename TMaskImage>
tk_tracking_options StreamlineTractographyFilter<TInputImage, TMaskImage>::CoreOptions(tk_backend backend, int lmax) const
{
    // zeroed first, padding too: plans are compared bytewise (Prepare)
    tk_tracking_options o;
    std::memset(&o, 0, sizeof o);
    tk_tracking_options_init(&o, lmax);
    o.algorithm = static_cast<tk_tracking_algorithm>(m_Algorithm);
    o.basis = static_cast<tk_sh_basis>(m_Basis);
    o.legacy = m_Legacy;
    o.step_mm = m_StepSize;
    o.max_angle_deg = m_MaximumAngle;
    o.cutoff = m_Cutoff;
    o.min_length_mm = m_MinimumLength;
    o.max_length_mm = m_MaximumLength;
    o.unidirectional = m_Unidirectional;
    for (unsigned r = 0; r < 3; ++r) o.seed_direction[r] = (r < 2 ? -1.0 : 1.0) * m_SeedDirection[r];  // LPS -> RAS
    o.rng_seed = m_RandomSeed;
    o.max_trials = m_MaximumTrials;
    o.fod_power = m_FODPower;
    if (m_ChunkSeeds) o.chunk_seeds = m_ChunkSeeds;
    o.backend = backend;
    o.num_threads = m_NumberOfThreads;
    o.cuda_device = m_CudaDevice;
    o.cuda_device_count = m_NumberOfCudaDevices ? static_cast<int>(m_NumberOfCudaDevices)
                                                : std::max(1, tk_cuda_device_count() - m_CudaDevice);
    return o;
}

template <typename TInputImage, typename TMaskImage>
tk_tracking_plan *StreamlineTractographyFilter<TInputImage, TMaskImage>::Prepare(const tk_tracking_options &options,
                                                                               const tk_tracking_grid &grid)
{
    if (m_Plan && std::memcmp(&options, &m_PlanOptions, sizeof options) == 0 &&
        std::memcmp(&grid, &m_PlanGrid, sizeof grid) == 0)
        return m_Plan.get();
    m_Plan.reset();
    tk_tracking_plan *plan = nullptr;
    if (tk_tracking_plan_create(&options, &grid, &plan) != TK_OK)
        itkExceptionMacro(<< "the tracking options or the SH image's grid are refused: " << tk_last_error());
    m_Plan.reset(plan);
    m_PlanOptions = options;
    m_PlanGrid = grid;
    return plan;
}

template <typename TInputImage, typename TMaskImage>
const uint8_t *StreamlineTractographyFilter<TInputImage, TMaskImage>::MaskBytes(const char *what, const MaskImageType *mask,
                                                                              std::vector<uint8_t> &storage) const
{
    if (!mask) return nullptr;
    const InputImageType *sh = this->GetInput();
    const auto shRegion = sh->GetLargestPossibleRegion(), region = mask->GetLargestPossibleRegion();
    if (region.GetSize() != shRegion.GetSize())
        itkExceptionMacro(<< "the " << what << " has " << region.GetSize() << " voxels, the SH image " << shRegion.GetSize()
                          << ": give a mask on the SH image's grid (resample it first)");
    if (mask->GetBufferedRegion() != region)
        itkExceptionMacro(<< "the " << what << " holds only part of its voxels (buffered region " << mask->GetBufferedRegion()
                          << "): give the whole mask");
    // the same voxels in physical space: a tolerance of a thousandth of a voxel, as the
    // images' headers were written in float
    const tk_tracking_grid a = CoreGrid(sh), b = CoreGrid(mask);
    for (unsigned r = 0; r < 3; ++r) {
        const double voxel = sh->GetSpacing()[r];
        for (unsigned c = 0; c < 4; ++c)
            if (std::fabs(a.vox2world[4 * r + c] - b.vox2world[4 * r + c]) > 1e-3 * voxel)
                itkExceptionMacro(<< "the " << what << " is not on the SH image's grid (origin, spacing or direction "
                                  << "differ): give a mask on the SH image's grid (resample it first)");
    }
    using MaskPixel = typename MaskImageType::PixelType;
    const size_t n = region.GetNumberOfPixels();
    const MaskPixel *p = mask->GetBufferPointer();
    if constexpr (sizeof(MaskPixel) == 1 && std::is_integral_v<MaskPixel>) {
        return reinterpret_cast<const uint8_t *>(p);  // one byte a voxel, nonzero inside: the core's layout
    } else {
        storage.resize(n);
        for (size_t i = 0; i < n; ++i) storage[i] = p[i] != MaskPixel{} ? 1 : 0;
        return storage.data();
    }
}

namespace StreamlineTractographyDetail
{
/** What the core's sink needs: the output, a chunk's scratch, the filter for progress and abort. */
struct SinkState {
    StreamlineSet *output;
    ProcessObject *filter;
    std::vector<float> lps;
    bool aborted = false;
};

/** Appends one chunk, its points turned from the core's RAS into LPS; the core's C code
 * must see no exception, so a failed allocation becomes its error. */
inline tk_status Sink(const tk_tracking_chunk *chunk, void *user)
{
    auto &s = *static_cast<SinkState *>(user);
    try {
        s.lps.assign(chunk->points, chunk->points + 3 * chunk->total_points);
        for (size_t i = 0; i < s.lps.size(); i += 3) s.lps[i] = -s.lps[i], s.lps[i + 1] = -s.lps[i + 1];
        s.output->Append(chunk->num_streamlines, chunk->num_points, chunk->seed_index, s.lps.data());
        s.filter->UpdateProgress(chunk->seeds_total ? float(chunk->seeds_done) / float(chunk->seeds_total) : 1.f);
    } catch (const ProcessAborted &) {
        s.aborted = true;
    } catch (const std::exception &e) {
        return tk_set_error(TK_ERR_MEMORY, "keeping the streamlines failed: %s", e.what());
    }
    if (s.aborted || s.filter->GetAbortGenerateData()) {
        s.aborted = true;
        return tk_set_error(TK_ERR_ARGUMENT, "aborted");
    }
    return TK_OK;
}
} // namespace StreamlineTractographyDetail

template <typename TInputImage, typename TMaskImage>
void StreamlineTractographyFilter<TInputImage, TMaskImage>::GenerateData()
{
    const InputImageType *sh = this->GetInput();
    StreamlineSet *output = this->GetOutput();
    output->Initialize();
    m_Statistics = tk_tracking_stats{};

    const unsigned components = sh->GetNumberOfComponentsPerPixel();
    const int lmax = tk_sh_lmax_for_count(components);
    if (lmax < 2 || lmax > TK_SH_MAX_LMAX)
        itkExceptionMacro(<< "the SH image has " << components
                          << " components per voxel, which is no even-degree SH size with lmax 2.." << TK_SH_MAX_LMAX
                          << " (6, 15, 28, 45, 66, 91, 120, 153): give a fiber ODF image (dwi2fod's)");
    const auto region = sh->GetLargestPossibleRegion();
    if (sh->GetBufferedRegion() != region)
        itkExceptionMacro(<< "the SH image holds only part of its voxels (buffered region " << sh->GetBufferedRegion()
                          << "); tracking needs the whole volume");
    const size_t voxels = region.GetNumberOfPixels();
    const tk_tracking_grid grid = CoreGrid(sh);

    // the coefficients as the core takes them: a float VectorImage's buffer is already voxel-major
    std::vector<float> converted;
    const float *coefficients = nullptr;
    if constexpr (std::is_same_v<typename InputImageType::InternalPixelType, float>) {
        coefficients = sh->GetBufferPointer();
    } else {
        const auto *p = sh->GetBufferPointer();
        converted.assign(p, p + voxels * components);
        coefficients = converted.data();
    }

    std::vector<uint8_t> seedBytes, stopBytes, excludeBytes;
    std::vector<std::vector<uint8_t>> includeBytes(m_NumberOfIncludeImages);
    std::vector<const uint8_t *> include;
    tk_tracking_regions regions{};
    regions.stop_mask = MaskBytes("stopping image", GetStoppingImage(), stopBytes);
    regions.exclude = MaskBytes("exclude image", GetExcludeImage(), excludeBytes);
    for (unsigned i = 0; i < m_NumberOfIncludeImages; ++i) {
        const auto name = "IncludeImage" + std::to_string(i);
        include.push_back(MaskBytes(("include image " + std::to_string(i)).c_str(), GetMask(name), includeBytes[i]));
    }
    regions.include = include.empty() ? nullptr : include.data();
    regions.num_include = include.size();
    regions.mask_voxels = voxels;

    tk_tracking_seeds seeds{};
    std::vector<double> points;
    if (const MaskImageType *seedImage = GetSeedImage()) {
        seeds.mask = MaskBytes("seed image", seedImage, seedBytes);
        seeds.mask_voxels = voxels;
        seeds.per_voxel = m_SeedsPerVoxel;
    } else if (!m_SeedPoints.empty()) {
        for (const PointType &p : m_SeedPoints) points.insert(points.end(), {-double(p[0]), -double(p[1]), double(p[2])});
        seeds.points = points.data();
        seeds.num_points = m_SeedPoints.size();
    } else {
        itkExceptionMacro(<< "no seeds: set a seed image (SetSeedImage) or seed points (SetSeedPoints)");
    }

    const auto choice = ResolveTensorKernelsBackend(m_Backend, BackendType::OMP);
    itkDebugMacro(<< "backend " << choice.backend << " (" << choice.reason << ")");
    m_ResolvedBackend = choice.backend;
    tk_tracking_plan *plan = Prepare(CoreOptions(ToCoreBackend(choice.backend), lmax), grid);

    StreamlineTractographyDetail::SinkState state{output, this, {}};
    const tk_status status = tk_tracking_plan_execute(plan, coefficients, voxels * components, &regions, &seeds,
                                                      StreamlineTractographyDetail::Sink, &state, &m_Statistics, nullptr);
    if (state.aborted) {
        output->Initialize();
        ProcessAborted e(__FILE__, __LINE__);
        e.SetDescription("StreamlineTractographyFilter aborted");
        throw e;
    }
    if (status != TK_OK) {
        output->Initialize();
        itkExceptionMacro(<< "tracking failed: " << tk_last_error());
    }
}

template <typename TInputImage, typename TMaskImage>
void StreamlineTractographyFilter<TInputImage, TMaskImage>::PrintSelf(std::ostream &os, Indent indent) const
{
    Superclass::PrintSelf(os, indent);
    os << indent << "Algorithm: " << m_Algorithm << '\n'
       << indent << "StepSize: " << m_StepSize << '\n'
       << indent << "MaximumAngle: " << m_MaximumAngle << '\n'
       << indent << "Cutoff: " << m_Cutoff << '\n'
       << indent << "MinimumLength: " << m_MinimumLength << '\n'
       << indent << "MaximumLength: " << m_MaximumLength << '\n'
       << indent << "SeedsPerVoxel: " << m_SeedsPerVoxel << '\n'
       << indent << "SeedPoints: " << m_SeedPoints.size() << '\n'
       << indent << "RandomSeed: " << m_RandomSeed << '\n'
       << indent << "IncludeImages: " << m_NumberOfIncludeImages << '\n'
       << indent << "Backend: " << m_Backend << '\n';
}
} // namespace itk
#endif
