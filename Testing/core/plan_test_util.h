// What every core's plan API must refuse alike (tk_<core>_plan_create(opts, max_batch, &plan)):
// no place for the plan, no options; and a refused create leaves no plan behind.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "tk_status.h"

namespace tk_test {

template <typename Options, typename Plan>
void expect_create_refuses_missing_arguments(tk_status (*create)(const Options *, size_t, Plan **), const Options &o)
{
    Plan *plan = nullptr;
    EXPECT_EQ(create(&o, 1, nullptr), TK_ERR_ARGUMENT);
    EXPECT_EQ(create(nullptr, 1, &plan), TK_ERR_ARGUMENT);
    EXPECT_EQ(plan, nullptr);
}

}  // namespace tk_test
