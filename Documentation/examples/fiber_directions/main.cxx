// fiber_directions: reader -> itk::FiberDirectionsImageFilter -> writer, as a program of
// your own would use TensorKernels.  Input: a 4-D NIfTI of spherical-harmonic coefficients
// (MRtrix3 dwi2fod, DIPY CSD; MRtrix3's basis), output: the peaks, 3 components per peak
// (unit direction times amplitude, NaN where a voxel has fewer), as MRtrix3's sh2peaks
// writes them: a 4-D NIfTI with the components on the 4th axis, or a 3-D vector image (NRRD).
// Note: ITK 5.2's NIfTI reader takes the qform where a file has both a qform and a different
// sform; nibabel, MRtrix3 and tk-fibers take the sform.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "itkFiberDirectionsImageFilter.h"
#include "itkImage.h"
#include "itkImageFileReader.h"
#include "itkImageFileWriter.h"
#include "itkMetaDataObject.h"
#include "itkVectorImage.h"

using SHImage4 = itk::Image<float, 4>;       // what ITK reads from a 4-D NIfTI
using SHImage = itk::VectorImage<float, 3>;  // what the filter takes: one vector per voxel

// The 4th axis becomes each voxel's vector of coefficients; the spatial grid is kept.
static SHImage::Pointer to_vector_image(const SHImage4 *in)
{
    const auto size4 = in->GetLargestPossibleRegion().GetSize();
    SHImage::RegionType region;
    SHImage::SpacingType spacing;
    SHImage::PointType origin;
    SHImage::DirectionType direction;
    for (unsigned r = 0; r < 3; ++r) {
        region.SetSize(r, size4[r]);
        spacing[r] = in->GetSpacing()[r];
        origin[r] = in->GetOrigin()[r];
        for (unsigned c = 0; c < 3; ++c) direction[r][c] = in->GetDirection()[r][c];
    }
    auto out = SHImage::New();
    out->SetRegions(region);
    out->SetSpacing(spacing);
    out->SetOrigin(origin);
    out->SetDirection(direction);
    out->SetNumberOfComponentsPerPixel(static_cast<unsigned>(size4[3]));
    out->Allocate();
    const size_t voxels = region.GetNumberOfPixels(), coeffs = size4[3];
    for (size_t v = 0; v < voxels; ++v)  // both buffers x-fastest; the 4-D one volume-major
        for (size_t k = 0; k < coeffs; ++k) out->GetBufferPointer()[v * coeffs + k] = in->GetBufferPointer()[k * voxels + v];
    return out;
}

// The other way: each voxel's vector becomes the 4th axis.  NIfTI tools (MRtrix3's
// peaks2amp, FSL, nibabel) expect peaks so; ITK's NIfTI writer would store the vector image as
// a 5-D 10x10x10x1x9 image instead, which MRtrix3 does not take as peaks.
static SHImage4::Pointer to_4d_image(const SHImage *in)
{
    const auto size = in->GetLargestPossibleRegion().GetSize();
    const unsigned comps = in->GetNumberOfComponentsPerPixel();
    SHImage4::RegionType region;
    SHImage4::SpacingType spacing;  // the 4th axis: spacing 1, origin 0, not rotated (as MRtrix3 writes it)
    SHImage4::PointType origin;
    SHImage4::DirectionType direction;
    spacing.Fill(1.0);
    origin.Fill(0.0);
    direction.SetIdentity();
    for (unsigned r = 0; r < 3; ++r) {
        region.SetSize(r, size[r]);
        spacing[r] = in->GetSpacing()[r];
        origin[r] = in->GetOrigin()[r];
        for (unsigned c = 0; c < 3; ++c) direction[r][c] = in->GetDirection()[r][c];
    }
    region.SetSize(3, comps);
    auto out = SHImage4::New();
    out->SetRegions(region);
    out->SetSpacing(spacing);
    out->SetOrigin(origin);
    out->SetDirection(direction);
    out->Allocate();
    const size_t voxels = in->GetLargestPossibleRegion().GetNumberOfPixels();
    for (size_t v = 0; v < voxels; ++v)
        for (size_t k = 0; k < comps; ++k) out->GetBufferPointer()[k * voxels + v] = in->GetBufferPointer()[v * comps + k];
    return out;
}

