// Helpers of the ITK filters' concurrency tests: a filter's outputs flattened into one
// array, bit-for-bit comparison, deep copies of images, and the check that two pipelines
// updated at once on two threads give what they give one after the other.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "itkImageDuplicator.h"
#include "itkMacro.h"
#include "tk_thread_test_util.h"

namespace tk_test {

// What one Update produced: every output value (in double: exact for float and integer
// outputs), or the exception's text.
struct FilterOutput {
    std::vector<double> values;
    std::string error;
};

template <typename Image> void append_buffer(FilterOutput &out, const Image *image)
{
    const auto *p = image->GetBufferPointer();
    out.values.insert(out.values.end(), p, p + image->GetPixelContainer()->Size());
}

// Update f and collect its outputs with collect(f, out); an ITK exception is recorded.
template <typename FilterPointer>
FilterOutput update_and_collect(const FilterPointer &f, const std::function<void(FilterOutput &)> &collect)
{
    FilterOutput out;
    try {
        f->Update();
    } catch (const itk::ExceptionObject &e) {
        out.error = e.GetDescription();
        return out;
    }
    collect(out);
    return out;
}

inline ::testing::AssertionResult identical(const FilterOutput &a, const FilterOutput &b)
{
    if (!a.error.empty() || !b.error.empty())
        return ::testing::AssertionFailure() << "exceptions: \"" << a.error << "\" / \"" << b.error << "\"";
    if (a.values.size() != b.values.size())
        return ::testing::AssertionFailure() << a.values.size() << " output values against " << b.values.size();
    for (size_t i = 0; i < a.values.size(); ++i)
        if (std::memcmp(&a.values[i], &b.values[i], sizeof(double)))
            return ::testing::AssertionFailure() << "output value " << i << ": " << a.values[i] << " against " << b.values[i];
    return ::testing::AssertionSuccess();
}

template <typename Image> typename Image::Pointer deep_copy(const Image *image)
{
    if (!image) return nullptr;
    auto dup = itk::ImageDuplicator<Image>::New();
    dup->SetInputImage(image);
    dup->Update();
    return dup->GetOutput();
}

// run(0) and run(1) update a fresh pipeline of inputs 0 and 1 (built on the calling thread,
// as an application builds its pipelines) and return its outputs: first one after the other,
// then `rounds` times on two threads at once; every concurrent result must equal its
// sequential one bit for bit.
inline void expect_pipelines_concurrent_equal_sequential(
    const std::function<std::function<FilterOutput()>(int)> &make_pipeline, int rounds = 2)
{
    const FilterOutput seq_a = make_pipeline(0)(), seq_b = make_pipeline(1)();
    ASSERT_TRUE(seq_a.error.empty()) << seq_a.error;
    ASSERT_TRUE(seq_b.error.empty()) << seq_b.error;
    for (int round = 0; round < rounds; ++round) {
        auto pa = make_pipeline(0), pb = make_pipeline(1);
        FilterOutput par_a, par_b;
        run_concurrently([&] { par_a = pa(); }, [&] { par_b = pb(); });
        EXPECT_TRUE(identical(par_a, seq_a)) << "first pipeline, round " << round;
        EXPECT_TRUE(identical(par_b, seq_b)) << "second pipeline, round " << round;
    }
}

}  // namespace tk_test
