/** itk::TensorKernelsPlanHolder: the one plan of a batched core that a filter keeps from one
 * Update to the next. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsPlanHolder_h
#define itkTensorKernelsPlanHolder_h

#include <cstddef>
#include <cstring>
#include <memory>

#include "tk_status.h"

namespace itk
{
/** \class TensorKernelsPlanHolder
 * \brief A batched core's plan (tk_eig_plan, tk_fibers_plan, ...), made by \p Create for
 * some options and freed by \p Destroy.
 *
 * A plan checks its options once and owns the core's tables (milliseconds to build) and,
 * on CUDA, the device buffers and streams; so a filter keeps its plan while the options
 * stay the same and makes it anew when they change.  The options are compared bytewise:
 * make them from ZeroedOptions(), so that their padding compares too.
 * \ingroup tk_group_tk_itk
 */
template <typename TOptions, typename TPlan, tk_status (*Create)(const TOptions *, size_t, TPlan **),
          void (*Destroy)(TPlan *)>
class TensorKernelsPlanHolder
{
public:
    using OptionsType = TOptions;
    using PlanType = TPlan;

    /** Options whose every byte, padding too, is zero, for the core's init to fill in. */
    static TOptions ZeroedOptions()
    {
        TOptions options;
        std::memset(&options, 0, sizeof options);
        return options;
    }

    /** Keeps the plan if it was made for \p options, else makes one for them (up to
     * \p max_batch items a call; 0: the core's default); TK_OK, or the core's failure (the
     * plan is then gone; tk_last_error() says why). */
    tk_status Prepare(const TOptions &options, size_t max_batch)
    {
        if (m_Plan && std::memcmp(&options, &m_Options, sizeof options) == 0) return TK_OK;
        m_Plan.reset();
        TPlan *plan = nullptr;
        const tk_status status = Create(&options, max_batch, &plan);
        if (status != TK_OK) return status;
        m_Plan.reset(plan);
        m_Options = options;
        return TK_OK;
    }

    /** The plan of the last successful Prepare (null before one).  The core's calls on a
     * cpu plan only read it: the threader's regions may share it. */
    TPlan *Get() const { return m_Plan.get(); }

private:
    struct Deleter {
        void operator()(TPlan *plan) const { Destroy(plan); }
    };
    std::unique_ptr<TPlan, Deleter> m_Plan;
    TOptions m_Options{};
};
} // namespace itk
#endif
