/** itk::StreamlineTractographyFilter: an SH (fiber ODF) image in, streamlines out, by the
 * tracking core (tk_tracking.h). \file
 * \ingroup tk_group_tk_itk */
#ifndef itkStreamlineTractographyFilter_h
#define itkStreamlineTractographyFilter_h

#include <array>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "itkImage.h"
#include "itkProcessObject.h"
#include "itkStreamlineSet.h"
#include "itkTensorKernelsEnums.h"
#include "itkTensorKernelsMacro.h"
#include "itkVectorImage.h"
#include "tk_tracking.h"

namespace itk
{
/** \class StreamlineTractographyEnums
 * \brief The tracking algorithms (ITK's ...Enums style; the values are tk_tracking_algorithm's).
 * \ingroup tk_group_tk_itk */
class StreamlineTractographyEnums
{
public:
    enum class Algorithm : uint8_t
    {
        SDStream = TK_TRACK_SD_STREAM, /**< deterministic: MRtrix3's SD_STREAM */
        IFOD1 = TK_TRACK_IFOD1         /**< probabilistic: MRtrix3's iFOD1 */
    };
};

inline std::ostream &operator<<(std::ostream &out, const StreamlineTractographyEnums::Algorithm value)
{
    switch (value) {
    case StreamlineTractographyEnums::Algorithm::SDStream: return out << "SDStream";
    case StreamlineTractographyEnums::Algorithm::IFOD1: return out << "IFOD1";
    }
    return out << "INVALID VALUE FOR itk::StreamlineTractographyEnums::Algorithm";
}

/** \class StreamlineTractographyFilter
 * \brief Streamlines through a fiber-ODF image: MRtrix3's SD_STREAM or iFOD1 (tckgen), run
 * by the TensorKernels tracking core on the CPU, its OpenMP threads or CUDA.
 *
 * Input (SetInput): a 3-D VectorImage whose components are the even-degree SH coefficients
 * of order lmax (15, 28, 45, ... components), in MRtrix3's basis (the FOD of dwi2fod) unless
 * SetBasis says DIPY's.  Optional masks on the same grid (same size, origin, spacing and
 * direction), any scalar pixel type, nonzero meaning inside (a binary mask or a label map):
 * SetSeedImage (seeds: SeedsPerVoxel random points in each voxel inside), SetStoppingImage
 * (tckgen -mask), SetExcludeImage (-exclude), AddIncludeImage (-include, each one).  Seeds come
 * from the seed image or, without one, from SetSeedPoints (physical points, LPS mm).
 *
 * Output (GetOutput): an itk::StreamlineSet, points in ITK's physical space (LPS mm), in the
 * core's seed order whatever the backend and thread count.
 *
 * Frames: ITK's geometry is LPS; the core's world is RAS, the frame MRtrix3's SH
 * coefficients are defined in.  The filter hands the core vox2world = diag(-1, -1, 1) *
 * [direction * spacing | origin], seed points negated in x and y, and negates the
 * streamlines' x and y back as each chunk arrives (as tk-track and FiberDirectionsImageFilter
 * convert).
 *
 * The SH image's buffer goes to the core as it is when it is a float VectorImage holding the
 * whole volume (no copy); another component type is converted once.  The core's output
 * arrives in chunks (ChunkSeeds seeds each) and is appended to the output; a chunk is the
 * most the core holds.  The core's plan (resolved options, tables, on CUDA the device
 * buffers) is kept from one Update to the next while the options and the grid stay the same.
 * \ingroup tk_group_tk_itk */
template <typename TInputImage = VectorImage<float, 3>, typename TMaskImage = Image<unsigned char, 3>>
class ITK_TEMPLATE_EXPORT StreamlineTractographyFilter : public ProcessObject
{
public:
    itkTensorKernelsClassMacro(StreamlineTractographyFilter, ProcessObject);
    itkNewMacro(Self);

    using InputImageType = TInputImage;
    using MaskImageType = TMaskImage;
    using OutputType = StreamlineSet;
    using PointType = typename InputImageType::PointType;
    using AlgorithmType = StreamlineTractographyEnums::Algorithm;
    using BackendType = TensorKernelsEnums::Backend;
    using DirectionVectorType = Vector<double, 3>;
    static_assert(TInputImage::ImageDimension == 3 && TMaskImage::ImageDimension == 3, "3-D images only");

