// The check every filter's Auto backend test makes: BackendType::Auto, the default, gives
// the result of CUDA where tk_cuda_device_usable() finds a GPU, else of the filter's CPU
// backend; an explicit CUDA without a usable GPU throws.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "itkMacro.h"
#include "itkTensorKernelsEnums.h"
#include "tk_device.h"

namespace tk_test {

// The whole buffer of an image (every component of every pixel), to compare by value.
template <typename Image> std::vector<typename Image::InternalPixelType> buffer_values(const Image *image)
{
    const auto *p = image->GetBufferPointer();
    return std::vector<typename Image::InternalPixelType>(p, p + image->GetPixelContainer()->Size());
}

// A scalar float image of the given size, uniform in [low, high) from std::mt19937(seed).
template <typename Image>
typename Image::Pointer uniform_image(const typename Image::SizeType &size, unsigned seed, float low, float high)
{
    auto image = Image::New();
    image->SetRegions(size);
    image->Allocate();
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(low, high);
    float *p = image->GetBufferPointer();
    for (size_t i = 0; i < image->GetPixelContainer()->Size(); ++i) p[i] = u(rng);
    return image;
}

// Settings of a filter that keeps its defaults.
struct DefaultSettings {
    template <typename Filter> void operator()(Filter &) const {}
};

// What must agree for most filters: the main output, by value.
struct MainOutputValues {
    template <typename FilterPointer> auto operator()(const FilterPointer &f) const { return buffer_values(f->GetOutput()); }
};

// Filter::New() on input with settings(filter) applied and the backend left alone, updated
// with Auto and with the backend Auto must resolve to (CUDA where a GPU is usable, else
// without_gpu); outputs(filter) must agree (anything ==-comparable).
template <typename Filter, typename Image, typename Settings, typename Outputs>
void expect_auto_backend_as_resolved(const Image *input, const Settings &settings, const Outputs &outputs,
                                     itk::TensorKernelsEnums::Backend without_gpu)
{
    using Backend = itk::TensorKernelsEnums::Backend;
    const auto make = [&] {
        typename Filter::Pointer f = Filter::New();
        f->SetInput(input);
        settings(*f);
        return f;
    };
    auto automatic = make();
    EXPECT_EQ(automatic->GetBackend(), Backend::Auto);
    automatic->Update();
    char reason[256] = "";
    const bool gpu = tk_cuda_device_usable(0, reason, sizeof reason);
    auto forced = make();
    forced->SetBackend(gpu ? Backend::CUDA : without_gpu);
    forced->Update();
    EXPECT_TRUE(outputs(automatic) == outputs(forced)) << (gpu ? "CUDA" : reason);
    if (!gpu) {
        auto cuda = make();
        cuda->SetBackend(Backend::CUDA);
        EXPECT_THROW(cuda->Update(), itk::ExceptionObject);
    }
}

}  // namespace tk_test
