// The pipeline every filter's concurrency test runs: a configured filter on one backend,
// split into work units, whose Update collects its main output and what the test adds.
#pragma once

#include <functional>

#include "itkTensorKernelsEnums.h"
#include "tk_itk_concurrency_test_util.h"

namespace tk_test {

// The filter f (inputs and settings given) on backend, over work_units, as a pipeline of
// expect_pipelines_concurrent_equal_sequential: each call updates it and collects its main
// output, then what more(filter, out) appends (other outputs, counts, fitted values).
template <typename FilterPointer, typename More>
std::function<FilterOutput()> pipeline_of(const FilterPointer &f, itk::TensorKernelsEnums::Backend backend,
                                          unsigned work_units, const More &more)
{
    f->SetBackend(backend);
    f->SetNumberOfWorkUnits(work_units);
    return [f, more] {
        return update_and_collect(f, [&f, &more](FilterOutput &out) {
            append_buffer(out, f->GetOutput());
            more(*f, out);
        });
    };
}

}  // namespace tk_test