    enum class BasisType { Tournier = TK_SH_TOURNIER, Descoteaux = TK_SH_DESCOTEAUX };
    /// Printed by the Set macros' debug output (builds without NDEBUG).
    friend std::ostream &operator<<(std::ostream &os, BasisType b)
    {
        return os << (b == BasisType::Tournier ? "Tournier" : "Descoteaux");
    }

    void SetInput(const InputImageType *image) { this->SetPrimaryInput(const_cast<InputImageType *>(image)); }
    const InputImageType *GetInput() const { return itkDynamicCastInDebugMode<const InputImageType *>(this->GetPrimaryInput()); }
    void SetSeedImage(const MaskImageType *m) { SetMask("SeedImage", m); }
    void SetStoppingImage(const MaskImageType *m) { SetMask("StoppingImage", m); }
    void SetExcludeImage(const MaskImageType *m) { SetMask("ExcludeImage", m); }
    void AddIncludeImage(const MaskImageType *m);
    void ClearIncludeImages();
    const MaskImageType *GetSeedImage() const { return GetMask("SeedImage"); }
    const MaskImageType *GetStoppingImage() const { return GetMask("StoppingImage"); }
    const MaskImageType *GetExcludeImage() const { return GetMask("ExcludeImage"); }
    unsigned GetNumberOfIncludeImages() const { return m_NumberOfIncludeImages; }

    /** Seed points in physical space (LPS mm), used where there is no seed image. */
    void SetSeedPoints(const std::vector<PointType> &points)
    {
        m_SeedPoints = points;
        this->Modified();
    }
    const std::vector<PointType> &GetSeedPoints() const { return m_SeedPoints; }

    OutputType *GetOutput() { return itkDynamicCastInDebugMode<OutputType *>(this->GetPrimaryOutput()); }

    itkSetEnumMacro(Algorithm, AlgorithmType);
    itkGetConstMacro(Algorithm, AlgorithmType);
    itkSetMacro(Basis, BasisType);
    itkGetConstMacro(Basis, BasisType);
    /** DIPY's legacy descoteaux07 or MRtrix 0.2's tournier07. */
    itkSetMacro(Legacy, bool);
    itkGetConstMacro(Legacy, bool);
    itkBooleanMacro(Legacy);
    /** mm; 0: the algorithm's default for the voxel size (tk_tracking_options). */
    itkSetMacro(StepSize, double);
    itkGetConstMacro(StepSize, double);
    /** Degrees per step; 0: the algorithm's default. */
    itkSetMacro(MaximumAngle, double);
    itkGetConstMacro(MaximumAngle, double);
    itkSetMacro(Cutoff, double);
    itkGetConstMacro(Cutoff, double);
    /** mm; 0: the default (5 voxels), negative: none. */
    itkSetMacro(MinimumLength, double);
    itkGetConstMacro(MinimumLength, double);
    /** mm; 0: the default (100 voxels). */
    itkSetMacro(MaximumLength, double);
    itkGetConstMacro(MaximumLength, double);
    itkSetMacro(Unidirectional, bool);
    itkGetConstMacro(Unidirectional, bool);
    itkBooleanMacro(Unidirectional);
    /** The first direction at every seed, in LPS (ITK's frame); zero (default): random. */
    itkSetMacro(SeedDirection, DirectionVectorType);
    itkGetConstMacro(SeedDirection, DirectionVectorType);
    itkSetMacro(SeedsPerVoxel, SizeValueType);
    itkGetConstMacro(SeedsPerVoxel, SizeValueType);
    /** The random streams' key (tk_tracking_options.rng_seed). */
    itkSetMacro(RandomSeed, uint64_t);
    itkGetConstMacro(RandomSeed, uint64_t);
    /** iFOD1: directions drawn per step (0: 1000). */
    itkSetMacro(MaximumTrials, int);
    itkGetConstMacro(MaximumTrials, int);
    /** iFOD1: the FOD's power (0: 1). */
    itkSetMacro(FODPower, double);
    itkGetConstMacro(FODPower, double);
    /** Seeds per chunk the core hands over (0: the core's 4096). */
    itkSetMacro(ChunkSeeds, SizeValueType);
    itkGetConstMacro(ChunkSeeds, SizeValueType);
    /** Auto (default): the CUDA tracker where a usable GPU is found, else OMP. */
    itkSetEnumMacro(Backend, BackendType);
    itkGetConstMacro(Backend, BackendType);
    /** OMP's threads; 0: OpenMP's default. */
    itkSetMacro(NumberOfThreads, int);
    itkGetConstMacro(NumberOfThreads, int);
    itkSetMacro(CudaDevice, int);
    itkGetConstMacro(CudaDevice, int);
    /** CUDA: how many GPUs from CudaDevice on track (default 1; 0: every visible one), each a
     * contiguous share of every chunk of seeds; the streamlines are one GPU's, in its order. */
    itkSetMacro(NumberOfCudaDevices, unsigned);
    itkGetConstMacro(NumberOfCudaDevices, unsigned);