static bool is_nifti(const std::string &name)
{
    const auto ends_with = [&](const std::string &tail) {
        return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    return ends_with(".nii") || ends_with(".nii.gz");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: fiber_directions SH.nii.gz PEAKS.nii.gz   (or PEAKS.nrrd: a vector image)\n");
        return 2;
    }
    try {
        auto reader = itk::ImageFileReader<SHImage4>::New();
        reader->SetFileName(argv[1]);
        reader->Update();

        using Filter = itk::FiberDirectionsImageFilter<SHImage>;
        auto filter = Filter::New();
        filter->SetInput(to_vector_image(reader->GetOutput()));
        filter->SetNumberOfPeaks(3);
        filter->SetRelativeThreshold(0.1);                // drop lobes under 10% of the largest
        filter->SetBasis(Filter::BasisType::Tournier);    // MRtrix3's; Descoteaux for DIPY's
        filter->SetBackend(Filter::BackendType::CPU);     // CUDA where TensorKernels was built with it

        filter->Update();
        if (is_nifti(argv[2])) {  // 4-D, as sh2peaks writes NIfTI; world RAS vectors, as it does
            auto writer = itk::ImageFileWriter<SHImage4>::New();
            writer->SetFileName(argv[2]);
            writer->SetInput(to_4d_image(filter->GetOutput()));
            writer->Update();
            return EXIT_SUCCESS;
        }

        // The peaks are world RAS vectors (as sh2peaks writes them); a NRRD file declares its
        // space LPS ("space: left-posterior-superior", what ITK writes): negate x and y so that
        // NRRD readers (3D Slicer) get the same world directions, and say so with an identity
        // measurement frame.  (A 4-D NIfTI or .mif would keep them RAS.)
        auto lps = SHImage::New();
        lps->CopyInformation(filter->GetOutput());
        lps->SetRegions(filter->GetOutput()->GetLargestPossibleRegion());
        lps->SetNumberOfComponentsPerPixel(filter->GetOutput()->GetNumberOfComponentsPerPixel());
        lps->Allocate();
        const size_t values = lps->GetLargestPossibleRegion().GetNumberOfPixels() * lps->GetNumberOfComponentsPerPixel();
        for (size_t i = 0; i < values; ++i) {
            const float v = filter->GetOutput()->GetBufferPointer()[i];  // NaN: no peak, kept as it is
            lps->GetBufferPointer()[i] = i % 3 < 2 && !std::isnan(v) ? -v : v;
        }
        itk::EncapsulateMetaData<std::vector<std::vector<double>>>(lps->GetMetaDataDictionary(), "NRRD_measurement frame",
                                                                   {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}});

        auto writer = itk::ImageFileWriter<SHImage>::New();
        writer->SetFileName(argv[2]);
        writer->SetInput(lps);
        writer->Update();

        // A summary a caller (or a test) can check.
        const auto *peaks = filter->GetOutput();
        const size_t voxels = peaks->GetLargestPossibleRegion().GetNumberOfPixels();
        const unsigned comps = peaks->GetNumberOfComponentsPerPixel();
        size_t found = 0;
        for (size_t i = 0; i < voxels * comps; i += 3) found += peaks->GetBufferPointer()[i] == peaks->GetBufferPointer()[i];
        std::printf("%zu voxels, %zu peaks\n", voxels, found);
    } catch (const itk::ExceptionObject &e) {
        std::fprintf(stderr, "fiber_directions: %s\n", e.GetDescription());
        return 1;
    }
    return 0;
}