    /** What happened to the seeds and streamlines of the last Update. */
    const tk_tracking_stats &GetStatistics() const { return m_Statistics; }
    /** The backend the last Update ran on (never Auto). */
    itkGetConstMacro(ResolvedBackend, BackendType);

    /** The core's options these settings give for \p backend (no default resolved yet). */
    tk_tracking_options CoreOptions(tk_backend backend, int lmax) const;
    /** The core's grid of an image's geometry: RAS vox2world (see the class comment). */
    static tk_tracking_grid CoreGrid(const ImageBase<3> *image);

protected:
    StreamlineTractographyFilter();
    ~StreamlineTractographyFilter() override = default;

    using DataObjectPointerArraySizeType = ProcessObject::DataObjectPointerArraySizeType;
    using Superclass::MakeOutput;
    DataObject::Pointer MakeOutput(DataObjectPointerArraySizeType) override { return StreamlineSet::New().GetPointer(); }
    void GenerateData() override;
    void PrintSelf(std::ostream &os, Indent indent) const override;

private:
    struct PlanDeleter {
        void operator()(tk_tracking_plan *p) const { tk_tracking_plan_destroy(p); }
    };
    void SetMask(const char *name, const MaskImageType *m)
    {
        this->ProcessObject::SetInput(name, const_cast<MaskImageType *>(m));
    }
    const MaskImageType *GetMask(const std::string &name) const
    {
        return dynamic_cast<const MaskImageType *>(this->ProcessObject::GetInput(name));
    }
    /** The plan for these options and grid: the last one when neither changed. */
    tk_tracking_plan *Prepare(const tk_tracking_options &options, const tk_tracking_grid &grid);
    /** A mask as the core takes it (one byte per voxel, nonzero inside), checked against the
     * SH image's grid; \p storage holds a conversion where the buffer is not bytes already. */
    const uint8_t *MaskBytes(const char *what, const MaskImageType *mask, std::vector<uint8_t> &storage) const;

    AlgorithmType m_Algorithm{AlgorithmType::SDStream};
    BasisType m_Basis{BasisType::Tournier};
    bool m_Legacy{false};
    double m_StepSize{0.0};
    double m_MaximumAngle{0.0};
    double m_Cutoff{0.1};
    double m_MinimumLength{0.0};
    double m_MaximumLength{0.0};
    bool m_Unidirectional{false};
    DirectionVectorType m_SeedDirection{0.0};
    SizeValueType m_SeedsPerVoxel{1};
    uint64_t m_RandomSeed{0};
    int m_MaximumTrials{0};
    double m_FODPower{0.0};
    SizeValueType m_ChunkSeeds{0};
    BackendType m_Backend{BackendType::Auto};
    BackendType m_ResolvedBackend{BackendType::Auto};
    int m_NumberOfThreads{0};
    int m_CudaDevice{0};
    unsigned m_NumberOfCudaDevices{1};
    unsigned m_NumberOfIncludeImages{0};
    std::vector<PointType> m_SeedPoints;
    tk_tracking_stats m_Statistics{};

    std::unique_ptr<tk_tracking_plan, PlanDeleter> m_Plan;
    tk_tracking_options m_PlanOptions{};
    tk_tracking_grid m_PlanGrid{};
};
} // namespace itk

#ifndef ITK_MANUAL_INSTANTIATION
#include "itkStreamlineTractographyFilter.hxx"
#endif
#endif
